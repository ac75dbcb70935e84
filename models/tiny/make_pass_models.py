#!/usr/bin/python3
"""Small "exporter-style" ONNX models for the fold-bn, fuse-cbr, bn-conv and fold-pad
passes.

Makes models/tiny/pass_<name>.onnx. tests/unit/test_pass_fold_fuse.c asserts the counts
given here for the first group (folds by fold-bn, fusions by fuse-cbr):

  caffe2_muladd        opset 9, what caffe2-era exporters wrote instead of BN:
                       Conv -> Mul -> Add by [C,1,1] / [1,C,1,1] constants, a Mul
                       alone (scalar), an Add alone (constant first), a residual
                       3-input Sum, LRN, Dropout            fold 3 Mul + 3 Add, fuse 2
  gemm_bn              Gemm(transB, alpha, beta) -> BN -> Relu, Gemm (no C) -> BN ->
                       LeakyRelu, Gemm (C [M,1]) -> Mul [N] -> Add [1,N]
                                                            fold 2 BN, 1 Mul, 1 Add; fuse 2
  relu6_opset6         Conv -> Clip(min=0, max=6) and Conv -> Clip(min=-0.5), bounds as
                       attributes                           fuse 2
  relu6_opset12        Conv -> Clip(x, 0, 6) (6 from a Constant node), Clip(x, "", 6),
                       Clip(x, -0.5) with bounds as inputs  fuse 3
  leaky                Conv -> LeakyRelu(0.1) -> Conv -> LeakyRelu()  fuse 2
  shared_weight_bn     two Convs share W and B; one is followed by BN, the other not;
                       a third (no bias) shares W and has its own BN   fold 2
  neg_bn_two_consumers Conv output read by BN and by Relu   fold 0, fuse 0
  neg_relu_graph_output  Conv output is a graph output and feeds Relu   fuse 0
  neg_clip_nonconst    Clip(conv, lo, 6) with lo a graph input   fuse 0
  neg_mul_not_per_channel  Conv [1,4,4,4] -> Mul by a [4] constant (broadcast over W,
                       not channels); Conv -> Add by [1,1,4,1] (over H)   fold 0

tests/unit/test_pass_bn_pad.c asserts those of the second group (bn-conv rewrites,
fold-pad folds per reader, Pads fold-pad removes because they pad nothing, Pads left):

  bn_concat            x -> BN -> two 3x3 Convs -> Concat -> BN -> Relu -> 1x1 Conv: a
                       BN on a graph input and DenseNet's BN after a Concat
                                                            bn-conv 2
  neg_bn_rank2         BN on a [2, 6] input                 bn-conv 0
  pad_avgpool          Conv+Relu read by three Pad -> AveragePool: Inception's Pad(1) ->
                       AveragePool(k3, s1, count_include_pad 0); an asymmetric Pad ->
                       AveragePool with pads and count_include_pad 1; DenseNet's Pad of
                       zeros -> AveragePool with pads and count_include_pad 0; summed
                                                            fold 2 AveragePool, remove 1
  pad_conv             opset 18: Pad(axes [2, 3]) of the graph input -> Conv; Relu ->
                       Pad(constant_value 0) -> Conv with auto_pad SAME_UPPER
                                                            fold 2 Conv
  pad_opset10          pads and value as attributes: Relu -> Pad -> MaxPool(k3, s1) ->
                       Pad -> Conv                          fold 1 MaxPool, 1 Conv
  neg_pad1, neg_pad2   Pads that must stay (four outputs each, the most the emitted-C
                       test driver takes): before a MaxPool on a graph input (maybe
                       negative); before a MaxPool whose first window sees only zeros;
                       read by two nodes; of a nonzero constant; | reflect; of the
                       channel axis; before an AveragePool with its own pads and
                       count_include_pad 0; whose end pad would become an
                       AveragePool's with ceil_mode (one output fewer)
                                                            fold 0, remove 0, 4 + 4 stay

Every model is one the FP32 executor runs (tests/unit/test_passes.c runs them all), so
cases it cannot run - a training-mode BatchNormalization - are built in the C test.
Every model is checked with onnx.checker.check_model and strict shape inference (but
opset 18 pad_conv: onnx 1.12 knows Pad up to opset 13, without the axes input; its
outputs were checked against ONNX Runtime 1.x once, see the commit) and is a few KB. Weights come from numpy RandomState seeded from the model name.

Re-run (deterministic, byte-identical output):
    /usr/bin/python3 models/tiny/make_pass_models.py [--out DIR]
"""
import argparse
import os
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OUT = os.path.dirname(os.path.abspath(__file__))
MODELS = []  # (name, opset, builder)


