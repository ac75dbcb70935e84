/* emit_node.c - `oqc compile`: one node of the prepared executor as C (emit_c.c writes
 * the files around it; emit_int.h has what the two share).
 *
 * oqc_em_node prints a node's frame and its call: an INT8 node's here (emit_q), an
 * FP32 node's by its op family (compiler/ops/, oqc_em_fp32 dispatching on
 * ExecNode.kind, which the family's preparation set with the run function). Each
 * prints parameter constants into NAME.c's declarations and kernel calls into its
 * body: loops belong in runtime/, never in emitted code. Pointers are symbolic (Loc:
 * oqc_em_plan_locs repeats oqc_exec_run's computation), constants exact (C99 hex
 * floats). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* The printing helpers emit_q shares with the op families (ops/emit_util.c). */
#define decl oqc_em_decl
#define use_kernel oqc_em_use_kernel
#define out_base oqc_em_out_base
#define scratch_args oqc_em_scratch_args
#define put_i64s oqc_em_i64s
#define in_shapes oqc_em_in_shapes
#define resize_tables oqc_em_resize_tables

#define X(k) oqc_em_ptr(m, n->in[k])                 /* XIN */
#define Y(k) oqc_em_ptr(m, n->out[k])                /* YOUT */

/* ------------------------------------------------------------------ INT8 nodes */

