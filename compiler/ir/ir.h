/* ir.h - the IR: graph, tensors, nodes, the operator table, the quantized-node
 * parameters, and the IR's geometry helpers and dumps.
 *
 * Each layer of compiler/ has one header that includes the one below it (base.h <
 * ir.h < ops.h < shape.h < exec.h / frontend.h < calib.h < passes.h < backend.h), organised as
 * one banner per source file listing what that file exports (chibicc style); see
 * docs/architecture.md.  The public API for library users is oqc.h.
 *
 * The IR is a flat graph: arrays of tensors and nodes addressed by integer ids, each
 * tensor knowing its producer and consumers, nodes kept in topological order. One
 * arena per model owns every byte of it; nothing is freed individually.
 */
#ifndef OQC_IR_H
#define OQC_IR_H

#include "base.h"
#include "oqcf.h"
#include "oqcf_nn.h"
#include "oqcf_tensor.h"
#include "oqci.h"


/* ===================================================================== graph.c */

/* Largest element count of any tensor oqc accepts (2^32): a model claiming more is
 * rejected as absurd before anything is allocated for it. */
#define OQC_MAX_ELEMENTS ((int64_t)1 << 32)
#define OQC_MAX_RANK OQCF_MAX_RANK

/* A shape in the IR: rank -1 when unknown; d[i] == -1 for an unknown extent. */
typedef OqcfShape OqcShape;

/* Operators: OQC_OP_UNKNOWN for anything not in ops.def. */
#define OQC_OPF_ELEMWISE 1u
#define OQC_OPF_VIEW 2u
#define OQC_OPF_NONNEG 4u
#define OQC_OPF_SIGN_OF_X 8u
#define OQC_OPF_SIGN_OF_ALL 16u
#define OQC_OPF_INT8 32u
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
    int32_t nch;         /* channel thresholds from the calibration (0: none): a */
    const float *ch_threshold; /* candidate for channel scales (oqc_channel_scaled) */
    const float *ch_scale; /* set by pass quantize when the tensor runs at one scale per
                              channel (ch_threshold[c] / 127 or 255) instead of scale;
                              then only its producer and its depthwise readers see it */
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
    OqcfAct act;              /* NONE, or the layer's fused Clip on the float values (one
                               * int32 range cannot clip channels at different scales) */
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
/* Error about a node: prefixed "FILE: node 'NAME' (OP): ". */
int oqc_err_node(OqcDiag *d, const OqcGraph *g, int node, const char *fmt, ...)
    OQC_PRINTF(4, 5);
/* Label for messages: the node name, quoted. */
const char *oqc_node_label(const OqcGraph *g, int node);

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

/* ================================================================ quantize.c */

/* How pass "quantize" (passes/quantize.c) lowers a calibrated graph to INT8. */
typedef struct OqcQuantConfig {
    int requant;                  /* OQCI_REQ_FLOAT or OQCI_REQ_FIXED */
    const char *fp32_nodes;       /* comma-separated node names kept in float, or NULL */
    int weight_bits;              /* 2..8: weights in [-(2^(b-1) - 1), 2^(b-1) - 1]; 0: 8 */
    int tensor_scales;            /* 1: one scale per tensor, channel thresholds unused */
} OqcQuantConfig;

/* The weight bits of cfg (8 when cfg is NULL or leaves them 0). */
static inline int oqc_weight_bits(const OqcQuantConfig *cfg) {
    return cfg && cfg->weight_bits ? cfg->weight_bits : 8;
}
/* The largest weight magnitude: 2^(bits - 1) - 1, 127 for 8 bits. */
static inline int32_t oqc_weight_qmax(const OqcQuantConfig *cfg) {
    return (int32_t)(1 << (oqc_weight_bits(cfg) - 1)) - 1;
}

/* The most inputs an INT8 Concat takes (the FP32 executor's limit too). */
#define OQC_CONCAT_MAX_IN 256

/* What an INT8 node runs (the runtime's parameter structs, see runtime/int8/oqci.h).
 * Each kind has its test and parameters in passes/quantize_<family>.c (hooks in
 * quantize.c's kinds[] table), its run function in exec/exec_q.c and its emission in
 * backend/emit_q.c, the last two in tables indexed by kind. */
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
    OQC_Q_TRANSPOSE,    /* Transpose, DepthToSpace, SpaceToDepth at the input's scale:
                           moves the codes (oqcf_transpose on bytes, perm, view) */
    OQC_Q_CONCAT,       /* Concat: each input's codes copied or requantized to the
                           output's scale (oqci_concat) */
    OQC_Q_MOVE,         /* Slice, Split at the input's scale: the FP32 op's own kernel
                           moves the codes as one-byte elements (the executor prepares
                           and the emitter writes the node as the float op's) */
    OQC_Q_QUANTIZE,     /* float -> s8/u8 at an FP32/INT8 boundary: oqci_quantize */
    OQC_Q_DEQUANTIZE,   /* s8/u8 -> float at an INT8/FP32 boundary: oqci_dequantize */
    OQC_Q_LAYERNORM,    /* LayerNormalization: oqci_layernorm */
    OQC_Q_KIND_COUNT    /* the number of kinds (table sizes) */
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
    OqciLayerNorm ln;    /* LAYERNORM */
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
    int perm[OQC_MAX_RANK];  /* TRANSPOSE: output dim j is input dim perm[j] */
    OqcShape view;       /* TRANSPOSE: the input seen as this shape (DepthToSpace,
                          * SpaceToDepth: their 6-D view); rank 0: its own shape */
    OqciConcat concat;   /* CONCAT (its parts in the graph's arena; at most
                            OQC_CONCAT_MAX_IN inputs) */
} OqcQNode;

#endif
