#!/usr/bin/python3
"""Small ONNX models whose data movement runs in INT8 (tests/cli/int8_concat.sh).

Makes, in models/move/ (or --out DIR), for each model NAME:
  NAME.onnx       the model (onnx.helper, opset 13, fixed shapes);
  NAME_x.npy      8 input samples, float32 [8, *input shape] (standard normal, seeded);
  NAME_ref.npy    the model's output for each sample, float32 [8, *output shape],
                  computed here with numpy in float64 from the ONNX semantics (not by
                  running the model), then rounded to float32.

  dense_block   a DenseNet-like block: Concats whose inputs are also read by other
                nodes (so pass concat-elim keeps them), inputs at different scales,
                u8 (after a Relu) and s8 inputs, an input appearing twice, a Concat
                along axis 3; three 1x1 convs summed.
  shuffle_unit  two ShuffleNet v2 units: the first splits its input's channels with two
                Slices, the second with a Split; half goes through 1x1 conv, Relu,
                depthwise 3x3 conv, 1x1 conv, Relu, is concatenated with the other half
                and shuffled (Reshape [1, 2, 4, H, W], Transpose [0, 2, 1, 3, 4], Reshape
                back); a 1x1 conv ends it.
  slice_steps   Conv, Relu, a Slice with negative and positive steps on three axes
                (channels backwards by 2, rows by 2, columns backwards by 3), 1x1 conv.
  concat_input  a Concat of the graph input and a conv's output (in INT8 it stays
                float: its first input is not INT8).

Weights come from numpy RandomState seeded from the model name (zlib.crc32), as in
models/tiny/make_tiny.py; every model passes onnx.checker.check_model and strict shape
inference.  Re-run (deterministic, byte-identical output):
    /usr/bin/python3 models/move/make_move_models.py [--out DIR]
"""
import argparse
import os
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
OUT = os.path.dirname(os.path.abspath(__file__))
SAMPLES = 8


class B:
    """Graph builder that evaluates each node with numpy as it is added: values[name]
    holds the float64 tensor of every sample ([S, ...])."""

    def __init__(self, name, xshape):
        self.name = name
        self.rng = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        self.nodes, self.inits = [], []
        self.xshape = xshape
        self.x = self.rng.standard_normal([SAMPLES] + xshape).astype(np.float32)
        self.values = {"x": self.x.astype(np.float64)}
        self.inputs = [helper.make_tensor_value_info("x", F, xshape)]
        self.outputs = []

    def weight(self, name, shape, scale):
        w = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, name))
        return name, w.astype(np.float64)

    def i64(self, name, vals):
        self.inits.append(numpy_helper.from_array(np.array(vals, dtype=np.int64), name))
        return name

    def node(self, op, ins, outs, value, **attrs):
        if isinstance(outs, str):
            outs = [outs]
        self.nodes.append(helper.make_node(op, ins, outs, name=f"{op}_{len(self.nodes)}",
                                           **attrs))
        vals = value if isinstance(value, list) else [value]
        for o, v in zip(outs, vals):
            self.values[o] = v
        return outs[0] if len(outs) == 1 else outs

    # ops (numpy semantics per sample axis 0) ----------------------------------------
    def conv(self, x, cout, k, out, group=1, pad=0, strides=(1, 1), relu=False):
        xv = self.values[x]
        cin = xv.shape[2]
        kh, kw = (k, k) if isinstance(k, int) else k
        wn, w = self.weight(out + "_W", [cout, cin // group, kh, kw], 0.4)
        bn, bias = self.weight(out + "_B", [cout], 0.1)
        y = conv_ref(xv, w, bias, group, pad, strides)
        c = self.node("Conv", [x, wn, bn], out + ("_c" if relu else ""), y,
                      kernel_shape=[kh, kw], pads=[pad] * 4, strides=list(strides),
                      group=group)
        return self.node("Relu", [c], out, np.maximum(y, 0)) if relu else c

    def concat(self, ins, out, axis):
        v = np.concatenate([self.values[i] for i in ins], axis=axis + 1)
        return self.node("Concat", ins, out, v, axis=axis)

    def slice(self, x, out, starts, ends, axes, steps=None):
        xv = self.values[x]
        idx = [slice(None)] * xv.ndim
        for k, a in enumerate(axes):
            idx[a + 1] = slice(starts[k], ends[k], steps[k] if steps else 1)
        ins = [x, self.i64(out + "_starts", starts), self.i64(out + "_ends", ends),
               self.i64(out + "_axes", axes)]
        if steps:
            ins.append(self.i64(out + "_steps", steps))
        return self.node("Slice", ins, out, xv[tuple(idx)])

    def shuffle(self, x, out, groups):
        """Channel shuffle: Reshape [1, g, C/g, H, W], Transpose [0, 2, 1, 3, 4], Reshape."""
        xv = self.values[x]
        n, c, h, w = self.xshape[0], xv.shape[2], xv.shape[3], xv.shape[4]
        s5 = [n, groups, c // groups, h, w]
        r = self.node("Reshape", [x, self.i64(out + "_s5", s5)], out + "_r",
                      xv.reshape([SAMPLES] + s5))
        t = self.node("Transpose", [r], out + "_t",
                      self.values[r].transpose(0, 1, 3, 2, 4, 5), perm=[0, 2, 1, 3, 4])
        return self.node("Reshape", [t, self.i64(out + "_s4", [n, c, h, w])], out,
                         self.values[t].reshape(xv.shape))

    def finish(self, y):
        yv = self.values[y]
        self.outputs.append(helper.make_tensor_value_info(y, F, list(yv.shape[1:])))
        g = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="oqc-make_move_models")
        return m, self.x, yv.astype(np.float32)


def conv_ref(x, w, bias, group, pad, strides):
    """ONNX Conv over samples: x [S, N, C, H, W], float64, symmetric padding."""
    s, n, c, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (0, 0), (pad, pad), (pad, pad)])
    oh = (h + 2 * pad - kh) // strides[0] + 1
    ow = (wd + 2 * pad - kw) // strides[1] + 1
    y = np.zeros([s, n, cout, oh, ow])
    per = cout // group
    for k in range(cout):
        g = k // per
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, :, g * cg:(g + 1) * cg,
                           i:i + strides[0] * (oh - 1) + 1:strides[0],
                           j:j + strides[1] * (ow - 1) + 1:strides[1]]
                y[:, :, k] += np.einsum("snchw,c->snhw", patch, w[k, :, i, j])
        y[:, :, k] += bias[k]
    return y


