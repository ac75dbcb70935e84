/* quantize_params.c - pass "quantize", step 3: the pieces of INT8 kernel parameters
 * (runtime/int8/oqci.h) every kind uses: requantization multipliers (float32, or int32
 * and shift in fixed mode), output clamps, int32 biases, a tensor's channel view.  Each
 * kind's own parameters are in its family's file (quantize_conv.c, quantize_pool.c,
 * quantize_eltwise.c, quantize_lut.c); quantize.c is the pass. */
#include "quantize_int.h"

#include <math.h>

/* round(x) half away from zero, as a double (weights and biases at compile time). */
static double round_ha(double x) {
    return x < 0 ? -floor(-x + 0.5) : floor(x + 0.5);
}

int oqc_quant_requant(Q *q, const double *M, int n, int per_index, OqciRequant *rq,
                      char *why) {
    OqcArena *a = q->g->arena;
    *rq = (OqciRequant){.mode = q->cfg->requant, .per_index = per_index};
    if (rq->mode == OQCI_REQ_FLOAT) {
        float *m = oqc_arena_alloc(a, (size_t)n * sizeof *m);
        for (int i = 0; i < n; i++) {
            if (!(M[i] >= 0) || M[i] >= 1e30)
                return FAIL("requantization multiplier %g out of range", M[i]);
            m[i] = (float)M[i];
        }
        rq->mult = m;
        return 0;
    }
    int32_t *m = oqc_arena_alloc(a, (size_t)n * sizeof *m);
    int8_t *s = oqc_arena_alloc(a, (size_t)n * sizeof *s);
    for (int i = 0; i < n; i++)
        if (oqci_fixed_multiplier(M[i], &m[i], &s[i]) != OQCI_OK)
            return FAIL("requantization multiplier %g has no fixed-point form", M[i]);
    rq->m = m;
    rq->shift = s;
    return 0;
}

void oqc_quant_clamp_of(const OqcfAct *act, int32_t t, float s, int32_t *lo, int32_t *hi) {
    *lo = t == OQCI_U8 ? 0 : -127;
    *hi = t == OQCI_U8 ? 255 : 127;
    if (!act || act->kind == OQCF_ACT_NONE)
        return;
    if (act->kind == OQCF_ACT_RELU) {
        if (*lo < 0)
            *lo = 0;
        return;
    }
    if (act->kind == OQCF_ACT_CLIP) {   /* round is monotone: clamp commutes with it */
        int32_t a = oqci_round_clamp(act->p0 / s, *lo, *hi);
        int32_t b = oqci_round_clamp(act->p1 / s, *lo, *hi);
        *lo = a;
        *hi = b < a ? a : b;
    }
}

void oqc_quant_view_of(const Q *q, int t, int32_t *ctotal, int32_t *coff) {
    const OqcTensor *x = TT(q, t);
    if (x->view_base >= 0) {
        *ctotal = (int32_t)TT(q, x->view_base)->shape.d[1];
        *coff = (int32_t)x->view_coff;
    } else {
        *ctotal = (int32_t)(x->shape.rank >= 2 ? x->shape.d[1] : 1);
        *coff = 0;
    }
}

int oqc_quant_bias(double b, double sacc, int64_t k, int32_t *bias, char *why) {
    double r = round_ha(b / sacc);
    if (!(fabs(r) < 2147483647.0))
        return FAIL("bias of channel %lld does not fit int32 at scale %g", (long long)k, sacc);
    *bias = (int32_t)r;
    return 0;
}
