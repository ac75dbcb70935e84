/* emit_q.c - `oqc compile`: one INT8 node (OqcNode.q, built by pass "quantize") as C.
 *
 * One function per OqcQKind (ir.h), in the enum's order, each the mirror of the run
 * function of the same kind in exec/exec_q.c: it prints the node's parameter struct
 * (designated initialisers) into NAME.c's declarations, its arrays (weights, biases,
 * multipliers, tables) into NAME_weights.c, and one oqci_* kernel call into the body.
 * The same structs and calls give `oqc eval`'s bits. */
#include <inttypes.h>
#include <string.h>

#include "emit_int.h"

/* An INT8 constant array NAME_q<node><suffix> of n elements of C type ctype (int8_t,
 * uint8_t, int16_t, int32_t or float) in NAME_weights.c; returns its name. */
static const char *q_array(Em *m, const char *suffix, const char *ctype, const void *v,
                           int64_t n, size_t esize) {
    const char *name = oqc_arena_printf(m->a, "%s_q%d%s", m->name, m->node, suffix);
    fprintf(m->qh, "extern const %s %s[%" PRId64 "];\n", ctype, name, n);
    fprintf(m->qc, "\nconst %s %s[%" PRId64 "] = {", ctype, name, n);
    int per = esize == 1 ? 24 : esize == 2 ? 16 : esize == 4 && !strcmp(ctype, "float") ? 6 : 10;
    for (int64_t i = 0; i < n; i++) {
        fputs(i % per ? ", " : i ? ",\n    " : "\n    ", m->qc);
        char b[48];
        if (!strcmp(ctype, "int8_t"))
            fprintf(m->qc, "%d", ((const int8_t *)v)[i]);
        else if (!strcmp(ctype, "uint8_t"))
            fprintf(m->qc, "%u", (unsigned)((const uint8_t *)v)[i]);
        else if (!strcmp(ctype, "int16_t"))
            fprintf(m->qc, "%d", ((const int16_t *)v)[i]);
        else if (!strcmp(ctype, "int32_t"))
            fprintf(m->qc, ((const int32_t *)v)[i] == INT32_MIN ? "(-2147483647 - 1)" : "%" PRId32,
                    ((const int32_t *)v)[i]);
        else
            fputs(oqc_em_flit(b, sizeof b, ((const float *)v)[i]), m->qc);
    }
    fputs("};\n", m->qc);
    m->qbytes += (size_t)n * esize;
    return name;
}

/* The initializer of a requantization the kernel does not read (an int32 output, a max
 * pooling at its input's scale). */
#define Q_RQ_UNUSED "{.mode = OQCI_REQ_FLOAT, .per_index = 0, .mult = NULL}"

/* The initializer of requantization r with n entries (arrays in NAME_weights.c): the
 * fields its mode reads. */
static const char *q_requant(Em *m, const char *suffix, const OqciRequant *r, int64_t n) {
    if (!r->per_index)
        n = 1;
    if (r->mode == OQCI_REQ_FLOAT)
        return oqc_arena_printf(
            m->a, "{.mode = OQCI_REQ_FLOAT, .per_index = %d, .mult = %s}", (int)r->per_index,
            q_array(m, oqc_arena_printf(m->a, "%s_mult", suffix), "float", r->mult, n, 4));
    const char *mm = q_array(m, oqc_arena_printf(m->a, "%s_m", suffix), "int32_t", r->m, n, 4);
    const char *sh =
        q_array(m, oqc_arena_printf(m->a, "%s_shift", suffix), "int8_t", r->shift, n, 1);
    return oqc_arena_printf(m->a, "{.mode = OQCI_REQ_FIXED, .per_index = %d, .m = %s, "
                                  ".shift = %s}", (int)r->per_index, mm, sh);
}

const char *oqc_em_qtype_name(int32_t t) {
    return t == OQCI_U8 ? "OQCI_U8" : t == OQCI_S32 ? "OQCI_S32" : "OQCI_S8";
}

/* An int32 bound as a C expression (INT32_MIN has no literal). */
static const char *i32_lit(Em *m, int32_t v) {
    return v == INT32_MIN ? "(-2147483647 - 1)" : oqc_arena_printf(m->a, "%" PRId32, v);
}

/* Input k's and output k's data of node n (pointer expressions). */
static const char *xin(Em *m, const OqcNode *n, int k) { return oqc_em_ptr(m, n->in[k]); }
static const char *yout(Em *m, const OqcNode *n, int k) { return oqc_em_ptr(m, n->out[k]); }

