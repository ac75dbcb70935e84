/* test_calib_report.c - the HTML calibration report (compiler/calib/calib_report.c,
 * docs/calibration-report.md).
 *
 * The entries are built here (synthetic Gaussian-like histograms and divergence curves),
 * not by calib.c, so this tests the report alone. What is checked:
 *   - the file is well-formed XML (xmllint) and HTML (xmllint --html: no complaint but
 *     libxml2 2.9's "Tag svg invalid" for HTML5 elements it does not know);
 *   - the header (model, samples, tensor count, methods), one summary row per tensor with
 *     the expected cells and a link to its section, NaN shown as "-";
 *   - names with <&"'> and bytes that are not UTF-8 are escaped everywhere; a hostile
 *     model name cannot inject markup;
 *   - one <svg> per plot: histogram for every entry that has one, divergence for the
 *     entropy ones, none (and a note) for imported entries and empty histograms;
 *   - no script, no URL but the SVG namespace, nothing loaded;
 *   - the log axis: bins of 9, 99 and 999 values stand 1, 2 and 3 units tall, bins are
 *     equally wide; the divergence plot marks T at the same x as the histogram;
 *   - size: 100 entropy tensors of 2048 bins stay under 3 MB, one histogram <path> each,
 *     coordinates with at most one decimal;
 *   - errors name the path; no temporary file is left behind.
 * With OQC_REPORT_OUT=FILE in the environment, test_sample_report also writes the sample
 * report there (tests/cli/report_render.sh renders it in a browser). */
#include "harness.h"
#include "backend.h"

#include <ctype.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ helpers */

#define HAS(s, sub) (strstr((s), (sub)) != NULL)

static int count(const char *s, const char *needle) {
    int n = 0;
    size_t len = strlen(needle);
    for (const char *p = strstr(s, needle); p; p = strstr(p + len, needle))
        n++;
    return n;
}

/* malloc'd copy of s[from, to). */
static char *slice(const char *from, const char *to) {
    char *r = malloc((size_t)(to - from) + 1);
    memcpy(r, from, (size_t)(to - from));
    r[to - from] = 0;
    return r;
}

/* The section of tensor i (malloc'd), NULL when missing. */
static char *section_of(const char *html, int i) {
    char key[32];
    snprintf(key, sizeof key, "<section id=\"t%d\">", i);
    const char *p = strstr(html, key), *q = p ? strstr(p, "</section>") : NULL;
    return q ? slice(p, q) : NULL;
}

/* The summary row linking to tensor i (malloc'd), NULL when missing. */
static char *row_of(const char *html, int i) {
    char key[32];
    snprintf(key, sizeof key, "<a href=\"#t%d\">", i);
    const char *a = strstr(html, key);
    if (!a)
        return NULL;
    const char *p = a;
    while (p > html && strncmp(p, "<tr", 3) != 0)
        p--;
    const char *q = strstr(a, "</tr>");
    return q ? slice(p, q + 5) : NULL;
}

/* The value of the first attribute `name="` after `after` in s (malloc'd). */
static char *attr_after(const char *s, const char *after, const char *name) {
    const char *p = strstr(s, after);
    if (!p)
        return NULL;
    char key[64];
    snprintf(key, sizeof key, " %s=\"", name);
    p = strstr(p, key);
    if (!p)
        return NULL;
    p += strlen(key);
    return slice(p, strchr(p, '"'));
}

