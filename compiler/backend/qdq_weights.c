/* qdq_weights.c - the integer weights and biases `oqc export-qdq` writes for an INT8
 * Conv/Gemm/MatMul, quantized exactly as pass quantize quantizes them
 * (oqc_quant_build_conv, passes/quantize_conv.c): per output channel, rounded half
 * away from zero, Gemm's alpha and beta folded in. */
#include "qdq_weights.h"

#include <math.h>
#include <stdlib.h>

/* round half away from zero, as passes/quantize_params.c */
static double round_ha(double v) { return v < 0 ? -floor(-v + 0.5) : floor(v + 0.5); }

/* The layout of node n's weights of shape ws (and Gemm's alpha and beta). */
WLayout oqc_qdq_weight_layout(const OqcNode *n, const OqcShape *ws) {
    WLayout l = {.tb = 1, .alpha = 1.0f, .beta = 1.0f};
    if (n->op == OQC_OP_Conv) {
        l.K = ws->d[0];
        l.C = oqc_shape_numel(ws) / (l.K ? l.K : 1);
        l.axis = 0;
    } else if (n->op == OQC_OP_Gemm) {
        l.tb = (int)oqc_attr_int(n, "transB", 0);
        l.K = l.tb ? ws->d[0] : ws->d[1];
        l.C = l.tb ? ws->d[1] : ws->d[0];
        l.axis = l.tb ? 0 : 1;
        l.alpha = oqc_attr_float(n, "alpha", 1.0f);
        l.beta = oqc_attr_float(n, "beta", 1.0f);
    } else { /* MatMul, B [C, K] */
        l.tb = 0;
        l.C = ws->d[0];
        l.K = ws->d[1];
        l.axis = 1;
    }
    return l;
}

/* W quantized per output channel as oqc quantizes it (oqc_quant_build_conv): wq in W's
 * layout, the scales sw[K]; an error for a channel that is not finite. */
int oqc_qdq_quantize_weights(const OqcGraph *g, int node, int32_t wmax, const float *W,
                             const WLayout *l, int8_t *wq, float *sw, OqcDiag *d) {
    const OqcNode *n = &g->nodes[node];
    int64_t K = l->K, C = l->C;
    int tb = l->tb;
    float *row = malloc((size_t)(C + 1) * sizeof *row);
    if (!row)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    int rc = 0;
    for (int64_t k = 0; k < K && rc == 0; k++) {
        /* the row as oqc quantizes it: alpha * W[k][c] in float (oqc_quant_build_conv) */
        for (int64_t c = 0; c < C; c++)
            row[c] = n->op == OQC_OP_Gemm ? l->alpha * (tb ? W[k * C + c] : W[c * K + k])
                                          : (tb ? W[k * C + c] : W[c * K + k]);
        float m = 0;
        for (int64_t c = 0; c < C; c++)
            m = fmaxf(m, fabsf(row[c]));
        if (!isfinite(m)) {
            rc = oqc_err_node(d, g, node, "weights of output channel %lld are not finite",
                              (long long)k);
            break;
        }
        sw[k] = m > 0 ? m / (float)wmax : OQC_ZERO_RANGE_SCALE;
        for (int64_t c = 0; c < C; c++)
            wq[tb ? k * C + c : c * K + k] = (int8_t)oqci_round_clamp(row[c] / sw[k], -wmax, wmax);
    }
    free(row);
    return rc;
}

/* The int32 bias at scale s_in * sw[k] (bq, its scales bs; Gemm's beta folded in); 1 when
 * it is not one value per output channel, -1 with an error when one does not fit int32. */
int oqc_qdq_quantize_bias(const OqcGraph *g, int node, const OqcTensor *bt, float s_in,
                          const float *s_in_ch, const float *sw, const WLayout *l, int32_t *bq,
                          float *bs, OqcDiag *d) {
    const OqcNode *n = &g->nodes[node];
    int64_t nb = oqc_shape_numel(&bt->shape);
    if (nb != 1 && nb != l->K) {
        oqc_info(d, "export-qdq: '%s' (%s) keeps float weights: its bias is not one "
                       "value per output channel", n->name, n->op_type);
        return 1;
    }
    const float *B = bt->data;
    for (int64_t k = 0; k < l->K; k++) {
        double sacc = (double)(s_in_ch ? s_in_ch[k] : s_in) * sw[k];
        double r = round_ha((double)B[nb == 1 ? 0 : k] * (n->op == OQC_OP_Gemm ? l->beta : 1.0f)
                            / sacc);
        if (!(fabs(r) < 2147483647.0))
            return oqc_err_node(d, g, node, "bias of channel %lld does not fit int32 at scale %g",
                                (long long)k, sacc);
        bq[k] = (int32_t)r;
        bs[k] = (float)sacc;
    }
    return 0;
}
