/* ir.h - oqc's internal interface: arena, diagnostics, the IR and its operator table.
 *
 * Every compiler/ and passes/ file includes this header. It is organised as one banner
 * per source file, listing what that file exports (chibicc style). The public API for
 * library users is oqc.h; this header is for oqc's own code and tests.
 *
 * The IR is a flat graph: arrays of tensors and nodes addressed by integer ids, each
 * tensor knowing its producer and consumers, nodes kept in topological order. One
 * arena per model owns every byte of it; nothing is freed individually.
 */
#ifndef OQC_IR_H
#define OQC_IR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "oqcf.h"
#include "oqcf_nn.h"
#include "oqcf_tensor.h"
#include "oqci.h"

#if defined(__GNUC__)
#define OQC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OQC_PRINTF(f, a)
#endif

/* ===================================================================== arena.c */

/* A bump allocator. Everything a model needs lives in its arena and is released by
 * oqc_arena_free at once. Running out of memory is fatal (oqc_panic): user data sizes
 * are validated against OQC_MAX_ELEMENTS before anything that large is allocated. */
typedef struct OqcArena OqcArena;

OqcArena *oqc_arena_new(void);
void oqc_arena_free(OqcArena *a);
void *oqc_arena_alloc(OqcArena *a, size_t n);        /* zeroed, 16-byte aligned */
void *oqc_arena_alloc_raw(OqcArena *a, size_t n);    /* not zeroed, 64-byte aligned */
void *oqc_arena_dup(OqcArena *a, const void *p, size_t n);
char *oqc_arena_strdup(OqcArena *a, const char *s);
char *oqc_arena_strndup(OqcArena *a, const char *s, size_t n);
char *oqc_arena_printf(OqcArena *a, const char *fmt, ...) OQC_PRINTF(2, 3);
/* Grows an array p of old_n elements of size el to new_n elements (copying); p's
 * storage may be freed, so no pointer into the old array may be used afterwards. */
void *oqc_arena_grow(OqcArena *a, void *p, size_t old_n, size_t new_n, size_t el);
size_t oqc_arena_used(const OqcArena *a);            /* bytes handed out so far */

/* ====================================================================== diag.c */

/* User errors are collected in an OqcDiag and returned up as -1; the CLI prints them
 * and exits 1. Broken invariants (bugs in oqc) call oqc_panic, which aborts with
 * file:line. Library code never calls exit(). */
typedef struct OqcDiag {
    char *buf;        /* accumulated error text, one message per line (malloc'd) */
    size_t len;       /* bytes used in buf */
    size_t cap;       /* bytes allocated for buf */
    int nerrors;      /* number of errors reported */
    int verbose;      /* > 0: oqc_info messages are printed */
    FILE *log;        /* where oqc_info writes (stderr when NULL) */
} OqcDiag;

struct OqcGraph;
void oqc_diag_init(OqcDiag *d);
void oqc_diag_free(OqcDiag *d);
/* Records an error; always returns -1 so callers can `return oqc_err(...)`. */
int oqc_err(OqcDiag *d, const char *fmt, ...) OQC_PRINTF(2, 3);
int oqc_verr(OqcDiag *d, const char *fmt, va_list ap);
/* Error about a node: prefixed "FILE: node 'NAME' (OP): ". */
int oqc_err_node(OqcDiag *d, const struct OqcGraph *g, int node, const char *fmt, ...)
    OQC_PRINTF(4, 5);
/* Informational line (pass statistics) shown with -v. */
void oqc_info(OqcDiag *d, const char *fmt, ...) OQC_PRINTF(2, 3);
_Noreturn void oqc_panic(const char *file, int line, const char *what);
#define OQC_ASSERT(c) ((c) ? (void)0 : oqc_panic(__FILE__, __LINE__, #c))

/* ===================================================================== graph.c */

/* Largest element count of any tensor oqc accepts (2^32): a model claiming more is
 * rejected as absurd before anything is allocated for it. */
#define OQC_MAX_ELEMENTS ((int64_t)1 << 32)
#define OQC_MAX_RANK OQCF_MAX_RANK

/* A shape in the IR: rank -1 when unknown; d[i] == -1 for an unknown extent. */
typedef OqcfShape OqcShape;

/* Operators: OQC_OP_UNKNOWN for anything not in ops.def. */
#define OQC_OPF_ELEMWISE 1u
typedef enum OqcOp {
    OQC_OP_UNKNOWN = 0,
#define OQC_OP(name, flags) OQC_OP_##name,
#include "ops.def"
#undef OQC_OP
    OQC_OP_COUNT
} OqcOp;

/* Attribute types, numbered as ONNX's AttributeProto.AttributeType. */
typedef enum OqcAttrType {
    OQC_ATTR_UNDEFINED = 0, OQC_ATTR_FLOAT = 1, OQC_ATTR_INT = 2, OQC_ATTR_STRING = 3,
    OQC_ATTR_TENSOR = 4, OQC_ATTR_GRAPH = 5, OQC_ATTR_FLOATS = 6, OQC_ATTR_INTS = 7,
    OQC_ATTR_STRINGS = 8, OQC_ATTR_TENSORS = 9, OQC_ATTR_GRAPHS = 10,
    OQC_ATTR_SPARSE_TENSOR = 11, OQC_ATTR_SPARSE_TENSORS = 12, OQC_ATTR_TYPE_PROTO = 13,
    OQC_ATTR_TYPE_PROTOS = 14,
} OqcAttrType;

/* A constant tensor value that is not a graph tensor (an attribute's tensor). */
typedef struct OqcValue {
    OqcfDType dtype;    /* element type */
    OqcShape shape;     /* always known */
    void *data;         /* dense little-endian C-order elements (char* per STRING) */
    size_t nbytes;      /* size of data in bytes */
} OqcValue;

/* One node attribute; which fields are meaningful depends on type. */
typedef struct OqcAttr {
    const char *name;      /* attribute name */
    OqcAttrType type;      /* ONNX attribute type */
    int64_t i;             /* INT */
    float f;               /* FLOAT */
    const char *s;         /* STRING, NUL-terminated copy (may contain NULs: see slen) */
    size_t slen;           /* STRING length in bytes */
    int n;                 /* element count of FLOATS/INTS/STRINGS/TENSORS/GRAPHS... */
    float *floats;         /* FLOATS */
    int64_t *ints;         /* INTS */
    const char **strings;  /* STRINGS */
    OqcValue *tensors;     /* TENSOR (n == 1) and TENSORS */
    const char *opaque;    /* GRAPH(S), SPARSE_TENSOR(S), TYPE_PROTO(S): a summary only */
} OqcAttr;

/* Quantization parameters of a tensor (filled by calibration / the quantize pass). */
typedef struct OqcQuant {
    int valid;           /* 1 when the fields below are set */
    int is_unsigned;     /* stored as u8 (provably non-negative) instead of s8 */
    float amax;          /* largest |x| seen during calibration */
    float threshold;     /* saturation threshold T */
    float scale;         /* T / 127 (s8) or T / 255 (u8) */
    const char *method;  /* calibration method that chose T, or "table" */
} OqcQuant;

/* The scale of a tensor with no range to quantize to: an activation whose threshold is
 * 0 (zero on every calibration sample) or whose scale would be 0 or denormal, and an
 * all-zero weight channel.  0 stays exact and requantization multipliers stay finite
 * (docs/calibration.md, "Zero thresholds"). */
#define OQC_ZERO_RANGE_SCALE 1.0f

