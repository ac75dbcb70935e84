/* ops.c - the dispatch tables from an op to its family's hooks: its shape rule
 * (oqc_shape_fns, for shape/shape.c), its FP32 preparation (oqc_op_prepare, for
 * exec/exec.c) and, by the ExecKind the preparation chose, its emission (oqc_em_fp32,
 * for backend/emit_node.c). */
#include <stdlib.h>

#include "ops_int.h"

/* 1 for ops whose first output is a view of their first input. */
int oqc_exec_is_view_op(const OqcNode *n) { return !!(oqc_op_flags(n->op) & OQC_OPF_VIEW); }

const ShapeFn oqc_shape_fns[OQC_OP_COUNT] = {
    /* ops.def's OQC_UNARY rows: one output of the input's shape */
#define OQC_OP(name, flags)
#define OQC_UNARY(name, un, flags) [OQC_OP_##name] = shape_same,
#include "ops.def"
#undef OQC_UNARY
#undef OQC_OP
    [OQC_OP_Add] = oqc_rule_broadcast,
    [OQC_OP_ArgMax] = oqc_rule_argmax,
    [OQC_OP_ArgMin] = oqc_rule_argmax,
    [OQC_OP_AveragePool] = oqc_rule_pool,
    [OQC_OP_BatchNormalization] = oqc_rule_batchnorm,
    [OQC_OP_Cast] = oqc_rule_cast,
    [OQC_OP_Clip] = oqc_rule_clip,
    [OQC_OP_Concat] = oqc_rule_concat,
    [OQC_OP_ConstantOfShape] = oqc_rule_constant_of_shape,
    [OQC_OP_Conv] = oqc_rule_conv,
    [OQC_OP_ConvTranspose] = oqc_rule_conv_transpose,
    [OQC_OP_DepthToSpace] = oqc_rule_space_depth,
    [OQC_OP_DequantizeLinear] = oqc_rule_dequantize,
    [OQC_OP_Div] = oqc_rule_broadcast,
    [OQC_OP_Dropout] = oqc_rule_dropout,
    [OQC_OP_Expand] = oqc_rule_expand,
    [OQC_OP_Flatten] = oqc_rule_flatten,
    [OQC_OP_Gather] = oqc_rule_gather,
    [OQC_OP_Gemm] = oqc_rule_gemm,
    [OQC_OP_GlobalAveragePool] = oqc_rule_global_pool,
    [OQC_OP_GlobalMaxPool] = oqc_rule_global_pool,
    [OQC_OP_HardSigmoid] = shape_same,
    [OQC_OP_Identity] = shape_same,
    [OQC_OP_InstanceNormalization] = oqc_rule_instancenorm,
    [OQC_OP_LRN] = oqc_rule_lrn,
    [OQC_OP_LayerNormalization] = oqc_rule_layernorm,
    [OQC_OP_LeakyRelu] = shape_same,
    [OQC_OP_MatMul] = oqc_rule_matmul,
    [OQC_OP_MaxPool] = oqc_rule_pool,
    [OQC_OP_Mul] = oqc_rule_broadcast,
    [OQC_OP_PRelu] = oqc_rule_prelu,
    [OQC_OP_Pad] = oqc_rule_pad,
    [OQC_OP_Pow] = oqc_rule_pow,
    [OQC_OP_QuantizeLinear] = oqc_rule_quantize,
    [OQC_OP_ReduceMax] = oqc_rule_reduce,
    [OQC_OP_ReduceMean] = oqc_rule_reduce,
    [OQC_OP_ReduceMin] = oqc_rule_reduce,
    [OQC_OP_ReduceSum] = oqc_rule_reduce,
    [OQC_OP_Relu] = shape_same,
    [OQC_OP_Reshape] = oqc_rule_reshape,
    [OQC_OP_Resize] = oqc_rule_resize,
    [OQC_OP_Shape] = oqc_rule_shape,
    [OQC_OP_Size] = oqc_rule_size,
    [OQC_OP_Sigmoid] = shape_same,
    [OQC_OP_Slice] = oqc_rule_slice,
    [OQC_OP_Softmax] = oqc_rule_softmax,
    [OQC_OP_SpaceToDepth] = oqc_rule_space_depth,
    [OQC_OP_Split] = oqc_rule_split,
    [OQC_OP_Squeeze] = oqc_rule_squeeze,
    [OQC_OP_Sub] = oqc_rule_broadcast,
    [OQC_OP_Sum] = oqc_rule_broadcast,
    [OQC_OP_Tanh] = shape_same,
    [OQC_OP_Tile] = oqc_rule_tile,
    [OQC_OP_Transpose] = oqc_rule_transpose,
    [OQC_OP_Unsqueeze] = oqc_rule_unsqueeze,
    [OQC_OP_Upsample] = oqc_rule_resize,
};

