/* oqci_conv_amxt.c - the AMX family's kernel for thin 1x1 convs, oqcik_conv_amxt: AMX-INT8
 * tiles over reductions of 20 to 64 (amxt_fits in oqci_conv_int.h: the expand convs of
 * MobileNet-v2 and SqueezeNet, 20 to 48 input channels; the 1x1 / 2 downsample of
 * ResNet's first stage), with the fused int16 epilogue.  There the AVX-512 VNNI kernels
 * spend as many operations on the epilogue as on the dot products (at K = 32, 32
 * vpdpbusd and 14 epilogue operations per 64 outputs, both on the same two ports), and
 * oqcik_conv_amx's tiles, built for deep reductions (the generic panel, epilogue and
 * store machinery), spend more still.
 *
 * Here the tiles take the reduction as it is: A tiles (16 channels' weight rows, as
 * oqci.h lays them out) of kpad bytes per row, B tiles of kpad / 4 quad rows (16 output
 * positions), so one tdpbssd / tdpbsud per 16 x 16 outputs whatever kpad.  The panels
 * are packed straight from the input planes (amxt_pack: at column stride 1 or 2; no
 * band, no copy).  The C tiles start from the
 * bias rather than zero (a tile load of 16 rows of 16 copies of each channel's constant,
 * which holds RQ_BIAS in modes RQ_I16B and RQ_I16BN: rq_mode), so the sums leave the
 * tiles ready for rq64, 14 operations per 64 outputs (RQ_I16BN).  A step is 32 channels
 * x 32 output positions (tiles 0-3 its sums, 4-5 the weights, 6-7 the panel); its sums go
 * to one of two slots of scratch, and its epilogue runs after the next step's dot
 * products were issued and before their tile stores (loads issued after a tile store
 * wait for it).  The tile unit and the vector epilogue overlap little, so at reductions
 * of 16 the tiles save less than their epilogue costs: those stay with AVX-512 VNNI.
 * Exact: the tile sums are int32 sums of at most 64 products plus the bias (no overflow:
 * rq_pre checks bias_may_overflow for every channel), the same integers as every other
 * path's, and rq64 is oqci_requant's bits under rq_mode's conditions.  Where they fail
 * (RQ_F32, a bias that may overflow) the kernel returns 0 before it writes anything and
 * the conv takes the general path. */
#include "oqci_conv_x86_int.h"

const char OQCIK_CFG(amxt) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

#if HAVE_AMX && HAVE_DWZ

/* Keeps the compiler from moving memory accesses across the tile loads and stores (asm
 * statements that do not say which memory they touch). */
#define AMXT_FENCE() __asm__ volatile("" : : : "memory")

/* ldtilecfg: tiles 0-3 16 rows of 64 bytes (sums), 4-5 16 rows of kpad bytes (weights),
 * 6-7 kpad / 4 rows of 64 bytes (the panel's quads of 16 pixels). */
T_AMX static void amxt_begin(int32_t kpad) {
    unsigned char c[64];
    int i;
    memset(c, 0, sizeof c);
    c[0] = 1;
    for (i = 0; i < 8; i++) {
        c[16 + 2 * i] = (unsigned char)(i == 4 || i == 5 ? kpad : 64);   /* (uint16 LE) */
        c[48 + i] = (unsigned char)(i >= 6 ? kpad / 4 : 16);
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(c) : "memory");
}

T_AMX static void amxt_end(void) {
    __asm__ volatile("tilerelease" : : : "memory");
}

/* The panel's two B tiles (pixels 0-15 and 16-31, rows of 128 bytes). */
T_AMX static inline __attribute__((always_inline)) void amxt_panel(const uint8_t *panel) {
    AMXT_FENCE();
    _tile_loadd(6, panel, 128);
    _tile_loadd(7, panel + 64, 128);
}

/* One unit's tile work: sums tiles C0, C1 from the constants' rows b, weight tile A from
 * the rows a (stride kpad), against the panel's tiles 6 and 7 (tile numbers: literals, the
 * intrinsics spell them into the instruction). */
