/* oqci_conv_gemm.c - the driver of the INT8 conv's SIMD families, in plain C (and the
 * portable im2col, oqcik_im2col, which the portable and few-pixel paths share): a GEMM over
 * packed pixel panels (oqcik_conv_gemm) that packs the panels (from the input or from a
 * band of its rows), runs a family's microkernel over them and its epilogue (Family,
 * oqci_conv_int.h: each family's file brings its kernels, transposes and stores).
 *
 * SIMD families: a GEMM over packed pixel panels (oqcik_conv_gemm).  The weights stay in
 * their oqci.h layout (out_c rows of kpad bytes, so nothing is repacked, at compile
 * time or per call): a microkernel broadcasts four consecutive weight bytes of one
 * channel (a "c4" quad, the DP4A unit) against vectors of pixels.  The pixels of a
 * panel (NR output pixels, consecutive over image, row and column, so Gemm rows and
 * small images fill whole panels) are unfolded into the scratch as
 *     panel[q][px][0..3] = the four inputs of reduction quad q (k = 4q .. 4q+3) of px,
 * one K block (blocks of equal size, each at most the panel bytes of KBLOCK reductions
 * of the AVX2 int16 panel: 28 KB, so 512 reductions there and 1194 in a 24-pixel byte
 * panel; AVX-512's 32-pixel panels take KBLOCK_Z = 1152, 36 KB, for the L1 of the CPUs
 * that have it) at a time, so a block stays in L1 while every channel tile of the group
 * runs over it.  A tile of MR
 * channels x NR pixels is held in registers (acc[channel][pixel vector]: one output
 * channel's pixels per vector, the NCHW order of y, so the requantization and the
 * stores are vector operations).  With several K blocks the microkernel adds its tile
 * to an int32 buffer of the group's channels (int64 above OQCI_KCHUNK).  Packing walks
 * the kernel row by row: a row of the unfolded matrix is a pointer into x when its
 * pixels' inputs lie inside one input row at stride 1, else a copy (the part inside
 * gathered, zeros around it), and every four rows are transposed into one quad.  A
 * 1x1 / stride 1 / unpadded conv is "flat": its panels are plain 4-channel transposes
 * of the input planes, no im2col.  Families with VBMI pack some convs straight from x
 * instead: 1x1 / stride 2 (Family.pack_s2), and stems and other narrow-reduction convs
 * quad by quad from windows of input rows (Family.pack_taps, see Taps). */
#include "oqci_conv_int.h"

const char OQCIK_CFG(gemm) = 0;   /* (build consistency, see oqci_conv_cfg_int.h) */

/* The portable unfolding (im2col), shared by the portable family (oqci_conv.c) and the
 * few-pixel path (oqcik_conv_gemv_avx2): in every build. */

/* Unfolds output pixels p0 .. p0 + nr - 1 of one group (xg: its first input channel)
 * into nr rows of kpad bytes at s. */
void oqcik_im2col(const OqciConv *p, const uint8_t *xg, int64_t p0, int64_t nr, uint8_t *s) {
    int64_t plane = (int64_t)p->in_h * p->in_w, r;
    int32_t cg = p->in_c / p->group;
    int32_t oh = (int32_t)(p0 / p->out_w), ow = (int32_t)(p0 % p->out_w);
    for (r = 0; r < nr; r++) {
        uint8_t *row = s + r * p->kpad;
        int64_t ih0 = (int64_t)oh * p->s_h - p->p_t, iw0 = (int64_t)ow * p->s_w - p->p_l;
        int32_t t = 0, c, i, j;
        for (c = 0; c < cg; c++) {
            const uint8_t *xc = xg + c * plane;
            for (i = 0; i < p->k_h; i++) {
                int64_t ih = ih0 + (int64_t)i * p->d_h;
                const uint8_t *xr;
                if (ih < 0 || ih >= p->in_h) {
                    for (j = 0; j < p->k_w; j++)
                        row[t++] = 0;
                    continue;
                }
                xr = xc + ih * p->in_w;
                for (j = 0; j < p->k_w; j++) {
                    int64_t iw = iw0 + (int64_t)j * p->d_w;
                    row[t++] = iw >= 0 && iw < p->in_w ? xr[iw] : 0;
                }
            }
        }
        while (t < p->kpad)
            row[t++] = 0;
        if (++ow == p->out_w) {
            ow = 0;
            oh++;
        }
    }
}

#if HAVE_SIMD

/* ======================================================================================
 * SIMD families: shared pieces (plain C).
 * ==================================================================================== */

/* Convs whose panels of outputs taps packing can make (Family.pack_taps, see Taps):
 * kernels at least 3 wide (so a quad's four elements lie in at most two kernel rows),
 * 16 outputs' inputs inside a 64-byte window of a row, reductions up to TAPS_MAXQ quads,
 * not flat. */
static int taps_fit(const OqciConv *p) {
    return p->k_w >= 3 && 15 * (int64_t)p->s_w + (int64_t)(p->k_w - 1) * p->d_w < 64 &&
           p->kpad / 4 <= TAPS_MAXQ && !is_flat(p);
}

/* Columns of a grid panel's rows (grid_ok): the output row and the kernel's extent past it. */
static int64_t grid_cols(const OqciConv *p) {
    return (int64_t)p->out_w + (int64_t)(p->k_w - 1) * p->d_w;
}

/* Pixels family f's kernels compute for n positions in panels: nr per whole panel, and
 * for the last one either the whole panel (Family.tail_whole) or its pixels rounded up
 * to a multiple of 8 (the 8-pixel bodies and paired tails). */
