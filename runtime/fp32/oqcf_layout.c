/* oqcf_layout.c - data-movement kernels: copy, Concat, Split, Slice (with ONNX index
 * resolution), Transpose, Pad, Gather and Tile/Expand (see oqcf_tensor.h).
 *
 * Every kernel moves opaque elements of `esize` bytes, so one implementation serves all
 * dtypes.  Element copies go through copy_strided(), which switches once per row on
 * esize (1, 2, 4, 8) to fixed-size memcpy calls the compiler turns into plain loads and
 * stores; contiguous runs are single memcpy calls.  Multi-dim loops are odometers over
 * the outer dims with incrementally updated offsets, never per-element divisions.
 *
 * Transpose first simplifies the permutation (drops size-1 dims, merges input dims that
 * stay adjacent in the output), then either copies contiguous rows (innermost dim kept)
 * or runs a cache-tiled 2-D transpose between the input's innermost dim and the
 * output's innermost dim for every combination of the remaining dims; NCHW<->NHWC
 * thus becomes N tiled [C, H*W] transposes.
 */
#include "oqcf_tensor.h"

#include <string.h>

/* 1 when a shape has a valid rank and non-negative dims. */
static int shape_valid(const OqcfShape *s) {
    if (!s || s->rank < 0 || s->rank > OQCF_MAX_RANK)
        return 0;
    for (int i = 0; i < s->rank; i++)
        if (s->d[i] < 0)
            return 0;
    return 1;
}

/* Normalises an ONNX axis in [-rank, rank) to [0, rank); 0 when out of range. */
static int norm_axis(int axis, int rank, int *out) {
    if (axis < -rank || axis >= rank)
        return 0;
    *out = axis < 0 ? axis + rank : axis;
    return 1;
}

/* Product of s->d[from..to-1]. */
static int64_t dims_prod(const OqcfShape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->d[i];
    return p;
}

/* y[i] = x[i * xstride] for n elements of es bytes; xstride in bytes. */
static void copy_strided(const char *x, int64_t xstride, char *y, int64_t n, size_t es) {
    switch (es) {
    case 1: for (int64_t i = 0; i < n; i++) y[i] = x[i * xstride]; break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(y + i * 2, x + i * xstride, 2); break;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(y + i * 4, x + i * xstride, 4); break;
    case 8: for (int64_t i = 0; i < n; i++) memcpy(y + i * 8, x + i * xstride, 8); break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(y + (size_t)i * es, x + i * xstride, es);
    }
}

/* Fills n elements of es bytes at dst with *val (all-zero bytes when val is NULL),
 * doubling the filled prefix with memcpy. */
static void fill(char *dst, int64_t n, const void *val, size_t es) {
    if (n <= 0)
        return;
    if (!val) {
        memset(dst, 0, (size_t)n * es);
        return;
    }
    memcpy(dst, val, es);
    for (int64_t done = 1; done < n;) {
        int64_t c = done < n - done ? done : n - done;
        memcpy(dst + (size_t)done * es, dst, (size_t)c * es);
        done += c;
    }
}

