/* oqcf_tensor.h - element-wise, broadcasting, data-movement, softmax, cast and
 * (de)quantize kernels of oqc's FP32 reference library (prefix oqcf_).
 *
 * Three source files implement this header; each stands alone (C11 + libm) because
 * the runtime is copied verbatim into emitted C:
 *   oqcf_eltwise.c  unary float ops, Clip on any numeric type, broadcasting binary
 *                   Add/Sub/Mul/Div, Sum of N inputs, Softmax;
 *   oqcf_layout.c   copy, Concat, Split, Slice (+ ONNX index resolution), Transpose,
 *                   Pad, Gather, Tile/Expand - moved by element size, so any dtype works;
 *   oqcf_cast.c     Cast between numeric dtypes, float16/bfloat16 scalar conversions,
 *                   QuantizeLinear, DequantizeLinear;
 *   oqcf_reduce.c   ReduceSum, ReduceMean, ReduceMax, ReduceMin over any set of axes,
 *                   ArgMax, ArgMin;
 *   oqcf_resize.c   Resize / Upsample as separable per-axis resampling.
 *
 * Conventions (beyond oqcf.h's: no allocation, status return, dense row-major):
 *   - a `void *` buffer holds elements of the dtype or element size the call names and
 *     is aligned for that type;
 *   - n == 0 / empty tensors are fine: the kernel returns OQCF_OK and touches nothing;
 *   - an `axis` argument may be negative (counted from the end, as in ONNX);
 *   - "in place" means y == x exactly; partial overlap is never allowed;
 *   - Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout (inference) need no
 *     kernel: they are views or oqcf_copy.
 *
 * Integer semantics chosen where C would be undefined (documented once, here):
 *   - Add/Sub/Mul wrap modulo 2^bits (two's complement), like numpy;
 *   - Div truncates toward zero; x / 0 == 0 for every integer type (numpy's result);
 *     MIN / -1 == MIN (the wrapped negation);
 *   - float -> integer (Cast) truncates toward zero, saturates to the target's range
 *     (+-inf too) and maps NaN to 0; integer -> narrower integer wraps modulo 2^bits.
 */
#ifndef OQCF_TENSOR_H
#define OQCF_TENSOR_H

#include "oqcf.h"

/* ---- unary float ops (oqcf_eltwise.c); y may equal x; NaN propagates ---- */

OqcfStatus oqcf_relu(const float *x, float *y, int64_t n);            /* max(x, 0) */
OqcfStatus oqcf_clip(const float *x, float *y, int64_t n, float lo, float hi);
                                              /* min(max(x, lo), hi): hi when lo > hi */
OqcfStatus oqcf_leaky_relu(const float *x, float *y, int64_t n, float alpha);
                                                      /* x >= 0 ? x : alpha * x */
OqcfStatus oqcf_sigmoid(const float *x, float *y, int64_t n);   /* 1 / (1 + e^-x) */
OqcfStatus oqcf_hard_sigmoid(const float *x, float *y, int64_t n, float alpha,
                             float beta);        /* max(0, min(1, alpha * x + beta)) */
OqcfStatus oqcf_tanh(const float *x, float *y, int64_t n);
float oqcf_erff(float x);    /* erf, the same bits on every host (not libm's erff) */
float oqcf_tanhf(float x);   /* tanh, likewise (not libm's tanhf) */
float oqcf_expm1f(float x);  /* e^x - 1, likewise (not libm's expm1f) */
float oqcf_log1pf(float x);  /* log(1 + x), likewise (not libm's log1pf) */

/* The other unary float ops, by name: y = op(x), alpha and beta their attributes.
 * OQCF_UNARY_OPS(X) is their list, one X(NAME, value) each: NAME gives the enum value
 * OQCF_UN_NAME, value is y for an element v (oqcf_eltwise.c's switch, with its clip1;
 * every value keeps NaN). Emitted code names the enum values: new ones go at the end. */