#define AMXT_UNIT(C0, C1, A, b, a)                                                      \
    {                                                                                   \
        _tile_loadd(C0, b, 64);                                                         \
        _tile_loadd(C1, b, 64);                                                         \
        _tile_loadd(A, a, kpad);                                                        \
        if (s8) {                                                                       \
            _tile_dpbssd(C0, A, 6);                                                     \
            _tile_dpbssd(C1, A, 7);                                                     \
        } else {                                                                        \
            _tile_dpbsud(C0, A, 6);                                                     \
            _tile_dpbsud(C1, A, 7);                                                     \
        }                                                                               \
    }

/* One step's tile work: units a0 (and, two, a1) of 16 weight rows from their constants'
 * rows b0, b1 (16 int32 each) into tiles 0-3.  s8: s8 inputs. */
T_AMX static inline __attribute__((always_inline)) void
amxt_dp(const int32_t *b0, const int32_t *b1, const int8_t *a0, const int8_t *a1,
        int64_t kpad, int two, int s8) {
    AMXT_FENCE();
    AMXT_UNIT(0, 1, 4, b0, a0)
    if (two)
        AMXT_UNIT(2, 3, 5, b1, a1)
    AMXT_FENCE();
}
#undef AMXT_UNIT

/* The step's sums to slot (32 rows of 32 int32: unit 0's channels in rows 0-15, unit 1's
 * in 16-31). */
T_AMX static inline __attribute__((always_inline)) void amxt_store(int two, int32_t *slot) {
    AMXT_FENCE();
    _tile_stored(0, slot, 4 * TILE_NR);
    _tile_stored(1, slot + 16, 4 * TILE_NR);
    if (two) {
        _tile_stored(2, slot + 16 * TILE_NR, 4 * TILE_NR);
        _tile_stored(3, slot + 16 * TILE_NR + 16, 4 * TILE_NR);
    }
    AMXT_FENCE();
}

/* A step whose tile work was issued: its sums, its units' first channels, where its
 * outputs go (channel k's at y + k pix), and its pixels. */
typedef struct AmxtStep {
    const int32_t *slot;
    const RqPre *pre;   /* (the group's first channel's) */
    int32_t s[2], na, np;
    uint8_t *y;
} AmxtStep;

/* A step's epilogue: each unit's 16 rows in pairs, rq64 (mode: u8, biased, nomin) on a
 * pair's 2 x 32 sums, each row's 32 bytes stored (np < 32: masked).  A unit that overlaps
 * the one before it (the group's last) stores the shared channels again, the same bytes. */
T_AMX static inline __attribute__((always_inline)) void
amxt_epilogue(const AmxtStep *st, int64_t pix, __m512i lo2w, __m512i hi2w, int u8, int biased,
              int nomin) {
    __mmask64 m = ((__mmask64)1 << st->np) - 1;   /* (np < 32) */
    int32_t j, r;
    for (j = 0; j < st->na; j++)
        for (r = 0; r < 16; r += 2) {
            const int32_t *t = st->slot + (size_t)(16 * j + r) * TILE_NR;
            const RqPre *c = st->pre + st->s[j] + r;
            __m512 m0 = _mm512_set1_ps(c[0].m2), m1 = _mm512_set1_ps(c[1].m2);
            __m512 c0 = biased ? _mm512_set1_ps(c[0].c2) : _mm512_setzero_ps();
            __m512 c1 = biased ? _mm512_set1_ps(c[1].c2) : _mm512_setzero_ps();
            __m512i b = rq64(_mm512_loadu_si512((const void *)t),
                             _mm512_loadu_si512((const void *)(t + 16)),
                             _mm512_loadu_si512((const void *)(t + TILE_NR)),
                             _mm512_loadu_si512((const void *)(t + TILE_NR + 16)), m0, m0, m1,
                             m1, c0, c0, c1, c1, lo2w, hi2w, u8, biased, nomin);
            uint8_t *d = st->y + (st->s[j] + r) * pix;
            if (st->np >= 32) {
                STU256(d, _mm512_castsi512_si256(b));
                STU256(d + pix, _mm512_extracti64x4_epi64(b, 1));
            } else {
                _mm512_mask_storeu_epi8(d, m, b);
                _mm512_mask_storeu_epi8(d + pix, m,
                                        _mm512_castsi256_si512(_mm512_extracti64x4_epi64(b, 1)));
            }
        }
}

