/* nn.c - the op family conv, deconv, pooling, gemm/matmul: shape rules (oqc_rule_*),
 * FP32 preparation (oqc_prep_*), the run functions the executor calls and their C
 * emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

/* The geometry arrays conv and pool parameters share, one line each. */
static void put_geometry(FILE *f, const int64_t *in_size, const int64_t *out_size,
                         const int64_t *kernel, const int64_t *stride, const int64_t *dilation,
                         const int64_t *pad_begin, const int64_t *pad_end) {
    static const char *const geo[] = {"in_size", "out_size", "kernel", "stride", "dilation",
                                      "pad_begin", "pad_end"};
    const int64_t *v[] = {in_size, out_size, kernel, stride, dilation, pad_begin, pad_end};
    for (int i = 0; i < 7; i++) {
        fprintf(f, "    .%s = ", geo[i]);
        oqc_em_i64s(f, v[i], OQCF_MAX_SPATIAL);
        fputs(",\n", f);
    }
}

/* The channel views conv and pool parameters share, then `end`. */
static void put_views(FILE *f, int64_t x_ctotal, int64_t x_coff, int64_t y_ctotal,
                      int64_t y_coff, const char *end) {
    fprintf(f, "    .x_ctotal = %" PRId64 ", .x_coff = %" PRId64 ", .y_ctotal = %" PRId64
               ", .y_coff = %" PRId64 "%s", x_ctotal, x_coff, y_ctotal, y_coff, end);
}

static void conv_params(Em *m, const char *pname, const OqcfConvParams *p, int node) {
    FILE *f = oqc_em_decl(m);
    const OqcNode *n = &m->g->nodes[node];
    fprintf(f, "static const OqcfConvParams %s = {\n", pname);
    fprintf(f, "    .nspatial = %d, .batch = %" PRId64 ", .channels = %" PRId64
               ", .out_channels = %" PRId64 ", .group = %" PRId64 ",\n",
            p->nspatial, p->batch, p->channels, p->out_channels, p->group);
    put_geometry(f, p->in_size, p->out_size, p->kernel, p->stride, p->dilation, p->pad_begin,
                 p->pad_end);
    put_views(f, p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff, ",\n    .act = ");
    oqc_em_act(f, &p->act);
    if (p->act_per_channel) {
        OQC_ASSERT(n->act_per_channel && p->act_per_channel >= n->act_per_channel);
        fprintf(f, ",\n    .act_per_channel = &act%d[%td]};\n", node,
                p->act_per_channel - n->act_per_channel);
    } else {
        fputs(",\n    .act_per_channel = NULL};\n", f);
    }
}

static void pool_params(Em *m, int node, const OqcfPoolParams *p) {
    FILE *f = oqc_em_decl(m);
    fprintf(f, "static const OqcfPoolParams p%d = {\n", node);
    fprintf(f, "    .nspatial = %d, .batch = %" PRId64 ", .channels = %" PRId64 ",\n",
            p->nspatial, p->batch, p->channels);
    put_geometry(f, p->in_size, p->out_size, p->kernel, p->stride, p->dilation, p->pad_begin,
                 p->pad_end);
    fprintf(f, "    .count_include_pad = %d, .storage_order = %d,\n", p->count_include_pad,
            p->storage_order);
    put_views(f, p->x_ctotal, p->x_coff, p->y_ctotal, p->y_coff, "};\n");
}

/* ------------------------------------------------------------------ shape */

/* ---------------------------------------------------------- conv / pooling */