/* An INT8 constant array NAME_q<node><suffix> in NAME_weights.c; returns its name. */
static const char *q_array(Em *m, const char *suffix, const char *ctype, const void *v,
                           int64_t n, size_t esize) {
    const char *name = oqc_arena_printf(m->a, "%s_q%d%s", m->name, m->node, suffix);
    fprintf(m->qh, "extern const %s %s[%" PRId64 "];\n", ctype, name, n);
    fprintf(m->qc, "\nconst %s %s[%" PRId64 "] = {", ctype, name, n);
    int per = esize == 1 ? 24 : esize == 4 && !strcmp(ctype, "float") ? 6 : 10;
    for (int64_t i = 0; i < n; i++) {
        fputs(i % per ? ", " : i ? ",\n    " : "\n    ", m->qc);
        char b[48];
        if (!strcmp(ctype, "int8_t"))
            fprintf(m->qc, "%d", ((const int8_t *)v)[i]);
        else if (!strcmp(ctype, "uint8_t"))
            fprintf(m->qc, "%u", (unsigned)((const uint8_t *)v)[i]);
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

/* The initializer of requantization r with n entries (arrays in NAME_weights.c). */
static const char *q_requant(Em *m, const char *suffix, const OqciRequant *r, int64_t n) {
    if (!r->per_index)
        n = 1;
    const char *mult = "NULL", *mm = "NULL", *sh = "NULL";
    if (r->mode == OQCI_REQ_FLOAT) {
        mult = q_array(m, oqc_arena_printf(m->a, "%s_mult", suffix), "float", r->mult, n, 4);
    } else {
        mm = q_array(m, oqc_arena_printf(m->a, "%s_m", suffix), "int32_t", r->m, n, 4);
        sh = q_array(m, oqc_arena_printf(m->a, "%s_shift", suffix), "int8_t", r->shift, n, 1);
    }
    return oqc_arena_printf(m->a, "{%s, %d, %s, %s, %s}",
                            r->mode == OQCI_REQ_FLOAT ? "OQCI_REQ_FLOAT" : "OQCI_REQ_FIXED",
                            (int)r->per_index, mult, mm, sh);
}

const char *oqc_em_qtype_name(int32_t t) {
    return t == OQCI_U8 ? "OQCI_U8" : t == OQCI_S32 ? "OQCI_S32" : "OQCI_S8";
}

/* An int32 bound as a C expression (INT32_MIN has no literal). */
static const char *i32_lit(Em *m, int32_t v) {
    return v == INT32_MIN ? "(-2147483647 - 1)" : oqc_arena_printf(m->a, "%" PRId32, v);
}

/* Whether node `node` is the INT8 model's float boundary: the Quantize of the graph
 * input or the Dequantize of the graph output (the integer-I/O API skips them). */
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

/* The parameter constants and kernel call of INT8 node `node` (mirrors run_q in
 * exec_q.c: the same structs, so the same bits). */
static void emit_q(Em *m, int node, FILE *b) {
    const OqcNode *n = &m->g->nodes[node];
    const OqcQNode *q = n->q;
    switch (q->kind) {
    case OQC_Q_CONV: {
        use_kernel(m, "oqci_conv.c");
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
            const char *rq = p->out_type == OQCI_S32   /* (not read) */
                                 ? "{OQCI_REQ_FLOAT, 0, NULL, NULL, NULL}"
                                 : q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->rq, p->out_c);
            fprintf(decl(m),
                    "static const OqciConv q%d_%d = {\n"
                    "    %d, %d, %d, %d, /* batch, in_c, in_h, in_w */\n"
                    "    %d, %d, %d, /* out_c, out_h, out_w */\n"
                    "    %d, %d, %d, %d, %d, %d, %d, %d, /* k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l */\n"
                    "    %d, %d, %d, %d, %d, /* group, kdim, kpad, out_ctotal, out_coff */\n"
                    "    %s, %s, %s, %s, %d, /* in_type, out_type, lo, hi, wpair16 */\n"
                    "    %s + %td, %s%s%s,\n    %s};\n",
                    node, k, p->batch, p->in_c, p->in_h, p->in_w, p->out_c, p->out_h, p->out_w,
                    p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->group,
                    p->kdim, p->kpad, p->out_ctotal, p->out_coff, oqc_em_qtype_name(p->in_type),
                    oqc_em_qtype_name(p->out_type), i32_lit(m, p->lo), i32_lit(m, p->hi),
                    p->wpair16,
                    w, p->w - p0->w,
                    bias ? bias : "NULL",
                    bias ? oqc_arena_printf(m->a, " + %td", p->bias - p0->bias) : "", "", rq);
            if (m->threads > 1)
                fprintf(b, "    TRY(oqci_conv_par(&q%d_%d, %s, %s, %s, %s_THREADS, pool->run, "
                           "pool->ctx));\n", node, k, X(0), out_base(m, node, k),
                        m->e->scratch_bytes ? "SCRATCH" : "NULL", m->name);
            else
                fprintf(b, "    TRY(oqci_conv(&q%d_%d, %s, %s, %s));\n", node, k, X(0),
                        out_base(m, node, k), m->e->scratch_bytes ? "SCRATCH" : "NULL");
        }
        break;
    }
    case OQC_Q_DECONV: {
        use_kernel(m, "oqci_deconv.c");
        const OqciDeconv *p = &q->deconv;
        const char *w = q_array(m, "_w", "int8_t", p->w,
                                (int64_t)p->in_c * (p->out_c / p->group) * p->k_h * p->k_w, 1);
        const char *bias = p->bias ? q_array(m, "_b", "int32_t", p->bias, p->out_c, 4) : "NULL";
        const char *rq = q_requant(m, "", &p->rq, p->out_c);
        fprintf(decl(m),
                "static const OqciDeconv q%d = {\n"
                "    %d, %d, %d, %d, %d, %d, %d, /* batch, in_c, in_h, in_w, out_c, out_h, out_w */\n"
                "    %d, %d, %d, %d, %d, %d, %d, %d, %d, /* k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l, group */\n"
                "    %s, %s, %s, %s, /* in_type, out_type, lo, hi */\n    %s, %s,\n    %s};\n",
                node, p->batch, p->in_c, p->in_h, p->in_w, p->out_c, p->out_h, p->out_w,
                p->k_h, p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->group,
                oqc_em_qtype_name(p->in_type), oqc_em_qtype_name(p->out_type),
                i32_lit(m, p->lo), i32_lit(m, p->hi), w, bias, rq);
        fprintf(b, "    TRY(oqci_deconv(&q%d, %s, %s, %s));\n", node, X(0), Y(0),
                m->e->scratch_bytes ? "SCRATCH" : "NULL");
        break;
    }
    case OQC_Q_MAXPOOL:
    case OQC_Q_AVGPOOL: {
        use_kernel(m, "oqci_pool.c");
        const OqciPool *p = &q->pool;
        int64_t entries = p->rq.per_index ? (int64_t)p->k_h * p->k_w + 1 : 1;
        const char *rq = (q->kind == OQC_Q_MAXPOOL && !p->requant) || p->out_type == OQCI_S32
                             ? "{OQCI_REQ_FLOAT, 0, NULL, NULL, NULL}"
                             : q_requant(m, "", &p->rq, entries);
        fprintf(decl(m),
                "static const OqciPool q%d = {\n"
                "    %d, %d, %d, %d, %d, %d, /* batch, channels, in_h, in_w, out_h, out_w */\n"
                "    %d, %d, %d, %d, %d, %d, %d, %d, /* k_h, k_w, s_h, s_w, d_h, d_w, p_t, p_l */\n"
                "    %d, %d, %d, /* count_include_pad, out_ctotal, out_coff */\n"
                "    %s, %s, %s, %s, %d, /* in_type, out_type, lo, hi, requant */\n    %s};\n",
                node, p->batch, p->channels, p->in_h, p->in_w, p->out_h, p->out_w, p->k_h,
                p->k_w, p->s_h, p->s_w, p->d_h, p->d_w, p->p_t, p->p_l, p->count_include_pad,
                p->out_ctotal, p->out_coff, oqc_em_qtype_name(p->in_type),
                oqc_em_qtype_name(p->out_type),
                i32_lit(m, p->lo), i32_lit(m, p->hi), p->requant, rq);
        fprintf(b, "    TRY(oqci_%s(&q%d, %s, %s));\n",
                q->kind == OQC_Q_MAXPOOL ? "maxpool" : "avgpool", node, X(0), out_base(m, node, 0));
        break;
    }
    case OQC_Q_ADD: {
        use_kernel(m, "oqci_eltwise.c");
        const OqciAdd *p = &q->add;
        FILE *f = decl(m);
        const char *rqs[OQCI_ADD_MAX];
        for (int k = 0; k < p->ninputs; k++)
            rqs[k] = q_requant(m, oqc_arena_printf(m->a, "_%d", k), &p->rq[k], 1);
        fprintf(f, "static const OqciAdd q%d = {%d, %" PRId64 ", {", node, p->ninputs, p->count);
        for (int k = 0; k < OQCI_ADD_MAX; k++)
            fprintf(f, "%s%s", k ? ", " : "",
                    k < p->ninputs ? oqc_em_qtype_name(p->in_type[k]) : "0");
        fprintf(f, "},\n    %s, %d, %d, {", oqc_em_qtype_name(p->out_type), p->lo, p->hi);
        for (int k = 0; k < p->ninputs; k++)
            fprintf(f, "%s\n    %s", k ? "," : "", rqs[k]);
        fputs("}};\n", f);
        fprintf(b, "    {\n        const void *x_[%d];\n", p->ninputs);
        for (int k = 0; k < p->ninputs; k++)
            fprintf(b, "        x_[%d] = %s;\n", k, X(k));
        fprintf(b, "        TRY(oqci_add(&q%d, x_, %s));\n    }\n", node, Y(0));
        break;
    }
    case OQC_Q_CLAMP:
        use_kernel(m, "oqci_eltwise.c");
        fprintf(b, "    TRY(oqci_clamp(%s, %s, %s, %s, %" PRId64 ", %d, %d));\n", X(0),
                oqc_em_qtype_name(q->in_type), Y(0), oqc_em_qtype_name(q->out_type), q->count,
                q->lo, q->hi);
        break;
    case OQC_Q_MUL: {
        use_kernel(m, "oqci_eltwise.c");
        const OqciMul *p = &q->mul;
        const char *rq = q_requant(m, "", &p->rq, 1);
        fprintf(decl(m), "static const OqciMul q%d = {%" PRId64 ", %" PRId64 ", %s, %s, %s, %d, "
                         "%d,\n    %s};\n", node, p->outer, p->inner, oqc_em_qtype_name(p->a_type),
                oqc_em_qtype_name(p->b_type), oqc_em_qtype_name(p->out_type), p->lo, p->hi, rq);
        fprintf(b, "    TRY(oqci_mul(&q%d, %s, %s, %s));\n", node, X(0), X(1), Y(0));
        break;
    }
    case OQC_Q_LUT:
        use_kernel(m, "oqci_eltwise.c");
        fprintf(b, "    TRY(oqci_lut(%s, %s, %" PRId64 ", %s));\n", X(0), Y(0), q->count,
                q_array(m, "_lut", "uint8_t", q->table, 256, 1));
        break;
    case OQC_Q_QUANTIZE: {
        use_kernel(m, "oqci_eltwise.c");
        char sb[48];
        fprintf(b, "    TRY(oqci_quantize(%s, %s, %s, %" PRId64 ", %s));\n", X(0), Y(0),
                oqc_em_qtype_name(q->out_type), q->count, oqc_em_flit(sb, sizeof sb, q->scale));
        break;
    }
    case OQC_Q_DEQUANTIZE: {
        use_kernel(m, "oqci_eltwise.c");
        char sb[48];
        const OqcAcc *a = q->acc;
        if (!a) {
            fprintf(b, "    TRY(oqci_dequantize(%s, %s, %s, %" PRId64 ", %s));\n", X(0),
                    oqc_em_qtype_name(q->in_type), Y(0), q->count,
                    oqc_em_flit(sb, sizeof sb, q->scale));
            break;
        }
        const char *sc = q_array(m, "_s", "float", a->scale, a->per_channel ? a->channels : 1, 4);
        fprintf(b, "    TRY(oqci_dequantize_s32(%s, %s, %" PRId64 ", %d, %" PRId64 ", %s, %d));\n",
                X(0), Y(0), a->outer, a->channels, a->inner, sc, a->per_channel);
        if (m->pre && oqc_em_q_boundary(m, node))   /* the integer API's output: see write_source */
            fprintf(decl(m), "static const OqciRequant q%d_rq = %s;\n", node,
                    q_requant(m, "_rq", &a->rq, a->channels));
        break;
    }
    case OQC_Q_RESIZE: {
        if (!q->resize.naxes) {   /* nearest: the float kernel's tables, on bytes */
            use_kernel(m, "oqcf_resize.c");
            in_shapes(m, node, 1);
            resize_tables(m, node, q->rs);
            fprintf(b, "    TRY(oqcf_resize(%s, &s%d[0], rz%d, %d, 0.0f, 1, %s, %s));\n", X(0),
                    node, node, q->rs->naxes, Y(0), scratch_args(m));
            break;
        }
        use_kernel(m, "oqci_resize.c");
        const OqciResize *p = &q->resize;
        const char *ax[2] = {"{0, 0, NULL, NULL}", "{0, 0, NULL, NULL}"};
        for (int k = 0; k < p->naxes; k++) {
            const OqciResizeAxis *a = &p->ax[k];
            const char *ix = q_array(m, oqc_arena_printf(m->a, "_i%d", k), "int32_t", a->idx,
                                     2 * a->out_len, 4);
            const char *wn = oqc_arena_printf(m->a, "%s_q%d_w%d", m->name, node, k);
            fprintf(m->qh, "extern const int16_t %s[%" PRId64 "];\n", wn, 2 * a->out_len);
            fprintf(m->qc, "\nconst int16_t %s[%" PRId64 "] = {", wn, 2 * a->out_len);
            for (int64_t i = 0; i < 2 * a->out_len; i++)
                fprintf(m->qc, "%s%d", i % 16 ? ", " : i ? ",\n    " : "\n    ", a->w[i]);
            fputs("};\n", m->qc);
            m->qbytes += (size_t)(2 * a->out_len) * 2;
            ax[k] = oqc_arena_printf(m->a, "{%d, %" PRId64 ", %s, %s}", a->axis, a->out_len, ix,
                                     wn);
        }
        fprintf(decl(m), "static const OqciResize q%d = {%s, %d, ", node,
                oqc_em_qtype_name(p->type), p->rank);
        put_i64s(decl(m), p->in, OQCI_RESIZE_MAX_RANK);
        fprintf(decl(m), ", %d,\n    {%s,\n     %s}}; /* type, rank, in, naxes, ax */\n",
                p->naxes, ax[0], ax[1]);
        fprintf(b, "    TRY(oqci_resize(&q%d, %s, %s));\n", node, X(0), Y(0));
        break;
    }
    case OQC_Q_VIEW:
        break;
    }
}

