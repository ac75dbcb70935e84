/* oqci_conv_int.h - internal header of the INT8 conv library (not API: that is oqci.h).
 * The library is one file per kernel family (oqci_conv.c has the overview); this header
 * holds what several of them need: which families the build has and their target
 * attributes, the sizes, the scratch layout (worked out here once, so that
 * oqci_conv_scratch and the kernels that use the scratch cannot disagree), the SIMD
 * GEMM's types (Seg, Geo, Band, RqPre, Family and the function types of its members),
 * small helpers (static inline: each file that uses one gets its copy, and the
 * always_inline ones are inlined into the kernels' loops), and at the
 * end what each file exports to the others, all with the prefix oqcik_.  The files call
 * each other in one direction only, from the entry points down to the kernels' common
 * parts (each calls only files listed below it):
 *   oqci_conv.c          the entry points, family selection, the portable family
 *   oqci_conv_avx512.c   oqcik_family_avx512vnni, oqcik_family_avx512vbmi,
 *                        oqcik_family_avxvnni, oqcik_conv_amx, oqcik_amx_permit
 *   oqci_conv_avx2.c     oqcik_family_avx2, oqcik_family_avx2n, oqcik_conv_gemv_avx2 and
 *                        the pieces the other x86 families reuse: oqcik_tr4_u8_s8__avx2,
 *                        oqcik_tr4_u8_u8__avx2, oqcik_gather__avx2, oqcik_store_tile__avx2,
 *                        oqcik_wsum__avx2
 *   oqci_conv_gemm.c     the families' GEMM driver: oqcik_conv_gemm, oqcik_make_segs,
 *                        oqcik_fused_rq, oqcik_store_runs; and oqcik_im2col
 *   oqci_conv_avx512_ukr.c  oqcik_q8conv_8x32c4__avx512vnni and its fused epilogues
 *                        (_rq, _rqt, _rqw), oqcik_gemv4__avx512vnni
 *   oqci_conv_dwx86.c    oqcik_conv_dwf__avx2, oqcik_conv_dwflat__avx512vnni,
 *                        oqcik_conv_dws2flat__avx512vnni and their conditions
 *                        oqcik_dwflat_ok, oqcik_dws2flat_ok
 *   oqci_conv_dwq.c      oqcik_conv_dw3q__avx512vbmi, oqcik_conv_dwkq__avx512vbmi and
 *                        their conditions oqcik_dw3q_ok, oqcik_dwkq_ok; oqcik_dw3q_geo,
 *                        oqcik_dwkq_bytes
 *   oqci_conv_amxt.c     oqcik_conv_amxt (its condition amxt_fits, below)
 *   oqci_conv_neon.c     oqcik_family_neondot, oqcik_conv_dw__neondot
 * The GEMM driver knows no ISA: what differs between families (kernels, packers, tails,
 * grid policy, weight sums) is a slot of their Family table.  Each conv file but
 * oqci_conv.c defines its configuration object OQCIK_CFG(file) (see oqci_conv_cfg_int.h:
 * every conv file must be compiled with the same flags).
 * oqci_conv_x86_int.h adds the x86 vector requantization. */
#ifndef OQCI_CONV_INT_H
#define OQCI_CONV_INT_H

#include "oqci_conv_cfg_int.h"   /* (oqci.h, the families compiled in, OQCIK_CFG) */

/* ---- sizes --------------------------------------------------------------------------- */

#define CONV_ROWS 16        /* portable: output pixels unfolded per scratch fill */
#define KBLOCK 512          /* SIMD GEMM: reduction elements per packed panel block */
#define TILE_MR 8           /* largest microkernel tile: channels */
#define TILE_NR 32          /* largest microkernel tile: pixels (tile row stride) */
#define PANEL_BYTES_PER_K 56   /* largest nr * element size (AVX2: 28 x int16) */
#define KBLOCK_Z 1152       /* AVX-512 (32-pixel byte panels): reduction elements per block
                             * (36 KB: 3x3 convs of 128 channels in one block, fused) */
/* A family's quads per K block: as many as fill the panel bytes of KBLOCK int16 x 28 */
#define KBQ(nr, esize) (KBLOCK * PANEL_BYTES_PER_K / (4 * (nr) * (esize)))
#define GEMV_MAX_PIX 8      /* fewer pixels per group than this: dot-product path */
#define DOT_LAST_MINK 512   /* reductions from which a panel's last pixel may be a dot product */
#define DW_MAX_TAPS 64      /* larger depthwise kernels go through the GEMM */
#define DW_VEC 16           /* outputs per depthwise step (the plane's column rounding) */
#define DWF_MAXK 7          /* depthwise: the largest K x K of the AVX-512 flat kernels */
#define DWFLAT_MASKS 3072   /* their column-wrap masks at stride 1: ceil(H W / 16) K at most
                             * (6 KB of stack; 3x3 up to 128x128) */
#define DW_BUF 1024         /* depthwise: sums of output rows computed per store */
#define ALIGN 64
#define BAND_MAX 65536      /* SIMD GEMM: largest band of padded input rows (bytes) */
#define BAND_EXTRA 6        /* SIMD GEMM: output rows a band holds beyond one panel's */
#define BAND_MAX_KW 64      /* SIMD GEMM: widest kernel a band serves (pack_band) */

static inline int32_t sat32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : (int32_t)v;
}

static inline int64_t round_up(int64_t a, int64_t b) {
    return (a + b - 1) / b * b;
}

#if HAVE_AVX2 || HAVE_NEONDOT
static inline int32_t load32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint8_t *align_up(void *p) {
    uintptr_t a = (uintptr_t)p;
    return (uint8_t *)p + ((ALIGN - a % ALIGN) % ALIGN);
}

/* Zeros for padding rows of a panel (never written). */
static const uint8_t zero_row[32];

/* ceil(a / b) for b > 0 and any sign of a. */
static inline int64_t cdiv(int64_t a, int64_t b) {
    return a >= 0 ? (a + b - 1) / b : -(-a / b);
}
#endif

/* Stores one output q (from rq1): y element o (out_type: a byte, or with accumulator
 * outputs, OQCI_S32, an int32). */