int oqc_rule_conv(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *w = IN(c, 1);
    if (!w)
        return ERR("needs a weight input");
    if (same_type(c, 3) < 0)
        return -1;
    OqcWindow win;
    if (oqc_conv_geometry(c->g, c->node, &x->shape, &w->shape, &win, c->d) < 0)
        return -1;
    const OqcTensor *b = IN(c, 2);
    if (b && (b->shape.rank != 1 || b->shape.d[0] != win.out_channels))
        return ERR("bias '%s' has shape %s; expected [%" PRId64 "]", b->name,
                   sstr(&b->shape), win.out_channels);
    OqcShape s = {.rank = x->shape.rank};
    s.d[0] = x->shape.d[0];
    s.d[1] = win.out_channels;
    for (int i = 0; i < win.nsp; i++)
        s.d[2 + i] = win.out[i];
    if (!c->n->out_channels) {
        set_out(c, 0, x->dtype, &s);
        return 0;
    }
    /* A merged conv: output k holds the next out_channels[k] channels. */
    int64_t total = 0;
    for (int k = 0; k < c->n->nout; k++) {
        s.d[1] = c->n->out_channels[k];
        total += s.d[1];
        set_out(c, k, x->dtype, &s);
    }
    if (total != win.out_channels)
        return ERR("output channel ranges add up to %" PRId64 " but the weight has %" PRId64,
                   total, win.out_channels);
    return 0;
}

int oqc_rule_conv_transpose(Ctx *c) {
    const OqcTensor *x = IN(c, 0), *w = IN(c, 1);
    if (!w)
        return ERR("needs a weight input");
    if (same_type(c, 3) < 0)
        return -1;
    OqcWindow win;
    if (oqc_conv_transpose_geometry(c->g, c->node, &x->shape, &w->shape, &win, c->d) < 0)
        return -1;
    OqcShape s = {.rank = x->shape.rank};
    s.d[0] = x->shape.d[0];
    s.d[1] = win.out_channels;
    for (int i = 0; i < win.nsp; i++)
        s.d[2 + i] = win.out[i];
    set_out(c, 0, x->dtype, &s);
    return 0;
}

int oqc_rule_pool(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    OqcWindow win;
    if (oqc_pool_geometry(c->g, c->node, &x->shape, &win, c->d) < 0)
        return -1;
    OqcShape s = x->shape;
    for (int i = 0; i < win.nsp; i++)
        s.d[2 + i] = win.out[i];
    set_out(c, 0, x->dtype, &s);
    set_out(c, 1, OQCF_INT64, &s); /* MaxPool's optional Indices */
    return 0;
}

int oqc_rule_global_pool(Ctx *c) {
    OqcShape s = IN(c, 0)->shape;
    if (s.rank < 3)
        return ERR("input '%s' has rank %d; needs N x C x spatial...", IN(c, 0)->name, s.rank);
    for (int i = 2; i < s.rank; i++)
        s.d[i] = 1;
    set_out(c, 0, IN(c, 0)->dtype, &s);
    return 0;
}

/* ------------------------------------------------------------------ linear */

int oqc_rule_gemm(Ctx *c) {
    const OqcTensor *a = IN(c, 0), *b = IN(c, 1), *cc = IN(c, 2);
    if (!b)
        return ERR("needs inputs A and B");
    if (same_type(c, 3) < 0)
        return -1;
    if (a->shape.rank != 2 || b->shape.rank != 2)
        return ERR("A '%s' %s and B '%s' %s must both be 2-D", a->name, sstr(&a->shape),
                   b->name, sstr(&b->shape));
    int ta = oqc_attr_int(c->n, "transA", 0) != 0, tb = oqc_attr_int(c->n, "transB", 0) != 0;
    int64_t m = a->shape.d[ta], k = a->shape.d[!ta], kb = b->shape.d[tb], n = b->shape.d[!tb];
    if (k != kb)
        return ERR("inner dimensions differ: A%s is %s, B%s is %s", ta ? "^T" : "",
                   sstr(&a->shape), tb ? "^T" : "", sstr(&b->shape));
    OqcShape s = {.rank = 2, .d = {m, n}}, r;
    if (cc && (oqcf_broadcast_shape(&cc->shape, &s, &r) != OQCF_OK || !oqc_shape_equal(&r, &s)))
        return ERR("C '%s' %s does not broadcast to %s", cc->name, sstr(&cc->shape), sstr(&s));
    set_out(c, 0, a->dtype, &s);
    return 0;
}