#define OQCF_UNARY_OPS(X)                                                                 \
    X(ABS, fabsf(v))                                                                      \
    X(NEG, -v)                                                                            \
    X(EXP, expf(v))                                                                       \
    X(LOG, logf(v))                                                                       \
    X(SQRT, sqrtf(v))                                                                     \
    X(ERF, oqcf_erff(v))                                                                  \
    X(RECIPROCAL, 1.0f / v)                                                               \
    X(FLOOR, floorf(v))                                                                   \
    X(CEIL, ceilf(v))                                                                     \
    /* -1, 0 or 1; 0, -0 and NaN kept */                                                  \
    X(SIGN, v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v)                                       \
    X(SOFTSIGN, v / (1.0f + fabsf(v)))                                                    \
    /* log(1 + e^v) = max(v, 0) + log1p(e^-|v|): no overflow for large |v| */             \
    X(SOFTPLUS, (v > 0.0f ? v : 0.0f) + oqcf_log1pf(expf(-fabsf(v))))                     \
    X(ELU, v < 0.0f ? alpha * oqcf_expm1f(v) : v)                                         \
    X(CELU, v < 0.0f ? alpha * oqcf_expm1f(v / alpha) : v)                                \
    /* beta is Selu's gamma */                                                            \
    X(SELU, v <= 0.0f ? beta * (alpha * oqcf_expm1f(v)) : beta * v)                       \
    X(THRESHOLDED_RELU, v > alpha ? v : v != v ? v : 0.0f)                                \
    /* x * max(0, min(1, x / 6 + 1 / 2)) */                                               \
    X(HARD_SWISH, v * clip1(v * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f))                        \
    X(SIN, sinf(v))                                                                       \
    /* beta 0: x * Phi(x) = x / 2 * (1 + erf(x / sqrt 2)); 1: the tanh approximation */   \
    X(GELU, beta == 0.0f ? 0.5f * v * (1.0f + oqcf_erff(v * 0.70710678118654752f))        \
                         : 0.5f * v * (1.0f + oqcf_tanhf(0.79788456080286536f *           \
                                                         (v + 0.044715f * v * v * v))))

typedef enum OqcfUnaryOp {
#define OQCF_UNARY_ENUM_(name, value) OQCF_UN_##name,
    OQCF_UNARY_OPS(OQCF_UNARY_ENUM_)
#undef OQCF_UNARY_ENUM_
    OQCF_UN_COUNT   /* the number of ops (not an op) */
} OqcfUnaryOp;
OqcfStatus oqcf_unary(OqcfUnaryOp op, const float *x, float *y, int64_t n, float alpha,
                      float beta);

/* Clip on float, double and every integer dtype (ONNX Clip-11+ on int tensors).
 * lo/hi point to one element of type t, NULL for "no bound". y may equal x.
 * OQCF_EDTYPE for float16, bfloat16, bool and non-numeric types. */
OqcfStatus oqcf_clip_typed(OqcfDType t, const void *x, void *y, int64_t n,
                           const void *lo, const void *hi);

/* ---- broadcasting binary ops (oqcf_eltwise.c) ---- */

typedef enum OqcfBinaryOp {
    OQCF_ADD, OQCF_SUB, OQCF_MUL, OQCF_DIV,
    OQCF_POW,     /* a^b (powf / pow); float and double only */
    OQCF_PRELU,   /* a < 0 ? a * b : a (b: the slope); float and double only */
} OqcfBinaryOp;

/* Numpy (multidirectional) broadcast of two shapes, aligned at the right: each pair
 * of dims must be equal or one of them 1. OQCF_EINVAL when incompatible or a shape
 * is malformed. `out` may be a or b. Used by the compiler's shape inference too. */
OqcfStatus oqcf_broadcast_shape(const OqcfShape *a, const OqcfShape *b, OqcfShape *out);

