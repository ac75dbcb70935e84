#!/usr/bin/python3
"""Small ConvNeXt-style ONNX models, with numpy references, for pass fold-bn's MatMul
fold and INT8 tables of GELU (tests/cli/convnext_int8.sh).

Makes in models/tiny:
  convnext_block.onnx  x [1, 8, 6, 6] through three ConvNeXt blocks as PyTorch exports
                       them at opset 13: depthwise Conv 7x7 -> Transpose to NHWC ->
                       LayerNorm decomposed (ReduceMean ... Div, gamma, beta) -> MatMul +
                       Add(bias) -> GELU from Erf -> MatMul + Add(bias) -> layer scale ->
                       Transpose back -> residual Add. GELU spelled three ways:
                         torch   Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
                         keras   Mul(Mul(0.5, x), Add(1, Erf(Mul(x, 1/sqrt 2))))
                         scaled  Mul(x, Mul(Add(Erf(Mul(1/sqrt 2, x)), 1), 0.5))
                       the bias Add with the constant first or second, and the layer scale
                       as Mul by [8, 1, 1] after the Transpose back (torchvision) or by [8]
                       before it.
  matmul_chains.onnx   x [1, 6, 8], four MatMuls by [8, 4]: Add(bias first) then Mul
                       (folds: Gemm), Mul by [1, 1, 4] (folds: MatMul with scaled B),
                       Add of a [6, 1] constant (varies along rows: kept), a MatMul read
                       by an Add and a Relu (two readers: kept).
  gelu_opset20.onnx    x [2, 3, 5] -> Gelu(x) + Gelu(x, approximate "tanh"): the ONNX
                       operator (opset 20) the fold produces. Not checked by this onnx
                       (1.12 knows opsets up to 17).
  convnext_x.npy, matmul_x.npy, gelu_x.npy     an input of each (standard normal, x 3
                       for gelu_x: the tails of both forms)
  convnext_block_ref.npy, matmul_chains_ref.npy, gelu_opset20_ref.npy
                       the output of each model on that input, computed here with numpy
                       in float64 from the same float32 weights (ONNX semantics, the
                       graph as written, no folding): the reference the FP32 results
                       of oqc are compared with.

Weights come from numpy RandomState seeded from the model name. Every model is checked
with onnx.checker.check_model and strict shape inference.

Re-run (deterministic, byte-identical output):
    /usr/bin/python3 models/tiny/make_convnext_models.py [--out DIR]
"""
import argparse
import math
import os
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OUT = os.path.dirname(os.path.abspath(__file__))
erf = np.vectorize(math.erf)


class B:
    """Graph builder that evaluates every node in float64 numpy as it adds it."""

    def __init__(self, name, x):
        self.name = name
        self.rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        self.nodes, self.inits = [], []
        self.val = {"x": x.astype(np.float64)}
        self.inputs = [helper.make_tensor_value_info("x", F, list(x.shape))]

    def const(self, name, arr):
        arr = np.asarray(arr, dtype=np.float32)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.val[name] = arr.astype(np.float64)
        return name

    def randw(self, name, shape, scale):
        return self.const(name, self.rng.standard_normal(shape) * scale)

    def node(self, op, ins, **attrs):
        out = f"{op.lower()}{len(self.nodes)}"
        self.nodes.append(helper.make_node(op, ins, [out], name=f"{op}_{len(self.nodes)}",
                                           **attrs))
        v = [self.val[i] for i in ins]
        if op == "Add":
            r = v[0] + v[1]
        elif op == "Mul":
            r = v[0] * v[1]
        elif op == "Sub":
            r = v[0] - v[1]
        elif op == "Div":
            r = v[0] / v[1]
        elif op == "Pow":
            r = v[0] ** v[1]
        elif op == "Sqrt":
            r = np.sqrt(v[0])
        elif op == "Erf":
            r = erf(v[0])
        elif op == "Relu":
            r = np.maximum(v[0], 0)
        elif op == "MatMul":
            r = v[0] @ v[1]
        elif op == "Transpose":
            r = np.transpose(v[0], attrs["perm"])
        elif op == "ReduceMean":
            r = v[0].mean(axis=tuple(attrs["axes"]), keepdims=True)
        elif op == "Conv":
            r = depthwise(v[0], v[1], v[2], attrs["pads"][0])
        else:
            raise ValueError(op)
        self.val[out] = r
        return out

    def build(self, y):
        out = [helper.make_tensor_value_info(y, F, list(self.val[y].shape))]
        g = helper.make_graph(self.nodes, self.name, self.inputs, out, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="oqc-make_convnext_models")
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        return m, self.val[y]


