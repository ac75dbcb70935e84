#!/usr/bin/python3
"""Bad-input corpus: small invalid ONNX models for the loader/checker tests.

Writes into tests/bad/ (or --out) one file per case plus cases.tsv, one line
per case: `<file name>\t<one-line description of what is wrong>`.
The models are built as raw protobufs (onnx.helper, no checker) so that they
can be invalid.  Also writes valid_small.onnx, a byte copy of
models/tiny/conv_basic.onnx (run models/tiny/make_tiny.py first), which the C
test truncates at every 1/16 of its length at run time.

Re-run (deterministic, byte-identical output):
    /usr/bin/python3 tests/bad/make_bad.py [--out DIR]
"""
import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
F = TensorProto.FLOAT
CASES = []  # (file name, description, builder returning bytes or ModelProto)


def case(fname, desc):
    def deco(fn):
        CASES.append((fname, desc, fn))
        return fn
    return deco


def raw_tensor(name, shape, raw):
    t = TensorProto()
    t.name = name
    t.data_type = F
    t.dims.extend(shape)
    t.raw_data = raw  # set even when empty: onnx.proto is proto2, so the field is present
    return t


def vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def mk(nodes, inputs, outputs, inits=(), opsets=(("", 13),), name="bad"):
    g = helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                             producer_name="oqc-make_bad")


def w(name, shape, seed=0):
    return numpy_helper.from_array(np.random.RandomState(seed).standard_normal(shape).astype(np.float32), name)


def conv_model(**attrs):
    return mk([helper.make_node("Conv", ["x", "W"], ["y"], **attrs)],
              [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [w("W", [4, 3, 3, 3])])


@case("empty.onnx", "empty file (0 bytes)")
def _(out):
    return b""


@case("random.onnx", "4096 random bytes (fixed-seed numpy RNG), not a protobuf ModelProto")
def _(out):
    return np.random.RandomState(20240501).bytes(4096)


@case("no_producer.onnx", "Add node input 'ghost' is produced by no node, initializer or graph input")
def _(out):
    return mk([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "ghost"], ["y"])],
              [vi("x", [1, 4])], [vi("y", [1, 4])])


@case("cycle.onnx", "two nodes feed each other (Add -> Relu -> Add): the graph has a cycle")
def _(out):
    return mk([helper.make_node("Add", ["x", "t2"], ["t1"]), helper.make_node("Relu", ["t1"], ["t2"])],
              [vi("x", [1, 4])], [vi("t2", [1, 4])])


@case("missing_initializer.onnx",
      "Conv weight 'W' is neither an initializer nor a graph input nor produced by a node")
def _(out):
    return mk([helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])],
              [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])])


@case("attr_wrong_type.onnx", "Conv attribute 'strides' has type FLOAT instead of INTS")
def _(out):
    return conv_model(pads=[1, 1, 1, 1], strides=2.0)


@case("attr_wrong_type2.onnx", "Conv attribute 'group' has type STRING instead of INT")
def _(out):
    return conv_model(pads=[1, 1, 1, 1], group="1")


@case("gelu_bad_approx.onnx", "Gelu (opset 20) with approximate 'erf' (only 'none' and 'tanh' exist)")
def _(out):
    return mk([helper.make_node("Gelu", ["x"], ["y"], approximate="erf")],
              [vi("x", [1, 4])], [vi("y", [1, 4])], opsets=(("", 20),))


@case("negative_dim.onnx", "graph input 'x' has dimension -3")
def _(out):
    return mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, -3, 4])], [vi("y", [1, -3, 4])])


@case("absurd_dim.onnx",
      "initializer 'W' has dims [1048576,1048576] (2^40 floats, 4 TiB) and empty raw_data")
def _(out):
    t = raw_tensor("W", [1048576, 1048576], b"")
    assert t.HasField("raw_data")
    return mk([helper.make_node("MatMul", ["x", "W"], ["y"])], [vi("x", [1, 1048576])],
              [vi("y", [1, 1048576])], [t])


@case("absurd_input.onnx", "graph input 'x' has shape [1048576,1048576,16] (2^44 floats, 64 TiB)")
def _(out):
    return mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1048576, 1048576, 16])],
              [vi("y", [1048576, 1048576, 16])])


def ext_tensor(name, shape, location, offset, length):
    t = TensorProto()
    t.name = name
    t.data_type = F
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def ext_model(location, offset, length):
    return mk([helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])],
              [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])],
              [ext_tensor("W", [4, 3, 3, 3], location, offset, length)])


@case("ext_missing.onnx", "initializer 'W' has external data in 'ext_missing_does_not_exist.bin', which does not exist")
def _(out):
    return ext_model("ext_missing_does_not_exist.bin", 0, 4 * 108)


@case("ext_short.onnx",
      "initializer 'W' has external data at offset 64, length 432 in ext_short.bin, which is only 256 bytes")
