/* image_io.c - images as model inputs: JPEG/PNG decoding, the declared preprocessing
 * (--preprocess), and the lists of files that calibration and evaluation data expand to
 * (see ir.h; user documentation docs/images.md).
 *
 * The pipeline is torchvision's for PIL images, step for step, so that a model trained
 * with `transforms.Compose([Resize(R), CenterCrop(C), ToTensor(), Normalize(m, s)])` sees
 * the tensors it was trained on:
 *   1. decode to 8 bits (libjpeg-turbo, libpng) and convert to RGB or L as PIL's
 *      Image.convert does (gray -> RGB replicates; RGB -> L is ITU-R 601-2 luma in PIL's
 *      16-bit fixed point; alpha is dropped, palettes expanded, 16 bits cut to the high
 *      byte);
 *   2. resize with PIL's BILINEAR filter (Image.resize, Pillow's Resample.c: separable,
 *      horizontal pass first, a triangle filter whose support grows with the downscale
 *      factor, so shrinking averages like an antialiasing filter; coefficients in 22-bit
 *      fixed point, each pass rounded to uint8);
 *   3. centre crop, offsets rounded half to even (Python's round, as CenterCrop);
 *   4. x = u8 * mul / div, then (x - mean) / std in float32 (ToTensor divides by 255,
 *      Normalize subtracts then divides), written NCHW or NHWC.
 * Decoding is strict: a truncated or corrupt file, CMYK JPEG or anything that is not a
 * JPEG or PNG is an error naming the file.  Decoded pixels live only while one image is
 * converted, so a folder of any size streams. */
#include "ir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jpeglib.h>
#include <png.h>

/* ============================================================ preprocessing spec */

static const float imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
static const float imagenet_std[3] = {0.229f, 0.224f, 0.225f};
static const float cifar_mean[3] = {0.4914f, 0.4822f, 0.4465f};
static const float cifar_std[3] = {0.2023f, 0.1994f, 0.2010f};

static void pp_defaults(OqcPreprocess *p) {
    memset(p, 0, sizeof *p);
    p->mul = 1;
    p->div = 1;
    for (int c = 0; c < 3; c++)
        p->std[c] = 1;
}

/* The shortest "%g" text that reads back as the same float. */
static void fmt_float(char *buf, size_t n, float v) {
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(buf, n, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v)
            return;
    }
}

/* Fills p->spec with every key, so the text alone says what the model expects. */
static void pp_canonical(OqcPreprocess *p) {
    char m[3][32], s[3][32], mul[32], div[32], size[64] = "", crop[64] = "";
    for (int c = 0; c < 3; c++) {
        fmt_float(m[c], sizeof m[c], p->mean[c]);
        fmt_float(s[c], sizeof s[c], p->std[c]);
    }
    fmt_float(mul, sizeof mul, p->mul);
    fmt_float(div, sizeof div, p->div);
    if (p->resize_h)
        snprintf(size, sizeof size, "resize=%dx%d,", p->resize_h, p->resize_w);
    else if (p->resize)
        snprintf(size, sizeof size, "resize=%d,", p->resize);
    if (p->crop_h)
        snprintf(crop, sizeof crop, "crop=%dx%d,", p->crop_h, p->crop_w);
    snprintf(p->spec, sizeof p->spec, "%s%sscale=%s%s%s,mean=%s:%s:%s,std=%s:%s:%s,color=%s,"
             "layout=%s", size, crop, p->div != 1 ? "" : mul, p->div != 1 ? "1/" : "",
             p->div != 1 ? div : "", m[0], m[1], m[2], s[0], s[1], s[2],
             p->color == OQC_COLOR_BGR ? "bgr" : p->color == OQC_COLOR_GRAY ? "gray" : "rgb",
             p->nhwc ? "nhwc" : "nchw");
}

/* "N" or "HxW", each 1..65535. */
static int parse_size(const char *v, int *h, int *w) {
    char *end;
    long a = strtol(v, &end, 10), b = a;
    if (end == v || a < 1 || a > 65535)
        return -1;
    if (*end == 'x' || *end == 'X') {
        const char *q = end + 1;
        b = strtol(q, &end, 10);
        if (end == q || b < 1 || b > 65535)
            return -1;
    }
    if (*end)
        return -1;
    *h = (int)a;
    *w = (int)b;
    return 0;
}

/* One finite float, all of v. */
static int parse_float(const char *v, float *f) {
    char *end;
    *f = strtof(v, &end);
    return end != v && !*end && isfinite(*f) ? 0 : -1;
}

