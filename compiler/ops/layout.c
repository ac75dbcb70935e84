/* layout.c - the op family data movement: views, Concat, Split, Slice, Transpose, Pad, Gather, Tile, DepthToSpace/SpaceToDepth, Resize: FP32 preparation (oqc_prep_*), the
 * run functions the executor calls and their C emission (oqc_em_*). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define X(k) oqc_em_ptr(m, n->in[k])   /* emitted pointer to input k */
#define Y(k) oqc_em_ptr(m, n->out[k])  /* emitted pointer to output k */

/* ------------------------------------------------------------------ run */

static int run_concat(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const void *xs[256];
    OqcfShape shapes[256];
    for (int k = 0; k < n->nin; k++) {
        xs[k] = XIN(e, node, k);
        shapes[k] = *SH(e, node, k);
    }
    CHECK(oqcf_concat(xs, shapes, n->nin, EN(e, node)->axis, esize_of(T(e, n->out[0])),
                      YOUT(e, node, 0)));
    return 0;
}

static int run_split(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    int64_t sizes[256];
    void *ys[256];
    for (int k = 0; k < n->nout; k++) {
        sizes[k] = T(e, n->out[k])->shape.d[EN(e, node)->axis];
        ys[k] = YOUT(e, node, k);
    }
    CHECK(oqcf_split(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->axis, sizes, n->nout,
                     esize_of(T(e, n->in[0])), ys));
    return 0;
}

