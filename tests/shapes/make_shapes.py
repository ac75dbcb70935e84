#!/usr/bin/python3
"""Shape references: ONNX shape inference results for the committed models.

Runs onnx.shape_inference.infer_shapes on every committed .onnx under models/
(models/fashion/*, models/tiny/*, models/tv/squeezenet1_1.onnx; with --all
also every other models/tv/*.onnx present) and writes, for each model,
tests/shapes/<model path relative to the repo root, '/' replaced by '__'>.shapes.tsv
e.g. tests/shapes/models__tiny__conv_basic.onnx.shapes.tsv, with one line per
tensor that has a known tensor type in the inferred model (graph inputs,
value_info, graph outputs, initializers), sorted by tensor name (byte order):

    <tensor name>\t<elem_type as the integer TensorProto.DataType>\t<dims>

<dims>: dims joined by 'x' (1x3x224x224); '-' for rank 0; '?' for an unknown
or symbolic dim (?x3x8x8); '*' when the rank is unknown.

For models whose graph inputs have a symbolic dim N (models/tiny/dynamic_batch.onnx)
a second file <...>.onnx__fixed_N1.shapes.tsv is written, inferred after
replacing N by 1 in the graph inputs (inference then also makes the
declared [N,...] outputs [1,...]).

Re-run:  /usr/bin/python3 tests/shapes/make_shapes.py [--all]
"""
import argparse
import glob
import os
import sys

import onnx
from onnx import shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def committed_models(all_tv):
    paths = sorted(glob.glob(os.path.join(ROOT, "models", "fashion", "*.onnx")))
    paths += sorted(glob.glob(os.path.join(ROOT, "models", "tiny", "*.onnx")))
    if all_tv:
        paths += sorted(glob.glob(os.path.join(ROOT, "models", "tv", "*.onnx")))
    else:
        paths.append(os.path.join(ROOT, "models", "tv", "squeezenet1_1.onnx"))
    return paths


def dims_str(tt):
    if not tt.HasField("shape"):
        return "*"
    ds = tt.shape.dim
    if len(ds) == 0:
        return "-"
    return "x".join(str(d.dim_value) if d.HasField("dim_value") else "?" for d in ds)


def table(m):
    rows = {}
    g = m.graph

    def add(name, elem, dims):
        if not name or elem == 0:
            return
        prev = rows.get(name)
        assert prev is None or prev == (elem, dims) or dims == "*" or prev[1] == "*", (name, prev, elem, dims)
        if prev is None or prev[1] == "*":
            rows[name] = (elem, dims)

    for v in list(g.input) + list(g.value_info) + list(g.output):
        if v.type.HasField("tensor_type"):
            add(v.name, v.type.tensor_type.elem_type, dims_str(v.type.tensor_type))
    for t in g.initializer:
        add(t.name, t.data_type, "x".join(str(d) for d in t.dims) if len(t.dims) else "-")
    keys = sorted(rows, key=lambda s: s.encode())
    return "".join(f"{k}\t{rows[k][0]}\t{rows[k][1]}\n" for k in keys)


def infer(m, what):
    try:
        return shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    except Exception as e:  # noqa: BLE001 - keep going, but say so
        print(f"warning: {what}: strict shape inference failed ({str(e).splitlines()[0]}); "
              f"falling back to non-strict inference", file=sys.stderr)
        return shape_inference.infer_shapes(m)


def fix_dim(m, param, value):
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    n = 0
    for v in m2.graph.input:
        for d in v.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param == param:
                d.dim_value = value  # clears dim_param (oneof)
                n += 1
    return m2, n


def write(name, text):
    with open(os.path.join(HERE, name), "w", newline="\n") as f:
        f.write(text)
    print(f"{name}  ({text.count(chr(10))} tensors)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="also every other models/tv/*.onnx present")
    args = ap.parse_args()
    for path in committed_models(args.all):
        if not os.path.exists(path):
            sys.exit(f"{path} missing: generate it first")
        rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
        base = rel.replace("/", "__")
        m = onnx.load(path, load_external_data=False)  # shapes only; dims are in the protobuf
        write(base + ".shapes.tsv", table(infer(m, rel)))
        params = {d.dim_param for v in m.graph.input for d in v.type.tensor_type.shape.dim
                  if d.HasField("dim_param")}
        if "N" in params:
            m1, n = fix_dim(m, "N", 1)
            assert n > 0
            write(base + "__fixed_N1.shapes.tsv", table(infer(m1, rel + " (N=1)")))


if __name__ == "__main__":
    sys.exit(main())