static inline void put_q(const OqciConv *p, void *y, int64_t o, int32_t q) {
    oqci_store_q(y, p->out_type, o, q);
}

/* The scalar epilogue of channel k's accumulator v (bias added, saturated to int32):
 * oqci_requant(v) for 8-bit outputs; v clamped to [lo, hi] for accumulator outputs
 * (OQCI_S32), whose rq is not read (oqci.h). */
static inline int32_t rq1(const OqciConv *p, int32_t v, int32_t k) {
    if (p->out_type == OQCI_S32)
        return v < p->lo ? p->lo : v > p->hi ? p->hi : v;
    return oqci_requant(v, &p->rq, k, p->lo, p->hi);
}

/* ---- scratch of the SIMD paths (needed by every build: see oqci_conv_scratch) ---- */

/* 1x1 / stride 1 / unpadded: the input planes are the unfolded matrix's rows. */
static inline int is_flat(const OqciConv *p) {
    return p->k_h == 1 && p->k_w == 1 && p->s_h == 1 && p->s_w == 1 && p->p_t == 0 &&
           p->p_l == 0 && p->out_h == p->in_h && p->out_w == p->in_w &&
           (int64_t)p->in_h * p->in_w <= INT32_MAX;
}

/* The band of zero-padded input rows a panel reads (oqcik_conv_gemm, convs that are not
 * flat): at most `rows` rows of `cols` columns per input channel of the group (rows:
 * the output rows a run of TILE_NR pixels can touch, widened by the kernel; cols: the
 * padded columns any output reads).  Bytes, or 0 when above BAND_MAX (the panels are
 * then unfolded from x directly). */
static inline int grid_ok(const OqciConv *p);
static inline size_t band_dims(const OqciConv *p, int64_t *rows, int64_t *cols) {
    int64_t need = (TILE_NR - 1) / p->out_w + 2, extra, bytes = 0;
    *cols = (int64_t)(p->out_w - 1) * p->s_w + (int64_t)(p->k_w - 1) * p->d_w + 1;
    /* BAND_EXTRA more output rows when they fit: a band filled once then serves the
     * panels of several output rows (oqcik_conv_gemm refills it only when a panel needs rows
     * outside it) */
    for (extra = BAND_EXTRA;; extra = 0) {
        int64_t spanned = need + extra < p->out_h ? need + extra : p->out_h;
        *rows = (spanned - 1) * p->s_h + (int64_t)(p->k_h - 1) * p->d_h + 1;
        bytes = (int64_t)(p->in_c / p->group) * *rows * *cols;
        if (bytes <= BAND_MAX || extra == 0)
            break;
    }
    if (is_flat(p) || bytes > BAND_MAX || p->k_w > BAND_MAX_KW)
        return 0;
    if (grid_ok(p))   /* (grid panels: a last row's dropped positions read this far on) */
        bytes += (int64_t)(p->k_w - 1) * p->d_w;
    return (size_t)round_up(bytes, ALIGN);
}

/* Grid panels (oqcik_conv_gemm) for stride-1 convs with padding columns and short rows: the
 * band holds each channel's rows row-major, cols bytes apart, so the positions oh cols
 * + ow of the "grid" (ow < cols) read the band at one offset per reduction element, and
 * TILE_NR consecutive positions make a panel that one transpose per quad packs whatever
 * rows it spans (a panel of outputs packs one run per output row).  Positions with ow >=
 * out_w are computed and dropped: (cols - out_w) / cols more work, against out_w wide
 * runs that leave vectors partly empty.  Applies with a band (band_dims) to rows narrower
 * than GRID_MAX_W. */
#define GRID_MAX_W 64
static inline int grid_ok(const OqciConv *p) {
    int64_t drop = (int64_t)(p->k_w - 1) * p->d_w;   /* (per row: < TILE_NR / 2, so
                                                       * every panel has outputs) */
    return p->s_h == 1 && p->s_w == 1 && p->out_w < GRID_MAX_W && p->k_w <= BAND_MAX_KW &&
           drop > 0 && drop < TILE_NR / 2 && 2 * drop <= p->out_w && !is_flat(p);
}

/* A flat conv whose panels the band packer reads straight from the input (Band.data):
 * one band row per input channel, the image's plane (its offsets fit int32). */
static inline int flat_table(const OqciConv *p) {
    return is_flat(p) && (int64_t)p->kpad * p->in_h * p->in_w <= INT32_MAX;
}

/* The AMX path (oqcik_conv_amx) may run this conv, on some build and CPU: groups of at least
 * AMX_MIN_KG channels (every tile row a real channel), sums that fit int32, reductions
 * deeper than 32 (at most 32 of a chunk's 64 would be real, half the tile work wasted:
 * the AVX-512 VNNI kernels take those). */
#define AMX_MIN_KG 16
#define RQ_WIDE_MAXQ 32   /* (Family.ukr_rq_wide: reductions up to 128) */
#define AMX_SUMS_BYTES (32 * TILE_NR * 4)   /* one panel's tile sums: 32 channels */
#define AMX_SUMS_SLOTS 2                    /* (tiles__amx alternates between them) */
#define AMX_BATCH_BYTES 65536               /* panels packed before a burst of tile work */
#define AMX_BATCH_MAX 8
/* amx_work's region: the sums slots (and TILE_MR rows the epilogue may read past the
 * last), then the batch's panels after the first, then the weight tails */
#define AMX_PANELS_OFF (AMX_SUMS_SLOTS * AMX_SUMS_BYTES + TILE_MR * TILE_NR * 4)
static inline int amx_fits(const OqciConv *p) {
    return p->out_c / p->group >= AMX_MIN_KG && p->kpad > 32 && p->kpad <= OQCI_KCHUNK;
}
/* The first channel of the AMX tile unit that starts at channel c0 of a group of kg (>=
 * 16): the last unit is shifted to end at the group's last channel, so every tile row is
 * a real channel (the overlap is computed twice and gives the same bytes). */
static inline int32_t amx_unit0(int32_t c0, int32_t kg) {
    return c0 < kg - 16 ? c0 : kg - 16;
}