/* An accumulator tensor (int32: the raw sums of an INT8 Conv/Gemm/MatMul or average
 * pool whose output leaves the INT8 domain, see passes/quantize.c): its float value
 * and the s8/u8 value the integer API gives.  Element i belongs to channel
 * c = (i / inner) % channels (the producer's NCHW layout, kept by views). */
typedef struct OqcAcc {
    int64_t outer, inner;     /* elements = outer * channels * inner */
    int32_t channels;
    int32_t per_channel;      /* 1: scale[c] and rq entry c; 0: entry 0 for all */
    const float *scale;       /* float value = q * scale[c] (s_in * s_w[k]; s_in / window) */
    OqciRequant rq;           /* s8/u8 value = oqci_requant(q, rq, c, lo, hi) */
    int32_t type, lo, hi;     /* OQCI_S8/OQCI_U8 at the tensor's quant.scale, clamp */
} OqcAcc;

/* A tensor: graph input, constant, or a value produced by a node. */
typedef struct OqcTensor {
    const char *name;          /* ONNX name, unique in the graph */
    OqcfDType dtype;           /* element type; OQCF_UNDEFINED when not inferred */
    OqcShape shape;            /* static shape; rank -1 when not inferred */
    const char **dim_param;    /* graph inputs: symbolic name per dim (NULL entries) */
    int producer;              /* node writing it; -1 for inputs and constants */
    int nconsumers;            /* number of node input slots that read it */
    int *consumers;            /* node id per reading slot (repeats if read twice) */
    unsigned is_input : 1;     /* fed by the caller at run time */
    unsigned is_output : 1;    /* a graph output */
    unsigned is_const : 1;     /* a constant (initializer, Constant node, folded) */
    unsigned has_value : 1;    /* not constant, but data holds values shape inference
                                  derived (small int64 shape computations) */
    void *data;                /* constant/derived elements, NULL if not held */
    size_t nbytes;             /* bytes in data */
    const char *summary;       /* constant loaded without data (XML): the dump's
                                  summary text of its values, else NULL */
    int view_base;             /* -1, or the tensor whose buffer holds this one as the
                                  channel range [view_coff, view_coff + d[1]) (written
                                  in place of a Concat by passes/concat_elim.c) */
    int64_t view_coff;         /* first channel of this tensor in view_base */
    OqcQuant quant;            /* quantization parameters when calibrated */
    const OqcAcc *acc;         /* an accumulator tensor (int32) of the INT8 graph, or NULL */
} OqcTensor;

/* A node; inputs/outputs are tensor ids (-1 for an omitted optional input). */
typedef struct OqcNode {
    OqcOp op;              /* OQC_OP_UNKNOWN when oqc does not know the op */
    const char *op_type;   /* op_type as written in the model */
    const char *domain;    /* "" for the default ONNX domain */
    const char *name;      /* node name (generated "<op_type>_<index>" when empty) */
    int64_t opset;         /* opset version of the node's domain */
    int nin;               /* number of inputs */
    int *in;               /* input tensor ids */
    int nout;              /* number of outputs */
    int *out;              /* output tensor ids (-1 for omitted optional outputs) */
    int nattr;             /* number of attributes */
    OqcAttr *attr;         /* attributes, in model order */
    OqcfAct act;           /* activation fused into this node by a pass (NONE if not) */
    OqcfAct *act_per_channel; /* merged convs: one activation per output channel */
    int64_t *out_channels; /* merged Conv (passes/merge_1x1.c): output k holds the next
                              out_channels[k] output channels; NULL: one output */
    struct OqcQNode *q;    /* INT8 node (passes/quantize.c): its kernel parameters;
                              NULL for a float node */
} OqcNode;

/* An opset import. */
typedef struct OqcOpset {
    const char *domain;    /* "" for ai.onnx */
    int64_t version;       /* opset version */
} OqcOpset;

typedef struct OqcNameMap OqcNameMap;

/* The model: one graph, its tensors and nodes, owned by one arena. */
typedef struct OqcGraph {
    OqcArena *arena;       /* owns everything reachable from the graph */
    const char *path;      /* file it was loaded from (for messages) */
    const char *name;      /* graph name */
    int64_t ir_version;    /* ModelProto.ir_version */
    const char *producer;  /* "producer_name producer_version" */
    int nopsets;           /* number of opset imports */
    OqcOpset *opsets;      /* opset imports */
    int ntensors;          /* number of tensors */
    int cap_tensors;       /* capacity of tensors */
    OqcTensor *tensors;    /* all tensors, by id */
    int nnodes;            /* number of nodes */
    int cap_nodes;         /* capacity of nodes */
    OqcNode *nodes;        /* nodes, in topological order after oqc_graph_toposort */
    int ninputs;           /* number of run-time graph inputs */
    int *inputs;           /* their tensor ids, in model order */
    int noutputs;          /* number of graph outputs */
    int *outputs;          /* their tensor ids, in model order */
    OqcNameMap *names;     /* tensor name -> id */
    const struct OqcQuantConfig *qcfg; /* INT8 settings for pass "quantize" (NULL: the
                              pass does nothing); tensors' quant holds calibration */
    int nnontensor;        /* graph inputs/outputs of non-tensor type (sequence, ...) */
    const char *nontensor; /* the first such name, for messages */
} OqcGraph;

OqcGraph *oqc_graph_new(const char *path);        /* creates its own arena */
void oqc_graph_free(OqcGraph *g);                   /* frees the arena */
const char *oqc_op_name(OqcOp op);
OqcOp oqc_op_lookup(const char *domain, const char *op_type);
unsigned oqc_op_flags(OqcOp op);
/* Expected attribute type per (op, name) from attrs.def; OQC_ATTR_UNDEFINED if unlisted. */
OqcAttrType oqc_attr_expected(OqcOp op, const char *name);
const char *oqc_attr_type_name(OqcAttrType t);
int oqc_tensor_find(const OqcGraph *g, const char *name);    /* id or -1 */
int oqc_tensor_add(OqcGraph *g, const char *name);          /* new id; name must be new */
int oqc_tensor_get(OqcGraph *g, const char *name);          /* find or add */
void oqc_tensor_rename(OqcGraph *g, int t, const char *name); /* name must be new */
/* Adds a node with the given inputs and outputs (copied); returns its id. */
int oqc_node_add(OqcGraph *g, OqcOp op, const char *op_type, const char *name,
                 int nin, const int *in, int nout, const int *out);
/* Recomputes producer and consumer lists from the nodes; -1 (with an error) when two
 * nodes write the same tensor or a node writes an input or constant. */
int oqc_graph_link(OqcGraph *g, OqcDiag *d);
/* Orders nodes topologically (stable: keeps model order where possible); reports a
 * cycle naming its nodes. Calls oqc_graph_link. */
int oqc_graph_toposort(OqcGraph *g, OqcDiag *d);
/* Turns graph input `tensor` into a constant holding v (copied into the arena): an
 * ahead-of-time compiler needs shape-determining inputs as constants. */
int oqc_bind_input(OqcGraph *g, int tensor, const OqcValue *v, OqcDiag *d);
/* Removes nodes flagged in dead[] (array of nnodes) and relinks (the graph was linked
 * before: relinking cannot fail). */
void oqc_graph_remove_nodes(OqcGraph *g, const unsigned char *dead);
/* The same without relinking, for a graph not linked yet (the loader links it after). */
void oqc_graph_drop_nodes(OqcGraph *g, const unsigned char *dead);

