#!/usr/bin/python3
"""Tiny ONNX models for the cleanup pass (passes/cleanup.c).

Makes models/tiny/cleanup_<case>.onnx with onnx.helper: each model holds the
patterns one test in tests/unit/test_pass_cleanup.c counts after the pass
(Identity on weights and activations, PyTorch's Shape -> Gather -> Unsqueeze ->
Concat -> Reshape flatten, Identity feeding graph outputs, dead branches, no-op
reshapes, Cast/Shape/ConstantOfShape of constants, Dropout with and without a
used mask, a fold too large to make).  The comment above each builder says what
the pass must leave; the C test asserts exactly that.

Fixed shapes, opset 13, random-but-fixed initializers (numpy RandomState seeded
from the model name).  Every model passes onnx.checker.check_model and strict
onnx.shape_inference.

Re-run (deterministic, byte-identical output):
    /usr/bin/python3 models/tiny/make_cleanup_models.py [--out DIR]
"""
import argparse
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64

OUT = os.path.dirname(os.path.abspath(__file__))
MODELS = []  # (name, builder)


def model(name):
    def deco(fn):
        MODELS.append(("cleanup_" + name, fn))
        return fn
    return deco


class B:
    """Small graph builder (node names are "<op>_<index>")."""

    def __init__(self, name):
        self.name = name
        self.rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []

    def inp(self, name, shape, dtype=F):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def out(self, name, shape, dtype=F):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.array(arr, order="C", copy=True), name))
        return name

    def randw(self, name, shape, scale=0.5):
        return self.init(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def i64(self, name, vals):
        return self.init(name, np.array(vals, dtype=np.int64))

    def node(self, op, ins, outs, **attrs):
        if isinstance(outs, str):
            outs = [outs]
        n = helper.make_node(op, ins, outs, name=f"{op}_{len(self.nodes)}", **attrs)
        self.nodes.append(n)
        return outs[0] if len(outs) == 1 else outs

    def build(self):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                                 producer_name="oqc-make_cleanup_models")


# After cleanup: Conv, Relu, MaxPool, Reshape (shape input a constant [1,-1]), Gemm.
# Removed: 4 Identity (two Conv weights, the Conv output, the Gemm weight), 1 Dropout;
# folded: Shape, Gather, Unsqueeze, Concat.
@model("pytorch_cnn")
def _(b):
    x = b.inp("x", [1, 3, 8, 8])
    w = b.node("Identity", [b.randw("conv.weight", [4, 3, 3, 3], 0.3)], "w_id")
    bias = b.node("Identity", [b.randw("conv.bias", [4], 0.1)], "b_id")
    c = b.node("Conv", [x, w, bias], "c", pads=[1, 1, 1, 1])
    r = b.node("Relu", [b.node("Identity", [c], "c_id")], "r")
    p = b.node("MaxPool", [r], "p", kernel_shape=[2, 2], strides=[2, 2])
    s = b.node("Shape", [p], "s")
    g = b.node("Gather", [s, b.i64("zero", 0)], "g", axis=0)
    u = b.node("Unsqueeze", [g, b.i64("uaxes", [0])], "u")
    cat = b.node("Concat", [u, b.i64("minus_one", [-1])], "cat", axis=0)
    f = b.node("Reshape", [p, cat], "f")
    dr = b.node("Dropout", [f], "dr")
    fw = b.node("Identity", [b.randw("fc.weight", [10, 64], 0.2)], "fw_id")
    b.node("Gemm", [dr, fw, b.randw("fc.bias", [10], 0.1)], "y", transB=1)
    b.out("y", [1, 10])


# Identity feeding graph outputs whose input is an internal tensor: the producer
# writes the output name directly.  After cleanup: Relu writes y (Sigmoid, which
# comes before the Identity, reads y), Tanh writes t_out; outputs y, z, t_out in that
# order; 3 Identity removed.
@model("identity_output")
def _(b):
    x = b.inp("x", [2, 3])
    r = b.node("Relu", [x], "r")
    b.node("Sigmoid", [r], "z")
    b.node("Identity", [r], "y")
    t = b.node("Tanh", [x], "t")
    b.node("Identity", [b.node("Identity", [t], "t1")], "t_out")
    b.out("y", [2, 3])
    b.out("z", [2, 3])
    b.out("t_out", [2, 3])