/* "a:b:c" (three channels) or "a" (every channel). */
static int parse_triple(const char *v, float out[3], int positive) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    int n = 0;
    for (char *tok = buf, *next; tok && n <= 3; tok = next) {
        next = strchr(tok, ':');
        if (next)
            *next++ = 0;
        if (n == 3 || parse_float(tok, &out[n]) < 0 || (positive && !(out[n] > 0)))
            return -1;
        n++;
    }
    if (n == 1)
        out[1] = out[2] = out[0];
    return n == 1 || n == 3 ? 0 : -1;
}

int oqc_preprocess_parse(const char *spec, OqcPreprocess *p, OqcDiag *d) {
    pp_defaults(p);
    char buf[512];
    if (strlen(spec) >= sizeof buf)
        return oqc_err(d, "--preprocess: the spec is too long");
    snprintf(buf, sizeof buf, "%s", spec);
    int first = 1;
    for (char *tok = buf, *next; tok; tok = next, first = 0) {
        next = strchr(tok, ',');
        if (next)
            *next++ = 0;
        char *eq = strchr(tok, '=');
        if (!eq) {
            if (!first)
                return oqc_err(d, "--preprocess '%s': a preset (%s) may only come first",
                               spec, tok);
            if (!strcmp(tok, "imagenet")) {
                p->resize = 256;
                p->crop_h = p->crop_w = 224;
                p->div = 255;
                memcpy(p->mean, imagenet_mean, sizeof p->mean);
                memcpy(p->std, imagenet_std, sizeof p->std);
            } else if (!strcmp(tok, "cifar")) {
                p->div = 255;
                memcpy(p->mean, cifar_mean, sizeof p->mean);
                memcpy(p->std, cifar_std, sizeof p->std);
            } else if (strcmp(tok, "raw") != 0) {
                return oqc_err(d, "--preprocess '%s': unknown preset '%s' (imagenet, cifar, "
                                  "raw, or keys resize=,crop=,scale=,mean=,std=,color=,"
                                  "layout=)", spec, tok);
            }
            continue;
        }
        *eq = 0;
        const char *key = tok, *v = eq + 1;
        int bad = 0;
        if (!strcmp(key, "resize")) {
            int h, w;
            bad = parse_size(v, &h, &w) < 0;
            if (!bad && strchr(v, 'x') == NULL && strchr(v, 'X') == NULL) {
                p->resize = h;
                p->resize_h = p->resize_w = 0;
            } else if (!bad) {
                p->resize = 0;
                p->resize_h = h;
                p->resize_w = w;
            }
        } else if (!strcmp(key, "crop")) {
            bad = parse_size(v, &p->crop_h, &p->crop_w) < 0;
        } else if (!strcmp(key, "scale")) {
            /* "1/N" divides (as ToTensor's /255: the same float bits), a number multiplies */
            if (!strncmp(v, "1/", 2)) {
                bad = parse_float(v + 2, &p->div) < 0 || !(p->div > 0);
                p->mul = 1;
            } else {
                bad = parse_float(v, &p->mul) < 0 || !(p->mul > 0);
                p->div = 1;
            }
        } else if (!strcmp(key, "mean")) {
            bad = parse_triple(v, p->mean, 0) < 0;
        } else if (!strcmp(key, "std")) {
            bad = parse_triple(v, p->std, 1) < 0;
        } else if (!strcmp(key, "color")) {
            p->color = !strcmp(v, "rgb") ? OQC_COLOR_RGB : !strcmp(v, "bgr") ? OQC_COLOR_BGR
                     : !strcmp(v, "gray") ? OQC_COLOR_GRAY : -1;
            bad = (int)p->color < 0;
        } else if (!strcmp(key, "layout")) {
            bad = strcmp(v, "nchw") && strcmp(v, "nhwc");
            p->nhwc = !strcmp(v, "nhwc");
        } else {
            return oqc_err(d, "--preprocess '%s': unknown key '%s' (resize, crop, scale, mean, "
                              "std, color, layout)", spec, key);
        }
        if (bad)
            return oqc_err(d, "--preprocess '%s': bad value '%s' for %s (resize=N|HxW, "
                              "crop=N|HxW, scale=X|1/N, mean=a:b:c, std=a:b:c (> 0), "
                              "color=rgb|bgr|gray, layout=nchw|nhwc)", spec, v, key);
    }
    p->given = 1;
    pp_canonical(p);
    return 0;
}

