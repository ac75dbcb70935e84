/* oqcf_cast.c - Cast between numeric dtypes, IEEE binary16 / bfloat16 conversions,
 * QuantizeLinear and DequantizeLinear (see oqcf_tensor.h).
 *
 * Cast design: every source dtype widens exactly into one of three carriers - double
 * (float, double, float16, bfloat16), int64_t (signed ints) or uint64_t (unsigned ints,
 * bool) - a chunk of CHUNK elements at a time into a stack buffer, and every carrier
 * has one store loop per target dtype.  That is 14 loads + 3 x 14 stores instead of
 * 14 x 14 loops, with the dtype switches outside the element loops.  Reading a whole
 * chunk before writing it makes y == x safe when both dtypes have the same size.
 *
 * Rounding: each conversion rounds once.  float16/bfloat16 are produced from the
 * double carrier by narrow16() (round to nearest even, subnormals, overflow to inf,
 * quiet NaN); a float source widened to double is exact, so float -> float16 is
 * correctly rounded.  Integers of more than 53 bits are first made into a double
 * with round-to-odd (i2d_odd), which makes the later narrowing exact-as-if-direct.
 * double -> float rounds in C but overflow is caught first (C leaves it undefined).
 *
 * Where C is undefined, results are defined here (UBSan-clean): float -> integer
 * truncates toward zero, saturates out-of-range values and +-inf, maps NaN to 0;
 * integer -> integer wraps modulo 2^bits (two's complement; gcc/clang define the
 * signed narrowing conversions this way).
 */
#include "oqcf_tensor.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- float16 / bfloat16 ---- */

/* Rounds d to a 16-bit IEEE-style format with ebits exponent and mbits mantissa bits
 * (5/10 = binary16, 8/7 = bfloat16), round to nearest even. */
static uint16_t narrow16(double d, int ebits, int mbits) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    uint16_t sign = (uint16_t)((b >> 63) << 15);
    int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    uint16_t expmask = (uint16_t)(((1u << ebits) - 1) << mbits);
    int e = (int)((b >> 52) & 0x7ff);
    uint64_t man = b & ((1ULL << 52) - 1);
    if (e == 0x7ff) {           /* inf, or NaN made quiet with its top payload bits */
        if (!man)
            return sign | expmask;
        return (uint16_t)(sign | expmask | (1u << (mbits - 1)) | (man >> (52 - mbits)));
    }
    if (e == 0)                 /* zero or a double subnormal: far below any target */
        return sign;
    e -= 1023;
    uint64_t m = man | (1ULL << 52);
    int shift = 52 - mbits + (e < emin ? emin - e : 0);
    if (shift >= 64)
        return sign;
    uint64_t q = m >> shift, rem = m & ((1ULL << shift) - 1), half = 1ULL << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    if (e < emin)               /* subnormal; a carry into 1 << mbits is the smallest normal */
        return (uint16_t)(sign | q);
    if (q >> (mbits + 1)) {     /* rounding carried into the next binade */
        q >>= 1;
        e++;
    }
    if (e > bias)
        return sign | expmask;
    return (uint16_t)(sign | ((unsigned)(e + bias) << mbits) | (q & ((1u << mbits) - 1)));
}

uint16_t oqcf_f32_to_f16(float f) {
    return narrow16((double)f, 5, 10);
}