# Identities that must stay: one reads a graph input, one reads a tensor that is
# itself a graph output (both names must exist).  Cleanup changes nothing.
@model("identity_kept")
def _(b):
    x = b.inp("x", [2, 3])
    r = b.node("Relu", [x], "r")
    b.node("Identity", [r], "r_copy")
    b.node("Identity", [x], "x_copy")
    b.out("r", [2, 3])
    b.out("r_copy", [2, 3])
    b.out("x_copy", [2, 3])


# Identity of an initializer as a graph output: folded, the output 'w' becomes a
# constant.  After cleanup: only Relu; 1 node folded.
@model("identity_const_output")
def _(b):
    x = b.inp("x", [2, 3])
    b.node("Relu", [x], "y")
    b.node("Identity", [b.randw("W", [3, 2])], "w")
    b.out("y", [2, 3])
    b.out("w", [3, 2])


# Dead branches: Sigmoid -> Tanh nobody reads, an Add of two constants nobody reads.
# Split's second output is unused but its first is: Split stays.
# After cleanup: Relu, Split, Sigmoid; 3 dead nodes removed.
@model("dead_branch")
def _(b):
    x = b.inp("x", [1, 4])
    b.node("Relu", [x], "y")
    b.node("Tanh", [b.node("Sigmoid", [x], "s")], "t")
    b.node("Add", [b.randw("c1", [4]), b.randw("c2", [4])], "k")
    a, _unused = b.node("Split", [x, b.i64("split", [2, 2])], ["a", "b_unused"], axis=1)
    b.node("Sigmoid", [a], "y2")
    b.out("y", [1, 4])
    b.out("y2", [1, 2])


# No-op reshapes: Reshape [2,3]->[2,3], Squeeze of a shape without 1s, Flatten
# [3,2]->[3,2], and a Reshape whose output is the graph output y2 (Sigmoid then
# writes y2).  Real ones stay: Reshape [2,3]->[3,2] and Unsqueeze.
# After cleanup: Relu, Reshape, Unsqueeze, Sigmoid; 4 no-op reshapes removed.
@model("noop_reshape")
def _(b):
    x = b.inp("x", [2, 3])
    a = b.node("Reshape", [x, b.i64("same", [2, 3])], "a")
    sq = b.node("Squeeze", [a], "sq")
    c = b.node("Relu", [sq], "c")
    d = b.node("Reshape", [c, b.i64("other", [3, 2])], "d")
    e = b.node("Flatten", [d], "e", axis=1)
    b.node("Unsqueeze", [e, b.i64("axes0", [0])], "y")
    b.node("Reshape", [b.node("Sigmoid", [x], "sg"), b.i64("same2", [2, 3])], "y2")
    b.out("y", [1, 3, 2])
    b.out("y2", [2, 3])


# Constants computed by nodes: Cast of an int64 initializer, ConstantOfShape of a
# Shape (not folded at load: its input is not an initializer), Cast of a float
# initializer used as a Reshape's shape.
# After cleanup: Mul, Add, Reshape; 4 nodes folded (Cast, Shape, ConstantOfShape, Cast).
@model("const_chain")
def _(b):
    x = b.inp("x", [2, 3])
    cf = b.node("Cast", [b.i64("ints", [1, 2, 3])], "cf", to=F)
    m = b.node("Mul", [x, cf], "m")
    z = b.node("ConstantOfShape", [b.node("Shape", [x], "s")], "z",
               value=numpy_helper.from_array(np.array([0.5], np.float32)))
    a = b.node("Add", [m, z], "a")
    shp = b.node("Cast", [b.init("shape_f", np.array([3, 2], np.float32))], "shp", to=I64)
    b.node("Reshape", [a, shp], "y")
    b.out("y", [3, 2])