static int run_slice(OqcExec *e, int node) {
    CHECK(oqcf_slice(XIN(e, node, 0), SH(e, node, 0), &EN(e, node)->slice,
                     esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_transpose(OqcExec *e, int node) {
    CHECK(oqcf_transpose(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->perm,
                         esize_of(T(e, N(e, node)->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_pad(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    const void *value = NULL;
    if (n->opset >= 11 && n->nin > 2 && n->in[2] >= 0)
        value = XIN(e, node, 2);
    else if (n->opset < 11)
        value = &EN(e, node)->f0; /* float attribute 'value' */
    CHECK(oqcf_pad(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->pads, EN(e, node)->pad_mode,
                   value, esize_of(T(e, n->in[0])), YOUT(e, node, 0)));
    return 0;
}

static int run_gather(OqcExec *e, int node) {
    const OqcTensor *ix = T(e, N(e, node)->in[1]);
    CHECK(oqcf_gather(XIN(e, node, 0), SH(e, node, 0), EN(e, node)->axis, XIN(e, node, 1),
                      ix->dtype, oqc_shape_numel(&ix->shape), esize_of(T(e, N(e, node)->in[0])),
                      YOUT(e, node, 0)));
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

static int run_dropout_mask(OqcExec *e, int node) {
    const OqcNode *n = N(e, node);
    if (n->nout > 1 && n->out[1] >= 0)
        memset(YOUT(e, node, 1), 1, (size_t)numel_out(e, node, 1)); /* inference: keep all */
    return 0;
}

/* ------------------------------------------------------------------ prepare */

/* Tile, Expand */
int oqc_prep_tile(OqcExec *e, int node, OqcDiag *d) {
    ExecNode *x = &e->nodes[node];
    (void)d;
    (void)node;
    x->run = run_tile;
    x->kind = EXEC_TILE;
    return 0;
}

/* DepthToSpace, SpaceToDepth */
int oqc_prep_depth_to_space(OqcExec *e, int node, OqcDiag *d) {
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    (void)d;
    (void)node;
    space_depth_view(n, &in0->shape, &x->view, x->perm);
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

/* Concat */
int oqc_prep_concat(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *out0 = n->nout > 0 && n->out[0] >= 0 ? &e->g->tensors[n->out[0]] : NULL;
    if (n->nin > 256)
        return PERR("more than 256 inputs");
    x->axis = (int)oqc_attr_int(n, "axis", 0);
    if (x->axis < 0)
        x->axis += out0->shape.rank;
    x->run = run_concat;
    x->kind = EXEC_CONCAT;
    return 0;
}

/* Split */
int oqc_prep_split(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    if (n->nout > 256)
        return PERR("more than 256 outputs");
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] < 0)
            return PERR("output %d is omitted", k);
    x->axis = (int)oqc_attr_int(n, "axis", 0);
    if (x->axis < 0)
        x->axis += in0->shape.rank;
    x->run = run_split;
    x->kind = EXEC_SPLIT;
    return 0;
}

/* Slice */
int oqc_prep_slice(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int64_t v[4][OQC_MAX_RANK];
    int cnt[4];
    if (n->opset < 10) {
        const int64_t *p;
        for (int k = 0; k < 3; k++) {
            static const char *const names[] = {"starts", "ends", "axes"};
            cnt[k] = oqc_attr_ints(n, names[k], &p);
            if (cnt[k] > OQC_MAX_RANK)
                return PERR("too many slice entries");
            if (cnt[k] > 0)
                memcpy(v[k], p, (size_t)cnt[k] * sizeof *p);
        }
        cnt[3] = -1;
    } else {
        for (int k = 0; k < 4; k++)
            cnt[k] = values_of(g, node, k + 1, v[k], OQC_MAX_RANK);
        if (cnt[0] < 0 || cnt[1] < 0 || cnt[2] == -1 || cnt[3] == -1)
            return PERR("starts/ends/axes/steps must be constants");
    }
    if (oqcf_slice_resolve(&in0->shape, v[0], v[1], cnt[0], cnt[2] >= 0 ? v[2] : NULL,
                           cnt[3] >= 0 ? v[3] : NULL, &x->slice) != OQCF_OK)
        return PERR("invalid slice");
    x->run = run_slice;
    x->kind = EXEC_SLICE;
    return 0;
}

/* Transpose */
int oqc_prep_transpose(OqcExec *e, int node, OqcDiag *d) {
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    (void)d;
    (void)node;
    const int64_t *perm;
    int np = oqc_attr_ints(n, "perm", &perm);
    for (int i = 0; i < in0->shape.rank; i++)
        x->perm[i] = np >= 0 ? (int)perm[i] : in0->shape.rank - 1 - i;
    x->run = run_transpose;
    x->kind = EXEC_TRANSPOSE;
    return 0;
}

/* Pad */
int oqc_prep_pad(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    int r = in0->shape.rank;
    memset(x->pads, 0, sizeof x->pads);
    if (n->opset < 11) {
        const int64_t *p;
        if (oqc_attr_ints(n, "pads", &p) != 2 * r)
            return PERR("bad pads");
        memcpy(x->pads, p, (size_t)(2 * r) * sizeof *p);
        x->f0 = oqc_attr_float(n, "value", 0.0f);
        if (!is_float(in0))
            return PERR("only f32 is supported for opset < 11 Pad");
    } else {
        int64_t raw[2 * OQC_MAX_RANK], ax[OQC_MAX_RANK];
        int np = values_of(g, node, 1, raw, 2 * OQC_MAX_RANK);
        int na = values_of(g, node, 3, ax, OQC_MAX_RANK);
        if (np < 0 || na == -1)
            return PERR("pads and axes must be constants");
        int nax = na >= 0 ? na : r;
        for (int i = 0; i < nax; i++) {
            int a = na >= 0 ? (int)(ax[i] < 0 ? ax[i] + r : ax[i]) : i;
            x->pads[a] = raw[i];
            x->pads[r + a] = raw[nax + i];
        }
    }
    const char *mode = oqc_attr_string(n, "mode", "constant");
    x->pad_mode = !strcmp(mode, "reflect") ? OQCF_PAD_REFLECT
                : !strcmp(mode, "edge") ? OQCF_PAD_EDGE : OQCF_PAD_CONSTANT;
    x->run = run_pad;
    x->kind = EXEC_PAD;
    return 0;
}

/* Gather */
int oqc_prep_gather(OqcExec *e, int node, OqcDiag *d) {
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    const OqcTensor *in0 = &e->g->tensors[n->in[0]];
    (void)d;
    (void)node;
    x->axis = (int)oqc_attr_int(n, "axis", 0);
    if (x->axis < 0)
        x->axis += in0->shape.rank;
    x->run = run_gather;
    x->kind = EXEC_GATHER;
    return 0;
}

/* Dropout */
int oqc_prep_dropout(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &e->g->nodes[node];
    ExecNode *x = &e->nodes[node];
    int64_t tm[1];
    if (n->nin > 2 && n->in[2] >= 0) {
        const OqcTensor *t = &g->tensors[n->in[2]];
        if (!t->is_const || t->dtype != OQCF_BOOL || !t->data)
            return PERR("training_mode must be a constant");
        if (*(const unsigned char *)t->data)
            return PERR("training-mode Dropout is not supported (inference only)");
    }
    (void)tm;
    if (oqc_attr_int(n, "is_test", 1) == 0 && n->opset < 7)
        return PERR("training-mode Dropout is not supported (inference only)");
    x->run = run_dropout_mask; /* output 0 is a view */
    x->kind = EXEC_DROPOUT;
    return 0;
}

/* Identity, Reshape, Flatten, Squeeze, Unsqueeze */
int oqc_prep_identity(OqcExec *e, int node, OqcDiag *d) {
    ExecNode *x = &e->nodes[node];
    (void)d;
    (void)node;
    x->run = NULL; /* views: no work */
    x->kind = EXEC_NONE;
    return 0;
}

/* ------------------------------------------------------------------ emit */

/* The call of EXEC_CONCAT (run_concat). */
void oqc_em_concat(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, n->nin);
    fputs("    {\n        const void *const x[] = {", b);
    for (int k = 0; k < n->nin; k++)
        fprintf(b, "%s%s", k ? ", " : "", X(k));
    fprintf(b, "};\n        TRY(oqcf_concat(x, s%d, %d, %d, %zu, %s));\n    }\n", node, n->nin,
            x->axis, oqcf_dtype_size(g->tensors[n->out[0]].dtype), Y(0));
}

/* The call of EXEC_SPLIT (run_split). */
void oqc_em_split(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    int64_t sizes[256];
    for (int k = 0; k < n->nout; k++)
        sizes[k] = g->tensors[n->out[k]].shape.d[x->axis];
    fprintf(oqc_em_decl(m), "static const int64_t sz%d[%d] = ", node, n->nout);
    oqc_em_i64s(oqc_em_decl(m), sizes, n->nout);
    fputs(";\n", oqc_em_decl(m));
    fputs("    {\n        void *const y[] = {", b);
    for (int k = 0; k < n->nout; k++)
        fprintf(b, "%s%s", k ? ", " : "", Y(k));
    fprintf(b, "};\n        TRY(oqcf_split(%s, &s%d[0], %d, sz%d, %d, %zu, y));\n    }\n", X(0),
            node, x->axis, node, n->nout, oqcf_dtype_size(in0->dtype));
}

/* The call of EXEC_SLICE (run_slice). */
void oqc_em_slice(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const OqcfSlice p%d = {\n    .start = ", node);
    oqc_em_i64s(oqc_em_decl(m), x->slice.start, OQCF_MAX_RANK);
    fputs(",\n    .step = ", oqc_em_decl(m));
    oqc_em_i64s(oqc_em_decl(m), x->slice.step, OQCF_MAX_RANK);
    fputs(",\n    .out = ", oqc_em_decl(m));
    oqc_em_shape(oqc_em_decl(m), &x->slice.out);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_slice(%s, &s%d[0], &p%d, %zu, %s));\n", X(0), node, node,
            oqcf_dtype_size(in0->dtype), Y(0));
}

/* The call of EXEC_TRANSPOSE (run_transpose). */
void oqc_em_transpose(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const int perm%d[%d] = {", node, OQC_MAX_RANK);
    for (int i = 0; i < OQC_MAX_RANK; i++)
        fprintf(oqc_em_decl(m), "%s%d", i ? ", " : "", x->perm[i]);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_transpose(%s, &s%d[0], perm%d, %zu, %s));\n", X(0), node, node,
            oqcf_dtype_size(in0->dtype), Y(0));
}

/* The call of EXEC_PAD (run_pad). */
void oqc_em_pad(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    fprintf(oqc_em_decl(m), "static const int64_t pads%d[%d] = ", node, 2 * OQC_MAX_RANK);
    oqc_em_i64s(oqc_em_decl(m), x->pads, 2 * OQC_MAX_RANK);
    fputs(";\n", oqc_em_decl(m));
    const char *value = "NULL";
    if (n->opset >= 11 && n->nin > 2 && n->in[2] >= 0) {
        value = X(2);
    } else if (n->opset < 11) {
        fprintf(oqc_em_decl(m), "static const float v%d = ", node);
        oqc_em_f(oqc_em_decl(m), x->f0);
        fputs("; /* value */\n", oqc_em_decl(m));
        value = oqc_arena_printf(m->a, "&v%d", node);
    }
    static const char *const modes[] = {[OQCF_PAD_CONSTANT] = "OQCF_PAD_CONSTANT",
                                        [OQCF_PAD_REFLECT] = "OQCF_PAD_REFLECT",
                                        [OQCF_PAD_EDGE] = "OQCF_PAD_EDGE"};
    fprintf(b, "    TRY(oqcf_pad(%s, &s%d[0], pads%d, %s, %s, %zu, %s));\n", X(0), node, node,
            modes[x->pad_mode], value, oqcf_dtype_size(in0->dtype), Y(0));
}

/* The call of EXEC_GATHER (run_gather). */
void oqc_em_gather(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    oqc_em_in_shapes(m, node, 1);
    const OqcTensor *ix = &g->tensors[n->in[1]];
    fprintf(b, "    TRY(oqcf_gather(%s, &s%d[0], %d, %s, %s, %" PRId64 ", %zu, %s));\n", X(0),
            node, x->axis, X(1), oqc_em_dtype_enum(ix->dtype), oqc_shape_numel(&ix->shape),
            oqcf_dtype_size(in0->dtype), Y(0));
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

/* The call of EXEC_SPACE_DEPTH (run_space_depth). */
void oqc_em_space_depth(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcTensor *in0 = &m->g->tensors[n->in[0]];
    oqc_em_use_kernel(m, "oqcf_layout.c");
    fprintf(oqc_em_decl(m), "static const OqcfShape v%d = ", node);
    oqc_em_shape(oqc_em_decl(m), &x->view);
    fprintf(oqc_em_decl(m), "; /* the 6-D view of the input */\nstatic const int perm%d[%d] = {",
            node, OQC_MAX_RANK);
    for (int i = 0; i < OQC_MAX_RANK; i++)
        fprintf(oqc_em_decl(m), "%s%d", i ? ", " : "", x->perm[i]);
    fputs("};\n", oqc_em_decl(m));
    fprintf(b, "    TRY(oqcf_transpose(%s, &v%d, perm%d, %zu, %s));\n", X(0), node, node,
            oqcf_dtype_size(in0->dtype), Y(0));
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
