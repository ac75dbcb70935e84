/* oqci_concat.c - Concat of 8-bit codes at different scales (see oqci.h), portable C99.
 *
 * Each input's rows are copied into their place in the output rows: with memcpy when
 * the input is at the output's scale and type, else requantized code by code.  A
 * requantized code depends on the input byte only, so an input of at least 256 codes
 * first fills a 256-entry table of its bytes' results with oqci_requant (on the
 * stack; no allocation) and then looks each byte up: the same bits as requantizing
 * every code, one lookup per code instead of a multiplication and a rounding. */
#include <string.h>

#include "oqci.h"

/* Inputs with at least this many codes are requantized through a table. */
#define CONCAT_TABLE_MIN 256

/* The result of requantizing code v of part t into the output of p, as a code. */
static int32_t requant_code(const OqciConcat *p, const OqciConcatPart *t, int32_t v) {
    return oqci_requant(v, &t->rq, 0, p->lo, p->hi);
}

static int part_ok(const OqciConcat *p, const OqciConcatPart *t, const void *x) {
    if (t->size < 0 || (t->in_type != OQCI_S8 && t->in_type != OQCI_U8))
        return 0;
    if (t->size > 0 && p->outer > 0 && !x)
        return 0;
    if (t->requant == 0)
        return t->in_type == p->out_type;
    return t->requant == 1 && oqci_requant_ok(&t->rq, 0, 0);
}

int oqci_concat(const OqciConcat *p, const void *const *x, void *y) {
    int64_t row = 0, off = 0, o, j;
    int32_t i;
    uint8_t *yb = y;
    if (!p || !x || !y || p->outer < 0 || p->ninputs < 1 || !p->part ||
        (p->out_type != OQCI_S8 && p->out_type != OQCI_U8) ||
        !oqci_range_ok(p->out_type, p->lo, p->hi))
        return OQCI_EINVAL;
    for (i = 0; i < p->ninputs; i++) {
        if (!part_ok(p, &p->part[i], x[i]))
            return OQCI_EINVAL;
        row += p->part[i].size;
    }
    for (i = 0; i < p->ninputs; off += p->part[i].size, i++) {
        const OqciConcatPart *t = &p->part[i];
        const uint8_t *xb = x[i];
        int64_t n = t->size;
        if (n == 0 || p->outer == 0)
            continue;
        if (!t->requant) {
            for (o = 0; o < p->outer; o++)
                memcpy(yb + o * row + off, xb + o * n, (size_t)n);
        } else if (n * p->outer >= CONCAT_TABLE_MIN) {
            uint8_t table[256];
            int32_t b;
            for (b = 0; b < 256; b++)   /* byte b is code b (u8) or (int8_t)b (s8) */
                oqci_store_q(table, p->out_type, b,
                             requant_code(p, t, t->in_type == OQCI_S8 && b > 127 ? b - 256 : b));
            for (o = 0; o < p->outer; o++) {
                const uint8_t *xr = xb + o * n;
                uint8_t *yr = yb + o * row + off;
                for (j = 0; j < n; j++)
                    yr[j] = table[xr[j]];
            }
        } else {
            for (o = 0; o < p->outer; o++)
                for (j = 0; j < n; j++)
                    oqci_store_q(yb, p->out_type, o * row + off + j,
                                 requant_code(p, t, oqci_load_q(xb, t->in_type, o * n + j)));
        }
    }
    return OQCI_OK;
}