def depthwise(x, w, b, pad):
    """Depthwise 2-D convolution (group = channels), stride 1, symmetric pads."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, c, h + 2 * pad - k + 1, wd + 2 * pad - k + 1))
    for i in range(k):
        for j in range(k):
            y += xp[:, :, i:i + y.shape[2], j:j + y.shape[3]] * w[None, :, 0, i, j, None, None]
    return y + b[None, :, None, None]


def gelu(b, x, spelling, tag):
    r2 = math.sqrt(2.0)
    if spelling == "torch":
        e = b.node("Erf", [b.node("Div", [x, b.const(tag + "sqrt2", r2)])])
        a = b.node("Add", [e, b.const(tag + "one", 1.0)])
        return b.node("Mul", [b.node("Mul", [x, a]), b.const(tag + "half", 0.5)])
    if spelling == "keras":
        h = b.node("Mul", [b.const(tag + "half", 0.5), x])
        e = b.node("Erf", [b.node("Mul", [x, b.const(tag + "rsqrt2", 1 / r2)])])
        return b.node("Mul", [h, b.node("Add", [b.const(tag + "one", 1.0), e])])
    e = b.node("Erf", [b.node("Mul", [b.const(tag + "rsqrt2", 1 / r2), x])])
    a = b.node("Add", [e, b.const(tag + "one", 1.0)])
    return b.node("Mul", [x, b.node("Mul", [a, b.const(tag + "half", 0.5)])])


def layer_norm(b, x, c, tag):
    m = b.node("ReduceMean", [x], axes=[-1])
    d = b.node("Sub", [x, m])
    v = b.node("ReduceMean", [b.node("Pow", [d, b.const(tag + "two", 2.0)])], axes=[-1])
    s = b.node("Sqrt", [b.node("Add", [v, b.const(tag + "eps", 1e-6)])])
    n = b.node("Div", [d, s])
    n = b.node("Mul", [n, b.const(tag + "gamma", 1.0 + b.rng.standard_normal(c) * 0.2)])
    return b.node("Add", [n, b.randw(tag + "beta", [c], 0.1)])


def block(b, src, c, spelling, bias_first, scale_after, tag):
    dw = b.node("Conv", [src, b.randw(tag + "dw", [c, 1, 7, 7], 0.15),
                         b.randw(tag + "dwb", [c], 0.1)],
                group=c, kernel_shape=[7, 7], pads=[3, 3, 3, 3])
    t = b.node("Transpose", [dw], perm=[0, 2, 3, 1])
    ln = layer_norm(b, t, c, tag)
    h = b.node("MatMul", [ln, b.randw(tag + "w1", [c, 4 * c], 1 / math.sqrt(c))])
    b1 = b.randw(tag + "b1", [4 * c], 0.1)
    h = b.node("Add", [b1, h] if bias_first else [h, b1])
    g = gelu(b, h, spelling, tag)
    o = b.node("MatMul", [g, b.randw(tag + "w2", [4 * c, c], 1 / math.sqrt(4 * c))])
    o = b.node("Add", [o, b.randw(tag + "b2", [c], 0.1)])
    ls = 0.5 + b.rng.uniform(size=c)
    if scale_after:
        o = b.node("Transpose", [o], perm=[0, 3, 1, 2])
        o = b.node("Mul", [b.const(tag + "ls", ls.reshape(c, 1, 1)), o])
    else:
        o = b.node("Mul", [o, b.const(tag + "ls", ls)])
        o = b.node("Transpose", [o], perm=[0, 3, 1, 2])
    return b.node("Add", [src, o])


def convnext_block(x):
    b = B("convnext_block", x)
    y = block(b, "x", 8, "torch", False, True, "a")
    y = block(b, y, 8, "keras", True, True, "b")
    y = block(b, y, 8, "scaled", False, False, "c")
    return b.build(y)


def matmul_chains(x):
    b = B("matmul_chains", x)
    m1 = b.node("MatMul", ["x", b.randw("wa", [8, 4], 0.4)])
    s1 = b.node("Mul", [b.node("Add", [b.randw("ba", [4], 0.2), m1]),
                        b.const("la", 0.5 + b.rng.uniform(size=4))])
    m2 = b.node("MatMul", ["x", b.randw("wb", [8, 4], 0.4)])
    s2 = b.node("Mul", [m2, b.const("lb", (0.5 + b.rng.uniform(size=4)).reshape(1, 1, 4))])
    m3 = b.node("MatMul", ["x", b.randw("wc", [8, 4], 0.4)])
    s3 = b.node("Add", [m3, b.randw("rc", [6, 1], 0.2)])
    m4 = b.node("MatMul", ["x", b.randw("wd", [8, 4], 0.4)])
    s4 = b.node("Add", [b.node("Add", [m4, b.randw("bd", [4], 0.2)]), b.node("Relu", [m4])])
    y = b.node("Add", [b.node("Add", [s1, s2]), b.node("Add", [s3, s4])])
    return b.build(y)


def gelu_opset20(x):
    nodes = [helper.make_node("Gelu", ["x"], ["e"], name="Gelu_0"),
             helper.make_node("Gelu", ["x"], ["t"], name="Gelu_1", approximate="tanh"),
             helper.make_node("Add", ["e", "t"], ["y"], name="Add_2")]
    g = helper.make_graph(nodes, "gelu_opset20",
                          [helper.make_tensor_value_info("x", F, list(x.shape))],
                          [helper.make_tensor_value_info("y", F, list(x.shape))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)],
                          producer_name="oqc-make_convnext_models")
    v = x.astype(np.float64)
    e = 0.5 * v * (1 + erf(v / math.sqrt(2)))
    t = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    return m, e + t


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    rng = np.random.RandomState(26)
    for name, xname, fn, shape in (("convnext_block", "convnext_x", convnext_block, [1, 8, 6, 6]),
                                   ("matmul_chains", "matmul_x", matmul_chains, [1, 6, 8]),
                                   ("gelu_opset20", "gelu_x", gelu_opset20, [2, 3, 5])):
        x = rng.standard_normal(shape).astype(np.float32) * (3 if name == "gelu_opset20" else 1)
        m, y = fn(x)
        onnx.save(m, os.path.join(args.out, name + ".onnx"))
        np.save(os.path.join(args.out, xname + ".npy"), x)
        np.save(os.path.join(args.out, name + "_ref.npy"), y.astype(np.float32))
        print(f"{name}: {len(m.graph.node)} nodes, output {list(y.shape)}, "
              f"max|y| {np.abs(y).max():.3g}")


if __name__ == "__main__":
    main()
