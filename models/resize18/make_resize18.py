#!/usr/bin/python3
"""Resize forms of opsets 18 and 19 that Debian's ONNX (1.12) cannot check and its
node-test data does not cover, with ONNX Runtime's outputs as references.

Makes models/resize18/<name>.onnx, the input x.npy ([1, 2, 5, 6], seeded) and
<name>_ort.npy, ONNX Runtime's output on it (onnxruntime-node, run once here; the
tests only read the .npy files):
  axes_sizes    opset 18, linear, axes [2, 3], sizes [9, 4]
  axes_scales   opset 18, cubic, axes [3], scales [1.5]
  keep_larger   opset 18, nearest, axes [2, 3], sizes [10, 20], not_larger (-> 10 x 12)
  hps_linear    opset 19, linear, half_pixel_symmetric, scales [1, 1, 1.7, 0.6]
  hps_nearest   opset 19, nearest, half_pixel_symmetric, scales [1, 1, 2.5, 1.5]

Re-run: /usr/bin/python3 models/resize18/make_resize18.py (needs node and
onnxruntime-node at ORT, below).
"""
import os
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.dirname(os.path.abspath(__file__))
ORT = "/work/ort/node_modules/onnxruntime-node"
RUN = """
const ort = require(process.argv[1]); const fs = require('fs');
(async () => {
  const s = await ort.InferenceSession.create(process.argv[2]);
  const b = fs.readFileSync(process.argv[3]);
  const x = new ort.Tensor('float32', new Float32Array(b.buffer, b.byteOffset, b.length / 4), [1, 2, 5, 6]);
  const y = (await s.run({x}))[s.outputNames[0]];
  fs.writeFileSync(process.argv[4], Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength));
  console.log(y.dims.join(','));
})();
"""
E = numpy_helper.from_array(np.array([], np.float32), "roi")
MODELS = [
    ("axes_sizes", 18, dict(mode="linear", axes=[2, 3]), "sizes", [9, 4]),
    ("axes_scales", 18, dict(mode="cubic", axes=[3]), "scales", [1.5]),
    ("keep_larger", 18, dict(mode="nearest", axes=[2, 3], keep_aspect_ratio_policy="not_larger"),
     "sizes", [10, 20]),
    ("hps_linear", 19, dict(mode="linear", coordinate_transformation_mode="half_pixel_symmetric"),
     "scales", [1, 1, 1.7, 0.6]),
    ("hps_nearest", 19, dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric"),
     "scales", [1, 1, 2.5, 1.5]),
]


def main():
    x = np.random.RandomState(3).standard_normal([1, 2, 5, 6]).astype(np.float32)
    np.save(os.path.join(OUT, "x.npy"), x)
    raw = os.path.join(OUT, "x.bin.tmp")
    x.tofile(raw)
    for name, opset, attrs, kind, vals in MODELS:
        if kind == "sizes":
            c, ins = numpy_helper.from_array(np.array(vals, np.int64), "sizes"), ["x", "roi", "", "sizes"]
        else:
            c, ins = numpy_helper.from_array(np.array(vals, np.float32), "scales"), ["x", "roi", "scales"]
        n = helper.make_node("Resize", ins, ["y"], name="Resize_0", **attrs)
        g = helper.make_graph([n], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [E, c])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="oqc-make_resize18")
        m.ir_version = 8
        path = os.path.join(OUT, name + ".onnx")
        onnx.save(m, path)
        ref = os.path.join(OUT, name + ".tmp")
        dims = subprocess.check_output(["node", "-e", RUN, ORT, path, raw, ref]).decode().strip()
        y = np.fromfile(ref, np.float32).reshape([int(d) for d in dims.split(",")])
        os.remove(ref)
        np.save(os.path.join(OUT, name + "_ort.npy"), y)
        print(name, "opset", opset, "->", y.shape)
    os.remove(raw)


if __name__ == "__main__":
    main()