/* A fused epilogue's per-channel constants, worked out once per oqcik_conv_gemm call: the
 * correction plus the bias (mod 2^32: the fused condition excludes overflow; plus
 * RQ_BIAS in modes RQ_I16B, RQ_I16BN), 2 M and (those modes) -2^23 * 2 M. */
typedef struct RqPre {
    int32_t add;
    float m2;
    float c2;
} RqPre;

/* oqcik_conv_amxt (oqci_conv_amxt.c): 1x1 convs with reductions of 20 to AMXT_MAXK
 * elements (at 16 the AVX-512 VNNI kernels are as fast), 16 channels or more per group,
 * 8-bit outputs, float requantization; unpadded, column stride 1 or 2 (is_flat, or
 * strided like ResNet's first downsample).  Not convs with taps (a network's stem): the
 * tile work lowers the core's clock for the rest of the run, which costs the later
 * layers more than the stem gains.  Its scratch: two panels (kpad / 4 quads of 32 pixels), two slots
 * of step sums (32 x 32 int32), then per channel a row of 16 copies of its sums' start
 * and its RqPre. */
/* 1 where the float fast paths may run: builds with float, in both requantization modes
 * (fixed mode's multipliers are float32s giving the same bits: oqci_rq_mult). */
#ifndef OQCI_NO_FLOAT
#define RQ_FLOAT_OK 1
#else
#define RQ_FLOAT_OK 0
#endif

#define AMXT_MAXK 64
#define AMXT_PANEL (AMXT_MAXK / 4 * 128)
#define AMXT_SLOT (32 * TILE_NR * 4)
static inline int amxt_fits(const OqciConv *p) {
    int inside = p->k_h == 1 && p->k_w == 1 && (p->s_w == 1 || p->s_w == 2) && p->p_t == 0 &&
                 p->p_l == 0 && (int64_t)(p->out_h - 1) * p->s_h < p->in_h &&
                 (int64_t)(p->out_w - 1) * p->s_w < p->in_w;
    return (is_flat(p) || inside) && p->kpad > 16 && p->kpad <= AMXT_MAXK &&
           p->out_c / p->group >= 16 && p->out_type != OQCI_S32 && RQ_FLOAT_OK;
}
static inline size_t amxt_scratch(const OqciConv *p) {
    return ALIGN + 2 * AMXT_PANEL + 2 * AMXT_SLOT + (size_t)p->out_c * (64 + sizeof(RqPre));
}

/* Bytes of one AMX panel (the whole reduction, rows of 32 pixels) and how many panels
 * oqcik_conv_gemm packs before it runs the tiles over them: the tile unit of Sapphire Rapids
 * runs a short burst several times slower after the core has spent a microsecond or so
 * on other work, so panels go to it in batches of up to AMX_BATCH_MAX, within
 * AMX_BATCH_BYTES. */
static inline size_t amx_panel_bytes(const OqciConv *p) {
    return (size_t)round_up(p->kpad, 64) * 32;
}
static inline int amx_batch(const OqciConv *p) {
    size_t n = AMX_BATCH_BYTES / amx_panel_bytes(p);
    return n < 1 ? 1 : n > AMX_BATCH_MAX ? AMX_BATCH_MAX : (int)n;
}

/* oqcik_conv_amx's region after oqcik_conv_gemm's: alignment, the tile sums (AMX_SUMS_SLOTS of
 * AMX_SUMS_BYTES, and TILE_MR rows more that the epilogue may read past the last),
 * the batch's panels after the first (which is oqcik_conv_gemm's) and, when kpad is not a
 * multiple of 64, every channel's last kpad % 64 weight bytes zero-padded to 64 (the
 * last chunk's A tiles). */
static inline size_t amx_work_bytes(const OqciConv *p, int amx) {
    int nb;
    if (!amx || !amx_fits(p))
        return 0;
    nb = amx_batch(p);
    return ALIGN + AMX_PANELS_OFF + (size_t)(nb - 1) * amx_panel_bytes(p) +
           (p->kpad % 64 ? (size_t)p->out_c * 64 : 0);
}

/* Scratch of oqcik_conv_gemm: aligned panel block, the deep-K tile buffer (int32 per K block
 * sum, int64 above OQCI_KCHUNK), the band and its row offsets (Band.koff: int32 per
 * reduction element), the per-channel corrections (int32) and fused epilogue constants
 * (RqPre), the weight row pointers of a group's channels (oqcik_conv_gemm's wtab), oqcik_conv_amx's
 * region.  amx: with the AMX family's needs (HAVE_AMX where the layout is used). */
static inline size_t gemm_scratch(const OqciConv *p, int amx, size_t *panel, size_t *cbuf,
                                  size_t *band) {
    int64_t kb = p->kpad < KBLOCK ? p->kpad : KBLOCK, rows, cols;
    int64_t kz = p->kpad < KBLOCK_Z ? p->kpad : KBLOCK_Z;
    int64_t kg = p->out_c / p->group;
    *panel = (size_t)round_up(kb * PANEL_BYTES_PER_K > kz * 32 ? kb * PANEL_BYTES_PER_K : kz * 32,
                              ALIGN);
    *cbuf = p->kpad > KBLOCK ? (size_t)(round_up(kg, TILE_MR) * TILE_NR *
                                        (p->kpad > OQCI_KCHUNK ? 8 : 4))
                             : 0;
    if (amx && amx_fits(p) && amx_panel_bytes(p) > *panel)
        *panel = amx_panel_bytes(p);   /* (the whole reduction) */
    *band = band_dims(p, &rows, &cols);
    if (*band || flat_table(p))
        *band += (size_t)round_up((int64_t)p->kpad * 4, ALIGN);
    return ALIGN + *panel + *cbuf + *band + (size_t)p->out_c * 16 +
           (size_t)(kg + TILE_MR) * sizeof(const int8_t *) + 8 + amx_work_bytes(p, amx);
}

/* Plane geometry of a depthwise conv: rows (padded input rows read), phase row width
 * (outputs rounded up to DW_VEC plus the largest tap shift), phases (s_w). */
typedef struct DwGeo {
    int32_t rows, width, phases;
    int32_t taps;                  /* k_h * k_w */
} DwGeo;

