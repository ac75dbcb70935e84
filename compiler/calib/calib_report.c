/* calib_report.c - the calibration report: one self-contained HTML file for people to
 * look at (see ir.h; user documentation docs/calibration-report.md; the two change
 * together).
 *
 * Layout: a header (model, samples, tensors, methods), a summary table with one row per
 * tensor linking to its section, then one section per tensor with up to two inline SVG
 * plots that share one x axis, |x| from 0 to amax:
 *   - the |x| histogram, count per bin on a log axis (y = log10(1 + count), ticks at
 *     powers of 10), the threshold T and amax marked and the clipped range shaded;
 *   - when the method left a divergence curve (entropy), the divergence of every
 *     evaluated candidate threshold (i + 0.5) * amax / N on a linear axis, T marked.
 * An entry without a histogram (imported from a table) gets its row and a note.
 *
 * Nothing is loaded and nothing runs: CSS sits in <style>, plots are inline SVG, there is
 * no script and no URL but the SVG namespace. The document is also well-formed XML (every
 * element closed, only numeric character references) so xmllint checks it. Names are
 * HTML-escaped; bytes that are not well-formed UTF-8 or that XML cannot carry (controls)
 * become U+FFFD. Sections are addressed by index (#t0, #t1, ...): no name ever becomes an
 * id or a URL.
 *
 * Size: no plot holds more than two points per pixel column. Histogram bins narrower
 * than half a pixel are merged into one column drawn at the largest count among them
 * (the envelope, what the browser would show anyway); runs of equal height are one
 * segment; coordinates are rounded to 0.1 px. A divergence curve keeps, per pixel
 * column, its lowest and highest point. A 2048-bin entropy tensor costs about 20 KB, so
 * 100 tensors make a report of about 2 MB.
 *
 * The file is written to PATH.tmpPID and renamed onto PATH once complete; on error the
 * temporary is removed and the message names PATH. */
#include "calib.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Plot geometry in px: every plot has the same size and margins, so the histogram and
 * the divergence curve of a tensor line up when shown side by side. */
#define SVG_W 600   /* width of one plot */
#define SVG_H 320   /* height of one plot */
#define PAD_L 66    /* left margin: y tick labels and the y axis title */
#define PAD_R 28    /* right margin: room for the last x tick label */
#define PAD_T 46    /* top margin: plot title and the amax label */
#define PAD_B 76    /* bottom margin: x tick labels, x axis title, legend */

/* Maps data values to px inside one plot's area. */
typedef struct Plot {
    double x0, x1;     /* left and right edge of the plot area */
    double ytop, ybot; /* top and bottom edge of the plot area */
    double xmax;       /* data value at x1 (x0 is 0) */
    double ylo, yhi;   /* data values at ybot and ytop */
} Plot;

static double px_x(const Plot *p, double v) {
    return p->x0 + v / p->xmax * (p->x1 - p->x0);
}

static double px_y(const Plot *p, double v) {
    return p->ybot - (v - p->ylo) / (p->yhi - p->ylo) * (p->ybot - p->ytop);
}

/* ------------------------------------------------------------------ output */

static void putf(FILE *f, const char *fmt, ...) OQC_PRINTF(2, 3);
static void putf(FILE *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
}

/* Length of the well-formed UTF-8 character at p (n bytes left) that HTML carries
 * verbatim, 0 when the byte at p is written as U+FFFD: oqc's one XML rule
 * (oqc_xml_char_len) plus tab and newline, minus the C1 controls U+0080..U+009F (legal
 * in XML 1.0, a parse error in HTML). */
static size_t html_char_len(const unsigned char *p, size_t n) {
    if (*p == '\t' || *p == '\n')
        return 1;
    size_t k = oqc_xml_char_len(p, n);
    return k == 2 && p[0] == 0xc2 && p[1] < 0xa0 ? 0 : k;
}

/* Writes s as HTML text (also fit for an attribute value); NULL as `none`. */
static void put_esc(FILE *f, const char *s, const char *none) {
    if (!s) {
        fputs(none, f);
        return;
    }
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0) {
        size_t k = html_char_len(p, n);
        switch (k == 1 ? *p : 0) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if (k == 0)
                fputs("&#xFFFD;", f);
            else
                fwrite(p, 1, k, f);
        }
        if (k == 0) /* one U+FFFD per byte, or per C1 control (two bytes) */
            k = n >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0 ? 2 : 1;
        p += k;
        n -= k;
    }
}