static int64_t computed(const Family *f, int64_t n) {
    int64_t r = n % f->nr;
    return n - r + round_up(r, f->tail_whole ? f->nr : 8);
}

/* Grid panels for this conv (family f): grid_ok and a band, unless the family
 * (Family.grid) prefers panels of outputs here.  Panels of outputs compute no dropped
 * positions but need per-row runs, so they pay where the grid computes at least 10% more
 * pixels (the dropped positions and the tails: with 32-pixel panels a 7x7 plane's 49
 * outputs cost 56 against the grid's 64, a 14x14 one's 200 against 224, 28x28 and
 * wider keep the grid; with 28-pixel panels a 7x7 plane costs 56 against 84).
 * GRID_BY_WORK_PACKED families take them only where their packing is cheap beside the
 * work, too: taps packing, or at least 256 channels per group (with few channels the
 * band's per-row runs cost more than the pixels saved). */
static int use_grid(const OqciConv *p, const Family *f) {
    int64_t rows, cols;
    if (!grid_ok(p) || band_dims(p, &rows, &cols) == 0)
        return 0;
    if (f->grid == GRID_ALWAYS ||
        (f->grid == GRID_BY_WORK_PACKED && p->out_c / p->group < 256 &&
         !(f->pack_taps && taps_fit(p))))
        return 1;
    return 10 * computed(f, (int64_t)p->batch * p->out_h * p->out_w) >
           9 * (int64_t)p->batch * computed(f, (p->out_h - 1) * grid_cols(p) + p->out_w);
}

static void make_geo(const OqciConv *p, const Family *f, Geo *g) {
    int flat = is_flat(p);
    g->plane = (int64_t)p->in_h * p->in_w;
    g->pix = (int64_t)p->out_h * p->out_w;
    g->cg = p->in_c / p->group;
    g->in_h = flat ? 1 : p->in_h;
    g->in_w = flat ? (int32_t)g->plane : p->in_w;
    g->out_w = flat ? (int32_t)g->pix : p->out_w;
    g->grid = use_grid(p, f);
    g->gcols = g->grid ? (int32_t)grid_cols(p) : g->out_w;
    g->gpix = g->grid ? (int64_t)(p->out_h - 1) * g->gcols + p->out_w : g->pix;
}

/* Pixels of the panel at position P0 (n gpix + index): at most TILE_NR-wide nr, the
 * positions left, and with grid panels those left in the image. */
static int32_t panel_np(const Geo *g, int64_t P0, int64_t total, int32_t nr) {
    int64_t left = total - P0;
    if (g->grid && g->gpix - P0 % g->gpix < left)
        left = g->gpix - P0 % g->gpix;
    return left < nr ? (int32_t)left : nr;
}

/* Cuts the np positions starting at P0 (n * gpix + index) into runs of outputs (grid
 * panels: skipping the dropped positions, so runs may leave gaps in the panel). */
int oqcik_make_segs(const Geo *g, int64_t P0, int32_t np, Seg *s) {
    int ns = 0;
    int32_t off = 0, len;
    int64_t n = P0 / g->gpix, q = P0 % g->gpix;
    int32_t oh = (int32_t)(q / g->gcols), ow = (int32_t)(q % g->gcols);
    while (off < np) {   /* (walking the rows: no division per run) */
        if (q == g->gpix) {   /* the next image */
            n++;
            q = oh = ow = 0;
        }
        if (ow >= g->out_w) {   /* a grid row's dropped positions */
            len = g->gcols - ow;
            off += len;
            q += len;
            oh++;
            ow = 0;
            continue;
        }
        len = g->out_w - ow < np - off ? g->out_w - ow : np - off;
        s[ns].n = n;
        s[ns].oh = oh;
        s[ns].ow = ow;
        s[ns].len = len;
        s[ns].off = off;
        s[ns].pix0 = (int64_t)oh * g->out_w + ow;
        ns++;
        off += len;
        q += len;
        ow += len;
        if (ow == g->gcols) {
            oh++;
            ow = 0;
        }
    }
    return ns;
}

/* Packs reduction quads q0 .. q0 + nq - 1 of the pixels of segs (group g) into panel
 * (nr pixels per quad, esize bytes per element).  The reduction index k walks the
 * group's channels c, kernel rows i and columns j; each (c, i) row of the kernel is
 * checked once against the input's rows and columns, then its k_w rows of the unfolded
 * matrix are pointers into x (a run inside the input row, stride 1) or copies: the part
 * inside the row gathered, zeros around it.  Every four rows make one quad (tr4). */
