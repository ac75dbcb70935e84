/* ops_exec.h - the FP32 executor's state (exec/exec.c plans and runs it, the op
 * families of compiler/ops/ prepare and run each node) and its small helpers. The C
 * emitter is the other reader of a prepared executor: it serialises the plan (arena
 * offsets, views) and each node's kernel parameters, and ExecNode.kind says which
 * kernel call a node makes (a family's run function and its emission change together). */
#ifndef OQC_OPS_EXEC_H
#define OQC_OPS_EXEC_H

#include "ops.h"

typedef int (*RunFn)(OqcExec *e, int node);

/* Which run function a node has: its family's preparation sets `kind` together with `run`, so
 * the C emitter can emit the same kernel call. EXEC_NONE: no work (a view). */
typedef enum ExecKind {
    EXEC_NONE = 0, EXEC_CONV, EXEC_MAXPOOL, EXEC_AVGPOOL, EXEC_GLOBAL_POOL, EXEC_BATCHNORM,
    EXEC_LRN, EXEC_GEMM, EXEC_MATMUL, EXEC_UNARY, EXEC_CLIP, EXEC_BINARY, EXEC_SUM,
    EXEC_SOFTMAX, EXEC_CONCAT, EXEC_SPLIT, EXEC_SLICE, EXEC_TRANSPOSE, EXEC_PAD, EXEC_GATHER,
    EXEC_CAST, EXEC_SHAPE, EXEC_CONSTANT_OF_SHAPE, EXEC_DROPOUT, EXEC_QDQ, EXEC_REDUCE,
    EXEC_POW_CAST, /* Pow of other types than float^float, double^double: in double */
    EXEC_ARGMAX, EXEC_TILE, /* Tile and Expand */
    EXEC_SPACE_DEPTH,       /* DepthToSpace / SpaceToDepth: a transpose of a 6-D view */
    EXEC_LAYERNORM, EXEC_INSTANCENORM,
    EXEC_RESIZE,              /* Resize / Upsample: oqcf_resize's per-axis passes */
    EXEC_CONV_TRANSPOSE,
    EXEC_Q,   /* an INT8 node (exec_q.c): OqcNode.q says which oqci kernel */
    EXEC_KIND_COUNT   /* the number of kinds (not a kind) */
} ExecKind;

/* What a node needs at run time, computed once. */
typedef struct ExecNode {
    RunFn run;                 /* kernel invocation */
    ExecKind kind;             /* which run_* function run is (for the C emitter) */
    size_t scratch;            /* scratch bytes it needs */
    size_t scratch_noamx;      /* EXEC_Q: those of a runtime built without AMX (oqci.h) */
    OqcfConvParams *convs;     /* merged Conv: parameters per output, NULL otherwise */
    int64_t *koff;             /* merged Conv: first weight row of each output */
    int64_t a, b, c;           /* op-specific sizes (outer/axis/inner, batch/ch/inner) */
    float f0, f1;              /* op-specific scalars (alpha, beta, eps, clip bounds) */
    int axis;                  /* op-specific axis */
    /* The parameters of one kernel kind: a node uses one of them (its kind's), so they
     * share storage; a graph of 100k nodes then needs a third of the memory. */
    union {
        OqcfConvParams conv;       /* Conv (output 0 of a merged conv) */
        OqcfPoolParams pool;       /* MaxPool / AveragePool */
        OqcfGemmParams gemm;       /* Gemm */
        struct {
            int perm[OQC_MAX_RANK];         /* Transpose, EXEC_SPACE_DEPTH: permutation */
            OqcfShape view;                 /* EXEC_SPACE_DEPTH: the 6-D shape perm
                                               transposes */
        };
        OqcfSlice slice;           /* Slice */
        struct {
            int64_t pads[2 * OQC_MAX_RANK]; /* Pad */
            OqcfPadMode pad_mode;           /* Pad */
        };
        OqcResize *resize;         /* Resize / Upsample: the plan (its tables) */
    };
    unsigned mask;             /* Reduce*: the reduced axes (bit i: axis i) */
    OqcfUnaryOp uop;           /* EXEC_UNARY through oqcf_unary: which op (f0, f1: its
                                  alpha, beta); only when oqc_unary_of says so */
} ExecNode;

struct OqcExec {
    OqcGraph *g;               /* the graph (shapes inferred) */
    OqcfPool *pool;            /* threads, NULL for one */
    ExecNode *nodes;           /* per node */
    int *root;                 /* per tensor: tensor whose storage it uses */
    size_t *offset;            /* per root: arena offset (SIZE_MAX: not in the arena) */
    unsigned char *arena;      /* activation memory */
    size_t arena_bytes;        /* its size */
    size_t total_bytes;        /* sum of all activation sizes (without reuse) */
    size_t peak_live;          /* largest sum of sizes live at one step: a lower bound
                                  of any plan's arena (without alignment) */
    void *scratch;             /* shared scratch for the running node */
    size_t scratch_bytes;      /* its size */
    size_t scratch_noamx_bytes; /* the scratch an emitted runtime without AMX needs */
    const void **ptr;          /* per tensor: data during a run */
    OqcTensorHook hook;        /* tensor callback or NULL */
    void *hook_ctx;            /* its context */
    OqcDiag *d;                /* errors of the current run */
};

#define T(e, id) (&(e)->g->tensors[id])
#define N(e, i) (&(e)->g->nodes[i])
#define XIN(e, n, k) ((e)->ptr[N(e, n)->in[k]])
#define YOUT(e, n, k) ((void *)(e)->ptr[N(e, n)->out[k]])
#define EN(e, n) (&(e)->nodes[n])

static inline int kfail(OqcExec *e, int node, int st) {
    const char *why = st == OQCF_EINVAL ? "invalid parameters or an index out of range"
                    : st == OQCF_EDTYPE ? "unsupported element type"
                    : st == OQCF_ESCRATCH ? "scratch too small (internal)"
                    : "internal failure";
    return oqc_err_node(e->d, e->g, node, "kernel failed: %s", why);
}
#define CHECK(st) do { int st_ = (st); if (st_ != OQCF_OK) return kfail(e, node, st_); } while (0)

static inline const OqcShape *SH(OqcExec *e, int node, int k) { return &T(e, N(e, node)->in[k])->shape; }
static inline int64_t numel_out(OqcExec *e, int node, int k) {
    return oqc_shape_numel(&T(e, N(e, node)->out[k])->shape);
}

static inline size_t esize_of(const OqcTensor *t) { return oqcf_dtype_size(t->dtype); }

/* Prepares FP32 node `node` whose outputs are not empty (run function, parameters,
 * scratch, dtype checks); -1 after an error naming the node. */
int oqc_op_prepare(OqcExec *e, int node, OqcDiag *d);

#endif