/* ================================================================== decoding */

/* Larger images are refused (a 16384 x 16384 photo is 268 M pixels, 805 MB as RGB). */
#define OQC_IMAGE_MAX_PIXELS ((uint64_t)1 << 28)

/* A decoded image: 8-bit pixels, 1 (gray) or 3 (RGB) interleaved channels. */
typedef struct Image {
    int w, h, c;          /* width, height, channels */
    unsigned char *px;    /* h * w * c bytes, malloc'd */
} Image;

static int ends_with_ci(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int oqc_is_image_path(const char *path) {
    return ends_with_ci(path, ".jpg") || ends_with_ci(path, ".jpeg") ||
           ends_with_ci(path, ".png");
}

/* libjpeg reports errors through error_exit, which must not return: back to setjmp. */
typedef struct JpegErr {
    struct jpeg_error_mgr pub;     /* libjpeg's part (first) */
    jmp_buf jb;                    /* where decode_jpeg waits */
    char msg[JMSG_LENGTH_MAX];     /* libjpeg's message */
} JpegErr;

static void jpeg_fail(j_common_ptr cinfo) {
    JpegErr *e = (JpegErr *)cinfo->err;
    cinfo->err->format_message(cinfo, e->msg);
    longjmp(e->jb, 1);
}

/* Warnings (level -1) are corrupt data libjpeg would paper over with gray: errors
 * here, as PIL raises on a truncated file.  Trace messages (level >= 0) are ignored. */
static void jpeg_message(j_common_ptr cinfo, int level) {
    if (level < 0)
        jpeg_fail(cinfo);
}

static int decode_jpeg(const char *path, FILE *f, Image *im, OqcDiag *d) {
    struct jpeg_decompress_struct cinfo;
    JpegErr jerr;
    unsigned char *volatile px = NULL;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = jpeg_fail;
    jerr.pub.emit_message = jpeg_message;
    if (setjmp(jerr.jb)) {
        jpeg_destroy_decompress(&cinfo);
        free(px);
        return oqc_err(d, "%s: corrupt or truncated JPEG: %s", path, jerr.msg);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, f);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        return oqc_err(d, "%s: CMYK JPEG is not supported (convert it to RGB, e.g. with "
                          "`convert IN -colorspace sRGB OUT.jpg`)", path);
    }
    /* PIL's decoding: islow IDCT and fancy upsampling are libjpeg's defaults */
    cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    if ((uint64_t)cinfo.image_width * cinfo.image_height > OQC_IMAGE_MAX_PIXELS) {
        jpeg_destroy_decompress(&cinfo);
        return oqc_err(d, "%s: %ux%u pixels is too large an image", path,
                       (unsigned)cinfo.image_width, (unsigned)cinfo.image_height);
    }
    jpeg_start_decompress(&cinfo);
    im->w = (int)cinfo.output_width;
    im->h = (int)cinfo.output_height;
    im->c = cinfo.output_components;
    size_t row = (size_t)im->w * (size_t)im->c;
    px = malloc(row * (size_t)im->h + 1);
    if (!px)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW r = px + row * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &r, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    im->px = px;
    return 0;
}

/* libpng errors longjmp back to decode_png with the message kept here. */
typedef struct PngErr {
    char msg[256];        /* libpng's message */
} PngErr;

static void png_fail(png_structp png, png_const_charp msg) {
    PngErr *e = png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(png, 1);
}