static void pack_panel(const OqciConv *p, const Geo *ge, const uint8_t *x, int32_t g,
                       const Seg *segs, int nseg, int32_t q0, int32_t nq, uint8_t *panel,
                       int32_t nr, int esize, Tr4Fn tr4, GatherFn gather) {
    int32_t taps = p->k_h * p->k_w;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        const uint8_t *xg = x + (s->n * p->in_c + (int64_t)g * ge->cg) * ge->plane;
        int32_t k = 4 * q0, kend = 4 * (q0 + nq), nrow = 0, q = 0;
        int32_t c = k ? k / taps : 0, i = k ? k % taps / p->k_w : 0, j = k ? k % p->k_w : 0;
        int64_t ih0 = (int64_t)s->oh * p->s_h - p->p_t;
        int64_t iw0 = (int64_t)s->ow * p->s_w - p->p_l;
        int64_t span = (int64_t)(s->len - 1) * p->s_w;
        /* j = 0 .. k_w - 1 all inside the row (stride 1): plain pointers */
        int inside = p->s_w == 1 && iw0 >= 0 && iw0 + (int64_t)(p->k_w - 1) * p->d_w + span <
                                                  ge->in_w;
        uint8_t tmp[4][TILE_NR];
        const uint8_t *r[4];
        while (k < kend) {
            int64_t ih = ih0 + (int64_t)i * p->d_h;
            const uint8_t *xr = xg + c * ge->plane + ih * ge->in_w;
            int zero = k >= p->kdim || ih < 0 || ih >= ge->in_h;
            for (; j < p->k_w && k < kend; j++, k++) {
                if (zero || k >= p->kdim) {
                    r[nrow] = zero_row;
                } else if (inside) {
                    r[nrow] = xr + iw0 + (int64_t)j * p->d_w;
                } else {
                    int64_t iw = iw0 + (int64_t)j * p->d_w;
                    if (p->s_w == 1 && iw >= 0 && iw + span < ge->in_w) {
                        r[nrow] = xr + iw;
                    } else {   /* t in [t0, t1) inside the row */
                        int64_t t0 = iw >= 0 ? 0 : p->s_w == 1 ? -iw : cdiv(-iw, p->s_w);
                        int64_t t1 = iw >= ge->in_w ? 0
                                     : p->s_w == 1 ? ge->in_w - iw
                                                   : cdiv(ge->in_w - iw, p->s_w);
                        uint8_t *d = tmp[nrow];
                        t1 = t1 > s->len ? s->len : t1;
                        t0 = t0 > t1 ? t1 : t0;
                        memset(d, 0, (size_t)t0);
                        if (t1 > t0)
                            gather(xr + iw + t0 * p->s_w, 0, p->s_w, (int32_t)(t1 - t0),
                                   d + t0, 0, 1);
                        memset(d + t1, 0, (size_t)(s->len - t1));
                        r[nrow] = d;
                    }
                }
                if (++nrow == 4) {
                    tr4(r[0], r[1], r[2], r[3], s->len,
                        panel + ((size_t)q * nr + s->off) * 4 * esize);
                    nrow = 0;
                    q++;
                }
            }
            j = 0;
            if (++i == p->k_h) {
                i = 0;
                c++;
            }
        }
    }
}
/* Byte of phase ph in a band row (phases before it hold cols / s_w or one more). */
static int64_t band_phase(int64_t cols, int32_t s_w, int32_t ph) {
    int64_t r = cols % s_w;
    return ph * (cols / s_w) + (ph < r ? ph : r);
}

/* b's layout for p (band_dims gave rows and cols). */
static void band_setup(const OqciConv *p, Band *b) {
    int32_t j, t;
    b->nph = 0;
    for (j = 0; j < p->k_w; j++) {
        int64_t u = (int64_t)j * p->d_w;
        int32_t ph = (int32_t)(u % p->s_w);
        b->tap[j] = (int32_t)(band_phase(b->cols, p->s_w, ph) + u / p->s_w);
        for (t = 0; t < b->nph && b->ph[t] != ph; t++)
            ;
        if (t == b->nph) {   /* element e is band column ph + e s_w, input column - p_l */
            int64_t n = band_phase(b->cols, p->s_w, ph + 1) - band_phase(b->cols, p->s_w, ph);
            int64_t e0 = cdiv((int64_t)p->p_l - ph, p->s_w);
            int64_t e1 = cdiv((int64_t)p->in_w + p->p_l - ph, p->s_w);
            e0 = e0 < 0 ? 0 : e0 > n ? n : e0;
            e1 = e1 < e0 ? e0 : e1 > n ? n : e1;
            b->ph[t] = ph;
            b->at[t] = (int32_t)band_phase(b->cols, p->s_w, ph);
            b->len[t] = (int32_t)n;
            b->e0[t] = (int32_t)e0;
            b->e1[t] = (int32_t)e1;
            b->src[t] = (int32_t)(e0 * p->s_w + ph - p->p_l);
            b->nph++;
        }
    }
    {   /* k = (c, i, j): channel c's band row i d_h, tap j (kdim = cg k_h k_w) */
        int32_t k = 0, c, i, row;
        for (c = 0; k < p->kdim; c++)
            for (i = 0; i < p->k_h; i++) {
                row = (int32_t)(((int64_t)c * b->rows + (int64_t)i * p->d_h) * b->cols);
                for (j = 0; j < p->k_w; j++)
                    b->koff[k++] = row + b->tap[j];
            }
    }
}

/* Fills the band for input rows r0 .. r0 + rows - 1 of the group's channels (xg: the
 * image's first channel of the group): channel c, row r at buf + (c * rows + r - r0) *
 * cols, input column iw at band column p_l + iw (in its phase), zeros outside the
 * input.  The padding columns are zero from oqcik_conv_gemm's clearing of the band and are
 * never written: only rows outside the input (zeroed whole) and the input's part of the
 * others are.  Rows no kernel row reads (k_h d_h below s_h: 1x1 / 2) are skipped (r0 is
 * an output row's first input row, so band row r is read iff r = i d_h mod s_h).  One
 * gather call copies one phase of a channel's rows of one class (step s_h when sparse):
 * 1x1/2 from 64x56x56 made 1792 calls of 28 bytes per band, now 64 (+10% on the layer,
 * with gather__avx512vbmi +9% more). */