/* y = a OP b with broadcasting; y has the shape oqcf_broadcast_shape(as, bs).
 * dt: FLOAT, DOUBLE, INT8/16/32/64, UINT8/16/32/64 (Pow, PRelu: FLOAT, DOUBLE; else
 * OQCF_EDTYPE); integer
 * semantics as at the top of this file, float ones IEEE. y may equal a (or b) when
 * that input already has the output shape. */
OqcfStatus oqcf_binary(OqcfBinaryOp op, OqcfDType dt, const void *a, const OqcfShape *as,
                       const void *b, const OqcfShape *bs, void *y);

/* ONNX Sum: y = x[0] + ... + x[n-1] (float), all broadcast to their common shape.
 * y may equal x[0] when x[0] has the output shape; it must not alias the others. */
OqcfStatus oqcf_sum(const float *const *x, const OqcfShape *shapes, int n, float *y);

/* Softmax over the middle dim of an (outer, axis_len, inner) view, subtracting each
 * row's max first so large inputs do not overflow. The caller maps ONNX: opset < 13
 * coerces to 2-D at `axis` (outer = prod(d[:axis]), axis_len = prod(d[axis:]), inner = 1);
 * opset >= 13 normalises one axis (outer = prod(d[:axis]), axis_len = d[axis],
 * inner = prod(d[axis+1:])). y may equal x. */
OqcfStatus oqcf_softmax(const float *x, float *y, int64_t outer, int64_t axis_len,
                        int64_t inner);

/* ---- reductions (oqcf_reduce.c) ---- */

typedef enum OqcfReduceOp {
    OQCF_REDUCE_SUM, OQCF_REDUCE_MEAN, OQCF_REDUCE_MAX, OQCF_REDUCE_MIN,
} OqcfReduceOp;

/* Reduces float x of shape xs over the axes whose bit is set in mask (bit i: axis i).
 * y holds the kept dims' elements in order (keepdims only changes the shape, not the
 * layout). mask 0 copies x. An empty reduction gives 0 (sum), NaN (mean), -inf (max),
 * +inf (min);
 * NaN propagates. y must not alias x. */
OqcfStatus oqcf_reduce(OqcfReduceOp op, const float *x, const OqcfShape *xs, unsigned mask,
                       float *y);

/* ArgMax (is_min 0) / ArgMin (1) over the middle dim of an (outer, len, inner) view:
 * y[o, i] is the index j of the largest (smallest) x[o, j, i], the first one on ties,
 * the last with select_last. NaN never compares larger: it is chosen only at j = 0. */
OqcfStatus oqcf_argmax(const float *x, int64_t outer, int64_t len, int64_t inner, int is_min,
                       int select_last, int64_t *y);

/* ---- data movement by element size (oqcf_layout.c); esize = oqcf_dtype_size ---- */

/* y = x, n elements of esize bytes (memmove: any overlap is fine). */
OqcfStatus oqcf_copy(const void *x, void *y, int64_t n, size_t esize);

/* Concat: n >= 1 inputs of equal rank (>= 1) that agree on every dim but `axis`;
 * the output's axis dim is the sum. x[i] may be NULL when shapes[i] is empty. */
OqcfStatus oqcf_concat(const void *const *x, const OqcfShape *shapes, int n, int axis,
                       size_t esize, void *y);

/* Split: the inverse of Concat; output i takes sizes[i] entries of `axis` (the sizes
 * must sum to xs->d[axis]); y[i] may be NULL when sizes[i] is 0 or x is empty. */
OqcfStatus oqcf_split(const void *x, const OqcfShape *xs, int axis, const int64_t *sizes,
                      int n, size_t esize, void *const *y);

/* A Slice resolved against one input shape: output index i of dim k reads input index
 * start[k] + i * step[k]. Dims the ONNX node does not name get start 0, step 1. */