/* Writes a coordinate rounded to 0.1 px, without a trailing ".0". */
static void put_px(FILE *f, double v) {
    long t = lround(v * 10);
    if (t < 0) {
        fputc('-', f);
        t = -t;
    }
    if (t % 10)
        putf(f, "%ld.%ld", t / 10, t % 10);
    else
        putf(f, "%ld", t / 10);
}

/* An attribute `name="v"` (with a leading space) rounded to 0.1 px. */
static void put_attr_px(FILE *f, const char *name, double v) {
    putf(f, " %s=\"", name);
    put_px(f, v);
    fputc('"', f);
}

/* Formats v with %.*g into buf ("-" when NaN). */
static const char *fmt_g(char *buf, size_t len, double v, int digits) {
    if (isnan(v))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.*g", digits, v);
    return buf;
}

/* n with a comma between groups of three digits: "1,204,224". */
static const char *fmt_count(char *buf, size_t len, uint64_t n) {
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%" PRIu64, n);
    size_t k = 0;
    for (int i = 0; i < nd && k + 2 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0)
            buf[k++] = ',';
        buf[k++] = digits[i];
    }
    buf[k] = 0;
    return buf;
}

/* "1x3x224x224", "?" for an unknown extent or rank, "scalar" for rank 0. */
static const char *fmt_shape(char *buf, size_t len, const OqcShape *s) {
    if (s->rank < 0 || s->rank > OQC_MAX_RANK) {
        snprintf(buf, len, "?");
        return buf;
    }
    if (s->rank == 0) {
        snprintf(buf, len, "scalar");
        return buf;
    }
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < s->rank && k < len; i++) {
        int w = s->d[i] < 0 ? snprintf(buf + k, len - k, "%s?", i ? "x" : "")
                            : snprintf(buf + k, len - k, "%s%" PRId64, i ? "x" : "", s->d[i]);
        k += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* ------------------------------------------------------------------ axes */

/* A round step (1, 2 or 5 times a power of 10) giving about `target` ticks over range. */
static double nice_step(double range, int target) {
    double raw = range / target;
    double mag = pow(10, floor(log10(raw)));
    double norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* A line from (x1,y1) to (x2,y2) of class cls. */
static void line(FILE *f, const char *cls, double x1, double y1, double x2, double y2) {
    putf(f, "<line class=\"%s\"", cls);
    put_attr_px(f, "x1", x1);
    put_attr_px(f, "y1", y1);
    put_attr_px(f, "x2", x2);
    put_attr_px(f, "y2", y2);
    fputs("/>", f);
}

/* Opens <text> at (x, y) with an anchor and class; the caller writes the text and
 * closes it. */
static void text_open(FILE *f, double x, double y, const char *anchor, const char *cls) {
    fputs("<text", f);
    put_attr_px(f, "x", x);
    put_attr_px(f, "y", y);
    if (anchor)
        putf(f, " text-anchor=\"%s\"", anchor);
    if (cls)
        putf(f, " class=\"%s\"", cls);
    fputc('>', f);
}

/* The x axis over [0, p->xmax]: grid, ticks, labels and the axis title. */
static void axis_x(FILE *f, const Plot *p, const char *title) {
    double step = nice_step(p->xmax, 6);
    char buf[32];
    for (int k = 0;; k++) {
        double v = k * step;
        if (v > p->xmax * (1 + 1e-9))
            break;
        double x = px_x(p, v);
        line(f, "grid", x, p->ytop, x, p->ybot);
        line(f, "tick", x, p->ybot, x, p->ybot + 5);
        text_open(f, x, p->ybot + 18, "middle", NULL);
        putf(f, "%s</text>", fmt_g(buf, sizeof buf, v, 4));
    }
    text_open(f, (p->x0 + p->x1) / 2, p->ybot + 36, "middle", "axl");
    putf(f, "%s</text>", title);
}

/* The y axis title, rotated, centred on the plot area. */
static void axis_y_title(FILE *f, const Plot *p, const char *title) {
    fputs("<text transform=\"rotate(-90)\"", f);
    put_attr_px(f, "x", -(p->ytop + p->ybot) / 2);
    fputs(" y=\"16\" text-anchor=\"middle\" class=\"axl\">", f);
    putf(f, "%s</text>", title);
}

/* Estimated width in px of plain text at 12px (DejaVu Sans averages about 6.4 px per
 * character); only used to keep labels inside the plot. */
static double text_width(const char *s) {
    return 6.4 * (double)strlen(s);
}

/* A legend entry's swatch kinds. */
enum { SW_FILL, SW_LINE, SW_DOT };

/* One legend entry. */
typedef struct LegendItem {
    int kind;           /* SW_FILL (box), SW_LINE or SW_DOT */
    const char *cls;    /* CSS class of the swatch, as in the plot */
    const char *label;  /* plain text (no markup) */
} LegendItem;

/* A row of legend entries starting at (x, y); widths estimated from label lengths. */
static void legend(FILE *f, double x, double y, const LegendItem *it, int n) {
    for (int i = 0; i < n; i++) {
        if (it[i].kind == SW_FILL) {
            putf(f, "<rect class=\"%s sw\"", it[i].cls);
            put_attr_px(f, "x", x);
            put_attr_px(f, "y", y - 9);
            fputs(" width=\"16\" height=\"10\"/>", f);
        } else if (it[i].kind == SW_LINE) {
            char cls[64];
            snprintf(cls, sizeof cls, "%s sw", it[i].cls);
            line(f, cls, x, y - 4, x + 16, y - 4);
        } else {
            putf(f, "<circle class=\"%s sw\"", it[i].cls);
            put_attr_px(f, "cx", x + 8);
            put_attr_px(f, "cy", y - 4);
            fputs(" r=\"4\"/>", f);
        }
        text_open(f, x + 21, y, NULL, NULL);
        putf(f, "%s</text>", it[i].label);
        x += 21 + text_width(it[i].label) + 16;
    }
}

/* Opens a plot: the <svg> element, its title and the plot area for [0, xmax]. */
static Plot plot_open(FILE *f, const char *cls, double xmax, double ylo, double yhi) {
    Plot p = {.x0 = PAD_L, .x1 = SVG_W - PAD_R, .ytop = PAD_T, .ybot = SVG_H - PAD_B,
              .xmax = xmax, .ylo = ylo, .yhi = yhi};
    putf(f,
         "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"%s\" width=\"%d\" height=\"%d\" "
         "viewBox=\"0 0 %d %d\">",
         cls, SVG_W, SVG_H, SVG_W, SVG_H);
    return p;
}

/* The frame around the plot area: drawn after the grid and before the data, so a bin
 * at the very edge (the zeros of a ReLU) stays visible. */
static void plot_frame(FILE *f, const Plot *p) {
    fputs("<rect class=\"frame\"", f);
    put_attr_px(f, "x", p->x0);
    put_attr_px(f, "y", p->ytop);
    put_attr_px(f, "width", p->x1 - p->x0);
    put_attr_px(f, "height", p->ybot - p->ytop);
    fputs("/>", f);
}

/* Vertical line at data value v labelled near the top of the plot area: right of the
 * line when the label fits there, else left of it; `label` is plain text. */
static void marker_x(FILE *f, const Plot *p, const char *cls, double v, const char *label) {
    double x = px_x(p, v);
    line(f, cls, x, p->ytop, x, p->ybot);
    double w = text_width(label);
    int left = x + 5 + w > p->x1 && x - p->x0 > p->x1 - x;
    text_open(f, left ? x - 5 : x + 5, p->ytop + 15, left ? "end" : NULL, "lbl");
    putf(f, "%s</text>", label);
}

/* ------------------------------------------------------------------ plots */

/* The |x| histogram: one filled step path, y = log10(1 + count). */
static void plot_hist(FILE *f, const OqcCalibEntry *e) {
    const OqcHist *h = e->hist;
    int n = h->nbins;
    uint64_t cmax = 0;
    for (int i = 0; i < n; i++)
        cmax = h->bins[i] > cmax ? h->bins[i] : cmax;
    /* Top of the axis: the smallest power of 10 not below the largest count. */
    int kmax = 0;
    for (double pw = 1; pw < (double)cmax; pw *= 10)
        kmax++;
    /* Ticks at 1, 10, 100, ...: every decade while there are at most 8, else every
     * kstep-th, the top rounded up to a labelled one. */
    int kstep = kmax <= 8 ? 1 : (kmax + 7) / 8;
    kmax = (kmax + kstep - 1) / kstep * kstep;
    Plot p = plot_open(f, "hist-plot", h->amax, 0, log10(1 + pow(10, kmax)));
    char buf[64], buf2[64];

    text_open(f, 8, 18, NULL, "title");
    putf(f, "|x| histogram: %d bins, %s values</text>", n,
         fmt_count(buf, sizeof buf, h->count));
    for (int k = 0; k <= kmax; k += kstep) {
        double y = px_y(&p, log10(1 + pow(10, k)));
        line(f, "grid", p.x0, y, p.x1, y);
        line(f, "tick", p.x0 - 5, y, p.x0, y);
        text_open(f, p.x0 - 8, y + 4, "end", NULL);
        if (k < 2)
            putf(f, "%s</text>", k ? "10" : "1");
        else
            putf(f, "10<tspan dy=\"-6\" class=\"sup\">%d</tspan></text>", k);
    }
    line(f, "tick", p.x0 - 5, p.ybot, p.x0, p.ybot);
    if (p.ybot - px_y(&p, log10(2)) >= 13) {
        text_open(f, p.x0 - 8, p.ybot + 4, "end", NULL);
        fputs("0</text>", f);
    }
    axis_x(f, &p, "|x|");
    axis_y_title(f, &p, "count per bin (log scale)");

    int have_t = isfinite(e->threshold) && e->threshold >= 0 && h->amax > 0;
    double t = have_t ? fmin(e->threshold, h->amax) : 0;
    if (have_t && t < h->amax) {
        fputs("<rect class=\"clip\"", f);
        put_attr_px(f, "x", px_x(&p, t));
        put_attr_px(f, "y", p.ytop);
        put_attr_px(f, "width", p.x1 - px_x(&p, t));
        put_attr_px(f, "height", p.ybot - p.ytop);
        fputs("/>", f);
    }
    plot_frame(f, &p);

    /* The histogram: columns of g bins (at least half a pixel wide), each at the largest
     * count among its bins; a run of equal heights is one horizontal segment. */
    double w = p.x1 - p.x0;
    int g = (int)ceil(n / (2 * w));
    g = g < 1 ? 1 : g;
    long prev = lround(p.ybot * 10);
    fputs("<path class=\"hist\" d=\"M", f);
    put_px(f, p.x0);
    fputc(' ', f);
    put_px(f, p.ybot);
    for (int j = 0; j < n; j += g) {
        uint64_t c = 0;
        for (int i = j; i < j + g && i < n; i++)
            c = h->bins[i] > c ? h->bins[i] : c;
        long y = lround(px_y(&p, log10(1 + (double)c)) * 10);
        if (y == prev)
            continue;
        if (j > 0) {
            fputc('H', f);
            put_px(f, p.x0 + w * j / n);
        }
        fputc('V', f);
        put_px(f, y / 10.0);
        prev = y;
    }
    fputc('H', f);
    put_px(f, p.x1);
    fputc('V', f);
    put_px(f, p.ybot);
    fputs("Z\"/>", f);

    /* amax at the right edge (labelled above the plot area), then T. */
    line(f, "amax", p.x1, p.ytop, p.x1, p.ybot);
    text_open(f, p.x1, p.ytop - 7, "end", "lbl");
    putf(f, "amax = %s</text>", fmt_g(buf, sizeof buf, h->amax, 5));
    if (have_t) {
        char lbl[160];
        snprintf(lbl, sizeof lbl, "T = %s (%s%% clipped)", fmt_g(buf, sizeof buf, t, 5),
                 fmt_g(buf2, sizeof buf2, e->clipped * 100, 3));
        marker_x(f, &p, "thr", t, lbl);
    }
    static const LegendItem items[] = {
        {.kind = SW_FILL, .cls = "hist", .label = "count per bin"},
        {.kind = SW_LINE, .cls = "thr", .label = "threshold T"},
        {.kind = SW_LINE, .cls = "amax", .label = "amax"},
        {.kind = SW_FILL, .cls = "clip", .label = "clipped: |x| > T"},
    };
    legend(f, p.x0, SVG_H - 12, items, 4);
    fputs("</svg>\n", f);
}

/* The divergence of every evaluated candidate threshold, on a linear axis; 0 when no
 * candidate was evaluated (nothing written). */
static int plot_divergence(FILE *f, const OqcCalibEntry *e) {
    const OqcHist *h = e->hist;
    const double *dv = e->divergence;
    int n = h->nbins;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(dv[i])) {
            lo = fmin(lo, dv[i]);
            hi = fmax(hi, dv[i]);
        }
    if (lo > hi)
        return 0;
    lo = fmin(lo, 0);
    hi = hi > lo ? hi : lo + 1;
    double step = nice_step(hi - lo, 5);
    lo = floor(lo / step) * step;
    hi = ceil(hi / step - 1e-9) * step;
    Plot p = plot_open(f, "div-plot", h->amax, lo, hi);
    char buf[64], buf2[64];
    double bw = h->amax / n; /* bin width in |x| */

    text_open(f, 8, 18, NULL, "title");
    fputs("divergence over candidate thresholds</text>", f);
    for (int k = 0;; k++) {
        double v = lo + k * step;
        if (v > hi + step * 1e-6)
            break;
        double y = px_y(&p, v);
        line(f, "grid", p.x0, y, p.x1, y);
        line(f, "tick", p.x0 - 5, y, p.x0, y);
        text_open(f, p.x0 - 8, y + 4, "end", NULL);
        putf(f, "%s</text>", fmt_g(buf, sizeof buf, fabs(v) < step * 1e-9 ? 0 : v, 4));
    }
    axis_x(f, &p, "candidate threshold (i + 0.5) \xc2\xb7 amax / N");
    axis_y_title(f, &p, "KL divergence");
    plot_frame(f, &p);

    /* The curve: per pixel column of g candidates, its lowest and highest point in
     * index order; a column holding no evaluated candidate, or unevaluated candidates
     * before its first point, lifts the pen. */
    double w = p.x1 - p.x0;
    int g = (int)ceil(n / w);
    g = g < 1 ? 1 : g;
    int gap = 1;
    fputs("<path class=\"div\" d=\"", f);
    for (int j = 0; j < n; j += g) {
        int imin = -1, imax = -1, after = 0;
        for (int i = j; i < j + g && i < n; i++) {
            if (!isfinite(dv[i])) {
                if (imin < 0)
                    gap = 1;
                else
                    after = 1;
                continue;
            }
            after = 0;
            if (imin < 0 || dv[i] < dv[imin])
                imin = i;
            if (imax < 0 || dv[i] > dv[imax])
                imax = i;
        }
        if (imin < 0)
            continue;
        int pt[2] = {imin < imax ? imin : imax, imin < imax ? imax : imin};
        for (int k = 0; k < (pt[0] == pt[1] ? 1 : 2); k++) {
            fputs(gap ? "M" : " ", f);
            put_px(f, px_x(&p, (pt[k] + 0.5) * bw));
            fputc(' ', f);
            put_px(f, px_y(&p, dv[pt[k]]));
            gap = 0;
        }
        gap = after;
    }
    fputs("\"/>", f);

    /* The chosen T: its candidate index m has T = (m + 0.5) * amax / N. */
    if (isfinite(e->threshold) && e->threshold >= 0 && h->amax > 0) {
        double t = fmin(e->threshold, h->amax);
        int m = (int)floor(t / bw);
        m = m < 0 ? 0 : m >= n ? n - 1 : m;
        char lbl[160];
        if (isfinite(dv[m]))
            snprintf(lbl, sizeof lbl, "T = %s, divergence %s", fmt_g(buf, sizeof buf, t, 5),
                     fmt_g(buf2, sizeof buf2, dv[m], 4));
        else
            snprintf(lbl, sizeof lbl, "T = %s", fmt_g(buf, sizeof buf, t, 5));
        marker_x(f, &p, "thr thr-d", t, lbl);
        if (isfinite(dv[m])) {
            fputs("<circle class=\"pick\"", f);
            put_attr_px(f, "cx", px_x(&p, (m + 0.5) * bw));
            put_attr_px(f, "cy", px_y(&p, dv[m]));
            fputs(" r=\"4.5\"/>", f);
        }
    }
    static const LegendItem items[] = {
        {.kind = SW_LINE, .cls = "div", .label = "divergence"},
        {.kind = SW_DOT, .cls = "pick", .label = "chosen T"},
    };
    legend(f, p.x0, SVG_H - 12, items, 2);
    fputs("</svg>\n", f);
    return 1;
}

/* ------------------------------------------------------------------ document */

static const char CSS[] =
    "body{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"DejaVu Sans\","
    "sans-serif;color:#222;background:#fff;margin:0 auto;max-width:1250px;padding:18px 24px}\n"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:16px;margin:0 0 6px;word-break:break-all}\n"
    "header dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:8px 0}\n"
    "header dt{color:#666}header dd{margin:0;font-weight:600}\n"
    ".hint{color:#555;max-width:70em}\n"
    "table{border-collapse:collapse;width:100%;font-size:13px;margin:10px 0 8px}\n"
    "th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4;text-align:left;white-space:nowrap}\n"
    "thead th{position:sticky;top:0;background:#eef1f5;border-bottom:1px solid #c8cdd3}\n"
    "tbody tr:nth-child(even){background:#f8f9fb}tbody tr:hover{background:#e8f0fa}\n"
    ".num{text-align:right;font-variant-numeric:tabular-nums}\n"
    "td.name{white-space:normal;word-break:break-all;max-width:26em}\n"
    "a{color:#1f5fa8;text-decoration:none}a:hover{text-decoration:underline}\n"
    ".ratio{display:inline-block;width:44px;height:7px;background:#e2e5e9;margin-left:6px;"
    "vertical-align:middle}.ratio span{display:block;height:100%;background:#4c78a8}\n"
    "tr.imported td{color:#777}\n"
    "section{border-top:1px solid #d9dce0;margin-top:20px;padding-top:12px}\n"
    ".facts{margin:0 0 8px;color:#444}.facts b{color:#111;font-weight:600}\n"
    ".idx{color:#888;font-weight:400;margin-right:6px}\n"
    ".plots{display:flex;flex-wrap:wrap;gap:12px}\n"
    ".note{color:#666;font-style:italic}.top{font-size:12px}\n"
    "svg{background:#fff;border:1px solid #e2e2e2;max-width:100%;height:auto}\n"
    "svg text{font-size:12px;fill:#333}svg .title{font-size:13px;font-weight:600}\n"
    "svg .axl{fill:#444}svg .sup{font-size:9px}\n"
    "svg .lbl{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}\n"
    ".frame{fill:none;stroke:#9aa0a6}.grid{stroke:#eceef0}.tick{stroke:#9aa0a6}\n"
    ".hist{fill:#4c78a8;fill-opacity:.55;stroke:#2c5a8c;stroke-width:.7}\n"
    ".clip{fill:#d62728;fill-opacity:.09}.clip.sw{fill-opacity:.22;stroke:#e8a0a0}\n"
    ".thr{stroke:#d62728;stroke-width:1.6}.thr-d{stroke-dasharray:4 3}\n"
    ".amax{stroke:#333;stroke-width:1.3;stroke-dasharray:6 3}\n"
    ".div{fill:none;stroke:#2a9d5c;stroke-width:1.6;stroke-linejoin:round}\n"
    ".pick{fill:#d62728;stroke:#fff;stroke-width:1.5}\n";