/* Packs the panel of the np (<= 32) output positions from P0 (an index into the output
 * plane, rows of ow_n positions): per run of them inside one output row, per quad, the
 * four input channels' rows (channel k's plane at k plane from the run's first input, at
 * row stride rs and column stride s_w; channels past the group's load nothing: zeros) by
 * masked loads of the bytes the run spans, transposed by tr4_v32v (idx: pair_idx[s_w -
 * 1]).  A partial panel's columns past np keep what the buffer held: their sums are
 * never stored. */
T_VBMI __attribute__((noinline)) static void amxt_pack(const OqciConv *p, const uint8_t *xg,
                                                       int64_t plane, int64_t ow_n, int64_t rs,
                                                       int64_t P0, int32_t np, uint8_t *panel) {
    const int32_t sw = p->s_w, kdim = p->kdim, nq = p->kpad / 4;   /* (locals: the
                                                                     * byte stores alias p) */
    const __m512i idx = _mm512_loadu_si512((const void *)pair_idx[sw - 1]);
    int64_t oh = P0 / ow_n, ow = P0 % ow_n;
    int32_t off = 0, len, q;
    while (off < np) {
        const uint8_t *b;
        __mmask64 m;
        len = ow_n - ow < np - off ? (int32_t)(ow_n - ow) : np - off;
        b = xg + oh * rs + ow * sw;
        m = ((__mmask64)1 << ((len - 1) * sw + 1)) - 1;   /* (at most 63 bytes) */
        for (q = 0; q < kdim / 4; q++)   /* (whole quads) */
            tr4_v32v(_mm512_maskz_loadu_epi8(m, b + 4 * q * plane),
                     _mm512_maskz_loadu_epi8(m, b + (4 * q + 1) * plane),
                     _mm512_maskz_loadu_epi8(m, b + (4 * q + 2) * plane),
                     _mm512_maskz_loadu_epi8(m, b + (4 * q + 3) * plane), idx, len,
                     panel + (size_t)q * 128 + (size_t)off * 4, 0);
#define AMXT_ROW(e)                                                                     \
    _mm512_maskz_loadu_epi8(4 * q + (e) < kdim ? m : 0,                                  \
                            b + (4 * q + (e) < kdim ? 4 * q + (e) : 0) * plane)
        if (q < nq)   /* (the last quad, part past kdim) */
            tr4_v32v(AMXT_ROW(0), AMXT_ROW(1), AMXT_ROW(2), AMXT_ROW(3), idx, len,
                     panel + (size_t)q * 128 + (size_t)off * 4, 0);
#undef AMXT_ROW
        off += len;
        ow += len;
        if (ow == ow_n) {
            ow = 0;
            oh++;
        }
    }
}

/* The kernel's loops for one epilogue mode: per image, group and panel of 32 output
 * positions, the panel packed (amxt_pack) into one of two buffers, then per pair of 16-channel
 * units one step, whose epilogue waits for the next step's tile work. */
