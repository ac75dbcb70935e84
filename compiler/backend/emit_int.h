/* emit_int.h - internal to `oqc compile`'s C emitter, which is three files sharing the
 * emission state (Em) and a few printing helpers (prefix oqc_em_):
 *   - emit_runtime.c: the runtime files to copy (FileSet) and the --target flags, from
 *     the runtime's ISA table (oqc_isa.h);
 *   - emit_c.c: the driver (oqc_emit_c) and the output files: the model's header and
 *     run functions, its constants, the runtime files the calls need, NAME.mk, README;
 *   - emit_node.c: one node's parameter constants and kernel call (oqc_em_node), and
 *     the symbolic pointer plan those calls use (oqc_em_plan_locs). */
#ifndef OQC_EMIT_INT_H
#define OQC_EMIT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "exec_int.h"
#include "backend.h"

/* The runtime files to copy, a sorted set of names. */
typedef struct FileSet {
    const char *name[64];   /* file names, sorted */
    const char *text[64];   /* their text */
    int n;                  /* count */
} FileSet;

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

/* Where a tensor's data is during a run (the symbolic form of oqc_exec_run's ptr[]). */
typedef enum LocKind {
    LOC_NONE,    /* nowhere (not used by any call) */
    LOC_ARENA,   /* arena + off */
    LOC_INPUT,   /* graph input idx (the caller's in[idx]) + off */
    LOC_CONST,   /* constant tensor idx (its NAME_w<idx> array) + off */
} LocKind;

typedef struct Loc {
    LocKind kind;   /* base */
    int idx;        /* input slot or constant tensor id */
    size_t off;     /* byte offset from the base */
} Loc;

/* Emission state. */
typedef struct Em {
    OqcExec *e;              /* the prepared executor */
    OqcGraph *g;             /* its graph */
    OqcArena *a;             /* the graph's arena (strings) */
    OqcDiag *d;              /* errors */
    const char *name;        /* NAME */
    int threads;             /* tasks each parallel layer is split into (1: no threads) */
    FILE *decl;              /* NAME.c: parameter constants */
    FILE *body;              /* NAME.c: the calls */
    Loc *loc;                /* per tensor */
    unsigned char *used;     /* per tensor: a constant NAME.c refers to */
    FileSet kernels;         /* runtime .c files the calls use (without dependencies) */
    int node;                /* the node being emitted */
    int headed;              /* its comment is in decl already */
    FILE *qh;                /* INT8 constants: declarations for NAME_weights.h */
    FILE *qc;                /* INT8 constants: definitions for NAME_weights.c */
    size_t qbytes;           /* their size in bytes */
    FILE *pre, *post;        /* the INT8 model's float boundary: quantizing the graph
                                input, dequantizing the graph output (NULL: in body) */
} Em;

/* Printing helpers (emit_node.c): the C type of a tensor element type (NULL: none);
 * an exact float literal into buf; an int64 literal; s inside a C comment; s as a C
 * string literal; a pointer expression for tensor t's data (marks constants used); the
 * name of an OQCI_* storage type. */
const char *oqc_em_ctype(OqcfDType t);
const char *oqc_em_flit(char *buf, size_t size, float f);
void oqc_em_i64(FILE *f, int64_t v);
void oqc_em_comment(FILE *f, const char *s);
void oqc_em_string_lit(FILE *f, const char *s);
const char *oqc_em_ptr(Em *m, int t);
const char *oqc_em_qtype_name(int32_t t);

/* Whether node `node` is the INT8 model's float boundary: the Quantize of the graph
 * input or the Dequantize of the graph output (the integer-I/O API skips them). */
int oqc_em_q_boundary(const Em *m, int node);
/* Why the emitter cannot compile node `node`, or NULL when it can. */
const char *oqc_em_unsupported(Em *m, int node);
/* Prints node `node`'s parameter constants and kernel call. */
void oqc_em_node(Em *m, int node);
/* The symbolic pointer plan: oqc_exec_run's ptr[] computation, step for step. */
void oqc_em_plan_locs(Em *m);

/* Shared by the FP32 and INT8 emission (emit_node.c): decl, after a comment naming the
 * node being emitted the first time it is used; records runtime file `file` as used;
 * where a kernel writes output k (a view's base buffer: the kernel adds the offset); the
 * scratch arguments "SCRATCH, SCRATCH_BYTES" (or "NULL, 0"); "{v0, v1, ...}" ("{0}" for
 * none); static const OqcfShape s<node>[] of inputs 0..nin-1; the tables of Resize plan
 * r as constants rzi<node>_<k>, rzw<node>_<k> and rz<node>. */
FILE *oqc_em_decl(Em *m);
void oqc_em_use_kernel(Em *m, const char *file);
const char *oqc_em_out_base(Em *m, int node, int k);
const char *oqc_em_scratch_args(Em *m);
void oqc_em_i64s(FILE *f, const int64_t *v, int n);
void oqc_em_in_shapes(Em *m, int node, int nin);
void oqc_em_resize_tables(Em *m, int node, const OqcResize *r);

/* emit_q.c: INT8 node `node` (OqcNode.q set; its ExecNode kind EXEC_Q): its parameter
 * struct, arrays and oqci_* call into b, one function per OqcQKind.  It also defines
 * oqc_em_qtype_name and oqc_em_q_boundary (declared above). */
void oqc_em_q(Em *m, int node, FILE *b);

#endif /* OQC_EMIT_INT_H */