float oqcf_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);
    } else if (e == 0) {        /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    } else {
        bits = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t oqcf_f32_to_bf16(float f) {
    return narrow16((double)f, 8, 7);
}

float oqcf_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ---- conversion helpers (all defined for every input) ---- */

/* double -> float, C rounding; values that round past FLT_MAX become +-inf
 * (0x1.ffffffp127 is FLT_MAX plus half an ulp: the first value rounding to inf). */
static float d2f(double d) {
    if (d >= 0x1.ffffffp127)
        return INFINITY;
    if (d <= -0x1.ffffffp127)
        return -INFINITY;
    return (float)d;
}

/* double -> signed integer with range [-hi, hi - 1]; hi = 2^(bits-1). */
static int64_t f2i(double d, double hi, int64_t min, int64_t max) {
    if (d != d)
        return 0;
    if (d >= hi)
        return max;
    if (d <= -hi)
        return min;
    return (int64_t)d;
}

/* double -> unsigned integer with range [0, hi - 1]; hi = 2^bits. */
static uint64_t f2u(double d, double hi, uint64_t max) {
    if (d != d || d <= -1.0)
        return 0;
    if (d >= hi)
        return max;
    return (uint64_t)d;         /* d in (-1, hi): truncation is representable */
}

/* u as a double rounded to odd: exact below 2^53, otherwise truncated to 53 bits with
 * the last bit forced to 1 if anything was dropped, so a second rounding to <= 51 bits
 * equals a direct one. */
static double u2d_odd(uint64_t u) {
    if (u < (1ULL << 53))
        return (double)u;
    int bl = 0;
    for (uint64_t t = u; t; t >>= 1)
        bl++;
    uint64_t mask = (1ULL << (bl - 53)) - 1;
    if (u & mask)
        u = (u & ~mask) | (mask + 1);
    return (double)u;
}

static double i2d_odd(int64_t v) {
    return v < 0 ? -u2d_odd(0 - (uint64_t)v) : u2d_odd((uint64_t)v);
}

/* ---- Cast ---- */

enum { CHUNK = 256 };   /* elements converted per pass through the carrier buffer */

/* The carrier a source dtype widens into. */
typedef enum CastKind { KIND_NONE, KIND_FLOAT, KIND_SIGNED, KIND_UNSIGNED } CastKind;

static CastKind cast_kind(OqcfDType t) {
    switch (t) {
    case OQCF_FLOAT: case OQCF_DOUBLE: case OQCF_FLOAT16: case OQCF_BFLOAT16:
        return KIND_FLOAT;
    case OQCF_INT8: case OQCF_INT16: case OQCF_INT32: case OQCF_INT64:
        return KIND_SIGNED;
    case OQCF_UINT8: case OQCF_UINT16: case OQCF_UINT32: case OQCF_UINT64: case OQCF_BOOL:
        return KIND_UNSIGNED;
    default:
        return KIND_NONE;
    }
}

/* buf[i] = EXPR(v) for the c source elements of type T starting at element off. */
#define LOAD(T, EXPR)                                                                   \
    do {                                                                                 \
        const T *p = (const T *)x + off;                                                 \
        for (int64_t i = 0; i < c; i++) {                                                \
            T v = p[i];                                                                  \
            buf[i] = (EXPR);                                                             \
        }                                                                                \
    } while (0)

/* y[off + i] = EXPR(buf[i]) for the c target elements of type T. */
#define STORE(T, EXPR)                                                                  \
    do {                                                                                 \
        T *p = (T *)y + off;                                                             \
        for (int64_t i = 0; i < c; i++) {                                                \
            p[i] = (T)(EXPR);                                                            \
        }                                                                                \
    } while (0)

static void load_float(const void *x, OqcfDType t, int64_t off, int64_t c, double *buf) {
    switch (t) {
    case OQCF_FLOAT: LOAD(float, (double)v); break;
    case OQCF_DOUBLE: LOAD(double, v); break;
    case OQCF_FLOAT16: LOAD(uint16_t, (double)oqcf_f16_to_f32(v)); break;
    default: LOAD(uint16_t, (double)oqcf_bf16_to_f32(v)); break;
    }
}

static void load_signed(const void *x, OqcfDType t, int64_t off, int64_t c, int64_t *buf) {
    switch (t) {
    case OQCF_INT8: LOAD(int8_t, v); break;
    case OQCF_INT16: LOAD(int16_t, v); break;
    case OQCF_INT32: LOAD(int32_t, v); break;
    default: LOAD(int64_t, v); break;
    }
}

static void load_unsigned(const void *x, OqcfDType t, int64_t off, int64_t c, uint64_t *buf) {
    switch (t) {
    case OQCF_BOOL: LOAD(uint8_t, v != 0); break;
    case OQCF_UINT8: LOAD(uint8_t, v); break;
    case OQCF_UINT16: LOAD(uint16_t, v); break;
    case OQCF_UINT32: LOAD(uint32_t, v); break;
    default: LOAD(uint64_t, v); break;
    }
}

static void store_float(const double *buf, OqcfDType t, void *y, int64_t off, int64_t c) {
    switch (t) {
    case OQCF_FLOAT: STORE(float, d2f(buf[i])); break;
    case OQCF_DOUBLE: STORE(double, buf[i]); break;
    case OQCF_FLOAT16: STORE(uint16_t, narrow16(buf[i], 5, 10)); break;
    case OQCF_BFLOAT16: STORE(uint16_t, narrow16(buf[i], 8, 7)); break;
    case OQCF_BOOL: STORE(uint8_t, buf[i] != 0); break;
    case OQCF_INT8: STORE(int8_t, f2i(buf[i], 0x1p7, INT8_MIN, INT8_MAX)); break;
    case OQCF_INT16: STORE(int16_t, f2i(buf[i], 0x1p15, INT16_MIN, INT16_MAX)); break;
    case OQCF_INT32: STORE(int32_t, f2i(buf[i], 0x1p31, INT32_MIN, INT32_MAX)); break;
    case OQCF_INT64: STORE(int64_t, f2i(buf[i], 0x1p63, INT64_MIN, INT64_MAX)); break;
    case OQCF_UINT8: STORE(uint8_t, f2u(buf[i], 0x1p8, UINT8_MAX)); break;
    case OQCF_UINT16: STORE(uint16_t, f2u(buf[i], 0x1p16, UINT16_MAX)); break;
    case OQCF_UINT32: STORE(uint32_t, f2u(buf[i], 0x1p32, UINT32_MAX)); break;
    default: STORE(uint64_t, f2u(buf[i], 0x1p64, UINT64_MAX)); break;
    }
}

/* Integer carriers: C conversions to float/double round once; float16/bfloat16 go
 * through the round-to-odd double; narrower integers wrap. */
#define STORE_INTEGER_CASES(TO_DOUBLE_ODD)                                              \
    case OQCF_FLOAT: STORE(float, buf[i]); break;                                       \
    case OQCF_DOUBLE: STORE(double, buf[i]); break;                                     \
    case OQCF_FLOAT16: STORE(uint16_t, narrow16(TO_DOUBLE_ODD(buf[i]), 5, 10)); break;  \
    case OQCF_BFLOAT16: STORE(uint16_t, narrow16(TO_DOUBLE_ODD(buf[i]), 8, 7)); break;  \
    case OQCF_BOOL: STORE(uint8_t, buf[i] != 0); break;                                 \
    case OQCF_INT8: STORE(int8_t, buf[i]); break;                                       \
    case OQCF_INT16: STORE(int16_t, buf[i]); break;                                     \
    case OQCF_INT32: STORE(int32_t, buf[i]); break;                                     \
    case OQCF_INT64: STORE(int64_t, buf[i]); break;                                     \
    case OQCF_UINT8: STORE(uint8_t, buf[i]); break;                                     \
    case OQCF_UINT16: STORE(uint16_t, buf[i]); break;                                   \
    case OQCF_UINT32: STORE(uint32_t, buf[i]); break;                                   \
    default: STORE(uint64_t, buf[i]); break;

static void store_signed(const int64_t *buf, OqcfDType t, void *y, int64_t off, int64_t c) {
    switch (t) { STORE_INTEGER_CASES(i2d_odd) }
}

static void store_unsigned(const uint64_t *buf, OqcfDType t, void *y, int64_t off, int64_t c) {
    switch (t) { STORE_INTEGER_CASES(u2d_odd) }
}

OqcfStatus oqcf_cast(const void *x, OqcfDType from, void *y, OqcfDType to, int64_t n) {
    CastKind kind = cast_kind(from);
    if (kind == KIND_NONE || cast_kind(to) == KIND_NONE)
        return OQCF_EDTYPE;
    if (n < 0)
        return OQCF_EINVAL;
    if (n == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    if (from == to) {
        memmove(y, x, (size_t)n * oqcf_dtype_size(from));
        return OQCF_OK;
    }
    union {
        double f[CHUNK];        /* KIND_FLOAT carrier */
        int64_t i[CHUNK];       /* KIND_SIGNED carrier */
        uint64_t u[CHUNK];      /* KIND_UNSIGNED carrier */
    } buf;
    for (int64_t off = 0; off < n; off += CHUNK) {
        int64_t c = n - off < CHUNK ? n - off : CHUNK;
        switch (kind) {
        case KIND_FLOAT:
            load_float(x, from, off, c, buf.f);
            store_float(buf.f, to, y, off, c);
            break;
        case KIND_SIGNED:
            load_signed(x, from, off, c, buf.i);
            store_signed(buf.i, to, y, off, c);
            break;
        default:
            load_unsigned(x, from, off, c, buf.u);
            store_unsigned(buf.u, to, y, off, c);
            break;
        }
    }
    return OQCF_OK;
}

/* ---- QuantizeLinear / DequantizeLinear ---- */

/* Rounds half to even without depending on the floating-point environment (rintf
 * follows the current rounding mode). Below 2^23 the value truncates into int32; the
 * fraction f = v - trunc(v) is exact (Sterbenz: |t| <= |v| <= 2|t|, or t == 0), so the
 * tie test is exact. From 2^23 on every float is an integer; inf passes through. */
static float round_half_even(float v) {
    if (!(fabsf(v) < 0x1p23f))
        return v;
    int32_t i = (int32_t)v;
    float f = v - (float)i;
    if (f > 0.5f || (f == 0.5f && (i & 1)))
        i++;
    else if (f < -0.5f || (f == -0.5f && (i & 1)))
        i--;
    return (float)i;
}

/* Element a of an INT8/UINT8/INT32 array. */
static int64_t int_at(const void *p, OqcfDType t, int64_t a) {
    switch (t) {
    case OQCF_UINT8: return ((const uint8_t *)p)[a];
    case OQCF_INT8: return ((const int8_t *)p)[a];
    default: return ((const int32_t *)p)[a];
    }
}

/* Shared checks of the (outer, axis_len, inner) layout; with check_scale, every scale
 * must also be finite and non-zero (QuantizeLinear divides by it). */
static int qparams_ok(const float *scale, int64_t outer, int64_t axis_len, int64_t inner,
                      int check_scale) {
    if (outer < 0 || axis_len < 0 || inner < 0 || (axis_len > 0 && !scale))
        return 0;
    for (int64_t a = 0; check_scale && a < axis_len; a++)
        if (!isfinite(scale[a]) || scale[a] == 0.0f)
            return 0;
    return 1;
}

/* One (outer, axis) row of QuantizeLinear into T, clamped to [QMIN, QMAX]. */
#define QUANT_ROW(T, QMIN, QMAX)                                                        \
    do {                                                                                 \
        T *yp = (T *)y + base;                                                           \
        for (int64_t j = 0; j < inner; j++) {                                            \
            float t = xp[j] / s;                                                         \
            float q = (t != t ? 0.0f : round_half_even(t)) + zp;                         \
            q = q < (QMIN) ? (QMIN) : q > (QMAX) ? (QMAX) : q;                           \
            yp[j] = (T)q;                                                                \
        }                                                                                \
    } while (0)

OqcfStatus oqcf_quantize_linear(const float *x, void *y, OqcfDType yt, const float *scale,
                                const void *zero_point, int64_t outer, int64_t axis_len,
                                int64_t inner) {
    if (yt != OQCF_UINT8 && yt != OQCF_INT8)
        return OQCF_EDTYPE;
    if (!qparams_ok(scale, outer, axis_len, inner, 1))
        return OQCF_EINVAL;
    if (outer == 0 || axis_len == 0 || inner == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t a = 0; a < axis_len; a++) {
            float s = scale[a];
            float zp = zero_point ? (float)int_at(zero_point, yt, a) : 0.0f;
            int64_t base = (o * axis_len + a) * inner;
            const float *xp = x + base;
            if (yt == OQCF_UINT8)
                QUANT_ROW(uint8_t, 0.0f, 255.0f);
            else
                QUANT_ROW(int8_t, -128.0f, 127.0f);
        }
    return OQCF_OK;
}

/* One (outer, axis) row of DequantizeLinear from T; x - zp is exact in int64_t. */
#define DEQUANT_ROW(T)                                                                  \
    do {                                                                                 \
        const T *xp = (const T *)x + base;                                               \
        for (int64_t j = 0; j < inner; j++)                                              \
            yp[j] = (float)((int64_t)xp[j] - zp) * s;                                    \
    } while (0)

OqcfStatus oqcf_dequantize_linear(const void *x, OqcfDType xt, float *y, const float *scale,
                                  const void *zero_point, int64_t outer, int64_t axis_len,
                                  int64_t inner) {
    if (xt != OQCF_UINT8 && xt != OQCF_INT8 && xt != OQCF_INT32)
        return OQCF_EDTYPE;
    if (!qparams_ok(scale, outer, axis_len, inner, 0))
        return OQCF_EINVAL;
    if (outer == 0 || axis_len == 0 || inner == 0)
        return OQCF_OK;
    if (!x || !y)
        return OQCF_EINVAL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t a = 0; a < axis_len; a++) {
            float s = scale[a];
            int64_t zp = zero_point ? int_at(zero_point, xt, a) : 0;
            int64_t base = (o * axis_len + a) * inner;
            float *yp = y + base;
            if (xt == OQCF_UINT8)
                DEQUANT_ROW(uint8_t);
            else if (xt == OQCF_INT8)
                DEQUANT_ROW(int8_t);
            else
                DEQUANT_ROW(int32_t);
        }
    return OQCF_OK;
}