/* The method names in e[0..n) with how many tensors each chose ("entropy" alone when
 * every tensor used it). */
static void put_methods(FILE *f, const OqcCalibEntry *e, int n) {
    int ndistinct = 0;
    for (int i = 0; i < n; i++) {
        const char *m = e[i].method ? e[i].method : "-";
        int first = 1, count = 0;
        for (int j = 0; j < n && first; j++) {
            int same = strcmp(m, e[j].method ? e[j].method : "-") == 0;
            first = !(same && j < i);
            count += same;
        }
        if (!first)
            continue;
        if (ndistinct++)
            fputs(", ", f);
        put_esc(f, m, "-");
        if (count != n)
            putf(f, " (%d)", count);
    }
    if (!ndistinct)
        fputs("-", f);
}

static void put_row(FILE *f, const OqcCalibEntry *e, int i) {
    char buf[64], shape[256];
    putf(f, "<tr%s><td class=\"num\">%d</td><td class=\"name\"><a href=\"#t%d\">",
         e->hist ? "" : " class=\"imported\"", i, i);
    put_esc(f, e->name, "(unnamed)");
    fputs("</a></td><td>", f);
    put_esc(f, e->op, "-");
    putf(f, "</td><td>%s</td><td>%s</td><td>", fmt_shape(shape, sizeof shape, &e->shape),
         e->is_unsigned ? "unsigned" : "signed");
    put_esc(f, e->method, "-");
    putf(f, "</td><td class=\"num\">%s</td>", fmt_g(buf, sizeof buf, e->amax, 6));
    putf(f, "<td class=\"num\">%s</td>", fmt_g(buf, sizeof buf, e->threshold, 6));
    double r = e->amax > 0 ? e->threshold / e->amax : NAN;
    if (isfinite(r))
        putf(f,
             "<td class=\"num\">%.3f<span class=\"ratio\"><span style=\"width:%.0f%%\">"
             "</span></span></td>",
             r, fmin(fmax(r, 0), 1) * 100);
    else
        fputs("<td class=\"num\">-</td>", f);
    if (isnan(e->clipped))
        fputs("<td class=\"num\">-</td>", f);
    else
        putf(f, "<td class=\"num\">%s%%</td>", fmt_g(buf, sizeof buf, e->clipped * 100, 3));
    putf(f, "<td class=\"num\">%s</td></tr>\n", fmt_g(buf, sizeof buf, e->kl, 4));
}