/* The scratch argument of the INT8 kernels that take one. */
static const char *q_scratch(const Em *m) { return m->e->scratch_bytes ? "SCRATCH" : "NULL"; }

int oqc_em_q_boundary(const Em *m, int node) {
    const OqcGraph *g = m->g;
    const OqcNode *n = &g->nodes[node];
    if (!n->q || g->ninputs != 1 || g->noutputs != 1)
        return 0;
    if (n->q->kind == OQC_Q_QUANTIZE)
        return n->in[0] == g->inputs[0];
    if (n->q->kind == OQC_Q_DEQUANTIZE)
        return n->out[0] == g->outputs[0];
    return 0;
}

/* ------------------------------------------------------------ one function per kind */

/* The name suffix and the thread arguments of a kernel call that splits over threads
 * (oqci.h's _par forms of conv, pooling and sums): none for one thread. */
static const char *par_name(const Em *m) {
    return m->threads > 1 ? "_par" : "";
}

static const char *par_args(Em *m) {
    if (m->threads < 2)
        return "";
    return oqc_arena_printf(m->a, ", %s_THREADS, pool->run, pool->ctx", m->name);
}

/* OQC_Q_CONV: one OqciConv q<node>_<k> and oqci_conv (or oqci_conv_par) call per output
 * k; the outputs' weights and biases are consecutive ranges of one array each. */
static void em_conv(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    oqc_em_use_kernel(m, "oqci_conv.c");
    const OqciConv *p0 = &q->conv[0];
    int64_t wn = 0, bn = 0;
    for (int k = 0; k < q->nconv; k++) {
        wn += (int64_t)q->conv[k].out_c * q->conv[k].kpad;
        bn += q->conv[k].out_c;
    }
    const char *w = q_array(m, "_w", "int8_t", p0->w, wn, 1);
    const char *bias = p0->bias ? q_array(m, "_b", "int32_t", p0->bias, bn, 4) : NULL;
    for (int k = 0; k < q->nconv; k++) {
        const OqciConv *p = &q->conv[k];
        const char *rq = p->out_type == OQCI_S32
                             ? Q_RQ_UNUSED
                             : q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->rq, p->out_c);
        fprintf(oqc_em_decl(m),
                "static const OqciConv q%d_%d = {\n"
                "    .batch = %d, .in_c = %d, .in_h = %d, .in_w = %d,\n"
                "    .out_c = %d, .out_h = %d, .out_w = %d,\n"
                "    .k_h = %d, .k_w = %d, .s_h = %d, .s_w = %d, .d_h = %d, .d_w = %d, "
                ".p_t = %d, .p_l = %d,\n"
                "    .group = %d, .kdim = %d, .kpad = %d, .out_ctotal = %d, .out_coff = %d,\n"
                "    .in_type = %s, .out_type = %s, .lo = %s, .hi = %s, .wpair16 = %d,\n"
                "    .w = %s + %td, .bias = %s%s,\n    .rq = %s};\n",
                node, k, p->batch, p->in_c, p->in_h, p->in_w, p->out_c, p->out_h, p->out_w,
                p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->group,
                p->kdim, p->kpad, p->out_ctotal, p->out_coff, oqc_em_qtype_name(p->in_type),
                oqc_em_qtype_name(p->out_type), i32_lit(m, p->lo), i32_lit(m, p->hi),
                p->wpair16, w, p->w - p0->w, bias ? bias : "NULL",
                bias ? oqc_arena_printf(m->a, " + %td", p->bias - p0->bias) : "", rq);
        fprintf(b, "    TRY(oqci_conv%s(&q%d_%d, %s, %s, %s%s));\n", par_name(m), node, k,
                xin(m, n, 0), oqc_em_out_base(m, node, k), q_scratch(m), par_args(m));
    }
}

