/* oqci_conv_avx512.c - the INT8 conv families built on u8 x s8 dot products with an
 * AVX-512 or VEX epilogue: AVX-512 VNNI (oqcik_family_avx512vnni; for the tests'
 * emulation a plain-C stand-in for its microkernel), the AMX-INT8 tiles that reuse its
 * panels, packers and epilogue (oqcik_conv_amx), and AVX-VNNI (oqcik_family_avxvnni),
 * whose 24-pixel kernel packs the same u8 panels with the same correction, its
 * transposes and epilogue the AVX2 family's.  The SIMD GEMM that drives them is
 * oqci_conv_gemm.c's; the AVX-512 VNNI microkernels are oqci_conv_avx512_ukr.c's.
 *   - AVX-512 VNNI (oqcik_q8conv_8x32c4__avx512vnni) and AVX-VNNI (q8conv_4x24c4__avxvnni):
 *     vpdpbusd takes u8 x s8: u8 inputs are used as they are, s8 inputs x are packed as
 *     x + 128 (xor 0x80) and 128 * sum_k w[k] is subtracted from the channel's sum.
 *     The AVX-512 kernel has an 8x16 body for panels of at most 16 pixels and, like
 *     the narrow AVX2 one, an epilogue in registers (16 lanes: rq16). */
#include "oqci_conv_x86_int.h"

const char OQCIK_CFG(avx512) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

#if HAVE_AVX512VNNI && OQCI_EMU_VNNI
/* ---- q8conv_8x32c4__emu: the AVX-512 VNNI kernel's sums in plain C (tests only) ---- */

static void q8conv_8x32c4__emu(int32_t nq, const void *panel, const int8_t *const *w,
                               int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    const uint8_t *pp = (const uint8_t *)panel;
    int32_t r, px, q, e;
    for (r = 0; r < nk; r++)
        for (px = 0; px < 32; px++) {
            int32_t sum = 0;
            for (q = 0; q < nq; q++)
                for (e = 0; e < 4; e++)
                    sum += (int32_t)pp[((size_t)q * 32 + px) * 4 + e] * w[r][4 * q + e];
            t[r * TILE_NR + px] = acc ? t[r * TILE_NR + px] + sum : sum;
        }
}

const Family oqcik_family_avx512vnni = {
    .isa = OQCI_ISA_AVX512VNNI,
    .mr = 8,
    .nr = 32,
    .esize = 1,
    .kbq = KBLOCK_Z / 4,
    .flip = OQCI_S8,
    .ukr = q8conv_8x32c4__emu,
    .tr4 = {oqcik_tr4_u8_s8__avx2, oqcik_tr4_u8_u8__avx2},
    .gather = oqcik_gather__avx2,
    .store = oqcik_store_tile__avx2,
    .grid = GRID_BY_WORK_PACKED,
    .wsum = oqcik_wsum__avx2,
};
#elif HAVE_AVX512VNNI
/* (its microkernels: oqci_conv_avx512_ukr.c) */

/* Four rows a, b, c, e of len <= 32 bytes as len panel pixels of 4 bytes, the top bit
 * flipped (flip: s8 inputs + 128) or not: byte then word interleaves inside 128-bit lanes
 * (lane 0: pixels 0-15, lane 1: 16-31), the lanes put in pixel order, masked stores of
 * exactly 4 len bytes (store_quads). */
T_AVX512VNNI static inline __attribute__((always_inline)) void
tr4_v32z(__m512i a, __m512i b, __m512i c, __m512i e, int32_t len, uint8_t *d, int flip) {
    __m512i ab0 = _mm512_unpacklo_epi8(a, b), ab1 = _mm512_unpackhi_epi8(a, b);
    __m512i ce0 = _mm512_unpacklo_epi8(c, e), ce1 = _mm512_unpackhi_epi8(c, e);
    /* q0: pixels 0-3 | 16-19, q1: 4-7 | 20-23, q2: 8-11 | 24-27, q3: 12-15 | 28-31 */
    __m512i q0 = _mm512_unpacklo_epi16(ab0, ce0), q1 = _mm512_unpackhi_epi16(ab0, ce0);
    __m512i q2 = _mm512_unpacklo_epi16(ab1, ce1), q3 = _mm512_unpackhi_epi16(ab1, ce1);
    __m512i t01 = _mm512_shuffle_i64x2(q0, q1, 0x44), t23 = _mm512_shuffle_i64x2(q2, q3, 0x44);
    __m512i lo = _mm512_shuffle_i64x2(t01, t23, 0x88), hi = _mm512_shuffle_i64x2(t01, t23, 0xDD);
    store_quads(lo, hi, len, d, flip);
}

/* A family's Family.tr4 pair (u8 panels of s8 inputs, flipped; of u8 inputs) and
 * Family.band_pack pair (pack_band_body with them inlined), with target attributes T:
 * four rows of len <= 32 bytes loaded with a byte mask (nothing read past len) and
 * transposed by V32 (the four vectors, len, d, flip). */