typedef int (*PrepFn)(OqcExec *e, int node, OqcDiag *d);
typedef void (*EmitFn)(Em *m, int node, FILE *b);

/* Each op's FP32 preparation; NULL: an OQC_UNARY row (eltwise.c's oqc_prep_unary) or an
 * op the executor cannot run. */
static const PrepFn prep_fns[OQC_OP_COUNT] = {
    [OQC_OP_Conv] = oqc_prep_conv,
    [OQC_OP_ConvTranspose] = oqc_prep_conv_transpose,
    [OQC_OP_MaxPool] = oqc_prep_max_pool,
    [OQC_OP_AveragePool] = oqc_prep_max_pool,
    [OQC_OP_GlobalAveragePool] = oqc_prep_global_average_pool,
    [OQC_OP_GlobalMaxPool] = oqc_prep_global_average_pool,
    [OQC_OP_BatchNormalization] = oqc_prep_batch_normalization,
    [OQC_OP_LRN] = oqc_prep_lrn,
    [OQC_OP_LayerNormalization] = oqc_prep_layer_normalization,
    [OQC_OP_InstanceNormalization] = oqc_prep_instance_normalization,
    [OQC_OP_Gemm] = oqc_prep_gemm,
    [OQC_OP_MatMul] = oqc_prep_mat_mul,
    [OQC_OP_Relu] = oqc_prep_relu,
    [OQC_OP_Sigmoid] = oqc_prep_relu,
    [OQC_OP_Tanh] = oqc_prep_relu,
    [OQC_OP_LeakyRelu] = oqc_prep_relu,
    [OQC_OP_HardSigmoid] = oqc_prep_relu,
    [OQC_OP_Clip] = oqc_prep_clip,
    [OQC_OP_PRelu] = oqc_prep_p_relu,
    [OQC_OP_Pow] = oqc_prep_pow,
    [OQC_OP_Add] = oqc_prep_add,
    [OQC_OP_Sub] = oqc_prep_add,
    [OQC_OP_Mul] = oqc_prep_add,
    [OQC_OP_Div] = oqc_prep_add,
    [OQC_OP_Sum] = oqc_prep_sum,
    [OQC_OP_Softmax] = oqc_prep_softmax,
    [OQC_OP_ReduceMax] = oqc_prep_reduce_max,
    [OQC_OP_ReduceMean] = oqc_prep_reduce_max,
    [OQC_OP_ReduceMin] = oqc_prep_reduce_max,
    [OQC_OP_ReduceSum] = oqc_prep_reduce_max,
    [OQC_OP_ArgMax] = oqc_prep_arg_max,
    [OQC_OP_ArgMin] = oqc_prep_arg_max,
    [OQC_OP_Tile] = oqc_prep_tile,
    [OQC_OP_Expand] = oqc_prep_tile,
    [OQC_OP_DepthToSpace] = oqc_prep_depth_to_space,
    [OQC_OP_SpaceToDepth] = oqc_prep_depth_to_space,
    [OQC_OP_Resize] = oqc_prep_resize,
    [OQC_OP_Upsample] = oqc_prep_resize,
    [OQC_OP_Concat] = oqc_prep_concat,
    [OQC_OP_Split] = oqc_prep_split,
    [OQC_OP_Slice] = oqc_prep_slice,
    [OQC_OP_Transpose] = oqc_prep_transpose,
    [OQC_OP_Pad] = oqc_prep_pad,
    [OQC_OP_Gather] = oqc_prep_gather,
    [OQC_OP_Cast] = oqc_prep_cast,
    [OQC_OP_Shape] = oqc_prep_shape,
    [OQC_OP_Size] = oqc_prep_shape,
    [OQC_OP_ConstantOfShape] = oqc_prep_constant_of_shape,
    [OQC_OP_Dropout] = oqc_prep_dropout,
    [OQC_OP_Identity] = oqc_prep_identity,
    [OQC_OP_Reshape] = oqc_prep_identity,
    [OQC_OP_Flatten] = oqc_prep_identity,
    [OQC_OP_Squeeze] = oqc_prep_identity,
    [OQC_OP_Unsqueeze] = oqc_prep_identity,
    [OQC_OP_QuantizeLinear] = oqc_prep_quantize_linear,
    [OQC_OP_DequantizeLinear] = oqc_prep_quantize_linear,
};