/* Warnings (an odd sRGB profile, a bad ancillary chunk) leave the pixels intact. */
static void png_warn(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static int decode_png(const char *path, FILE *f, Image *im, OqcDiag *d) {
    PngErr perr = {""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &perr, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *volatile px = NULL;
    png_bytep *volatile rows = NULL;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        oqc_panic(__FILE__, __LINE__, "out of memory");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(px);
        free(rows);
        return oqc_err(d, "%s: corrupt or truncated PNG: %s", path, perr.msg);
    }
    png_init_io(png, f);
    png_read_info(png, info);
    if ((uint64_t)png_get_image_width(png, info) * png_get_image_height(png, info) >
        OQC_IMAGE_MAX_PIXELS) {
        int rc = oqc_err(d, "%s: %ux%u pixels is too large an image", path,
                         (unsigned)png_get_image_width(png, info),
                         (unsigned)png_get_image_height(png, info));
        png_destroy_read_struct(&png, &info, NULL);
        return rc;
    }
    int type = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
    /* to 8-bit gray or RGB, as PIL's convert("RGB"/"L") would see it (docs/images.md) */
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16)
        png_set_strip_16(png);
    if ((type & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
        png_set_strip_alpha(png); /* (palette transparency becomes alpha, then goes) */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    im->w = (int)png_get_image_width(png, info);
    im->h = (int)png_get_image_height(png, info);
    im->c = png_get_channels(png, info);
    size_t row = png_get_rowbytes(png, info);
    if ((im->c != 1 && im->c != 3) || row != (size_t)im->w * (size_t)im->c) {
        png_destroy_read_struct(&png, &info, NULL);
        return oqc_err(d, "%s: PNG of color type %d, %d bits, is not supported", path, type,
                       depth);
    }
    px = malloc(row * (size_t)im->h + 1);
    rows = malloc((size_t)im->h * sizeof *rows + 1);
    if (!px || !rows)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int y = 0; y < im->h; y++)
        rows[y] = px + row * (size_t)y;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    im->px = px;
    return 0;
}

/* Decodes path by its content (magic bytes), whatever its name says. */
static int decode(const char *path, Image *im, OqcDiag *d) {
    memset(im, 0, sizeof *im);
    FILE *f = oqc_in_fopen(path, d); /* (a FIFO or a device is refused, not waited on) */
    if (!f)
        return -1;
    unsigned char magic[8] = {0};
    size_t got = fread(magic, 1, sizeof magic, f);
    rewind(f);
    int rc;
    if (got >= 3 && magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff)
        rc = decode_jpeg(path, f, im, d);
    else if (got == 8 && !memcmp(magic, "\x89PNG\r\n\x1a\n", 8))
        rc = decode_png(path, f, im, d);
    else
        rc = oqc_err(d, "%s: not a JPEG or PNG image (unknown file signature)", path);
    fclose(f);
    if (rc == 0 && (im->w < 1 || im->h < 1)) {
        free(im->px);
        im->px = NULL;
        rc = oqc_err(d, "%s: empty image", path);
    }
    return rc;
}

/* ================================================================== resizing */

#define PIL_PRECISION_BITS 22   /* Pillow's 32 - 8 - 2 */

/* Pillow's precompute_coeffs for the bilinear (triangle, support 1) filter resizing
 * [0, in) to out pixels, for the n output pixels from first on: for each, its first
 * input pixel and count, and ksize fixed-point weights (normalize_coeffs_8bpc's
 * rounding).  Each output pixel's coefficients depend on it alone, so a window of the
 * output costs what the window holds. */
static int resize_coeffs(int in, int out, int first, int n, int **bounds, int32_t **kk) {
    double scale = (double)(float)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * filterscale, ss = 1.0 / filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    double *w = malloc((size_t)ksize * sizeof *w);
    *bounds = malloc((size_t)n * 2 * sizeof **bounds);
    *kk = malloc((size_t)n * (size_t)ksize * sizeof **kk);
    if (!w || !*bounds || !*kk)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < n; i++) {
        double center = ((double)first + i + 0.5) * scale, ww = 0.0;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0)
            xmin = 0;
        if (xmax > in)
            xmax = in;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            double t = fabs((x + xmin - center + 0.5) * ss);
            w[x] = t < 1.0 ? 1.0 - t : 0.0;
            ww += w[x];
        }
        int32_t *k = *kk + (size_t)i * (size_t)ksize;
        for (int x = 0; x < ksize; x++) {
            double v = x < xmax && ww != 0.0 ? w[x] / ww : 0.0;
            k[x] = (int32_t)(v < 0 ? -0.5 + v * (1 << PIL_PRECISION_BITS)
                                   : 0.5 + v * (1 << PIL_PRECISION_BITS));
        }
        (*bounds)[2 * i] = xmin;
        (*bounds)[2 * i + 1] = xmax;
    }
    free(w);
    return ksize;
}

