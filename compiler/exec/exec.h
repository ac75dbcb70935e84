/* exec.h - the FP32 reference executor and the memory planner.
 */
#ifndef OQC_EXEC_H
#define OQC_EXEC_H

#include "shape.h"

/* =================================================================== memplan.c */

/* One buffer to place: its size and the interval of steps during which it is live. */
typedef struct OqcLive {
    size_t size;     /* bytes */
    int first;       /* first step that writes or reads it */
    int last;        /* last step that reads it */
    size_t offset;   /* result: byte offset in the arena */
} OqcLive;

/* Assigns offsets so that buffers live at the same time never overlap (greedy by
 * size, lowest fitting offset); returns the arena size. Offsets are multiples of
 * align (a power of two). */
size_t oqc_memplan(OqcLive *bufs, int n, size_t align);

/* ====================================================================== exec.c */

/* The FP32 executor (OqcExec, ops.h): runs the graph in topological order over one
 * planned arena in which dead tensors' memory is reused; reshapes are views. */

/* Plans buffers and kernels for a shape-inferred graph; nthreads >= 1. */
OqcExec *oqc_exec_new(OqcGraph *g, int nthreads, OqcDiag *d);
void oqc_exec_free(OqcExec *e);
void oqc_exec_set_hook(OqcExec *e, OqcTensorHook fn, void *ctx);
/* Runs once: inputs[i] holds graph input i (g->inputs order, its dtype and shape),
 * outputs[i] receives graph output i. */
int oqc_exec_run(OqcExec *e, const void *const *inputs, void *const *outputs, OqcDiag *d);
/* Evaluates node `node`, whose inputs are all constants, with the FP32 kernels and
 * makes its outputs constants (constant folding). The node itself is left in place
 * for the caller to remove. */
int oqc_exec_fold_node(OqcGraph *g, int node, OqcDiag *d);
/* Bytes of the activation arena and of the sum of all activations (for reports). */
size_t oqc_exec_arena_bytes(const OqcExec *e);
size_t oqc_exec_total_bytes(const OqcExec *e);
/* The largest sum of activation sizes live at one step: no plan can use less. */
size_t oqc_exec_peak_live(const OqcExec *e);

#endif