/* Prints node `node`'s parameter constants and kernel call, each mirroring the run
 * function the executor calls (exec_q.c's run_q, or the op family's run_*). */
void oqc_em_node(Em *m, int node) {
    const OqcNode *n = &m->g->nodes[node];
    const ExecNode *x = &m->e->nodes[node];
    const OqcGraph *g = m->g;
    FILE *b = m->body;
    if (x->kind == EXEC_NONE || x->kind == EXEC_DROPOUT)
        return; /* views: the pointer plan already points the output at the input */
    if (x->kind == EXEC_Q && m->pre && oqc_em_q_boundary(m, node))
        b = n->q->kind == OQC_Q_QUANTIZE ? m->pre : m->post;
    m->node = node;
    m->headed = 0;
    fprintf(b, "    /* %d: %s '", node, n->op_type);
    oqc_em_comment(b, n->name);
    fputs("' */\n", b);
    fprintf(b, "    OQC_LAYER_BEGIN(%d);\n", node);
    if (x->kind == EXEC_Q)
        emit_q(m, node, b);
    else
        oqc_em_fp32(m, node, b);
    fprintf(b, "    OQC_LAYER_END(%d, ", node);
    oqc_em_string_lit(b, n->name);
    fputs(", ", b);
    oqc_em_string_lit(b, n->op_type);
    fprintf(b, ", %" PRId64 ");\n", oqc_node_macs(g, node));
}

#undef X
#undef Y

/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
void oqc_em_plan_locs(Em *m) {
    const OqcGraph *g = m->g;
    const OqcExec *e = m->e;
    for (int i = 0; i < g->ninputs; i++)
        m->loc[g->inputs[i]] = (Loc){LOC_INPUT, i, 0};
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        int r = e->root[t];
        if (tt->is_const)
            m->loc[t] = (Loc){LOC_CONST, t, 0};
        else if (e->offset[r] != SIZE_MAX)
            m->loc[t] = (Loc){LOC_ARENA, 0, e->offset[r]};
    }
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        if (e->root[t] != t && e->offset[e->root[t]] == SIZE_MAX)
            m->loc[t] = m->loc[e->root[t]];
        if (tt->view_base >= 0) {
            m->loc[t] = m->loc[e->root[t]];
            m->loc[t].off += (size_t)(tt->view_coff * oqc_shape_numel(&tt->shape) /
                                      tt->shape.d[1] / tt->shape.d[0]) * esize_of(tt);
        }
    }
}
