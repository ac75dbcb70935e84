/* int8_testutil.h - helpers shared by the INT8 kernel tests (test_int8_kernels.c: the
 * scalar primitives and conv; test_int8_pool.c: pooling and the element-wise kernels):
 * element access by storage type, random data and clamps, requantization storage, and
 * the kernel families this CPU runs.  Header-only (static inline), like nn_testutil.h. */
#ifndef OQC_INT8_TESTUTIL_H
#define OQC_INT8_TESTUTIL_H

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "nn_testutil.h"   /* (rnd_int) */
#include "oqci.h"

/* Element i of an s8/u8 buffer (stored as bytes). */
static inline int32_t qget(const uint8_t *b, int type, int64_t i) {
    return type == OQCI_U8 ? (int32_t)b[i] : (int32_t)(int8_t)b[i];
}

/* Bytes of one output element of type t (accumulator outputs: int32). */
static inline size_t osize(int t) {
    return t == OQCI_S32 ? 4 : 1;
}

/* Element i of an output buffer of type t (s8, u8 or OQCI_S32). */
static inline int32_t yget(const void *y, int t, int64_t i) {
    if (t == OQCI_S32) {
        int32_t v;
        memcpy(&v, (const uint8_t *)y + 4 * i, 4);
        return v;
    }
    return qget((const uint8_t *)y, t, i);
}

/* An element of type t all of whose bytes are b (what memset(y, b, ...) leaves). */
static inline int32_t fill_value(int t, uint8_t b) {
    uint8_t bytes[4] = {b, b, b, b};
    return yget(bytes, t, 0);
}

/* n random values of the type's range into a byte buffer. */
static inline uint8_t *rnd_q(int64_t n, int type) {
    uint8_t *b = malloc((size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        b[i] = type == OQCI_U8 ? (uint8_t)rnd_int(0, 255) : (uint8_t)(int8_t)rnd_int(-127, 127);
    return b;
}

/* Requantization storage: one multiplier per index, both modes filled from the same M. */
typedef struct Rq {
    float *mult;      /* float mode multipliers */
    int32_t *m;       /* fixed mode multipliers */
    int8_t *shift;    /* fixed mode shifts */
    OqciRequant rq;   /* the view passed to the kernels */
} Rq;

static inline Rq rq_make(int mode, int per_index, int64_t n, const double *M) {
    Rq r;
    size_t cnt = (size_t)(n > 0 ? n : 1);   /* (n >= 1 always; gcc cannot tell once inlined) */
    r.mult = malloc(sizeof(float) * cnt);
    r.m = malloc(sizeof(int32_t) * cnt);
    r.shift = malloc(cnt);
    for (int64_t i = 0; i < n; i++) {
        r.mult[i] = (float)M[i];
        CU_ASSERT_EQUAL_FATAL(oqci_fixed_multiplier(M[i], &r.m[i], &r.shift[i]), OQCI_OK);
    }
    r.rq.mode = mode;
    r.rq.per_index = per_index;
    r.rq.mult = mode == OQCI_REQ_FLOAT ? r.mult : NULL;
    r.rq.m = mode == OQCI_REQ_FIXED ? r.m : NULL;
    r.rq.shift = mode == OQCI_REQ_FIXED ? r.shift : NULL;
    return r;
}

static inline void rq_free(Rq *r) {
    free(r->mult);
    free(r->m);
    free(r->shift);
}

/* A random output clamp for type t: the full range, a fused ReLU or a fused ReLU6. */
static inline void rnd_clamp(int t, int32_t *lo, int32_t *hi) {
    int kind = (int)rnd_int(0, 2);
    *lo = t == OQCI_U8 ? 0 : kind ? 0 : -127;
    *hi = t == OQCI_U8 ? (kind == 2 ? (int32_t)rnd_int(40, 254) : 255)
                       : (kind == 2 ? (int32_t)rnd_int(20, 126) : 127);
}

/* A requantization that must not be read (accumulator outputs): null pointers, and by
 * kind a float (0), fixed (1) or invalid (2) mode. */
static inline OqciRequant unread_rq(int kind) {
    OqciRequant r;
    memset(&r, 0, sizeof r);
    r.mode = kind == 0 ? OQCI_REQ_FLOAT : kind == 1 ? OQCI_REQ_FIXED : 77;
    r.per_index = kind != 1;
    return r;
}

/* An accumulator clamp (OQCI_S32 outputs) by kind: 0 none (INT32_MIN, INT32_MAX), 1 a
 * fused ReLU (0, INT32_MAX), 2 a narrow [lo, hi] around 0 of at most 2 * span that clips
 * many sums (lo = hi one time in 8). */
static inline void s32_clamp(int kind, int32_t span, int32_t *lo, int32_t *hi) {
    *lo = kind == 0 ? INT32_MIN : kind == 1 ? 0 : -(int32_t)rnd_int(0, span);
    *hi = kind < 2         ? INT32_MAX
          : rnd_int(0, 7) ? *lo + (int32_t)rnd_int(0, 2 * (int64_t)span)
                          : *lo;
}

/* The kernel families this CPU runs, portable first, into isas; returns how many. */
static inline int int8_isas(int isas[OQCI_ISA_COUNT]) {
    int n = 0;
    for (int i = OQCI_ISA_PORTABLE; i < OQCI_ISA_COUNT; i++)
        if (oqci_isa_available(i))
            isas[n++] = i;
    return n;
}

/* A parallel-for (oqci.h's OqciParallelFor) running the tasks on the caller in reverse
 * order; counts its calls and the tasks they ran. */
static int64_t reverse_calls, reverse_tasks;
static inline void reverse_for(void *ctx, void (*task)(void *, int), void *arg, int n) {
    (void)ctx;
    reverse_calls++;
    reverse_tasks += n;
    for (int i = n - 1; i >= 0; i--)
        task(arg, i);
}

#endif /* OQC_INT8_TESTUTIL_H */