static void fill_band(const OqciConv *p, const Geo *ge, const Band *b, const uint8_t *xg,
                      int64_t r0, GatherFn gather) {
    int64_t c, r;
    int32_t t, i;
    int sparse = (int64_t)(p->k_h - 1) * p->d_h + 1 < p->s_h;
    /* the rows read: all (step 1), or when sparse the classes r = i d_h mod s_h */
    int32_t nclass = sparse ? p->k_h : 1, step = sparse ? p->s_h : 1;
    for (i = 0; i < nclass; i++) {
        int64_t rho = (int64_t)i * p->d_h % step;
        /* the class's rows inside the input: lo, lo + step, ... (n of them) */
        int64_t lo = -r0 > rho ? rho + cdiv(-r0 - rho, step) * step : rho;
        int64_t hi = p->in_h - r0 < b->rows ? p->in_h - r0 : b->rows;
        int64_t n = hi > lo ? cdiv(hi - lo, step) : 0;
        for (r = rho; r < b->rows; r += step)
            if (r < lo || r >= lo + n * step)
                for (c = 0; c < ge->cg; c++)
                    memset(b->buf + (c * b->rows + r) * b->cols, 0, (size_t)b->cols);
        if (n == 0)
            continue;
        /* channel by channel, each one's rows in input order (the hardware prefetcher
         * follows one plane; rows outer would jump between cg planes per row) */
        for (c = 0; c < ge->cg; c++)
            for (t = 0; t < b->nph; t++)
                if (b->e1[t] > b->e0[t])
                    gather(xg + c * ge->plane + (r0 + lo) * p->in_w + b->src[t],
                           (int64_t)step * p->in_w, p->s_w, b->e1[t] - b->e0[t],
                           b->buf + (c * b->rows + lo) * b->cols + b->at[t] + b->e0[t],
                           (int64_t)step * b->cols, (int32_t)n);
    }
}
static void pack_band(const OqciConv *p, const Band *b, int64_t r0, const Seg *segs,
                      int nseg, int32_t q0, int32_t nq, uint8_t *panel, int32_t nr, int esize,
                      Tr4Fn tr4) {
    pack_band_body(p, b, r0, segs, nseg, q0, nq, panel, nr, esize, tr4);
}

/* Zeroes panel columns np .. nr - 1 of nq quads (a last, partial panel). */
static void pack_tail(uint8_t *panel, int32_t nq, int32_t np, int32_t nr, int esize) {
    int32_t q;
    if (np >= nr)
        return;
    for (q = 0; q < nq; q++)
        memset(panel + ((size_t)q * nr + np) * 4 * esize, 0, (size_t)(nr - np) * 4 * esize);
}

/* Channel k's output bytes q (one per panel column) stored through the panel's runs. */
void oqcik_store_runs(const OqciConv *p, const uint8_t *q, int32_t k, const Seg *segs,
                      int nseg, void *y) {
    int64_t pix = (int64_t)p->out_h * p->out_w;
    int si;
    for (si = 0; si < nseg; si++) {
        const Seg *s = &segs[si];
        uint8_t *dst = (uint8_t *)y + (s->n * p->out_ctotal + p->out_coff + k) * pix + s->pix0;
        const uint8_t *src = q + s->off;
        int32_t e = 0;
        if (s->len == 28)   /* whole AVX2 panels: fixed-size copies, inlined */
            memcpy(dst, src, 28);
        else if (s->len == 24)
            memcpy(dst, src, 24);
        else {   /* (short runs: inlined 8-byte copies, no call) */
            for (; e + 8 <= s->len; e += 8)
                memcpy(dst + e, src + e, 8);
            for (; e < s->len; e++)
                dst[e] = src[e];
        }
    }
}

/* 1x1, column stride 2, no padding: every output reads input column 2 ow of row oh s_h,
 * inside the input (Family.pack_s2). */
static int s2_direct(const OqciConv *p) {
    return p->k_h == 1 && p->k_w == 1 && p->s_w == 2 && !p->p_t && !p->p_l &&
           2 * (int64_t)(p->out_w - 1) < p->in_w && (int64_t)(p->out_h - 1) * p->s_h < p->in_h;
}

/* Taps packing (Family.pack_taps, see Taps): taps_fit, not grid panels. */
static int taps_direct(const OqciConv *p, const Geo *ge) {
    return taps_fit(p) && !ge->grid;
}

/* t for p (taps_direct): element k = (c k_h + i) k_w + j of the reduction is channel c's
 * input row i d_h, column j d_w of the window. */
static void taps_setup(const OqciConv *p, const Geo *ge, int flip, Taps *t) {
    int32_t q, e, r;
    for (e = 0; e < 64; e++)
        t->j[e] = (uint8_t)((e / 4) * p->s_w);
    t->flip = flip;
    for (q = 0; q < p->kpad / 4; q++) {
        int32_t ra = (4 * q < p->kdim ? 4 * q : p->kdim - 1) / p->k_w;   /* (a real row) */
        t->pat[q] = 0;
        t->live[q] = 0;
        for (e = 0; e < 4; e++) {
            int32_t k = 4 * q + e;
            if (k >= p->kdim)
                continue;
            t->pat[q] |= (uint32_t)((k / p->k_w > ra ? 64 : 0) + (k % p->k_w) * p->d_w)
                         << (8 * e);
            t->live[q] |= 0x1111111111111111ull << e;
        }
        for (r = 0; r < 2; r++) {   /* (row B past the reduction: A's) */
            int32_t rr = r && (ra + 1) * p->k_w < p->kdim ? ra + 1 : ra;
            int32_t c = rr / p->k_h, i = rr % p->k_h;
            t->dh[q][r] = i * p->d_h;
            t->off[q][r] = c * ge->plane + (int64_t)i * p->d_h * p->in_w;
        }
    }
}

