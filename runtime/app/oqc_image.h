/* oqc_image.h - images as model inputs: JPEG/PNG decoding and torchvision's PIL
 * preprocessing up to 8-bit pixels (decode, convert, resize, centre crop), shared by oqc
 * itself (compiler/frontend/image_io.c, which adds the float normalisation) and the driver that
 * `oqc compile --main` writes next to an emitted model (runtime/app/oqc_main.c), so both
 * make the same pixels of a file.  Needs libjpeg(-turbo) and libpng: -ljpeg -lpng.
 * Not part of an emitted model's NAME.mk.  User documentation: docs/images.md.
 *
 * The steps, each PIL's:
 *   1. decode to 8 bits (libjpeg-turbo with PIL's settings, libpng) and convert to RGB or
 *      L as Image.convert does (gray -> RGB replicates; RGB -> L is ITU-R 601-2 luma in
 *      PIL's 16-bit fixed point; alpha dropped, palettes expanded, 16 bits cut to the high
 *      byte);
 *   2. resize with PIL's BILINEAR filter (Pillow's Resample.c: separable, horizontal pass
 *      first, a triangle filter whose support grows with the downscale factor, so
 *      shrinking averages like an antialiasing filter; coefficients in 22-bit fixed
 *      point, each pass rounded to uint8);
 *   3. centre crop, offsets rounded half to even (Python's round, as CenterCrop);
 * then the pixels are laid out in the model's channel order (BGR reverses RGB) and
 * layout (planar NCHW or interleaved NHWC); oqc_img_value gives ToTensor + Normalize's
 * float of one pixel.  Decoding is strict: a truncated or corrupt file, a CMYK JPEG or a
 * file that is not a JPEG or PNG is an error.  Errors are returned as -1 with a message
 * (without the file name) in the caller's buffer. */
#ifndef OQC_IMAGE_H_INCLUDED
#define OQC_IMAGE_H_INCLUDED

#include <stddef.h>
#include <stdio.h>

/* Larger images are refused (a 16384 x 16384 photo is 268 M pixels, 805 MB as RGB). */
#define OQC_IMG_MAX_PIXELS (1UL << 28)

/* Color the model takes. */
enum { OQC_IMG_RGB = 0, OQC_IMG_BGR = 1, OQC_IMG_GRAY = 2 };

/* The geometry of the preprocessing (docs/images.md's keys resize, crop, color, layout). */
typedef struct OqcImgSpec {
    int resize;             /* shorter side to this many pixels (0: see resize_h) */
    int resize_h, resize_w; /* resize to exactly HxW (0: none) */
    int crop_h, crop_w;     /* centre crop (0: none) */
    int color;              /* OQC_IMG_RGB, OQC_IMG_BGR or OQC_IMG_GRAY */
    int nhwc;               /* 0: planar [C][H][W], 1: interleaved [H][W][C] */
} OqcImgSpec;

/* 1 when path names a JPEG or PNG by its extension (.jpg, .jpeg, .png, any case). */
int oqc_img_is_image_path(const char *path);

/* Decodes the image at path (by its content) and preprocesses it as spec says into
 * c * h * w 8-bit pixels (c: 1 for gray, else 3) in the model's channel order and
 * layout.  0, or -1 with a message in err[errlen]. */
int oqc_img_pixels(const char *path, const OqcImgSpec *spec, int c, int h, int w,
                   unsigned char *out, char *err, size_t errlen);
/* The same for an image already open for reading (binary), which stays open. */
int oqc_img_pixels_file(FILE *f, const OqcImgSpec *spec, int c, int h, int w,
                        unsigned char *out, char *err, size_t errlen);

/* ToTensor and Normalize of one pixel, in float32: x = pixel * mul / div, then
 * (x - mean) / std (build with -ffp-contract=off: no fused multiply-add). */
static inline float oqc_img_value(unsigned char pixel, float mul, float div, float mean,
                                  float std) {
    float x = (float)pixel * mul / div;
    return (x - mean) / std;
}

#endif
