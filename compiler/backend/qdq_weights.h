/* qdq_weights.h - internal to export_qdq.c: its weight and bias quantization
 * (qdq_weights.c). */
#ifndef OQC_QDQ_WEIGHTS_H
#define OQC_QDQ_WEIGHTS_H

#include "backend.h"

/* How a Conv/Gemm/MatMul holds its weights W. */
typedef struct WLayout {
    int64_t K, C, axis;   /* output channels, reduction depth, weight axis of K */
    int tb;               /* W element (k, c) at k * C + c (else c * K + k) */
    float alpha, beta;    /* Gemm's factors (1 for the other ops) */
} WLayout;

/* The layout of node n's weights of shape ws (and Gemm's alpha and beta). */
WLayout oqc_qdq_weight_layout(const OqcNode *n, const OqcShape *ws);
/* W (of node `node` of g) quantized per output channel to [-wmax, wmax] as oqc quantizes
 * it: wq in W's layout, the scales sw[K]; an error for a channel that is not finite. */
int oqc_qdq_quantize_weights(const OqcGraph *g, int node, int32_t wmax, const float *W,
                             const WLayout *l, int8_t *wq, float *sw, OqcDiag *d);
/* The bias bt as int32 at scale s_in * sw[k] (bq, its scales bs; Gemm's beta folded in),
 * or s_in_ch[k] * sw[k] when the input runs at one scale per channel (a depthwise conv's:
 * s_in_ch NULL otherwise); 1 when it is not one value per output channel, -1 with an
 * error when one does not fit int32. */
int oqc_qdq_quantize_bias(const OqcGraph *g, int node, const OqcTensor *bt, float s_in,
                          const float *s_in_ch, const float *sw, const WLayout *l, int32_t *bq,
                          float *bs, OqcDiag *d);

#endif
