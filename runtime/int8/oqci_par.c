/* oqci_par.c - INT8 pooling, sums, products, table lookups and quantization split over
 * threads (oqci.h, "Threads for pooling, sums, products, tables and quantization"):
 * oqci_maxpool_par, oqci_avgpool_par, oqci_add_par, oqci_mul_par, oqci_lut_par and
 * oqci_quantize_par run the plain kernels of oqci_pool.c, oqci_eltwise.c and oqci_mul.c
 * on disjoint parts of the output through the caller's parallel-for.  A pool of one
 * image splits by runs of channels (the output channel view moves with them), a pool of
 * several by images, a sum, a table lookup and a quantization by ranges of elements
 * (multiples of 64), a product by runs of its blocks.
 * Each output depends on its own channel, block or element only, so the bits are the
 * plain call's.  With one part the plain call runs (and checks the parameters);
 * before a split they are checked by the plain kernel on zero images (zero elements),
 * which reads and writes nothing, so the tasks cannot fail. */
#include "oqci.h"

/* Parts for nthreads threads: at most nthreads and units, none reading fewer than
 * OQCI_PAR_MIN_BYTES of `bytes` (unsigned: parameters not checked yet cannot overflow
 * it; absurd ones are refused before any split). */
static int nparts(int nthreads, int64_t units, uint64_t bytes) {
    uint64_t n = nthreads > 0 ? (uint64_t)nthreads : 1, cap = bytes / OQCI_PAR_MIN_BYTES;
    if (units < 1)
        return 1;
    if (n > (uint64_t)units)
        n = (uint64_t)units;
    return (int)(n > cap ? cap : n);
}

/* The first element of part i of n over count elements (a sum, a table lookup, a
 * quantization): multiples of 64, count for i >= n. */
static int64_t elems_bound(int64_t count, int n, int i) {
    int64_t e = i >= n ? count : (count * i / n + 63) / 64 * 64;
    return e < count ? e : count;
}

/* ---- pooling ------------------------------------------------------------------------- */

typedef struct PoolJob {
    const OqciPool *p;
    const uint8_t *x;
    uint8_t *y;
    int by_image, n, avg;
    int32_t units;
} PoolJob;

static int pool_call(const OqciPool *p, const void *x, void *y, int avg) {
    return avg ? oqci_avgpool(p, x, y) : oqci_maxpool(p, x, y);
}

/* Part i of j's n: channels or images [u0, u1). */
static void pool_task(void *arg, int i) {
    const PoolJob *j = arg;
    const OqciPool *p = j->p;
    OqciPool sub = *p;
    int32_t u0 = (int32_t)((int64_t)j->units * i / j->n);
    int32_t u1 = (int32_t)((int64_t)j->units * (i + 1) / j->n);
    size_t plane = (size_t)p->in_h * (size_t)p->in_w, xo, yo = 0;
    if (j->by_image) {
        sub.batch = u1 - u0;
        xo = (size_t)u0 * (size_t)p->channels * plane;
        yo = (size_t)u0 * (size_t)p->out_ctotal * (size_t)p->out_h * (size_t)p->out_w *
             (p->out_type == OQCI_S32 ? 4u : 1u);
    } else {
        sub.channels = u1 - u0;
        sub.out_coff = p->out_coff + u0;
        xo = (size_t)u0 * plane;
    }
    (void)pool_call(&sub, j->x + xo, j->y + yo, j->avg);
}

static int pool_par(const OqciPool *p, const void *x, void *y, int nthreads,
                    OqciParallelFor run, void *ctx, int avg) {
    PoolJob j;
    OqciPool none;
    if (!p)
        return OQCI_EINVAL;
    j.by_image = p->batch != 1;
    j.units = j.by_image ? p->batch : p->channels;
    j.n = nparts(nthreads, j.units, (uint64_t)p->batch * (uint64_t)p->channels *
                                        (uint64_t)p->in_h * (uint64_t)p->in_w);
    if (!run || j.n < 2)
        return pool_call(p, x, y, avg);
    none = *p;
    none.batch = 0;
    if (pool_call(&none, x, y, avg) != OQCI_OK)
        return OQCI_EINVAL;
    j.p = p;
    j.x = (const uint8_t *)x;
    j.y = (uint8_t *)y;
    j.avg = avg;
    run(ctx, pool_task, &j, j.n);
    return OQCI_OK;
}

int oqci_maxpool_par(const OqciPool *p, const void *x, void *y, int nthreads,
                     OqciParallelFor run, void *ctx) {
    return pool_par(p, x, y, nthreads, run, ctx, 0);
}

int oqci_avgpool_par(const OqciPool *p, const void *x, void *y, int nthreads,
                     OqciParallelFor run, void *ctx) {
    return pool_par(p, x, y, nthreads, run, ctx, 1);
}

/* ---- sums ---------------------------------------------------------------------------- */

typedef struct AddJob {
    const OqciAdd *p;
    const void *const *x;
    uint8_t *y;
    int n;
} AddJob;

static void add_task(void *arg, int i) {
    const AddJob *j = arg;
    OqciAdd sub = *j->p;
    const void *xs[OQCI_ADD_MAX];
    int64_t e0 = elems_bound(j->p->count, j->n, i);
    int64_t e1 = elems_bound(j->p->count, j->n, i + 1);
    int32_t k;
    if (e1 <= e0)
        return;
    sub.count = e1 - e0;
    sub.acc_first += e0;
    for (k = 0; k < sub.ninputs; k++)   /* 8-bit inputs: byte offsets; sums: 4 bytes */
        xs[k] = (const uint8_t *)j->x[k] + e0 * (sub.in_type[k] == OQCI_S32 ? 4 : 1);
    (void)oqci_add(&sub, xs, j->y + e0 * (sub.out_type == OQCI_S32 ? 4 : 1));
}