const OqcAttr *oqc_attr_find(const OqcNode *n, const char *name);
int64_t oqc_attr_int(const OqcNode *n, const char *name, int64_t dflt);
float oqc_attr_float(const OqcNode *n, const char *name, float dflt);
const char *oqc_attr_string(const OqcNode *n, const char *name, const char *dflt);
/* INTS attribute: element count and *v, or -1 when absent. */
int oqc_attr_ints(const OqcNode *n, const char *name, const int64_t **v);

int64_t oqc_shape_numel(const OqcShape *s);          /* -1 if any extent unknown; INT64_MAX
                                                        when the product overflows */
/* a * b for a, b >= 0, INT64_MAX when it overflows (products of extents in models). */
static inline int64_t oqc_mul_sat(int64_t a, int64_t b) {
    return b > 0 && a > INT64_MAX / b ? INT64_MAX : a * b;
}
/* Multiply-adds of a Conv (all outputs of a merged one), Gemm or MatMul node (from the
 * shapes: outputs x reduction length); 0 for other ops. */
int64_t oqc_node_macs(const OqcGraph *g, int node);
int oqc_shape_known(const OqcShape *s);               /* rank and all dims known */
int oqc_shape_equal(const OqcShape *a, const OqcShape *b);
/* Writes "1x3x224x224" ("scalar" for rank 0, "?" for unknown rank, "?" per unknown
 * dim) into buf; returns buf. */
char *oqc_shape_str(const OqcShape *s, char *buf, size_t size);
const char *oqc_dtype_name(OqcfDType t);              /* "f32", "i64", ... */
OqcfDType oqc_dtype_lookup(const char *name);        /* inverse; UNDEFINED if unknown */
/* Label for messages: the node name, quoted. */
const char *oqc_node_label(const OqcGraph *g, int node);

/* =============================================================== onnx_tensor.c */

struct Onnx__TensorProto;
/* Where TensorProto contents are decoded: arena, errors, file and its directory. */
typedef struct OqcOnnxCtx {
    OqcArena *arena;     /* receives converted data */
    OqcDiag *d;          /* errors */
    const char *path;    /* model file, for messages */
    const char *dir;     /* its directory, for external data */
} OqcOnnxCtx;

/* Validates dims (rank <= 8, none negative, at most OQC_MAX_ELEMENTS) into shape. */
int oqc_onnx_check_dims(const OqcOnnxCtx *c, const char *what, const char *name, size_t n,
                        const int64_t *dims, OqcShape *shape);
/* Decodes a TensorProto (any storage form, external data) into v. */
int oqc_onnx_tensor(const OqcOnnxCtx *c, const struct Onnx__TensorProto *tp,
                    const char *what, OqcValue *v);

/* ================================================================= onnx_load.c */

/* Loads an ONNX model file into a new graph: tensors, constants (every storage form,
 * external data), nodes with checked attributes, opsets; validates references and
 * orders nodes topologically. Returns NULL with errors in d. */
OqcGraph *oqc_load_onnx(const char *path, OqcDiag *d);
/* Decodes an ONNX TensorProto file (.pb, the ONNX test-data format) into a value
 * allocated in arena a; name receives the tensor name (may be ""). */
int oqc_load_tensor_pb(const char *path, OqcArena *a, OqcValue *out, const char **name,
                       OqcDiag *d);

/* ====================================================================== geom.c */

/* Geometry of a sliding-window op (Conv, ConvTranspose, pooling) over nsp spatial
 * axes: explicit pads resolved from auto_pad, output extents computed. Shape
 * inference and the executor both use it, so they cannot disagree. */
typedef struct OqcWindow {
    int nsp;                            /* number of spatial axes */
    int64_t in[OQC_MAX_RANK];           /* input extent per spatial axis */
    int64_t out[OQC_MAX_RANK];          /* output extent per spatial axis */
    int64_t kernel[OQC_MAX_RANK];       /* kernel extent */
    int64_t stride[OQC_MAX_RANK];       /* stride */
    int64_t dilation[OQC_MAX_RANK];     /* dilation */
    int64_t pad_begin[OQC_MAX_RANK];    /* padding before */
    int64_t pad_end[OQC_MAX_RANK];      /* padding after */
    int64_t out_padding[OQC_MAX_RANK];  /* ConvTranspose output_padding */
    int64_t group;                      /* Conv/ConvTranspose groups */
    int64_t in_channels;                /* C */
    int64_t out_channels;               /* output channels */
} OqcWindow;

int oqc_conv_geometry(const OqcGraph *g, int node, const OqcShape *x, const OqcShape *w,
                      OqcWindow *win, OqcDiag *d);
int oqc_conv_transpose_geometry(const OqcGraph *g, int node, const OqcShape *x,
                                const OqcShape *w, OqcWindow *win, OqcDiag *d);
/* MaxPool/AveragePool: kernel_shape, strides, dilations, pads/auto_pad, ceil_mode. */
int oqc_pool_geometry(const OqcGraph *g, int node, const OqcShape *x, OqcWindow *win,
                      OqcDiag *d);
/* The shape PRelu node n's slope broadcasts with against input shape x: the slope's own,
 * or [C, 1, ...] for a per-channel slope before opset 7. */
OqcShape oqc_prelu_slope_shape(const OqcNode *n, const OqcShape *x, const OqcShape *slope);
/* ReduceMean/ReduceMax/ReduceMin/ReduceSum node `node` on an input of rank `rank`: *mask gets bit
 * i set for each reduced axis i (all axes when none are given, none when none are given
 * and noop_with_empty_axes = 1), *keepdims the attribute; 0, or -1 with an error. */
int oqc_reduce_axes(const OqcGraph *g, int node, int rank, unsigned *mask, int *keepdims,
                    OqcDiag *d);

/* =================================================================== resize.c */

/* What Resize / Upsample node `node` computes on an input of shape xs (resize.c has the
 * opsets and modes): the output shape and, when tables is non-NULL, one runtime pass
 * per axis that is not the identity (tables allocated there, axes increasing). */
enum { OQC_RESIZE_NEAREST, OQC_RESIZE_LINEAR, OQC_RESIZE_CUBIC };
typedef struct OqcResize {
    OqcShape out;                        /* the output shape */
    int mode;                            /* OQC_RESIZE_* */
    int coord, nearest;                  /* resize.c's coordinate mode and rounding */
    float cubic_a;                       /* cubic_coeff_a */
    int exclude_outside;                 /* cubic: outside taps weigh 0 */
    float extrapolation;                 /* tf_crop_and_resize outside the input */
    int extrapolates;                    /* some output takes that value */
    int naxes;                           /* passes */
    OqcfResizeAxis axes[OQC_MAX_RANK];   /* their tables */
} OqcResize;
int oqc_resize_plan(const OqcGraph *g, int node, const OqcShape *xs, OqcResize *r,
                    OqcArena *tables, OqcDiag *d);

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

/* ====================================================================== dump.c */

typedef enum OqcDumpFormat { OQC_DUMP_TEXT, OQC_DUMP_XML, OQC_DUMP_DOT } OqcDumpFormat;

/* Text dump: one line per node in topological order; constants summarised. */
int oqc_dump_text(const OqcGraph *g, FILE *out);
/* Graphviz dump: a box per node labelled with op and output shape. */
int oqc_dump_dot(const OqcGraph *g, FILE *out);
/* Summary of a constant's values: "min=... max=..." (written into the arena). */
const char *oqc_const_summary(OqcGraph *g, int tensor);

/* ================================================================== dump_xml.c */