static inline void dw_geo(const OqciConv *p, DwGeo *d) {
    d->rows = (p->out_h - 1) * p->s_h + (p->k_h - 1) * p->d_h + 1;
    d->width = (int32_t)round_up(p->out_w, DW_VEC) + (p->k_w - 1) * p->d_w / p->s_w;
    d->phases = p->s_w;
    d->taps = p->k_h * p->k_w;
}

/* AVX-512's stride-2 phase planes (oqcik_conv_dws2flat__avx512vnni, K x K kernels): four
 * of OH + (K - 1) / 2 rows of S = OW + (K - 1) / 2, a row and a vector of slack. */
static inline int64_t dws2_floats(const OqciConv *p) {
    int64_t sr = (int64_t)p->out_w + (p->k_w - 1) / 2;
    return 4 * ((int64_t)p->out_h + (p->k_h - 1) / 2) * sr + sr + 32;
}

#if HAVE_NEONDOT || !defined(OQCI_NO_FLOAT)
/* Element offset of tap (i, j) in the plane (output (0, 0)); output (oh, ow) adds
 * oh * s_h * width + ow. */
static inline int64_t dw_tap_off(const OqciConv *p, const DwGeo *d, int32_t i, int32_t j) {
    int32_t u = j * p->d_w;
    return ((int64_t)(u % p->s_w) * d->rows + (int64_t)i * p->d_h) * d->width + u / p->s_w;
}
#endif

#if HAVE_SIMD

/* ---- SIMD families: shared types and helpers ------------------------------------- */

/* A run of consecutive panel pixels inside one output row of one image (or, for flat
 * convs, inside one image's plane: see Geo). */
typedef struct Seg {
    int64_t n;      /* image */
    int32_t oh;     /* output row (geometry of Geo) */
    int32_t ow;     /* first output column (Geo) */
    int32_t len;    /* pixels */
    int32_t off;    /* first panel column */
    int64_t pix0;   /* output pixel index in the image's plane (y addressing) */
} Seg;

/* The geometry the panel packer sees.  A 1x1 / stride 1 / unpadded conv is "flat": its
 * planes are seen as single rows (in_h = out_h = 1, in_w = out_w = plane), so a panel's
 * pixels make one run per image whatever the image width. */
typedef struct Geo {
    int32_t in_h, in_w, out_w;   /* input rows and columns, output columns */
    int64_t plane;               /* input elements per channel */
    int64_t pix;                 /* output pixels per image */
    int32_t cg;                  /* input channels per group */
    int32_t gcols;               /* positions per row: the band's cols (grid panels), else out_w */
    int64_t gpix;                /* positions per image: up to the last output */
    int grid;                    /* grid panels (use_grid) */
} Geo;

/* Panels packed straight from the input, quad by quad ("taps", Family.pack_taps): for
 * convs whose reduction quads each read at most two kernel rows (k_w >= 3) and whose 16
 * consecutive outputs of a row read one 64-byte window of an input row (taps_direct,
 * oqci_conv_gemm.c).  Quad q's 16 pixels are then one two-source byte permutation of
 * the windows of its kernel rows A and B = A + 1 (kernel row c k_h + i: channel c's
 * input row i d_h below the output row's first): byte 4 j + e = window byte s_w j +
 * pat_e, from A for pat_e < 64, from B (pat_e - 64) above.  No band, no transposes. */
#define TAPS_MAXQ 160  /* quads described: reductions up to 640 (5.8 KB on the stack),
                        * e.g. 3x3 convs of 64 input channels (K 576) */
typedef struct Taps {
    uint8_t j[64];                 /* byte 4 j + e: s_w j, the pixel's window offset */
    uint32_t pat[TAPS_MAXQ];       /* byte e: element 4 q + e's window byte (+64: row B) */
    uint64_t live[TAPS_MAXQ];      /* bits 4 j + e: element 4 q + e is real (k < kdim),
                                    * else zeroed */
    int64_t off[TAPS_MAXQ][2];     /* rows A and B: offset from the output row's first
                                    * input row of the group's first channel (a quad
                                    * with no row B: A's again) */
    int32_t dh[TAPS_MAXQ][2];      /* rows A and B: input rows below that first row */
    int flip;                      /* pack s8 inputs as x ^ 0x80 (Family.flip) */
} Taps;

/* Transposes four rows of len input bytes into len panel pixels of 4 elements. */
typedef void (*Tr4Fn)(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                      const uint8_t *r3, int32_t len, void *dst);

/* dst[r dstep + t] = src[r sstep + t stride] for t < n, r < rows: a strided run inside
 * an input row, for rows rows (the same run in consecutive channels: one call per band
 * row and phase, not per channel). */
typedef void (*GatherFn)(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                         uint8_t *dst, int64_t dstep, int32_t rows);

/* The band's layout, worked out once per oqcik_conv_gemm call.  A band row of cols columns
 * is stored split by column stride phase: phase ph (band columns ph, ph + s_w, ...) is
 * contiguous, so the s_w-strided columns a tap reads are a plain run (s_w = 1: the row as
 * it is).  Only the phases some tap reads are filled (k_w <= BAND_MAX_KW). */
typedef struct Band {
    uint8_t *buf;                 /* rows x cols bytes per input channel of the group */
    const uint8_t *data;          /* what the packer reads: buf, or (flat) the input */
    int64_t rows, cols;
    int32_t nph;                  /* phases some tap reads */
    int32_t ph[BAND_MAX_KW];      /* those phases; per phase: */
    int32_t at[BAND_MAX_KW];      /* its first byte in a row, */
    int32_t len[BAND_MAX_KW];     /* its elements, */
    int32_t e0[BAND_MAX_KW], e1[BAND_MAX_KW];   /* those inside the input, [e0, e1), */
    int32_t src[BAND_MAX_KW];     /* and the input column of element e0 */
    int32_t tap[BAND_MAX_KW];     /* kernel column j: its first element's byte in a row */
    int32_t *koff;                /* per reduction element k < kdim: its unfolded row's
                                   * byte in the band from the panel row's first byte */
} Band;