static unsigned char clip8(int32_t v) {
    v >>= PIL_PRECISION_BITS; /* arithmetic shift, as Pillow's lookup index */
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The window of cw x ch pixels at (left, top) of im resized to ow x oh, as Pillow's
 * ImagingResampleInner computes those pixels: the horizontal pass (when the width
 * changes) over the rows the vertical pass reads, rounded to uint8, then the vertical
 * pass (when the height changes).  Only the window is computed, so an image whose
 * resized size is huge (a 1 x 10^6 strip resized to a shorter side of 256) costs what
 * the crop holds, not what the resized image would. */
static void resize_crop(Image *im, int ow, int oh, int left, int top, int cw, int ch) {
    int c = im->c, *vb = NULL, *hb = NULL, vks = 0, hks = 0;
    int32_t *vk = NULL, *hk = NULL;
    const unsigned char *src = im->px;
    unsigned char *tmp = NULL;
    size_t sw = (size_t)im->w;
    int x0 = left, y0 = top, rows = ch; /* where the window starts in src, rows it reads */
    if (oh != im->h) {
        vks = resize_coeffs(im->h, oh, top, ch, &vb, &vk);
        y0 = vb[0];
        rows = vb[2 * ch - 2] + vb[2 * ch - 1] - y0;
    }
    if (ow != im->w) {
        hks = resize_coeffs(im->w, ow, left, cw, &hb, &hk);
        tmp = malloc((size_t)rows * (size_t)cw * (size_t)c + 1);
        if (!tmp)
            oqc_panic(__FILE__, __LINE__, "out of memory");
        for (int y = 0; y < rows; y++)
            for (int xx = 0; xx < cw; xx++) {
                const int32_t *k = hk + (size_t)xx * (size_t)hks;
                const unsigned char *s = src + ((size_t)(y0 + y) * sw + (size_t)hb[2 * xx]) * (size_t)c;
                for (int ch_ = 0; ch_ < c; ch_++) {
                    int32_t acc = 1 << (PIL_PRECISION_BITS - 1);
                    for (int x = 0; x < hb[2 * xx + 1]; x++)
                        acc += s[x * c + ch_] * k[x];
                    tmp[((size_t)y * (size_t)cw + (size_t)xx) * (size_t)c + (size_t)ch_] = clip8(acc);
                }
            }
        src = tmp; /* tmp's row 0 is the image's row y0, its column 0 the window's */
        sw = (size_t)cw;
        x0 = y0 = 0;
    }
    size_t orow = (size_t)cw * (size_t)c;
    unsigned char *out = malloc((size_t)ch * orow + 1);
    if (!out)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (int yy = 0; yy < ch; yy++) {
        const unsigned char *s = src + (size_t)x0 * (size_t)c;
        if (vb) {
            const int32_t *k = vk + (size_t)yy * (size_t)vks;
            int ymin = vb[2 * yy] - vb[0], n = vb[2 * yy + 1];
            if (!tmp)
                ymin += vb[0]; /* no horizontal pass: rows of the image itself */
            for (size_t i = 0; i < orow; i++) {
                int32_t acc = 1 << (PIL_PRECISION_BITS - 1);
                for (int y = 0; y < n; y++)
                    acc += s[(size_t)(ymin + y) * sw * (size_t)c + i] * k[y];
                out[(size_t)yy * orow + i] = clip8(acc);
            }
        } else {
            memcpy(out + (size_t)yy * orow, s + (size_t)(y0 + yy) * sw * (size_t)c, orow);
        }
    }
    free(tmp);
    free(vb);
    free(vk);
    free(hb);
    free(hk);
    free(im->px);
    im->px = out;
    im->w = cw;
    im->h = ch;
}

/* ============================================================== preprocessing */

/* Python's round() of a half-integer-or-integer x / 2: half to even. */
static int half_even(int x) {
    int q = x / 2;
    return x % 2 && q % 2 ? q + 1 : q;
}

/* Color conversion as PIL's Image.convert: to 3 channels replicates gray; to gray is
 * L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16. */
static void convert_color(Image *im, int want) {
    if (im->c == want)
        return;
    size_t n = (size_t)im->w * (size_t)im->h;
    unsigned char *out = malloc(n * (size_t)want + 1);
    if (!out)
        oqc_panic(__FILE__, __LINE__, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = im->px + i * (size_t)im->c;
        if (want == 3)
            out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = p[0];
        else
            out[i] = (unsigned char)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
    }
    free(im->px);
    im->px = out;
    im->c = want;
}

int oqc_image_geometry(const OqcPreprocess *p, const OqcShape *in, int *c, int *h, int *w,
                       OqcDiag *d) {
    char buf[128];
    int r = in->rank, b = r == 4 ? 1 : 0;
    if ((r != 3 && r != 4) || (r == 4 && in->d[0] != 1))
        return oqc_err(d, "image input needs a model input of shape [1,C,H,W], [C,H,W] (or "
                          "NHWC with layout=nhwc), not %s", oqc_shape_str(in, buf, sizeof buf));
    *c = (int)in->d[p->nhwc ? b + 2 : b];
    *h = (int)in->d[p->nhwc ? b : b + 1];
    *w = (int)in->d[p->nhwc ? b + 1 : b + 2];
    int want = p->color == OQC_COLOR_GRAY ? 1 : 3;
    if (*c != want)
        return oqc_err(d, "--preprocess %s gives %d channel%s but the model input %s has %d "
                          "in layout %s (use color=%s%s)", p->spec, want, want == 1 ? "" : "s",
                       oqc_shape_str(in, buf, sizeof buf), *c, p->nhwc ? "nhwc" : "nchw",
                       *c == 1 ? "gray" : "rgb", *c == want ? "" : " or the other layout");
    return 0;
}

int oqc_image_load(const char *path, const OqcPreprocess *p, const OqcShape *in, float *out,
                   OqcDiag *d) {
    int C, H, W;
    if (oqc_image_geometry(p, in, &C, &H, &W, d) < 0)
        return -1;
    Image im;
    if (decode(path, &im, d) < 0)
        return -1;
    convert_color(&im, C);
    int64_t rh = 0, rw = 0;
    if (p->resize_h) {
        rh = p->resize_h;
        rw = p->resize_w;
    } else if (p->resize) { /* the shorter side to resize, as torchvision's Resize(int) */
        int shrt = im.w < im.h ? im.w : im.h, lng = im.w < im.h ? im.h : im.w;
        double other = (double)p->resize * lng / shrt; /* < 2^36: no overflow */
        rw = im.w <= im.h ? p->resize : (int64_t)other;
        rh = im.w <= im.h ? (int64_t)other : p->resize;
    }
    int rc = 0;
    if (rh > INT_MAX || rw > INT_MAX)
        rc = oqc_err(d, "%s: image is %dx%d (HxW), %lldx%lld after resizing: too large", path,
                     im.h, im.w, (long long)rh, (long long)rw);
    int64_t fh = rh ? rh : im.h, fw = rh ? rw : im.w; /* after resizing */
    int ch = p->crop_h ? p->crop_h : (int)fh, cw = p->crop_h ? p->crop_w : (int)fw;
    if (rc == 0 && (ch > fh || cw > fw))
        rc = oqc_err(d, "%s: image is %lldx%lld (HxW)%s, smaller than the crop %dx%d", path,
                     (long long)fh, (long long)fw, rh ? " after resizing" : "", ch, cw);
    else if (rc == 0 && (ch != H || cw != W))
        rc = oqc_err(d, "%s: image is %dx%d (HxW) after --preprocess %s but the model input "
                        "takes %dx%d (set resize= and crop=)", path, ch, cw, p->spec, H, W);
    if (rc < 0) {
        free(im.px);
        return -1;
    }
    resize_crop(&im, (int)fw, (int)fh, half_even((int)fw - cw), half_even((int)fh - ch), cw, ch);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const unsigned char *px = im.px + ((size_t)y * (size_t)W + (size_t)x) * (size_t)C;
            for (int c = 0; c < C; c++) {
                int sc = p->color == OQC_COLOR_BGR ? 2 - c : c;
                float v = (float)px[sc] * p->mul / p->div;
                v = (v - p->mean[c]) / p->std[c];
                size_t at = p->nhwc ? ((size_t)y * (size_t)W + (size_t)x) * (size_t)C + (size_t)c
                                    : ((size_t)c * (size_t)H + (size_t)y) * (size_t)W + (size_t)x;
                out[at] = v;
            }
        }
    free(im.px);
    return 0;
}

