#!/usr/bin/python3
"""Hand-made tiny ONNX models, one per op family / attribute variant.

Makes models/tiny/<family>_<variant>.onnx (plus ext_weights.bin for the
external-data model) with onnx.helper: fixed shapes, random-but-fixed
initializers (numpy RandomState seeded from the model name, so adding a model
never changes the others).  Opset 13 unless the op form needs another
(clip_opset6, squeeze_opset11, unsqueeze_opset11, softmax_opset11_*).

Every model is checked with onnx.checker.check_model and with strict
shape inference (onnx.shape_inference.infer_shapes(strict_mode=True)).

Re-run (deterministic, byte-identical output):
    /usr/bin/python3 models/tiny/make_tiny.py [--out DIR]
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
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

OUT = os.path.dirname(os.path.abspath(__file__))
MODELS = []  # (name, builder)


def model(name):
    def deco(fn):
        MODELS.append((name, fn))
        return fn
    return deco


class B:
    """Small graph builder."""

    def __init__(self, name):
        self.name = name
        self.rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []
        self.opset = 13
        self.extra_opsets = []

    # tensors -------------------------------------------------------------
    def inp(self, name, shape, dtype=F):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def out(self, name, shape, dtype=F):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.array(arr, order="C", copy=True), name))
        return name

    def randw(self, name, shape, scale=0.5, positive=False, lo=None):
        a = self.rng.standard_normal(shape).astype(np.float32) * scale
        if positive:
            a = np.abs(a) + (0.5 if lo is None else lo)
        return self.init(name, a.astype(np.float32))

    def i64(self, name, vals):
        return self.init(name, np.array(vals, dtype=np.int64))

    def f32(self, name, vals):
        return self.init(name, np.array(vals, dtype=np.float32))

    def node(self, op, ins, outs, domain=None, **attrs):
        if isinstance(outs, str):
            outs = [outs]
        n = helper.make_node(op, ins, outs, name=f"{op}_{len(self.nodes)}", **attrs)
        if domain:
            n.domain = domain
        self.nodes.append(n)
        return outs[0] if len(outs) == 1 else outs

    def build(self):
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        ops = [helper.make_opsetid("", self.opset)] + self.extra_opsets
        m = helper.make_model(g, opset_imports=ops, producer_name="oqc-make_tiny")
        return m


# ---------------------------------------------------------------- Conv
def conv_model(b, xshape, wshape, yshape, bias=True, **attrs):
    x = b.inp("x", xshape)
    ins = [x, b.randw("W", wshape, scale=0.3)]
    if bias:
        ins.append(b.randw("B", [wshape[0]], scale=0.1))
    b.node("Conv", ins, "y", **attrs)
    b.out("y", yshape)


@model("conv_basic")
def _(b):
    conv_model(b, [1, 3, 8, 8], [4, 3, 3, 3], [1, 4, 8, 8], pads=[1, 1, 1, 1])


@model("conv_nobias")
def _(b):
    conv_model(b, [1, 3, 8, 8], [4, 3, 3, 3], [1, 4, 6, 6], bias=False, kernel_shape=[3, 3])


@model("conv_pads_asym")
def _(b):
    # pads = [top, left, bottom, right]; H: 9+0+2-3)/2+1=5, W: (9+1+1-3)/1+1=9
    conv_model(b, [1, 2, 9, 9], [3, 2, 3, 3], [1, 3, 5, 9], pads=[0, 1, 2, 1], strides=[2, 1])


@model("conv_strides")
def _(b):
    # H: (11-3)/2+1=5, W: (13-3)/3+1=4 (floor)
    conv_model(b, [1, 2, 11, 13], [4, 2, 3, 3], [1, 4, 5, 4], strides=[2, 3])


@model("conv_dilations")
def _(b):
    # eff kernel H: 2*(3-1)+1=5, W: 3*(3-1)+1=7 ; H: 10+4-5+1=10, W: 12+6-7+1=12
    conv_model(b, [1, 3, 10, 12], [4, 3, 3, 3], [1, 4, 10, 12], dilations=[2, 3], pads=[2, 3, 2, 3])


@model("conv_group")
def _(b):
    conv_model(b, [1, 4, 6, 6], [6, 2, 3, 3], [1, 6, 6, 6], group=2, pads=[1, 1, 1, 1])


@model("conv_depthwise")
def _(b):
    conv_model(b, [1, 4, 7, 7], [4, 1, 3, 3], [1, 4, 4, 4], group=4, pads=[1, 1, 1, 1], strides=[2, 2])


@model("conv_depthwise_mult2")
def _(b):
    # channel multiplier 2: group == C_in, C_out = 2 * C_in
    conv_model(b, [1, 3, 6, 6], [6, 1, 3, 3], [1, 6, 4, 4], group=3)


@model("conv_then_depthwise")
def _(b):
    # a 1x1 conv + Relu feeding a depthwise 3x3: its output is a channel-scale candidate
    # (docs/calibration.md, "Channel scales"); the rows are scaled so that the channels'
    # ranges differ by up to 200x
    x = b.inp("x", [1, 3, 8, 8])
    w = b.rng.standard_normal([6, 3, 1, 1]).astype(np.float32) * 0.5
    w *= np.array([1, 0.05, 2, 0.3, 1, 0.01], np.float32).reshape(6, 1, 1, 1)
    b.node("Conv", [x, b.init("W1", w), b.randw("B1", [6], scale=0.1)], "c")
    b.node("Relu", ["c"], "r")
    b.node("Conv", ["r", b.randw("W2", [6, 1, 3, 3], scale=0.3), b.randw("B2", [6], scale=0.1)],
           "y", group=6, pads=[1, 1, 1, 1])
    b.out("y", [1, 6, 8, 8])


@model("conv_argmax")
def _(b):
    # a conv whose class index (ArgMax, int64) is the only output: nothing float to
    # measure an INT8 build by (the default calibration method's search then stays out)
    x = b.inp("x", [1, 3, 8, 8])
    b.node("Conv", [x, b.randw("W", [4, 3, 3, 3], scale=0.3), b.randw("B", [4], scale=0.1)],
           "c", pads=[1, 1, 1, 1])
    b.node("Relu", ["c"], "r")
    b.node("ArgMax", ["r"], "y", axis=1, keepdims=1)
    b.out("y", [1, 1, 8, 8], I64)


@model("conv_autopad_same_upper")
def _(b):
    # out = ceil(7/2) = 4, total pad = (4-1)*2+4-7 = 3 -> begin 1, end 2
    conv_model(b, [1, 2, 7, 7], [3, 2, 4, 4], [1, 3, 4, 4], auto_pad="SAME_UPPER", strides=[2, 2])


@model("conv_autopad_same_lower")
def _(b):
    # total pad 3 -> begin 2, end 1
    conv_model(b, [1, 2, 7, 7], [3, 2, 4, 4], [1, 3, 4, 4], auto_pad="SAME_LOWER", strides=[2, 2])


@model("conv_autopad_valid")
def _(b):
    conv_model(b, [1, 2, 8, 8], [3, 2, 3, 3], [1, 3, 3, 3], auto_pad="VALID", strides=[2, 2])


@model("conv_1x1")
def _(b):
    conv_model(b, [1, 8, 5, 5], [4, 8, 1, 1], [1, 4, 5, 5], kernel_shape=[1, 1])


@model("conv_rect_kernel")
def _(b):
    # 1x5 kernel, pads only on W
    conv_model(b, [2, 3, 6, 9], [2, 3, 1, 5], [2, 2, 6, 9], pads=[0, 2, 0, 2])


# ---------------------------------------------------------- ConvTranspose
def convt_model(b, xshape, wshape, yshape, bias=True, **attrs):
    x = b.inp("x", xshape)
    ins = [x, b.randw("W", wshape, scale=0.3)]
    if bias:
        ins.append(b.randw("B", [wshape[1] * attrs.get("group", 1)], scale=0.1))
    b.node("ConvTranspose", ins, "y", **attrs)
    b.out("y", yshape)


@model("convtranspose_basic")
def _(b):
    # (5-1)*1 + 3 = 7
    convt_model(b, [1, 4, 5, 5], [4, 3, 3, 3], [1, 3, 7, 7])


@model("convtranspose_strides")
def _(b):
    # (4-1)*2 + 2 = 8
    convt_model(b, [1, 3, 4, 4], [3, 2, 2, 2], [1, 2, 8, 8], strides=[2, 2], bias=False)


@model("convtranspose_pads_outpad")
def _(b):
    # (5-1)*2 - 2 + 3 + 1 = 10
    convt_model(b, [1, 4, 5, 5], [4, 3, 3, 3], [1, 3, 10, 10], strides=[2, 2], pads=[1, 1, 1, 1],
                output_padding=[1, 1])


@model("convtranspose_asym")
def _(b):
    # H: (4-1)*2 - (0+1) + 3 + 1 = 9 ; W: (5-1)*3 - (1+0) + 3 + 0 = 14
    convt_model(b, [1, 2, 4, 5], [2, 3, 3, 3], [1, 3, 9, 14], strides=[2, 3], pads=[0, 1, 1, 0],
                output_padding=[1, 0])


@model("convtranspose_group")
def _(b):
    # group 2: W [C_in=4, C_out/group=3] -> C_out 6; dilation 2: (4-1)*1 + 2*(3-1)+1 = 8
    convt_model(b, [1, 4, 4, 4], [4, 3, 3, 3], [1, 6, 8, 8], group=2, dilations=[2, 2])


# ------------------------------------------------------ BatchNormalization
@model("batchnorm_basic")
def _(b):
    x = b.inp("x", [1, 4, 6, 6])
    ins = [x, b.randw("scale", [4], 1.0), b.randw("bias", [4], 0.5),
           b.randw("mean", [4], 0.5), b.randw("var", [4], 0.5, positive=True)]
    b.node("BatchNormalization", ins, "y", epsilon=1e-3)
    b.out("y", [1, 4, 6, 6])


@model("batchnorm_after_conv")
def _(b):
    x = b.inp("x", [1, 3, 6, 6])
    c = b.node("Conv", [x, b.randw("W", [5, 3, 3, 3], 0.3)], "c", pads=[1, 1, 1, 1])
    ins = [c, b.randw("scale", [5], 1.0), b.randw("bias", [5], 0.5),
           b.randw("mean", [5], 0.5), b.randw("var", [5], 0.5, positive=True)]
    b.node("BatchNormalization", ins, "y")  # default epsilon 1e-5
    b.out("y", [1, 5, 6, 6])


# ---------------------------------------------------------- activations
def unary(b, op, shape=(1, 3, 4, 4), **attrs):
    b.inp("x", list(shape))
    b.node(op, ["x"], "y", **attrs)
    b.out("y", list(shape))


model("relu_basic")(lambda b: unary(b, "Relu"))
model("leakyrelu_default")(lambda b: unary(b, "LeakyRelu"))
model("leakyrelu_alpha")(lambda b: unary(b, "LeakyRelu", alpha=0.2))
model("sigmoid_basic")(lambda b: unary(b, "Sigmoid"))
model("hardsigmoid_default")(lambda b: unary(b, "HardSigmoid"))
model("hardsigmoid_alpha_beta")(lambda b: unary(b, "HardSigmoid", alpha=0.25, beta=0.4))
model("tanh_basic")(lambda b: unary(b, "Tanh"))
model("identity_basic")(lambda b: unary(b, "Identity"))

@model("hardswish_basic")
def _(b):
    b.opset = 14   # HardSwish is new in opset 14
    unary(b, "HardSwish")
model("elu_alpha")(lambda b: unary(b, "Elu", alpha=0.7))


@model("unary_chain_math")
def _(b):
    # Abs, Sqrt, Log, Exp, Neg, Erf, Reciprocal chained (each input in its domain, the
    # result bounded: 1 / erf(-sqrt(|x| + 1)) lies in [-1.19, -1])
    b.inp("x", [1, 3, 4, 4])
    t = b.node("Add", [b.node("Abs", ["x"], "abs"), b.f32("one", 1.0)], "abs1")
    for op in ["Sqrt", "Log", "Exp", "Neg", "Erf", "Reciprocal"]:
        t = b.node(op, [t], op.lower())
    b.node("Identity", [t], "y")
    b.out("y", [1, 3, 4, 4])


@model("unary_chain_act")
def _(b):
    # Softplus, Softsign, Selu, Celu, ThresholdedRelu, and Floor + Ceil + Sign of x * 3
    b.inp("x", [1, 3, 4, 4])
    t = b.node("Softplus", ["x"], "sp")
    t = b.node("Softsign", [t], "ss")
    t = b.node("Selu", [t], "se")
    t = b.node("Celu", [t], "ce", alpha=2.0)
    t = b.node("ThresholdedRelu", [t], "tr", alpha=0.6)
    x3 = b.node("Mul", ["x", b.f32("three", 3.0)], "x3")
    fl = b.node("Floor", [x3], "fl")
    ce = b.node("Ceil", [x3], "cl")
    sg = b.node("Sign", ["x"], "sg")
    a = b.node("Sum", [t, fl, ce, sg], "y")
    b.out("y", [1, 3, 4, 4])


@model("prelu_channel")
def _(b):
    b.inp("x", [1, 3, 4, 4])
    b.node("PRelu", ["x", b.randw("slope", [3, 1, 1], 0.3)], "y")
    b.out("y", [1, 3, 4, 4])


@model("pow_square_cube")
def _(b):
    # x ^ 2.0 (LayerNorm's variance) plus x ^ int64 3 (another exponent type)
    b.inp("x", [1, 3, 4, 4])
    sq = b.node("Pow", ["x", b.f32("two", 2.0)], "sq")
    cu = b.node("Pow", ["x", b.i64("three", 3)], "cu")
    b.node("Add", [sq, cu], "y")
    b.out("y", [1, 3, 4, 4])

@model("tile_expand")
def _(b):
    # Tile by [2, 1, 1, 3] plus the channel means Expanded to the tiled shape
    b.inp("x", [1, 3, 2, 2])
    t = b.node("Tile", ["x", b.i64("reps", [2, 1, 1, 3])], "t")
    g = b.node("GlobalAveragePool", ["x"], "g")
    e = b.node("Expand", [g, b.i64("shape", [2, 1, 2, 6])], "e")
    b.node("Add", [t, e], "y")
    b.out("y", [2, 3, 2, 6])


@model("argmax_channels")
def _(b):
    # the class map of a segmentation head: ArgMax over channels, as float
    b.inp("x", [1, 5, 3, 4])
    a = b.node("ArgMax", ["x"], "a", axis=1, keepdims=0)
    b.node("Cast", [a], "y", to=TensorProto.FLOAT)
    b.out("y", [1, 3, 4])


@model("depth_space")
def _(b):
    # DepthToSpace DCR and CRD (super-resolution heads), and SpaceToDepth back
    b.inp("x", [1, 8, 2, 3])
    d = b.node("DepthToSpace", ["x"], "d", blocksize=2)
    c = b.node("DepthToSpace", ["x"], "c", blocksize=2, mode="CRD")
    s = b.node("SpaceToDepth", [c], "s", blocksize=2)
    sd = b.node("SpaceToDepth", [d], "sd", blocksize=2)
    b.node("Sub", [s, sd], "y")
    b.out("y", [1, 8, 2, 3])

# ------------------------------------------------------------ Resize / Upsample
def conv3x3(b, src, cin, cout, out, w, bias):
    """A padded 3x3 Conv of src (cin -> cout channels) with weights w and bias `bias`."""
    return b.node("Conv", [src, b.randw(w, [cout, cin, 3, 3], 0.3), b.randw(bias, [cout], 0.1)],
                  out, pads=[1, 1, 1, 1])


@model("resize_modes")
def _(b):
    # the exporters' forms side by side, each at [1, 3, 10, 12], summed: linear half_pixel
    # x2 (torch bilinear), nearest asymmetric floor by sizes (torch nearest), cubic
    # align_corners, and a pytorch_half_pixel linear downsample of the first one back
    # to 5 x 6, upsampled by tf_half_pixel_for_nn nearest
    b.inp("x", [1, 3, 5, 6])
    e = b.f32("roi", [])
    a = b.node("Resize", ["x", e, b.f32("s2", [1, 1, 2, 2])], "a", mode="linear")
    n = b.node("Resize", ["x", e, "", b.i64("sz", [1, 3, 10, 12])], "n", mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    c = b.node("Resize", ["x", e, b.f32("s3", [1, 1, 2, 2])], "c", mode="cubic",
               coordinate_transformation_mode="align_corners")
    d = b.node("Resize", [a, e, "", b.i64("sz2", [1, 3, 5, 6])], "d", mode="linear",
               coordinate_transformation_mode="pytorch_half_pixel")
    u = b.node("Resize", [d, e, b.f32("s4", [1, 1, 2, 2])], "u", mode="nearest",
               coordinate_transformation_mode="tf_half_pixel_for_nn")
    t = b.node("Add", [b.node("Add", [a, n], "s"), c], "t")
    b.node("Sub", [t, u], "y")
    b.out("y", [1, 3, 10, 12])


@model("upsample_nearest_cnn")
def _(b):
    # a segmentation-style decoder step: Conv, Relu, Upsample x2 (opset 9), Conv
    b.opset = 9
    b.inp("x", [1, 3, 6, 6])
    r = b.node("Relu", [conv3x3(b, "x", 3, 4, "c", "W", "B")], "r")
    u = b.node("Upsample", [r, b.f32("sc", [1, 1, 2, 2])], "u", mode="nearest")
    conv3x3(b, u, 4, 2, "y", "W2", "B2")
    b.out("y", [1, 2, 12, 12])


@model("resize_linear_cnn")
def _(b):
    # Conv, Relu, bilinear x2 (half_pixel, as torch's align_corners=False), Conv; a
    # signed branch (no Relu) resized with align_corners, and a bicubic one (INT8: stays
    # float), added
    b.inp("x", [1, 3, 6, 7])
    e = b.f32("roi", [])
    c = conv3x3(b, "x", 3, 4, "c", "W", "B")
    r = b.node("Relu", [c], "r")
    u = b.node("Resize", [r, e, b.f32("sc", [1, 1, 2, 2])], "u", mode="linear")
    v = b.node("Resize", [c, e, "", b.i64("sz", [1, 4, 12, 14])], "v", mode="linear",
               coordinate_transformation_mode="align_corners")
    w = b.node("Resize", [c, e, b.f32("sc3", [1, 1, 2, 2])], "w", mode="cubic")
    uv = b.node("Add", [u, v], "uv")
    a = b.node("Add", [uv, w], "a")
    conv3x3(b, a, 4, 2, "y", "W2", "B2")
    b.out("y", [1, 2, 12, 14])


@model("transpose_cnn")
def _(b):
    # Conv, Relu, a Transpose swapping H and W (INT8: a move of the codes at the input's
    # scale), Conv
    b.inp("x", [1, 3, 6, 8])
    c = conv3x3(b, "x", 3, 4, "c", "W", "B")
    r = b.node("Relu", [c], "r")
    t = b.node("Transpose", [r], "t", perm=[0, 1, 3, 2])
    conv3x3(b, t, 4, 2, "y", "W2", "B2")
    b.out("y", [1, 2, 8, 6])


@model("transpose_nhwc_cnn")
def _(b):
    # an NHWC input (a TensorFlow export's): Transpose to NCHW first (INT8: the Quantize
    # moves onto the graph input, the Transpose moves its codes), Conv, Relu, MaxPool
    b.inp("x", [1, 6, 6, 3])
    t = b.node("Transpose", ["x"], "t", perm=[0, 3, 1, 2])
    c = conv3x3(b, t, 3, 4, "c", "W", "B")
    r = b.node("Relu", [c], "r")
    b.node("MaxPool", [r], "y", kernel_shape=[2, 2], strides=[2, 2])
    b.out("y", [1, 4, 3, 3])


@model("depth_space_cnn")
def _(b):
    # a super-resolution tail and its inverse (INT8: DepthToSpace and SpaceToDepth move
    # the codes at their input's scale): Conv, DepthToSpace (DCR), Conv, SpaceToDepth,
    # Conv, Relu, DepthToSpace (CRD) as the output
    b.inp("x", [1, 2, 4, 4])
    c = conv3x3(b, "x", 2, 8, "c", "W", "B")
    d = b.node("DepthToSpace", [c], "d", blocksize=2)
    e = conv3x3(b, d, 2, 4, "e", "W2", "B2")
    s = b.node("SpaceToDepth", [e], "s", blocksize=2)
    f = conv3x3(b, s, 16, 8, "f", "W3", "B3")
    r = b.node("Relu", [f], "r")
    b.node("DepthToSpace", [r], "y", blocksize=2, mode="CRD")
    b.out("y", [1, 2, 8, 8])


# ------------------------------------------------------------- pass fold-patterns
@model("pattern_hardswish")
def _(b):
    # PyTorch's hardswish below opset 14: x * HardSigmoid(x, alpha 1/6) (folded), and a
    # Mul by a default HardSigmoid (alpha 0.2: not HardSwish, kept)
    b.inp("x", [1, 3, 6, 6])
    c = b.node("Conv", ["x", b.randw("W", [4, 3, 3, 3], 0.5), b.randw("B", [4], 0.5)], "c",
               pads=[1, 1, 1, 1])
    h = b.node("HardSigmoid", [c], "h", alpha=1.0 / 6, beta=0.5)
    s = b.node("Mul", [c, h], "s")
    k = b.node("HardSigmoid", [c], "k")
    t = b.node("Mul", [k, c], "t")
    b.node("Add", [s, t], "y")
    b.out("y", [1, 4, 6, 6])


@model("pattern_layernorm")
def _(b):
    # LayerNorm decomposed as exporters write it: over the last axis with gamma and beta
    # (Pow form), over the last two axes without them (Mul form); and a mean over axis 1
    # (not trailing: kept)
    b.inp("x", [2, 3, 4, 5])
    def ln(src, axes, square, tag):
        m = b.node("ReduceMean", [src], tag + "m", axes=axes)
        d = b.node("Sub", [src, m], tag + "d")
        if square == "pow":
            p = b.node("Pow", [d, b.f32(tag + "two", 2.0)], tag + "p")
        else:
            p = b.node("Mul", [d, d], tag + "p")
        v = b.node("ReduceMean", [p], tag + "v", axes=axes)
        e = b.node("Add", [v, b.f32(tag + "eps", 1e-5)], tag + "e")
        r = b.node("Sqrt", [e], tag + "r")
        return b.node("Div", [d, r], tag + "n")
    a = ln("x", [-1], "pow", "a")
    g = b.node("Mul", [a, b.randw("gamma", [5], 0.5)], "ag")
    y1 = b.node("Add", [g, b.randw("beta", [5], 0.5)], "ab")
    y2 = ln("x", [2, 3], "mul", "b")
    y3 = ln("x", [1], "pow", "c")
    s = b.node("Add", [y1, y2], "s")
    b.node("Add", [s, y3], "y")
    b.out("y", [2, 3, 4, 5])


@model("norm_layer_instance")
def _(b):
    # InstanceNormalization, then LayerNormalization over the last axis (opset 17)
    b.opset = 17
    b.inp("x", [1, 4, 3, 5])
    i = b.node("InstanceNormalization", ["x", b.randw("s", [4], 0.5), b.randw("ib", [4], 0.2)], "i",
               epsilon=1e-3)
    b.node("LayerNormalization", [i, b.randw("w", [5], 0.5), b.randw("lb", [5], 0.2)], "y", axis=-1)
    b.out("y", [1, 4, 3, 5])

@model("clip_minmax")
def _(b):
    b.inp("x", [1, 3, 4, 4])
    b.node("Clip", ["x", b.init("min", np.array(0.0, np.float32)), b.init("max", np.array(6.0, np.float32))], "y")
    b.out("y", [1, 3, 4, 4])


@model("clip_min_only")
def _(b):
    b.inp("x", [1, 3, 4, 4])
    b.node("Clip", ["x", b.init("min", np.array(-0.5, np.float32))], "y")
    b.out("y", [1, 3, 4, 4])


@model("clip_max_only")
def _(b):
    b.inp("x", [1, 3, 4, 4])
    b.node("Clip", ["x", "", b.init("max", np.array(0.25, np.float32))], "y")
    b.out("y", [1, 3, 4, 4])


@model("clip_none")
def _(b):
    unary(b, "Clip")


@model("clip_opset6")
def _(b):
    b.opset = 6
    unary(b, "Clip", min=-1.0, max=1.5)


# ------------------------------------------------------------- pooling
def pool_model(b, op, xshape, yshape, **attrs):
    b.inp("x", xshape)
    b.node(op, ["x"], "y", **attrs)
    b.out("y", yshape)


@model("maxpool_basic")
def _(b):
    pool_model(b, "MaxPool", [1, 2, 8, 8], [1, 2, 4, 4], kernel_shape=[2, 2], strides=[2, 2])


@model("maxpool_pads")
def _(b):
    # H: (8+1+1-3)/2+1 = 4 ; W: (8+0+2-3)/2+1 = 4
    pool_model(b, "MaxPool", [1, 2, 8, 8], [1, 2, 4, 4], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 0, 1, 2])


@model("maxpool_strides")
def _(b):
    # H: (9-3)/1+1=7, W: (9-3)/3+1=3
    pool_model(b, "MaxPool", [1, 2, 9, 9], [1, 2, 7, 3], kernel_shape=[3, 3], strides=[1, 3])


@model("maxpool_dilations")
def _(b):
    # eff kernel 2*(2-1)+1=3 ; (8-3)/1+1 = 6 ; W dil 3: eff 4 -> (8-4)/2+1=3
    pool_model(b, "MaxPool", [1, 2, 8, 8], [1, 2, 6, 3], kernel_shape=[2, 2], dilations=[2, 3],
               strides=[1, 2])


@model("maxpool_ceil")
def _(b):
    # ceil((8-3)/2)+1 = 4 (floor would give 3)
    pool_model(b, "MaxPool", [1, 2, 8, 8], [1, 2, 4, 4], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)


@model("maxpool_ceil_pads")
def _(b):
    # ceil((7+1+1-3)/2)+1 = 4 ; last window starts at 6-1=5 < 7+1 ok
    pool_model(b, "MaxPool", [1, 1, 7, 7], [1, 1, 4, 4], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 1, 1, 1], ceil_mode=1)


@model("maxpool_same_upper")
def _(b):
    # out ceil(7/2)=4, total pad (4-1)*2+2-7 = 1 -> end
    pool_model(b, "MaxPool", [1, 2, 7, 7], [1, 2, 4, 4], kernel_shape=[2, 2], strides=[2, 2],
               auto_pad="SAME_UPPER")


@model("maxpool_same_lower")
def _(b):
    pool_model(b, "MaxPool", [1, 2, 7, 7], [1, 2, 4, 4], kernel_shape=[2, 2], strides=[2, 2],
               auto_pad="SAME_LOWER")


@model("maxpool_valid")
def _(b):
    pool_model(b, "MaxPool", [1, 2, 7, 7], [1, 2, 3, 3], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="VALID")


@model("avgpool_basic")
def _(b):
    pool_model(b, "AveragePool", [1, 2, 8, 8], [1, 2, 4, 4], kernel_shape=[2, 2], strides=[2, 2])


@model("avgpool_strides")
def _(b):
    pool_model(b, "AveragePool", [1, 2, 9, 9], [1, 2, 7, 3], kernel_shape=[3, 3], strides=[1, 3])


@model("avgpool_pads_exclude")
def _(b):
    # count_include_pad=0 (default): border windows divide by the real count
    pool_model(b, "AveragePool", [1, 2, 6, 6], [1, 2, 3, 4], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 2, 0, 1])


@model("avgpool_pads_include")
def _(b):
    pool_model(b, "AveragePool", [1, 2, 6, 6], [1, 2, 3, 4], kernel_shape=[3, 3], strides=[2, 2],
               pads=[1, 2, 0, 1], count_include_pad=1)


@model("avgpool_ceil")
def _(b):
    # ceil((8-3)/2)+1 = 4: last window is partially outside the input
    pool_model(b, "AveragePool", [1, 2, 8, 8], [1, 2, 4, 4], kernel_shape=[3, 3], strides=[2, 2],
               ceil_mode=1)


@model("avgpool_same_upper")
def _(b):
    # out ceil(6/2)=3, total pad (3-1)*2+3-6 = 1 -> end
    pool_model(b, "AveragePool", [1, 2, 6, 6], [1, 2, 3, 3], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="SAME_UPPER")


@model("avgpool_same_lower")
def _(b):
    pool_model(b, "AveragePool", [1, 2, 6, 6], [1, 2, 3, 3], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="SAME_LOWER")


@model("avgpool_same_upper_include")
def _(b):
    pool_model(b, "AveragePool", [1, 2, 6, 6], [1, 2, 3, 3], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="SAME_UPPER", count_include_pad=1)


@model("avgpool_valid")
def _(b):
    pool_model(b, "AveragePool", [1, 2, 7, 7], [1, 2, 3, 3], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="VALID")


@model("globalavgpool_basic")
def _(b):
    pool_model(b, "GlobalAveragePool", [2, 3, 5, 7], [2, 3, 1, 1])


@model("globalmaxpool_basic")
def _(b):
    pool_model(b, "GlobalMaxPool", [2, 3, 5, 7], [2, 3, 1, 1])


# ------------------------------------------------------------ reductions
@model("reduce_mean_spatial_keepdims")
def _(b):
    # x.mean((2, 3), keepdim=True): pass reduce-pool makes it a GlobalAveragePool
    pool_model(b, "ReduceMean", [2, 3, 5, 7], [2, 3, 1, 1], axes=[2, 3])


@model("reduce_mean_opset18")
def _(b):
    # the same mean with opset 18's axes input (onnx 1.12's checker predates opset 18:
    # this model skips check_model, see UNCHECKED)
    b.opset = 18
    b.inp("x", [2, 3, 5, 7])
    b.node("ReduceMean", ["x", b.i64("axes", [-2, -1])], "y")
    b.out("y", [2, 3, 1, 1])


@model("reduce_mean_chain")
def _(b):
    # the MLPerf Tiny ResNet-8's global mean: ReduceMean(axes=[-1], keepdims=0) twice
    b.inp("x", [1, 4, 6, 5])
    m = b.node("ReduceMean", ["x"], "m", axes=[-1], keepdims=0)
    b.node("ReduceMean", [m], "y", axes=[-1], keepdims=0)
    b.out("y", [1, 4])


@model("reduce_mean_axis1")
def _(b):
    # a mean over channels: no pooling equivalent, stays a ReduceMean
    pool_model(b, "ReduceMean", [1, 4, 3, 5], [1, 3, 5], axes=[1], keepdims=0)


@model("reduce_max_neg_axes")
def _(b):
    pool_model(b, "ReduceMax", [2, 3, 4, 5], [2, 1, 4, 1], axes=[-1, 1])


@model("reduce_min_all")
def _(b):
    pool_model(b, "ReduceMin", [2, 3, 4], [], keepdims=0)


@model("reduce_sum_axes_input")
def _(b):
    b.inp("x", [2, 3, 4, 5])
    b.node("ReduceSum", ["x", b.i64("axes", [0, 2])], "y", keepdims=1)
    b.out("y", [1, 3, 1, 5])


@model("reduce_sum_noop")
def _(b):
    b.inp("x", [2, 3, 4])
    b.node("ReduceSum", ["x", b.i64("axes", np.zeros([0], np.int64))], "y",
           noop_with_empty_axes=1)
    b.out("y", [2, 3, 4])


@model("reduce_cnn_tail")
def _(b):
    # Conv, Relu, then the ResNet-8 head: two ReduceMean(-1) and a MatMul + Add
    b.inp("x", [1, 3, 8, 8])
    c = b.node("Conv", ["x", b.randw("W", [6, 3, 3, 3], 0.3), b.randw("B", [6], 0.1)], "c",
               pads=[1, 1, 1, 1])
    r = b.node("Relu", [c], "r")
    m = b.node("ReduceMean", [r], "m", axes=[-1], keepdims=0)
    m2 = b.node("ReduceMean", [m], "m2", axes=[-1], keepdims=0)
    mm = b.node("MatMul", [m2, b.randw("fcW", [6, 4], 0.5)], "mm")
    b.node("Add", [mm, b.randw("fcB", [4], 0.1)], "y")
    b.out("y", [1, 4])


@model("lrn_basic")
def _(b):
    pool_model(b, "LRN", [1, 8, 4, 4], [1, 8, 4, 4], size=5, alpha=1e-2, beta=0.75, bias=1.0)


@model("lrn_size3_defaults")
def _(b):
    # alpha 1e-4, beta 0.75, bias 1.0 defaults; even-size neighbourhoods are asymmetric, odd here
    pool_model(b, "LRN", [1, 6, 3, 3], [1, 6, 3, 3], size=3)


@model("lrn_size4")
def _(b):
    # even size: window is [c - floor(3/2), c + ceil(3/2)] = [c-1, c+2]
    pool_model(b, "LRN", [1, 6, 3, 3], [1, 6, 3, 3], size=4, alpha=0.05, beta=0.5, bias=2.0)


# ---------------------------------------------------------------- Gemm
def gemm_model(b, ashape, bshape, cshape, yshape, a_is_input=True, **attrs):
    a = b.inp("a", ashape) if a_is_input else b.randw("a", ashape)
    ins = [a, b.randw("b", bshape)]
    if cshape is not None:
        ins.append(b.randw("c", cshape, 0.3))
    b.node("Gemm", ins, "y", **attrs)
    b.out("y", yshape)


model("gemm_basic")(lambda b: gemm_model(b, [2, 3], [3, 4], [4], [2, 4]))
model("gemm_transA")(lambda b: gemm_model(b, [3, 2], [3, 4], [4], [2, 4], transA=1))
model("gemm_transB")(lambda b: gemm_model(b, [2, 3], [4, 3], [4], [2, 4], transB=1))
model("gemm_transA_transB")(lambda b: gemm_model(b, [3, 2], [4, 3], [1, 4], [2, 4], transA=1, transB=1))
model("gemm_alpha_beta")(lambda b: gemm_model(b, [2, 3], [3, 4], [2, 4], [2, 4], alpha=0.5, beta=2.0))
model("gemm_bias_col")(lambda b: gemm_model(b, [2, 3], [3, 4], [2, 1], [2, 4], beta=0.5))
model("gemm_bias_scalar")(lambda b: gemm_model(b, [2, 3], [3, 4], [], [2, 4]))
model("gemm_no_c")(lambda b: gemm_model(b, [2, 3], [3, 4], None, [2, 4], alpha=2.0))


@model("gemm_linear")
def _(b):
    # the PyTorch nn.Linear form: transB=1, 1-D bias
    gemm_model(b, [1, 16], [10, 16], [10], [1, 10], alpha=1.0, beta=1.0, transB=1)


@model("matmul_add_clip_out")
def _(b):
    # a classifier as ONNX Runtime's quantizer leaves it: MatMul, bias Add and a Clip at
    # the recorded output range, all writing the graph output (oqc folds them into one
    # Gemm with a fused Clip, which keeps its int32 accumulators in INT8)
    x = b.inp("x", [1, 16])
    m = b.node("MatMul", [x, b.randw("W", [16, 10])], "m")
    a = b.node("Add", [m, b.randw("bias", [10], 0.3)], "a")
    b.node("Clip", [a, b.f32("lo", -1.0), b.f32("hi", 1.5)], "y")
    b.out("y", [1, 10])


# -------------------------------------------------------------- MatMul
def matmul_model(b, ashape, bshape, yshape, b_is_input=False):
    b.inp("a", ashape)
    bb = b.inp("b", bshape) if b_is_input else b.randw("b", bshape)
    b.node("MatMul", ["a", bb], "y")
    b.out("y", yshape)


model("matmul_2d")(lambda b: matmul_model(b, [3, 4], [4, 5], [3, 5]))
model("matmul_batched")(lambda b: matmul_model(b, [2, 3, 4], [2, 4, 5], [2, 3, 5], b_is_input=True))
model("matmul_bcast_3d_2d")(lambda b: matmul_model(b, [2, 3, 4], [4, 5], [2, 3, 5]))
model("matmul_bcast_batch")(lambda b: matmul_model(b, [1, 3, 4], [2, 4, 5], [2, 3, 5], b_is_input=True))
model("matmul_bcast_4d")(lambda b: matmul_model(b, [2, 1, 3, 4], [3, 4, 2], [2, 3, 3, 2]))
model("matmul_1d_2d")(lambda b: matmul_model(b, [4], [4, 5], [5]))
model("matmul_2d_1d")(lambda b: matmul_model(b, [3, 4], [4], [3]))


# ---------------------------------------------------- binary elementwise
def binary(b, op, ashape, bshape, yshape, b_init=True):
    b.inp("a", ashape)
    if b_init:
        bb = b.randw("b", bshape, positive=(op == "Div"))
    else:
        bb = b.inp("b", bshape)
    b.node(op, ["a", bb], "y")
    b.out("y", yshape)


model("add_same")(lambda b: binary(b, "Add", [1, 3, 4, 4], [1, 3, 4, 4], [1, 3, 4, 4], b_init=False))
model("add_bcast_channel")(lambda b: binary(b, "Add", [1, 3, 4, 4], [3, 1, 1], [1, 3, 4, 4]))
model("add_bcast_scalar")(lambda b: binary(b, "Add", [1, 3, 4, 4], [], [1, 3, 4, 4]))
model("add_bcast_both")(lambda b: binary(b, "Add", [2, 3, 1], [1, 4], [2, 3, 4], b_init=False))
model("sub_bcast_row")(lambda b: binary(b, "Sub", [2, 3, 4], [4], [2, 3, 4]))
model("sub_bcast_lhs")(lambda b: binary(b, "Sub", [3, 1], [2, 3, 4], [2, 3, 4], b_init=False))
model("mul_bcast_both")(lambda b: binary(b, "Mul", [2, 1, 4], [3, 1], [2, 3, 4]))
model("mul_bcast_4d")(lambda b: binary(b, "Mul", [1, 3, 1, 5], [2, 1, 4, 1], [2, 3, 4, 5], b_init=False))
model("div_bcast_channel")(lambda b: binary(b, "Div", [1, 3, 4, 4], [1, 3, 1, 1], [1, 3, 4, 4]))
model("div_bcast_scalar")(lambda b: binary(b, "Div", [2, 5], [1], [2, 5]))


@model("sum_three")
def _(b):
    b.inp("a", [2, 3, 4])
    b.node("Sum", ["a", b.randw("b", [3, 1]), b.randw("c", [4])], "y")
    b.out("y", [2, 3, 4])


@model("sum_one")
def _(b):
    unary(b, "Sum", shape=(2, 3))


# ---------------------------------------------------------- shape ops
@model("concat_axis1")
def _(b):
    b.inp("a", [1, 2, 3, 3])
    b.inp("b", [1, 3, 3, 3])
    b.node("Concat", ["a", "b", b.randw("c", [1, 1, 3, 3])], "y", axis=1)
    b.out("y", [1, 6, 3, 3])


@model("concat_neg_axis")
def _(b):
    b.inp("a", [2, 3, 2])
    b.inp("b", [2, 3, 4])
    b.node("Concat", ["a", "b"], "y", axis=-1)
    b.out("y", [2, 3, 6])


@model("concat_axis0")
def _(b):
    b.inp("a", [1, 4])
    b.node("Concat", ["a", b.randw("b", [2, 4])], "y", axis=0)
    b.out("y", [3, 4])


@model("split_equal")
def _(b):
    b.inp("x", [1, 6, 4, 4])
    b.node("Split", ["x"], ["y0", "y1", "y2"], axis=1)
    for n in ("y0", "y1", "y2"):
        b.out(n, [1, 2, 4, 4])


@model("split_sizes")
def _(b):
    b.inp("x", [2, 7])
    b.node("Split", ["x", b.i64("split", [2, 5])], ["y0", "y1"], axis=-1)
    b.out("y0", [2, 2])
    b.out("y1", [2, 5])


@model("split_sizes_axis2")
def _(b):
    b.inp("x", [1, 2, 6, 3])
    b.node("Split", ["x", b.i64("split", [1, 2, 3])], ["y0", "y1", "y2"], axis=2)
    b.out("y0", [1, 2, 1, 3])
    b.out("y1", [1, 2, 2, 3])
    b.out("y2", [1, 2, 3, 3])


def slice_model(b, xshape, yshape, starts, ends, axes=None, steps=None):
    b.inp("x", xshape)
    ins = ["x", b.i64("starts", starts), b.i64("ends", ends)]
    if axes is not None:
        ins.append(b.i64("axes", axes))
    if steps is not None:
        if axes is None:
            ins.append("")
        ins.append(b.i64("steps", steps))
    b.node("Slice", ins, "y")
    b.out("y", yshape)


model("slice_basic")(lambda b: slice_model(b, [2, 6, 4], [2, 2, 4], [1], [3], axes=[1]))
model("slice_noaxes")(lambda b: slice_model(b, [4, 6], [2, 3], [1, 2], [3, 5]))
model("slice_negative")(lambda b: slice_model(b, [2, 6, 4], [2, 2, 3], [-3, 1], [-1, 1000], axes=[1, -1]))
model("slice_clamp")(lambda b: slice_model(b, [3, 5], [3, 5], [-1000, 0], [1000, INT64_MAX], axes=[0, 1]))
model("slice_steps")(lambda b: slice_model(b, [1, 2, 8, 9], [1, 2, 4, 3], [0, 1], [8, 9], axes=[2, 3],
                                           steps=[2, 3]))
model("slice_neg_step")(lambda b: slice_model(b, [2, 5], [2, 5], [-1], [INT64_MIN], axes=[1], steps=[-1]))
model("slice_neg_step2")(lambda b: slice_model(b, [7, 3], [3, 3], [5, 0], [0, 3], axes=[0, 1], steps=[-2, 1]))
model("slice_empty")(lambda b: slice_model(b, [4, 3], [0, 3], [3], [1], axes=[0]))


@model("flatten_axis0")
def _(b):
    pool_model(b, "Flatten", [2, 3, 4, 5], [1, 120], axis=0)


@model("flatten_axis1")
def _(b):
    pool_model(b, "Flatten", [2, 3, 4, 5], [2, 60])


@model("flatten_axis2")
def _(b):
    pool_model(b, "Flatten", [2, 3, 4, 5], [6, 20], axis=2)


@model("flatten_neg_axis")
def _(b):
    pool_model(b, "Flatten", [2, 3, 4, 5], [24, 5], axis=-1)


def reshape_model(b, xshape, shape, yshape):
    b.inp("x", xshape)
    b.node("Reshape", ["x", b.i64("shape", shape)], "y")
    b.out("y", yshape)


model("reshape_zero_neg")(lambda b: reshape_model(b, [2, 3, 4], [0, -1], [2, 12]))
model("reshape_zero_keep")(lambda b: reshape_model(b, [2, 3, 4], [0, 0, 2, -1], [2, 3, 2, 2]))
model("reshape_flat")(lambda b: reshape_model(b, [2, 3, 4], [-1], [24]))
model("reshape_expand_rank")(lambda b: reshape_model(b, [6, 4], [1, 2, 3, 4], [1, 2, 3, 4]))


@model("transpose_perm")
def _(b):
    pool_model(b, "Transpose", [1, 2, 3, 4], [1, 3, 4, 2], perm=[0, 2, 3, 1])


@model("transpose_default")
def _(b):
    pool_model(b, "Transpose", [2, 3, 4], [4, 3, 2])


@model("transpose_2d")
def _(b):
    pool_model(b, "Transpose", [3, 5], [5, 3], perm=[1, 0])


@model("squeeze_axes")
def _(b):
    b.inp("x", [1, 3, 1, 4])
    b.node("Squeeze", ["x", b.i64("axes", [0, -2])], "y")
    b.out("y", [3, 4])


@model("squeeze_all")
def _(b):
    b.inp("x", [1, 3, 1, 1])
    b.node("Squeeze", ["x"], "y")
    b.out("y", [3])


@model("unsqueeze_axes")
def _(b):
    b.inp("x", [3, 4])
    b.node("Unsqueeze", ["x", b.i64("axes", [0, 3])], "y")
    b.out("y", [1, 3, 4, 1])


@model("unsqueeze_neg")
def _(b):
    b.inp("x", [3, 4])
    b.node("Unsqueeze", ["x", b.i64("axes", [-1])], "y")
    b.out("y", [3, 4, 1])


@model("squeeze_opset11")
def _(b):
    b.opset = 11
    b.inp("x", [1, 3, 1, 4])
    b.node("Squeeze", ["x"], "y", axes=[0, 2])
    b.out("y", [3, 4])


@model("unsqueeze_opset11")
def _(b):
    b.opset = 11
    b.inp("x", [3, 4])
    b.node("Unsqueeze", ["x"], "y", axes=[1, -1])
    b.out("y", [3, 1, 4, 1])


@model("softmax_lastaxis")
def _(b):
    pool_model(b, "Softmax", [2, 3, 5], [2, 3, 5], axis=-1)


@model("softmax_axis1_4d")
def _(b):
    # opset 13 semantics: softmax along axis 1 only
    pool_model(b, "Softmax", [1, 4, 2, 3], [1, 4, 2, 3], axis=1)


@model("softmax_2d")
def _(b):
    pool_model(b, "Softmax", [1, 10], [1, 10])


@model("softmax_opset11_axis1")
def _(b):
    # opset 11 semantics: input coerced to 2-D [2, 3*4]; softmax over 12 elements
    b.opset = 11
    pool_model(b, "Softmax", [2, 3, 4], [2, 3, 4])


@model("softmax_opset11_axis2")
def _(b):
    b.opset = 11
    pool_model(b, "Softmax", [2, 3, 4, 2], [2, 3, 4, 2], axis=2)


@model("dropout_basic")
def _(b):
    unary(b, "Dropout")


@model("dropout_ratio")
def _(b):
    b.inp("x", [2, 5])
    b.node("Dropout", ["x", b.init("ratio", np.array(0.3, np.float32))], "y")
    b.out("y", [2, 5])


def pad_model(b, xshape, pads, yshape, value=None, **attrs):
    b.inp("x", xshape)
    ins = ["x", b.i64("pads", pads)]
    if value is not None:
        ins.append(b.init("value", np.array(value, np.float32)))
    b.node("Pad", ins, "y", **attrs)
    b.out("y", yshape)


# pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...]
model("pad_constant_value")(lambda b: pad_model(b, [1, 2, 4, 5], [0, 0, 1, 2, 0, 0, 2, 1], [1, 2, 7, 8],
                                                value=1.5, mode="constant"))
model("pad_constant_default")(lambda b: pad_model(b, [1, 2, 4, 5], [0, 1, 0, 1, 0, 0, 1, 0], [1, 3, 5, 6]))
model("pad_reflect")(lambda b: pad_model(b, [1, 2, 4, 5], [0, 0, 1, 2, 0, 0, 2, 1], [1, 2, 7, 8],
                                         mode="reflect"))
model("pad_edge")(lambda b: pad_model(b, [1, 2, 4, 5], [0, 0, 1, 2, 0, 0, 2, 1], [1, 2, 7, 8], mode="edge"))
model("pad_negative")(lambda b: pad_model(b, [1, 2, 4, 5], [0, 0, -1, 1, 0, 0, 0, -2], [1, 2, 3, 4]))


@model("shape_basic")
def _(b):
    b.inp("x", [2, 3, 4, 5])
    b.node("Shape", ["x"], "y")
    b.out("y", [4], I64)


@model("gather_axis0")
def _(b):
    b.inp("x", [5, 4])
    b.node("Gather", ["x", b.i64("idx", [3, 0, -1])], "y", axis=0)
    b.out("y", [3, 4])


@model("gather_axis1")
def _(b):
    b.inp("x", [2, 5, 3])
    b.node("Gather", ["x", b.i64("idx", [[0, 2], [4, -2]])], "y", axis=1)
    b.out("y", [2, 2, 2, 3])


@model("gather_scalar")
def _(b):
    b.inp("x", [2, 5, 3])
    b.node("Gather", ["x", b.i64("idx", -1)], "y", axis=1)
    b.out("y", [2, 3])


@model("gather_int32_idx")
def _(b):
    b.inp("x", [6, 3])
    b.node("Gather", ["x", b.init("idx", np.array([5, 1, 1], np.int32))], "y")
    b.out("y", [3, 3])


@model("gather_embedding")
def _(b):
    # indices are the runtime input, data is an initializer
    b.inp("idx", [2, 3], I64)
    b.node("Gather", [b.randw("table", [10, 4]), "idx"], "y", axis=0)
    b.out("y", [2, 3, 4])


@model("cast_f2i")
def _(b):
    b.inp("x", [2, 3])
    b.node("Cast", ["x"], "y", to=TensorProto.INT64)
    b.out("y", [2, 3], I64)


@model("cast_i2f")
def _(b):
    b.inp("x", [2, 3], I64)
    b.node("Cast", ["x"], "y", to=F)
    b.out("y", [2, 3])


@model("constantofshape_value")
def _(b):
    b.inp("x", [2, 3])
    c = b.node("ConstantOfShape", [b.i64("shape", [2, 3])], "c",
               value=helper.make_tensor("value", F, [1], [0.5]))
    b.node("Add", ["x", c], "y")
    b.out("y", [2, 3])


@model("constantofshape_default")
def _(b):
    b.inp("x", [2, 3])
    c = b.node("ConstantOfShape", [b.i64("shape", [2, 3])], "c")  # float 0
    b.node("Add", ["x", c], "y")
    b.out("y", [2, 3])


@model("constant_value")
def _(b):
    b.inp("x", [2, 3])
    c = b.node("Constant", [], "c", value=numpy_helper.from_array(
        b.rng.standard_normal([2, 3]).astype(np.float32), "cval"))
    b.node("Add", ["x", c], "y")
    b.out("y", [2, 3])


@model("constant_value_float")
def _(b):
    b.inp("x", [2, 3])
    c = b.node("Constant", [], "c", value_float=2.5)
    b.node("Mul", ["x", c], "y")
    b.out("y", [2, 3])


@model("constant_value_floats")
def _(b):
    b.inp("x", [2, 3])
    c = b.node("Constant", [], "c", value_floats=[1.0, -2.0, 0.5])
    b.node("Add", ["x", c], "y")
    b.out("y", [2, 3])


@model("constant_value_int")
def _(b):
    # scalar int64 used as a Gather index
    b.inp("x", [4, 3])
    c = b.node("Constant", [], "c", value_int=2)
    b.node("Gather", ["x", c], "y", axis=0)
    b.out("y", [3])


@model("constant_value_ints")
def _(b):
    # int64 list used as a Reshape shape
    b.inp("x", [2, 3])
    c = b.node("Constant", [], "c", value_ints=[3, 2])
    b.node("Reshape", ["x", c], "y")
    b.out("y", [3, 2])


@model("qdq_uint8")
def _(b):
    b.inp("x", [1, 3, 4, 4])
    s = b.init("scale", np.array(0.02, np.float32))
    z = b.init("zp", np.array(128, np.uint8))
    q = b.node("QuantizeLinear", ["x", s, z], "q")
    b.node("DequantizeLinear", [q, s, z], "y")
    b.out("y", [1, 3, 4, 4])


@model("qdq_int8")
def _(b):
    b.inp("x", [1, 3, 4, 4])
    s = b.init("scale", np.array(0.015, np.float32))
    z = b.init("zp", np.array(-3, np.int8))
    q = b.node("QuantizeLinear", ["x", s, z], "q")
    b.node("DequantizeLinear", [q, s, z], "y")
    b.out("y", [1, 3, 4, 4])


@model("qdq_uint8_nozp")
def _(b):
    # zero point omitted: uint8, zero point 0 (negative inputs saturate to 0)
    b.inp("x", [2, 8])
    s = b.init("scale", np.array(0.05, np.float32))
    q = b.node("QuantizeLinear", ["x", s], "q")
    b.node("DequantizeLinear", [q, s], "y")
    b.out("y", [2, 8])


@model("quantize_uint8")
def _(b):
    b.inp("x", [2, 8])
    b.node("QuantizeLinear", ["x", b.init("scale", np.array(0.1, np.float32)),
                              b.init("zp", np.array(10, np.uint8))], "y")
    b.out("y", [2, 8], TensorProto.UINT8)


@model("dequantize_int8")
def _(b):
    b.inp("x", [2, 8], TensorProto.INT8)
    b.node("DequantizeLinear", ["x", b.init("scale", np.array(0.25, np.float32)),
                                b.init("zp", np.array(-7, np.int8))], "y")
    b.out("y", [2, 8])


@model("dq_weights_conv")
def _(b):
    # int8 weights dequantized in the graph (the QDQ form of a quantized Conv)
    b.inp("x", [1, 3, 6, 6])
    wq = b.init("Wq", b.rng.randint(-127, 128, size=[4, 3, 3, 3]).astype(np.int8))
    w = b.node("DequantizeLinear", [wq, b.init("ws", np.array(0.01, np.float32)),
                                     b.init("wz", np.array(0, np.int8))], "W")
    b.node("Conv", ["x", w, b.randw("B", [4], 0.1)], "y", pads=[1, 1, 1, 1])
    b.out("y", [1, 4, 6, 6])


# ------------------------------------------------- initializer storage forms
@model("initializer_storage_forms")
def _(b):
    b.inp("x", [2, 3])
    r = b.rng
    # raw_data float
    b.inits.append(numpy_helper.from_array(r.standard_normal([2, 3]).astype(np.float32), "a_raw"))
    # float_data
    b.inits.append(helper.make_tensor("b_float_data", F, [2, 3],
                                      r.standard_normal(6).astype(np.float32).tolist()))
    # int8 stored in int32_data
    b.inits.append(helper.make_tensor("c_int8_int32_data", TensorProto.INT8, [2, 3],
                                      [-128, -5, 0, 7, 100, 127]))
    # int32 stored in int32_data
    b.inits.append(helper.make_tensor("d_int32_int32_data", TensorProto.INT32, [2], [-3, 40000]))
    # int64_data (a Reshape shape)
    b.inits.append(helper.make_tensor("e_int64_data", TensorProto.INT64, [2], [3, 2]))
    # double_data feeding a Cast
    b.inits.append(helper.make_tensor("f_double_data", TensorProto.DOUBLE, [2, 3],
                                      [0.125, -1.5, 3.25, 1e-3, -2.0, 10.0]))
    for t in b.inits:
        assert (t.name == "a_raw") == t.HasField("raw_data"), t.name
    s1 = b.node("Add", ["x", "a_raw"], "s1")
    s2 = b.node("Add", [s1, "b_float_data"], "s2")
    c8 = b.node("Cast", ["c_int8_int32_data"], "c8f", to=F)
    s3 = b.node("Add", [s2, c8], "s3")
    cd = b.node("Cast", ["f_double_data"], "cdf", to=F)
    s4 = b.node("Add", [s3, cd], "s4")
    rs = b.node("Reshape", [s4, "e_int64_data"], "r")
    c32 = b.node("Cast", ["d_int32_int32_data"], "c32f", to=F)
    b.node("Add", [rs, c32], "y")
    b.out("y", [3, 2])


@model("init_as_input")
def _(b):
    # old exporters (IR version 3) list every initializer as a graph input too
    conv_model(b, [1, 3, 6, 6], [4, 3, 3, 3], [1, 4, 6, 6], pads=[1, 1, 1, 1])
    for t in b.inits:
        b.inputs.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))


@model("dynamic_batch")
def _(b):
    b.inp("x", ["N", 3, 8, 8])
    c = b.node("Conv", ["x", b.randw("W", [4, 3, 3, 3], 0.3), b.randw("B", [4], 0.1)], "c",
               pads=[1, 1, 1, 1])
    r = b.node("Relu", [c], "r")
    p = b.node("GlobalAveragePool", [r], "p")
    f = b.node("Flatten", [p], "f")
    b.node("Gemm", [f, b.randw("fcW", [5, 4]), b.randw("fcB", [5], 0.1)], "y", transB=1)
    b.out("y", ["N", 5])


@model("extdata_conv")
def _(b):
    # saved with external data (ext_weights.bin), see save()
    b.inp("x", [1, 3, 6, 6])
    c = b.node("Conv", ["x", b.randw("W", [4, 3, 3, 3], 0.3), b.randw("B", [4], 0.1)], "c",
               pads=[1, 1, 1, 1])
    b.node("Gemm", [b.node("Flatten", [c], "f"), b.randw("fcW", [144, 3], 0.1), b.randw("fcB", [3])], "y")
    b.out("y", [1, 3])


@model("pytorch_style_flatten")
def _(b):
    # x.view(x.size(0), -1) as exported by PyTorch
    b.inp("x", [1, 3, 4, 4])
    c = b.node("Conv", ["x", b.randw("W", [2, 3, 3, 3], 0.3), b.randw("B", [2], 0.1)], "c",
               pads=[1, 1, 1, 1])
    s = b.node("Shape", [c], "s")
    g = b.node("Gather", [s, b.i64("zero", 0)], "g", axis=0)
    u = b.node("Unsqueeze", [g, b.i64("uaxes", [0])], "u")
    cat = b.node("Concat", [u, b.i64("minus_one", [-1])], "cat", axis=0)
    r = b.node("Reshape", [c, cat], "r")
    b.node("Gemm", [r, b.randw("fcW", [4, 32], 0.2), b.randw("fcB", [4], 0.1)], "y", transB=1)
    b.out("y", [1, 4])


@model("mixed_small_cnn")
def _(b):
    # several families chained, a small end-to-end quantization test
    b.inp("x", [1, 3, 16, 16])
    c1 = b.node("Conv", ["x", b.randw("W1", [8, 3, 3, 3], 0.3), b.randw("B1", [8], 0.1)], "c1",
                pads=[1, 1, 1, 1])
    bn = b.node("BatchNormalization", [c1, b.randw("g", [8], 0.2, positive=True), b.randw("be", [8], 0.2),
                                       b.randw("m", [8], 0.2), b.randw("v", [8], 0.3, positive=True)], "bn")
    r1 = b.node("Relu", [bn], "r1")
    p1 = b.node("MaxPool", [r1], "p1", kernel_shape=[2, 2], strides=[2, 2])
    d = b.node("Conv", [p1, b.randw("Wd", [8, 1, 3, 3], 0.3)], "d", pads=[1, 1, 1, 1], group=8)
    a = b.node("Add", [p1, d], "a")
    cl = b.node("Clip", [a, b.init("lo", np.array(0.0, np.float32)), b.init("hi", np.array(6.0, np.float32))],
                "cl")
    g = b.node("GlobalAveragePool", [cl], "gp")
    f = b.node("Flatten", [g], "f")
    b.node("Gemm", [f, b.randw("fcW", [10, 8], 0.3), b.randw("fcB", [10], 0.1)], "logits", transB=1)
    b.out("logits", [1, 10])


# ------------------------------------------------- INT8 tables of activations
@model("lut_cnn")
def _(b):
    # Convs separated by the activations of modern networks, each in its exporters'
    # form: SiLU as x * Sigmoid(x), HardSwish as the op and as x * HardSigmoid(x), GELU
    # from Erf, Elu, Tanh, Sigmoid; then global pooling and a classifier. The HardSwish
    # op and the last Sigmoid read a MaxPool (8 bits even when read by float nodes: no
    # accumulator output), so their tables can be compared with float islands
    b.opset = 14
    b.inp("x", [1, 3, 8, 8])
    n = [0]

    def conv(t, cin):
        n[0] += 1
        return b.node("Conv", [t, b.randw(f"W{n[0]}", [8, cin, 3, 3], 0.15),
                               b.randw(f"B{n[0]}", [8], 0.1)], f"c{n[0]}", pads=[1, 1, 1, 1])
    c = conv("x", 3)
    c = conv(b.node("Mul", [c, b.node("Sigmoid", [c], "sig1")], "silu"), 8)
    mp = b.node("MaxPool", [c], "mp1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    c = conv(b.node("HardSwish", [mp], "hswish"), 8)
    c = conv(b.node("Mul", [c, b.node("HardSigmoid", [c], "hsig", alpha=1.0 / 6)], "hswish2"), 8)
    e = b.node("Erf", [b.node("Div", [c, b.f32("sqrt2", 1.4142135)], "gd")], "ge")
    g = b.node("Mul", [b.node("Mul", [c, b.f32("half", 0.5)], "gh"),
                       b.node("Add", [e, b.f32("one", 1.0)], "ga")], "gelu")
    c = conv(g, 8)
    c = conv(b.node("Elu", [c], "elu", alpha=0.5), 8)
    c = conv(b.node("Tanh", [c], "tanh"), 8)
    mp = b.node("MaxPool", [c], "mp2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    s = b.node("Sigmoid", [mp], "sig2")
    p = b.node("Flatten", [b.node("GlobalAveragePool", [s], "gap")], "flat")
    b.node("Gemm", [p, b.randw("fcW", [4, 8], 0.5), b.randw("fcB", [4], 0.1)], "y", transB=1)
    b.out("y", [1, 4])


@model("se_block")
def _(b):
    # squeeze-excitation (MobileNetV3): the features times a per-channel gate
    # HardSigmoid(conv(relu(conv(mean)))), then a same-shape product of two branches
    b.inp("x", [1, 3, 6, 6])
    c = b.node("Relu", [b.node("Conv", ["x", b.randw("W1", [8, 3, 3, 3], 0.3), b.randw("B1", [8], 0.1)],
                               "c1", pads=[1, 1, 1, 1])], "r1")
    s = b.node("GlobalAveragePool", [c], "gap")
    s = b.node("Relu", [b.node("Conv", [s, b.randw("Ws", [4, 8, 1, 1], 0.5), b.randw("Bs", [4], 0.1)],
                               "sq")], "sqr")
    s = b.node("Conv", [s, b.randw("We", [8, 4, 1, 1], 0.5), b.randw("Be", [8], 0.1)], "ex")
    gate = b.node("HardSigmoid", [s], "gate", alpha=1.0 / 6)
    m = b.node("Mul", [c, gate], "se")
    c2 = b.node("Conv", [m, b.randw("W2", [8, 8, 3, 3], 0.2), b.randw("B2", [8], 0.1)], "c2",
                pads=[1, 1, 1, 1])
    c3 = b.node("Conv", [m, b.randw("W3", [8, 8, 1, 1], 0.3), b.randw("B3", [8], 0.1)], "c3")
    p = b.node("Mul", [c2, c3], "prod")
    b.node("Conv", [p, b.randw("W4", [4, 8, 1, 1], 0.3)], "y")
    b.out("y", [1, 4, 6, 6])


@model("lut_unsound")
def _(b):
    # Sqrt of a conv output that is positive on data (bias 4) but signed in INT8: the
    # negative codes have no square root, so the Sqrt stays float
    b.inp("x", [1, 3, 6, 6])
    c = b.node("Conv", ["x", b.randw("W", [4, 3, 3, 3], 0.2), b.f32("B", [4.0] * 4)], "c",
               pads=[1, 1, 1, 1])
    r = b.node("Sqrt", [c], "r")
    b.node("Conv", [r, b.randw("W2", [4, 4, 1, 1], 0.5)], "y")
    b.out("y", [1, 4, 6, 6])

@model("lut_sin")
def _(b):
    # Sin between two convs: an element-wise function of one tensor, so INT8 runs it as a
    # 256-entry table (oqci_lut) with no code of its own in passes/
    b.inp("x", [1, 3, 6, 6])
    c = b.node("Conv", ["x", b.randw("W", [4, 3, 3, 3], 0.4), b.randw("B", [4], 0.1)], "c",
               pads=[1, 1, 1, 1])
    s = b.node("Sin", [c], "s")
    b.node("Conv", [s, b.randw("W2", [4, 4, 1, 1], 0.5)], "y")
    b.out("y", [1, 4, 6, 6])


# -----------------------------------------------------------------------------
# Models whose opset is newer than onnx 1.12's checker knows (shape inference still runs).
UNCHECKED = {"reduce_mean_opset18"}


def check(m, name):
    if name not in UNCHECKED:
        onnx.checker.check_model(m)
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)


def save(m, name, out):
    path = os.path.join(out, name + ".onnx")
    if name == "extdata_conv":
        binp = os.path.join(out, "ext_weights.bin")
        if os.path.exists(binp):
            os.remove(binp)  # onnx appends to an existing file
        onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location="ext_weights.bin", size_threshold=0)
        # check the saved form (with the data loaded back from the file)
        onnx.checker.check_model(path)
    else:
        onnx.save(m, path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = set()
    for name, fn in MODELS:
        assert name not in names, name
        names.add(name)
        b = B(name)
        fn(b)
        m = b.build()
        check(m, name)
        p = save(m, name, args.out)
        sz = os.path.getsize(p)
        assert sz < 50_000, (name, sz)
        print(f"{name:32s} opset {b.opset:2d} {sz:6d} B  {', '.join(sorted({n.op_type for n in m.graph.node}))}")
    print(f"{len(MODELS)} models written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