static void put_section(FILE *f, const OqcCalibEntry *e, int i) {
    char buf[64], shape[256];
    putf(f, "<section id=\"t%d\"><h2><span class=\"idx\">#%d</span>", i, i);
    put_esc(f, e->name, "(unnamed)");
    fputs("</h2>\n<p class=\"facts\">op <b>", f);
    put_esc(f, e->op, "-");
    putf(f, "</b> \xc2\xb7 shape <b>%s</b> \xc2\xb7 <b>%s</b> \xc2\xb7 method <b>",
         fmt_shape(shape, sizeof shape, &e->shape), e->is_unsigned ? "unsigned" : "signed");
    put_esc(f, e->method, "-");
    putf(f, "</b> \xc2\xb7 amax <b>%s</b>", fmt_g(buf, sizeof buf, e->amax, 6));
    putf(f, " \xc2\xb7 T <b>%s</b>", fmt_g(buf, sizeof buf, e->threshold, 6));
    putf(f, " \xc2\xb7 scale <b>%s</b>", fmt_g(buf, sizeof buf, e->scale, 6));
    if (!isnan(e->clipped))
        putf(f, " \xc2\xb7 clipped <b>%s%%</b>", fmt_g(buf, sizeof buf, e->clipped * 100, 3));
    if (!isnan(e->kl))
        putf(f, " \xc2\xb7 KL at T <b>%s</b>", fmt_g(buf, sizeof buf, e->kl, 4));
    fputs("</p>\n", f);
    const OqcHist *h = e->hist;
    if (!h) {
        fputs("<p class=\"note\">No histogram: this entry was imported from a calibration "
              "table.</p>\n",
              f);
    } else if (h->nbins <= 0 || !h->bins || !(h->amax > 0) || !isfinite(h->amax)) {
        putf(f,
             "<p class=\"note\">Nothing to plot: the histogram is empty (amax %s, %d bins)."
             "</p>\n",
             fmt_g(buf, sizeof buf, h->amax, 6), h->nbins);
    } else {
        fputs("<div class=\"plots\">\n", f);
        plot_hist(f, e);
        if (e->divergence && !plot_divergence(f, e))
            fputs("<p class=\"note\">No candidate threshold was evaluated.</p>\n", f);
        fputs("</div>\n", f);
    }
    fputs("<p class=\"top\"><a href=\"#summary\">\xe2\x86\x91 summary</a></p></section>\n", f);
}