/* XML dump (schema docs/oqc-ir.rng). With data_path, constants' bytes are written
 * to that side file and referenced from the XML by offset; data_ref is the name
 * written in the XML (relative to the XML file). */
int oqc_dump_xml(OqcGraph *g, FILE *out, const char *data_path, const char *data_ref,
                 OqcDiag *d);
/* Length of the well-formed UTF-8 character at p (n bytes left) that XML can carry
 * verbatim, or 0 when the byte must be escaped (\xHH): the one escaping rule of every
 * XML file oqc writes (IR dumps, calibration tables). */
size_t oqc_xml_char_len(const unsigned char *p, size_t n);
/* Loads an XML dump back into a graph (constant data from the side file when the XML
 * references one). */
OqcGraph *oqc_load_xml(const char *path, OqcDiag *d);

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

/* The FP32 executor: runs the graph in topological order over one planned arena in
 * which dead tensors' memory is reused; reshapes are views. */
typedef struct OqcExec OqcExec;

/* Called after a node runs, once per output tensor, with its data (calibration). */
typedef void (*OqcTensorHook)(void *ctx, const OqcGraph *g, int tensor, const void *data);

/* Lists every op (with counts) the executor cannot run, in one error; 0 if none. */
int oqc_check_supported(const OqcGraph *g, OqcDiag *d);
/* Whether the executor has a kernel for node n's operator (the test of
 * oqc_check_supported; node-specific refusals come from oqc_exec_new). */
int oqc_exec_op_supported(const OqcNode *n);
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

/* ==================================================================== infile.c */

struct stat;
/* Opens path for reading (a descriptor, O_CLOEXEC): only a regular file; a FIFO,
 * device, socket or directory is refused without blocking, with an error naming it
 * (what: e.g. "external data file" for messages, or NULL).  The file is remembered as
 * an input of this process (see oqc_in_was_read); st (or NULL) receives its stat. */
int oqc_in_open(const char *path, const char *what, struct stat *st, OqcDiag *d);
/* The same as a stdio stream, or NULL with an error. */
FILE *oqc_in_fopen(const char *path, OqcDiag *d);
/* oqc_in_open for a file a model names (file = dir/name): its real path (symbolic
 * links resolved) must be inside dir's real path, else an error. */
int oqc_in_open_inside(const char *dir, const char *file, const char *what, struct stat *st,
                       OqcDiag *d);
/* The name an input of this process was read by when path is the same file (device
 * and inode: also through links or other names), else NULL.  Inputs are remembered
 * only after oqc_in_remember(1): the oqc command line runs one command per process and
 * turns it on; a program using the library may read and rewrite a file on purpose. */
const char *oqc_in_was_read(const char *path);
void oqc_in_remember(int on);
/* Remembers directory path as an input (its listing chose the data files: a file added
 * or removed changes what is read); nothing for anything else. */
void oqc_in_note_dir(const char *path);
/* The inputs remembered so far, in the order first read, by the name first used. */
size_t oqc_in_count(void);
const char *oqc_in_path(size_t i);

/* =================================================================== outfile.c */

/* An output file written completely or not at all: a temporary renamed into place when
 * finished (a device or pipe that exists is written directly). */
typedef struct OqcOutFile {
    FILE *f;             /* the stream to write */
    const char *path;    /* the final path */
    char *tmp;           /* the temporary's path (malloc'd), NULL when writing directly */
} OqcOutFile;

/* Opens path for writing; -1 with an error naming it. */
int oqc_out_open(OqcOutFile *o, const char *path, OqcDiag *d);
/* Closes the file; when ok and everything was written, puts it in place (0), else
 * removes the temporary (-1, with an error when the writing itself failed). */
int oqc_out_commit(OqcOutFile *o, int ok, OqcDiag *d);
/* -1 with an error when path is a file this process read as an input (infile.c). */
int oqc_out_refuse_input(const char *path, OqcDiag *d);
/* Records path as a finished output of this process (a regular file renamed into
 * place; oqc_out_commit does it), listed in order by oqc_out_count/oqc_out_path. */
void oqc_out_done(const char *path);
/* The output recorded as from was renamed to `to` (recorded in its place). */
void oqc_out_moved(const char *from, const char *to);
size_t oqc_out_count(void);
const char *oqc_out_path(size_t i);
/* Registers a temporary file (or a directory a command created) to be removed if a
 * signal interrupts the command; oqc_tmp_forget when it is renamed or removed. */
void oqc_tmp_add(const char *path);
void oqc_tmp_add_dir(const char *path);
void oqc_tmp_forget(const char *path);
/* Installs handlers for SIGINT, SIGTERM, SIGHUP and SIGQUIT that remove the registered
 * temporaries and directories, then die of the signal (the CLI calls it). */
void oqc_tmp_remove_on_signals(void);

/* ====================================================================== json.c */

/* A JSON document being written (docs/json.md): containers are opened and closed, object
 * members named with oqc_json_key (or the oqc_json_k* shorthands); commas, escaping and
 * number forms are the writer's (see json.c).  Misuse aborts (a bug in oqc). */
typedef struct OqcJson {
    char *buf;                /* the text so far (malloc'd, NUL-terminated) */
    size_t len, cap;          /* bytes used and allocated */
    int depth;                /* open containers */
    char kind[32];            /* per open container: '{' or '[' */
    int count[32];            /* per open container: members written */
    int keyed;                /* a key was written; its value comes next */
} OqcJson;
void oqc_json_init(OqcJson *j);
void oqc_json_free(OqcJson *j);
void oqc_json_object(OqcJson *j);   /* opens {  */
void oqc_json_array(OqcJson *j);    /* opens [  */
void oqc_json_end(OqcJson *j);      /* closes the innermost; a newline after the document */
void oqc_json_key(OqcJson *j, const char *key);
void oqc_json_str(OqcJson *j, const char *s);   /* NULL: null */
void oqc_json_num(OqcJson *j, double v);        /* NaN, +-Inf: null */
void oqc_json_int(OqcJson *j, long long v);
void oqc_json_bool(OqcJson *j, int v);
void oqc_json_null(OqcJson *j);
void oqc_json_kstr(OqcJson *j, const char *key, const char *s);
void oqc_json_knum(OqcJson *j, const char *key, double v);
void oqc_json_kint(OqcJson *j, const char *key, long long v);
void oqc_json_kbool(OqcJson *j, const char *key, int v);
/* The finished document (every container closed). */
const char *oqc_json_text(const OqcJson *j);

/* ================================================================= tensor_io.c */

/* Reads a NumPy .npy file (C order, little-endian numeric dtypes) into the arena. */
int oqc_npy_read(const char *path, OqcArena *a, OqcValue *v, OqcDiag *d);
/* Writes v as .npy (atomically: temporary file renamed into place). */
int oqc_npy_write(const char *path, const OqcValue *v, OqcDiag *d);
/* Reads .npy, ONNX .pb, or (any other name) raw float32 samples of raw_shape. */
int oqc_tensor_read(const char *path, const OqcShape *raw_shape, OqcArena *a, OqcValue *v,
                    OqcDiag *d);
/* How many samples of input shape `in` the array holds: exactly one, a leading sample
 * axis [S, ...in], or S batches stacked on axis 0; error naming `what` otherwise. */
int oqc_samples_of(const char *what, const OqcValue *v, const OqcShape *in,
                   int64_t *nsamples, OqcDiag *d);

/* ================================================================= image_io.c */

/* Color the model takes (--preprocess color=). */
typedef enum OqcColor { OQC_COLOR_RGB, OQC_COLOR_BGR, OQC_COLOR_GRAY } OqcColor;

