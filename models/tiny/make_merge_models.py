#!/usr/bin/python3
"""make_merge_models.py - tiny models for the merge-1x1 and concat-elim passes.

Writes into models/tiny/:
  merge_inception.onnx   dynamic batch N: three sibling 1x1 convs on x (Relu, none,
                         Clip 0..6 after them), a 3x3 conv after the second, a MaxPool
                         branch, all concatenated on channels: merges 3 convs with
                         different activations and eliminates the Concat.
  merge_negative.onnx    siblings that must not merge (different strides; a 3x3), and a
                         Concat whose input is also read elsewhere (kept), plus a Concat
                         on axis 2 (kept).
Re-run: /usr/bin/python3 models/tiny/make_merge_models.py (deterministic).
"""
import os
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def const(name, shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def save(graph, name, opset=13):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="oqc-make_merge_models")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(HERE, name))


def inception():
    C = 6
    inits = [const("Wa", [4, C, 1, 1]), const("Ba", [4]), const("Wb", [5, C, 1, 1]),
             const("Bb", [5]), const("Wc", [3, C, 1, 1]), const("Wd", [6, 5, 3, 3]),
             const("Bd", [6]),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [
        helper.make_node("Conv", ["x", "Wa", "Ba"], ["a"], name="conv_a"),
        helper.make_node("Relu", ["a"], ["ar"], name="relu_a"),
        helper.make_node("Conv", ["x", "Wb", "Bb"], ["b"], name="conv_b"),
        helper.make_node("Conv", ["b", "Wd", "Bd"], ["d"], name="conv_d", pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["x", "Wc"], ["c"], name="conv_c"),
        helper.make_node("Clip", ["c", "lo", "hi"], ["cr"], name="clip_c"),
        helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Concat", ["ar", "d", "cr", "p"], ["y"], name="concat", axis=1),
    ]
    g = helper.make_graph(nodes, "merge_inception",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", C, 5, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 19, 5, 5])],
                          inits)
    save(g, "merge_inception.onnx")


def negative():
    C = 4
    inits = [const("W1", [3, C, 1, 1]), const("W2", [3, C, 1, 1]), const("W3", [2, C, 3, 3])]
    nodes = [
        helper.make_node("Conv", ["x", "W1"], ["a"], name="s1"),
        helper.make_node("Conv", ["x", "W2"], ["b"], name="s2_stride2", strides=[2, 2]),
        helper.make_node("Conv", ["x", "W3"], ["c"], name="k3", pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["a", "c"], ["ac"], name="concat_kept", axis=1),
        helper.make_node("Relu", ["a"], ["a2"], name="also_reads_a"),
        helper.make_node("Concat", ["a2", "a2"], ["h"], name="concat_axis2", axis=2),
    ]
    g = helper.make_graph(
        nodes, "merge_negative",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 6, 6])],
        [helper.make_tensor_value_info("ac", TensorProto.FLOAT, [1, 5, 6, 6]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3, 3, 3]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 3, 12, 6])], inits)
    save(g, "merge_negative.onnx")


if __name__ == "__main__":
    inception()
    negative()