int oqc_rule_matmul(Ctx *c) {
    const OqcTensor *a = IN(c, 0), *b = IN(c, 1);
    if (!b)
        return ERR("needs two inputs");
    if (same_type(c, 2) < 0)
        return -1;
    OqcShape as = a->shape, bs = b->shape;
    if (as.rank == 0 || bs.rank == 0)
        return ERR("MatMul inputs must have rank >= 1 (got %s and %s)", sstr(&as), sstr(&bs));
    int a1 = as.rank == 1, b1 = bs.rank == 1;
    if (a1) { as.rank = 2; as.d[1] = as.d[0]; as.d[0] = 1; }
    if (b1) { bs.rank = 2; bs.d[1] = 1; }
    if (as.d[as.rank - 1] != bs.d[bs.rank - 2])
        return ERR("inner dimensions differ: %s x %s", sstr(&a->shape), sstr(&b->shape));
    OqcShape ab = as, bb = bs, batch;
    ab.rank -= 2;
    bb.rank -= 2;
    if (oqcf_broadcast_shape(&ab, &bb, &batch) != OQCF_OK)
        return ERR("batch dimensions of %s and %s do not broadcast", sstr(&a->shape),
                   sstr(&b->shape));
    OqcShape s = batch;
    if (!a1)
        s.d[s.rank++] = as.d[as.rank - 2];
    if (!b1)
        s.d[s.rank++] = bs.d[bs.rank - 1];
    set_out(c, 0, a->dtype, &s);
    return 0;
}

/* ------------------------------------------------------------------ run */

static int run_conv(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    ExecNode *x = EN(e, node);
    const float *b = n->nin > 2 && n->in[2] >= 0 ? XIN(e, node, 2) : NULL;
    if (!x->convs) {
        CHECK(oqcf_conv(e->pool, &x->conv, XIN(e, node, 0), XIN(e, node, 1), b,
                        out_base(e, node, 0), e->scratch, e->scratch_bytes));
        return 0;
    }
    /* A merged conv: one call per output range of weight rows. */
    const float *w = XIN(e, node, 1);
    int64_t row = oqc_shape_numel(SH(e, node, 1)) / SH(e, node, 1)->d[0];
    for (int k = 0; k < n->nout; k++)
        CHECK(oqcf_conv(e->pool, &x->convs[k], XIN(e, node, 0), w + x->koff[k] * row,
                        b ? b + x->koff[k] : NULL, out_base(e, node, k), e->scratch,
                        e->scratch_bytes));
    return 0;
}

static int run_conv_transpose(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const float *b = n->nin > 2 && n->in[2] >= 0 ? XIN(e, node, 2) : NULL;
    CHECK(oqcf_conv_transpose(&EN(e, node)->conv, XIN(e, node, 0), XIN(e, node, 1), b,
                              YOUT(e, node, 0)));
    return 0;
}

static int run_maxpool(OqcExec *e, int node) {
    int64_t *idx = N(e, node)->nout > 1 && N(e, node)->out[1] >= 0 ? YOUT(e, node, 1) : NULL;
    const OqcTensor *x = T(e, N(e, node)->in[0]);
    if (x->dtype == OQCF_FLOAT) {
        CHECK(oqcf_maxpool(e->pool, &EN(e, node)->pool, XIN(e, node, 0), out_base(e, node, 0),
                       idx));
        return 0;
    }
    /* 8-bit inputs: max commutes with the exact conversion to float and back. */
    int64_t nx = oqc_shape_numel(&x->shape), ny = numel_out(e, node, 0);
    if (nx == 0 || ny == 0)   /* nothing to do, and no scratch was planned */
        return 0;
    float *fx = e->scratch, *fy = fx + nx;
    CHECK(oqcf_cast(XIN(e, node, 0), x->dtype, fx, OQCF_FLOAT, nx));
    CHECK(oqcf_maxpool(e->pool, &EN(e, node)->pool, fx, fy, idx));
    CHECK(oqcf_cast(fy, OQCF_FLOAT, YOUT(e, node, 0), x->dtype, ny));
    return 0;
}