#define TR4_SET(ISA, T, V32, BAND)                                                      \
    T static inline __attribute__((always_inline)) void B32_##ISA(                       \
        const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,      \
        int32_t len, uint8_t *d, int flip) {                                            \
        __mmask64 m = len >= 32 ? (__mmask64)0xFFFFFFFFu : ((__mmask64)1 << len) - 1;   \
        V32(_mm512_maskz_loadu_epi8(m, r0), _mm512_maskz_loadu_epi8(m, r1),             \
            _mm512_maskz_loadu_epi8(m, r2), _mm512_maskz_loadu_epi8(m, r3), len, d, flip); \
    }                                                                                   \
    T static inline __attribute__((always_inline)) void tr4_u8_s8__##ISA(               \
        const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,      \
        int32_t len, void *dst) {                                                       \
        B32_##ISA(r0, r1, r2, r3, len, (uint8_t *)dst, 1);                              \
    }                                                                                   \
    T static inline __attribute__((always_inline)) void tr4_u8_u8__##ISA(               \
        const uint8_t *r0, const uint8_t *r1, const uint8_t *r2, const uint8_t *r3,      \
        int32_t len, void *dst) {                                                       \
        B32_##ISA(r0, r1, r2, r3, len, (uint8_t *)dst, 0);                              \
    }                                                                                   \
    T static void pack_band_s8__##ISA(const OqciConv *p, const Band *b, int64_t r0,     \
                                      const Seg *segs, int nseg, int32_t q0, int32_t nq, \
                                      uint8_t *panel) {                                 \
        BAND(1)                                                                         \
        pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, 32, 1, tr4_u8_s8__##ISA);   \
    }                                                                                   \
    T static void pack_band_u8__##ISA(const OqciConv *p, const Band *b, int64_t r0,     \
                                      const Seg *segs, int nseg, int32_t q0, int32_t nq, \
                                      uint8_t *panel) {                                 \
        BAND(0)                                                                         \
        pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, 32, 1, tr4_u8_u8__##ISA);   \
    }
#define BAND_NONE(flip)
TR4_SET(avx512vnni, T_AVX512VNNI, tr4_v32z, BAND_NONE)
#undef BAND_NONE

/* Family.runs: the nk rows of q (stride TILE_NR, the fused epilogue's buffer) stored
 * through the panel's runs.  Each row is read once, 32 bytes as the epilogue stored them
 * (so the load takes them from the store buffer); each run is one masked store of the
 * row's vector at the run's destination moved back by its panel column, the mask moved
 * forward as far (runs end inside the panel's TILE_NR < 64 columns): no other byte is
 * written or accessed, and the moved-back address is only ever an operand of a masked
 * store, which does not touch masked-out bytes. */
T_AVX512VNNI static void store_runs__avx512vnni(const OqciConv *p, const uint8_t *q, int32_t k,
                                                int32_t nk, const Seg *segs, int nseg,
                                                void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    uintptr_t dst[TILE_NR];
    __mmask64 m[TILE_NR];
    int32_t r;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        m[si] = (((__mmask64)1 << s->len) - 1) << s->off;
        dst[si] = (uintptr_t)((uint8_t *)y + (s->n * p->out_ctotal + p->out_coff + k) * pix +
                              s->pix0) -
                  (uintptr_t)s->off;
    }
    for (r = 0; r < nk; r++) {
        __m512i v = _mm512_castsi256_si512(LDU256(q + (size_t)r * TILE_NR));
        for (si = 0; si < nseg; si++)
            _mm512_mask_storeu_epi8((void *)(dst[si] + (uintptr_t)(r * pix)), m[si], v);
    }
}

/* What the AVX-512 VNNI family and its VBMI variant share: the microkernel, its fused
 * epilogues, the tile store, the blocking. */
#define FAMILY_AVX512VNNI_COMMON                                                            \
    .mr = 8, .nr = 32, .esize = 1, .kbq = KBLOCK_Z / 4, .flip = OQCI_S8,                    \
    .ukr = oqcik_q8conv_8x32c4__avx512vnni, .store = oqcik_store_tile__avx2,                \
    .ukr_rq = UKR_RQ_AVX512VNNI, .ukr_rq_acc = UKR_RQ_ACC_AVX512VNNI,                       \
    .ukr_rq_wide = UKR_RQ_WIDE_AVX512VNNI, .rq_biased = 1, .grid = GRID_BY_WORK_PACKED,     \
    .wsum = oqcik_wsum__avx2, .pixel = oqcik_gemv_pixel__avx512vnni

const Family oqcik_family_avx512vnni = {
    .isa = OQCI_ISA_AVX512VNNI,
    FAMILY_AVX512VNNI_COMMON,
    .tr4 = {tr4_u8_s8__avx512vnni, tr4_u8_u8__avx512vnni},
    .gather = oqcik_gather__avx2,
    .band_pack = {pack_band_s8__avx512vnni, pack_band_u8__avx512vnni},
    .runs = store_runs__avx512vnni,
};
#endif