T_AMX static inline __attribute__((always_inline)) void
amxt_run(const OqciConv *p, const uint8_t *x, uint8_t *y, uint8_t *work, const RqPre *pre,
         const int32_t *brow, int u8, int biased, int nomin) {
    const __m512i lo2w = _mm512_set1_epi16((short)(2 * p->lo));
    const __m512i hi2w = _mm512_set1_epi16((short)(2 * p->hi));
    int64_t pix = (int64_t)p->out_h * p->out_w, plane = (int64_t)p->in_h * p->in_w, n, px0;
    int32_t kg = p->out_c / p->group, cg = p->in_c / p->group;
    int32_t nu = (kg + 15) / 16, g, u;
    int s8 = p->in_type == OQCI_S8, pb = 0, sb = 0, pending = 0, flat = is_flat(p);
    /* output positions in rows of ow_n (flat: one row of pix), input rows rs bytes apart */
    int64_t ow_n = flat ? pix : p->out_w, rs = (int64_t)p->s_h * p->in_w;
    AmxtStep st = {0}, prev = {0};
    for (n = 0; n < p->batch; n++)
        for (g = 0; g < p->group; g++) {
            const uint8_t *xg = x + (n * p->in_c + (int64_t)g * cg) * plane;
            uint8_t *yg = y + (n * p->out_ctotal + p->out_coff + (int64_t)g * kg) * pix;
            for (px0 = 0; px0 < pix; px0 += 32) {
                int32_t np = pix - px0 < 32 ? (int32_t)(pix - px0) : 32;
                uint8_t *panel = work + (size_t)pb * AMXT_PANEL;
                pb ^= 1;
                amxt_pack(p, xg, plane, ow_n, rs, px0, np, panel);
                amxt_panel(panel);
                for (u = 0; u < nu; u += 2) {
                    st.na = u + 1 < nu ? 2 : 1;
                    st.s[0] = amx_unit0(16 * u, kg);
                    st.s[1] = amx_unit0(16 * (u + 1), kg);
                    st.np = np;
                    st.y = yg + px0;
                    st.pre = pre + (size_t)g * kg;
                    st.slot = (const int32_t *)(const void *)(work + 2 * AMXT_PANEL +
                                                              (size_t)sb * AMXT_SLOT);
                    sb ^= 1;
                    amxt_dp(brow + (size_t)(g * kg + st.s[0]) * 16,
                            brow + (size_t)(g * kg + st.s[1]) * 16,
                            p->w + (size_t)(g * kg + st.s[0]) * (size_t)p->kpad,
                            p->w + (size_t)(g * kg + st.s[1]) * (size_t)p->kpad, p->kpad,
                            st.na == 2, s8);
                    if (pending)
                        amxt_epilogue(&prev, pix, lo2w, hi2w, u8, biased, nomin);
                    amxt_store(st.na == 2, (int32_t *)(uintptr_t)st.slot);
                    prev = st;
                    pending = 1;
                }
            }
        }
    if (pending)
        amxt_epilogue(&prev, pix, lo2w, hi2w, u8, biased, nomin);
}

T_AMX int oqcik_conv_amxt(const OqciConv *p, const void *x, void *y, void *scratch) {
    uint8_t *work = align_up(scratch);
    int32_t *brow = (int32_t *)(void *)(work + 2 * AMXT_PANEL + 2 * AMXT_SLOT);
    RqPre *pre = (RqPre *)(void *)(brow + (size_t)p->out_c * 16);
    int u8 = p->out_type == OQCI_U8, mode = rq_pre(p, NULL, 1, pre);   /* (no correction) */
    int32_t k;
    if (mode < 0 || mode == RQ_F32)
        return 0;
    for (k = 0; k < p->out_c; k++)
        _mm512_storeu_si512((void *)(brow + (size_t)k * 16), _mm512_set1_epi32(pre[k].add));
    amxt_begin(p->kpad);
    if (u8 && mode == RQ_I16BN)
        amxt_run(p, (const uint8_t *)x, (uint8_t *)y, work, pre, brow, 1, 1, 1);
    else if (u8 && mode == RQ_I16B)
        amxt_run(p, (const uint8_t *)x, (uint8_t *)y, work, pre, brow, 1, 1, 0);
    else if (u8)
        amxt_run(p, (const uint8_t *)x, (uint8_t *)y, work, pre, brow, 1, 0, 0);
    else
        amxt_run(p, (const uint8_t *)x, (uint8_t *)y, work, pre, brow, 0, 0, 0);
    amxt_end();
    return 1;
}

#endif /* HAVE_AMX && HAVE_DWZ */
