/* oqci_deconv.c - 2-D ConvTranspose of 8-bit codes (see oqci.h), portable C99.
 *
 * Per image: the int32 accumulators of all output channels (the scratch) start at the
 * biases; every input code adds its products with the taps of its group's output
 * channels to the positions they reach (a scatter, as runtime/fp32/oqcf_deconv.c does in
 * float); then each accumulator is requantized with its channel's multiplier. Integer
 * sums are exact in any order, so the result does not depend on the loop order. */
#include "oqci.h"

size_t oqci_deconv_scratch(const OqciDeconv *p) {
    if (!p || p->out_c < 0 || p->out_h < 0 || p->out_w < 0)
        return 0;
    return (size_t)p->out_c * (size_t)p->out_h * (size_t)p->out_w * sizeof(int32_t);
}

int oqci_deconv(const OqciDeconv *p, const void *x, void *y, void *scratch) {
    int64_t n, c, k, ih, iw, th, tw, o, osz, isz;
    int32_t kg, cg;
    int32_t *acc = scratch;
    if (!p || p->batch < 0 || p->in_c < 0 || p->in_h < 0 || p->in_w < 0 || p->out_c < 0 ||
        p->out_h < 0 || p->out_w < 0 || p->k_h < 1 || p->k_w < 1 || p->s_h < 1 ||
        p->s_w < 1 || p->d_h < 1 || p->d_w < 1 || p->group < 1 || p->in_c % p->group ||
        p->out_c % p->group || (p->in_type != OQCI_S8 && p->in_type != OQCI_U8) ||
        !oqci_range_ok(p->out_type, p->lo, p->hi) ||
        !oqci_requant_ok(&p->rq, 0, p->rq.per_index ? p->out_c - 1 : 0))
        return OQCI_EINVAL;
    osz = (int64_t)p->out_h * p->out_w;
    isz = (int64_t)p->in_h * p->in_w;
    if ((int64_t)p->batch * p->out_c * osz == 0)
        return OQCI_OK;
    if (!x || !y || !p->w || !acc)
        return OQCI_EINVAL;
    kg = p->out_c / p->group;
    cg = p->in_c / p->group;
    for (n = 0; n < p->batch; n++) {
        for (k = 0; k < p->out_c; k++)
            for (o = 0; o < osz; o++)
                acc[k * osz + o] = p->bias ? p->bias[k] : 0;
        for (c = 0; c < p->in_c; c++) {
            int64_t g = c / cg;
            for (ih = 0; ih < p->in_h; ih++)
                for (iw = 0; iw < p->in_w; iw++) {
                    int32_t xv = oqci_load_q(x, p->in_type, (n * p->in_c + c) * isz +
                                                                ih * p->in_w + iw);
                    if (xv == 0)
                        continue;   /* adds nothing */
                    for (k = 0; k < kg; k++) {
                        const int8_t *wk = p->w + (c * kg + k) * p->k_h * p->k_w;
                        int32_t *ak = acc + (g * kg + k) * osz;
                        for (th = 0; th < p->k_h; th++) {
                            int64_t oh = ih * p->s_h - p->p_t + th * p->d_h;
                            if (oh < 0 || oh >= p->out_h)
                                continue;
                            for (tw = 0; tw < p->k_w; tw++) {
                                int64_t ow = iw * p->s_w - p->p_l + tw * p->d_w;
                                if (ow >= 0 && ow < p->out_w)
                                    ak[oh * p->out_w + ow] += xv * wk[th * p->k_w + tw];
                            }
                        }
                    }
                }
        }
        for (k = 0; k < p->out_c; k++)
            for (o = 0; o < osz; o++)
                oqci_store_q(y, p->out_type, (n * p->out_c + k) * osz + o,
                             oqci_requant(acc[k * osz + o], &p->rq, k, p->lo, p->hi));
    }
    return OQCI_OK;
}