/* The exact correction of channel k's sums for flipped inputs: -128 sum w for s8 inputs
 * packed as x + 128 (VNNI), +128 sum w for u8 inputs packed as x - 128 (sdot).  Once
 * per call and channel: a pass over the weights, by the family's vector sum where it
 * has one (Family.wsum). */
static int64_t weight_corr(const OqciConv *p, const Family *f, int32_t k) {
    const int8_t *w = p->w + (size_t)k * (size_t)p->kpad;
    int64_t s = 0;
    if (f->wsum) {
        s = f->wsum(w, p->kpad);
    } else {
        int32_t t;
        for (t = 0; t < p->kpad; t++)
            s += w[t];
    }
    return p->in_type == OQCI_S8 ? -128 * s : 128 * s;
}

/* Whether a panel's fused outputs go straight to y: a whole panel in one image (its
 * outputs are consecutive in y's planes, whatever rows its runs start; no dropped
 * positions: grid panels), and where channel k's start there (bytes). */
static int rq_direct(const Family *f, const Seg *segs, int nseg, int32_t np) {
    const Seg *l = &segs[nseg - 1];
    return np == f->nr && segs[0].n == l->n && segs[0].off == 0 && l->off + l->len == np &&
           l->pix0 - segs[0].pix0 == l->off;
}
static int64_t rq_direct_off(const OqciConv *p, int32_t k, const Seg *segs) {
    return (segs[0].n * p->out_ctotal + p->out_coff + k) * ((int64_t)p->out_h * p->out_w) +
           segs[0].pix0;
}

/* The fused epilogue of channels k .. k + nk - 1 (at most f->mr) of a panel (constants
 * pre[k ..]): the sums over nq quads of the panel (weight rows w) plus, when t, the sums
 * so far in t, requantized (f->ukr_rq_acc, else f->ukr_rq) and stored.  A whole panel
 * in one image goes straight to y (rq_direct), any other through a buffer and
 * oqcik_store_runs. */
void oqcik_fused_rq(const OqciConv *p, const Family *f, int32_t nq, const uint8_t *panel,
                    const int8_t *const *w, const int32_t *t, int32_t k, int32_t nk,
                    const RqPre *pre, int i16, const Seg *segs, int nseg, int32_t np,
                    void *y) {
    uint8_t q[TILE_MR * TILE_NR], *out = q;
    int64_t ostride = TILE_NR;
    int direct = rq_direct(f, segs, nseg, np);
    int32_t r;
    if (direct) {
        out = (uint8_t *)y + rq_direct_off(p, k, segs);
        ostride = (int64_t)p->out_h * p->out_w;
    }
    if (t)
        f->ukr_rq_acc(nq, panel, w, t, p, nk, pre + k, out, ostride, np, i16);
    else
        f->ukr_rq(nq, panel, w, p, nk, pre + k, out, ostride, np, i16);
    if (direct)
        return;
    if (f->runs)
        f->runs(p, q, k, nk, segs, nseg, y);
    else
        for (r = 0; r < nk; r++)
            oqcik_store_runs(p, q + r * TILE_NR, k + r, segs, nseg, y);
}

/* One oqcik_conv_gemm call's state: the conv, the family, the data, the scratch's parts
 * (set up once by gemm_setup) and the band's current rows. */
typedef struct GemmRun {
    const OqciConv *p;
    const Family *f;
    const uint8_t *x;
    void *y;
    Geo ge;
    uint8_t *panel;                   /* the packed panel (f->tiles: the batch's first) */
    int dot1;                         /* a panel's lone last pixel may be a dot product
                                       * (dot_last) */
    size_t band_bytes;                /* the band's scratch (gemm_scratch), or 0 */
    Band band;
    int64_t band_n, band_r0, band_r1, band_g;   /* what the band holds: image, rows, group */
    int32_t *c32;                     /* the group's sums over several K blocks, int32 */
    int64_t *c64;                     /* the same buffer, int64 (deep reductions) */
    int32_t *corr;                    /* per-channel correction of flipped inputs, or NULL */
    RqPre *pre;                       /* fused epilogue's constants, or NULL */
    const int8_t **wtab;              /* weight rows at the block's first quad */
    uint8_t *work;                    /* f->tiles: amx_work's region */
    int32_t kg, nq, nblk, bsize;      /* channels per group, quads, K blocks, their size */
    int deep, fused, flat, i16;       /* sums past OQCI_KCHUNK, fused epilogue (mode i16),
                                       * flat band */
    int s2, taps, direct;             /* packed from x: 1x1 stride 2, taps; either */
    Taps tt;
    Tr4Fn tr4;
    BandPackFn band_pack;
    int32_t tile[TILE_MR * TILE_NR];
    uint8_t *bpanel[AMX_BATCH_MAX];   /* f->tiles: the batch's panels, */
    int64_t bP0[AMX_BATCH_MAX];       /* their first positions */
    int32_t bnp[AMX_BATCH_MAX];       /* and pixels */
    int nbatch, nb;
    int64_t P_first, P_end;           /* the call's positions (oqcik_conv_gemm_rows) */
} GemmRun;