/* Each ExecKind's emission (NULL: a kind oqc_em_unsupported refuses). */
static const EmitFn em_fns[EXEC_KIND_COUNT] = {
    [EXEC_CONV] = oqc_em_conv,
    [EXEC_CONV_TRANSPOSE] = oqc_em_conv_transpose,
    [EXEC_MAXPOOL] = oqc_em_maxpool,
    [EXEC_AVGPOOL] = oqc_em_avgpool,
    [EXEC_GLOBAL_POOL] = oqc_em_global_pool,
    [EXEC_BATCHNORM] = oqc_em_batchnorm,
    [EXEC_LRN] = oqc_em_lrn,
    [EXEC_LAYERNORM] = oqc_em_layernorm,
    [EXEC_INSTANCENORM] = oqc_em_instancenorm,
    [EXEC_GEMM] = oqc_em_gemm,
    [EXEC_MATMUL] = oqc_em_matmul,
    [EXEC_UNARY] = oqc_em_unary,
    [EXEC_CLIP] = oqc_em_clip,
    [EXEC_BINARY] = oqc_em_binary,
    [EXEC_POW_CAST] = oqc_em_pow_cast,
    [EXEC_SUM] = oqc_em_sum,
    [EXEC_SOFTMAX] = oqc_em_softmax,
    [EXEC_CONCAT] = oqc_em_concat,
    [EXEC_SPLIT] = oqc_em_split,
    [EXEC_SLICE] = oqc_em_slice,
    [EXEC_TRANSPOSE] = oqc_em_transpose,
    [EXEC_PAD] = oqc_em_pad,
    [EXEC_GATHER] = oqc_em_gather,
    [EXEC_REDUCE] = oqc_em_reduce,
    [EXEC_ARGMAX] = oqc_em_argmax,
    [EXEC_TILE] = oqc_em_tile,
    [EXEC_SPACE_DEPTH] = oqc_em_space_depth,
    [EXEC_RESIZE] = oqc_em_resize,
    [EXEC_CAST] = oqc_em_cast,
    [EXEC_QDQ] = oqc_em_qdq,
};

/* Prepares FP32 node `node`: run function, parameters, scratch; dtype checks. */
int oqc_op_prepare(OqcExec *e, int node, OqcDiag *d) {
    OqcGraph *g = e->g;
    const OqcNode *n = &g->nodes[node];
    const OqcTensor *in0 = n->nin > 0 && n->in[0] >= 0 ? &g->tensors[n->in[0]] : NULL;
    if (!in0 && n->op != OQC_OP_ConstantOfShape)
        return PERR("has no first input");
    if ((unsigned)n->op < OQC_OP_COUNT && prep_fns[n->op])
        return prep_fns[n->op](e, node, d);
    /* Neg of integers (an ONNX function body's shape arithmetic, e.g. LayerNormalization's
     * -axis): oqcf_unary is float only, but shape inference derived the values, so the
     * node runs as their copy, as Shape does. */
    if (n->op == OQC_OP_Neg && n->nout == 1 && n->out[0] >= 0 && g->tensors[n->out[0]].has_value)
        return oqc_prep_shape(e, node, d);
    OqcfUnaryOp u;
    float alpha, beta;
    if (oqc_unary_of(n, &u, &alpha, &beta))
        return oqc_prep_unary(e, node, d);
    return PERR("the FP32 executor cannot run this op");
}

/* Prints FP32 node `node`'s parameter constants and kernel call into b. */
void oqc_em_fp32(Em *m, int node, FILE *b) {
    ExecKind k = m->e->nodes[node].kind;
    if ((unsigned)k >= EXEC_KIND_COUNT || !em_fns[k])
        oqc_panic(__FILE__, __LINE__,
                  "node kind rejected by oqc_em_unsupported() reached oqc_em_node");
    em_fns[k](m, node, b);
}