static int run_avgpool(OqcExec *e, int node) {
    CHECK(oqcf_avgpool(e->pool, &EN(e, node)->pool, XIN(e, node, 0), out_base(e, node, 0)));
    return 0;
}

static int run_global_pool(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    if (N(e, node)->op == OQC_OP_GlobalAveragePool)
        CHECK(oqcf_global_avgpool(e->pool, x->a, x->b, x->c, XIN(e, node, 0), YOUT(e, node, 0)));
    else
        CHECK(oqcf_global_maxpool(e->pool, x->a, x->b, x->c, XIN(e, node, 0), YOUT(e, node, 0)));
    return 0;
}

static int run_gemm(OqcExec *e, int node) {
    const float *c = EN(e, node)->gemm.has_c ? XIN(e, node, 2) : NULL;
    CHECK(oqcf_gemm(e->pool, &EN(e, node)->gemm, XIN(e, node, 0), XIN(e, node, 1), c,
                    YOUT(e, node, 0), e->scratch, e->scratch_bytes));
    return 0;
}

static int run_matmul(OqcExec *e, int node) {
    CHECK(oqcf_matmul(e->pool, SH(e, node, 0), XIN(e, node, 0), SH(e, node, 1),
                      XIN(e, node, 1), YOUT(e, node, 0), e->scratch, e->scratch_bytes));
    return 0;
}

/* ------------------------------------------------------------------ prepare */

/* Conv */
int oqc_prep_conv(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int nthreads = oqcf_pool_threads(e->pool);
    OqcWindow w;
    if (oqc_conv_geometry(g, node, &in0->shape, SH(e, node, 1), &w, d) < 0)
        return -1;
    if (!is_float(in0))
        return PERR("Conv on %s tensors is not supported (f32 only)", oqc_dtype_name(in0->dtype));
    OqcfConvParams *p = &x->conv;
    memset(p, 0, sizeof *p);
    p->nspatial = w.nsp;
    if (fill_window(&w, p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                    p->pad_begin, p->pad_end) < 0)
        return PERR("Conv with %d spatial axes is not supported (at most %d)", w.nsp,
                    OQCF_MAX_SPATIAL);
    p->batch = in0->shape.d[0];
    p->channels = w.in_channels;
    p->out_channels = w.out_channels;
    p->group = w.group;
    p->act = n->act;
    p->act_per_channel = n->act_per_channel;
    if (n->out_channels) {
        if (w.group != 1)
            return PERR("a merged Conv must have group 1");
        x->convs = oqc_arena_alloc(g->arena, (size_t)n->nout * sizeof *x->convs);
        x->koff = oqc_arena_alloc(g->arena, (size_t)n->nout * sizeof *x->koff);
        int64_t off = 0;
        for (int k = 0; k < n->nout; k++) {
            x->convs[k] = *p;
            x->convs[k].out_channels = n->out_channels[k];
            if (n->act_per_channel)
                x->convs[k].act_per_channel = n->act_per_channel + off;
            x->koff[k] = off;
            off += n->out_channels[k];
            if (set_out_view(g, n->out[k], &x->convs[k].y_ctotal, &x->convs[k].y_coff, d, node) < 0)
                return -1;
            size_t sc = oqcf_conv_scratch_size(&x->convs[k], nthreads);
            x->scratch = sc > x->scratch ? sc : x->scratch;
        }
    } else if (set_out_view(g, n->out[0], &p->y_ctotal, &p->y_coff, d, node) < 0) {
        return -1;
    }
    if (!n->out_channels)
        x->scratch = oqcf_conv_scratch_size(p, nthreads);
    x->run = run_conv;
    x->kind = EXEC_CONV;
    return 0;
}