/* One sensitivity figure cell: SQNR dB, agreement %, top-1 change. */
static void put_sens_cells(FILE *f, const OqcMetrics *m, int labels) {
    char b[32];
    putf(f, "<td class=\"num\">%s</td>", isinf(m->sqnr) ? "inf" : fmt_g(b, sizeof b, m->sqnr, 4));
    putf(f, "<td class=\"num\">%.2f</td>", 100.0 * m->agree);
    if (labels)
        putf(f, "<td class=\"num\">%+.2f</td>", 100.0 * (m->top1_q - m->top1_f));
}

/* The "Sensitivity" section: every INT8 layer, most harmful first (mixprec.c). */
static void put_sensitivity(FILE *f, const OqcSensitivity *s) {
    int lab = s->labels;
    putf(f, "<section id=\"sensitivity\"><h2>Sensitivity</h2>\n<p class=\"hint\">Each INT8 "
            "layer measured over %lld validation samples against the float model: "
            "<b>only INT8</b> quantizes that layer alone (the rest float), <b>only FP32</b> "
            "keeps that layer alone float (the rest INT8). Most harmful first. Every layer "
            "INT8: output SQNR %.2f dB, top-1 agreement %.2f%%. Keep the first rows float "
            "with <code>--fp32-nodes</code>, or let <code>--min-sqnr</code> / "
            "<code>--max-drop</code> choose (docs/calibration.md).</p>\n",
         (long long)s->samples, s->all.sqnr, 100.0 * s->all.agree);
    fputs("<table><thead><tr><th class=\"num\">#</th><th>layer</th><th>op</th>", f);
    for (int k = 0; k < 2; k++)
        putf(f, "<th class=\"num\">%s SQNR dB</th><th class=\"num\">agreement %%</th>%s",
             k ? "only FP32:" : "only INT8:", lab ? "<th class=\"num\">top-1 change</th>" : "");
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int r = 0; r < s->nrows; r++) {
        putf(f, "<tr><td class=\"num\">%d</td><td class=\"name\">", r + 1);
        put_esc(f, s->rows[r].layer, "-");
        fputs("</td><td>", f);
        put_esc(f, s->rows[r].op, "-");
        fputs("</td>", f);
        put_sens_cells(f, &s->rows[r].only_q, lab);
        put_sens_cells(f, &s->rows[r].only_f, lab);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></section>\n", f);
}

