"""make_big_model.py - writes a synthetic ~100 MB ONNX model for the load benchmark.

A chain of LAYERS MatMul + Relu layers on a [1, N] input, each with its own N x N
float32 weight (default 6 x 2048 x 2048 x 4 bytes = 96 MiB of initializers), stored
inline in the protobuf (raw_data), the way torch.onnx.export writes models under 2 GB.
The weights are seeded pseudo-random values so the file does not compress to nothing.

Usage: /usr/bin/python3 bench/make_big_model.py OUT.onnx [--layers 6] [--n 2048]
Needs onnx and numpy (Debian python3-onnx, python3-numpy); bench/run.sh skips the
benchmark with a note when they are missing.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--n", type=int, default=2048)
    args = ap.parse_args()
    n = args.n
    rng = np.random.default_rng(20240101)
    inits, nodes = [], []
    x = "input"
    for i in range(args.layers):
        w = (rng.standard_normal((n, n), dtype=np.float32) / np.sqrt(n)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name=f"w{i}"))
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"mm{i}"], name=f"matmul{i}"))
        y = "output" if i == args.layers - 1 else f"relu{i}"
        nodes.append(helper.make_node("Relu", [f"mm{i}"], [y], name=f"relu{i}"))
        x = y
    graph = helper.make_graph(
        nodes, "big_matmul_chain",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, n])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, n])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="oqc bench/make_big_model.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, args.out)


if __name__ == "__main__":
    main()
