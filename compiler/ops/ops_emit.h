/* ops_emit.h - `oqc compile`'s emission state (Em) and printing helpers (prefix
 * oqc_em_, ops/emit_util.c), shared by the op families' emission functions
 * (oqc_em_<kind>) and the emitter itself (backend/: emit_c.c writes the files,
 * emit_node.c the INT8 nodes and each node's frame). */
#ifndef OQC_OPS_EMIT_H
#define OQC_OPS_EMIT_H

#include <stdint.h>
#include <stdio.h>

#include "ops_exec.h"

/* The runtime files to copy, a sorted set of names. */
typedef struct FileSet {
    const char *name[64];   /* file names, sorted */
    const char *text[64];   /* their text */
    int n;                  /* count */
} FileSet;

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
 * string literal; a pointer expression for tensor t's data (marks constants used). */
const char *oqc_em_ctype(OqcfDType t);
const char *oqc_em_flit(char *buf, size_t size, float f);
void oqc_em_i64(FILE *f, int64_t v);
void oqc_em_comment(FILE *f, const char *s);
void oqc_em_string_lit(FILE *f, const char *s);
const char *oqc_em_ptr(Em *m, int t);

/* decl, after a comment naming the node being emitted the first time it is used. */
FILE *oqc_em_decl(Em *m);
/* The OQCF_* name of an element type. */
const char *oqc_em_dtype_enum(OqcfDType t);
/* A float's exact literal; n int64s as {a, b, ...} ({0} when n is 0); an OqcfShape and
 * an OqcfAct as designated initialisers. */
void oqc_em_f(FILE *f, float v);
void oqc_em_i64s(FILE *f, const int64_t *v, int n);
void oqc_em_shape(FILE *f, const OqcfShape *s);
void oqc_em_act(FILE *f, const OqcfAct *a);
/* Where a kernel writes output k of node: the view's base buffer (the kernel adds
 * y_coff). */
const char *oqc_em_out_base(Em *m, int node, int k);
/* The scratch arguments every scratch-taking call gets; the pool argument of FP32
 * kernels. */
const char *oqc_em_scratch_args(Em *m);
const char *oqc_em_pool_arg(const Em *m);
/* Records that the model's code calls runtime file `file`. */
void oqc_em_use_kernel(Em *m, const char *file);
/* static const OqcfShape s<node>[] = {shapes of inputs 0..nin-1}. */
void oqc_em_in_shapes(Em *m, int node, int nin);
/* Transpose node `node` of x into y (elements of esize bytes): its perm<node> constant
 * and the oqcf_transpose call (the FP32 op and the INT8 kind, which moves codes). */
void oqc_em_transpose_call(Em *m, int node, const int *perm, size_t esize, const char *x,
                           const char *y, FILE *b);
/* The call of DepthToSpace/SpaceToDepth as oqcf_transpose of their 6-D view (resample.c). */
void oqc_em_space_depth_call(Em *m, int node, const OqcShape *view, const int *perm, size_t esize,
                             const char *x, const char *y, FILE *b);
/* The tables of Resize plan r as constants rzi<node>_<k>, rzw<node>_<k>, rz<node>. */
void oqc_em_resize_tables(Em *m, int node, const OqcResize *r);

/* Why the emitter cannot compile node `node`, or NULL when it can. */
const char *oqc_em_unsupported(Em *m, int node);
/* Prints FP32 node `node`'s parameter constants and kernel call into b (its family's
 * oqc_em_<kind>). */
void oqc_em_fp32(Em *m, int node, FILE *b);

#endif /* OQC_OPS_EMIT_H */