def dense_block():
    b = B("dense_block", [1, 3, 8, 8])
    a = b.conv("x", 4, 3, "a", pad=1)                  # s8: no Relu
    r = b.conv(a, 4, 3, "b", pad=1, relu=True)         # u8; read by four Concats
    cat1 = b.concat([a, r], "cat1", 1)                 # s8 and u8 inputs: s8 output
    c = b.conv(cat1, 4, 1, "c", relu=True)             # u8
    cat2 = b.concat([a, r, c], "cat2", 1)              # three scales
    cat3 = b.concat([r, c, r], "cat3", 1)              # u8 only, r twice: u8 output
    catw = b.concat([r, c], "catw", 3)                 # along W
    y1 = b.conv(cat2, 2, 1, "y1")
    y2 = b.conv(cat3, 2, 1, "y2")
    y3 = b.conv(catw, 2, (1, 2), "y3", strides=(1, 2))
    y = b.node("Sum", [y1, y2, y3], "y", b.values[y1] + b.values[y2] + b.values[y3])
    return b.finish(y)


def shuffle_unit():
    b = B("shuffle_unit", [1, 8, 6, 6])
    s = b.conv("x", 8, 1, "s", relu=True)
    x1 = b.slice(s, "x1", [0], [4], [1])
    x2 = b.slice(s, "x2", [4], [8], [1])
    e = b.conv(x2, 4, 1, "b1", relu=True)
    e = b.conv(e, 4, 3, "b2", group=4, pad=1)
    e = b.conv(e, 4, 1, "b3", relu=True)
    sh = b.shuffle(b.concat([x1, e], "cat1", 1), "sh1", 2)
    sv = b.values[sh]
    p, q = b.node("Split", [sh, b.i64("split", [4, 4])], ["p", "q"],
                  [sv[:, :, :4], sv[:, :, 4:]], axis=1)
    f = b.conv(q, 4, 1, "f1", relu=True)
    f = b.conv(f, 4, 3, "f2", group=4, pad=1)
    f = b.conv(f, 4, 1, "f3", relu=True)
    sh2 = b.shuffle(b.concat([p, f], "cat2", 1), "sh2", 2)
    return b.finish(b.conv(sh2, 4, 1, "y"))


def slice_steps():
    b = B("slice_steps", [1, 4, 8, 8])
    c = b.conv("x", 6, 3, "c", pad=1, relu=True)
    # channels 5, 3, 1; rows 1, 3, 5, 7; columns 7, 4, 1
    sl = b.slice(c, "sl", [5, 1, -1], [-7, 8, -9], [1, 2, 3], [-2, 2, -3])
    return b.finish(b.conv(sl, 2, 1, "y"))


def concat_input():
    b = B("concat_input", [1, 2, 5, 5])
    a = b.conv("x", 3, 3, "a", pad=1, relu=True)
    # the graph input is float where the Concat reads it: the Concat stays float
    cat = b.concat(["x", a], "cat", 1)
    return b.finish(b.conv(cat, 2, 1, "y"))


MODELS = [dense_block, shuffle_unit, slice_steps, concat_input]


def save_npy(path, a):
    with open(path, "wb") as f:
        np.save(f, a)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for fn in MODELS:
        name = fn.__name__
        m, x, y = fn()
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, strict_mode=True)
        onnx.save(m, os.path.join(args.out, name + ".onnx"))
        save_npy(os.path.join(args.out, name + "_x.npy"), x)
        save_npy(os.path.join(args.out, name + "_ref.npy"), y)
        print(f"{name}: x {list(x.shape)} -> y {list(y.shape)}")


if __name__ == "__main__":
    main()
