#!/bin/sh
# fp32_runtime_c99.sh - the FP32 runtime files `oqc compile` copies next to a model are
# plain, self-sufficient C99: every runtime/fp32/oqcf_*.c but oqcf_pool.c and oqcf_threads.c
# (the pool over threads, for liboqc and outputs with --threads, see compile_threads.sh;
# oqcf_serial.c stands in for them) compiles with
#   -std=c99 -pedantic -O2 -Wall -Wextra -Werror
# under gcc and clang; the objects define no writable global (nm: no b/B/d/D symbol
# outside .data.rel.ro, where PIC puts const tables of function pointers: read-only once
# relocated) and call no allocator nor thread function; and, linked together with a
# small main under AddressSanitizer + UndefinedBehaviorSanitizer and with -lm only, Conv
# and Gemm match direct loops written here.
. tests/cli/lib.sh
# These compile the runtime sources with the system's compilers: the same whichever
# configuration `make check` is testing, so they run in the default one only.
only_config default

STRICT="-std=c99 -pedantic -O2 -Wall -Wextra -Werror"
# -O0: the sanitized copies only need to run correctly, and compile 2-4x faster.
SANITIZE="-std=c99 -pedantic -O0 -g -Wall -Wextra -Werror -fsanitize=address,undefined
          -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
SRCS=""
for f in runtime/fp32/oqcf_*.c; do
    case "$f" in runtime/fp32/oqcf_pool.c | runtime/fp32/oqcf_threads.c) ;; *) SRCS="$SRCS $f" ;; esac
done

# compile CC DIR FLAGS...: compiles $SRCS into DIR, two at a time (the test machines
# have two cores); the sources that fail are listed in DIR/failed, their messages in
# DIR/NAME.err.
compile() {
    cc=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    : > "$dir/failed"
    n=0
    for f in $SRCS; do
        b=$(basename "$f" .c)
        ( "$cc" "$@" $RT_INC -c "$f" -o "$dir/$b.o" 2> "$dir/$b.err" ||
              echo "$f" >> "$dir/failed" ) &
        n=$((n + 1))
        [ $((n % 2)) = 0 ] && wait
    done
    wait
    [ ! -s "$dir/failed" ]
}

# Shows the first messages of each failed compile.
show_errors() {
    for f in $(cat "$1/failed"); do
        echo "  $f:"
        head -n 8 "$1/$(basename "$f" .c).err" | sed 's/^/    /'
    done
}

# The test program: Conv (1x2x5x5 input, 3x2x3x3 kernel, pad 1, bias, LeakyReLU; stride 1
# and 2) and Gemm (three shapes: tile edges, a packed product, a matrix-vector one;
# C broadcast per column with beta 1 and 2), each against a direct loop in double.
# Tolerance: |y - ref| <= 1e-5 * (1 + sum of |terms|), about 100 float ulps of the
# largest partial sum (a float sum of n terms is within n * 2^-24 of it, n <= 29 here).
# It also checks the serial pool's contract and that the ISA override is absent.
cat > "$TMP/main.c" <<'EOF'
#include "oqcf_nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned rng = 12345u;
static float rnd(void) {   /* uniform in [-1, 1) */
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffffffu) / 8388608.0f - 1.0f;
}
static float *vec(int64_t n) {
    float *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; v && i < n; i++)
        v[i] = rnd();
    return v;
}
/* Scratch sized exactly as asked for, so ASan sees any overrun. */
static void *scratch_of(size_t n) {
    return malloc(n ? n : 1);
}

static int failures;
static void check(const char *what, int64_t i, float got, double ref, double mag) {
    if (!(fabs(got - ref) <= 1e-5 * (1.0 + mag))) {
        if (failures < 10)
            printf("%s: element %lld is %.9g, expected %.9g\n", what, (long long)i, got, ref);
        failures++;
    }
}