OqcfStatus oqcf_copy(const void *x, void *y, int64_t n, size_t esize) {
    if (n < 0 || esize == 0)
        return OQCF_EINVAL;
    if (n == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    memmove(y, x, (size_t)n * esize);
    return OQCF_OK;
}

/* ---- Concat / Split ---- */

/* Checks that shapes[0..n-1] agree with ref on every dim but ax; sets *axis_sum. */
static int concat_shapes_ok(const OqcfShape *shapes, int n, int ax, int64_t *axis_sum) {
    const OqcfShape *ref = &shapes[0];
    *axis_sum = 0;
    for (int i = 0; i < n; i++) {
        const OqcfShape *s = &shapes[i];
        if (!shape_valid(s) || s->rank != ref->rank)
            return 0;
        for (int k = 0; k < s->rank; k++)
            if (k != ax && s->d[k] != ref->d[k])
                return 0;
        *axis_sum += s->d[ax];
    }
    return 1;
}

OqcfStatus oqcf_concat(const void *const *x, const OqcfShape *shapes, int n, int axis,
                       size_t esize, void *y) {
    int ax;
    int64_t axis_sum;
    if (!x || !shapes || n < 1 || esize == 0 || !shape_valid(&shapes[0]) ||
        !norm_axis(axis, shapes[0].rank, &ax) || !concat_shapes_ok(shapes, n, ax, &axis_sum))
        return OQCF_EINVAL;
    int64_t outer = dims_prod(&shapes[0], 0, ax);
    int64_t inner = dims_prod(&shapes[0], ax + 1, shapes[0].rank);
    if (outer * axis_sum * inner == 0)
        return OQCF_OK;
    if (!y)
        return OQCF_EINVAL;
    for (int i = 0; i < n; i++)
        if (!x[i] && shapes[i].d[ax] > 0)
            return OQCF_EINVAL;
    char *yp = y;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            size_t bytes = (size_t)(shapes[i].d[ax] * inner) * esize;
            if (bytes == 0)
                continue;
            memcpy(yp, (const char *)x[i] + (size_t)o * bytes, bytes);
            yp += bytes;
        }
    return OQCF_OK;
}

OqcfStatus oqcf_split(const void *x, const OqcfShape *xs, int axis, const int64_t *sizes,
                      int n, size_t esize, void *const *y) {
    int ax;
    if (!shape_valid(xs) || !sizes || !y || n < 1 || esize == 0 ||
        !norm_axis(axis, xs->rank, &ax))
        return OQCF_EINVAL;
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0 || sizes[i] > xs->d[ax] - sum)
            return OQCF_EINVAL;
        sum += sizes[i];
    }
    if (sum != xs->d[ax])
        return OQCF_EINVAL;
    int64_t outer = dims_prod(xs, 0, ax), inner = dims_prod(xs, ax + 1, xs->rank);
    if (outer * sum * inner == 0)
        return OQCF_OK;
    if (!x)
        return OQCF_EINVAL;
    for (int i = 0; i < n; i++)
        if (!y[i] && sizes[i] > 0)
            return OQCF_EINVAL;
    const char *xp = x;
    for (int64_t o = 0; o < outer; o++)
        for (int i = 0; i < n; i++) {
            size_t bytes = (size_t)(sizes[i] * inner) * esize;
            if (bytes == 0)
                continue;
            memcpy((char *)y[i] + (size_t)o * bytes, xp, bytes);
            xp += bytes;
        }
    return OQCF_OK;
}

/* ---- Slice ---- */

/* v clamped to [lo, hi] (lo checked first, as in ONNX's reference). */
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

OqcfStatus oqcf_slice_resolve(const OqcfShape *xs, const int64_t *starts,
                              const int64_t *ends, int n, const int64_t *axes,
                              const int64_t *steps, OqcfSlice *out) {
    if (!shape_valid(xs) || !out || n < 0 || n > xs->rank || (n > 0 && (!starts || !ends)))
        return OQCF_EINVAL;
    OqcfSlice s;
    s.out = *xs;
    int seen[OQCF_MAX_RANK] = { 0 };
    for (int k = 0; k < OQCF_MAX_RANK; k++) {
        s.start[k] = 0;
        s.step[k] = 1;
    }
    for (int i = 0; i < n; i++) {
        int64_t a = axes ? axes[i] : i;
        if (a < 0)
            a += xs->rank;
        if (a < 0 || a >= xs->rank || seen[a])
            return OQCF_EINVAL;
        seen[a] = 1;
        int64_t step = steps ? steps[i] : 1;
        if (step == 0)
            return OQCF_EINVAL;
        int64_t dim = xs->d[a], st = starts[i], en = ends[i], len;
        if (st < 0)             /* cannot overflow: st < 0 and dim >= 0 */
            st += dim;
        if (en < 0)
            en += dim;
        if (step > 0) {
            st = clamp64(st, 0, dim);
            en = clamp64(en, 0, dim);
            len = en > st ? 1 + (en - st - 1) / step : 0;
        } else {
            st = clamp64(st, 0, dim - 1);
            en = clamp64(en, -1, dim - 1);
            /* |step| computed without negating INT64_MIN */
            uint64_t mag = (uint64_t)(-(step + 1)) + 1;
            len = st > en ? 1 + (int64_t)((uint64_t)(st - en - 1) / mag) : 0;
        }
        if (dim == 0 || len == 0) {
            len = 0;
            st = 0;
        }
        s.start[a] = st;
        s.step[a] = step;
        s.out.d[a] = len;
    }
    *out = s;
    return OQCF_OK;
}