def _(out):
    with open(os.path.join(out, "ext_short.bin"), "wb") as f:
        f.write(np.random.RandomState(7).standard_normal(64).astype("<f4").tobytes())
    return ext_model("ext_short.bin", 64, 4 * 108)


@case("zero_outputs.onnx", "graph has no outputs")
def _(out):
    return mk([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], [])


@case("unknown_domain.onnx",
      "node 'Frobnicate' is in domain com.example.nonexistent (imported, version 1) that no one implements")
def _(out):
    return mk([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example.nonexistent")],
              [vi("x", [1, 4])], [vi("y", [1, 4])], opsets=(("", 13), ("com.example.nonexistent", 1)))


@case("unknown_domain_noimport.onnx",
      "node 'Frobnicate' is in domain com.example.nonexistent, which is not in the model's opset imports")
def _(out):
    return mk([helper.make_node("Frobnicate", ["x"], ["y"], domain="com.example.nonexistent")],
              [vi("x", [1, 4])], [vi("y", [1, 4])])


@case("init_size_mismatch.onnx", "initializer 'W' has dims [4,3,3,3] (432 bytes) but raw_data of 10 bytes")
def _(out):
    t = raw_tensor("W", [4, 3, 3, 3], bytes(range(10)))
    return mk([helper.make_node("Conv", ["x", "W"], ["y"], pads=[1, 1, 1, 1])],
              [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 8, 8])], [t])


@case("unsupported_ops.onnx",
      "valid model (passes the ONNX checker) using unsupported ops: Round x2, Hardmax x1")
def _(out):
    m = mk([helper.make_node("Round", ["x"], ["e1"]), helper.make_node("Round", ["e1"], ["e2"]),
            helper.make_node("Hardmax", ["e2"], ["y"], axis=-1)], [vi("x", [1, 8])], [vi("y", [1, 8])])
    onnx.checker.check_model(m)
    return m


@case("dup_output.onnx", "two nodes (Relu, Sigmoid) both produce tensor 'y'")
def _(out):
    return mk([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["y"])],
              [vi("x", [1, 4])], [vi("y", [1, 4])])


@case("wrong_rank_conv.onnx", "Conv weight 'W' has rank 3 [4,3,3] while input 'x' has rank 4 [1,3,8,8]")
def _(out):
    return mk([helper.make_node("Conv", ["x", "W"], ["y"])], [vi("x", [1, 3, 8, 8])], [vi("y", [1, 4, 6, 6])],
              [w("W", [4, 3, 3])])


@case("shape_mismatch_add.onnx", "Add of [2,3] and [4,5]: shapes are not broadcastable")
def _(out):
    return mk([helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", [2, 3]), vi("b", [4, 5])],
              [vi("y", [4, 5])])


@case("matmul_mixed_types.onnx", "MatMul of an f32 input and an int16 graph input (MatMul takes one element type)")
def _(out):
    return mk([helper.make_node("MatMul", ["a", "b"], ["y"])],
              [vi("a", [1, 3, 4]), vi("b", [2, 4, 38], TensorProto.INT16)], [vi("y", [2, 3, 38])])



@case("reduce_axis_range.onnx", "ReduceMean axes=[4] on a rank-4 input (axes go from -4 to 3)")
def _(out):
    return mk([helper.make_node("ReduceMean", ["x"], ["y"], axes=[4])], [vi("x", [1, 3, 4, 4])],
              [vi("y", [1, 3, 4, 4])])


@case("reduce_axes_runtime.onnx", "ReduceSum (opset 13) whose axes input is a graph input, known only at run time")
def _(out):
    return mk([helper.make_node("ReduceSum", ["x", "axes"], ["y"])],
              [vi("x", [1, 3, 4, 4]), vi("axes", [1], TensorProto.INT64)], [vi("y", [1, 3, 4, 4])])

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lines = []
    for fname, desc, fn in CASES:
        assert "\t" not in desc and "\n" not in desc
        res = fn(args.out)
        data = res if isinstance(res, bytes) else res.SerializeToString()
        with open(os.path.join(args.out, fname), "wb") as f:
            f.write(data)
        lines.append(f"{fname}\t{desc}\n")
        print(f"{fname:32s} {len(data):6d} B  {desc}")
    with open(os.path.join(args.out, "cases.tsv"), "w") as f:
        f.writelines(lines)
    src = os.path.join(ROOT, "models", "tiny", "conv_basic.onnx")
    if not os.path.exists(src):
        sys.exit(f"{src} missing: run models/tiny/make_tiny.py first")
    shutil.copyfile(src, os.path.join(args.out, "valid_small.onnx"))
    print(f"valid_small.onnx                 {os.path.getsize(src):6d} B  (copy of models/tiny/conv_basic.onnx)")


if __name__ == "__main__":
    sys.exit(main())