/* pack_panel from a band holding input rows from r0: every row of the unfolded matrix
 * is a pointer into it (its tap's phase of the band row).  Inlined where tr4 is a
 * constant (a family's own packer, BandPackFn), called through the pointer otherwise. */
static inline __attribute__((always_inline)) void
pack_band_body(const OqciConv *p, const Band *b, int64_t r0, const Seg *segs, int nseg,
               int32_t q0, int32_t nq, uint8_t *panel, int32_t nr, int esize, Tr4Fn tr4) {
    /* quads before qz hold no padding element of the reduction (k >= kdim) */
    int32_t qz = p->kdim / 4 < q0 + nq ? p->kdim / 4 : q0 + nq;
    size_t qstep = (size_t)nr * 4 * esize;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *base =
            b->data + ((int64_t)s->oh * p->s_h - p->p_t - r0) * b->cols + s->ow;
        uint8_t *d = panel + (size_t)s->off * 4 * esize;
        const int32_t *o = b->koff + 4 * q0;
        int32_t q = q0, e;
        for (; q < qz; q++, o += 4, d += qstep)
            tr4(base + o[0], base + o[1], base + o[2], base + o[3], s->len, d);
        for (; q < q0 + nq; q++, o += 4, d += qstep) {
            const uint8_t *r[4];
            for (e = 0; e < 4; e++)
                r[e] = 4 * q + e >= p->kdim ? zero_row : base + o[e];
            tr4(r[0], r[1], r[2], r[3], s->len, d);
        }
    }
}

/* A family's pack_band for one input type (s8, u8), its transpose inlined. */
typedef void (*BandPackFn)(const OqciConv *p, const Band *b, int64_t r0, const Seg *segs,
                           int nseg, int32_t q0, int32_t nq, uint8_t *panel);

/* The epilogue of channel k's raw sums s: v = saturate((s + corr mod 2^32) + bias), then
 * oqci_requant(v), or v clamped for accumulator outputs (rq1).  corr (the VNNI / sdot
 * offset correction) is exact modulo 2^32 since the corrected sum fits int32; the bias
 * addition can only overflow when kpad * 255 * 128 + |bias| exceeds INT32_MAX
 * (|x * w| <= 255 * 128). */
static inline int bias_may_overflow(const OqciConv *p, int64_t bias) {
    return (int64_t)p->kpad * 32640 + (bias < 0 ? -bias : bias) > INT32_MAX;
}

/* Epilogue of a tile: nk rows of t (row stride ldt, one per output channel k0 + r, the
 * channel's raw sums over the panel's pixels) become outputs of p's out_type (8-bit, or
 * accumulator outputs: OQCI_S32), stored through segs; corr[r]: row r's correction (or
 * NULL: none); bias_done: the sums hold the bias. */
typedef void (*StoreFn)(const OqciConv *p, const int32_t *t, int32_t ldt, int32_t k0,
                        int32_t nk, const int32_t *corr, int bias_done, const Seg *segs,
                        int nseg, void *y);

/* 2 M, the multiplier rq8 uses in float mode.  2 M overflowing (M finite): then |t| >=
 * M > hi for every acc != 0, which the largest float reproduces, and acc = 0 still
 * gives 0. */
static inline float rq_mult2(float mult) {
#ifndef OQCI_NO_FLOAT
    float m2 = 2.0f * mult;
    if (m2 - m2 != 0.0f && mult - mult == 0.0f)
        m2 = mult > 0.0f ? 3.40282347e38f : -3.40282347e38f;
    return m2;
#else
    return mult;
#endif
}

/* The fused epilogue's modes (the i16 argument of the Family members): float steps in
 * 32-bit lanes (RQ_F32), the clamp and rounding in int16 lanes (RQ_I16), and
 * RQ_I16 on sums that start from RQ_BIAS (RQ_I16B, RQ_I16BN; rq_mode picks one; families
 * with rq_biased only). */
enum { RQ_F32 = 0, RQ_I16 = 1, RQ_I16B = 2, RQ_I16BN = 3 };
#define RQ_BIAS 0x4B000000u   /* the bits of the float 2^23 */

/* The fused epilogue's mode for p (constants pre; biased: the family has rq_biased), one
 * pass over the channels:
 * RQ_I16 where the AVX-512 fused epilogue may clamp and round in int16 lanes (rq64 in
 * oqci_conv_x86_int.h) for every channel: u = (float)acc * 2 M must stay inside
 * (-2^31, 2^31), where cvttps2dq truncates it exactly (out of range or NaN it gives
 * 0x80000000, which the float clamp would have sent to 2 hi or 2 lo, an int16 clamp to
 * 2 lo).  |acc| <= B = kpad * 32640 + |bias| (the fused condition: the sum with the bias
 * is exact in int32), so |(float)acc| <= (float)B and, rounding being monotone, |u| <=
 * fl((float)B * |2 M|) <= B |2 M| (1 + 2^-24)^2: B |2 M| <= 2^30 in double (exact to
 * 2^-52; B itself is exact in double) leaves a factor 2 of margin.  A NaN or infinite
 * 2 M fails the comparison.  Typical layers are far inside: 16 x 32640 x 2 x 0.01 ~
 * 10^4.  Else RQ_F32.
 * With biased, RQ_I16B where it is exact for every channel, RQ_I16BN where the clamp at
 * hi may go too.  RQ_I16B: the sums start from RQ_BIAS, so that the int32 R = RQ_BIAS +
 * acc (mod 2^32) is the bit pattern of a float F, and one FMA, F * 2 M + c2 with c2 =
 * -2^23 * 2 M (exact: a power-of-two multiple of a finite 2 M, |2 M| <= 2^30 by the
 * RQ_I16 condition), gives rq64's u = fl(acc * 2 M) with a single rounding, replacing
 * its int-to-float conversion and product.  That needs |acc| < 2^23: B below 2^23.  Then
 * acc >= 0 makes F = 2^23 + acc exactly (exponent 23, acc in the mantissa), so u is
 * rq64's; acc < 0 makes F = 2^23 + acc / 2 (R below 0x4B000000: exponent 22), so u =
 * fl(acc / 2 * 2 M), which, like rq64's u, is <= 0 for 2 M >= 0 and ends at lo = 0
 * after the clamp: so u8 outputs with lo = 0 and 2 M >= 0 on every channel (the clamp at
 * lo is then the pack's own floor, one operation fewer).  RQ_I16BN: also hi = 255 and
 * B * 2 M < 2^15 - 1 (a factor 2 of margin for u's roundings), so trunc(u) <= 65533, its
 * rounding step (vpavgw) at most 32767, and the byte pack (vpackuswb) saturates at 255
 * exactly where the clamp at 2 hi = 510 would have (rounding is monotone and sends 510
 * to 255): no clamp at hi. */