int oqc_images_read(const char *const *files, int64_t n, const OqcPreprocess *p,
                    const OqcShape *in, OqcArena *a, OqcValue *v, OqcDiag *d) {
    memset(v, 0, sizeof *v);
    int64_t per = oqc_shape_numel(in);
    v->dtype = OQCF_FLOAT;
    v->shape = *in;
    if (in->rank == 4) { /* [n, C, H, W]: n samples stacked on the batch axis */
        v->shape.d[0] = n;
    } else {             /* [n, C, H, W] from [C, H, W]: a leading sample axis */
        for (int i = in->rank; i > 0; i--)
            v->shape.d[i] = v->shape.d[i - 1];
        v->shape.d[0] = n;
        v->shape.rank++;
    }
    v->nbytes = (size_t)(per * n) * sizeof(float);
    v->data = oqc_arena_alloc_raw(a, v->nbytes + 1);
    for (int64_t i = 0; i < n; i++)
        if (oqc_image_load(files[i], p, in, (float *)v->data + i * per, d) < 0)
            return -1;
    return 0;
}

/* ============================================================ data file lists */

/* A growing array of paths in an arena. */
typedef struct PathList {
    OqcArena *a;          /* owner */
    const char **v;       /* paths */
    int n, cap;           /* used, allocated */
} PathList;