typedef struct OqcfSlice {
    int64_t start[OQCF_MAX_RANK];   /* first input index read per dim (valid if out.d[k]>0) */
    int64_t step[OQCF_MAX_RANK];    /* input index increment per dim, never 0 */
    OqcfShape out;                  /* output shape; out.rank == input rank */
} OqcfSlice;

/* Resolves ONNX Slice-10+ inputs: n entries of starts/ends; axes (NULL = 0..n-1; may be
 * negative; must be distinct) and steps (NULL = all 1; 0 is invalid). Negative start/end
 * count from the end; then for step > 0 both clamp to [0, dim], for step < 0 start
 * clamps to [0, dim-1] and end to [-1, dim-1]; INT64_MAX/INT64_MIN work as sentinels.
 * OQCF_EINVAL on a bad axis, repeated axis, zero step or n > rank. */
OqcfStatus oqcf_slice_resolve(const OqcfShape *xs, const int64_t *starts,
                              const int64_t *ends, int n, const int64_t *axes,
                              const int64_t *steps, OqcfSlice *out);

/* y = x[slice], y of shape s->out. s comes from oqcf_slice_resolve on xs. */
OqcfStatus oqcf_slice(const void *x, const OqcfShape *xs, const OqcfSlice *s, size_t esize,
                      void *y);

/* Transpose: output dim j is input dim perm[j] (perm NULL = reversed dims, ONNX's
 * default). Size-1 dims are dropped and dims that stay adjacent are merged first, so
 * NCHW<->NHWC runs as a batched, cache-tiled 2-D transpose. y must not alias x. */
OqcfStatus oqcf_transpose(const void *x, const OqcfShape *xs, const int *perm,
                          size_t esize, void *y);

typedef enum OqcfPadMode {
    OQCF_PAD_CONSTANT,  /* fill with a value */
    OQCF_PAD_REFLECT,   /* mirror without repeating the edge (numpy "reflect") */
    OQCF_PAD_EDGE,      /* repeat the edge element */
} OqcfPadMode;

/* Output shape of Pad: out.d[k] = d[k] + pads[k] + pads[rank + k] (ONNX order: all
 * begins, then all ends). OQCF_EINVAL when a dim would be negative. */
OqcfStatus oqcf_pad_shape(const OqcfShape *xs, const int64_t *pads, OqcfShape *out);

/* Pad. Negative pads crop first (as onnxruntime does); reflect/edge then read the
 * cropped tensor; reflect repeats its mirror when a pad exceeds the dim (numpy).
 * value: one element of esize bytes for constant mode (NULL = all-zero bytes).
 * OQCF_EINVAL when reflect/edge must extend a dim left empty. y must not alias x. */
OqcfStatus oqcf_pad(const void *x, const OqcfShape *xs, const int64_t *pads,
                    OqcfPadMode mode, const void *value, size_t esize, void *y);

/* Output shape of Gather: d[:axis] + indices shape + d[axis+1:] (rank r-1 for scalar
 * indices). OQCF_EINVAL when the rank would exceed OQCF_MAX_RANK. */
OqcfStatus oqcf_gather_shape(const OqcfShape *xs, const OqcfShape *is, int axis,
                             OqcfShape *out);

/* Gather along axis with n_idx indices of idx_type (INT32 or INT64, else EDTYPE);
 * negative indices count from the end. Every index is checked before anything is
 * written: one outside [-d, d) gives OQCF_EINVAL and leaves y untouched. */
OqcfStatus oqcf_gather(const void *x, const OqcfShape *xs, int axis, const void *idx,
                       OqcfDType idx_type, int64_t n_idx, size_t esize, void *y);

/* Tile and Expand: y (shape ys) holds x (shape xs, right-aligned with ys: missing
 * leading dims count as 1) repeated along every dim, y[i] = x[i mod xs] per dim: Tile
 * when ys is xs times the repeats, Expand when each x dim is 1 or ys's. OQCF_EINVAL
 * when xs has more dims than ys or an empty x dim must fill a non-empty one. y must
 * not alias x. */