def model(name, opset=13):
    def deco(fn):
        MODELS.append((name, opset, fn))
        return fn
    return deco


class B:
    """Small graph builder: inputs, outputs, initializers and named nodes."""

    def __init__(self, name):
        self.rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []

    def inp(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, F, shape))
        return name

    def out(self, name, shape):
        self.outputs.append(helper.make_tensor_value_info(name, F, shape))
        return name

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr, dtype=np.float32), name))
        return name

    def randw(self, name, shape, scale=0.5, positive=False):
        a = self.rng.standard_normal(shape).astype(np.float32) * scale
        if positive:  # variances, BN scales: well away from 0
            a = np.abs(a) + 0.5
        return self.const(name, a)

    def node(self, op, ins, out, **attrs):
        self.nodes.append(helper.make_node(op, ins, [out], name=f"{op}_{len(self.nodes)}",
                                           **attrs))
        return out

    def conv(self, x, cin, cout, k=3, bias=True, w=None, b=None):
        i = len(self.nodes)
        w = w or self.randw(f"conv{i}.w", [cout, cin, k, k], 1.0 / np.sqrt(cin * k * k))
        ins = [x, w]
        if bias:
            ins.append(b or self.randw(f"conv{i}.b", [cout], 0.2))
        return self.node("Conv", ins, f"conv{i}", pads=[k // 2] * 4)

    def ints(self, name, vals):
        self.inits.append(numpy_helper.from_array(np.asarray(vals, dtype=np.int64), name))
        return name

    def pad(self, x, pads, value=None, axes=None, **attrs):
        """Pad from opset 11 on: pads (and value, axes) as constant inputs."""
        i = len(self.nodes)
        ins = [x, self.ints(f"pad{i}.pads", pads)]
        if value is not None or axes is not None:
            ins.append(self.const(f"pad{i}.value", value) if value is not None else "")
        if axes is not None:
            ins.append(self.ints(f"pad{i}.axes", axes))
        return self.node("Pad", ins, f"pad{i}", **attrs)

    def bn(self, x, c, **attrs):
        i = len(self.nodes)
        ins = [x, self.randw(f"bn{i}.scale", [c], 0.5, positive=True),
               self.randw(f"bn{i}.bias", [c], 0.3), self.randw(f"bn{i}.mean", [c], 0.3),
               self.randw(f"bn{i}.var", [c], 0.5, positive=True)]
        return self.node("BatchNormalization", ins, f"bn{i}", **attrs)


@model("caffe2_muladd", opset=9)
def _(b):
    x = b.inp("data", [1, 3, 8, 8])
    c1 = b.conv(x, 3, 8)
    m1 = b.node("Mul", [c1, b.randw("scale1", [8, 1, 1], 0.5, positive=True)], "m1")
    a1 = b.node("Add", [m1, b.randw("shift1", [8, 1, 1], 0.3)], "a1")
    r1 = b.node("Relu", [a1], "r1")
    c2 = b.conv(r1, 8, 8, k=1, bias=False)
    m2 = b.node("Mul", [c2, b.randw("scale2", [1, 8, 1, 1], 0.5, positive=True)], "m2")
    a2 = b.node("Add", [m2, b.randw("shift2", [1, 8, 1, 1], 0.3)], "a2")
    r2 = b.node("Relu", [a2], "r2")
    c3 = b.conv(r1, 8, 8)
    m3 = b.node("Mul", [c3, b.const("half", 0.5)], "m3")           # Mul alone, scalar
    c4 = b.conv(r1, 8, 8, k=1)
    a4 = b.node("Add", [b.randw("shift4", [1, 8, 1, 1], 0.3), c4], "a4")  # Add alone
    s = b.node("Sum", [r2, m3, a4], "res")                          # caffe2 residual
    n = b.node("LRN", [s], "lrn", size=3, alpha=1e-4, beta=0.75, bias=1.0)
    b.node("Dropout", [n], "prob", ratio=0.5)                       # opset 9: no is_test
    b.out("prob", [1, 8, 8, 8])


@model("gemm_bn")
def _(b):
    x = b.inp("x", [2, 16])
    g1 = b.node("Gemm", [x, b.randw("W1", [8, 16], 0.3), b.randw("C1", [8], 0.2)], "g1",
                transB=1, alpha=0.5, beta=2.0)
    r1 = b.node("Relu", [b.bn(g1, 8)], "r1")
    g2 = b.node("Gemm", [r1, b.randw("W2", [8, 6], 0.4)], "g2")
    l2 = b.node("LeakyRelu", [b.bn(g2, 6)], "l2", alpha=0.2)
    g3 = b.node("Gemm", [l2, b.randw("W3", [6, 4], 0.4), b.randw("C3", [2, 1], 0.2)], "g3",
                beta=0.5)
    m3 = b.node("Mul", [g3, b.randw("s3", [4], 0.5, positive=True)], "m3")
    b.node("Add", [m3, b.randw("t3", [1, 4], 0.3)], "y")
    b.out("y", [2, 4])


@model("relu6_opset6", opset=6)
def _(b):
    x = b.inp("x", [1, 3, 8, 8])
    r1 = b.node("Clip", [b.conv(x, 3, 6)], "r1", min=0.0, max=6.0)
    b.node("Clip", [b.conv(r1, 6, 4)], "y", min=-0.5)  # max absent: +inf
    b.out("y", [1, 4, 8, 8])


@model("relu6_opset12", opset=12)
def _(b):
    x = b.inp("x", [1, 3, 8, 8])
    zero, lo = b.const("zero", 0.0), b.const("lo", -0.5)
    b.nodes.append(helper.make_node("Constant", [], ["six"], name="six",
                                    value=numpy_helper.from_array(np.float32(6.0), "six")))
    r1 = b.node("Clip", [b.conv(x, 3, 6), zero, "six"], "r1")   # ReLU6
    r2 = b.node("Clip", [b.conv(r1, 6, 6), "", "six"], "r2")    # min absent: -inf
    b.node("Clip", [b.conv(r2, 6, 4), lo], "y")                 # max absent: +inf
    b.out("y", [1, 4, 8, 8])


@model("leaky")
def _(b):
    x = b.inp("x", [1, 3, 8, 8])
    l1 = b.node("LeakyRelu", [b.conv(x, 3, 6)], "l1", alpha=0.1)
    b.node("LeakyRelu", [b.conv(l1, 6, 4)], "y")  # default alpha 0.01
    b.out("y", [1, 4, 8, 8])


@model("shared_weight_bn")
def _(b):
    x = b.inp("x", [1, 4, 6, 6])
    w, bias = b.randw("W", [4, 4, 3, 3], 0.3), b.randw("B", [4], 0.2)
    b.node("Identity", [b.bn(b.conv(x, 4, 4, w=w, b=bias), 4)], "y1")
    b.node("Identity", [b.conv(x, 4, 4, w=w, b=bias)], "y2")
    b.node("Identity", [b.bn(b.conv(x, 4, 4, bias=False, w=w), 4, epsilon=1e-3)], "y3")
    for y in ("y1", "y2", "y3"):
        b.out(y, [1, 4, 6, 6])


@model("neg_bn_two_consumers")
def _(b):
    x = b.inp("x", [1, 3, 6, 6])
    c = b.conv(x, 3, 4)
    b.node("Add", [b.bn(c, 4), b.node("Relu", [c], "r")], "y")
    b.out("y", [1, 4, 6, 6])


@model("neg_relu_graph_output")
def _(b):
    x = b.inp("x", [1, 3, 6, 6])
    c = b.conv(x, 3, 4)
    b.node("Relu", [c], "y")
    b.out(c, [1, 4, 6, 6])
    b.out("y", [1, 4, 6, 6])


@model("neg_clip_nonconst", opset=12)
def _(b):
    x = b.inp("x", [1, 3, 6, 6])
    lo = b.inp("lo", [])
    b.node("Clip", [b.conv(x, 3, 4), lo, b.const("six", 6.0)], "y")
    b.out("y", [1, 4, 6, 6])


@model("neg_mul_not_per_channel")
def _(b):
    x = b.inp("x", [1, 4, 4, 4])  # C == H == W: a wrong broadcast would go unnoticed
    b.node("Mul", [b.conv(x, 4, 4), b.randw("sw", [4], 0.5, positive=True)], "y1")
    b.node("Add", [b.conv(x, 4, 4), b.randw("th", [1, 1, 4, 1], 0.3)], "y2")
    b.out("y1", [1, 4, 4, 4])
    b.out("y2", [1, 4, 4, 4])


@model("bn_concat")
def _(b):
    x = b.inp("x", [1, 3, 6, 6])
    n0 = b.bn(x, 3)
    cat = b.node("Concat", [b.conv(n0, 3, 4), b.conv(n0, 3, 5)], "cat", axis=1)
    r = b.node("Relu", [b.bn(cat, 9, epsilon=1e-3)], "r")
    b.conv(r, 9, 4, k=1)
    b.out(b.nodes[-1].output[0], [1, 4, 6, 6])


@model("neg_bn_rank2")
def _(b):
    b.node("Identity", [b.bn(b.inp("x", [2, 6]), 6)], "y")
    b.out("y", [2, 6])


@model("pad_avgpool")
def _(b):
    x = b.inp("x", [1, 4, 8, 8])
    r = b.node("Relu", [b.conv(x, 4, 4)], "r")
    a1 = b.node("AveragePool", [b.pad(r, [0, 0, 1, 1, 0, 0, 1, 1])], "a1",
                kernel_shape=[3, 3])
    a2 = b.node("AveragePool", [b.pad(r, [0, 0, 2, 0, 0, 0, 0, 0])], "a2",
                kernel_shape=[3, 3], pads=[0, 1, 0, 1], count_include_pad=1)
    a3 = b.node("AveragePool", [b.pad(r, [0] * 8)], "a3", kernel_shape=[3, 3],
                pads=[1, 1, 1, 1])
    b.node("Add", [b.node("Add", [a1, a2], "s12"), a3], "y")
    b.out("y", [1, 4, 8, 8])


@model("pad_conv", opset=18)
def _(b):
    x = b.inp("x", [1, 3, 8, 8])
    c1 = b.conv(b.pad(x, [1, 2, 1, 0], axes=[2, 3]), 3, 4, k=3)   # H 1 + 1, W 2 + 0
    r = b.node("Relu", [c1], "r")                                   # [1, 4, 10, 10]
    w = b.randw("w2", [4, 4, 3, 3], 0.3)
    b.node("Conv", [b.pad(r, [0, 0, 0, 1, 0, 0, 1, 0], value=0.0), w], "y",
           auto_pad="SAME_UPPER", strides=[2, 2])
    b.out("y", [1, 4, 6, 6])


@model("pad_opset10", opset=10)
def _(b):
    x = b.inp("x", [1, 3, 8, 8])
    r = b.node("Relu", [b.conv(x, 3, 4)], "r")
    p1 = b.node("Pad", [r], "p1", pads=[0, 0, 1, 1, 0, 0, 1, 1])
    m = b.node("MaxPool", [p1], "m", kernel_shape=[3, 3])
    p2 = b.node("Pad", [m], "p2", pads=[0, 0, 0, 2, 0, 0, 1, 0], mode="constant", value=0.0)
    b.node("Conv", [p2, b.randw("w", [4, 4, 3, 3], 0.3)], "y", pads=[1, 0, 1, 0])
    b.out("y", [1, 4, 9, 8])


@model("neg_pad1")
def _(b):
    x = b.inp("x", [1, 4, 4, 4])
    r = b.node("Relu", [x], "r")
    z8 = [0, 0, 1, 1, 0, 0, 1, 1]
    b.node("MaxPool", [b.pad(x, z8)], "y1", kernel_shape=[3, 3])
    b.node("MaxPool", [b.pad(r, [0, 0, 2, 0, 0, 0, 0, 0])], "y2", kernel_shape=[2, 1])
    shared = b.pad(r, z8)
    b.node("Add", [b.node("AveragePool", [shared], "a3", kernel_shape=[3, 3]),
                   b.node("Conv", [shared, b.randw("w3", [4, 4, 3, 3], 0.3)], "c3")], "y3")
    b.node("Conv", [b.pad(r, z8, value=0.5), b.randw("w4", [4, 4, 3, 3], 0.3)], "y4")
    for y, shape in (("y1", [1, 4, 4, 4]), ("y2", [1, 4, 5, 4]), ("y3", [1, 4, 4, 4]),
                     ("y4", [1, 4, 4, 4])):
        b.out(y, shape)


@model("neg_pad2")
def _(b):
    r = b.node("Relu", [b.inp("x", [1, 4, 4, 4])], "r")
    z8 = [0, 0, 1, 1, 0, 0, 1, 1]
    b.node("Conv", [b.pad(r, z8, mode="reflect"), b.randw("w5", [4, 4, 3, 3], 0.3)], "y5")
    b.node("Conv", [b.pad(r, [0, 1, 0, 0, 0, 1, 0, 0]), b.randw("w6", [4, 6, 1, 1], 0.3)],
           "y6")
    b.node("AveragePool", [b.pad(r, z8)], "y7", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b.node("AveragePool", [b.pad(r, [0, 0, 0, 0, 0, 0, 2, 0])], "y8", kernel_shape=[2, 2],
           strides=[2, 2], ceil_mode=1)
    for y, shape in (("y5", [1, 4, 4, 4]), ("y6", [1, 4, 4, 4]), ("y7", [1, 4, 6, 6]),
                     ("y8", [1, 4, 3, 2])):
        b.out(y, shape)


def build(name, opset, fn):
    b = B(name)
    fn(b)
    # the oldest IR version that carries this opset, as that era's exporters wrote;
    # before IR 4 every initializer must also be listed as a graph input
    ir = {6: 3, 9: 4, 10: 5, 12: 7, 13: 7, 18: 8}[opset]
    inputs = b.inputs + ([helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                          for t in b.inits] if ir < 4 else [])
    g = helper.make_graph(b.nodes, name, inputs, b.outputs, b.inits)
    m = helper.make_model(g, producer_name="make_pass_models.py",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    if opset <= onnx.defs.onnx_opset_version():  # onnx 1.12 stops at 17 (Pad-13)
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, opset, fn in MODELS:
        path = os.path.join(args.out, f"pass_{name}.onnx")
        onnx.save(build(name, opset, fn), path)
        size = os.path.getsize(path)
        assert size < 50_000, f"{path}: {size} bytes (keep test models commit-sized)"
        print(f"{path}: {size} bytes")


if __name__ == "__main__":
    main()