static void push(PathList *l, const char *path) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        l->v = oqc_arena_grow(l->a, l->v, (size_t)l->n, (size_t)cap, sizeof *l->v);
        l->cap = cap;
    }
    l->v[l->n++] = path;
}

static int by_name(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The names in dir (no . or ..), sorted by bytes as Python's sorted(); -1 on error. */
static int list_dir(OqcArena *a, const char *dir, char ***names) {
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    int n = 0, cap = 16;
    char **v = oqc_arena_alloc(a, (size_t)cap * sizeof *v);
    for (struct dirent *e; (e = readdir(dp));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            v = oqc_arena_grow(a, v, (size_t)n, (size_t)cap * 2, sizeof *v);
            cap *= 2;
        }
        v[n++] = oqc_arena_strdup(a, e->d_name);
    }
    closedir(dp);
    qsort(v, (size_t)n, sizeof *v, by_name);
    *names = v;
    return n;
}

static int is_tensor_path(const char *p) {
    return ends_with_ci(p, ".npy") || ends_with_ci(p, ".pb");
}

/* Directory dir: its data files at every depth, each level in name order (as
 * torchvision's ImageFolder walks), hidden entries skipped. */
static int walk(PathList *l, const char *dir, int depth, OqcDiag *d) {
    char **names;
    int n = list_dir(l->a, dir, &names);
    if (n < 0)
        return oqc_err(d, "%s: cannot list the directory: %s", dir, strerror(errno));
    if (depth > 32)
        return oqc_err(d, "%s: directories nested too deep", dir);
    oqc_in_note_dir(dir);
    for (int i = 0; i < n; i++) {
        if (names[i][0] == '.')
            continue;
        char *p = oqc_arena_printf(l->a, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(p, &st) != 0)
            continue; /* a dangling link */
        if (S_ISDIR(st.st_mode)) {
            if (walk(l, p, depth + 1, d) < 0)
                return -1;
        } else if (oqc_is_image_path(p) || is_tensor_path(p)) {
            push(l, p);
        }
    }
    return 0;
}

int oqc_is_list_path(const char *path) {
    return ends_with_ci(path, ".txt") || ends_with_ci(path, ".lst");
}

/* One line of a list file split into its path and optional trailing class number
 * ("PATH" or "PATH CLASS"); 0 for a blank or # comment line. */
static int split_line(char *line, char **path, long long *cls, int *has_cls) {
    size_t len = strlen(line);
    while (len && isspace((unsigned char)line[len - 1]))
        line[--len] = 0;
    char *s = line;
    while (isspace((unsigned char)*s))
        s++;
    if (!*s || *s == '#')
        return 0;
    *has_cls = 0;
    char *sp = s + strlen(s);
    while (sp > s && !isspace((unsigned char)sp[-1]))
        sp--;
    if (sp > s) {
        char *end;
        errno = 0;
        long long v = strtoll(sp, &end, 10);
        if (end != sp && !*end && !errno) {
            *cls = v;
            *has_cls = 1;
            while (sp > s && isspace((unsigned char)sp[-1]))
                sp--;
            *sp = 0;
        }
    }
    *path = s;
    return 1;
}

/* Reads list file path: each entry's path (relative ones resolved against the list's
 * directory) and class (-1 when the line has none). */
static int read_list(OqcArena *a, const char *path, const char ***paths, long long **cls,
                     int *n, OqcDiag *d) {
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    const char *slash = strrchr(path, '/');
    char *base = slash ? oqc_arena_strndup(a, path, (size_t)(slash - path)) : NULL;
    PathList l = {a, NULL, 0, 0};
    long long *c = NULL;
    int cap = 0, rc = 0;
    char *line = NULL;
    size_t lcap = 0;
    while (getline(&line, &lcap, f) >= 0) {
        char *p;
        long long k = -1;
        int has;
        if (!split_line(line, &p, &k, &has))
            continue;
        push(&l, p[0] == '/' || !base ? oqc_arena_strdup(a, p)
                                      : oqc_arena_printf(a, "%s/%s", base, p));
        if (l.cap != cap) {
            c = oqc_arena_grow(a, c, (size_t)cap, (size_t)l.cap, sizeof *c);
            cap = l.cap;
        }
        c[l.n - 1] = has ? k : -1;
    }
    free(line);
    if (rc == 0 && ferror(f))
        rc = oqc_err(d, "%s: read error", path);
    fclose(f);
    *paths = l.v;
    *cls = c;
    *n = l.n;
    return rc;
}