/* ConvTranspose */
int oqc_prep_conv_transpose(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    OqcWindow w;
    if (oqc_conv_transpose_geometry(g, node, &in0->shape, SH(e, node, 1), &w, d) < 0)
        return -1;
    if (!is_float(in0))
        return PERR("ConvTranspose on %s tensors is not supported (f32 only)",
                    oqc_dtype_name(in0->dtype));
    OqcfConvParams *p = &x->conv;
    memset(p, 0, sizeof *p);
    p->nspatial = w.nsp;
    if (fill_window(&w, p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                    p->pad_begin, p->pad_end) < 0)
        return PERR("ConvTranspose with %d spatial axes is not supported (at most %d)",
                    w.nsp, OQCF_MAX_SPATIAL);
    p->batch = in0->shape.d[0];
    p->channels = w.in_channels;
    p->out_channels = w.out_channels;
    p->group = w.group;
    x->run = run_conv_transpose;
    x->kind = EXEC_CONV_TRANSPOSE;
    return 0;
}

/* GlobalAveragePool, GlobalMaxPool */
int oqc_prep_global_average_pool(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (!is_float(in0))
        return PERR("only f32 is supported");
    nc_inner(x, &in0->shape);
    x->run = run_global_pool;
    x->kind = EXEC_GLOBAL_POOL;
    return 0;
}

/* Gemm */
int oqc_prep_gemm(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    int nthreads = oqcf_pool_threads(e->pool);
    OqcfGemmParams *p = &x->gemm;
    memset(p, 0, sizeof *p);
    if (!is_float(in0))
        return PERR("only f32 is supported");
    p->trans_a = oqc_attr_int(n, "transA", 0) != 0;
    p->trans_b = oqc_attr_int(n, "transB", 0) != 0;
    p->M = out0->shape.d[0];
    p->N = out0->shape.d[1];
    p->K = in0->shape.d[p->trans_a ? 0 : 1];
    p->alpha = oqc_attr_float(n, "alpha", 1.0f);
    p->beta = oqc_attr_float(n, "beta", 1.0f);
    p->has_c = n->nin > 2 && n->in[2] >= 0;
    if (p->has_c)
        p->c_shape = *SH(e, node, 2);
    p->act = n->act;
    x->scratch = oqcf_gemm_scratch_size(p, nthreads);
    x->run = run_gemm;
    x->kind = EXEC_GEMM;
    return 0;
}

/* MatMul */
int oqc_prep_mat_mul(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int nthreads = oqcf_pool_threads(e->pool);
    if (!is_float(in0))
        return PERR("only f32 is supported");
    x->scratch = oqcf_matmul_scratch_size(SH(e, node, 0), SH(e, node, 1), nthreads);
    x->run = run_matmul;
    x->kind = EXEC_MATMUL;
    return 0;
}