/* OQC_Q_DECONV: OqciDeconv q<node>, oqci_deconv. */
static void em_deconv(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqciDeconv *p = &n->q->deconv;
    oqc_em_use_kernel(m, "oqci_deconv.c");
    const char *w = q_array(m, "_w", "int8_t", p->w,
                            (int64_t)p->in_c * (p->out_c / p->group) * p->k_h * p->k_w, 1);
    const char *bias = p->bias ? q_array(m, "_b", "int32_t", p->bias, p->out_c, 4) : "NULL";
    const char *rq = q_requant(m, "", &p->rq, p->out_c);
    fprintf(oqc_em_decl(m),
            "static const OqciDeconv q%d = {\n"
            "    .batch = %d, .in_c = %d, .in_h = %d, .in_w = %d,\n"
            "    .out_c = %d, .out_h = %d, .out_w = %d,\n"
            "    .k_h = %d, .k_w = %d, .s_h = %d, .s_w = %d, .d_h = %d, .d_w = %d, "
            ".p_t = %d, .p_l = %d, .group = %d,\n"
            "    .in_type = %s, .out_type = %s, .lo = %s, .hi = %s,\n"
            "    .w = %s, .bias = %s,\n    .rq = %s};\n",
            node, p->batch, p->in_c, p->in_h, p->in_w, p->out_c, p->out_h, p->out_w, p->k_h,
            p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->group,
            oqc_em_qtype_name(p->in_type), oqc_em_qtype_name(p->out_type), i32_lit(m, p->lo),
            i32_lit(m, p->hi), w, bias, rq);
    fprintf(b, "    TRY(oqci_deconv(&q%d, %s, %s, %s));\n", node, xin(m, n, 0), yout(m, n, 0),
            q_scratch(m));
}

/* OQC_Q_MAXPOOL, OQC_Q_AVGPOOL: OqciPool q<node>, oqci_maxpool or oqci_avgpool (their _par
 * forms with threads). */
static void em_pool(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    const OqciPool *p = &q->pool;
    oqc_em_use_kernel(m, m->threads > 1 ? "oqci_par.c" : "oqci_pool.c");
    int64_t entries = p->rq.per_index ? (int64_t)p->k_h * p->k_w + 1 : 1;
    const char *rq = (q->kind == OQC_Q_MAXPOOL && !p->requant) || p->out_type == OQCI_S32
                         ? Q_RQ_UNUSED
                         : q_requant(m, "", &p->rq, entries);
    fprintf(oqc_em_decl(m),
            "static const OqciPool q%d = {\n"
            "    .batch = %d, .channels = %d, .in_h = %d, .in_w = %d, .out_h = %d, "
            ".out_w = %d,\n"
            "    .k_h = %d, .k_w = %d, .s_h = %d, .s_w = %d, .d_h = %d, .d_w = %d, "
            ".p_t = %d, .p_l = %d,\n"
            "    .count_include_pad = %d, .out_ctotal = %d, .out_coff = %d,\n"
            "    .in_type = %s, .out_type = %s, .lo = %s, .hi = %s, .requant = %d,\n"
            "    .rq = %s};\n",
            node, p->batch, p->channels, p->in_h, p->in_w, p->out_h, p->out_w, p->k_h, p->k_w,
            p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->count_include_pad,
            p->out_ctotal, p->out_coff, oqc_em_qtype_name(p->in_type),
            oqc_em_qtype_name(p->out_type), i32_lit(m, p->lo), i32_lit(m, p->hi), p->requant,
            rq);
    fprintf(b, "    TRY(oqci_%s%s(&q%d, %s, %s%s));\n",
            q->kind == OQC_Q_MAXPOOL ? "maxpool" : "avgpool", par_name(m), node,
            xin(m, n, 0), oqc_em_out_base(m, node, 0), par_args(m));
}

/* OQC_Q_ADD: OqciAdd q<node>, oqci_add (oqci_add_par with threads) on an array of the
 * input pointers. */