static void put_report(FILE *f, const char *model, const OqcCalibEntry *e, int n,
                       int64_t samples, const OqcSensitivity *sens) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n"
          "<meta name=\"generator\" content=\"oqc compiler/calib/calib_report.c\"/>\n<title>",
          f);
    fputs("Calibration report: ", f);
    put_esc(f, model, "(unnamed model)");
    putf(f, "</title>\n<style>\n%s</style></head>\n<body>\n<header><h1>", CSS);
    fputs("Calibration report: ", f);
    put_esc(f, model, "(unnamed model)");
    fputs("</h1>\n<dl><dt>model</dt><dd>", f);
    put_esc(f, model, "-");
    fputs("</dd><dt>samples</dt><dd>", f);
    char buf[32];
    if (samples >= 0)
        fputs(fmt_count(buf, sizeof buf, (uint64_t)samples), f);
    else
        fputs("unknown", f);
    int nhist = 0;
    for (int i = 0; i < n; i++)
        nhist += e[i].hist != NULL;
    putf(f, "</dd><dt>tensors</dt><dd>%d", n);
    if (nhist != n)
        putf(f, " (%d with a histogram)", nhist);
    fputs("</dd><dt>method</dt><dd>", f);
    put_methods(f, e, n);
    fputs("</dd></dl>\n<p class=\"hint\">Each tensor is quantized symmetrically with "
          "scale = T / 127 (signed) or T / 255 (unsigned): |x| above the threshold T "
          "saturates. The plots show |x| from 0 to amax; the histogram's counts are on a log "
          "axis, so a clipped tail that looks large may hold few values (see the clipped "
          "share). T/amax near 1 means little is clipped and the step is coarse.</p>\n"
          "</header>\n",
          f);
    fputs("<table id=\"summary\"><thead><tr><th class=\"num\">#</th><th>tensor</th><th>op</th>"
          "<th>shape</th><th>sign</th><th>method</th><th class=\"num\">amax</th>"
          "<th class=\"num\">threshold T</th><th class=\"num\">T/amax</th>"
          "<th class=\"num\">clipped</th><th class=\"num\">KL at T</th></tr></thead>\n<tbody>\n",
          f);
    for (int i = 0; i < n; i++)
        put_row(f, &e[i], i);
    fputs("</tbody></table>\n", f);
    if (n == 0)
        fputs("<p class=\"note\">No tensors were calibrated.</p>\n", f);
    if (sens)
        put_sensitivity(f, sens);
    for (int i = 0; i < n; i++)
        put_section(f, &e[i], i);
    fputs("</body></html>\n", f);
}

int oqc_calib_report(const char *path, const char *model, const OqcCalibEntry *e, int n,
                     int64_t samples, OqcDiag *d) {
    return oqc_calib_report_ex(path, model, e, n, samples, NULL, d);
}

int oqc_calib_report_ex(const char *path, const char *model, const OqcCalibEntry *e, int n,
                        int64_t samples, const OqcSensitivity *sens, OqcDiag *d) {
    OQC_ASSERT(path && n >= 0 && (n == 0 || e));
    OqcOutFile of;
    if (oqc_out_open(&of, path, d) < 0)
        return -1;
    put_report(of.f, model, e, n, samples, sens);
    int ok = !ferror(of.f);
    if (!ok)
        oqc_err(d, "%s: error writing the calibration report: %s", path, strerror(errno));
    return oqc_out_commit(&of, ok, d);
}