static int calls;
static void count_fn(void *ctx, int64_t b, int64_t e, int tid) {
    int64_t n = *(const int64_t *)ctx;
    if (b != 0 || e != n || tid != 0)
        failures++;
    calls++;
}

static void conv_case(OqcfPool *pool, int64_t stride) {
    const int64_t C = 2, K = 3, H = 5, W = 5, R = 3, pad = 1;
    const int64_t OH = (H + 2 * pad - R) / stride + 1, OW = (W + 2 * pad - R) / stride + 1;
    OqcfConvParams p = {0};
    p.nspatial = 2;
    p.batch = 1;
    p.channels = C;
    p.out_channels = K;
    p.group = 1;
    for (int a = 0; a < 2; a++) {
        p.in_size[a] = H;
        p.out_size[a] = a ? OW : OH;
        p.kernel[a] = R;
        p.stride[a] = stride;
        p.dilation[a] = 1;
        p.pad_begin[a] = p.pad_end[a] = pad;
    }
    p.act.kind = OQCF_ACT_LEAKY;
    p.act.p0 = 0.1f;
    float *x = vec(C * H * W), *w = vec(K * C * R * R), *bias = vec(K), *y = vec(K * OH * OW);
    size_t ss = oqcf_conv_scratch_size(&p, oqcf_pool_threads(pool));
    void *s = scratch_of(ss);
    if (!x || !w || !bias || !y || !s) {
        printf("out of memory\n");
        failures++;
    } else if (oqcf_conv(pool, &p, x, w, bias, y, s, ss) != OQCF_OK) {
        printf("oqcf_conv (stride %lld) failed\n", (long long)stride);
        failures++;
    } else {
        for (int64_t k = 0; k < K; k++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double sum = bias[k], mag = fabs(bias[k]);
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t kh = 0; kh < R; kh++)
                            for (int64_t kw = 0; kw < R; kw++) {
                                int64_t ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                double t = (double)x[(c * H + ih) * W + iw] *
                                           w[((k * C + c) * R + kh) * R + kw];
                                sum += t;
                                mag += fabs(t);
                            }
                    double ref = sum >= 0 ? sum : 0.1 * sum;
                    check(stride == 1 ? "conv stride 1" : "conv stride 2",
                          (k * OH + oh) * OW + ow, y[(k * OH + oh) * OW + ow], ref, mag);
                }
    }
    free(x);
    free(w);
    free(bias);
    free(y);
    free(s);
}

/* Y = alpha * A B^T + beta * c (c: N values broadcast over the rows). */
static void gemm_case(OqcfPool *pool, int64_t M, int64_t N, int64_t K, float beta) {
    OqcfGemmParams p = {0};
    p.M = M;
    p.N = N;
    p.K = K;
    p.trans_b = 1;
    p.alpha = 0.5f;
    p.beta = beta;
    p.has_c = 1;
    p.c_shape.rank = 1;
    p.c_shape.d[0] = N;
    p.act.kind = OQCF_ACT_NONE;
    float *a = vec(M * K), *b = vec(N * K), *c = vec(N), *y = vec(M * N);
    size_t ss = oqcf_gemm_scratch_size(&p, oqcf_pool_threads(pool));
    void *s = scratch_of(ss);
    if (!a || !b || !c || !y || !s) {
        printf("out of memory\n");
        failures++;
    } else if (oqcf_gemm(pool, &p, a, b, c, y, s, ss) != OQCF_OK) {
        printf("oqcf_gemm %lldx%lldx%lld failed\n", (long long)M, (long long)N, (long long)K);
        failures++;
    } else {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double sum = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double t = (double)a[i * K + k] * b[j * K + k];
                    sum += t;
                    mag += fabs(t);
                }
                double ref = 0.5 * sum + (double)beta * c[j];
                check("gemm", i * N + j, y[i * N + j], ref, 0.5 * mag + fabs(beta * c[j]));
            }
    }
    free(a);
    free(b);
    free(c);
    free(y);
    free(s);
}