#if HAVE_AMX
/* ---- AMX-INT8 tiles: 32 channels x 32 pixels per step (oqcik_conv_amx) --------------------
 * The tile unit of Sapphire Rapids and later: tdpbssd / tdpbsud add to each int32 of a
 * 16 x 16 tile C the DP4A sums of a row of tile A (16 quads of one output channel's s8
 * weights: a weight row as oqci.h lays it out, tiles loaded with stride kpad) and a
 * column of tile B (16 quads of one pixel: 64 bytes of the byte panel, whose rows are
 * 128 bytes, so pixels 0-15 and 16-31 are two B tiles), over the 16 quads: the DP4A
 * primitive, 1024 of them per instruction.  Signed weights against s8 inputs (tdpbssd)
 * or u8 inputs (tdpbsud): no offset, no correction (Family.flip -1).  Tiles 0-3 hold the
 * sums of two 16-channel units x two pixel halves, 4-5 the units' weights, 6-7 the
 * panel.  The whole reduction is one K block (its panel: round_up(kpad, 64) x 32 bytes,
 * in L2 for the deepest convs); the last, partial chunk of 16 quads of each weight row
 * is read from a copy zero-padded to 64 bytes, made once per call (amx_work's region),
 * so no tile load reads past the weights and the panel's bytes past its nq quads (left
 * as they are in the scratch, inside the panel's round_up(kpad, 64) x 32 bytes) only
 * ever meet zero weights.  A group's channels go in 16-row units, the last unit ending
 * at the group's last channel (overlapping the unit before it: those rows are computed
 * twice and stored once), so every tile row is a real channel: groups of at least
 * AMX_MIN_KG channels.  The sums leave the tiles through AMX_SUMS_BYTES of scratch for
 * the AVX-512 family's epilogue (oqcik_fused_rq with no quads: the fused float
 * requantization) or its store (every other case: accumulator outputs too).  Exact:
 * the int32 sums of at most OQCI_KCHUNK products (amx_fits). */

/* ldtilecfg's 64 bytes: palette 1, then per tile its bytes per row and rows: every tile
 * 16 rows of 64 bytes, but for reductions of at most 64 (one chunk, "thin") the weight
 * tiles 4-5, 16 rows of kpad bytes, and the panel tiles 6-7, kpad / 4 rows: the A tiles
 * then read the weights as they are (no zero-padded tail) and the B tiles no panel rows
 * past the reduction. */
typedef struct AmxCfg {
    unsigned char b[64];
} AmxCfg;

