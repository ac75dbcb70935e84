/* emit_int.h - internal to `oqc compile`'s C emitter, which is two files sharing the
 * emission state (Em) and the printing helpers of ops_emit.h (prefix oqc_em_):
 *   - emit_c.c: the driver (oqc_emit_c) and the output files: the model's header and
 *     run functions, its constants, the runtime files the calls need, NAME.mk, README;
 *   - emit_node.c: one node's frame and kernel call (oqc_em_node: INT8 nodes there,
 *     FP32 ones by their op family in compiler/ops/), and the symbolic pointer plan
 *     those calls use (oqc_em_plan_locs). */
#ifndef OQC_EMIT_INT_H
#define OQC_EMIT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "exec_int.h"
#include "ops_emit.h"

/* Whether set s holds file `name`. */
int oqc_em_set_has(const FileSet *s, const char *name);
/* The name of an OQCI_* storage type. */
const char *oqc_em_qtype_name(int32_t t);

/* Whether node `node` is the INT8 model's float boundary: the Quantize of the graph
 * input or the Dequantize of the graph output (the integer-I/O API skips them). */
int oqc_em_q_boundary(const Em *m, int node);
/* Prints node `node`'s parameter constants and kernel call. */
void oqc_em_node(Em *m, int node);
/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
void oqc_em_plan_locs(Em *m);

#endif /* OQC_EMIT_INT_H */