static void em_add(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqciAdd *p = &n->q->add;
    oqc_em_use_kernel(m, m->threads > 1 ? "oqci_par.c" : "oqci_eltwise.c");
    FILE *f = oqc_em_decl(m);
    const char *rqs[OQCI_ADD_MAX];
    for (int k = 0; k < p->ninputs; k++)   /* input 0 of a conv's sums: per channel */
        rqs[k] = q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->rq[k],
                           k == 0 && p->in_type[0] == OQCI_S32 ? p->acc_channels : 1);
    fprintf(f, "static const OqciAdd q%d = {.ninputs = %d, .count = %" PRId64 ", .in_type = {",
            node, p->ninputs, p->count);
    for (int k = 0; k < p->ninputs; k++)
        fprintf(f, "%s%s", k ? ", " : "", oqc_em_qtype_name(p->in_type[k]));
    fprintf(f, "},\n    .out_type = %s, .lo = %d, .hi = %d, .rq = {",
            oqc_em_qtype_name(p->out_type), p->lo, p->hi);
    for (int k = 0; k < p->ninputs; k++)
        fprintf(f, "%s\n    %s", k ? "," : "", rqs[k]);
    fputs("}", f);
    if (p->in_type[0] == OQCI_S32) {   /* (the arrays in a fixed order: one per call) */
        const char *alo =
            p->acc_lo ? q_array(m, "_acc_lo", "int32_t", p->acc_lo, p->acc_channels, 4) : "NULL";
        const char *ahi =
            p->acc_hi ? q_array(m, "_acc_hi", "int32_t", p->acc_hi, p->acc_channels, 4) : "NULL";
        fprintf(f, ",\n    .acc_channels = %d, .acc_inner = %" PRId64 ", .acc_lo = %s, "
                   ".acc_hi = %s", p->acc_channels, p->acc_inner, alo, ahi);
    }
    fputs("};\n", f);
    fprintf(b, "    {\n        const void *x_[%d];\n", p->ninputs);
    for (int k = 0; k < p->ninputs; k++)
        fprintf(b, "        x_[%d] = %s;\n", k, xin(m, n, k));
    fprintf(b, "        TRY(oqci_add%s(&q%d, x_, %s%s));\n    }\n", par_name(m), node,
            yout(m, n, 0), par_args(m));
}

/* OQC_Q_MUL: OqciMul q<node>, oqci_mul (oqci_mul_par with threads). */
static void em_mul(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqciMul *p = &n->q->mul;
    oqc_em_use_kernel(m, m->threads > 1 ? "oqci_par.c" : "oqci_mul.c");
    const char *rq = q_requant(m, "", &p->rq, 1);
    fprintf(oqc_em_decl(m), "static const OqciMul q%d = {.outer = %" PRId64 ", .inner = %" PRId64
                            ", .a_type = %s, .b_type = %s,\n    .out_type = %s, .lo = %d, "
                            ".hi = %d, .rq = %s};\n", node, p->outer, p->inner,
            oqc_em_qtype_name(p->a_type), oqc_em_qtype_name(p->b_type),
            oqc_em_qtype_name(p->out_type), p->lo, p->hi, rq);
    fprintf(b, "    TRY(oqci_mul%s(&q%d, %s, %s, %s%s));\n", par_name(m), node, xin(m, n, 0),
            xin(m, n, 1), yout(m, n, 0), par_args(m));
}

/* OQC_Q_LAYERNORM: OqciLayerNorm q<node> (gamma and beta arrays), oqci_layernorm. */
static void em_layernorm(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqciLayerNorm *p = &n->q->ln;
    oqc_em_use_kernel(m, "oqci_eltwise.c");
    const char *gm = q_array(m, "_gamma", "int32_t", p->gamma, p->n, 4);
    const char *bt = q_array(m, "_beta", "int32_t", p->beta, p->n, 4);
    fprintf(oqc_em_decl(m), "static const OqciLayerNorm q%d = {.rows = %" PRId64 ", .n = %"
                            PRId64 ", .in_type = %s, .out_type = %s,\n    .lo = %d, .hi = %d, "
                            ".eps_q = %" PRId64 ", .gamma_shift = %d, .gamma = %s, .beta = %s};\n",
            node, p->rows, p->n, oqc_em_qtype_name(p->in_type), oqc_em_qtype_name(p->out_type),
            p->lo, p->hi, p->eps_q, p->gamma_shift, gm, bt);
    fprintf(b, "    TRY(oqci_layernorm(&q%d, %s, %s));\n", node, xin(m, n, 0), yout(m, n, 0));
}

/* OQC_Q_CLAMP: oqci_clamp. */
static void em_clamp(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    oqc_em_use_kernel(m, "oqci_eltwise.c");
    fprintf(b, "    TRY(oqci_clamp(%s, %s, %s, %s, %" PRId64 ", %d, %d));\n", xin(m, n, 0),
            oqc_em_qtype_name(q->in_type), yout(m, n, 0), oqc_em_qtype_name(q->out_type),
            q->count, q->lo, q->hi);
}

