/* resample.c - the op family of outputs resampled from their input's grid: Resize /
 * Upsample, Tile / Expand, DepthToSpace / SpaceToDepth. Shape rules (oqc_rule_*), FP32
 * preparation (oqc_prep_*), the run functions and their C emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

/* Tile: each dim times its repeat (input 1, a constant of rank-many entries). */
int oqc_rule_tile(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t rep[OQC_MAX_RANK];
    int n = const_list_1(c, rep, "repeats");
    if (n < 0)
        return -1;
    if (n != x->shape.rank)
        return ERR("repeats has %d entries for an input of rank %d", n, x->shape.rank);
    OqcShape s = x->shape;
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0 || (rep[i] > 0 && s.d[i] > OQC_MAX_ELEMENTS / rep[i]))
            return ERR("repeat %" PRId64 " of axis %d is negative or absurd", rep[i], i);
        s.d[i] *= rep[i];
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* Expand: numpy broadcast of the input with the shape given as input 1 (a constant). */
int oqc_rule_expand(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t v[OQC_MAX_RANK];
    int n = const_list_1(c, v, "shape");
    if (n < 0)
        return -1;
    OqcShape want = {.rank = n}, s;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] > OQC_MAX_ELEMENTS)
            return ERR("dimension %" PRId64 " is negative or absurd", v[i]);
        want.d[i] = v[i];
    }
    if (oqcf_broadcast_shape(&x->shape, &want, &s) != OQCF_OK)
        return ERR("shape %s does not broadcast with the input's %s", sstr(&want),
                   sstr(&x->shape));
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* DepthToSpace / SpaceToDepth on NCHW: blocksize b moves C/(b*b) <-> H*b, W*b. */
int oqc_rule_space_depth(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    int64_t bs = oqc_attr_int(c->n, "blocksize", 0);
    if (x->shape.rank != 4)
        return ERR("needs a 4-D NCHW input, not %s", sstr(&x->shape));
    if (bs < 1 || bs > 4096)
        return ERR("blocksize %" PRId64 " must be in 1..4096", bs);
    OqcShape s = x->shape;
    if (c->n->op == OQC_OP_DepthToSpace) {
        const char *mode = oqc_attr_string(c->n, "mode", "DCR");
        if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
            return ERR("mode '%s' is neither DCR nor CRD", mode);
        if (s.d[1] % (bs * bs))
            return ERR("%" PRId64 " channels are not a multiple of blocksize^2 = %" PRId64,
                       s.d[1], bs * bs);
        s.d[1] /= bs * bs;
        s.d[2] *= bs;
        s.d[3] *= bs;
    } else {
        if (s.d[2] % bs || s.d[3] % bs)
            return ERR("height %" PRId64 " and width %" PRId64 " must be multiples of the "
                       "blocksize %" PRId64, s.d[2], s.d[3], bs);
        s.d[1] *= bs * bs;
        s.d[2] /= bs;
        s.d[3] /= bs;
    }
    set_out(c, 0, x->dtype, &s);
    return 0;
}

/* Resize / Upsample: the output extents resize.c derives (constant scales or sizes). */
int oqc_rule_resize(Ctx *c) {
    const OqcTensor *x = IN(c, 0);
    OqcResize r;
    if (oqc_resize_plan(c->g, c->node, &x->shape, &r, NULL, c->d) < 0)
        return -1;
    set_out(c, 0, x->dtype, &r.out);
    return 0;
}

static int run_tile(OqcExec *e, int node) {
    const OqcTensor *y = T(e, N(e, node)->out[0]);
    CHECK(oqcf_tile(XIN(e, node, 0), SH(e, node, 0), &y->shape, esize_of(y), YOUT(e, node, 0)));
    return 0;
}

static int run_space_depth(OqcExec *e, int node) {
    ExecNode *x = EN(e, node);
    CHECK(oqcf_transpose(XIN(e, node, 0), &x->view, x->perm, esize_of(T(e, N(e, node)->in[0])),
                         YOUT(e, node, 0)));
    return 0;
}

static int run_resize(OqcExec *e, int node) {
    const OqcResize *r = EN(e, node)->resize;
    CHECK(oqcf_resize(XIN(e, node, 0), SH(e, node, 0), r->axes, r->naxes, r->extrapolation,
                      esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0), e->scratch,
                      e->scratch_bytes));
    return 0;
}

/* ------------------------------------------------------------------ prepare */

/* Tile, Expand */
int oqc_prep_tile(OqcExec *e, int node, OqcDiag *d) {
    ExecNode *x = &e->nodes[node];
    (void)d;
    x->run = run_tile;
    x->kind = EXEC_TILE;
    return 0;
}

/* DepthToSpace / SpaceToDepth of NCHW x as a transpose of a 6-D view of x (ONNX's
 * definitions): DCR [N, b, b, C', H, W] -> [N, C', H, b, W, b]; CRD [N, C', b, b, H, W]
 * -> the same order; SpaceToDepth [N, C, H', b, W', b] -> [N, b, b, C, H', W']. */