/* The call's geometry, packing mode, band, corrections, fused epilogue constants and
 * scratch pointers. */
static void gemm_setup(GemmRun *R, const OqciConv *p, const Family *f, const void *x, void *y,
                       void *scratch) {
    size_t panel_bytes, cbuf_bytes;
    int32_t k;
    R->p = p;
    R->f = f;
    R->x = (const uint8_t *)x;
    R->y = y;
    R->panel = align_up(scratch);
    R->band_n = -1;
    R->band_r0 = R->band_r1 = 0;
    R->band_g = -1;
    R->corr = NULL;
    R->pre = NULL;
    R->kg = p->out_c / p->group;
    R->nq = p->kpad / 4;
    R->nblk = (R->nq + f->kbq - 1) / f->kbq;
    R->deep = p->kpad > OQCI_KCHUNK;
    R->fused = R->flat = R->i16 = 0;
    R->s2 = f->pack_s2 && s2_direct(p);   /* packed from x: no band to set up or fill */
    R->taps = 0;
    R->direct = R->s2;
    R->nbatch = 1;
    R->nb = 0;
    R->tr4 = f->tr4[p->in_type == OQCI_U8];
    R->band_pack = f->band_pack[p->in_type == OQCI_U8];
    make_geo(p, f, &R->ge);
    if (!R->s2 && f->pack_taps && taps_direct(p, &R->ge)) {
        R->taps = R->direct = 1;
        taps_setup(p, &R->ge, p->in_type == f->flip, &R->tt);
    }
    gemm_scratch(p, HAVE_AMX, &panel_bytes, &cbuf_bytes, &R->band_bytes);
    R->c32 = (int32_t *)(void *)(R->panel + panel_bytes);
    R->c64 = (int64_t *)(void *)R->c32;
    R->band.buf = R->panel + panel_bytes + cbuf_bytes;
    if (R->band_bytes && !R->direct) {
        size_t bb = band_dims(p, &R->band.rows, &R->band.cols);
        R->band.koff = (int32_t *)(void *)(R->band.buf + bb);
        R->band.data = R->band.buf;
        if (bb) {
            band_setup(p, &R->band);
            memset(R->band.buf, 0, bb);   /* the padding columns, once (see fill_band) */
        } else {   /* flat: element k is input channel k's plane */
            R->flat = 1;
            R->band.rows = 1;
            R->band.cols = R->ge.plane;
            for (k = 0; k < p->kdim; k++)
                R->band.koff[k] = (int32_t)(k * R->ge.plane);
        }
    }
    if (p->in_type == f->flip) {   /* modulo 2^32 (exact, see bias_may_overflow) */
        R->corr = (int32_t *)(void *)(R->panel + panel_bytes + cbuf_bytes + R->band_bytes);
        for (k = 0; k < p->out_c; k++)
            R->corr[k] = (int32_t)(uint32_t)(uint64_t)weight_corr(p, f, k);
    }
    /* the epilogue in the microkernel: 8-bit outputs (accumulator outputs, whose rq is
     * not read, go through f->store), float requantization, no bias whose addition may
     * overflow (rq_pre checks every channel), and one block or
     * (ukr_rq_acc) the last of several whose int32 sums are exact */
    if (f->ukr_rq && (R->nblk == 1 || (f->ukr_rq_acc && !R->deep)) &&
        p->out_type != OQCI_S32 && RQ_FLOAT_OK) {
        R->pre = (RqPre *)(void *)(R->panel + panel_bytes + cbuf_bytes + R->band_bytes +
                                   (size_t)p->out_c * 4);
        R->i16 = rq_pre(p, R->corr, f->rq_biased, R->pre);
        R->fused = R->i16 >= 0;
    }
    if (!R->fused) {
        R->pre = NULL;
        R->i16 = RQ_F32;
    }
    /* row k of the group's weights at the block's first quad, rows past kg repeating
     * the last (a tile's rows past nk): built per group, or per block with several */
    R->wtab = gemm_wtab(p, scratch, panel_bytes, cbuf_bytes, R->band_bytes);
    R->work = f->tiles ? align_up((void *)(R->wtab + R->kg + TILE_MR)) : NULL;   /* (amx_work) */
    if (f->tiles) {   /* the batch's panels: oqcik_conv_gemm's, then those in amx_work's region */
        size_t apb = amx_panel_bytes(p);
        R->nbatch = amx_batch(p);
        for (k = 0; k < R->nbatch; k++)
            R->bpanel[k] = k ? R->work + AMX_PANELS_OFF + (size_t)(k - 1) * apb : R->panel;
    }
    R->bsize = (R->nq + R->nblk - 1) / R->nblk;   /* balanced blocks */
    R->dot1 = p->kpad >= DOT_LAST_MINK && f->pixel && !f->tiles && !R->ge.grid &&
              panel_bytes >= (size_t)p->kpad;
}

/* Packs quads q0 .. q0 + bq - 1 of the panel at P0 (np positions, runs segs; packed as
 * the runs ps, npk of them; from the band when use_band) of group g, and runs the
 * microkernels over it: sums into the tile, c32 or c64, or stored through the fused
 * epilogue or the family's store. */
