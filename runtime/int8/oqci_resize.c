/* oqci_resize.c - linear Resize of 8-bit codes (see oqci.h), portable C99.
 *
 * The input is viewed as [outer, L0, mid, L1, inner] around the two resampled axes
 * (one axis: L1 is a virtual axis of extent 1 with the weights {2^BITS, 0}, which
 * scales the sum by 2^BITS and leaves the result as with one axis). Each output element
 * is the four-corner sum in int32 (|sum| <= 255 * 2^22 < 2^30), divided by 2^22 with
 * rounding half away from zero: the same integers on every machine. */
#include "oqci.h"

/* The view of one axis pair: [outer, L0, mid, L1, inner]. */
typedef struct View {
    int64_t outer, l0, mid, l1, inner;
} View;

static int axis_ok(const OqciResizeAxis *a, int64_t in_len) {
    int64_t j;
    if (a->out_len < 0 || (a->out_len > 0 && (!a->idx || !a->w)))
        return 0;
    for (j = 0; j < 2 * a->out_len; j += 2)
        if (a->idx[j] < 0 || a->idx[j] >= in_len || a->idx[j + 1] < 0 ||
            a->idx[j + 1] >= in_len || a->w[j] < 0 || a->w[j + 1] < 0 ||
            a->w[j] + a->w[j + 1] != (1 << OQCI_RESIZE_BITS))
            return 0;
    return 1;
}

int oqci_resize(const OqciResize *p, const void *x, void *y) {
    static const int32_t one_idx[2] = {0, 0};
    static const int16_t one_w[2] = {1 << OQCI_RESIZE_BITS, 0};
    const int32_t half = (int32_t)1 << (2 * OQCI_RESIZE_BITS - 1);
    OqciResizeAxis a0, a1;
    View v;
    int64_t o, j0, m, j1, i, out0, out1, n = 1;
    int k;
    if (!p || p->rank < 1 || p->rank > OQCI_RESIZE_MAX_RANK || p->naxes < 1 || p->naxes > 2 ||
        (p->type != OQCI_S8 && p->type != OQCI_U8))
        return OQCI_EINVAL;
    a0 = p->ax[0];
    if (p->naxes == 2) {
        a1 = p->ax[1];
    } else {
        a1.axis = p->rank;   /* virtual, after every real axis */
        a1.out_len = 1;
        a1.idx = one_idx;
        a1.w = one_w;
    }
    if (a0.axis < 0 || a0.axis >= a1.axis || (p->naxes == 2 && a1.axis >= p->rank))
        return OQCI_EINVAL;
    v.outer = v.mid = v.inner = 1;
    for (k = 0; k < p->rank; k++) {
        if (p->in[k] < 0)
            return OQCI_EINVAL;
        if (k < a0.axis)
            v.outer *= p->in[k];
        else if (k > a0.axis && k < a1.axis)
            v.mid *= p->in[k];
        else if (k > a1.axis)
            v.inner *= p->in[k];
    }
    v.l0 = p->in[a0.axis];
    v.l1 = p->naxes == 2 ? p->in[a1.axis] : 1;
    if (!axis_ok(&a0, v.l0) || !axis_ok(&a1, v.l1))
        return OQCI_EINVAL;
    out0 = a0.out_len;
    out1 = a1.out_len;
    n = v.outer * out0 * v.mid * out1 * v.inner;
    if (n == 0)
        return OQCI_OK;
    if (!x || !y)
        return OQCI_EINVAL;
    for (o = 0; o < v.outer; o++)
        for (j0 = 0; j0 < out0; j0++) {
            int64_t r0 = o * v.l0 + a0.idx[2 * j0], r1 = o * v.l0 + a0.idx[2 * j0 + 1];
            int32_t w00 = a0.w[2 * j0], w01 = a0.w[2 * j0 + 1];
            for (m = 0; m < v.mid; m++)
                for (j1 = 0; j1 < out1; j1++) {
                    int64_t c0 = a1.idx[2 * j1], c1 = a1.idx[2 * j1 + 1];
                    int32_t w10 = a1.w[2 * j1], w11 = a1.w[2 * j1 + 1];
                    int64_t p00 = ((r0 * v.mid + m) * v.l1 + c0) * v.inner;
                    int64_t p01 = ((r0 * v.mid + m) * v.l1 + c1) * v.inner;
                    int64_t p10 = ((r1 * v.mid + m) * v.l1 + c0) * v.inner;
                    int64_t p11 = ((r1 * v.mid + m) * v.l1 + c1) * v.inner;
                    int64_t q = (((o * out0 + j0) * v.mid + m) * out1 + j1) * v.inner;
                    for (i = 0; i < v.inner; i++) {
                        int32_t s = w00 * (w10 * oqci_load_q(x, p->type, p00 + i) +
                                           w11 * oqci_load_q(x, p->type, p01 + i)) +
                                    w01 * (w10 * oqci_load_q(x, p->type, p10 + i) +
                                           w11 * oqci_load_q(x, p->type, p11 + i));
                        int32_t r = s >= 0 ? (s + half) >> (2 * OQCI_RESIZE_BITS)
                                           : -((-s + half) >> (2 * OQCI_RESIZE_BITS));
                        oqci_store_q(y, p->type, q + i, r);
                    }
                }
        }
    return OQCI_OK;
}
