/* oqcf_x86_int.h - private to the FP32 kernels' x86-64 paths (oqcf_sgemm.c and, through
 * oqcf_conv_int.h, oqcf_conv.c and oqcf_conv_dw.c): the AVX2 target attribute and the
 * activation of eight lanes, exactly oqcf_act_apply (one copy, so the SGEMM epilogue and
 * the depthwise kernels cannot disagree on it). */
#ifndef OQCF_X86_INT_H
#define OQCF_X86_INT_H

#include "oqcf_nn.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma")))

/* oqcf_act_apply on eight lanes. */
AVX2 static inline __m256 act8(__m256 v, const OqcfAct *a) {
    switch (a->kind) {
    case OQCF_ACT_RELU:   /* maxps returns its second operand for NaN: NaN stays NaN */
        return _mm256_max_ps(_mm256_setzero_ps(), v);
    case OQCF_ACT_CLIP:   /* NaN passes through, as in oqcf_act_apply */
        return _mm256_min_ps(_mm256_set1_ps(a->p1), _mm256_max_ps(_mm256_set1_ps(a->p0), v));
    case OQCF_ACT_LEAKY: {
        __m256 ge = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
        return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(a->p0)), v, ge);
    }
    default:
        return v;
    }
}
#endif

#endif /* OQCF_X86_INT_H */
