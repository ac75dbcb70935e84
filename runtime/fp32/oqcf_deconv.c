/* oqcf_deconv.c - ONNX ConvTranspose on NC<spatial> FP32 tensors (see oqcf_nn.h).
 *
 * A direct scatter: every input element adds its products with the kernel taps of
 * each output channel of its group to the output positions they reach. Geometries are
 * normalised to three spatial axes (missing leading axes of extent 1, as oqcf_conv.c
 * does) so 1-D, 2-D and 3-D share the loops. The innermost loop runs over the output
 * channels' taps along the last axis; the sums are in the fixed order of the loops, so
 * every build gives the same bits. */
#include "oqcf_nn.h"

#include <string.h>

int oqcf_conv_transpose(const OqcfConvParams *p, const float *x, const float *w,
                        const float *bias, float *y) {
    int ns = p ? p->nspatial : 0, off = 3 - ns;
    if (ns < 1 || ns > OQCF_MAX_SPATIAL || p->group < 1 || p->channels % p->group ||
        p->out_channels % p->group || p->batch < 0 || p->act.kind != OQCF_ACT_NONE ||
        p->act_per_channel || p->x_coff || p->y_coff ||
        (p->x_ctotal && p->x_ctotal != p->channels) ||
        (p->y_ctotal && p->y_ctotal != p->out_channels))
        return OQCF_EINVAL;
    int64_t in[3], out[3], ker[3], str[3], dil[3], pad[3];
    for (int a = 0; a < 3; a++) {
        in[a] = out[a] = ker[a] = str[a] = dil[a] = 1;
        pad[a] = 0;
    }
    for (int i = 0; i < ns; i++) {
        in[off + i] = p->in_size[i];
        out[off + i] = p->out_size[i];
        ker[off + i] = p->kernel[i];
        str[off + i] = p->stride[i];
        dil[off + i] = p->dilation[i];
        pad[off + i] = p->pad_begin[i];
        if (in[off + i] < 0 || out[off + i] < 0 || ker[off + i] < 1 || str[off + i] < 1 ||
            dil[off + i] < 1)
            return OQCF_EINVAL;
    }
    int64_t C = p->channels, K = p->out_channels, G = p->group, Cg = C / G, Kg = K / G;
    int64_t isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
    int64_t taps = ker[0] * ker[1] * ker[2];
    if (p->batch * K * osz == 0)
        return OQCF_OK;
    if (!x || !w || !y)
        return OQCF_EINVAL;
    for (int64_t n = 0; n < p->batch; n++) {
        float *yn = y + n * K * osz;
        for (int64_t k = 0; k < K; k++) {
            float b = bias ? bias[k] : 0.0f;
            for (int64_t o = 0; o < osz; o++)
                yn[k * osz + o] = b;
        }
        for (int64_t g = 0; g < G; g++)
            for (int64_t c = g * Cg; c < (g + 1) * Cg; c++) {
                const float *xc = x + (n * C + c) * isz;
                for (int64_t kk = 0; kk < Kg; kk++) {
                    const float *wk = w + (c * Kg + kk) * taps;
                    float *yk = yn + (g * Kg + kk) * osz;
                    for (int64_t i0 = 0; i0 < in[0]; i0++)
                        for (int64_t i1 = 0; i1 < in[1]; i1++)
                            for (int64_t i2 = 0; i2 < in[2]; i2++) {
                                float xv = xc[(i0 * in[1] + i1) * in[2] + i2];
                                for (int64_t t0 = 0; t0 < ker[0]; t0++) {
                                    int64_t o0 = i0 * str[0] - pad[0] + t0 * dil[0];
                                    if (o0 < 0 || o0 >= out[0])
                                        continue;
                                    for (int64_t t1 = 0; t1 < ker[1]; t1++) {
                                        int64_t o1 = i1 * str[1] - pad[1] + t1 * dil[1];
                                        if (o1 < 0 || o1 >= out[1])
                                            continue;
                                        const float *wt = wk + (t0 * ker[1] + t1) * ker[2];
                                        float *yr = yk + (o0 * out[1] + o1) * out[2];
                                        int64_t base = i2 * str[2] - pad[2];
                                        for (int64_t t2 = 0; t2 < ker[2]; t2++) {
                                            int64_t o2 = base + t2 * dil[2];
                                            if (o2 >= 0 && o2 < out[2])
                                                yr[o2] += xv * wt[t2];
                                        }
                                    }
                                }
                            }
                }
            }
    }
    return OQCF_OK;
}