T_AMX static void amx_begin(int32_t kpad) {
    AmxCfg c;
    int i, thin = kpad <= 64;
    memset(&c, 0, sizeof c);
    c.b[0] = 1;
    for (i = 0; i < 8; i++) {
        c.b[16 + 2 * i] = (unsigned char)(thin && (i == 4 || i == 5) ? kpad : 64);   /* (LE) */
        c.b[48 + i] = (unsigned char)(thin && i >= 6 ? kpad / 4 : 16);
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
}

T_AMX static void amx_end(void) {
    __asm__ volatile("tilerelease" : : : "memory");
}

/* Asks Linux for the tile data state (arch_prctl(ARCH_REQ_XCOMP_PERM,
 * XFEATURE_XTILEDATA)): 0 once granted to the process (a later request returns at once),
 * an error where the CPU or the kernel has no AMX.  A raw system call: no header, no
 * libc function beyond C99's. */
int oqcik_amx_permit(void) {
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "0"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
    return r == 0;
}

/* One chunk of 16 quads: A tiles from a0 (a1), stride lda; B from b; DP: the signedness. */
#define AMX_STEP(DP, NA, NB, A0, A1, LDA, B)                                             \
    {                                                                                   \
        _tile_loadd(4, A0, LDA);                                                        \
        if (NA > 1)                                                                     \
            _tile_loadd(5, A1, LDA);                                                    \
        _tile_loadd(6, B, 128);                                                         \
        if (NB > 1)                                                                     \
            _tile_loadd(7, (B) + 64, 128);                                              \
        DP(0, 4, 6);                                                                    \
        if (NB > 1)                                                                     \
            DP(1, 4, 7);                                                                \
        if (NA > 1)                                                                     \
            DP(2, 5, 6);                                                                \
        if (NA > 1 && NB > 1)                                                           \
            DP(3, 5, 7);                                                                \
    }
/* NA 16-channel units (weights a0, a1 at the first quad; the last chunk's at t0, t1,
 * stride 64) x NB 16-pixel halves of the panel b: nfull whole chunks of 16 quads and
 * (tail) one more, into tiles 0-3 (unit u, pixel half h: tile 2 u + h).  Not inlined:
 * the tile loads are asm statements that do not tell the compiler which memory they
 * touch, so the panel is written across a call. */
#define AMX_KERNEL(NAME, DP, NA, NB)                                                    \
    T_AMX __attribute__((noinline)) static void NAME(                                   \
        int32_t nfull, int tail, const int8_t *a0, const int8_t *a1, int64_t lda,       \
        const int8_t *t0, const int8_t *t1, const uint8_t *b) {                         \
        int32_t q;                                                                      \
        _tile_zero(0);                                                                  \
        if (NB > 1)                                                                     \
            _tile_zero(1);                                                              \
        if (NA > 1)                                                                     \
            _tile_zero(2);                                                              \
        if (NA > 1 && NB > 1)                                                           \
            _tile_zero(3);                                                              \
        for (q = 0; q < nfull; q++, b += 2048)                                          \
            AMX_STEP(DP, NA, NB, a0 + 64 * q, a1 + 64 * q, lda, b)                      \
        if (tail)                                                                       \
            AMX_STEP(DP, NA, NB, t0, t1, 64, b)                                         \
    }
/* Tiles 0-3 of na units and nb pixel halves to c (rows of TILE_NR int32: unit 0's
 * channels in rows 0-15, unit 1's in 16-31; pixel half h at column 16 h).  Not inlined
 * (the sums are read across the call). */
T_AMX __attribute__((noinline)) static void amx_store(int na, int nb, int32_t *c) {
    _tile_stored(0, c, 4 * TILE_NR);
    if (nb > 1)
        _tile_stored(1, c + 16, 4 * TILE_NR);
    if (na > 1)
        _tile_stored(2, c + 16 * TILE_NR, 4 * TILE_NR);
    if (na > 1 && nb > 1)
        _tile_stored(3, c + 16 * TILE_NR + 16, 4 * TILE_NR);
    __asm__ volatile("" : : : "memory");
}
#define AMX_SS(c, a, b) _tile_dpbssd(c, a, b)
#define AMX_SU(c, a, b) _tile_dpbsud(c, a, b)
AMX_KERNEL(q8conv_16x16c64_ss__amx, AMX_SS, 1, 1)
AMX_KERNEL(q8conv_16x32c64_ss__amx, AMX_SS, 1, 2)
AMX_KERNEL(q8conv_32x16c64_ss__amx, AMX_SS, 2, 1)
AMX_KERNEL(q8conv_32x32c64_ss__amx, AMX_SS, 2, 2)
AMX_KERNEL(q8conv_16x16c64_su__amx, AMX_SU, 1, 1)
AMX_KERNEL(q8conv_16x32c64_su__amx, AMX_SU, 1, 2)
AMX_KERNEL(q8conv_32x16c64_su__amx, AMX_SU, 2, 1)
AMX_KERNEL(q8conv_32x32c64_su__amx, AMX_SU, 2, 2)
#undef AMX_KERNEL
#undef AMX_STEP

/* Where the weight tails start in amx_work's region (see amx_work_bytes). */
static size_t amx_tail_off(const OqciConv *p) {
    return AMX_PANELS_OFF + (size_t)(amx_batch(p) - 1) * amx_panel_bytes(p);
}

typedef void (*AmxKernel)(int32_t nfull, int tail, const int8_t *a0, const int8_t *a1,
                          int64_t lda, const int8_t *t0, const int8_t *t1, const uint8_t *b);
/* [u8 inputs][units - 1][pixel halves - 1] */
static const AmxKernel amx_kernels[2][2][2] = {
    {{q8conv_16x16c64_ss__amx, q8conv_16x32c64_ss__amx},
     {q8conv_32x16c64_ss__amx, q8conv_32x32c64_ss__amx}},
    {{q8conv_16x16c64_su__amx, q8conv_16x32c64_su__amx},
     {q8conv_32x16c64_su__amx, q8conv_32x32c64_su__amx}}};

/* Family.tiles of family_amx: per pair of 16-channel units, the tile work of each panel
 * of the batch, each panel's epilogue running after the next panel's dot products were
 * issued and before their tile stores (so the tile unit works while the core
 * requantizes; loads issued after a tile store wait for it, so the stores come after
 * the epilogue; the sums alternate between AMX_SUMS_SLOTS slots of AMX_SUMS_BYTES at
 * work).  Thin reductions (at most 64, amx_begin's shapes) read the weight rows as they
 * are: one chunk, no tail. */
T_AMX static void tiles__amx(const OqciConv *p, const Family *f, const Geo *ge,
                             uint8_t *const *panel, const int64_t *P0, const int32_t *np,
                             int nb, int32_t nq, int32_t g, const RqPre *pre, int i16,
                             uint8_t *work, void *y) {
    int32_t kg = p->out_c / p->group, nu = (kg + 15) / 16, j;
    const int8_t *wtail = (const int8_t *)(work + amx_tail_off(p));
    int32_t nsteps = (nu + 1) / 2 * nb, q;
    int thin = p->kpad <= 64;
    Seg segs[AMX_BATCH_MAX][TILE_NR];   /* (each panel's runs, for every unit pair) */
    int nseg[AMX_BATCH_MAX], i0;
    for (i0 = 0; i0 < nb; i0++)
        nseg[i0] = oqcik_make_segs(ge, P0[i0], np[i0], segs[i0]);
    for (q = 0; q <= nsteps; q++) {   /* step q: tiles of item q, epilogue of item q - 1 */
        /* item q: unit pair u, panel i, na units */
        int32_t u = 2 * (q / nb), i = q % nb, na = u + 1 < nu ? 2 : 1;
        if (q < nsteps) {   /* its units' first channels (a lone unit: twice the same) */
            size_t s0 = (size_t)(g * kg + amx_unit0(16 * u, kg));
            size_t s1 = (size_t)(g * kg + amx_unit0(16 * (u + na - 1), kg));
            amx_kernels[p->in_type == OQCI_U8][na - 1][np[i] > 16](
                thin ? 1 : nq / 16, !thin && nq % 16 != 0, p->w + s0 * (size_t)p->kpad,
                p->w + s1 * (size_t)p->kpad, p->kpad, wtail + s0 * 64, wtail + s1 * 64,
                panel[i]);
        }
        if (q > 0) {   /* the epilogue of item q - 1 */
            const int32_t *c = (const int32_t *)(const void *)(
                work + (size_t)((q - 1) % AMX_SUMS_SLOTS) * AMX_SUMS_BYTES);
            int32_t up = 2 * ((q - 1) / nb), ip = (q - 1) % nb, nap = up + 1 < nu ? 2 : 1;
            for (j = 0; j < nap; j++) {
                /* unit j's new channels c0 .. c0 + n - 1, at rows r0 .. of c */
                int32_t c0 = 16 * (up + j), n = kg - c0 < 16 ? kg - c0 : 16, r;
                const int32_t *t = c + (size_t)(16 * j + c0 - amx_unit0(c0, kg)) * TILE_NR;
                if (!pre) {
                    f->store(p, t, TILE_NR, g * kg + c0, n, NULL, 0, segs[ip], nseg[ip], y);
                    continue;
                }
                for (r = 0; r < n; r += TILE_MR)   /* (no quads: the sums are all in t) */
                    oqcik_fused_rq(p, f, 0, panel[ip], NULL, t + (size_t)r * TILE_NR,
                                   g * kg + c0 + r, n - r < TILE_MR ? n - r : TILE_MR, pre,
                                   i16, segs[ip], nseg[ip], np[ip], y);
            }
        }
        if (q < nsteps)
            amx_store(na, np[i] > 16 ? 2 : 1,
                      (int32_t *)(void *)(work + (size_t)(q % AMX_SUMS_SLOTS) * AMX_SUMS_BYTES));
    }
}
#endif /* HAVE_AMX */

#if HAVE_VBMI
/* vpermb indices of the even bytes of a vector pair, in order: byte i = 2 i (0 .. 126). */
T_VBMI static inline __m512i even_idx(void) {
    return _mm512_set_epi8(126, 124, 122, 120, 118, 116, 114, 112, 110, 108, 106, 104, 102,
                           100, 98, 96, 94, 92, 90, 88, 86, 84, 82, 80, 78, 76, 74, 72, 70, 68,
                           66, 64, 62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34,
                           32, 30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
}

/* gather for the AMX family: runs of stride 1 or 2 up to 64 bytes long with one masked
 * load (2 n - 1 bytes at stride 2: nothing past the run is read), for stride 2 a vpermb
 * of the even bytes, and one masked store; longer or other runs as oqcik_gather__avx2. */
T_VBMI static void gather__avx512vbmi(const uint8_t *src, int64_t sstep, int32_t stride,
                                      int32_t n, uint8_t *dst, int64_t dstep, int32_t rows) {
    int32_t r;
    if (stride <= 2 && n <= 64 / stride && n > 0) {
        const __m512i even = even_idx();
        __mmask64 mo = n == 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
        __mmask64 mi = stride == 1 ? mo : ((__mmask64)1 << (2 * n - 1)) - 1;
        for (r = 0; r < rows; r++, src += sstep, dst += dstep) {
            __m512i v = _mm512_maskz_loadu_epi8(mi, src);
            if (stride == 2)
                v = _mm512_permutexvar_epi8(even, v);
            _mm512_mask_storeu_epi8(dst, mo, v);
        }
        return;
    }
    oqcik_gather__avx2(src, sstep, stride, n, dst, dstep, rows);
}

/* Family.runs for AMX: store_runs__avx512vnni, but where the runs are consecutive in one
 * image's planes (grid panels always are: the positions a grid drops are exactly those
 * between one output row's last pixel and the next row's first), one vpermb per row
 * moves the runs' bytes together, in order (the index: the panel column of each output,
 * built once as the first run's column + 0, 1, 2, ... plus, from each later run on, the
 * gap before it), and one masked
 * store writes the row's outputs. */
T_VBMI static void store_runs__avx512vbmi(const OqciConv *p, const uint8_t *q, int32_t k,
                                          int32_t nk, const Seg *segs, int nseg, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    __m512i idx = _mm512_setr_epi32(0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C,
                                    0x13121110, 0x17161514, 0x1B1A1918, 0x1F1E1D1C, 0, 0, 0,
                                    0, 0, 0, 0, 0);
    int32_t r, n = segs[0].len;
    uint8_t *d;
    int si;
    idx = _mm512_add_epi8(idx, _mm512_set1_epi8((char)segs[0].off));
    for (si = 1; si < nseg; si++) {
        const Seg *s = &segs[si], *b = &segs[si - 1];
        if (s->n != b->n || s->pix0 != b->pix0 + b->len)
            goto general;
        idx = _mm512_mask_add_epi8(idx, ~(((__mmask64)1 << n) - 1), idx,
                                   _mm512_set1_epi8((char)(s->off - b->off - b->len)));
        n += s->len;
    }
    d = (uint8_t *)y + (segs[0].n * p->out_ctotal + p->out_coff + k) * pix + segs[0].pix0;
    for (r = 0; r < nk; r++, d += pix)
        _mm512_mask_storeu_epi8(d, ((__mmask64)1 << n) - 1,
                                _mm512_permutexvar_epi8(idx, _mm512_castsi256_si512(LDU256(
                                                                 q + (size_t)r * TILE_NR))));
    return;
general:
    store_runs__avx512vnni(p, q, k, nk, segs, nseg, y);
}

/* Band panels of column stride 1 with VBMI (band_taps_ok: kernels at least 3 wide, their
 * taps inside 33 bytes, reductions up to 4 TAPS_MAXQ, so that the band stays in L1):
 * the taps of Family.pack_taps on the band, where a run's 32
 * outputs read one window of each kernel row (its bytes from the row's first tap on:
 * the run's length plus (k_w - 1) d_w, loaded with a byte mask).  Quad q's four elements
 * lie in kernel rows A = 4 q / k_w and A + 1 at row columns j0 = 4 q - A k_w, j0 + 1, ...
 * (past k_w: row B's columns from 0), so one pattern per j0 (k_w of them) places its
 * bytes and two vpermt2b of A's and B's windows make its 32 outputs (16 each), where
 * tr4_v32v takes four loads and four shuffles.  The elements past kdim are zeroed;
 * flip: s8 inputs packed as x ^ 0x80 (every byte, as tr4's flip does). */
static int band_taps_ok(const OqciConv *p) {
    return p->s_w == 1 && p->k_w >= 3 && (int64_t)(p->k_w - 1) * p->d_w <= 32 &&
           p->kpad <= 4 * TAPS_MAXQ && !is_flat(p);
}

T_VBMI static void pack_band_taps(const OqciConv *p, const Band *b, int64_t r0,
                                  const Seg *segs, int nseg, int32_t q0, int32_t nq,
                                  uint8_t *panel, int flip) {
    const int32_t kw = p->k_w, span = (kw - 1) * p->d_w;
    const __m512i fl = _mm512_set1_epi8(flip ? (char)0x80 : 0);
    const __m512i sixteen = _mm512_set1_epi8(16);
    const __m512i jv = _mm512_setr_epi32(0, 0x01010101, 0x02020202, 0x03030303, 0x04040404,
                                         0x05050505, 0x06060606, 0x07070707, 0x08080808,
                                         0x09090909, 0x0A0A0A0A, 0x0B0B0B0B, 0x0C0C0C0C,
                                         0x0D0D0D0D, 0x0E0E0E0E, 0x0F0F0F0F);
    uint32_t pat[BAND_MAX_KW];
    int32_t j0, e, si;
    for (j0 = 0; j0 < kw; j0++) {   /* element j0 + e: row A's column, else B's (+64) */
        pat[j0] = 0;
        for (e = 0; e < 4; e++)
            pat[j0] |= (uint32_t)(j0 + e < kw ? (j0 + e) * p->d_w : 64 + (j0 + e - kw) * p->d_w)
                       << (8 * e);
    }
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *base = b->data + ((int64_t)s->oh * p->s_h - p->p_t - r0) * b->cols + s->ow;
        int32_t len = s->len, q = q0, ra = 4 * q0 / kw;
        __mmask64 lm = len + span >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (len + span)) - 1;
        __mmask64 s0 = len >= 16 ? ~(__mmask64)0 : ((__mmask64)1 << (4 * len)) - 1;
        __mmask64 s1 = len <= 16 ? 0 : len >= 32 ? ~(__mmask64)0 : ((__mmask64)1 << (4 * (len - 16))) - 1;
        uint8_t *d = panel + (size_t)s->off * 4;
        j0 = 4 * q0 - ra * kw;
        for (; q < q0 + nq; q++, d += 128) {
            int32_t rb = (ra + 1) * kw < p->kdim ? ra + 1 : ra;
            __mmask64 live = 4 * q + 4 <= p->kdim ? ~(__mmask64)0
                             : 0x1111111111111111ull * (((__mmask64)1 << (p->kdim - 4 * q)) - 1);
            __m512i wa = _mm512_maskz_loadu_epi8(lm, base + b->koff[ra * kw]);
            __m512i wb = _mm512_maskz_loadu_epi8(lm, base + b->koff[rb * kw]);
            __m512i idx = _mm512_add_epi8(jv, _mm512_set1_epi32((int)pat[j0]));
            _mm512_mask_storeu_epi8(d, s0, _mm512_xor_si512(
                                               _mm512_maskz_permutex2var_epi8(live, wa, idx, wb), fl));
            if (s1)
                _mm512_mask_storeu_epi8(
                    d + 64, s1,
                    _mm512_xor_si512(_mm512_maskz_permutex2var_epi8(
                                         live, wa, _mm512_add_epi8(idx, sixteen), wb),
                                     fl));
            for (j0 += 4; j0 >= kw; j0 -= kw)
                ra++;
        }
    }
}