OqcfStatus oqcf_tile(const void *x, const OqcfShape *xs, const OqcfShape *ys, size_t esize,
                     void *y);

/* ---- Resize / Upsample (oqcf_resize.c) ---- */

/* One resampled axis: output position j along `axis` is
 *   sum over t < taps of w[j * taps + t] * x[idx[j * taps + t]]  (along that axis),
 * or exactly x[idx[j]] when w is NULL (nearest: a copy of any element size). An index
 * of -1 makes output position j the extrapolation value (tf_crop_and_resize outside
 * the input). The compiler derives the tables from Resize's attributes. */
typedef struct OqcfResizeAxis {
    int axis;              /* the axis, 0 .. rank - 1 */
    int taps;              /* input positions per output position (1, 2, 4) */
    int64_t out_len;       /* output extent of the axis */
    const int32_t *idx;    /* out_len * taps input indices in [-1, in_len) */
    const float *w;        /* out_len * taps weights, or NULL (nearest) */
} OqcfResizeAxis;

/* Scratch bytes oqcf_resize needs: the intermediate tensors between passes. */
size_t oqcf_resize_scratch_size(const OqcfShape *xs, const OqcfResizeAxis *axes, int naxes,
                                size_t esize);
/* y = x resampled along each of axes[0 .. naxes - 1], one pass per axis from the last
 * entry to the first (so give them in increasing axis order: the innermost axis is
 * resampled first, as ONNX's reference recursion does). Weighted passes need float
 * elements (esize 4); copies (w NULL) move elements of any esize. y must not alias x. */
OqcfStatus oqcf_resize(const void *x, const OqcfShape *xs, const OqcfResizeAxis *axes,
                       int naxes, float extrapolation, size_t esize, void *y, void *scratch,
                       size_t scratch_size);

/* ---- cast and (de)quantization (oqcf_cast.c) ---- */

/* Cast n elements between FLOAT, DOUBLE, FLOAT16, BFLOAT16, BOOL, INT8..64, UINT8..64.
 * Narrowing float casts round to nearest even (overflow -> inf, subnormals kept); to
 * BOOL: nonzero (NaN too) -> 1; float -> int: see the top of this file. y may equal x
 * only when both dtypes have the same size. */
OqcfStatus oqcf_cast(const void *x, OqcfDType from, void *y, OqcfDType to, int64_t n);

/* Scalar IEEE binary16 / bfloat16 conversions (round to nearest even; NaN stays a
 * quiet NaN). For the compiler (float16 initializers) and the cast kernel. */
uint16_t oqcf_f32_to_f16(float f);
float oqcf_f16_to_f32(uint16_t h);
uint16_t oqcf_f32_to_bf16(float f);
float oqcf_bf16_to_f32(uint16_t h);

/* QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point), yt UINT8 or
 * INT8. Layout (outer, axis_len, inner): scale and zero_point hold axis_len entries
 * (per tensor: outer = 1, axis_len = 1, inner = numel). zero_point points to yt
 * elements, NULL = 0. NaN quantizes to zero_point. OQCF_EINVAL on a zero or
 * non-finite scale. */
OqcfStatus oqcf_quantize_linear(const float *x, void *y, OqcfDType yt, const float *scale,
                                const void *zero_point, int64_t outer, int64_t axis_len,
                                int64_t inner);

/* DequantizeLinear: y = (x - zero_point) * scale, xt UINT8, INT8 or INT32; the
 * difference is exact (computed in int64) before the float multiply. Same layout and
 * zero_point rules as oqcf_quantize_linear; any scale is accepted (no division). */
OqcfStatus oqcf_dequantize_linear(const void *x, OqcfDType xt, float *y, const float *scale,
                                  const void *zero_point, int64_t outer, int64_t axis_len,
                                  int64_t inner);

#endif