/* OQC_Q_LUT: oqci_lut (oqci_lut_par with threads) with its 256-byte table. */
static void em_lut(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    oqc_em_use_kernel(m, m->threads > 1 ? "oqci_par.c" : "oqci_mul.c");
    fprintf(b, "    TRY(oqci_lut%s(%s, %s, %" PRId64 ", %s%s));\n", par_name(m), xin(m, n, 0),
            yout(m, n, 0), q->count, q_array(m, "_lut", "uint8_t", q->table, 256, 1),
            par_args(m));
}

/* OQC_Q_RESIZE: nearest moves codes with the float kernel's tables (oqcf_resize on
 * bytes); linear is OqciResize q<node> and oqci_resize. */
static void em_resize(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    if (!q->resize.naxes) {
        oqc_em_use_kernel(m, "oqcf_resize.c");
        oqc_em_in_shapes(m, node, 1);
        oqc_em_resize_tables(m, node, q->rs);
        fprintf(b, "    TRY(oqcf_resize(%s, &s%d[0], rz%d, %d, 0.0f, 1, %s, %s));\n",
                xin(m, n, 0), node, node, q->rs->naxes, yout(m, n, 0), oqc_em_scratch_args(m));
        return;
    }
    oqc_em_use_kernel(m, "oqci_resize.c");
    const OqciResize *p = &q->resize;
    const char *ax[2] = {NULL, NULL};
    for (int k = 0; k < p->naxes; k++) {
        const OqciResizeAxis *a = &p->ax[k];
        const char *ix = q_array(m, oqc_arena_printf(m->a, "_i%d", k), "int32_t", a->idx,
                                 2 * a->out_len, 4);
        const char *wn = q_array(m, oqc_arena_printf(m->a, "_w%d", k), "int16_t", a->w,
                                 2 * a->out_len, 2);
        ax[k] = oqc_arena_printf(m->a, "{.axis = %d, .out_len = %" PRId64 ", .idx = %s, "
                                       ".w = %s}", a->axis, a->out_len, ix, wn);
    }
    FILE *f = oqc_em_decl(m);
    fprintf(f, "static const OqciResize q%d = {.type = %s, .rank = %d, .in = ", node,
            oqc_em_qtype_name(p->type), p->rank);
    oqc_em_i64s(f, p->in, OQCI_RESIZE_MAX_RANK);
    fprintf(f, ", .naxes = %d,\n    .ax = {%s%s%s}};\n", p->naxes, ax[0],
            ax[1] ? ",\n           " : "", ax[1] ? ax[1] : "");
    fprintf(b, "    TRY(oqci_resize(&q%d, %s, %s));\n", node, xin(m, n, 0), yout(m, n, 0));
}

/* OQC_Q_TRANSPOSE: the float op's call on one-byte elements (oqcf_transpose; DepthToSpace
 * and SpaceToDepth: that of their 6-D view). */
static void em_transpose(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    if (n->q->view.rank)
        oqc_em_space_depth_call(m, node, &n->q->view, n->q->perm, 1, xin(m, n, 0), yout(m, n, 0), b);
    else
        oqc_em_transpose_call(m, node, n->q->perm, 1, xin(m, n, 0), yout(m, n, 0), b);
}

/* OQC_Q_CONCAT: OqciConcatPart q<node>_parts[], OqciConcat q<node>, oqci_concat on an
 * array of the input pointers. */
static void em_concat(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqciConcat *p = &n->q->concat;
    oqc_em_use_kernel(m, "oqci_concat.c");
    FILE *f = oqc_em_decl(m);
    const char **rqs = oqc_arena_alloc(m->a, (size_t)p->ninputs * sizeof *rqs);
    for (int k = 0; k < p->ninputs; k++)   /* (the arrays first: one per requantized input) */
        rqs[k] = p->part[k].requant
                     ? q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->part[k].rq, 1)
                     : Q_RQ_UNUSED;
    fprintf(f, "static const OqciConcatPart q%d_parts[%d] = {", node, p->ninputs);
    for (int k = 0; k < p->ninputs; k++)
        fprintf(f, "%s\n    {.size = %" PRId64 ", .in_type = %s, .requant = %d,\n     .rq = %s}",
                k ? "," : "", p->part[k].size, oqc_em_qtype_name(p->part[k].in_type),
                p->part[k].requant, rqs[k]);
    fprintf(f, "};\nstatic const OqciConcat q%d = {.outer = %" PRId64 ", .ninputs = %d, "
               ".out_type = %s, .lo = %d, .hi = %d,\n    .part = q%d_parts};\n",
            node, p->outer, p->ninputs, oqc_em_qtype_name(p->out_type), p->lo, p->hi, node);
    fprintf(b, "    {\n        const void *x_[%d];\n", p->ninputs);
    for (int k = 0; k < p->ninputs; k++)
        fprintf(b, "        x_[%d] = %s;\n", k, xin(m, n, k));
    fprintf(b, "        TRY(oqci_concat(&q%d, x_, %s));\n    }\n", node, yout(m, n, 0));
}

