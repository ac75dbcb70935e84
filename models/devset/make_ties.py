#!/usr/bin/python3
"""make_ties.py - writes avgpool_ties.onnx here: a model whose INT8 requantization meets
exact rounding ties of both signs, for tests/cli/devset.sh.

  x f32[1,2,8,8] -> AveragePool 2x2 stride 2 -> t [1,2,4,4] -> AveragePool 2x2 stride 2 -> y

With the table of the test (x and t at the same scale 2^-5), the first pool's INT8
output is requantized with M = s_x / (4 s_t) = 1/4 exactly: q_t = round(sum of 4 q_x / 4),
a tie whenever the sum is 2 mod 4, negative for about half of them (x signed).  Its
output feeds another INT8 node, so it is requantized (the second pool's output leaves
the INT8 domain as int32 sums: no requantization of its own).  Needs python3-onnx.
"""
import os

from onnx import TensorProto, checker, helper, save


def main():
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    g = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["t"], name="pool1", **pool),
         helper.make_node("AveragePool", ["t"], ["y"], name="pool2", **pool)],
        "avgpool_ties",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])])
    m = helper.make_model(g, producer_name="oqc-make_ties",
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    checker.check_model(m)
    save(m, os.path.join(os.path.dirname(os.path.abspath(__file__)), "avgpool_ties.onnx"))


if __name__ == "__main__":
    main()