int main(void) {
    /* The serial pool: never a pool, every loop once on the caller. */
    OqcfPool *pool = oqcf_pool_create(4);
    int64_t n = 10;
    if (pool != NULL || oqcf_pool_threads(pool) != 1 ||
        oqcf_pool_for_work(pool, 1e12) != NULL ||
        oqcf_pool_set_min_work(0) != OQCF_PAR_MIN_WORK) {
        printf("serial pool API\n");
        failures++;
    }
    oqcf_parallel_for(pool, n, count_fn, &n);
    oqcf_parallel_for(pool, 0, count_fn, &n);
    if (calls != 1) {
        printf("oqcf_parallel_for: %d calls\n", calls);
        failures++;
    }
    /* No test hooks: the microkernel family cannot be forced. */
    if (oqcf_sgemm_force_isa(OQCF_ISA_PORTABLE) != OQCF_EINVAL ||
        oqcf_sgemm_force_isa(OQCF_ISA_AUTO) != OQCF_OK) {
        printf("oqcf_sgemm_force_isa is not disabled\n");
        failures++;
    }
    conv_case(pool, 1);
    conv_case(pool, 2);
    gemm_case(pool, 5, 7, 9, 1.0f);
    gemm_case(pool, 37, 41, 29, 2.0f);
    gemm_case(pool, 1, 13, 17, 2.0f);
    oqcf_pool_destroy(pool);
    printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
    return failures != 0;
}
EOF

for cc in gcc clang; do
    if ! command -v "$cc" >/dev/null 2>&1; then
        skip "$cc: not installed"
        continue
    fi
    d="$TMP/$cc"
    # 1. strict C99
    if compile "$cc" "$d" $STRICT; then
        ok "$cc: $(echo $SRCS | wc -w) runtime files compile with $STRICT"
    else
        fail "$cc: $STRICT rejects: $(cat "$d/failed" | tr '\n' ' ')"
        show_errors "$d"
    fi
    objs=$(ls "$d"/*.o 2>/dev/null)
    if [ -n "$objs" ]; then
        # 2. no writable global: class b/B/d/D outside .data.rel.ro
        data=$(for o in $objs; do
            nm -f sysv "$o" | awk -F'|' -v o="$(basename "$o")" '{
                cl = $3; sec = $7; name = $1
                gsub(/ /, "", cl); gsub(/ /, "", sec); gsub(/ /, "", name)
                if (cl ~ /^[bBdD]$/ && sec !~ /^\.data\.rel\.ro/) print o ":" name "(" sec ")"
            }'
        done)
        [ -z "$data" ] && ok "$cc: no writable global in the objects" ||
            fail "$cc: writable globals: $(echo $data)"
        # 3. no allocator, no threads
        refs=$(nm -u $objs | awk '{print $NF}' |
               grep -E '^(malloc|calloc|realloc|free|aligned_alloc|posix_memalign|pthread_.*|thrd_.*|mtx_.*|cnd_.*)$' |
               sort -u)
        [ -z "$refs" ] && ok "$cc: no object calls an allocator or a thread function" ||
            fail "$cc: objects reference $(echo $refs)"
    fi
    # 4. run Conv and Gemm under ASan + UBSan, linked with -lm only
    s="$TMP/$cc-san"
    if compile "$cc" "$s" $SANITIZE &&
       "$cc" $SANITIZE $RT_INC "$TMP/main.c" "$s"/*.o -lm -o "$TMP/$cc-run" 2> "$s/link.err"
    then
        if "$TMP/$cc-run" > "$s/run.log" 2>&1; then
            ok "$cc: Conv and Gemm match direct loops under ASan+UBSan (serial pool)"
        else
            fail "$cc: sanitized run"
            head -n 20 "$s/run.log" | sed 's/^/    /'
        fi
    else
        fail "$cc: sanitized build"
        show_errors "$s"
        head -n 8 "$s/link.err" 2>/dev/null | sed 's/^/    /'
    fi
done
finish