int oqci_add_par(const OqciAdd *p, const void *const *x, void *y, int nthreads,
                 OqciParallelFor run, void *ctx) {
    AddJob j;
    OqciAdd none;
    uint64_t width = 0;   /* input bytes per element: a conv's int32 sums count 4 */
    int32_t k;
    if (!p || p->ninputs < 0 || p->ninputs > OQCI_ADD_MAX)
        return OQCI_EINVAL;
    for (k = 0; k < p->ninputs; k++)
        width += p->in_type[k] == OQCI_S32 ? 4u : 1u;
    j.n = nparts(nthreads, p->count, (uint64_t)p->count * width);
    if (!run || j.n < 2)
        return oqci_add(p, x, y);
    none = *p;
    none.count = 0;
    if (oqci_add(&none, x, y) != OQCI_OK)
        return OQCI_EINVAL;
    j.p = p;
    j.x = x;
    j.y = (uint8_t *)y;
    run(ctx, add_task, &j, j.n);
    return OQCI_OK;
}

/* ---- products and tables ------------------------------------------------------------- */

/* A Mul splits by runs of blocks (a squeeze-excitation Mul: channels; each block's
 * outputs depend on that block and its gate only, and the table oqci_mul may build for
 * a long block is per block), a table lookup by ranges of elements (multiples of 64). */
typedef struct EltJob {
    const OqciMul *p;       /* Mul: p; table lookup: NULL */
    const uint8_t *a, *b;
    uint8_t *y;
    const uint8_t *table;
    int64_t units;          /* blocks, or elements */
    int n;
} EltJob;

/* The first unit of part i of j's n (elements: multiples of 64). */
static int64_t elt_bound(const EltJob *j, int i) {
    if (!j->p)
        return elems_bound(j->units, j->n, i);
    return i >= j->n ? j->units : j->units * i / j->n;
}

static void elt_task(void *arg, int i) {
    const EltJob *j = arg;
    int64_t u0 = elt_bound(j, i), u1 = elt_bound(j, i + 1);
    if (u1 <= u0)
        return;
    if (j->p) {
        OqciMul sub = *j->p;
        sub.outer = u1 - u0;
        (void)oqci_mul(&sub, j->a + u0 * sub.inner, j->b + u0, j->y + u0 * sub.inner);
    } else {
        (void)oqci_lut(j->a + u0, j->y + u0, u1 - u0, j->table);
    }
}

int oqci_mul_par(const OqciMul *p, const void *a, const void *b, void *y, int nthreads,
                 OqciParallelFor run, void *ctx) {
    EltJob j;
    OqciMul none;
    if (!p || p->outer < 0 || p->inner < 0)
        return OQCI_EINVAL;
    j.n = nparts(nthreads, p->outer, (uint64_t)p->outer * (uint64_t)p->inner);
    if (!run || j.n < 2)
        return oqci_mul(p, a, b, y);
    none = *p;
    none.outer = 0;
    if (oqci_mul(&none, a, b, y) != OQCI_OK)
        return OQCI_EINVAL;
    j.p = p;
    j.a = (const uint8_t *)a;
    j.b = (const uint8_t *)b;
    j.y = (uint8_t *)y;
    j.table = NULL;
    j.units = p->outer;
    run(ctx, elt_task, &j, j.n);
    return OQCI_OK;
}

int oqci_lut_par(const void *x, void *y, int64_t count, const uint8_t *table, int nthreads,
                 OqciParallelFor run, void *ctx) {
    EltJob j;
    if (count < 0)
        return OQCI_EINVAL;
    j.n = nparts(nthreads, count, (uint64_t)count);
    if (!run || j.n < 2)
        return oqci_lut(x, y, count, table);
    if (oqci_lut(x, y, 0, table) != OQCI_OK)
        return OQCI_EINVAL;
    j.p = NULL;
    j.a = (const uint8_t *)x;
    j.b = NULL;
    j.y = (uint8_t *)y;
    j.table = table;
    j.units = count;
    run(ctx, elt_task, &j, j.n);
    return OQCI_OK;
}

/* ---- quantization -------------------------------------------------------------------- */

typedef struct QuantJob {
    const float *x;
    uint8_t *y;
    int64_t count;
    float scale;
    int32_t out_type;
    int n;
} QuantJob;

static void quant_task(void *arg, int i) {
    const QuantJob *j = arg;
    int64_t e0 = elems_bound(j->count, j->n, i), e1 = elems_bound(j->count, j->n, i + 1);
    if (e1 > e0)
        (void)oqci_quantize(j->x + e0, j->y + e0, j->out_type, e1 - e0, j->scale);
}

int oqci_quantize_par(const float *x, void *y, int32_t out_type, int64_t count, float scale,
                      int nthreads, OqciParallelFor run, void *ctx) {
    QuantJob j;
    if (count < 0)
        return OQCI_EINVAL;
    j.n = nparts(nthreads, count, (uint64_t)count * sizeof(float));
    if (!run || j.n < 2)
        return oqci_quantize(x, y, out_type, count, scale);
    if (oqci_quantize(x, y, out_type, 0, scale) != OQCI_OK)
        return OQCI_EINVAL;
    j.x = x;
    j.y = (uint8_t *)y;
    j.count = count;
    j.scale = scale;
    j.out_type = out_type;
    run(ctx, quant_task, &j, j.n);
    return OQCI_OK;
}