#ifndef OQCI_NO_FLOAT
/* The RQ_I16 condition of one channel whose sums are bounded by bound (exact in double),
 * with multiplier 2 M = m2 (see rq_mode). */
static inline int rq_i16_chan(double bound, double m2) {
    return bound * (m2 < 0 ? -m2 : m2) <= 1073741824.0;
}
#endif

static inline int rq_mode(const OqciConv *p, const RqPre *pre, int biased) {
#ifndef OQCI_NO_FLOAT
    int32_t k;
    int i16 = 1, b8 = biased && p->out_type == OQCI_U8 && p->lo == 0, nomin = p->hi == 255;
    double base = (double)p->kpad * 32640.0;
    for (k = 0; k < p->out_c; k++) {   /* (no branch: every channel is looked at) */
        int64_t b = p->bias ? p->bias[k] : 0;
        double m2 = pre[k].m2, bound = base + (double)(b < 0 ? -b : b);
        i16 &= rq_i16_chan(bound, m2);
        b8 &= (m2 >= 0.0) & (bound < 8388608.0);
        nomin &= bound * m2 < 32767.0;
    }
    return !i16 ? RQ_F32 : !b8 ? RQ_I16 : nomin ? RQ_I16BN : RQ_I16B;
#else
    (void)p;
    (void)pre;
    (void)biased;
    return RQ_F32;
#endif
}

/* The fused epilogue's constants of every channel into pre (corr: each channel's
 * correction mod 2^32, or NULL for none; biased: as rq_mode's) and its mode (rq_mode;
 * in modes RQ_I16B, RQ_I16BN the sums start from RQ_BIAS and c2 is -2^23 * 2 M), or -1
 * where a bias may overflow (bias_may_overflow: no fused epilogue).  Once per call:
 * oqcik_conv_gemm, oqcik_conv_amxt. */
static inline int rq_pre(const OqciConv *p, const int32_t *corr, int biased, RqPre *pre) {
    int32_t k;
    int mode;
    for (k = 0; k < p->out_c; k++) {
        int32_t b = p->bias ? p->bias[k] : 0;
        if (bias_may_overflow(p, b))
            return -1;
        pre[k].add = (int32_t)((uint32_t)(corr ? corr[k] : 0) + (uint32_t)b);
#ifndef OQCI_NO_FLOAT
        pre[k].m2 = rq_mult2(oqci_rq_mult(&p->rq, k));
#else
        pre[k].m2 = 0.0f;   /* (never used: no fused epilogue without float, RQ_FLOAT_OK) */
#endif
        pre[k].c2 = 0.0f;
    }
    mode = rq_mode(p, pre, biased);
    if (mode == RQ_I16B || mode == RQ_I16BN)
        for (k = 0; k < p->out_c; k++) {
            pre[k].add = (int32_t)((uint32_t)pre[k].add + RQ_BIAS);
            pre[k].c2 = -8388608.0f * pre[k].m2;
        }
    return mode;
}

/* acc[r] = the dot product of len bytes (a multiple of 4, at most OQCI_KCHUNK) of a (u8 or,
 * with u8 0, s8) with weight row w[r], r < 4: a pixel's im2col row against four channels. */
typedef void (*Dot4Fn)(const uint8_t *a, int u8, const int8_t *const *w, int32_t len,
                       int32_t acc[4]);
/* Output pixel q of image n, every channel of group g, from the pixel's im2col row (kpad
 * bytes), by dot products. */
typedef void (*PixelFn)(const OqciConv *p, const uint8_t *row, int64_t n, int32_t g, int64_t q,
                        void *y);

/* Computes sums over nq quads of an nr-pixel panel for mr weight rows (w[r] at the
 * block's first reduction element; rows beyond the group's channels repeat a valid one)
 * into rows of t (stride TILE_NR), or adds them to t (acc: the next K block).  Only the
 * first nk rows are stored (t may hold no more: oqcik_conv_gemm's K-block buffer has
 * round_up(kg, TILE_MR) rows, which an mr of 3 does not divide); np: the panel's
 * meaningful pixels (a microkernel may skip vectors holding none). */
typedef void (*UkrFn)(int32_t nq, const void *panel, const int8_t *const *w, int32_t *t,
                      int acc, int32_t np, int32_t nk);

/* A family's choice between grid panels and panels of outputs (oqcik_conv_gemm's
 * use_grid), where grid_ok allows grid panels: always grid panels; panels of outputs
 * where they compute at least 10% fewer pixels; that, but only where the packing of
 * panels of outputs is cheap (taps packing, or at least 256 channels per group). */
typedef enum FamilyGrid { GRID_ALWAYS, GRID_BY_WORK, GRID_BY_WORK_PACKED } FamilyGrid;

/* A SIMD GEMM family (one table per family, in its ISA's file, with designated
 * initialisers: the slots left out are NULL or 0). */