static void gemm_block(GemmRun *R, int32_t g, int64_t P0, int32_t np, const Seg *segs,
                       int nseg, const Seg *ps, int npk, int use_band, int32_t q0, int32_t bq) {
    const OqciConv *p = R->p;
    const Family *f = R->f;
    int32_t kg = R->kg, k, kk;
    if (R->nblk > 1 || P0 == R->P_first)   /* (a group's first panel) */
        for (k = 0; k < kg + TILE_MR; k++)   /* (any tile's mr rows) */
            R->wtab[k] = p->w + (size_t)(g * kg + (k < kg ? k : kg - 1)) * (size_t)p->kpad +
                         (size_t)q0 * 4;
    uint8_t *pd = f->tiles ? R->bpanel[R->nb] : R->panel;
    if (R->s2)
        f->pack_s2(p, &R->ge, R->x, g, segs, nseg, q0, bq, pd);
    else if (R->taps)
        f->pack_taps(p, &R->ge, &R->tt, R->x, g, segs, nseg, q0, bq, pd);
    else if (use_band && R->band_pack)
        R->band_pack(p, &R->band, R->band_r0, ps, npk, q0, bq, pd);
    else if (use_band)
        pack_band(p, &R->band, R->band_r0, ps, npk, q0, bq, pd, f->nr, f->esize, R->tr4);
    else
        pack_panel(p, &R->ge, R->x, g, segs, nseg, q0, bq, pd, f->nr, f->esize, R->tr4,
                   f->gather);
    pack_tail(pd, bq, np, f->nr, f->esize);
    if (f->tiles) {   /* (one block) the batch, when full or at the group's end */
        R->bP0[R->nb] = P0;
        R->bnp[R->nb++] = np;
        if (R->nb == R->nbatch || P0 + np >= R->P_end) {
            f->tiles(p, f, &R->ge, R->bpanel, R->bP0, R->bnp, R->nb, bq, g,
                     R->fused ? R->pre : NULL, R->i16, R->work, R->y);
            R->nb = 0;
        }
        return;
    }
    if (R->fused && q0 + bq >= R->nq && f->ukr_rq_wide && bq <= RQ_WIDE_MAXQ &&
        rq_direct(f, segs, nseg, np)) {   /* (all channels in one call) */
        f->ukr_rq_wide(bq, R->panel, R->wtab, R->nblk > 1 ? R->c32 : NULL, p, kg,
                       R->pre + g * kg, (uint8_t *)R->y + rq_direct_off(p, g * kg, segs),
                       (int64_t)p->out_h * p->out_w, np, R->i16);
        return;
    }
    for (kk = 0; kk < kg; kk += f->mr) {
        const int8_t *const *w = R->wtab + kk;
        int32_t nk = kg - kk < f->mr ? kg - kk : f->mr, r, e;
        if (R->fused && q0 + bq >= R->nq) {   /* (the last block's sums so far in c32) */
            oqcik_fused_rq(p, f, bq, R->panel, w,
                           R->nblk > 1 ? R->c32 + (size_t)kk * TILE_NR : NULL, g * kg + kk,
                           nk, R->pre, R->i16, segs, nseg, np, R->y);
        } else if (R->nblk == 1) {
            f->ukr(bq, R->panel, w, R->tile, 0, np, nk);
            f->store(p, R->tile, TILE_NR, g * kg + kk, nk,
                     R->corr ? R->corr + g * kg + kk : NULL, 0, segs, nseg, R->y);
        } else if (!R->deep) {   /* exact: the whole sum fits int32 */
            f->ukr(bq, R->panel, w, R->c32 + (size_t)kk * TILE_NR, q0 > 0, np, nk);
        } else {
            f->ukr(bq, R->panel, w, R->tile, 0, np, nk);
            for (r = 0; r < nk; r++)
                for (e = 0; e < np; e++) {
                    size_t ci = (size_t)(kk + r) * TILE_NR + e;
                    R->c64[ci] = (q0 ? R->c64[ci] : 0) + R->tile[r * TILE_NR + e];
                }
        }
    }
}

/* With several K blocks and no fused epilogue: the group's sums of the panel (c32, or
 * c64 with the correction and bias added in int64) through the family's store. */
static void gemm_store_sums(GemmRun *R, int32_t g, const Seg *segs, int nseg, int32_t np) {
    const OqciConv *p = R->p;
    int32_t kk;
    for (kk = 0; kk < R->kg; kk += TILE_MR) {
        int32_t nk = R->kg - kk < TILE_MR ? R->kg - kk : TILE_MR, r, e;
        int32_t k0 = g * R->kg + kk;
        if (!R->deep) {
            R->f->store(p, R->c32 + (size_t)kk * TILE_NR, TILE_NR, k0, nk,
                        R->corr ? R->corr + k0 : NULL, 0, segs, nseg, R->y);
            continue;
        }
        for (r = 0; r < nk; r++) {   /* correction and bias added here, in int64 */
            int64_t cr = R->corr ? weight_corr(p, R->f, k0 + r) : 0;
            int64_t b = p->bias ? p->bias[k0 + r] : 0;
            for (e = 0; e < np; e++)
                R->tile[r * TILE_NR + e] =
                    sat32(R->c64[(size_t)(kk + r) * TILE_NR + e] + cr + b);
        }
        R->f->store(p, R->tile, TILE_NR, k0, nk, NULL, 1, segs, nseg, R->y);
    }
}

/* Whether a panel of np pixels computes its last one by dot products (dot_pixel): where
 * that pixel would otherwise take an 8-pixel body alone (np one past a multiple of 16:
 * the last 17 of a 7x7 plane's 49) and the reduction is long enough for the dot
 * products, which read every weight once more and reduce and requantize each channel
 * alone, to cost less than the body (docs/compile.md; a 9-pixel tail's 8-pixel body costs
 * about what a 16-pixel one does, so np % 8 == 1 would not pay).  Not for grid panels
 * (positions that are not outputs), tile families (whose batches hold whole panels), or
 * a reduction longer than the panel's scratch, which holds the pixel's im2col row. */