/* Family.tr4 with VBMI: tr4_v32v on rows read at stride 1, 4 shuffles for tr4_v32z's 12. */
#define TR4_V32V1(a, b, c, e, len, d, flip)                                              \
    tr4_v32v(a, b, c, e, _mm512_loadu_si512((const void *)pair_idx[0]), len, d, flip)
#define BAND_TAPS(flip)                                                                 \
    if (band_taps_ok(p)) {                                                              \
        pack_band_taps(p, b, r0, segs, nseg, q0, nq, panel, flip);                      \
        return;                                                                         \
    }
TR4_SET(avx512vbmi, T_VBMI, TR4_V32V1, BAND_TAPS)
#undef BAND_TAPS
#undef TR4_V32V1
#undef TR4_SET

#if HAVE_AMX
/* Family.pack_s2 for AMX (u8 panels as they are): per run and quad, four masked loads
 * of the 2 len - 1 bytes the run spans in its channels' rows (none past the run; channels
 * past kdim load nothing: zeros), then tr4_v32v on the even bytes (pair_idx[1]): 4
 * shuffles per 32 pixels of a quad, where the even bytes' vpermb and tr4_v32z took 16. */
T_VBMI static void pack_s2__amx(const OqciConv *p, const Geo *ge, const uint8_t *x, int32_t g,
                                const Seg *segs, int nseg, int32_t q0, int32_t nq,
                                uint8_t *panel) {
    const __m512i idx = _mm512_loadu_si512((const void *)pair_idx[1]);
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *base = x + (s->n * p->in_c + (int64_t)g * ge->cg) * ge->plane +
                              (int64_t)s->oh * p->s_h * p->in_w + 2 * (int64_t)s->ow;
        __mmask64 m = ((__mmask64)1 << (2 * s->len - 1)) - 1;   /* (len <= 32) */
        uint8_t *d = panel + (size_t)s->off * 4;
        int32_t q;
#define S2_ROW(e) _mm512_maskz_loadu_epi8(4 * q + (e) < p->kdim ? m : 0,                \
                                          base + (4 * q + (e) < p->kdim ? 4 * q + (e) : 0) * ge->plane)
        for (q = q0; q < q0 + nq; q++, d += 128)
            tr4_v32v(S2_ROW(0), S2_ROW(1), S2_ROW(2), S2_ROW(3), idx, s->len, d, 0);