/* 1 when s contains needle ignoring ASCII case. */
static int contains_nocase(const char *s, const char *needle) {
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t k = 0;
        while (k < n && s[k] && tolower((unsigned char)s[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

/* Writes the report; prints the error and returns NULL on failure, else the file's text
 * (malloc'd). */
static char *report(const char *path, const char *model, const OqcCalibEntry *e, int n,
                    int64_t samples, size_t *len) {
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_calib_report(path, model, e, n, samples, &d);
    if (rc != 0)
        printf("\n  oqc_calib_report %s failed: %s", path, d.buf ? d.buf : "(no message)");
    oqc_diag_free(&d);
    return rc == 0 ? oqc_test_read_file(path, len) : NULL;
}

static int xmllint_present(void) {
    if (system("command -v xmllint >/dev/null 2>&1") == 0)
        return 1;
    printf("\n  xmllint not found: install Debian libxml2-utils (scripts/install-deps.sh)");
    return 0;
}

/* The file parses as XML, and as HTML with no complaint but libxml2 2.9's "Tag X
 * invalid" for HTML5 elements (section, svg, ...) its HTML 4 parser does not know. */
static int parses(const char *path) {
    char cmd[768];
    const char *log = oqc_test_tmp("xmllint.log");
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s' >'%s' 2>&1", path, log);
    int ok = system(cmd) == 0;
    char *msg = oqc_test_read_file(log, NULL);
    if (!ok)
        printf("\n  %s is not well-formed XML:\n%.2000s", path, msg ? msg : "");
    free(msg);
    snprintf(cmd, sizeof cmd, "xmllint --html --noout '%s' >'%s' 2>&1", path, log);
    ok = system(cmd) == 0 && ok;
    msg = oqc_test_read_file(log, NULL);
    for (char *line = msg ? strtok(msg, "\n") : NULL; line; line = strtok(NULL, "\n")) {
        if (strstr(line, "error") && !(strstr(line, ": Tag ") && strstr(line, " invalid"))) {
            printf("\n  xmllint --html %s: %s", path, line);
            ok = 0;
        }
    }
    free(msg);
    return ok;
}

/* No script, nothing loaded, no URL but the SVG namespace. */
static int self_contained(const char *html) {
    static const char *const bad[] = {"<script", "javascript:", " src=", "<link", "<iframe",
                                      "<object", "<embed", "<img", "url(", "@import",
                                      " on", "xlink:href"};
    int ok = 1;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        /* " on" would also match text; look for event handler attributes only. */
        if (strcmp(bad[i], " on") == 0) {
            static const char *const ev[] = {" onload=", " onclick=", " onerror=",
                                             " onmouseover="};
            for (size_t k = 0; k < sizeof ev / sizeof ev[0]; k++)
                if (contains_nocase(html, ev[k])) {
                    printf("\n  report contains %s", ev[k]);
                    ok = 0;
                }
            continue;
        }
        if (contains_nocase(html, bad[i])) {
            printf("\n  report contains %s", bad[i]);
            ok = 0;
        }
    }
    int urls = count(html, "http:") + count(html, "https:") + count(html, "HTTP");
    int ns = count(html, "xmlns=\"http://www.w3.org/2000/svg\"");
    if (urls != ns || count(html, "http") != ns || count(html, "//") != ns) {
        printf("\n  report holds URLs besides the SVG namespace");
        ok = 0;
    }
    return ok;
}

/* ------------------------------------------------------------------ fixtures */

/* A histogram of |x| for x ~ N(0, sigma) with a Laplace tail of weight `tail`, `total`
 * values, plus `zeros` exact zeros (a ReLU output) and the amax value itself. */
static OqcHist *gauss_hist(OqcArena *a, int nbins, float amax, double sigma, double tail,
                           double total, double zeros) {
    OqcHist *h = oqc_arena_alloc(a, sizeof *h);
    h->amax = amax;
    h->nbins = nbins;
    h->bins = oqc_arena_alloc(a, sizeof(uint64_t) * (size_t)nbins);
    double bw = amax / (double)nbins, s = 3 * sigma;
    for (int i = 0; i < nbins; i++) {
        double lo = i * bw, hi = (i + 1) * bw;
        double p = (1 - tail) * (erf(hi / (sigma * sqrt(2))) - erf(lo / (sigma * sqrt(2)))) +
                   tail * (exp(-lo / s) - exp(-hi / s));
        h->bins[i] = (uint64_t)llround(total * p);
    }
    h->bins[0] += (uint64_t)zeros;
    h->bins[nbins - 1] += 1;
    for (int i = 0; i < nbins; i++)
        h->count += h->bins[i];
    return h;
}

/* Share of h's values in bins m+1.. (above T = (m + 0.5) * bin width, roughly). */
static double share_above(const OqcHist *h, int m) {
    uint64_t c = 0;
    for (int i = m + 1; i < h->nbins; i++)
        c += h->bins[i];
    return (double)c / (double)h->count;
}

/* A divergence-like curve over candidates i >= levels (NaN below): a clipping term that
 * falls with the tail mass and a resolution term that grows with i; sets the entry's
 * threshold at its minimum, as the entropy method does (T = amax when no candidate). */
static void entropy_like(OqcArena *a, OqcCalibEntry *e, int levels) {
    const OqcHist *h = e->hist;
    int n = h->nbins, m = -1;
    double *dv = oqc_arena_alloc(a, sizeof(double) * (size_t)n);
    uint64_t above = 0; /* values in bins i+1.. */
    for (int i = n - 1; i >= 0; i--) {
        double t = (i + 0.5) / n;
        dv[i] = i < levels ? NAN : 50 * (double)above / (double)h->count + 0.05 * t * t;
        if (i >= levels && (m < 0 || dv[i] <= dv[m]))
            m = i; /* <=: the first minimum on ties */
        above += h->bins[i];
    }
    e->divergence = dv;
    e->method = "entropy";
    e->threshold = m < 0 ? h->amax : (float)((m + 0.5) * (double)h->amax / n);
    e->kl = m < 0 ? NAN : dv[m];
    e->clipped = m < 0 ? 0 : share_above(h, m);
}

static OqcShape shape4(int64_t n, int64_t c, int64_t hh, int64_t w) {
    OqcShape s = {4, {n, c, hh, w}};
    return s;
}

static void finish_entry(OqcCalibEntry *e) {
    e->amax = e->hist ? e->hist->amax : e->amax;
    e->scale = e->threshold / (e->is_unsigned ? 255.0f : 127.0f);
}

#define NFIX 8
#define WEIRD "relu <&\"'> out"
#define WEIRD_ESC "relu &lt;&amp;&quot;&#39;&gt; out"

/* The sample report's tensors: a small CNN's activations with every kind of entry. */
static int fixture(OqcArena *a, OqcCalibEntry *e) {
    /* 0: the input, max method. */
    e[0] = (OqcCalibEntry){.name = "input.1", .op = "input", .method = "max",
                           .shape = shape4(1, 3, 224, 224), .kl = NAN,
                           .hist = gauss_hist(a, 2048, 2.64f, 0.9, 0.0, 150528e3, 0)};
    e[0].threshold = e[0].hist->amax;
    /* 1: a conv output, entropy. */
    e[1] = (OqcCalibEntry){.name = "/features/conv1/Conv_output_0", .op = "Conv",
                           .shape = shape4(1, 64, 112, 112),
                           .hist = gauss_hist(a, 2048, 11.3f, 1.4, 2e-3, 8e8, 0)};
    entropy_like(a, &e[1], 128);
    /* 2: a ReLU output (unsigned), percentile, a name to escape. */
    e[2] = (OqcCalibEntry){.name = WEIRD, .op = "Relu", .is_unsigned = 1,
                           .method = "percentile:99.99", .kl = NAN,
                           .shape = shape4(1, 64, 112, 112),
                           .hist = gauss_hist(a, 2048, 7.9f, 1.2, 1e-3, 4e8, 4e8)};
    e[2].threshold = 4.1625f;
    e[2].clipped = 1e-4;
    /* 3: imported from a table: no histogram. */
    e[3] = (OqcCalibEntry){.name = "classifier.fc_in", .op = "Gemm", .method = "table",
                           .amax = 3.5f, .threshold = 3.5f, .kl = NAN, .clipped = NAN,
                           .shape = {2, {1, 512}}};
    /* 4: a few bins, mse, unknown shape. */
    e[4] = (OqcCalibEntry){.name = "pool_out", .op = "MaxPool", .is_unsigned = 1,
                           .method = "mse", .kl = NAN, .shape = {-1, {0}},
                           .hist = gauss_hist(a, 16, 6.0f, 1.5, 0, 1e5, 0)};
    e[4].threshold = 4.5f;
    e[4].clipped = share_above(e[4].hist, 11);
    /* 5: an unsigned entropy tensor with 255 levels. */
    e[5] = (OqcCalibEntry){.name = "/features/relu2/Relu_output_0", .op = "Relu",
                           .is_unsigned = 1, .shape = shape4(1, 128, 56, 56),
                           .hist = gauss_hist(a, 2048, 9.7f, 1.1, 4e-3, 2e8, 2e8)};
    entropy_like(a, &e[5], 255);
    /* 6: an all-zero tensor: nothing to plot. */
    OqcHist *z = oqc_arena_alloc(a, sizeof *z);
    z->nbins = 2048;
    z->bins = oqc_arena_alloc(a, sizeof(uint64_t) * 2048);
    e[6] = (OqcCalibEntry){.name = "dead_branch", .op = "Mul", .method = "max", .kl = NAN,
                           .shape = shape4(1, 8, 4, 4), .hist = z};
    /* 7: entropy whose divergence curve was never evaluated (all NaN). */
    e[7] = (OqcCalibEntry){.name = "logits", .op = "Gemm", .shape = {2, {1, 10}},
                           .hist = gauss_hist(a, 2048, 25.0f, 6.0, 0, 1e4, 0)};
    entropy_like(a, &e[7], 2048);
    for (int i = 0; i < NFIX; i++)
        finish_entry(&e[i]);
    return NFIX;
}

/* ------------------------------------------------------------------ tests */

static void test_contents(void) {
    if (!xmllint_present()) {
        CU_FAIL("xmllint is needed to check the report parses");
        return;
    }
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry e[NFIX];
    int n = fixture(a, e);
    const char *path = oqc_test_tmp("contents.html");
    char *html = report(path, "fashion_cnn.onnx", e, n, 1000, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    CU_ASSERT(parses(path));
    CU_ASSERT(self_contained(html));
    CU_ASSERT(strncmp(html, "<!DOCTYPE html>\n", 16) == 0);
    CU_ASSERT(strstr(html, "<meta charset=\"utf-8\"/>") != NULL);

    /* Header. */
    CU_ASSERT(strstr(html, "<title>Calibration report: fashion_cnn.onnx</title>") != NULL);
    CU_ASSERT(strstr(html, "<dt>samples</dt><dd>1,000</dd>") != NULL);
    CU_ASSERT(strstr(html, "<dt>tensors</dt><dd>8 (7 with a histogram)</dd>") != NULL);
    CU_ASSERT(HAS(html, "<dt>method</dt><dd>max (2), entropy (3), percentile:99.99 (1), "
                        "table (1), mse (1)</dd>"));

    /* Summary: one row per tensor, in order, each linking to its section. */
    const char *tb = strstr(html, "<tbody>"), *te = strstr(html, "</tbody>");
    CU_ASSERT_FATAL(tb && te);
    char *body = slice(tb, te);
    CU_ASSERT_EQUAL(count(body, "<tr"), n);
    free(body);
    for (int i = 0; i < n; i++) {
        char *row = row_of(html, i), *sec = section_of(html, i);
        CU_ASSERT_PTR_NOT_NULL(row);
        CU_ASSERT_PTR_NOT_NULL(sec);
        if (!row || !sec) {
            free(row);
            free(sec);
            continue;
        }
        static const char *const shapes[NFIX] = {"1x3x224x224", "1x64x112x112",
                                                 "1x64x112x112", "1x512", "?",
                                                 "1x128x56x56", "1x8x4x4", "1x10"};
        char want[256];
        snprintf(want, sizeof want, "<td>%s</td><td>%s</td><td>%s</td>", e[i].op, shapes[i],
                 e[i].is_unsigned ? "unsigned" : "signed");
        CU_ASSERT(strstr(row, want) != NULL);
        snprintf(want, sizeof want, "<td>%s</td><td class=\"num\">%.6g</td><td class=\"num\">"
                                    "%.6g</td>",
                 e[i].method, e[i].amax, e[i].threshold);
        CU_ASSERT(strstr(row, want) != NULL);
        if (!strstr(row, want))
            printf("\n  row %d lacks %s: %s", i, want, row);
        /* KL: "-" when NaN. */
        if (isnan(e[i].kl))
            snprintf(want, sizeof want, "<td class=\"num\">-</td></tr>");
        else
            snprintf(want, sizeof want, "<td class=\"num\">%.4g</td></tr>", e[i].kl);
        CU_ASSERT(strstr(row, want) != NULL);
        /* One plot for a histogram, two with an evaluated divergence curve. */
        int want_svg = i == 3 || i == 6 ? 0 : (i == 1 || i == 5) ? 2 : 1;
        CU_ASSERT_EQUAL(count(sec, "<svg"), want_svg);
        CU_ASSERT_EQUAL(count(sec, "<path class=\"hist\""), want_svg ? 1 : 0);
        free(row);
        free(sec);
    }
    /* Specific cells: the entropy tensor's T/amax and clipped share; the imported one. */
    char *row = row_of(html, 1), want[128];
    snprintf(want, sizeof want, "<td class=\"num\">%.3f<span class=\"ratio\">",
             e[1].threshold / e[1].amax);
    CU_ASSERT(row && HAS(row, want));
    snprintf(want, sizeof want, "<td class=\"num\">%.3g%%</td>", e[1].clipped * 100);
    CU_ASSERT(row && HAS(row, want));
    free(row);
    row = row_of(html, 2);
    CU_ASSERT(row && HAS(row, "<td class=\"num\">0.01%</td>"));
    free(row);
    row = row_of(html, 3);
    CU_ASSERT(row && HAS(row, "<tr class=\"imported\">"));
    CU_ASSERT(row && HAS(row, "<td class=\"num\">1.000<span"));
    CU_ASSERT(row && HAS(row, "<td class=\"num\">-</td><td class=\"num\">-</td></tr>"));
    free(row);
    char *sec = section_of(html, 3);
    CU_ASSERT(sec && HAS(sec, "No histogram: this entry was imported"));
    free(sec);
    sec = section_of(html, 6);
    CU_ASSERT(sec && HAS(sec, "Nothing to plot: the histogram is empty"));
    free(sec);
    sec = section_of(html, 7);
    CU_ASSERT(sec && HAS(sec, "No candidate threshold was evaluated."));
    free(sec);

    /* The escaped name everywhere, never raw. */
    CU_ASSERT_EQUAL(count(html, WEIRD_ESC), 2); /* row and section heading */
    CU_ASSERT(strstr(html, "<>") == NULL);
    CU_ASSERT(strstr(html, "relu <") == NULL);
    free(html);

    /* No temporary left beside the report. */
    char pat[128];
    snprintf(pat, sizeof pat, "%s", oqc_test_tmp("*.tmp*"));
    glob_t gl;
    CU_ASSERT_EQUAL(glob(pat, 0, NULL, &gl), GLOB_NOMATCH);
    globfree(&gl);
    oqc_arena_free(a);
}

/* Hostile and broken names: markup in the model name, controls, invalid UTF-8. */
static void test_escaping(void) {
    if (!xmllint_present()) {
        CU_FAIL("xmllint is needed to check the report parses");
        return;
    }
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry e[3] = {
        {.name = "a<b&c\"d'e>f", .op = "Conv<x>", .method = "m&m", .kl = NAN},
        {.name = "ctl\x01\x1f\x7f bad\xff\xc3( over\xc0\xaf c1\xc2\x85 end", .op = "Add",
         .kl = NAN},
        {.name = "utf8 \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", .op = NULL,
         .method = NULL, .kl = NAN},
    };
    for (int i = 0; i < 3; i++) {
        e[i].hist = gauss_hist(a, 64, 4.0f, 1.0, 0, 1e4, 0);
        e[i].threshold = 3.0f;
        finish_entry(&e[i]);
    }
    const char *path = oqc_test_tmp("escape.html");
    char *html = report(path, "<script>alert(1)</script> & \"m\"", e, 3, -1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    CU_ASSERT(parses(path));
    CU_ASSERT(self_contained(html));
    CU_ASSERT(HAS(html, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;m&quot;"));
    CU_ASSERT_EQUAL(count(html, "a&lt;b&amp;c&quot;d&#39;e&gt;f"), 2);
    CU_ASSERT(HAS(html, "<td>Conv&lt;x&gt;</td>"));
    CU_ASSERT(HAS(html, "<td>m&amp;m</td>"));
    CU_ASSERT_EQUAL(count(html, "ctl&#xFFFD;&#xFFFD;&#xFFFD; bad&#xFFFD;&#xFFFD;( "
                                "over&#xFFFD;&#xFFFD; c1&#xFFFD; end"),
                    2);
    CU_ASSERT_EQUAL(count(html, "utf8 \xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"), 2);
    CU_ASSERT(HAS(html, "<dt>samples</dt><dd>unknown</dd>"));
    CU_ASSERT(HAS(html, "<dt>method</dt><dd>m&amp;m (1), - (2)</dd>"));
    /* No byte outside printable ASCII, tab, newline and well-formed UTF-8 leads. */
    for (const unsigned char *p = (const unsigned char *)html; *p; p++)
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f || *p == 0xff) {
            CU_FAIL("control or invalid byte in the report");
            break;
        }
    free(html);
    oqc_arena_free(a);
}

/* Numbers of a path's d attribute after each occurrence of command c (first value). */
static int path_values(const char *d, char c, double *v, int max) {
    int n = 0;
    for (const char *p = strchr(d, c); p && n < max; p = strchr(p + 1, c))
        v[n++] = strtod(p + 1, NULL);
    return n;
}

/* Counts of 9, 99 and 999 draw 1, 2 and 3 decades above the baseline (log10(1 + c)),
 * equally wide bins. */
static void test_log_axis(void) {
    uint64_t bins[4] = {0, 9, 99, 999};
    OqcHist h = {.amax = 4.0f, .nbins = 4, .bins = bins, .count = 1107};
    OqcCalibEntry e = {.name = "steps", .op = "Conv", .method = "max", .amax = 4.0f,
                       .threshold = 4.0f, .kl = NAN, .hist = &h};
    const char *path = oqc_test_tmp("log.html");
    char *html = report(path, "m", &e, 1, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    char *d = attr_after(html, "<path class=\"hist\"", "d");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    /* M x0 ybot  H x1 V y9  H x2 V y99  H x3 V y999  H x4 V ybot Z */
    double x0, ybot, V[8], H[8];
    CU_ASSERT_EQUAL(sscanf(d, "M%lf %lf", &x0, &ybot), 2);
    CU_ASSERT_EQUAL_FATAL(path_values(d, 'V', V, 8), 4);
    CU_ASSERT_EQUAL_FATAL(path_values(d, 'H', H, 8), 4);
    double h1 = ybot - V[0], h2 = ybot - V[1], h3 = ybot - V[2];
    CU_ASSERT(h1 > 20);
    CU_ASSERT(fabs(h2 - 2 * h1) <= 0.2);
    CU_ASSERT(fabs(h3 - 3 * h1) <= 0.2);
    CU_ASSERT(fabs(V[3] - ybot) < 1e-9);
    /* 999 reaches the top of the axis, 10^3 (log10(1000) / log10(1001): 0.03 px short). */
    char *top = attr_after(html, "<rect class=\"frame\"", "y");
    CU_ASSERT(top && fabs(V[2] - strtod(top, NULL)) <= 0.2);
    free(top);
    double w = H[0] - x0;
    CU_ASSERT(w > 50);
    for (int i = 1; i < 4; i++)
        CU_ASSERT(fabs(H[i] - H[i - 1] - w) <= 0.1);
    /* Ticks at powers of 10 up to 10^3 = the smallest power of 10 not below 999. */
    CU_ASSERT(HAS(html, ">1</text>") && HAS(html, ">10</text>"));
    CU_ASSERT(HAS(html, "10<tspan dy=\"-6\" class=\"sup\">2</tspan>"));
    CU_ASSERT(HAS(html, "10<tspan dy=\"-6\" class=\"sup\">3</tspan>"));
    CU_ASSERT(!HAS(html, "class=\"sup\">4<"));
    /* T = amax: no clipped range. */
    CU_ASSERT(!HAS(html, "<rect class=\"clip\""));
    CU_ASSERT(HAS(html, "<rect class=\"clip sw\"")); /* the legend */
    free(d);
    free(html);
}

/* The divergence plot marks T where the histogram does: same x scale, same x. */
static void test_marker_alignment(void) {
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry e = {.name = "c", .op = "Conv", .kl = NAN,
                       .hist = gauss_hist(a, 2048, 10.0f, 1.3, 1e-3, 1e7, 0)};
    entropy_like(a, &e, 128);
    finish_entry(&e);
    const char *path = oqc_test_tmp("align.html");
    char *html = report(path, "m", &e, 1, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    char *xh = attr_after(html, "<line class=\"thr\"", "x1");
    char *xd = attr_after(html, "<line class=\"thr thr-d\"", "x1");
    char *cx = attr_after(html, "<circle class=\"pick\"", "cx");
    CU_ASSERT_FATAL(xh && xd && cx);
    CU_ASSERT_STRING_EQUAL(xh, xd);
    CU_ASSERT_STRING_EQUAL(xh, cx);
    /* The divergence path: at most two points per pixel column of a 600 px plot. */
    char *d = attr_after(html, "<path class=\"div\"", "d");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int nums = 0;
    for (char *p = d; *p;) {
        char *end;
        strtod(p, &end);
        if (end == p)
            p++; /* a command letter or a space */
        else
            nums++, p = end;
    }
    CU_ASSERT(nums / 2 > 300);
    CU_ASSERT(nums / 2 <= 2 * 600);
    CU_ASSERT_EQUAL(count(d, "M"), 1); /* evaluated candidates are contiguous */
    free(d);
    free(xh);
    free(xd);
    free(cx);
    free(html);
    oqc_arena_free(a);
}

/* 100 entropy tensors of 2048 bins: a few MB at most, coordinates at 0.1 px. */
static void test_size(void) {
    OqcArena *a = oqc_arena_new();
    enum { N = 100 };
    OqcCalibEntry *e = oqc_arena_alloc(a, sizeof *e * N);
    for (int i = 0; i < N; i++) {
        e[i] = (OqcCalibEntry){.name = oqc_arena_printf(a, "/block%d/conv/Conv_output_0", i),
                               .op = "Conv", .shape = shape4(1, 256, 14, 14),
                               .hist = gauss_hist(a, 2048, 4.0f + i * 0.37f, 0.5 + i * 0.01,
                                                  1e-3 * (i % 7), 5e7, 0)};
        entropy_like(a, &e[i], 128);
        finish_entry(&e[i]);
    }
    const char *path = oqc_test_tmp("size.html");
    size_t len = 0;
    char *html = report(path, "big", e, N, 500, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    printf("\n  100 entropy tensors of 2048 bins: %zu bytes", len);
    CU_ASSERT(len < 3u << 20);
    CU_ASSERT_EQUAL(count(html, "<path class=\"hist\""), N);
    CU_ASSERT_EQUAL(count(html, "<path class=\"div\""), N);
    CU_ASSERT_EQUAL(count(html, "<svg"), 2 * N);
    /* No number in a path, x/y/width/height/cx/cy attribute has two decimals. */
    int fine = 1;
    for (const char *p = html; *p; p++)
        if (*p == '.' && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
            p > html && isdigit((unsigned char)p[-1])) {
            /* allowed only in text (numbers in labels and cells), never inside a tag */
            const char *lt = p, *gt = p;
            while (lt > html && *lt != '<' && *lt != '>')
                lt--;
            while (*gt && *gt != '<' && *gt != '>')
                gt++;
            if (*lt == '<' && *gt == '>') {
                if (fine)
                    printf("\n  fine coordinate in: %.80s", lt);
                fine = 0;
            }
        }
    CU_ASSERT(fine);
    free(html);

    /* Bins narrower than half a pixel are merged into columns drawn at their largest
     * count: 2048 bins alternating 1 and 1000 give at most 2 columns per px of a 600 px
     * plot, not 2048 steps. */
    OqcHist *z = oqc_arena_alloc(a, sizeof *z);
    z->amax = 1.0f;
    z->nbins = 2048;
    z->bins = oqc_arena_alloc(a, sizeof(uint64_t) * 2048);
    for (int i = 0; i < 2048; i++)
        z->bins[i] = i % 2 ? 1000 : 1 + (uint64_t)i / 16;
    OqcCalibEntry ze = {.name = "zigzag", .op = "Add", .method = "max", .amax = 1.0f,
                        .threshold = 1.0f, .kl = NAN, .hist = z};
    html = report(oqc_test_tmp("zigzag.html"), "m", &ze, 1, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    char *d = attr_after(html, "<path class=\"hist\"", "d");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT(count(d, "H") <= 2 * 600);
    free(d);
    free(html);
    oqc_arena_free(a);
}

static void test_errors(void) {
    OqcDiag d;
    oqc_diag_init(&d);
    const char *path = "/nonexistent-oqc-dir/report.html";
    CU_ASSERT_EQUAL(oqc_calib_report(path, "m", NULL, 0, 0, &d), -1);
    CU_ASSERT_EQUAL(d.nerrors, 1);
    CU_ASSERT(d.buf && HAS(d.buf, path));
    oqc_diag_free(&d);
    /* A directory in the way of the rename: error, temporary removed. */
    const char *dir = oqc_test_tmp("is-a-dir.html");
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
    char sub[300];
    snprintf(sub, sizeof sub, "%s/x", dir);
    FILE *f = fopen(sub, "w");
    if (f)
        fclose(f);
    oqc_diag_init(&d);
    CU_ASSERT_EQUAL(oqc_calib_report(dir, "m", NULL, 0, 0, &d), -1);
    CU_ASSERT(d.buf && HAS(d.buf, dir));
    oqc_diag_free(&d);
    char pat[128];
    snprintf(pat, sizeof pat, "%s", oqc_test_tmp("*.tmp*"));
    glob_t gl;
    CU_ASSERT_EQUAL(glob(pat, 0, NULL, &gl), GLOB_NOMATCH);
    globfree(&gl);
    /* No tensors at all: still a valid page. */
    path = oqc_test_tmp("empty.html");
    char *html = report(path, "m", NULL, 0, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    CU_ASSERT(HAS(html, "No tensors were calibrated."));
    CU_ASSERT(HAS(html, "<dt>method</dt><dd>-</dd>"));
    free(html);
}

/* The sample report (also written to $OQC_REPORT_OUT for tests/cli/report_render.sh). */
static void test_sample_report(void) {
    OqcArena *a = oqc_arena_new();
    OqcCalibEntry e[NFIX];
    int n = fixture(a, e);
    const char *out = getenv("OQC_REPORT_OUT");
    const char *path = out && *out ? out : oqc_test_tmp("sample.html");
    char *html = report(path, "fashion_cnn.onnx", e, n, 1000, NULL);
    CU_ASSERT_PTR_NOT_NULL(html);
    if (html && xmllint_present())
        CU_ASSERT(parses(path));
    free(html);
    oqc_arena_free(a);
}

OQC_TEST_MAIN("calib-report", OQC_TEST(test_contents), OQC_TEST(test_escaping),
              OQC_TEST(test_log_axis), OQC_TEST(test_marker_alignment), OQC_TEST(test_size),
              OQC_TEST(test_errors), OQC_TEST(test_sample_report))