typedef struct Family {
    int isa;          /* OQCI_ISA_* */
    int mr, nr;       /* tile: channels x pixels */
    int esize;        /* panel element bytes: 2 (int16) or 1 */
    int32_t kbq;      /* quads per K block (a block of panel stays in L1) */
    int flip;         /* the input type packed as x ^ 0x80 (see weight_corr), or -1 */
    UkrFn ukr;        /* microkernel */
    Tr4Fn tr4[2];     /* panel transposes for s8 and u8 inputs */
    GatherFn gather;  /* strided copies of input runs */
    StoreFn store;    /* epilogue (every out_type: accumulator outputs too) */
    /* or NULL: the microkernel with the epilogue in registers (8-bit outputs, whole
     * reduction in one block, float requantization, no bias that may overflow): nk
     * channels (constants pre[0 .. nk - 1]) requantized, channel r's bytes stored at
     * out + r * ostride: exactly nr bytes (np meaningful; a partial panel's body may
     * store fewer, at least np); i16: the mode (rq_mode), RQ_F32, RQ_I16 (a
     * family may take it as RQ_F32) or RQ_I16B, RQ_I16BN (families with rq_biased) */
    void (*ukr_rq)(int32_t nq, const void *panel, const int8_t *const *w, const OqciConv *p,
                   int32_t nk, const RqPre *pre, uint8_t *out, int64_t ostride,
                   int32_t np, int i16);
    BandPackFn band_pack[2];   /* pack_band with tr4[] inlined (s8, u8 inputs), or NULL */
    /* or NULL: ukr_rq for the last of several K blocks, the sums so far (rows of t,
     * stride TILE_NR, TILE_MR of them readable) added first */
    void (*ukr_rq_acc)(int32_t nq, const void *panel, const int8_t *const *w, const int32_t *t,
                       const OqciConv *p, int32_t nk, const RqPre *pre, uint8_t *out,
                       int64_t ostride, int32_t np, int i16);
    /* or NULL: every channel of group g over nb panels of the whole reduction (nq quads,
     * one K block; AMX tiles, see oqcik_conv_amx): panel[i] holds the np[i] positions from
     * P0[i] (Geo) of the group, requantized (pre: fused constants, or NULL for f->store)
     * and stored (i16: see ukr_rq); work: amx_work's region */
    void (*tiles)(const OqciConv *p, const struct Family *f, const Geo *ge,
                  uint8_t *const *panel, const int64_t *P0, const int32_t *np, int nb,
                  int32_t nq, int32_t g, const RqPre *pre, int i16, uint8_t *work, void *y);
    /* or NULL (oqcik_store_runs per row): the fused epilogue's store of nk buffered
     * panel rows (stride TILE_NR), channels k .. k + nk - 1 */
    void (*runs)(const OqciConv *p, const uint8_t *q, int32_t k, int32_t nk, const Seg *segs,
                 int nseg, void *y);
    /* or NULL: packs quads q0 .. q0 + nq - 1 of segs (group g) straight from the input x
     * for a 1x1 conv of column stride 2 without padding (s2_direct), no band */
    void (*pack_s2)(const OqciConv *p, const Geo *ge, const uint8_t *x, int32_t g,
                    const Seg *segs, int nseg, int32_t q0, int32_t nq, uint8_t *panel);
    /* or NULL: packs quads q0 .. q0 + nq - 1 of segs (group g) straight from the input x
     * with the table t (taps_direct: see Taps), no band */
    void (*pack_taps)(const OqciConv *p, const Geo *ge, const Taps *t, const uint8_t *x,
                      int32_t g, const Seg *segs, int nseg, int32_t q0, int32_t nq,
                      uint8_t *panel);
    /* or NULL: ukr_rq_acc (t may be NULL) for any nk, its tiles of at most TILE_MR rows
     * in turn (w, t, pre and out advancing), which oqcik_conv_gemm calls with all of a
     * group's channels for outputs stored straight to y when nq is at most
     * RQ_WIDE_MAXQ: one call per panel instead of one per tile, saving thin layers the
     * chain of calls (oqcik_fused_rq, ukr_rq, the body) per tile */
    void (*ukr_rq_wide)(int32_t nq, const void *panel, const int8_t *const *w,
                        const int32_t *t, const OqciConv *p, int32_t nk, const RqPre *pre,
                        uint8_t *out, int64_t ostride, int32_t np, int i16);
    /* whether ukr_rq, ukr_rq_acc and ukr_rq_wide take modes RQ_I16B, RQ_I16BN (pre[].add with
     * RQ_BIAS: a family without it must never see such constants) */
    int rq_biased;
    /* pixels the microkernels compute of a last, partial panel: 0, in steps of 8 (their
     * 8-pixel bodies or paired tails); 1, the whole panel of nr */
    int tail_whole;
    /* when the GEMM takes grid panels where grid_ok allows them (use_grid) */
    FamilyGrid grid;
    /* the sum of n weight bytes (weight_corr, once per channel and call), or NULL: a
     * plain C loop */
    int64_t (*wsum)(const int8_t *w, int32_t n);
    /* or NULL: one pixel by dot products over the reduction, for a panel's lone last
     * pixel (gemm_panel) */
    PixelFn pixel;
} Family;
/* oqcik_conv_gemm's weight row pointers (wtab) in its scratch: after the aligned panel block,
 * the K-block buffer and the band (bytes as gemm_scratch gives them) and the per-channel
 * constants. */
static inline const int8_t **gemm_wtab(const OqciConv *p, void *scratch, size_t panel, size_t cbuf,
                                       size_t band) {
    return (const int8_t **)(void *)(align_up(scratch) + panel + cbuf + band +
                                     (size_t)round_up((int64_t)p->out_c * 16, 8));
}

#endif /* HAVE_SIMD */

/* ---- oqci_conv_gemm.c, oqci_conv_dwq.c: in every build ------------------------------ */

void oqcik_im2col(const OqciConv *p, const uint8_t *xg, int64_t p0, int64_t nr, uint8_t *s);
int64_t oqcik_dw3q_geo(const OqciConv *p, int32_t *bs, int32_t *rows);
int64_t oqcik_dwkq_bytes(const OqciConv *p);

#if HAVE_SIMD
/* ---- oqci_conv_gemm.c -------------------------------------------------------------- */

int oqcik_make_segs(const Geo *g, int64_t P0, int32_t np, Seg *s);
void oqcik_store_runs(const OqciConv *p, const uint8_t *q, int32_t k, const Seg *segs,
                      int nseg, void *y);
void oqcik_fused_rq(const OqciConv *p, const Family *f, int32_t nq, const uint8_t *panel,
                    const int8_t *const *w, const int32_t *t, int32_t k, int32_t nk,
                    const RqPre *pre, int i16, const Seg *segs, int nseg, int32_t np,
                    void *y);