#undef S2_ROW
    }
}
#endif /* HAVE_AMX */

/* Family.pack_taps (AMX and the VBMI VNNI family; Taps): per run, 16 outputs at a time
 * (columns ow .. ow + 15 of output row oh: input columns from col = ow s_w - p_l), per
 * quad the 64-byte windows at col of its rows A and B (masked loads: columns outside
 * the input and rows outside it, padding, load as zeros, and nothing outside the input
 * is read), one vpermt2b (elements past kdim zeroed), the flip, one masked store of the
 * run's 4 bytes per output.  Addresses are formed as integers: the window of a padded
 * column or row starts before the image, and only masked loads ever use it.  Where
 * every kernel row of the output row lies inside the input (inside), no row is
 * checked. */
T_VBMI static inline __attribute__((always_inline)) void
taps_quads(const OqciConv *p, const Taps *t, int32_t q0, int32_t nq, uintptr_t base,
           int64_t ih0, __mmask64 m, __mmask64 sm, __m512i jv, __m512i fl, uint8_t *d,
           int inside) {
    int32_t q;
    for (q = q0; q < q0 + nq; q++, d += 128) {
        __mmask64 ma = m, mb = m;
        if (!inside) {
            int64_t ra = ih0 + t->dh[q][0], rb = ih0 + t->dh[q][1];
            ma = ra >= 0 && ra < p->in_h ? m : 0;
            mb = rb >= 0 && rb < p->in_h ? m : 0;
        }
        __m512i a = _mm512_maskz_loadu_epi8(ma, (const void *)(base + (uintptr_t)t->off[q][0]));
        __m512i b = _mm512_maskz_loadu_epi8(mb, (const void *)(base + (uintptr_t)t->off[q][1]));
        __m512i idx = _mm512_add_epi8(jv, _mm512_set1_epi32((int)t->pat[q]));
        __m512i v = _mm512_maskz_permutex2var_epi8(t->live[q], a, idx, b);
        _mm512_mask_storeu_epi8(d, sm, _mm512_xor_si512(v, fl));
    }
}