/* MaxPool, AveragePool */
int oqc_prep_max_pool(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    OqcWindow w;
    if (oqc_pool_geometry(g, node, &in0->shape, &w, d) < 0)
        return -1;
    int byte_max = n->op == OQC_OP_MaxPool &&
                   (in0->dtype == OQCF_UINT8 || in0->dtype == OQCF_INT8);
    if (!is_float(in0) && !byte_max)
        return PERR("%s on %s tensors is not supported", n->op_type,
                    oqc_dtype_name(in0->dtype));
    if (byte_max)
        x->scratch = (size_t)(oqc_shape_numel(&in0->shape) + oqc_shape_numel(&out0->shape)) *
                     sizeof(float);
    OqcfPoolParams *p = &x->pool;
    memset(p, 0, sizeof *p);
    p->nspatial = w.nsp;
    if (fill_window(&w, p->in_size, p->out_size, p->kernel, p->stride, p->dilation,
                    p->pad_begin, p->pad_end) < 0)
        return PERR("pooling with %d spatial axes is not supported", w.nsp);
    p->batch = in0->shape.d[0];
    p->channels = in0->shape.d[1];
    if (set_out_view(g, n->out[0], &p->y_ctotal, &p->y_coff, d, node) < 0)
        return -1;
    p->count_include_pad = (int)oqc_attr_int(n, "count_include_pad", 0);
    p->storage_order = (int)oqc_attr_int(n, "storage_order", 0);
    x->run = n->op == OQC_OP_MaxPool ? run_maxpool : run_avgpool;
    x->kind = n->op == OQC_OP_MaxPool ? EXEC_MAXPOOL : EXEC_AVGPOOL;
    return 0;
}

/* ------------------------------------------------------------------ emit */

/* The call of EXEC_CONV (run_conv). */
void oqc_em_conv(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    oqc_em_use_kernel(m, "oqcf_conv.c");
    const char *bias = n->nin > 2 && n->in[2] >= 0 ? X(2) : NULL;
    if (n->act_per_channel) {
        int64_t total = 0;
        if (x->convs)
            for (int k = 0; k < n->nout; k++)
                total += x->convs[k].out_channels;
        else
            total = x->conv.out_channels;
        fprintf(oqc_em_decl(m), "static const OqcfAct act%d[%" PRId64 "] = {", node, total);
        for (int64_t c = 0; c < total; c++) {
            fputs(c % 2 ? ", " : c ? ",\n    " : "\n    ", oqc_em_decl(m));
            oqc_em_act(oqc_em_decl(m), &n->act_per_channel[c]);
        }
        fputs("};\n", oqc_em_decl(m));
    }
    if (!x->convs) {
        conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
        fprintf(b, "    TRY(oqcf_conv(%s, &p%d, %s, %s, %s, %s, %s));\n", oqc_em_pool_arg(m), node,
                X(0), X(1), bias ? bias : "NULL", oqc_em_out_base(m, node, 0), oqc_em_scratch_args(m));
        return;
    }
    /* A merged conv: one call per output range of weight rows. */
    const OqcShape *ws = &g->tensors[n->in[1]].shape;
    int64_t row = oqc_shape_numel(ws) / ws->d[0];
    for (int k = 0; k < n->nout; k++) {
        const char *pn = oqc_arena_printf(m->a, "p%d_%d", node, k);
        conv_params(m, pn, &x->convs[k], node);
        const char *w = X(1), *bk = "NULL";
        if (x->koff[k])
            w = oqc_arena_printf(m->a, "%s + %" PRId64, w, x->koff[k] * row);
        if (bias)
            bk = x->koff[k] ? oqc_arena_printf(m->a, "%s + %" PRId64, bias, x->koff[k]) : bias;
        fprintf(b, "    TRY(oqcf_conv(%s, &%s, %s, %s, %s, %s, %s));\n", oqc_em_pool_arg(m), pn,
                X(0), w, bk, oqc_em_out_base(m, node, k), oqc_em_scratch_args(m));
    }
}

/* The call of EXEC_CONV_TRANSPOSE (run_conv_transpose). */
void oqc_em_conv_transpose(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_deconv.c");
    conv_params(m, oqc_arena_printf(m->a, "p%d", node), &x->conv, node);
    fprintf(b, "    TRY(oqcf_conv_transpose(&p%d, %s, %s, %s, %s));\n", node, X(0), X(1),
            n->nin > 2 && n->in[2] >= 0 ? X(2) : "NULL", Y(0));
}