void oqcik_conv_gemm(const OqciConv *p, const Family *f, const void *x, void *y,
                     void *scratch);
/* The outputs of rows [r0, r1) of batch * out_h (image r / out_h, row r % out_h) only,
 * exactly as oqcik_conv_gemm computes them (a part of oqci_conv_par's row split). */
void oqcik_conv_gemm_rows(const OqciConv *p, const Family *f, const void *x, void *y,
                          void *scratch, int64_t r0, int64_t r1);
#endif

#if HAVE_AVX2
/* ---- oqci_conv_avx2.c -------------------------------------------------------------- */

int64_t oqcik_wsum__avx2(const int8_t *w, int32_t n);
void oqcik_tr4_u8_s8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                           const uint8_t *r3, int32_t len, void *dst);
void oqcik_tr4_u8_u8__avx2(const uint8_t *r0, const uint8_t *r1, const uint8_t *r2,
                           const uint8_t *r3, int32_t len, void *dst);
void oqcik_gather__avx2(const uint8_t *src, int64_t sstep, int32_t stride, int32_t n,
                        uint8_t *dst, int64_t dstep, int32_t rows);
void oqcik_store_tile__avx2(const OqciConv *p, const int32_t *t, int32_t ldt, int32_t k0,
                            int32_t nk, const int32_t *corr, int bias_done, const Seg *segs,
                            int nseg, void *y);
extern const Family oqcik_family_avx2, oqcik_family_avx2n;
void oqcik_conv_gemv_avx2(const OqciConv *p, const void *x, void *y, void *scratch, int z);
#endif

#if HAVE_AVX2 && !defined(OQCI_NO_FLOAT)
/* ---- oqci_conv_dwx86.c ------------------------------------------------------------- */

void oqcik_conv_dwf__avx2(const OqciConv *p, const void *x, void *y, void *scratch, int z);
#if HAVE_DWZ
int oqcik_dwflat_ok(const OqciConv *p);
void oqcik_conv_dwflat__avx512vnni(const OqciConv *p, const void *x, void *y, void *scratch);
int oqcik_dws2flat_ok(const OqciConv *p);
void oqcik_conv_dws2flat__avx512vnni(const OqciConv *p, const void *x, void *y,
                                      void *scratch);
#endif
#endif

#if HAVE_VBMI && !defined(OQCI_NO_FLOAT)
/* ---- oqci_conv_dwq.c --------------------------------------------------------------- */

int oqcik_dw3q_ok(const OqciConv *p);
int oqcik_dwkq_ok(const OqciConv *p);
void oqcik_conv_dwkq__avx512vbmi(const OqciConv *p, const void *x, void *y, void *scratch);
void oqcik_conv_dw3q__avx512vbmi(const OqciConv *p, const void *x, void *y, void *scratch);
#endif

#if HAVE_AMX && HAVE_DWZ
/* ---- oqci_conv_amxt.c -------------------------------------------------------------- */

int oqcik_conv_amxt(const OqciConv *p, const void *x, void *y, void *scratch);
#endif

/* ---- oqci_conv_avx512_ukr.c -------------------------------------------------------- */

#if HAVE_AVX512VNNI && !OQCI_EMU_VNNI
void oqcik_q8conv_8x32c4__avx512vnni(int32_t nq, const void *panel, const int8_t *const *w,
                                     int32_t *t, int acc, int32_t np, int32_t nk);
void oqcik_gemv4__avx512vnni(const uint8_t *a, int u8, const int8_t *const *w, int32_t len,
                             int32_t acc[4]);
void oqcik_gemv_pixel__avx512vnni(const OqciConv *p, const uint8_t *row, int64_t n, int32_t g,
                                  int64_t q, void *y);
#ifndef OQCI_NO_FLOAT
void oqcik_q8conv_8x32c4_rq__avx512vnni(int32_t nq, const void *panel, const int8_t *const *w,
                                        const OqciConv *p, int32_t nk, const RqPre *pre,
                                        uint8_t *out, int64_t ostride, int32_t np, int i16);
void oqcik_q8conv_8x32c4_rqt__avx512vnni(int32_t nq, const void *panel,
                                         const int8_t *const *w, const int32_t *t,
                                         const OqciConv *p, int32_t nk, const RqPre *pre,
                                         uint8_t *out, int64_t ostride, int32_t np, int i16);
void oqcik_q8conv_8x32c4_rqw__avx512vnni(int32_t nq, const void *panel,
                                         const int8_t *const *w, const int32_t *t,
                                         const OqciConv *p, int32_t nk, const RqPre *pre,
                                         uint8_t *out, int64_t ostride, int32_t np, int i16);
#define UKR_RQ_AVX512VNNI oqcik_q8conv_8x32c4_rq__avx512vnni
#define UKR_RQ_ACC_AVX512VNNI oqcik_q8conv_8x32c4_rqt__avx512vnni
#define UKR_RQ_WIDE_AVX512VNNI oqcik_q8conv_8x32c4_rqw__avx512vnni
#else
#define UKR_RQ_AVX512VNNI NULL
#define UKR_RQ_ACC_AVX512VNNI NULL
#define UKR_RQ_WIDE_AVX512VNNI NULL
#endif
#endif

/* ---- oqci_conv_avx512.c ------------------------------------------------------------ */

#if HAVE_AVX512VNNI
extern const Family oqcik_family_avx512vnni;
#endif
#if HAVE_VBMI
extern const Family oqcik_family_avx512vbmi;
#endif
#if HAVE_AMX
int oqcik_amx_permit(void);
void oqcik_conv_amx(const OqciConv *p, const void *x, void *y, void *scratch);
#endif
#if HAVE_AVXVNNI
extern const Family oqcik_family_avxvnni;
#endif

#if HAVE_NEONDOT
/* ---- oqci_conv_neon.c -------------------------------------------------------------- */

extern const Family oqcik_family_neondot;
void oqcik_conv_dw__neondot(const OqciConv *p, const void *x, void *y, void *scratch);
#endif

#endif /* OQCI_CONV_INT_H */
