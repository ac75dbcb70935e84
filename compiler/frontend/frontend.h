/* frontend.h - loading models (ONNX protobuf, XML dumps) and data (.npy,
 * .pb, raw, images) into the IR.
 */
#ifndef OQC_FRONTEND_H
#define OQC_FRONTEND_H

#include "shape.h"

/* =============================================================== onnx_tensor.c */

struct Onnx__TensorProto;
/* Where TensorProto contents are decoded: arena, errors, file and its directory. */
typedef struct OqcOnnxCtx {
    OqcArena *arena;     /* receives converted data */
    OqcDiag *d;          /* errors */
    const char *path;    /* model file, for messages */
    const char *dir;     /* its directory, for external data */
} OqcOnnxCtx;

/* Validates dims (rank <= 8, none negative, at most OQC_MAX_ELEMENTS) into shape. */
int oqc_onnx_check_dims(const OqcOnnxCtx *c, const char *what, const char *name, size_t n,
                        const int64_t *dims, OqcShape *shape);
/* Decodes a TensorProto (any storage form, external data) into v. */
int oqc_onnx_tensor(const OqcOnnxCtx *c, const struct Onnx__TensorProto *tp,
                    const char *what, OqcValue *v);

/* ================================================================= onnx_read.c */

struct Onnx__ModelProto;
struct ProtobufCAllocator;
/* Reads the .onnx file fd (size bytes; path for messages) into a ModelProto unpacked with
 * pb (which allocates from arena): the model minus its graph, the graph minus its
 * initializers, and each initializer unpacked on its own, reassembled; NULL with an
 * error for a file that is not a valid model. */
struct Onnx__ModelProto *oqc_onnx_read_model(int fd, uint64_t size,
                                             struct ProtobufCAllocator *pb, OqcArena *arena,
                                             const char *path, OqcDiag *d);

/* ================================================================= onnx_load.c */

/* Loads an ONNX model file into a new graph: tensors, constants (every storage form,
 * external data), nodes with checked attributes, opsets; validates references and
 * orders nodes topologically. Returns NULL with errors in d. */
OqcGraph *oqc_load_onnx(const char *path, OqcDiag *d);
/* Decodes an ONNX TensorProto file (.pb, the ONNX test-data format) into a value
 * allocated in arena a; name receives the tensor name (may be ""). */
int oqc_load_tensor_pb(const char *path, OqcArena *a, OqcValue *out, const char **name,
                       OqcDiag *d);

/* ================================================================= tensor_io.c */

/* Reads a NumPy .npy file (C order, little-endian numeric dtypes) into the arena. */
int oqc_npy_read(const char *path, OqcArena *a, OqcValue *v, OqcDiag *d);
/* Writes v as .npy (atomically: temporary file renamed into place). */
int oqc_npy_write(const char *path, const OqcValue *v, OqcDiag *d);
/* Reads .npy, ONNX .pb, or (any other name) raw float32 samples of raw_shape. */
int oqc_tensor_read(const char *path, const OqcShape *raw_shape, OqcArena *a, OqcValue *v,
                    OqcDiag *d);
/* How many samples of input shape `in` the array holds: exactly one, a leading sample
 * axis [S, ...in], or S batches stacked on axis 0; error naming `what` otherwise. */
int oqc_samples_of(const char *what, const OqcValue *v, const OqcShape *in,
                   int64_t *nsamples, OqcDiag *d);

/* ================================================================= image_io.c */

/* Color the model takes (--preprocess color=). */
typedef enum OqcColor { OQC_COLOR_RGB, OQC_COLOR_BGR, OQC_COLOR_GRAY } OqcColor;

/* The declared preprocessing of image inputs (--preprocess; docs/images.md). */
typedef struct OqcPreprocess {
    int given;            /* 1 once parsed */
    int resize;           /* shorter side to this many pixels (0: see resize_h) */
    int resize_h, resize_w; /* resize to exactly HxW (0: none) */
    int crop_h, crop_w;   /* centre crop (0: none) */
    float mul, div;       /* x = pixel * mul / div */
    float mean[3], std[3]; /* then (x - mean) / std, per model channel */
    OqcColor color;       /* rgb, bgr or gray */
    int nhwc;             /* layout: 0 NCHW, 1 NHWC */
    char spec[320];       /* canonical text: every key (stored in tables and READMEs) */
} OqcPreprocess;

/* Parses a --preprocess spec (a preset imagenet|cifar|raw and/or key=value pairs,
 * comma-separated; later keys override the preset). */
int oqc_preprocess_parse(const char *spec, OqcPreprocess *p, OqcDiag *d);
/* 1 when path names a JPEG or PNG by its extension (.jpg, .jpeg, .png, any case). */
int oqc_is_image_path(const char *path);
/* 1 when path is a list file (.txt or .lst): one data path per line. */
int oqc_is_list_path(const char *path);
/* The channels, height and width an image must become for model input shape in
 * ([1,C,H,W] or [C,H,W], NHWC with layout=nhwc); error when p's color does not fit. */
int oqc_image_geometry(const OqcPreprocess *p, const OqcShape *in, int *c, int *h, int *w,
                       OqcDiag *d);
/* Decodes the image at path and preprocesses it into out (numel(in) floats). */
int oqc_image_load(const char *path, const OqcPreprocess *p, const OqcShape *in, float *out,
                   OqcDiag *d);
/* n images as one float32 value: [n, C, H, W] (or [n, H, W, C]), in the arena. */
int oqc_images_read(const char *const *files, int64_t n, const OqcPreprocess *p,
                    const OqcShape *in, OqcArena *a, OqcValue *v, OqcDiag *d);
/* The data files of paths: a directory gives its .npy, .pb, .jpg, .jpeg and .png files
 * recursively, in name order at each level; a list file its lines; any other file itself. */
int oqc_data_files(OqcArena *a, const char *const *paths, int npaths, const char ***out,
                   int *n, OqcDiag *d);
/* 1 when any of the files is an image. */
int oqc_data_has_images(const char *const *files, int n);
/* int64 labels [n] of image files: labels "folders" (class = index of the sorted
 * sub-folder of directory data holding the file) or a list file of PATH CLASS lines. */
int oqc_image_labels(OqcArena *a, const char *data, const char *const *files, int n,
                     const char *labels, OqcValue *v, OqcDiag *d);

/* ================================================================== model.c */

/* Loads a model by content: XML dumps (starting with "<?xml") or ONNX protobuf. */
OqcGraph *oqc_load_model(const char *path, OqcDiag *d);
/* Load + --input-shape + shape inference; strict rejects unsupported ops. */
OqcGraph *oqc_prepare(const char *path, const OqcInputShape *shapes, int nshapes,
                      int strict, OqcDiag *d);

#endif