/* The call of EXEC_MAXPOOL (run_maxpool). */
void oqc_em_maxpool(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_pooling.c");
    pool_params(m, node, &x->pool);
    const char *idx = n->nout > 1 && n->out[1] >= 0 ? Y(1) : "NULL";
    if (in0->dtype == OQCF_FLOAT) {
        fprintf(b, "    TRY(oqcf_maxpool(%s, &p%d, %s, %s, %s));\n", oqc_em_pool_arg(m), node, X(0),
                oqc_em_out_base(m, node, 0), idx);
        return;
    }
    /* 8-bit inputs: max commutes with the exact conversion to float and back. */
    oqc_em_use_kernel(m, "oqcf_cast.c");
    int64_t nx = oqc_shape_numel(&in0->shape), ny = numel_out(m->e, node, 0);
    fprintf(b, "    TRY(oqcf_cast(%s, %s, SCRATCH, OQCF_FLOAT, %" PRId64 "));\n", X(0),
            oqc_em_dtype_enum(in0->dtype), nx);
    fprintf(b, "    TRY(oqcf_maxpool(%s, &p%d, (float *)SCRATCH, (float *)SCRATCH + %" PRId64
               ", %s));\n", oqc_em_pool_arg(m), node, nx, idx);
    fprintf(b, "    TRY(oqcf_cast((float *)SCRATCH + %" PRId64 ", OQCF_FLOAT, %s, %s, %" PRId64
               "));\n", nx, Y(0), oqc_em_dtype_enum(in0->dtype), ny);
}

/* The call of EXEC_AVGPOOL (run_avgpool). */
void oqc_em_avgpool(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_pooling.c");
    pool_params(m, node, &x->pool);
    fprintf(b, "    TRY(oqcf_avgpool(%s, &p%d, %s, %s));\n", oqc_em_pool_arg(m), node, X(0),
            oqc_em_out_base(m, node, 0));
}

/* The call of EXEC_GLOBAL_POOL (run_global_pool). */
void oqc_em_global_pool(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_pooling.c");
    fprintf(b, "    TRY(oqcf_global_%s(%s, %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %s));\n",
            n->op == OQC_OP_GlobalAveragePool ? "avgpool" : "maxpool", oqc_em_pool_arg(m), x->a,
            x->b, x->c, X(0),
            Y(0));
}

/* The call of EXEC_GEMM (run_gemm). */
void oqc_em_gemm(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_use_kernel(m, "oqcf_gemm.c");
    const OqcfGemmParams *p = &x->gemm;
    fprintf(oqc_em_decl(m), "static const OqcfGemmParams p%d = {\n    .M = %" PRId64 ", .N = %" PRId64
                     ", .K = %" PRId64 ", .trans_a = %d, .trans_b = %d,\n    .alpha = ",
            node, p->M, p->N, p->K, p->trans_a, p->trans_b);
    oqc_em_f(oqc_em_decl(m), p->alpha);
    fputs(", .beta = ", oqc_em_decl(m));
    oqc_em_f(oqc_em_decl(m), p->beta);
    fprintf(oqc_em_decl(m), ", .has_c = %d,\n    .c_shape = ", p->has_c);
    oqc_em_shape(oqc_em_decl(m), &p->c_shape);
    fputs(",\n    .act = ", oqc_em_decl(m));
    oqc_em_act(oqc_em_decl(m), &p->act);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_gemm(%s, &p%d, %s, %s, %s, %s, %s));\n", oqc_em_pool_arg(m), node,
            X(0), X(1), p->has_c ? X(2) : "NULL", Y(0), oqc_em_scratch_args(m));
}

/* The call of EXEC_MATMUL (run_matmul). */
void oqc_em_matmul(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    oqc_em_use_kernel(m, "oqcf_gemm.c");
    oqc_em_in_shapes(m, node, 2);
    fprintf(b, "    TRY(oqcf_matmul(%s, &s%d[0], %s, &s%d[1], %s, %s, %s));\n", oqc_em_pool_arg(m),
            node, X(0), node, X(1), Y(0), oqc_em_scratch_args(m));
}
