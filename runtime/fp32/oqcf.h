/* oqcf.h - common definitions of oqc's FP32 reference kernel library (prefix oqcf_).
 *
 * The FP32 kernels are used by the compiler's executor (calibration, `oqc run`) and are
 * copied into emitted C for layers that stay in float, so this library depends on
 * nothing but the C standard library (and pthreads for the optional pool,
 * oqcf_threads.c; oqcf_serial.c replaces it and oqcf_pool.c where there are no
 * threads).  The kernel files are C99 (gcc and clang, -std=c99 -pedantic -Wall
 * -Wextra) and have no mutable global unless built with OQCF_TEST_HOOKS (see
 * oqcf_sgemm_force_isa).
 *
 * Rules every kernel follows:
 *   - it never allocates: scratch memory is passed in by the caller, sized by the
 *     kernel's *_scratch_size() function when it needs any;
 *   - it returns OQCF_OK or a negative OqcfStatus, never aborts or prints;
 *   - tensors are dense, row-major (C order), unless a parameter struct says otherwise
 *     (channel views: a tensor that is a slice of a larger buffer's channels).
 *
 * Families and their headers:
 *   oqcf_nn.h      conv, pooling, normalisation, gemm/matmul, sgemm, thread pool
 *   oqcf_tensor.h  element-wise, broadcasting, data movement, softmax, cast, (de)quantize
 */
#ifndef OQCF_H
#define OQCF_H

#include <stddef.h>
#include <stdint.h>

/* Status codes returned by every kernel. */
typedef enum OqcfStatus {
    OQCF_OK = 0,
    OQCF_EINVAL = -1,      /* inconsistent parameters (shapes, strides, attributes) */
    OQCF_EDTYPE = -2,      /* element type the kernel does not handle */
    OQCF_ESCRATCH = -3,    /* scratch buffer missing or too small */
    OQCF_EINTERNAL = -4,   /* a thread could not be started, etc. */
} OqcfStatus;

#define OQCF_MAX_RANK 8

/* A dense tensor shape; rank 0 is a scalar (one element). */
typedef struct OqcfShape {
    int rank;                   /* number of dimensions, 0..OQCF_MAX_RANK */
    int64_t d[OQCF_MAX_RANK];   /* extent of each dimension, all >= 0 */
} OqcfShape;

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum OqcfDType {
    OQCF_UNDEFINED = 0, OQCF_FLOAT = 1, OQCF_UINT8 = 2, OQCF_INT8 = 3, OQCF_UINT16 = 4,
    OQCF_INT16 = 5, OQCF_INT32 = 6, OQCF_INT64 = 7, OQCF_STRING = 8, OQCF_BOOL = 9,
    OQCF_FLOAT16 = 10, OQCF_DOUBLE = 11, OQCF_UINT32 = 12, OQCF_UINT64 = 13,
    OQCF_COMPLEX64 = 14, OQCF_COMPLEX128 = 15, OQCF_BFLOAT16 = 16,
} OqcfDType;

/* Number of elements of a shape (1 for a scalar). */
static inline int64_t oqcf_numel(const OqcfShape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->d[i];
    return n;
}

/* Size in bytes of one element of a numeric dtype, 0 for STRING/UNDEFINED. */
static inline size_t oqcf_dtype_size(OqcfDType t) {
    switch (t) {
    case OQCF_FLOAT: case OQCF_INT32: case OQCF_UINT32: return 4;
    case OQCF_UINT8: case OQCF_INT8: case OQCF_BOOL: return 1;
    case OQCF_UINT16: case OQCF_INT16: case OQCF_FLOAT16: case OQCF_BFLOAT16: return 2;
    case OQCF_INT64: case OQCF_DOUBLE: case OQCF_UINT64: case OQCF_COMPLEX64: return 8;
    case OQCF_COMPLEX128: return 16;
    default: return 0;
    }
}

#endif