/* OQC_Q_QUANTIZE: oqci_quantize (oqci_quantize_par with threads). */
static void em_quantize(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    char sb[48];
    oqc_em_use_kernel(m, m->threads > 1 ? "oqci_par.c" : "oqci_eltwise.c");
    fprintf(b, "    TRY(oqci_quantize%s(%s, %s, %s, %" PRId64 ", %s%s));\n", par_name(m),
            xin(m, n, 0), yout(m, n, 0), oqc_em_qtype_name(q->out_type), q->count,
            oqc_em_flit(sb, sizeof sb, q->scale), par_args(m));
}

/* OQC_Q_DEQUANTIZE: oqci_dequantize, or oqci_dequantize_s32 of an accumulator tensor
 * (whose requantization q<node>_rq the integer API's output uses, see emit_c.c). */
static void em_dequantize(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    const OqcAcc *a = q->acc;
    char sb[48];
    oqc_em_use_kernel(m, "oqci_eltwise.c");
    if (!a) {
        fprintf(b, "    TRY(oqci_dequantize(%s, %s, %s, %" PRId64 ", %s));\n", xin(m, n, 0),
                oqc_em_qtype_name(q->in_type), yout(m, n, 0), q->count,
                oqc_em_flit(sb, sizeof sb, q->scale));
        return;
    }
    const char *sc = q_array(m, "_s", "float", a->scale, a->per_channel ? a->channels : 1, 4);
    fprintf(b, "    TRY(oqci_dequantize_s32(%s, %s, %" PRId64 ", %d, %" PRId64 ", %s, %d));\n",
            xin(m, n, 0), yout(m, n, 0), a->outer, a->channels, a->inner, sc, a->per_channel);
    if (a->act.kind == OQCF_ACT_CLIP) {   /* the layer's Clip, on the float values */
        char lo[48], hi[48];
        oqc_em_use_kernel(m, "oqcf_eltwise.c");
        fprintf(b, "    TRY(oqcf_clip(%s, %s, %" PRId64 ", %s, %s));\n", yout(m, n, 0),
                yout(m, n, 0), a->outer * a->channels * a->inner,
                oqc_em_flit(lo, sizeof lo, a->act.p0), oqc_em_flit(hi, sizeof hi, a->act.p1));
    }
    if (m->pre && oqc_em_q_boundary(m, node))
        fprintf(oqc_em_decl(m), "static const OqciRequant q%d_rq = %s;\n", node,
                q_requant(m, "_rq", &a->rq, a->channels));
}

/* Emission per kind; NULL: nothing runs (a view of its input). */
static void (*const emit_kind[OQC_Q_KIND_COUNT])(Em *m, int node, FILE *b) = {
    [OQC_Q_CONV] = em_conv,
    [OQC_Q_DECONV] = em_deconv,
    [OQC_Q_MAXPOOL] = em_pool,
    [OQC_Q_AVGPOOL] = em_pool,
    [OQC_Q_ADD] = em_add,
    [OQC_Q_MUL] = em_mul,
    [OQC_Q_CLAMP] = em_clamp,
    [OQC_Q_LUT] = em_lut,
    [OQC_Q_VIEW] = NULL,
    [OQC_Q_RESIZE] = em_resize,
    [OQC_Q_TRANSPOSE] = em_transpose,
    [OQC_Q_CONCAT] = em_concat,
    [OQC_Q_MOVE] = NULL,   /* prepared as the FP32 op: written by its family (emit_node.c) */
    [OQC_Q_QUANTIZE] = em_quantize,
    [OQC_Q_DEQUANTIZE] = em_dequantize,
    [OQC_Q_LAYERNORM] = em_layernorm,
};

void oqc_em_q(Em *m, int node, FILE *b) {
    OqcQKind kind = m->g->nodes[node].q->kind;
    OQC_ASSERT((unsigned)kind < OQC_Q_KIND_COUNT);
    if (emit_kind[kind])
        emit_kind[kind](m, node, b);
}