/* The declared preprocessing of image inputs (--preprocess; docs/images.md). */
typedef struct OqcPreprocess {
    int given;            /* 1 once parsed */
    int resize;           /* shorter side to this many pixels (0: see resize_h) */
    int resize_h, resize_w; /* resize to exactly HxW (0: none) */
    int crop_h, crop_w;   /* centre crop (0: none) */
    float mul, div;       /* x = pixel * mul / div */
    float mean[3], std[3]; /* then (x - mean) / std, per model channel */
    OqcColor color;       /* rgb, bgr or gray */
    int nhwc;             /* layout: 0 NCHW, 1 NHWC */
    char spec[320];       /* canonical text: every key (stored in tables and READMEs) */
} OqcPreprocess;

/* Parses a --preprocess spec (a preset imagenet|cifar|raw and/or key=value pairs,
 * comma-separated; later keys override the preset). */
int oqc_preprocess_parse(const char *spec, OqcPreprocess *p, OqcDiag *d);
/* 1 when path names a JPEG or PNG by its extension (.jpg, .jpeg, .png, any case). */
int oqc_is_image_path(const char *path);
/* 1 when path is a list file (.txt or .lst): one data path per line. */
int oqc_is_list_path(const char *path);
/* The channels, height and width an image must become for model input shape in
 * ([1,C,H,W] or [C,H,W], NHWC with layout=nhwc); error when p's color does not fit. */
int oqc_image_geometry(const OqcPreprocess *p, const OqcShape *in, int *c, int *h, int *w,
                       OqcDiag *d);
/* Decodes the image at path and preprocesses it into out (numel(in) floats). */
int oqc_image_load(const char *path, const OqcPreprocess *p, const OqcShape *in, float *out,
                   OqcDiag *d);
/* n images as one float32 value: [n, C, H, W] (or [n, H, W, C]), in the arena. */
int oqc_images_read(const char *const *files, int64_t n, const OqcPreprocess *p,
                    const OqcShape *in, OqcArena *a, OqcValue *v, OqcDiag *d);
/* The data files of paths: a directory gives its .npy, .pb, .jpg, .jpeg and .png files
 * recursively, in name order at each level; a list file its lines; any other file itself. */
int oqc_data_files(OqcArena *a, const char *const *paths, int npaths, const char ***out,
                   int *n, OqcDiag *d);
/* 1 when any of the files is an image. */
int oqc_data_has_images(const char *const *files, int n);
/* int64 labels [n] of image files: labels "folders" (class = index of the sorted
 * sub-folder of directory data holding the file) or a list file of PATH CLASS lines. */
int oqc_image_labels(OqcArena *a, const char *data, const char *const *files, int n,
                     const char *labels, OqcValue *v, OqcDiag *d);

/* ===================================================================== calib.c */

/* Calibration (contract: docs/calibration.md): per quantized tensor, a histogram of |x|
 * over [0, amax] with nbins equal bins, summed over every sample; a method picks the
 * saturation threshold T from it. */
typedef enum OqcCalibMethod {
    OQC_CALIB_ENTROPY,     /* TensorRT's KL-divergence search (default) */
    OQC_CALIB_MAX,         /* T = amax */
    OQC_CALIB_PERCENTILE,  /* T = upper edge of the bin where the CDF reaches P% */
    OQC_CALIB_MSE,         /* T minimising expected squared quantization error */
} OqcCalibMethod;

/* Histogram of |x| for one tensor. */
typedef struct OqcHist {
    float amax;            /* largest |x| over the whole calibration set */
    int nbins;             /* N (2048 by default) */
    uint64_t *bins;        /* counts; a value equal to amax falls in the last bin */
    uint64_t count;        /* values added */
} OqcHist;

/* The calibration result of one tensor. */
typedef struct OqcCalibEntry {
    const char *name;      /* tensor name */
    float amax;            /* largest |x| */
    float threshold;       /* chosen T */
    float scale;           /* T / 127, or T / 255 for an unsigned tensor */
    int is_unsigned;       /* provably non-negative: stored as u8 */
    const char *method;    /* "entropy", "max", "percentile:99.99", "mse" or "table" */
    double clipped;        /* share of values above T */
    double kl;             /* KL divergence at T (entropy only; else NaN) */
    const OqcHist *hist;   /* its histogram (NULL for imported entries) */
    double *divergence;    /* entropy: divergence per candidate bin index i (nbins
                              entries, NaN where not evaluated), else NULL */
    const char *op;        /* op type of the producer ("input" for graph inputs) */
    OqcShape shape;        /* tensor shape */
} OqcCalibEntry;

/* The default method: percentile:99.99, chosen on the real networks of the development
 * set (docs/calibration.md, "The default method"). */
#define OQC_CALIB_DEFAULT "percentile:99.99"
#define OQC_CALIB_DEFAULT_PERCENTILE 99.99
/* Parses "entropy", "max", "percentile:P" (0 < P <= 100) or "mse". */
int oqc_calib_method_parse(const char *s, OqcCalibMethod *m, double *param, OqcDiag *d);
/* Adds n values' |x| to h (amax and nbins already set; |x| > amax is an error of the
 * caller: the amax pass saw every value). Vectorisable. */
void oqc_hist_add(OqcHist *h, const float *x, int64_t n);
/* The entropy method's Q expansion (exposed for tests): the i bins of p are split into
 * `levels` groups of i / levels bins (the last group takes the remainder); each group's
 * total is spread evenly over the group's bins that are non-zero in p. */
void oqc_entropy_expand(const double *p, int i, int levels, double *q);
/* Picks T for h; param: P for percentile; for entropy 0 leaves bin 0 out of the search
 * (the default, see docs/calibration.md), non-zero keeps it (the contract's literal
 * steps); levels = 128 (signed) or 255 (unsigned entropy option; any levels >= 1 is
 * accepted); mse models the rounding step the tensor will have, T / 255 when
 * e->is_unsigned (or levels == 255), else T / 127; for entropy fills divergence
 * (nbins entries, NaN where not evaluated; may be NULL). Sets e->threshold, amax,
 * clipped, kl (NaN unless entropy) and scale (T / 127, or T / 255 when e->is_unsigned,
 * which the caller sets first). Returns 0, or -1 when amax is not finite (the data held
 * non-finite values: the caller reports it). */
int oqc_calib_threshold(const OqcHist *h, OqcCalibMethod m, double param, int levels,
                        OqcCalibEntry *e, double *divergence);

/* TensorRT calibration cache: "TRT-<version>-<Kind>Calibration" then one line per
 * tensor "NAME: HHHHHHHH" (the float32 bits of T/127, 8 lowercase hex digits: a signed
 * entry's own scale, so a cache read and written again is byte-identical). kind is
 * "Entropy", "MinMax", ... ("Calibration" is appended) or a whole kind such as
 * "EntropyCalibration2"; NULL means "Entropy". */
int oqc_table_write_trt(const char *path, const char *kind, const OqcCalibEntry *e, int n,
                        OqcDiag *d);
/* Reads a cache into entries allocated in a (threshold = scale * 127, amax = threshold,
 * signed, method "table", clipped and kl NaN). */
int oqc_table_read_trt(const char *path, OqcArena *a, OqcCalibEntry **e, int *n, OqcDiag *d);
/* XML form (schema docs/calib-table.rng): name, method, amax, threshold, scale,
 * signedness, samples per tensor. */