T_VBMI static void pack_taps__avx512vbmi(const OqciConv *p, const Geo *ge, const Taps *t,
                                         const uint8_t *x, int32_t g, const Seg *segs,
                                         int nseg, int32_t q0, int32_t nq, uint8_t *panel) {
    const __m512i jv = _mm512_loadu_si512((const void *)t->j);
    const __m512i fl = _mm512_set1_epi8(t->flip ? (char)0x80 : 0);
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        int64_t ih0 = (int64_t)s->oh * p->s_h - p->p_t;
        int inside = ih0 >= 0 && ih0 + (int64_t)(p->k_h - 1) * p->d_h < p->in_h;
        uintptr_t img = (uintptr_t)(x + (s->n * p->in_c + (int64_t)g * ge->cg) * ge->plane);
        int32_t j0;
        for (j0 = 0; j0 < s->len; j0 += 16) {
            int32_t cnt = s->len - j0 < 16 ? s->len - j0 : 16;
            int64_t col = (int64_t)(s->ow + j0) * p->s_w - p->p_l;
            int64_t lo = col < 0 ? -col : 0, hi = p->in_w - col;
            __mmask64 m = hi >= 64 ? ~(__mmask64)0 : hi > 0 ? ((__mmask64)1 << hi) - 1 : 0;
            __mmask64 sm = cnt == 16 ? ~(__mmask64)0 : ((__mmask64)1 << (4 * cnt)) - 1;
            uintptr_t base = img + (uintptr_t)(ih0 * p->in_w + col);
            uint8_t *d = panel + (size_t)(s->off + j0) * 4;
            m = lo >= 64 ? 0 : m & ~(((__mmask64)1 << lo) - 1);
            if (inside)
                taps_quads(p, t, q0, nq, base, ih0, m, sm, jv, fl, d, 1);
            else
                taps_quads(p, t, q0, nq, base, ih0, m, sm, jv, fl, d, 0);
        }
    }
}

/* The AVX-512 VNNI family with VBMI's gather, runs, band packing and taps (vpermb,
 * vpermt2b): OQCI_ISA_AVX512VBMI, and the layers the AMX family does not take (amx_fits)
 * on a CPU with AMX. */
const Family oqcik_family_avx512vbmi = {
    .isa = OQCI_ISA_AVX512VBMI,
    FAMILY_AVX512VNNI_COMMON,
    .tr4 = {tr4_u8_s8__avx512vbmi, tr4_u8_u8__avx512vbmi},
    .gather = gather__avx512vbmi,
    .band_pack = {pack_band_s8__avx512vbmi, pack_band_u8__avx512vbmi},
    .runs = store_runs__avx512vbmi,
    .pack_taps = pack_taps__avx512vbmi,
};
#endif /* HAVE_VBMI */