static int dot_last(const GemmRun *R, int32_t np) {
    return np % 16 == 1 && R->dot1;   /* (the conditions on the conv: gemm_setup) */
}

/* Output position P (n gpix + pixel, not a grid) of group g by dot products: its im2col
 * row in the panel's scratch (after the panels before it are done with it). */
static void dot_pixel(GemmRun *R, int32_t g, int64_t P) {
    const OqciConv *p = R->p;
    int64_t n = P / R->ge.gpix, q = P % R->ge.gpix;
    const uint8_t *xg = R->x + (n * p->in_c + (int64_t)g * R->ge.cg) * R->ge.plane;
    oqcik_im2col(p, xg, q, 1, R->panel);
    R->f->pixel(p, R->panel, n, g, q, R->y);
}

/* The panel of group g at position P0: its runs, the band holding its input rows
 * (refilled only when it does not), every K block; returns its positions (total: where
 * the call's positions end). */
static int32_t gemm_panel(GemmRun *R, int32_t g, int64_t P0, int64_t total) {
    const OqciConv *p = R->p;
    const Geo *ge = &R->ge;
    Seg segs[TILE_NR], gseg, *ps = segs;
    int32_t q0, np = panel_np(ge, P0, total, R->f->nr);
    if (dot_last(R, np)) {   /* the panel without its last pixel, then that one */
        int32_t nb = np > 1 ? gemm_panel(R, g, P0, P0 + np - 1) : 0;
        dot_pixel(R, g, P0 + nb);
        return nb + 1;
    }
    int nseg = oqcik_make_segs(ge, P0, np, segs), npk = nseg;
    /* the band: the input rows of the panel (one image), kept while they serve */
    int use_band = R->band_bytes && !R->direct && segs[0].n == segs[nseg - 1].n;
    const uint8_t *xg = R->x + (segs[0].n * p->in_c + (int64_t)g * ge->cg) * ge->plane;
    if (use_band && R->flat)
        R->band.data = xg;
    int64_t r0 = (int64_t)segs[0].oh * p->s_h - p->p_t;
    int64_t r1 = (int64_t)segs[nseg - 1].oh * p->s_h - p->p_t + (int64_t)(p->k_h - 1) * p->d_h + 1;
    if (ge->grid) {   /* packed as one run of np positions (from row oh, column ow) */
        int64_t q = P0 % ge->gpix;
        gseg = segs[0];
        gseg.oh = (int32_t)(q / ge->gcols);
        gseg.ow = (int32_t)(q % ge->gcols);
        gseg.len = np;
        gseg.off = 0;
        ps = &gseg;
        npk = 1;
        r0 = (int64_t)gseg.oh - p->p_t;
        r1 = (q + np - 1) / ge->gcols - p->p_t + (int64_t)(p->k_h - 1) * p->d_h + 1;
    }
    if (use_band && !R->flat &&
        (segs[0].n != R->band_n || g != R->band_g || r0 < R->band_r0 || r1 > R->band_r1)) {
        /* every row the band holds from r0 (rows past the input are zeros) */
        fill_band(p, ge, &R->band, xg, r0, R->f->gather);
        R->band_n = segs[0].n;
        R->band_g = g;
        R->band_r0 = r0;
        R->band_r1 = r0 + R->band.rows;
    }
    for (q0 = 0; q0 < R->nq; q0 += R->bsize)
        gemm_block(R, g, P0, np, segs, nseg, ps, npk, use_band, q0,
                   R->nq - q0 < R->bsize ? R->nq - q0 : R->bsize);
    if (R->nblk > 1 && !R->fused)
        gemm_store_sums(R, g, segs, nseg, np);
    return np;
}

/* The position of output row r (of batch * out_h: image r / out_h, row r % out_h) at
 * column 0; batch * out_h gives the end of the positions. */
static int64_t row_pos(const OqciConv *p, const Geo *ge, int64_t r) {
    int64_t n = r / p->out_h, oh = r % p->out_h;
    return n * ge->gpix + oh * (ge->out_w == p->out_w ? ge->gcols : p->out_w);
}

void oqcik_conv_gemm_rows(const OqciConv *p, const Family *f, const void *x, void *y,
                          void *scratch, int64_t r0, int64_t r1) {
    GemmRun R;
    int32_t g;
    int64_t P0, P1;
    gemm_setup(&R, p, f, x, y, scratch);
    R.P_first = row_pos(p, &R.ge, r0);
    /* after row r1 - 1's last output, not at row r1: on a grid a row ends in dropped
     * positions, and a last panel of nothing else has no runs to store */
    R.P_end = P1 = r1 > r0 ? row_pos(p, &R.ge, r1 - 1) + p->out_w : R.P_first;
    for (g = 0; g < p->group; g++)
        for (P0 = R.P_first; P0 < P1;)
            P0 += gemm_panel(&R, g, P0, P1);
}

void oqcik_conv_gemm(const OqciConv *p, const Family *f, const void *x, void *y,
                     void *scratch) {
    oqcik_conv_gemm_rows(p, f, x, y, scratch, 0, (int64_t)p->batch * p->out_h);
}

#endif /* HAVE_SIMD */
