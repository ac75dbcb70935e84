/* oqc_image.c - JPEG/PNG decoding and PIL's preprocessing to 8-bit pixels (see
 * oqc_image.h), for oqc (compiler/frontend/image_io.c) and the driver of `oqc compile --main`. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200112L
#endif

#include "oqc_image.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

/* A decoded image: 8-bit pixels, 1 (gray) or 3 (RGB) interleaved channels. */
typedef struct Image {
    int w, h, c;          /* width, height, channels */
    unsigned char *px;    /* h * w * c bytes, malloc'd */
} Image;

static int ends_with_ci(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix), i;
    if (n < m)
        return 0;
    for (i = 0; i < m; i++) {
        char a = s[n - m + i];
        if ((a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) != suffix[i])
            return 0;
    }
    return 1;
}

int oqc_img_is_image_path(const char *path) {
    return ends_with_ci(path, ".jpg") || ends_with_ci(path, ".jpeg") ||
           ends_with_ci(path, ".png");
}

/* ================================================================== decoding */

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

static int decode_jpeg(FILE *f, Image *im, char *err, size_t errlen) {
    struct jpeg_decompress_struct cinfo;
    JpegErr jerr;
    unsigned char *volatile px = NULL;
    size_t row;
    cinfo.err = jpeg_std_error(&jerr.pub);
    jerr.pub.error_exit = jpeg_fail;
    jerr.pub.emit_message = jpeg_message;
    if (setjmp(jerr.jb)) {
        jpeg_destroy_decompress(&cinfo);
        free(px);
        snprintf(err, errlen, "corrupt or truncated JPEG: %s", jerr.msg);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, f);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        snprintf(err, errlen, "CMYK JPEG is not supported (convert it to RGB, e.g. with "
                              "`convert IN -colorspace sRGB OUT.jpg`)");
        return -1;
    }
    /* PIL's decoding: islow IDCT and fancy upsampling are libjpeg's defaults */
    cinfo.out_color_space = cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    if ((uint64_t)cinfo.image_width * cinfo.image_height > OQC_IMG_MAX_PIXELS) {
        snprintf(err, errlen, "%ux%u pixels is too large an image", (unsigned)cinfo.image_width,
                 (unsigned)cinfo.image_height);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_start_decompress(&cinfo);
    im->w = (int)cinfo.output_width;
    im->h = (int)cinfo.output_height;
    im->c = cinfo.output_components;
    row = (size_t)im->w * (size_t)im->c;
    px = malloc(row * (size_t)im->h + 1);
    if (!px) {
        jpeg_destroy_decompress(&cinfo);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
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

static int decode_png(FILE *f, Image *im, char *err, size_t errlen) {
    PngErr perr = {""};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &perr, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    unsigned char *volatile px = NULL;
    png_bytep *volatile rows = NULL;
    int type, depth, y;
    size_t row;
    if (!info) {
        png_destroy_read_struct(png ? &png : NULL, NULL, NULL);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(px);
        free(rows);
        snprintf(err, errlen, "corrupt or truncated PNG: %s", perr.msg);
        return -1;
    }
    png_init_io(png, f);
    png_read_info(png, info);
    if ((uint64_t)png_get_image_width(png, info) * png_get_image_height(png, info) >
        OQC_IMG_MAX_PIXELS) {
        snprintf(err, errlen, "%ux%u pixels is too large an image",
                 (unsigned)png_get_image_width(png, info),
                 (unsigned)png_get_image_height(png, info));
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    type = png_get_color_type(png, info);
    depth = png_get_bit_depth(png, info);
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
    row = png_get_rowbytes(png, info);
    if ((im->c != 1 && im->c != 3) || row != (size_t)im->w * (size_t)im->c) {
        png_destroy_read_struct(&png, &info, NULL);
        snprintf(err, errlen, "PNG of color type %d, %d bits, is not supported", type, depth);
        return -1;
    }
    px = malloc(row * (size_t)im->h + 1);
    rows = malloc((size_t)im->h * sizeof *rows + 1);
    if (!px || !rows) {
        png_destroy_read_struct(&png, &info, NULL);
        free(px);
        free(rows);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (y = 0; y < im->h; y++)
        rows[y] = px + row * (size_t)y;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    im->px = px;
    return 0;
}

/* Decodes the open file f by its content (magic bytes), whatever its name says. */
static int decode(FILE *f, Image *im, char *err, size_t errlen) {
    unsigned char magic[8] = {0};
    size_t got;
    int rc;
    memset(im, 0, sizeof *im);
    got = fread(magic, 1, sizeof magic, f);
    rewind(f);
    if (got >= 3 && magic[0] == 0xff && magic[1] == 0xd8 && magic[2] == 0xff)
        rc = decode_jpeg(f, im, err, errlen);
    else if (got == 8 && !memcmp(magic, "\x89PNG\r\n\x1a\n", 8))
        rc = decode_png(f, im, err, errlen);
    else {
        snprintf(err, errlen, "not a JPEG or PNG image (unknown file signature)");
        rc = -1;
    }
    if (rc == 0 && (im->w < 1 || im->h < 1)) {
        free(im->px);
        im->px = NULL;
        snprintf(err, errlen, "empty image");
        rc = -1;
    }
    return rc;
}

/* ================================================================== resizing */

#define PIL_PRECISION_BITS 22   /* Pillow's 32 - 8 - 2 */

/* Pillow's precompute_coeffs for the bilinear (triangle, support 1) filter resizing
 * [0, in) to out pixels, for the n output pixels from first on: for each, its first
 * input pixel and count, and ksize fixed-point weights (normalize_coeffs_8bpc's
 * rounding).  Each output pixel's coefficients depend on it alone, so a window of the
 * output costs what the window holds.  -1: out of memory. */
static int resize_coeffs(int in, int out, int first, int n, int **bounds, int32_t **kk) {
    double scale = (double)(float)in / out, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 1.0 * filterscale, ss = 1.0 / filterscale;
    int ksize = (int)ceil(support) * 2 + 1, i, x;
    double *w = malloc((size_t)ksize * sizeof *w);
    *bounds = malloc((size_t)n * 2 * sizeof **bounds);
    *kk = malloc((size_t)n * (size_t)ksize * sizeof **kk);
    if (!w || !*bounds || !*kk) {
        free(w);
        free(*bounds);
        free(*kk);
        *bounds = NULL;
        *kk = NULL;
        return -1;
    }
    for (i = 0; i < n; i++) {
        double center = ((double)first + i + 0.5) * scale, ww = 0.0;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        int32_t *k = *kk + (size_t)i * (size_t)ksize;
        if (xmin < 0)
            xmin = 0;
        if (xmax > in)
            xmax = in;
        xmax -= xmin;
        for (x = 0; x < xmax; x++) {
            double t = fabs((x + xmin - center + 0.5) * ss);
            w[x] = t < 1.0 ? 1.0 - t : 0.0;
            ww += w[x];
        }
        for (x = 0; x < ksize; x++) {
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
 * the crop holds, not what the resized image would.  -1: out of memory (im unchanged). */
static int resize_crop(Image *im, int ow, int oh, int left, int top, int cw, int ch) {
    int c = im->c, *vb = NULL, *hb = NULL, vks = 0, hks = 0, rc = -1, yy;
    int32_t *vk = NULL, *hk = NULL;
    const unsigned char *src = im->px;
    unsigned char *tmp = NULL, *out = NULL;
    size_t sw = (size_t)im->w, orow = (size_t)cw * (size_t)c;
    int x0 = left, y0 = top, rows = ch; /* where the window starts in src, rows it reads */
    if (oh != im->h) {
        vks = resize_coeffs(im->h, oh, top, ch, &vb, &vk);
        if (vks < 0)
            return -1;
        y0 = vb[0];
        rows = vb[2 * ch - 2] + vb[2 * ch - 1] - y0;
    }
    if (ow != im->w) {
        int y, xx;
        hks = resize_coeffs(im->w, ow, left, cw, &hb, &hk);
        if (hks < 0)
            goto done;
        tmp = malloc((size_t)rows * (size_t)cw * (size_t)c + 1);
        if (!tmp)
            goto done;
        for (y = 0; y < rows; y++)
            for (xx = 0; xx < cw; xx++) {
                const int32_t *k = hk + (size_t)xx * (size_t)hks;
                const unsigned char *s = src + ((size_t)(y0 + y) * sw + (size_t)hb[2 * xx]) * (size_t)c;
                int k_, x;
                for (k_ = 0; k_ < c; k_++) {
                    int32_t acc = 1 << (PIL_PRECISION_BITS - 1);
                    for (x = 0; x < hb[2 * xx + 1]; x++)
                        acc += s[x * c + k_] * k[x];
                    tmp[((size_t)y * (size_t)cw + (size_t)xx) * (size_t)c + (size_t)k_] = clip8(acc);
                }
            }
        src = tmp; /* tmp's row 0 is the image's row y0, its column 0 the window's */
        sw = (size_t)cw;
        x0 = y0 = 0;
    }
    out = malloc((size_t)ch * orow + 1);
    if (!out)
        goto done;
    for (yy = 0; yy < ch; yy++) {
        const unsigned char *s = src + (size_t)x0 * (size_t)c;
        if (vb) {
            const int32_t *k = vk + (size_t)yy * (size_t)vks;
            int ymin = vb[2 * yy] - vb[0], n = vb[2 * yy + 1], y;
            size_t i;
            if (!tmp)
                ymin += vb[0]; /* no horizontal pass: rows of the image itself */
            for (i = 0; i < orow; i++) {
                int32_t acc = 1 << (PIL_PRECISION_BITS - 1);
                for (y = 0; y < n; y++)
                    acc += s[(size_t)(ymin + y) * sw * (size_t)c + i] * k[y];
                out[(size_t)yy * orow + i] = clip8(acc);
            }
        } else {
            memcpy(out + (size_t)yy * orow, s + (size_t)(y0 + yy) * sw * (size_t)c, orow);
        }
    }
    free(im->px);
    im->px = out;
    im->w = cw;
    im->h = ch;
    rc = 0;
done:
    free(tmp);
    free(vb);
    free(vk);
    free(hb);
    free(hk);
    return rc;
}

/* ============================================================== preprocessing */

/* Python's round() of a half-integer-or-integer x / 2: half to even. */
static int half_even(int x) {
    int q = x / 2;
    return x % 2 && q % 2 ? q + 1 : q;
}

/* Color conversion as PIL's Image.convert: to 3 channels replicates gray; to gray is
 * L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16.  -1: out of memory. */
static int convert_color(Image *im, int want) {
    size_t n = (size_t)im->w * (size_t)im->h, i;
    unsigned char *out;
    if (im->c == want)
        return 0;
    out = malloc(n * (size_t)want + 1);
    if (!out)
        return -1;
    for (i = 0; i < n; i++) {
        const unsigned char *p = im->px + i * (size_t)im->c;
        if (want == 3)
            out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = p[0];
        else
            out[i] = (unsigned char)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
    }
    free(im->px);
    im->px = out;
    im->c = want;
    return 0;
}

int oqc_img_pixels(const char *path, const OqcImgSpec *s, int C, int H, int W,
                   unsigned char *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    int rc;
    if (!f) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -1;
    }
    rc = oqc_img_pixels_file(f, s, C, H, W, out, err, errlen);
    fclose(f);
    return rc;
}

int oqc_img_pixels_file(FILE *f, const OqcImgSpec *s, int C, int H, int W,
                        unsigned char *out, char *err, size_t errlen) {
    Image im;
    long long rh = 0, rw = 0, fh, fw;
    int ch, cw, x, y, c;
    if (decode(f, &im, err, errlen) < 0)
        return -1;
    if (convert_color(&im, C) < 0)
        goto oom;
    if (s->resize_h) {
        rh = s->resize_h;
        rw = s->resize_w;
    } else if (s->resize) { /* the shorter side to resize, as torchvision's Resize(int) */
        int shrt = im.w < im.h ? im.w : im.h, lng = im.w < im.h ? im.h : im.w;
        double other = (double)s->resize * lng / shrt; /* < 2^36: no overflow */
        rw = im.w <= im.h ? s->resize : (long long)other;
        rh = im.w <= im.h ? (long long)other : s->resize;
    }
    if (rh > INT_MAX || rw > INT_MAX) {
        snprintf(err, errlen, "image is %dx%d (HxW), %lldx%lld after resizing: too large", im.h,
                 im.w, rh, rw);
        free(im.px);
        return -1;
    }
    fh = rh ? rh : im.h; /* after resizing */
    fw = rh ? rw : im.w;
    ch = s->crop_h ? s->crop_h : (int)fh;
    cw = s->crop_h ? s->crop_w : (int)fw;
    if (ch > fh || cw > fw) {
        snprintf(err, errlen, "image is %lldx%lld (HxW)%s, smaller than the crop %dx%d", fh, fw,
                 rh ? " after resizing" : "", ch, cw);
        free(im.px);
        return -1;
    }
    if (ch != H || cw != W) {
        snprintf(err, errlen, "image is %dx%d (HxW) after the declared resize and crop but "
                              "the model input takes %dx%d (set resize= and crop=)", ch, cw, H, W);
        free(im.px);
        return -1;
    }
    if (resize_crop(&im, (int)fw, (int)fh, half_even((int)fw - cw), half_even((int)fh - ch), cw,
                    ch) < 0)
        goto oom;
    for (y = 0; y < H; y++)
        for (x = 0; x < W; x++) {
            const unsigned char *px = im.px + ((size_t)y * (size_t)W + (size_t)x) * (size_t)C;
            for (c = 0; c < C; c++) {
                size_t at = s->nhwc ? ((size_t)y * (size_t)W + (size_t)x) * (size_t)C + (size_t)c
                                    : ((size_t)c * (size_t)H + (size_t)y) * (size_t)W + (size_t)x;
                out[at] = px[s->color == OQC_IMG_BGR ? C - 1 - c : c];
            }
        }
    free(im.px);
    return 0;
oom:
    free(im.px);
    snprintf(err, errlen, "out of memory");
    return -1;
}