int oqc_table_write_xml(const char *path, const OqcCalibEntry *e, int n, int64_t samples,
                        OqcDiag *d);
int oqc_table_read_xml(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                       int64_t *samples, OqcDiag *d);
/* What an XML table carries besides the thresholds (docs/calibration.md). */
typedef struct OqcTableExtra {
    const char *float_layers;  /* the layers mixed precision keeps float (<float-layer>
                                  elements): a comma list, NULL for none */
    const char *preprocess;    /* the --preprocess spec images were calibrated with (root
                                  attribute "preprocess"), NULL for none */
} OqcTableExtra;
/* The same with the extras x (NULL: none); on reading, *x receives them (NULL fields
 * when absent; strings in arena a). */
int oqc_table_write_xml_ex(const char *path, const OqcCalibEntry *e, int n, int64_t samples,
                           const OqcTableExtra *x, OqcDiag *d);
int oqc_table_read_xml_ex(const char *path, OqcArena *a, OqcCalibEntry **e, int *n,
                          int64_t *samples, OqcTableExtra *x, OqcDiag *d);

/* ================================================================= calibrate.c */

/* The streaming statistics of a calibration, for calibration split across machines
 * (docs/calibration.md, "Calibration split across machines"): stage 1 holds each
 * histogram's amax over some samples; stage 2 the histograms themselves, binned over
 * the agreed (merged stage-1) amax.  Stage-1 statistics merge by maximum, stage-2 ones
 * by summing counts, so merging the shards' statistics gives exactly what one run over
 * all of them holds. */
typedef struct OqcCalibStats {
    const char *path;        /* the file read or written (for messages), or NULL */
    int stage;               /* 1: amax only; 2: histograms */
    int nhists;              /* histograms: one per calibrated root tensor */
    int bins;                /* bins per histogram */
    const char **names;      /* [nhists] the root tensors' names, in the model's order */
    OqcHist *hists;          /* [nhists] amax (and, stage 2, count and bins) */
    int64_t samples;         /* samples these statistics cover */
    int64_t range_samples;   /* stage 2: the samples its amax was measured over */
    const char *preprocess;  /* the --preprocess spec of image data, or NULL */
} OqcCalibStats;

/* What to calibrate and how. */
typedef struct OqcCalibOptions {
    const char *const *data;     /* data paths: directories of .npy/.pb, or files */
    int ndata;                   /* number of paths */
    OqcCalibMethod method;       /* threshold method */
    double param;                /* percentile P */
    const char *method_name;     /* as given, recorded in the table */
    int bins;                    /* histogram bins (2048) */
    int threads;                 /* executor threads */
    int progress;                /* draw a progress bar on stderr */
    const OqcCalibEntry *table;  /* imported thresholds that override calibration */
    int ntable;                  /* their count */
    const OqcPreprocess *pre;    /* how image files become inputs, or NULL */
    const OqcCalibStats *range;  /* stage-1 statistics: run pass 2 only, over their amax */
    const OqcCalibStats *merged; /* stage-2 statistics: no data, thresholds from these */
    OqcCalibStats *save;         /* receives the statistics (stage 1, or 2 with range)
                                    instead of thresholds (*nentries 0) */
} OqcCalibOptions;

/* Runs the (optimised) graph over the data twice (amax, then histograms) and picks a
 * threshold for every float activation tensor; entries live in g1's arena. g1 runs one
 * sample at a time; gb (may be NULL) is the same model re-batched to b samples
 * (oqc_rebatch), used for every full batch. The result does not depend on b. */
int oqc_calibrate(OqcGraph *g1, OqcGraph *gb, int64_t b, const OqcCalibOptions *o,
                  OqcCalibEntry **entries, int *nentries, int64_t *nsamples, OqcDiag *d);
/* calib_stats.c: writes st as a statistics file (docs/calibration.md), completely or
 * not at all. */
int oqc_calib_stats_write(const char *path, const OqcCalibStats *st, OqcDiag *d);
/* Reads and validates a statistics file into *st (in arena a); errors name the file. */
int oqc_calib_stats_read(const char *path, OqcArena *a, OqcCalibStats *st, OqcDiag *d);
/* Merges n statistics of one stage (maximum of amax; stage 2: sums of counts, every
 * file binned over the same amax) into *out, in arena a; an error names the first file
 * that does not agree with the first one. */
int oqc_calib_stats_merge(const OqcCalibStats *in, int n, OqcArena *a, OqcCalibStats *out,
                          OqcDiag *d);

/* The graph-level conditions of calibration (one float input): 0, or -1 with an error. */
int oqc_calib_check_input(const OqcGraph *g, OqcDiag *d);
/* A table with threshold 1 for every tensor calibration gives one (in arena a): the
 * tensors a table-driven INT8 lowering sees, for `oqc check`. */
void oqc_calib_placeholder(const OqcGraph *g, OqcArena *a, OqcCalibEntry **e, int *n);

/* Marks provably non-negative tensors (u8 storage) in nonneg (ntensors entries):
 * outputs of Relu, Clip with min >= 0, Sigmoid, convs with such a fused activation,
 * pooling/reshapes/concats/sums of non-negative tensors. */
void oqc_find_unsigned(const OqcGraph *g, unsigned char *nonneg);

/* =================================================================== lower.c */

/* Lowers the optimised graph g to INT8: thresholds from a calibration over o->data
 * (gb, b as for oqc_calibrate; o->table overrides the tensors it names) or, without
 * data, from o->table alone; then pass "quantize" with cfg.  entries/nentries (may be
 * NULL) receive the thresholds used. */
int oqc_lower_int8(OqcGraph *g, OqcGraph *gb, int64_t b, const OqcCalibOptions *o,
                   const struct OqcQuantConfig *cfg, OqcCalibEntry **entries, int *nentries,
                   OqcDiag *d);

/* ============================================================== calib_report.c */

/* Writes a self-contained HTML report (inline SVG and CSS, no script): a summary table
 * and, per tensor, the |x| histogram on a log axis with amax and T marked and the
 * divergence curve. */
int oqc_calib_report(const char *path, const char *model, const OqcCalibEntry *e, int n,
                     int64_t samples, OqcDiag *d);
/* The same with a section "Sensitivity" (sens may be NULL: none). */
struct OqcSensitivity;
int oqc_calib_report_ex(const char *path, const char *model, const OqcCalibEntry *e, int n,
                        int64_t samples, const struct OqcSensitivity *sens, OqcDiag *d);

/* ================================================================ quantize.c */

/* How pass "quantize" (passes/quantize.c) lowers a calibrated graph to INT8. */
typedef struct OqcQuantConfig {
    int requant;                  /* OQCI_REQ_FLOAT or OQCI_REQ_FIXED */
    const char *fp32_nodes;       /* comma-separated node names kept in float, or NULL */
    int weight_bits;              /* 2..8: weights in [-(2^(b-1) - 1), 2^(b-1) - 1]; 0: 8 */
} OqcQuantConfig;

/* The weight bits of cfg (8 when cfg is NULL or leaves them 0). */
static inline int oqc_weight_bits(const OqcQuantConfig *cfg) {
    return cfg && cfg->weight_bits ? cfg->weight_bits : 8;
}
/* The largest weight magnitude: 2^(bits - 1) - 1, 127 for 8 bits. */
static inline int32_t oqc_weight_qmax(const OqcQuantConfig *cfg) {
    return (int32_t)(1 << (oqc_weight_bits(cfg) - 1)) - 1;
}

