/* oqc.h - the public C API of liboqc (build/liboqc.a).
 *
 * liboqc loads ONNX models, infers their shapes, dumps their IR and runs them in FP32
 * (the reference the INT8 compiler is judged against). Everything a model needs lives
 * in one OqcModel and is freed by oqc_model_free. Functions that can fail return a
 * negative value (or NULL) and, when `err` is not NULL, store a malloc'd message that
 * names the file, node and problem (free it with free()). No function exits the
 * process or prints.
 *
 *     char *err = NULL;
 *     OqcModel *m = oqc_model_load("net.onnx", NULL, 0, &err);
 *     if (!m) { fprintf(stderr, "%s", err); free(err); return 1; }
 *     float out[10];
 *     const float *in = image;
 *     if (oqc_model_run(m, (const void *const *)&in, (void *const[]){out}, &err) < 0) ...
 *     oqc_model_free(m);
 *
 * Link with: -loqc -lprotobuf-c -lxml2 -lm -pthread. */
#ifndef OQC_H
#define OQC_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded, shape-inferred model (opaque). */
typedef struct OqcModel OqcModel;

/* Loads an ONNX file (or an XML dump written by oqc_model_dump) and infers shapes.
 * input_shapes: n strings "NAME=1x3x224x224" fixing dynamic inputs (may be NULL). */
OqcModel *oqc_model_load(const char *path, const char *const *input_shapes, int n,
                         char **err);
void oqc_model_free(OqcModel *m);

/* Number of graph inputs / outputs (inputs that are initializers are not counted). */
int oqc_model_num_inputs(const OqcModel *m);
int oqc_model_num_outputs(const OqcModel *m);
/* Name, element type (ONNX TensorProto.DataType number), rank and dims of input or
 * output i; dims must hold 8 entries. Returns the rank, or -1 if i is out of range. */
int oqc_model_input(const OqcModel *m, int i, const char **name, int *dtype, int64_t *dims);
int oqc_model_output(const OqcModel *m, int i, const char **name, int *dtype, int64_t *dims);

/* Writes the IR: format "text", "xml" or "dot". For "xml", data_path (may be NULL)
 * receives the constants' bytes so the dump can be loaded again. */
int oqc_model_dump(OqcModel *m, FILE *out, const char *format, const char *data_path,
                   char **err);

/* Runs the model once in FP32 with `threads` threads (first call prepares the
 * executor): inputs[i] holds input i densely in its dtype and shape, outputs[i]
 * receives output i. */
int oqc_model_run(OqcModel *m, const void *const *inputs, void *const *outputs, int threads,
                  char **err);

/* The library version, e.g. "0.1.0". */
const char *oqc_version(void);

#ifdef __cplusplus
}
#endif
#endif
