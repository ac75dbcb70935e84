/* quantize_int.h - internal to pass "quantize", which is two files sharing the pass's
 * state (Q) and a few one-line accessors (static inline), prefix oqc_quant_:
 *   - quantize.c: the pass (pass_quantize): which nodes run in INT8 (steps 1 and 2),
 *     their scales and the walk over the graph (step 3), accumulator outputs (3b),
 *     Quantize/Dequantize at the boundaries (step 4); and oqc_quant_apply;
 *   - quantize_params.c: step 3's kernel parameters of one INT8 node (weights, biases,
 *     requantization multipliers, clamps). */
#ifndef OQC_QUANTIZE_INT_H
#define OQC_QUANTIZE_INT_H

#include <math.h>
#include <stdio.h>

#include "passes.h"

/* The reason a node stays float, into why (OQC_WHY_SIZE bytes); as 0 or -1. */
#define WHY(...) (snprintf(why, OQC_WHY_SIZE, __VA_ARGS__), 0)
#define FAIL(...) (snprintf(why, OQC_WHY_SIZE, __VA_ARGS__), -1)

/* The pass's state. */
typedef struct Q {
    OqcGraph *g;            /* the graph */
    OqcDiag *d;             /* messages */
    const OqcQuantConfig *cfg;
    unsigned char *int8;    /* per node: runs in INT8 */
    unsigned char *qdom;    /* per tensor: holds s8/u8 (INT8 domain) */
    int nq[OQC_OP_COUNT];   /* INT8 nodes per op, for the statistics line */
} Q;

/* The kernels' storage type of a calibrated tensor: OQCI_U8 or OQCI_S8. */
static inline int32_t qtype(const OqcQuant *q) { return q->is_unsigned ? OQCI_U8 : OQCI_S8; }

/* The tensor holding t's storage: a concat buffer for a channel view, else t. */
static inline int base_of(const OqcGraph *g, int t) {
    return g->tensors[t].view_base >= 0 ? g->tensors[t].view_base : t;
}

/* Tensor t of the graph. */
static inline const OqcTensor *TT(const Q *q, int t) { return &q->g->tensors[t]; }

/* A float constant of at most `rank` dims; NULL otherwise. */
static inline const float *const_f32(const Q *q, int t) {
    if (t < 0)
        return NULL;
    const OqcTensor *x = TT(q, t);
    return x->is_const && x->data && x->dtype == OQCF_FLOAT ? x->data : NULL;
}

/* Calibrated quant of the storage of t (its concat buffer for a view). */
static inline const OqcQuant *cal(const Q *q, int t) {
    const OqcQuant *x = &TT(q, base_of(q->g, t))->quant;
    return x->valid && x->scale > 0 && isfinite(x->scale) ? x : NULL;
}

/* quantize_params.c: the output clamp [*lo, *hi] of a tensor of storage type t
 * (OQCI_U8 or OQCI_S8) at scale s holding activation act (NULL or none: t's range). */
void oqc_quant_clamp_of(const OqcfAct *act, int32_t t, float s, int32_t *lo, int32_t *hi);
/* quantize_params.c: Conv/Gemm/MatMul node i's kernel parameters into qn, one OqciConv
 * per output; 0, or -1 with the reason the node stays float in why. */
int oqc_quant_build_conv(Q *q, int i, OqcQNode *qn, char *why);
/* quantize_params.c: MaxPool/AveragePool/GlobalAveragePool node i's parameters into qn
 * (an OqciPool); 0, or -1 with the reason in why. */
int oqc_quant_build_pool(Q *q, int i, OqcQNode *qn, char *why);
/* quantize_params.c: Mul node i's parameters into qn (an OqciMul; the inputs are
 * swapped when input 0 is the broadcast one); 0, or -1 with the reason in why. */
int oqc_quant_build_mul(Q *q, int i, OqcQNode *qn, char *why);
/* quantize_params.c: Add/Sum node i's parameters into qn (an OqciAdd, with its fused
 * Relu/Clip as the clamp); 0, or -1 with the reason in why. */
int oqc_quant_build_add(Q *q, int i, OqcQNode *qn, char *why);
/* Resize / Upsample node i (input INT8) at its input's scale: nearest (any axes) as a
 * move of codes, linear over at most two axes as oqci_resize; else -1 and why. */
int oqc_quant_build_resize(Q *q, int i, OqcQNode *qn, char *why);
/* ConvTranspose node i (2-D, constant weights): per output channel weight scales, int32
 * biases, requantization; -1 and why when its sums could overflow int32. */
int oqc_quant_build_deconv(Q *q, int i, OqcQNode *qn, char *why);

/* quantize_lut.c: the cluster of float element-wise nodes ending at node `root` that
 * computes a function of one tensor (see quantize_lut.c): its nodes (root included, at
 * most OQC_LUT_MAX_NODES) into members, their count, the tensor it reads into *src; 0,
 * -1 with the reason in why, or -2 when root starts no table (not an element-wise op,
 * or Relu/Clip alone: a clamp). Nodes flagged in skip are not taken. */
#define OQC_LUT_MAX_NODES 32
int oqc_quant_lut_cluster(Q *q, int root, const unsigned char *skip, int *members, int *nmem,
                          int *src, char *why);
/* quantize_lut.c: the table of that cluster with the final scales of src and of root's
 * output (an OQC_Q_LUT into qn); 0, or -1 with the reason in why (a NaN entry). */
int oqc_quant_build_lut(Q *q, int root, const int *members, int nmem, int src, OqcQNode *qn,
                        char *why);

#endif