/* What an INT8 node runs (the runtime's parameter structs, see runtime/oqci.h). */
typedef enum OqcQKind {
    OQC_Q_CONV,         /* Conv, Gemm, MatMul: one oqci_conv per output (merged convs) */
    OQC_Q_DECONV,       /* ConvTranspose: oqci_deconv */
    OQC_Q_MAXPOOL,      /* MaxPool: oqci_maxpool */
    OQC_Q_AVGPOOL,      /* AveragePool, GlobalAveragePool: oqci_avgpool */
    OQC_Q_ADD,          /* Add, Sum (with a fused Relu/Clip): oqci_add */
    OQC_Q_MUL,          /* Mul of two activations (one broadcast per block): oqci_mul */
    OQC_Q_CLAMP,        /* Relu, Clip: oqci_clamp */
    OQC_Q_LUT,          /* an element-wise function of one tensor (Sigmoid, SiLU, ...;
                           the last node of the chain computing it): oqci_lut */
    OQC_Q_VIEW,         /* Flatten, Reshape, ...: nothing runs (a view of the input) */
    OQC_Q_RESIZE,       /* Resize / Upsample at the input's scale: nearest moves codes
                           (oqcf_resize on bytes, tables in rs), linear runs oqci_resize */
    OQC_Q_QUANTIZE,     /* float -> s8/u8 at an FP32/INT8 boundary: oqci_quantize */
    OQC_Q_DEQUANTIZE,   /* s8/u8 -> float at an INT8/FP32 boundary: oqci_dequantize */
} OqcQKind;

/* An INT8 node's kernel parameters; the arrays they point to live in the graph's arena
 * and are what the emitter writes as constants. */
typedef struct OqcQNode {
    OqcQKind kind;       /* which kernel */
    int nconv;           /* CONV: one parameter set per output */
    OqciConv *conv;      /* CONV */
    float **w_scale;     /* CONV: per output, its channels' weight scales (reports) */
    OqciPool pool;       /* MAXPOOL, AVGPOOL */
    OqciAdd add;         /* ADD */
    OqciMul mul;         /* MUL (input 0 is its a, input 1 its b) */
    int32_t in_type;     /* CLAMP, DEQUANTIZE: OQCI_S8/OQCI_U8 (DEQUANTIZE: or OQCI_S32) */
    int32_t out_type;    /* CLAMP, QUANTIZE */
    int32_t lo, hi;      /* CLAMP */
    int64_t count;       /* CLAMP, LUT, QUANTIZE, DEQUANTIZE: elements */
    float scale;         /* QUANTIZE, DEQUANTIZE */
    const OqcAcc *acc;   /* DEQUANTIZE of an accumulator tensor (in_type OQCI_S32) */
    uint8_t *table;      /* LUT: 256 output bytes, indexed by the input byte */
    int nfused;          /* LUT: float nodes the table replaces (with this one) */
    const struct OqcResize *rs;  /* RESIZE: the plan (nearest: its tables run as is) */
    OqciResize resize;   /* RESIZE, linear: the integer kernel's parameters */
    OqciDeconv deconv;   /* DECONV */
} OqcQNode;

/* Sets the quant of every tensor named in e (the calibration result or an imported
 * table) in g; a name g does not have is an error naming it. */
int oqc_quant_apply(OqcGraph *g, const OqcCalibEntry *e, int n, OqcDiag *d);

/* ==================================================================== eval.c */

/* What `oqc eval` compares and prints. */
typedef struct OqcEvalOptions {
    const OqcValue *data;        /* evaluation inputs (samples on the first axis) */
    const char *data_path;       /* for messages */
    const OqcValue *labels;      /* int64/int32 labels, or NULL */
    const char *labels_path;     /* for messages */
    int threads;                 /* executor threads */
    int per_layer;               /* print the per-layer SQNR table */
    const char *requant_name;    /* "float" or "fixed", for the report */
    const char *save_int8;       /* .npy for the INT8 first output [S, n], or NULL */
    const char *save_fp32;       /* .npy for the float first output, or NULL */
    double *sqnr;                /* receives the centered SQNR per output, or NULL */
    FILE *out;                   /* report stream (stdout when NULL) */
    int64_t limit;               /* evaluate the first `limit` samples only (0: all) */
    const char *const *images;   /* image files, one sample each, decoded one at a time
                                    (data is NULL then), or NULL */
    int64_t nimages;             /* their count */
    const OqcPreprocess *pre;    /* how the images become inputs */
    OqcJson *json;               /* receives the same facts as members of the open object
                                    (docs/json.md), or NULL */
} OqcEvalOptions;

/* How close INT8 outputs are to float ones: S samples of n elements each (the first
 * output), classes on the last axis (cls; < 2: no top-1). */
typedef struct OqcMetrics {
    int64_t rows, nagree;  /* rows compared by top-1, and how many agree */
    double agree;          /* nagree / rows (NaN without classes) */
    double top1_f, top1_q; /* accuracy against labels (NaN without labels) */
    double sqnr;           /* centered output SQNR, dB (see eval.c) */
    double sqnr_raw;       /* uncentered, dB */
} OqcMetrics;
void oqc_metrics(const float *yf, const float *yq, int64_t S, int64_t n, int64_t cls,
                 const int64_t *lab, OqcMetrics *m);
/* m as a JSON object {"rows", "agree", "agreement", "top1_fp32", "top1_int8",
 * "sqnr_db", "sqnr_uncentered_db"} (NaN and infinite figures as null). */
void oqc_metrics_json(OqcJson *j, const OqcMetrics *m);
/* Labels v (int64 or int32) as int64 (a copy in a when converted); error naming path. */
int oqc_labels_i64(const OqcValue *v, const char *path, OqcArena *a, const int64_t **lab,
                   int64_t *n, OqcDiag *d);

/* Runs float graph gf and its INT8 lowering gq (same model, same optimisations) over
 * o->data and prints top-1 agreement, accuracies, output SQNR (centered) and per-layer
 * SQNR. */
int oqc_eval(OqcGraph *gf, OqcGraph *gq, const OqcEvalOptions *o, OqcDiag *d);

/* ================================================================= mixprec.c */

/* Builds the INT8 lowering of the model with the layers named in fp32_nodes (a comma
 * list; NULL or "" for none) kept float, always from the same thresholds; NULL with an
 * error. */
typedef OqcGraph *(*OqcInt8Builder)(void *ctx, const char *fp32_nodes, OqcDiag *d);

/* Sensitivity analysis and the mixed-precision search (docs/calibration.md). */
typedef struct OqcMixOptions {
    const OqcValue *data;        /* validation inputs (float32, samples on axis 0) */
    const char *data_path;       /* for messages */
    const OqcValue *labels;      /* int64/int32 labels of data, or NULL */
    const char *labels_path;     /* for messages */
    const char *fp32_nodes;      /* layers the user keeps float anyway, or NULL */
    double min_sqnr;             /* target: centered output SQNR >= this (dB), or NaN */
    double max_drop;             /* target: top-1 drop <= this (points), or NaN */
    int64_t limit;               /* use the first `limit` samples (0: all) */
    int threads;                 /* executor threads */
    int progress;                /* count layers on stderr */
    int quiet;                   /* the search prints nothing */
    FILE *out;                   /* report stream (stdout when NULL) */
} OqcMixOptions;

/* One layer's sensitivity: the output figures when only it is INT8 (only_q) and when
 * only it stays float (only_f). */