void oqc_space_depth_view(const OqcNode *n, const OqcShape *xs, OqcShape *view, int *perm) {
    int64_t b = oqc_attr_int(n, "blocksize", 1), N = xs->d[0], C = xs->d[1], H = xs->d[2],
            W = xs->d[3];
    static const int dcr[6] = {0, 3, 4, 1, 5, 2}, crd[6] = {0, 1, 4, 2, 5, 3},
                     s2d[6] = {0, 3, 5, 1, 2, 4};
    const int *p;
    *view = (OqcShape){.rank = 6};
    if (n->op == OQC_OP_SpaceToDepth) {
        int64_t d[6] = {N, C, H / b, b, W / b, b};
        memcpy(view->d, d, sizeof d);
        p = s2d;
    } else if (!strcmp(oqc_attr_string(n, "mode", "DCR"), "CRD")) {
        int64_t d[6] = {N, C / (b * b), b, b, H, W};
        memcpy(view->d, d, sizeof d);
        p = crd;
    } else {
        int64_t d[6] = {N, b, b, C / (b * b), H, W};
        memcpy(view->d, d, sizeof d);
        p = dcr;
    }
    for (int i = 0; i < OQC_MAX_RANK; i++)
        perm[i] = i < 6 ? p[i] : i;
}

/* DepthToSpace, SpaceToDepth */
int oqc_prep_depth_to_space(OqcExec *e, int node, OqcDiag *d) {
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    (void)d;
    oqc_space_depth_view(n, &in0->shape, &x->view, x->perm);
    x->run = run_space_depth;
    x->kind = EXEC_SPACE_DEPTH;
    return 0;
}

/* Resize, Upsample */
int oqc_prep_resize(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    OqcResize *r = oqc_arena_alloc(g->arena, sizeof *r);
    if (oqc_resize_plan(g, node, &in0->shape, r, g->arena, d) < 0)
        return -1;
    int weighted = 0;
    for (int k = 0; k < r->naxes; k++)
        weighted |= r->axes[k].w != NULL;
    if ((weighted || r->extrapolates) && !is_float(in0))
        return PERR("%s %s on %s tensors is not supported (f32 only; nearest moves any "
                    "type)", n->op_type, r->mode == OQC_RESIZE_NEAREST ? "extrapolating"
                    : "interpolation", oqc_dtype_name(in0->dtype));
    x->resize = r;
    x->scratch = oqcf_resize_scratch_size(&in0->shape, r->axes, r->naxes, esize_of(in0));
    x->run = run_resize;
    x->kind = EXEC_RESIZE;
    return 0;
}

/* The call of EXEC_TILE (run_tile). */
void oqc_em_tile(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcGraph *g = m->g;
    oqc_em_use_kernel(m, "oqcf_layout.c");
    const OqcTensor *y = &g->tensors[n->out[0]];
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const OqcfShape ys%d = ", node);
    oqc_em_shape(oqc_em_decl(m), &y->shape);
    fputs(";\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_tile(%s, &s%d[0], &ys%d, %zu, %s));\n", X(0), node, node,
            oqcf_dtype_size(y->dtype), Y(0));
}

/* The call of DepthToSpace/SpaceToDepth node as a transpose of the 6-D view of x into y,
 * elements of esize bytes (FP32 and INT8 alike). */
void oqc_em_space_depth_call(Em *m, int node, const OqcShape *view, const int *perm, size_t esize,
                             const char *x, const char *y, FILE *b) {
    oqc_em_use_kernel(m, "oqcf_layout.c");
    fprintf(oqc_em_decl(m), "static const OqcfShape v%d = ", node);
    oqc_em_shape(oqc_em_decl(m), view);
    fprintf(oqc_em_decl(m), "; /* the 6-D view of the input */\nstatic const int perm%d[%d] = {",
            node, OQC_MAX_RANK);
    for (int i = 0; i < OQC_MAX_RANK; i++)
        fprintf(oqc_em_decl(m), "%s%d", i ? ", " : "", perm[i]);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_transpose(%s, &v%d, perm%d, %zu, %s));\n", x, node, node, esize, y);
}

/* The call of EXEC_SPACE_DEPTH (run_space_depth). */
void oqc_em_space_depth(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    oqc_em_space_depth_call(m, node, &x->view, x->perm,
                            oqcf_dtype_size(m->g->tensors[n->in[0]].dtype), X(0), Y(0), b);
}

/* The call of EXEC_RESIZE (run_resize). */
void oqc_em_resize(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_resize.c");
    oqc_em_in_shapes(m, node, 1);
    oqc_em_resize_tables(m, node, x->resize);
    fprintf(b, "    TRY(oqcf_resize(%s, &s%d[0], rz%d, %d, ", X(0), node, node,
            x->resize->naxes);
    oqc_em_f(b, x->resize->extrapolation);
    fprintf(b, ", %zu, %s, %s));\n", oqcf_dtype_size(in0->dtype), Y(0), oqc_em_scratch_args(m));
}
