/* gen_chain.c - writes an ONNX model that is a chain of N Relu nodes (x -> t1 -> ... -> y,
 * x and y float [1, 4], opset 13): the large-graph input of tests/cli/hardening_big.sh
 * (issue 31 item 11: graph preparation, memory planning and calibration must stay
 * linear in the node count).  Generated at test time, so no multi-megabyte model is
 * committed and no python is needed.
 *
 *   gen_chain N OUT.onnx */
#include <stdio.h>
#include <stdlib.h>

#include "onnx.pb-c.h"

static Onnx__ValueInfoProto *io(const char *name) {
    static int64_t dims[2] = {1, 4};
    Onnx__TensorShapeProto__Dimension *d = calloc(2, sizeof *d), **dp = calloc(2, sizeof *dp);
    Onnx__TensorShapeProto *sh = calloc(1, sizeof *sh);
    Onnx__TypeProto__Tensor *tt = calloc(1, sizeof *tt);
    Onnx__TypeProto *ty = calloc(1, sizeof *ty);
    Onnx__ValueInfoProto *v = calloc(1, sizeof *v);
    if (!d || !dp || !sh || !tt || !ty || !v)
        exit(2);
    for (int i = 0; i < 2; i++) {
        onnx__tensor_shape_proto__dimension__init(&d[i]);
        d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        d[i].dim_value = dims[i];
        dp[i] = &d[i];
    }
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = 2;
    sh->dim = dp;
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    onnx__type_proto__init(ty);
    ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    ty->tensor_type = tt;
    onnx__value_info_proto__init(v);
    v->name = (char *)name;
    v->type = ty;
    return v;
}

int main(int argc, char **argv) {
    long n = argc == 3 ? strtol(argv[1], NULL, 10) : 0;
    if (n < 1 || n > 10000000) {
        fprintf(stderr, "usage: gen_chain N OUT.onnx (1 <= N <= 10000000)\n");
        return 2;
    }
    Onnx__NodeProto *nodes = calloc((size_t)n, sizeof *nodes);
    Onnx__NodeProto **np = calloc((size_t)n, sizeof *np);
    char **names = calloc((size_t)n + 1, sizeof *names);   /* names[i]: node i's input */
    if (!nodes || !np || !names)
        return 2;
    for (long i = 0; i <= n; i++) {
        names[i] = malloc(24);
        if (!names[i])
            return 2;
        if (i == 0)
            snprintf(names[i], 24, "x");
        else if (i == n)
            snprintf(names[i], 24, "y");
        else
            snprintf(names[i], 24, "t%ld", i);
    }
    for (long i = 0; i < n; i++) {
        onnx__node_proto__init(&nodes[i]);
        nodes[i].op_type = "Relu";
        nodes[i].n_input = 1;
        nodes[i].input = &names[i];
        nodes[i].n_output = 1;
        nodes[i].output = &names[i + 1];
        np[i] = &nodes[i];
    }
    Onnx__ValueInfoProto *x = io("x"), *y = io("y");
    Onnx__GraphProto g;
    onnx__graph_proto__init(&g);
    g.name = "chain";
    g.n_node = (size_t)n;
    g.node = np;
    g.n_input = 1;
    g.input = &x;
    g.n_output = 1;
    g.output = &y;
    Onnx__OperatorSetIdProto op;
    onnx__operator_set_id_proto__init(&op);
    op.domain = "";
    op.has_version = 1;
    op.version = 13;
    Onnx__OperatorSetIdProto *ops = &op;
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = 8;
    m.producer_name = "gen_chain";
    m.graph = &g;
    m.n_opset_import = 1;
    m.opset_import = &ops;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    FILE *f = buf ? fopen(argv[2], "wb") : NULL;
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    onnx__model_proto__pack(&m, buf);
    int bad = fwrite(buf, 1, len, f) != len;
    bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "%s: error writing\n", argv[2]);
    free(buf);
    for (long i = 0; i <= n; i++)
        free(names[i]);
    free(names);
    free(np);
    free(nodes);
    return bad;
}