# An ONNX function body's shape arithmetic (the expanded LayerNormalization's): Size of
# Shape(x) (the rank), Neg of an int64 axis, ConstantOfShape of their difference, Concat
# with a Slice of the shape: the Reshape target [2, 1, 1], computed and folded; and Size
# of x (24 elements) as a Mul's float factor through a Cast.
# After cleanup: ReduceMean, Mul; 9 nodes folded (Shape, Size, Neg, Add, ConstantOfShape,
# Slice, Concat; Size and Cast of x's size); the Reshape, to the shape its input has, removed.
@model("shape_arith")
def _(b):
    x = b.inp("x", [2, 3, 4])
    s = b.node("Shape", [x], "s")
    rank = b.node("Size", [s], "rank")
    neg = b.node("Neg", [b.i64("axis", [1])], "neg")
    nred = b.node("Add", [rank, neg], "nred")
    ones = b.node("ConstantOfShape", [nred], "ones",
                  value=numpy_helper.from_array(np.array([1], np.int64)))
    pre = b.node("Slice", [s, b.i64("z0", [0]), b.i64("z1", [1])], "pre")
    shp = b.node("Concat", [pre, ones], "shp", axis=0)
    r = b.node("Reshape", [b.node("ReduceMean", [x], "m", axes=[1, 2]), shp], "r")
    n = b.node("Cast", [b.node("Size", [x], "n")], "nf", to=F)
    b.node("Mul", [r, n], "y")
    b.out("y", [2, 1, 1])


# Dropout: the first one's mask is read (Cast -> Mul) so it stays; the second has a
# named mask nobody reads, the third a constant false training_mode: both removed.
# After cleanup: Dropout, Cast, Mul, Relu, Sigmoid, Add; 2 Dropout removed.
@model("dropout_mask")
def _(b):
    x = b.inp("x", [2, 4])
    d1, mask = b.node("Dropout", [x], ["d1", "mask"])
    b.node("Mul", [d1, b.node("Cast", [mask], "mf", to=F)], "y")
    d2, _m2 = b.node("Dropout", [b.node("Relu", [x], "r")], ["d2", "m2"])
    ratio = b.init("ratio", np.array(0.3, np.float32))
    train = b.init("train", np.array(False))
    d3 = b.node("Dropout", [b.node("Sigmoid", [x], "sg"), ratio, train], "d3")
    b.node("Add", [d2, d3], "y2")
    b.out("y", [2, 4])
    b.out("y2", [2, 4])


# A fold too large to make: ConstantOfShape of [4096, 4100] (16,793,600 elements,
# over cleanup's 16M limit) from a 2-element shape, read only through a Slice.
# After cleanup: ConstantOfShape, Slice, Add stay; Shape and Mul folded.
@model("fold_limit")
def _(b):
    x = b.inp("x", [4, 4])
    dims = b.node("Mul", [b.node("Shape", [x], "s"), b.i64("scale", [1024, 1025])], "dims")
    big = b.node("ConstantOfShape", [dims], "big",
                 value=numpy_helper.from_array(np.array([1.0], np.float32)))
    sl = b.node("Slice", [big, b.i64("starts", [0, 0]), b.i64("ends", [4, 4])], "sl")
    b.node("Add", [x, sl], "y")
    b.out("y", [4, 4])


# Nothing to clean: Conv -> Relu -> Flatten (a real reshape) -> Gemm.
@model("nothing")
def _(b):
    x = b.inp("x", [1, 2, 4, 4])
    c = b.node("Conv", [x, b.randw("W", [3, 2, 3, 3], 0.3), b.randw("B", [3], 0.1)], "c",
               pads=[1, 1, 1, 1])
    f = b.node("Flatten", [b.node("Relu", [c], "r")], "f", axis=1)
    b.node("Gemm", [f, b.randw("fcW", [5, 48], 0.2), b.randw("fcB", [5], 0.1)], "y", transB=1)
    b.out("y", [1, 5])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, fn in MODELS:
        b = B(name)
        fn(b)
        m = b.build()
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(m, path)
        ops = ", ".join(sorted({n.op_type for n in m.graph.node}))
        print(f"{name:32s} {os.path.getsize(path):6d} B  {ops}")
    print(f"{len(MODELS)} models written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
