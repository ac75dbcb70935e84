/* ops.h - the operators: one file per op family in compiler/ops/ holds its shape rule,
 * its FP32 preparation and run functions and its C emission; tables indexed by OqcOp
 * (and by ExecKind for the emission) dispatch to them. The engines sit above: shape/
 * (oqc_infer_shapes' loop), exec/ (oqc_exec_new/run), backend/ (the emitter's node
 * loop). Internal kits shared by the families and their engines: ops_shape.h (a node
 * seen by its shape rule), ops_exec.h (the executor's node and plan types), ops_emit.h
 * (the emission state and printing helpers).
 */
#ifndef OQC_OPS_H
#define OQC_OPS_H

#include "ir.h"
#include "oqcf_nn.h"
#include "oqcf_tensor.h"

/* The FP32 executor's state (ops_exec.h). */
typedef struct OqcExec OqcExec;

/* Called after a node runs, once per output tensor, with its data (calibration). */
typedef void (*OqcTensorHook)(void *ctx, const OqcGraph *g, int tensor, const void *data);

/* For the ops oqcf_unary runs (ops.def's OQC_UNARY rows), 1 with its op and attributes
 * (alpha, beta); 0 for every other op (Relu, Sigmoid, ... have their own kernels). */
int oqc_unary_of(const OqcNode *n, OqcfUnaryOp *op, float *alpha, float *beta);
/* The runtime reduction (oqcf_reduce) of ReduceSum/ReduceMean/ReduceMax/ReduceMin. */
OqcfReduceOp oqc_reduce_op(OqcOp op);
/* Transpose node n's permutation of a rank-`rank` input (output dim j is input dim
 * perm[j]; no perm attribute: the dims reversed), 0 past rank: OQC_MAX_RANK entries. */
void oqc_transpose_perm(const OqcNode *n, int rank, int *perm);
/* DepthToSpace / SpaceToDepth node n on NCHW input shape xs as a transpose: the 6-D view
 * of the input it permutes and the permutation (the FP32 and INT8 kernels both run it). */
void oqc_space_depth_view(const OqcNode *n, const OqcShape *xs, OqcShape *view, int *perm);
/* 1 for ops whose first output is a view of their first input. */
int oqc_exec_is_view_op(const OqcNode *n);

#endif /* OQC_OPS_H */