int oqc_data_files(OqcArena *a, const char *const *paths, int npaths, const char ***out,
                   int *n, OqcDiag *d) {
    PathList l = {a, NULL, 0, 0};
    for (int p = 0; p < npaths; p++) {
        struct stat st;
        if (stat(paths[p], &st) != 0)
            return oqc_err(d, "%s: cannot read: %s", paths[p], strerror(errno));
        if (S_ISDIR(st.st_mode)) {
            int before = l.n;
            if (walk(&l, paths[p], 0, d) < 0)
                return -1;
            if (l.n == before)
                return oqc_err(d, "%s: no .npy, .pb, .jpg, .jpeg or .png files in the "
                                  "directory", paths[p]);
        } else if (oqc_is_list_path(paths[p])) {
            const char **v;
            long long *cls;
            int m;
            if (read_list(a, paths[p], &v, &cls, &m, d) < 0)
                return -1;
            if (m == 0)
                return oqc_err(d, "%s: the list names no files", paths[p]);
            for (int i = 0; i < m; i++)
                push(&l, v[i]);
        } else {
            push(&l, paths[p]);
        }
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

int oqc_data_has_images(const char *const *files, int n) {
    for (int i = 0; i < n; i++)
        if (oqc_is_image_path(files[i]))
            return 1;
    return 0;
}

/* ==================================================================== labels */

int oqc_image_labels(OqcArena *a, const char *data, const char *const *files, int n,
                     const char *labels, OqcValue *v, OqcDiag *d) {
    int64_t *lab = oqc_arena_alloc(a, (size_t)n * sizeof *lab + 1);
    if (!strcmp(labels, "folders")) {
        /* ImageFolder: the class of DATA/CLASS/.../file is CLASS's index among the
         * sorted sub-folders of DATA */
        char **names;
        int nn = list_dir(a, data, &names);
        if (nn < 0)
            return oqc_err(d, "--labels folders: %s: not a directory (give --data DIR with "
                              "one sub-folder per class)", data);
        int k = 0;
        for (int i = 0; i < nn; i++) {
            struct stat st;
            if (names[i][0] != '.' &&
                stat(oqc_arena_printf(a, "%s/%s", data, names[i]), &st) == 0 &&
                S_ISDIR(st.st_mode))
                names[k++] = names[i];
        }
        size_t dl = strlen(data);
        for (int i = 0; i < n; i++) {
            const char *rel = files[i] + dl + 1, *sl = strchr(rel, '/');
            lab[i] = -1;
            for (int c = 0; sl && c < k; c++)
                if (strlen(names[c]) == (size_t)(sl - rel) && !strncmp(names[c], rel, (size_t)(sl - rel)))
                    lab[i] = c;
            if (lab[i] < 0)
                return oqc_err(d, "--labels folders: %s is not inside a class sub-folder of %s",
                               files[i], data);
        }
    } else {
        const char **paths;
        long long *cls;
        int m;
        if (read_list(a, labels, &paths, &cls, &m, d) < 0)
            return -1;
        /* matched by the file each names (realpath), whatever way the path is spelt */
        char **real = oqc_arena_alloc(a, (size_t)m * sizeof *real + 1);
        for (int j = 0; j < m; j++) {
            char *r = realpath(paths[j], NULL);
            real[j] = r ? oqc_arena_strdup(a, r) : NULL;
            free(r);
            if (cls[j] < 0)
                return oqc_err(d, "%s: entry %d (%s) has no class number (lines are PATH "
                                  "CLASS)", labels, j + 1, paths[j]);
        }
        for (int i = 0; i < n; i++) {
            char *r = realpath(files[i], NULL);
            lab[i] = -1;
            for (int j = 0; r && j < m && lab[i] < 0; j++)
                if (real[j] && !strcmp(real[j], r))
                    lab[i] = cls[j];
            free(r);
            if (lab[i] < 0)
                return oqc_err(d, "%s: no class for %s", labels, files[i]);
        }
    }
    memset(v, 0, sizeof *v);
    v->dtype = OQCF_INT64;
    v->shape.rank = 1;
    v->shape.d[0] = n;
    v->data = lab;
    v->nbytes = (size_t)n * sizeof *lab;
    return 0;
}