#if HAVE_AMX
/* (no ukr, no ukr_rq_wide: the tiles do the whole reduction) */
static const Family family_amx = {
    .isa = OQCI_ISA_AMX,
    .mr = 32,
    .nr = 32,
    .esize = 1,
    .kbq = 1 << 20,
    .flip = -1,
    .tr4 = {tr4_u8_u8__avx512vbmi, tr4_u8_u8__avx512vbmi},
    .gather = gather__avx512vbmi,
    .store = oqcik_store_tile__avx2,
    .ukr_rq = UKR_RQ_AVX512VNNI,
    .band_pack = {pack_band_u8__avx512vbmi, pack_band_u8__avx512vbmi},
    .ukr_rq_acc = UKR_RQ_ACC_AVX512VNNI,
    .tiles = tiles__amx,
    .runs = store_runs__avx512vbmi,
    .pack_s2 = pack_s2__amx,
    .pack_taps = pack_taps__avx512vbmi,
    .rq_biased = 1,
    .wsum = oqcik_wsum__avx2,
};

/* Where oqcik_conv_amx's region starts: after wtab's kg + TILE_MR pointers. */
static uint8_t *amx_work(const OqciConv *p, void *scratch) {
    size_t panel, cbuf, band;
    gemm_scratch(p, HAVE_AMX, &panel, &cbuf, &band);
    return align_up((void *)(gemm_wtab(p, scratch, panel, cbuf, band) + p->out_c / p->group +
                             TILE_MR));
}

/* oqcik_conv_gemm with family_amx (amx_fits(p), the tile state granted): the weight tails
 * copied, the tiles configured for the call and released after it. */
void oqcik_conv_amx(const OqciConv *p, const void *x, void *y, void *scratch) {
    int32_t r = p->kpad % 64, k;
    if (r && p->kpad > 64) {   /* (thin: no tails, see amx_begin) */
        int8_t *wt = (int8_t *)(void *)(amx_work(p, scratch) + amx_tail_off(p));
        /* (zeros first, then the weights over them: 64 bytes of zeros are a few vector
         * stores, while 64 - r bytes, r unknown at compile time, would be a rep stosb
         * per channel) */
        for (k = 0; k < p->out_c; k++) {
            memset(wt + (size_t)k * 64, 0, 64);
            memcpy(wt + (size_t)k * 64, p->w + (size_t)k * (size_t)p->kpad + (p->kpad - r),
                   (size_t)r);
        }
    }
    amx_begin(p->kpad);
    oqcik_conv_gemm(p, &family_amx, x, y, scratch);
    amx_end();
}
#endif /* HAVE_AMX */

#if HAVE_AVXVNNI
/* ---- q8conv_4x24c4__avxvnni: 4 channels x 24 pixels, u8 panel ---------------------- */

#if OQCI_EMU_VNNI
/* acc + vpdpbusd(a (u8), b (s8)), exactly, in AVX2: 16-bit pairs, then pairs of pairs. */
T_AVX2 static __m256i dpbusd_emu(__m256i acc, __m256i a, __m256i b) {
    __m256i lo = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_castsi256_si128(a)),
                                   _mm256_cvtepi8_epi16(_mm256_castsi256_si128(b)));
    __m256i hi = _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm256_extracti128_si256(a, 1)),
                                   _mm256_cvtepi8_epi16(_mm256_extracti128_si256(b, 1)));
    return _mm256_add_epi32(acc, _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), 0xD8));
}
#define DPBUSD256(acc, a, b) dpbusd_emu(acc, a, b)
#else
#define DPBUSD256(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#endif

#define ACC4(X) X(0) X(1) X(2) X(3)

T_AVXVNNI static void q8conv_4x24c4__avxvnni(int32_t nq, const void *panel,
                                             const int8_t *const *w, int32_t *t, int acc, int32_t np, int32_t nk) {
    (void)np;   /* (computes whole panels) */
    const uint8_t *pp = (const uint8_t *)panel;
#define DECL(r)                                                                         \
    __m256i a##r##0 = _mm256_setzero_si256(), a##r##1 = _mm256_setzero_si256(),         \
            a##r##2 = _mm256_setzero_si256();
    ACC4(DECL)
#undef DECL
    int32_t q;
    for (q = 0; q < nq; q++, pp += 96) {
        __m256i p0 = LDU256(pp);
        __m256i p1 = LDU256(pp + 32);
        __m256i p2 = LDU256(pp + 64);
#define STEP(r)                                                                         \
    {                                                                                   \
        __m256i wb = _mm256_set1_epi32(load32(w[r] + 4 * q));                           \
        a##r##0 = DPBUSD256(a##r##0, p0, wb);                                           \
        a##r##1 = DPBUSD256(a##r##1, p1, wb);                                           \
        a##r##2 = DPBUSD256(a##r##2, p2, wb);                                           \
    }
        ACC4(STEP)
#undef STEP
    }
#define ST(o, v) STU256(t + (o), acc ? _mm256_add_epi32(LDU256(t + (o)), v) : v);
#define STORE(r)                                                                        \
    if (r < nk) { ST(r * TILE_NR, a##r##0) ST(r * TILE_NR + 8, a##r##1) ST(r * TILE_NR + 16, a##r##2) }
    ACC4(STORE)
#undef STORE
#undef ST
}

const Family oqcik_family_avxvnni = {
    .isa = OQCI_ISA_AVXVNNI,
    .mr = 4,
    .nr = 24,
    .esize = 1,
    .kbq = KBQ(24, 1),
    .flip = OQCI_S8,
    .ukr = q8conv_4x24c4__avxvnni,
    .tr4 = {oqcik_tr4_u8_s8__avx2, oqcik_tr4_u8_u8__avx2},
    .gather = oqcik_gather__avx2,
    .store = oqcik_store_tile__avx2,
    .wsum = oqcik_wsum__avx2,
};
#endif
