/* emit_int.h - internal to `oqc compile`'s C emitter, which shares the emission state
 * (Em) and the printing helpers of ops_emit.h (prefix oqc_em_) with the op families:
 *   - emit_runtime.c: the runtime files to copy (FileSet) and the --target flags, from
 *     the runtime's ISA table (oqc_isa.h);
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
/* Adds runtime file `name` and every file it needs to s (emit_runtime.c); threads > 1:
 * the thread pool instead of its serial stand-in.  -1 (error in d) when a file is
 * missing. */
int oqc_em_set_add(FileSet *s, OqcArena *a, const char *name, int threads, OqcDiag *d);
/* The next `#include "NAME"` line of text at or after p: *name and *len receive NAME;
 * NULL when there is none (emit_runtime.c). */
const char *oqc_em_next_include(const char *text, const char *p, const char **name,
                                size_t *len);
/* The name of an OQCI_* storage type. */
const char *oqc_em_qtype_name(int32_t t);

/* Whether node `node` is the INT8 model's float boundary: the Quantize of the graph
 * input or the Dequantize of the graph output (the integer-I/O API skips them). */
int oqc_em_q_boundary(const Em *m, int node);
/* Prints node `node`'s parameter constants and kernel call. */
void oqc_em_node(Em *m, int node);
/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
void oqc_em_plan_locs(Em *m);

/* emit_q.c: INT8 node `node` (OqcNode.q set; its ExecNode kind EXEC_Q): its parameter
 * struct, arrays and oqci_* call into b, one function per OqcQKind.  It also defines
 * oqc_em_qtype_name and oqc_em_q_boundary (declared above). */
void oqc_em_q(Em *m, int node, FILE *b);

#endif /* OQC_EMIT_INT_H */
