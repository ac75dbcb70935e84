/* quantize_int.h - internal to pass "quantize", whose files share the pass's state (Q), a
 * few one-line accessors (static inline) and one set of hooks per INT8 kernel kind
 * (prefix oqc_quant_):
 *   - quantize.c: the pass (pass_quantize): which nodes run in INT8 (steps 1 and 2),
 *     their scales and the walk over the graph (step 3), accumulator outputs (3b),
 *     Quantize/Dequantize at the boundaries (step 4), through the table of kinds below;
 *     and oqc_quant_apply;
 *   - one file per family of kinds, each kind's "can it run in INT8" test (step 1), its
 *     kernel parameters (step 3) and its int32 output (step 3b): quantize_conv.c (CONV,
 *     DECONV), quantize_pool.c (MAXPOOL, AVGPOOL), quantize_eltwise.c (ADD, MUL,
 *     LAYERNORM, CLAMP, RESIZE, TRANSPOSE, VIEW, CONCAT, MOVE), quantize_lut.c (LUT);
 *   - quantize_params.c: the parameter pieces every kind uses (requantization, clamps,
 *     biases, channel views). */
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
    unsigned char *chan;    /* per tensor of the graph before step 4: may run at one
                               scale per channel (its producer decides, quantize_conv.c) */
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

/* The elements of tensor t when it is a float constant; NULL otherwise. */
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

/* One INT8 kernel kind's hooks (quantize.c's table, one row per OqcQKind). */
typedef struct QKind {
    /* Step 1: the op-local conditions for node i (its op lowers to this kind, its input
     * is f32 and its outputs are calibrated) to run in INT8: 1, or 0 with the reason in
     * why.  NULL: the kind follows its input (INT8 when the input is, at its scale). */
    int (*can)(const Q *q, int i, char *why);
    /* Step 3: node i's kernel parameters into qn (its kind set), the scales of the
     * outputs that keep their input's; 0, or -1 with the reason node i stays float. */
    int (*build)(Q *q, int i, OqcQNode *qn, char *why);
    /* Step 3b (NULL: never): when node i's output leaves the INT8 domain, its int32
     * accumulator's float scale and 8-bit requantization into *acc and its parameters
     * switched to an int32 output; 1, or 0 when it keeps its 8-bit output. */
    int (*widen)(Q *q, int i, OqcAcc *acc);
} QKind;

/* quantize_conv.c: CONV (Conv, Gemm, MatMul: one OqciConv per output) and DECONV
 * (ConvTranspose). */
int oqc_quant_can_conv(const Q *q, int i, char *why);
int oqc_quant_build_conv(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_widen_conv(Q *q, int i, OqcAcc *acc);
/* Conv node i (one parameter set) writes its int32 sums: *acc receives their scale per
 * channel (s_in * s_w[k]) and the s8/u8 requantization the layer had, and its
 * parameters switch to an int32 output (a Relu kept as lo = 0, a Clip left to the
 * reader).  Step 3b's widen and step 3c's residual Adds. */
void oqc_quant_conv_sums(Q *q, int i, OqcAcc *acc);
int oqc_quant_can_deconv(const Q *q, int i, char *why);
int oqc_quant_build_deconv(Q *q, int i, OqcQNode *qn, char *why);

/* quantize_pool.c: MAXPOOL (MaxPool) and AVGPOOL (AveragePool, GlobalAveragePool). */
int oqc_quant_can_maxpool(const Q *q, int i, char *why);
int oqc_quant_build_maxpool(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_can_avgpool(const Q *q, int i, char *why);
int oqc_quant_build_avgpool(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_widen_avgpool(Q *q, int i, OqcAcc *acc);

/* quantize_eltwise.c: ADD (Add, Sum), MUL (Mul of two activations), and the kinds that
 * follow their input: CLAMP (Relu, Clip), RESIZE (Resize, Upsample), VIEW (Flatten,
 * Reshape, Squeeze, Unsqueeze, Identity). */
int oqc_quant_can_add(const Q *q, int i, char *why);
int oqc_quant_build_add(Q *q, int i, OqcQNode *qn, char *why);
/* Step 3c: INT8 Add i of two inputs, one of them written by an INT8 Conv (one output,
 * no concat buffer, no activation or a Relu/Clip) that nothing else reads: the conv
 * writes its int32 sums and the Add reads them as input 0 (OqciAdd's acc_* fields), so
 * the sum is rounded once, at the Add's output.  1 when fused, else 0. */
int oqc_quant_fuse_residual(Q *q, int i);
int oqc_quant_can_mul(const Q *q, int i, char *why);
int oqc_quant_build_mul(Q *q, int i, OqcQNode *qn, char *why);
/* LAYERNORM (LayerNormalization, its Mean/InvStdDev outputs unread): integers only. */
int oqc_quant_can_layernorm(const Q *q, int i, char *why);
int oqc_quant_build_layernorm(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_build_clamp(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_build_resize(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_build_view(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_build_transpose(Q *q, int i, OqcQNode *qn, char *why);
/* CONCAT (Concat of activations along any axis: oqci_concat, each input copied or
 * requantized to the output's calibrated scale) and MOVE (Slice, Split: the FP32 op's
 * kernel on the codes, every output at the input's scale). */
int oqc_quant_can_concat(const Q *q, int i, char *why);
int oqc_quant_build_concat(Q *q, int i, OqcQNode *qn, char *why);
int oqc_quant_build_move(Q *q, int i, OqcQNode *qn, char *why);

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

/* quantize_params.c: rq with the n multipliers M[i] in the configured mode (per_index:
 * one per index, else M[0] for all); 0, or -1 with why when one is out of the mode's
 * range. */
int oqc_quant_requant(Q *q, const double *M, int n, int per_index, OqciRequant *rq,
                      char *why);
/* quantize_params.c: the output clamp [*lo, *hi] of a tensor of storage type t
 * (OQCI_U8 or OQCI_S8) at scale s holding activation act (NULL or none: t's range). */
void oqc_quant_clamp_of(const OqcfAct *act, int32_t t, float s, int32_t *lo, int32_t *hi);
/* quantize_params.c: the int32 bias of channel k, float bias b at accumulator scale
 * sacc, rounded half away from zero; 0, or -1 with why when it does not fit. */
int oqc_quant_bias(double b, double sacc, int64_t k, int32_t *bias, char *why);
/* quantize_params.c: the channel view tensor t is written as: channels per image of
 * its buffer (a concat buffer, or t) and its first channel there. */
void oqc_quant_view_of(const Q *q, int t, int32_t *ctotal, int32_t *coff);

#endif