/* 1 when every output index of s stays inside xs (guards hand-made OqcfSlice values). */
static int slice_fits(const OqcfShape *xs, const OqcfSlice *s) {
    if (s->out.rank != xs->rank)
        return 0;
    for (int k = 0; k < xs->rank; k++) {
        int64_t len = s->out.d[k], st = s->start[k], step = s->step[k], dim = xs->d[k];
        if (len < 0 || step == 0)
            return 0;
        if (len == 0)
            continue;
        if (st < 0 || st >= dim)
            return 0;
        /* the last index st + (len-1)*step must stay in [0, dim) */
        uint64_t room = step > 0 ? (uint64_t)(dim - 1 - st) / (uint64_t)step
                                 : (uint64_t)st / ((uint64_t)(-(step + 1)) + 1);
        if ((uint64_t)(len - 1) > room)
            return 0;
    }
    return 1;
}

OqcfStatus oqcf_slice(const void *x, const OqcfShape *xs, const OqcfSlice *s, size_t esize,
                      void *y) {
    if (!shape_valid(xs) || !s || esize == 0 || !slice_fits(xs, s))
        return OQCF_EINVAL;
    if (oqcf_numel(&s->out) == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    int r = xs->rank;
    if (r == 0) {
        memcpy(y, x, esize);
        return OQCF_OK;
    }
    /* byte offset of the first element and byte step per output index of each dim */
    int64_t base = 0, dstep[OQCF_MAX_RANK], idx[OQCF_MAX_RANK] = { 0 };
    int64_t stride = (int64_t)esize;
    for (int k = r - 1; k >= 0; k--) {
        base += s->start[k] * stride;
        /* a step is only taken between two outputs, so |step| < d[k] and the product
         * fits; an axis with one output may have any step (e.g. INT64_MAX) */
        dstep[k] = s->out.d[k] > 1 ? s->step[k] * stride : 0;
        stride *= xs->d[k];
    }
    const char *xp = (const char *)x + base;
    char *yp = y;
    int64_t n = s->out.d[r - 1], rows = oqcf_numel(&s->out) / n;
    for (int64_t row = 0; row < rows; row++) {
        if (s->step[r - 1] == 1)
            memcpy(yp, xp, (size_t)n * esize);
        else
            copy_strided(xp, dstep[r - 1], yp, n, esize);
        yp += (size_t)n * esize;
        for (int k = r - 2; k >= 0; k--) {
            xp += dstep[k];
            if (++idx[k] < s->out.d[k])
                break;
            xp -= dstep[k] * s->out.d[k];
            idx[k] = 0;
        }
    }
    return OQCF_OK;
}

/* ---- Transpose ---- */

enum { TILE = 32 };  /* tile edge of the 2-D transpose: 32x32 elements fit L1 for es <= 8 */

/* One tile-blocked 2-D transpose: y[i * ys_i + j] = x[i + j * xs_j] for i < ni, j < nj
 * (strides in elements; writes are contiguous in j, reads contiguous in i per tile). */
#define TILE2D_LOOP(ES)                                                                 \
    for (int64_t i0 = 0; i0 < ni; i0 += TILE)                                            \
        for (int64_t j0 = 0; j0 < nj; j0 += TILE) {                                      \
            int64_t ie = i0 + TILE < ni ? i0 + TILE : ni;                                \
            int64_t je = j0 + TILE < nj ? j0 + TILE : nj;                                \
            for (int64_t i = i0; i < ie; i++)                                            \
                for (int64_t j = j0; j < je; j++)                                        \
                    memcpy(y + (i * ys_i + j) * (ES), x + (i + j * xs_j) * (ES), (ES));  \
        }

static void tile2d(const char *x, char *y, int64_t ni, int64_t nj, int64_t xs_j, int64_t ys_i,
                   size_t es) {
    switch (es) {
    case 1: TILE2D_LOOP(1) break;
    case 2: TILE2D_LOOP(2) break;
    case 4: TILE2D_LOOP(4) break;
    case 8: TILE2D_LOOP(8) break;
    default: TILE2D_LOOP((int64_t)es) break;
    }
}

/* Validates perm (NULL = reversed) into p; 0 when it is not a permutation of 0..r-1. */
static int perm_load(const int *perm, int r, int *p) {
    int seen[OQCF_MAX_RANK] = { 0 };
    for (int j = 0; j < r; j++) {
        p[j] = perm ? perm[j] : r - 1 - j;
        if (p[j] < 0 || p[j] >= r || seen[p[j]])
            return 0;
        seen[p[j]] = 1;
    }
    return 1;
}

/* Simplifies (d, q): drops input dims of extent 1 and merges input dims a, a+1 that are
 * consecutive in q. q[j] is the input dim of output dim j. Returns the new rank. */
static int perm_simplify(const OqcfShape *xs, const int *p, int64_t *d, int *q) {
    int r = xs->rank, m = 0, map[OQCF_MAX_RANK];
    for (int k = 0; k < r; k++) {
        map[k] = xs->d[k] == 1 ? -1 : m;
        if (xs->d[k] != 1)
            d[m++] = xs->d[k];
    }
    int qn = 0;
    for (int j = 0; j < r; j++)
        if (map[p[j]] >= 0)
            q[qn++] = map[p[j]];
    for (int j = 0; j + 1 < m;) {
        if (q[j] + 1 != q[j + 1]) {
            j++;
            continue;
        }
        int a = q[j];                   /* merge input dims a and a+1 */
        d[a] *= d[a + 1];
        for (int k = a + 1; k + 1 < m; k++)
            d[k] = d[k + 1];
        for (int k = j + 1; k + 1 < m; k++)
            q[k] = q[k + 1];
        m--;
        for (int k = 0; k < m; k++)
            if (q[k] > a)
                q[k]--;
        j = 0;
    }
    return m;
}

OqcfStatus oqcf_transpose(const void *x, const OqcfShape *xs, const int *perm, size_t esize,
                          void *y) {
    int p[OQCF_MAX_RANK], q[OQCF_MAX_RANK];
    int64_t d[OQCF_MAX_RANK];
    if (!shape_valid(xs) || esize == 0 || !perm_load(perm, xs->rank, p))
        return OQCF_EINVAL;
    int64_t total = oqcf_numel(xs);
    if (total == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    int m = perm_simplify(xs, p, d, q);
    if (m <= 1) {
        memcpy(y, x, (size_t)total * esize);
        return OQCF_OK;
    }
    /* output extents od, input strides xst and output strides yst per output dim */
    int64_t is[OQCF_MAX_RANK], od[OQCF_MAX_RANK], xst[OQCF_MAX_RANK], yst[OQCF_MAX_RANK];
    for (int k = m - 1; k >= 0; k--)
        is[k] = k == m - 1 ? 1 : is[k + 1] * d[k + 1];
    for (int j = 0; j < m; j++) {
        od[j] = d[q[j]];
        xst[j] = is[q[j]];
    }
    for (int j = m - 1; j >= 0; j--)
        yst[j] = j == m - 1 ? 1 : yst[j + 1] * od[j + 1];
    /* ji: output dim fed by the input's innermost dim; jo: the output's innermost dim */
    int ji = 0, jo = m - 1;
    while (q[ji] != m - 1)
        ji++;
    int rows_only = ji == jo;           /* innermost dim kept: copy contiguous rows */
    /* odometer over the remaining output dims */
    int no = 0;
    int64_t on[OQCF_MAX_RANK], ox[OQCF_MAX_RANK], oy[OQCF_MAX_RANK], idx[OQCF_MAX_RANK];
    for (int j = 0; j < m; j++)
        if (j != ji && j != jo) {
            on[no] = od[j];
            ox[no] = xst[j];
            oy[no] = yst[j];
            idx[no++] = 0;
        }
    int64_t count = 1, xo = 0, yo = 0;
    for (int k = 0; k < no; k++)
        count *= on[k];
    const char *xb = x;
    char *yb = y;
    for (int64_t c = 0; c < count; c++) {
        if (rows_only)
            memcpy(yb + (size_t)yo * esize, xb + (size_t)xo * esize, (size_t)od[jo] * esize);
        else
            tile2d(xb + (size_t)xo * esize, yb + (size_t)yo * esize, od[ji], od[jo], xst[jo],
                   yst[ji], esize);
        for (int k = no - 1; k >= 0; k--) {
            xo += ox[k];
            yo += oy[k];
            if (++idx[k] < on[k])
                break;
            xo -= ox[k] * on[k];
            yo -= oy[k] * on[k];
            idx[k] = 0;
        }
    }
    return OQCF_OK;
}

/* ---- Pad ---- */

/* One padded dim: crop cb/ce from the input, then pad lb/le around the ext left. */
typedef struct PadDim {
    int64_t cb;     /* input elements cropped at the start (negative begin pad) */
    int64_t ext;    /* input elements kept after cropping */
    int64_t lb;     /* elements added before (positive begin pad) */
    int64_t out;    /* output extent lb + ext + le */
} PadDim;

/* Splits pads into crop and pad parts; 0 when they crop more than d or overflow. */
static int pad_dim(int64_t d, int64_t pb, int64_t pe, PadDim *pd) {
    if (pb < -d || pe < -d)
        return 0;
    int64_t cb = pb < 0 ? -pb : 0, ce = pe < 0 ? -pe : 0;
    if (cb > d - ce)
        return 0;
    int64_t lb = pb > 0 ? pb : 0, le = pe > 0 ? pe : 0, ext = d - cb - ce;
    if (lb > INT64_MAX - ext || le > INT64_MAX - ext - lb)
        return 0;
    pd->cb = cb;
    pd->ext = ext;
    pd->lb = lb;
    pd->out = lb + ext + le;
    return 1;
}

OqcfStatus oqcf_pad_shape(const OqcfShape *xs, const int64_t *pads, OqcfShape *out) {
    if (!shape_valid(xs) || (!pads && xs->rank > 0) || !out)
        return OQCF_EINVAL;
    OqcfShape o = *xs;
    for (int k = 0; k < xs->rank; k++) {
        PadDim pd;
        if (!pad_dim(xs->d[k], pads[k], pads[xs->rank + k], &pd))
            return OQCF_EINVAL;
        o.d[k] = pd.out;
    }
    *out = o;
    return OQCF_OK;
}

/* Input index (in [0, pd->ext)) read by output index i of a reflect/edge dim, or -1 for
 * a constant-mode pad position. numpy reflect: period 2(ext-1), edge not repeated. */
static int64_t pad_src(const PadDim *pd, int64_t i, OqcfPadMode mode) {
    int64_t j = i - pd->lb, n = pd->ext;
    if (j >= 0 && j < n)
        return j;
    if (mode == OQCF_PAD_CONSTANT)
        return -1;
    if (mode == OQCF_PAD_EDGE || n == 1)
        return j < 0 ? 0 : n - 1;
    int64_t period = 2 * (n - 1);
    j %= period;
    if (j < 0)
        j += period;
    return j < n ? j : period - j;
}

OqcfStatus oqcf_pad(const void *x, const OqcfShape *xs, const int64_t *pads,
                    OqcfPadMode mode, const void *value, size_t esize, void *y) {
    PadDim pd[OQCF_MAX_RANK];
    OqcfShape os;
    if (oqcf_pad_shape(xs, pads, &os) != OQCF_OK || esize == 0 ||
        (mode != OQCF_PAD_CONSTANT && mode != OQCF_PAD_REFLECT && mode != OQCF_PAD_EDGE))
        return OQCF_EINVAL;
    int r = xs->rank;
    for (int k = 0; k < r; k++) {
        pad_dim(xs->d[k], pads[k], pads[r + k], &pd[k]);
        if (mode != OQCF_PAD_CONSTANT && pd[k].ext == 0 && pd[k].out > 0)
            return OQCF_EINVAL;     /* nothing to reflect or repeat */
    }
    int64_t total = oqcf_numel(&os);
    if (total == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    if (r == 0) {
        memcpy(y, x, esize);
        return OQCF_OK;
    }
    int64_t is[OQCF_MAX_RANK], idx[OQCF_MAX_RANK] = { 0 };
    for (int k = r - 1; k >= 0; k--)
        is[k] = k == r - 1 ? 1 : is[k + 1] * xs->d[k + 1];
    const PadDim *in = &pd[r - 1];
    int64_t n = in->out, le = in->out - in->lb - in->ext, rows = total / n;
    const char *xb = x;
    char *yp = y;
    for (int64_t row = 0; row < rows; row++, yp += (size_t)n * esize) {
        /* source row of the outer output index, or a constant row */
        int64_t off = 0;
        int constant_row = 0;
        for (int k = 0; k < r - 1; k++) {
            int64_t s = pad_src(&pd[k], idx[k], mode);
            if (s < 0)
                constant_row = 1;
            off += (pd[k].cb + s) * is[k];
        }
        for (int k = r - 2; k >= 0; k--) {
            if (++idx[k] < pd[k].out)
                break;
            idx[k] = 0;
        }
        if (constant_row) {
            fill(yp, n, value, esize);
            continue;
        }
        const char *src = xb + (size_t)(off + in->cb) * esize;
        memcpy(yp + (size_t)in->lb * esize, src, (size_t)in->ext * esize);
        if (mode == OQCF_PAD_CONSTANT) {
            fill(yp, in->lb, value, esize);
            fill(yp + (size_t)(in->lb + in->ext) * esize, le, value, esize);
            continue;
        }
        for (int64_t i = 0; i < in->lb; i++)
            memcpy(yp + (size_t)i * esize, src + (size_t)pad_src(in, i, mode) * esize, esize);
        for (int64_t i = in->lb + in->ext; i < n; i++)
            memcpy(yp + (size_t)i * esize, src + (size_t)pad_src(in, i, mode) * esize, esize);
    }
    return OQCF_OK;
}

/* ---- Gather ---- */

OqcfStatus oqcf_gather_shape(const OqcfShape *xs, const OqcfShape *is, int axis,
                             OqcfShape *out) {
    int ax;
    if (!shape_valid(xs) || !shape_valid(is) || !out || xs->rank < 1 ||
        !norm_axis(axis, xs->rank, &ax) || xs->rank - 1 + is->rank > OQCF_MAX_RANK)
        return OQCF_EINVAL;
    OqcfShape o;
    o.rank = 0;
    for (int k = 0; k < ax; k++)
        o.d[o.rank++] = xs->d[k];
    for (int k = 0; k < is->rank; k++)
        o.d[o.rank++] = is->d[k];
    for (int k = ax + 1; k < xs->rank; k++)
        o.d[o.rank++] = xs->d[k];
    for (int k = o.rank; k < OQCF_MAX_RANK; k++)
        o.d[k] = 0;
    *out = o;
    return OQCF_OK;
}

/* Index i of an INT32 or INT64 index array. */
static int64_t index_at(const void *idx, OqcfDType t, int64_t i) {
    return t == OQCF_INT32 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
}

OqcfStatus oqcf_gather(const void *x, const OqcfShape *xs, int axis, const void *idx,
                       OqcfDType idx_type, int64_t n_idx, size_t esize, void *y) {
    int ax;
    if (!shape_valid(xs) || xs->rank < 1 || !norm_axis(axis, xs->rank, &ax) ||
        esize == 0 || n_idx < 0 || (n_idx > 0 && !idx))
        return OQCF_EINVAL;
    if (idx_type != OQCF_INT32 && idx_type != OQCF_INT64)
        return OQCF_EDTYPE;
    int64_t len = xs->d[ax];
    for (int64_t i = 0; i < n_idx; i++) {   /* validate everything before writing */
        int64_t v = index_at(idx, idx_type, i);
        if (v < -len || v >= len)
            return OQCF_EINVAL;
    }
    int64_t outer = dims_prod(xs, 0, ax);
    size_t bytes = (size_t)dims_prod(xs, ax + 1, xs->rank) * esize;
    if (outer == 0 || n_idx == 0 || bytes == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    const char *xb = x;
    char *yp = y;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < n_idx; i++, yp += bytes) {
            int64_t v = index_at(idx, idx_type, i);
            v = v < 0 ? v + len : v;
            memcpy(yp, xb + (size_t)(o * len + v) * bytes, bytes);
        }
    return OQCF_OK;
}

/* ---- Tile / Expand ---- */

OqcfStatus oqcf_tile(const void *x, const OqcfShape *xs, const OqcfShape *ys, size_t esize,
                     void *y) {
    if (!xs || !ys || xs->rank < 0 || ys->rank > OQCF_MAX_RANK || xs->rank > ys->rank ||
        esize == 0)
        return OQCF_EINVAL;
    int r = ys->rank, off = r - xs->rank;
    int64_t xd[OQCF_MAX_RANK], xst[OQCF_MAX_RANK];
    for (int k = 0; k < r; k++) {
        xd[k] = k >= off ? xs->d[k - off] : 1;
        if (xd[k] < 0 || ys->d[k] < 0 || (xd[k] == 0 && ys->d[k] > 0))
            return OQCF_EINVAL;
    }
    int64_t st = 1;
    for (int k = r - 1; k >= 0; k--) {
        xst[k] = st;
        st *= xd[k];
    }
    int64_t ny = oqcf_numel(ys);
    if (ny == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    const char *xp = x;
    char *yp = y;
    int64_t inner = r ? ys->d[r - 1] : 1, xin = r ? xd[r - 1] : 1;
    int64_t idx[OQCF_MAX_RANK] = {0}, xo = 0;   /* xo: input offset of the row's start */
    for (int64_t i = 0; i < ny; i += inner) {
        /* one output row: the input row repeated (its one element when xin is 1) */
        for (int64_t j = 0, jx = 0; j < inner; j++) {
            memcpy(yp + (size_t)(i + j) * esize, xp + (size_t)(xo + jx) * esize, esize);
            jx = jx + 1 == xin ? 0 : jx + 1;
        }
        for (int k = r - 2; k >= 0; k--) {
            if (++idx[k] < ys->d[k]) {
                if (idx[k] % xd[k] == 0)
                    xo -= xst[k] * (xd[k] - 1);   /* wrapped around the input dim */
                else
                    xo += xst[k];
                break;
            }
            xo -= xst[k] * ((ys->d[k] - 1) % xd[k]);
            idx[k] = 0;
        }
    }
    return OQCF_OK;
}