typedef struct OqcSensRow {
    char *layer;           /* node name (as --fp32-nodes takes it) */
    char *op;              /* its op type */
    OqcMetrics only_q, only_f;
} OqcSensRow;
typedef struct OqcSensitivity {
    int64_t samples;       /* validation samples used */
    int labels;            /* top-1 figures are meaningful */
    OqcMetrics all;        /* every layer INT8 */
    int nrows;
    OqcSensRow *rows;      /* most harmful first (lowest only_q SQNR) */
} OqcSensitivity;
/* Measures every INT8 layer of the lowering into *s (free with oqc_sensitivity_free). */
int oqc_sensitivity(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                    OqcSensitivity *s, OqcDiag *d);
/* The table `oqc eval --sensitivity` prints. */
void oqc_sensitivity_print(FILE *out, const OqcSensitivity *s);
void oqc_sensitivity_free(OqcSensitivity *s);
/* Finds the fewest layers to keep float (most harmful first) for the target of o on
 * the validation data; *fp32_nodes receives them, with o->fp32_nodes, as a malloc'd
 * comma list ("" when every layer may stay INT8).  Prints the choice and why. */
int oqc_mixprec_search(OqcGraph *gf, OqcInt8Builder build, void *ctx, const OqcMixOptions *o,
                       char **fp32_nodes, OqcDiag *d);

/* ================================================================== model.c */

/* Loads a model by content: XML dumps (starting with "<?xml") or ONNX protobuf. */
OqcGraph *oqc_load_model(const char *path, OqcDiag *d);
/* Load + --input-shape + shape inference; strict rejects unsupported ops. */
OqcGraph *oqc_prepare(const char *path, const OqcInputShape *shapes, int nshapes,
                      int strict, OqcDiag *d);

/* ==================================================================== emit_c.c */

/* What oqc_emit_c reports about the code it wrote. */
typedef struct OqcEmitStats {
    size_t arena_bytes;    /* NAME_ARENA_BYTES: activations + kernel scratch */
    size_t arena_bytes_noamx; /* NAME_ARENA_BYTES off x86-64 Linux (no AMX scratch) */
    size_t weight_bytes;   /* bytes of the constants written */
    int nconst;            /* constant arrays written */
    int nfiles;            /* files written */
    const char *const *files; /* their paths (in the graph's arena) */
    int nruntime;          /* of which copies of runtime files */
} OqcEmitStats;

/* How to emit C (see docs/compile.md). */
typedef struct OqcEmitOptions {
    const char *outdir;                 /* output directory, created when missing */
    const char *name;                   /* NAME: a C identifier prefixing every symbol and
                                           file (checked with oqc_c_name_check) */
    const char *precision;              /* for the generated comments ("fp32") */
    const char *const *extra_runtime;   /* further runtime files to copy ("oqci_conv.c"),
                                           with what they need; may be NULL */
    int nextra;                         /* their count */
    OqcEmitStats *stats;                /* receives statistics, or NULL */
    const char *target;                 /* --target: kernel family the build flags in
                                           NAME.mk select (NULL: "native") */
    const char *preprocess;             /* the --preprocess spec the model's images take
                                           (stated in README.md), or NULL */
} OqcEmitOptions;
/* The compiler flags of --target TARGET (native, portable, avx2, avxvnni, avx512vnni, amx,
 * neondot, dispatch), or NULL for an unknown target. */
const char *oqc_target_flags(const char *target);
/* The --target used when none is given: dispatch when oqc runs on x86-64 or AArch64
 * Linux (the emitted code chooses its kernels at run time), else native. */
const char *oqc_default_target(void);

/* Writes executor e (built with oqc_exec_new(g, 1, d): one thread) as C into
 * opt->outdir: NAME.h, NAME.c, NAME_weights.h/.c, the runtime files the calls need,
 * NAME.mk and README.md. Nodes the emitter cannot compile are all reported before
 * anything is written; files go to temporary names renamed together at the end. */
int oqc_emit_c(OqcExec *e, const OqcEmitOptions *opt, OqcDiag *d);
/* What oqc_emit_c refuses in e, checked before it writes anything: each node the
 * emitter cannot compile (the first max_nodes listed, then a count), non-float graph
 * inputs or outputs, constants without data; errors in d, returns their number. */
int oqc_emit_check(OqcExec *e, int max_nodes, OqcDiag *d);
/* 0 when name can be NAME (a C identifier of at most 48 characters, not a keyword,
 * not starting with '_' or the runtime's oqcf/oqci prefixes), else an error. */
int oqc_c_name_check(const char *name, OqcDiag *d);
/* A valid NAME made from a model path: its base name without extension, other
 * characters turned into '_' ("models/resnet-18.onnx" -> "resnet_18"). */
const char *oqc_c_name_from_path(OqcArena *a, const char *path);

/* A runtime source file embedded in oqc at build time (the Makefile generates the
 * table from runtime/ into $(BUILD)/gen/oqc_runtime_src.c); oqc compile copies them. */
typedef struct OqcRuntimeFile {
    const char *name;               /* file name in runtime/, e.g. "oqcf_conv.c" */
    const unsigned char *text;      /* its bytes, NUL-terminated */
} OqcRuntimeFile;
/* Every file of runtime/, sorted by name; ends with {NULL, NULL}. */
extern const OqcRuntimeFile oqc_runtime_files[];

/* ================================================================ export_qdq.c */

/* What oqc_export_qdq wrote. */
typedef struct OqcQdqStats {
    int nact;        /* activation tensors given a QuantizeLinear -> DequantizeLinear pair */
    int nact_zp0;    /* of which oqc's u8 (zero point 0, scale T/255); the others are its
                        s8 (uint8 with zero point 128, scale T/127) */
    int nweights;    /* Conv/Gemm/MatMul weights written as int8 per output channel */
    int nbias;       /* biases written as int32 at scale s_in * s_w[k] */
    int nunused;     /* calibrated tensors oqc's INT8 code does not hold in 8 bits (e.g. an
                        Add output whose Relu oqc folds into the Add): left float */
    int64_t bytes;   /* size of the file written */
} OqcQdqStats;

/* How to export. */
typedef struct OqcQdqOptions {
    const char *path;   /* the .onnx to write */
    int weight_uint8;   /* 0: int8 weights, zero point 0 (ONNX's and TensorRT's convention);
                           1: the same integers + 128 as uint8, zero point 128 (ONNX
                           Runtime on x86 without VNNI: its u8s8 kernels sum pairs of
                           products in saturating int16, its u8u8 kernels are exact) */
} OqcQdqOptions;

/* Writes g as an ONNX model (opset >= 13) with oqc's INT8 quantization as
 * QuantizeLinear/DequantizeLinear nodes, atomically to o->path (nothing is left on error).
 * g: the model after the passes cleanup and fold-bn only (plain ONNX nodes); it gains
 * the generated names as unlinked tensors.  gq: the same model lowered to INT8 by oqc
 * (the whole pipeline, a calibration or table, pass "quantize": oqc_lower_int8); its
 * 8-bit tensors (matched by name, NAME or NAME.q8) get a Q/DQ pair of uint8 with zero
 * point 0 (oqc's u8, scale T/255) or 128 (oqc's s8, scale T/127), and the
 * Conv/Gemm/MatMul nodes it runs in INT8 get int8 per-output-channel weights and int32
 * biases behind DequantizeLinear, quantized exactly as pass "quantize" does (see
 * docs/export-qdq.md). st (may be NULL) receives statistics. */
int oqc_export_qdq(OqcGraph *g, const OqcGraph *gq, const OqcQdqOptions *o,
                   OqcQdqStats *st, OqcDiag *d);

#endif
