/* exec_int.h - private to the FP32 executor (exec.c) and its INT8 nodes (exec_q.c):
 * the executor's types and helpers (ops_exec.h, shared with the op families below)
 * and the INT8 preparation. */
#ifndef OQC_EXEC_INT_H
#define OQC_EXEC_INT_H

#include "exec.h"
#include "ops_exec.h"

/* exec_q.c: prepares an INT8 node (OqcNode.q set by passes/quantize.c). */
int oqc_exec_prepare_q(OqcExec *e, int node, OqcDiag *d);

#endif /* OQC_EXEC_INT_H */
