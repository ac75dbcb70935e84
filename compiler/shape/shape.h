/* shape.h - shape inference, input shapes, and which operators oqc supports.
 */
#ifndef OQC_SHAPE_H
#define OQC_SHAPE_H

#include "ops.h"

/* ===================================================================== shape.c */

/* A user-given input shape (--input-shape NAME=1x3x224x224). */
typedef struct OqcInputShape {
    const char *name;   /* graph input name; NULL applies to the only input */
    OqcShape shape;     /* the full static shape */
} OqcInputShape;

/* Parses "NAME=1x3x224x224" or "1x3x224x224"; -1 with an error on bad syntax. */
int oqc_parse_input_shape(const char *arg, OqcInputShape *out, OqcDiag *d);
/* Applies the overrides to graph inputs (error for unknown names, conflicting fixed
 * dims), then requires every input to be static. */
int oqc_fix_inputs(OqcGraph *g, const OqcInputShape *shapes, int n, OqcDiag *d);
/* Sets the first dimension of every graph input (1 now) to n and re-infers shapes;
 * an error when some output does not scale with it (a batch size fixed in the graph). */
int oqc_rebatch(OqcGraph *g, int64_t n, OqcDiag *d);
/* Infers dtype and shape of every tensor, in topological order. Tensors of unknown
 * ops (and everything downstream of them) stay unknown; strict = 1 makes that an
 * error listing all unsupported ops with counts. Shape errors in known ops are errors. */
int oqc_infer_shapes(OqcGraph *g, int strict, OqcDiag *d);
/* 1 when shape inference knows the op. */
int oqc_shape_supported(OqcOp op);
/* Lists every op (with counts) oqc does not know (no shape rule: it cannot run or
 * emit it), and graph inputs/outputs that are not tensors, in one error; 0 if none. */
int oqc_check_supported(const OqcGraph *g, OqcDiag *d);

#endif
