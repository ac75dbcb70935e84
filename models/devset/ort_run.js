// ort_run.js - ONNX Runtime's outputs of a model on stacked samples, as a float32 .npy:
// the independent references of models/devset/ (made once, committed; see README.md).
//
// Usage: node models/devset/ort_run.js MODEL.onnx X.npy OUT.npy
//
// X.npy: float32, C order, samples stacked on axis 0, each of the model input's shape
// with batch 1.  Each sample runs alone (batch 1) through the model's first output;
// OUT.npy is float32 [S, elements of that output].  Session: CPU, one intra-op and one
// inter-op thread, graph optimisation level 'all' (so ONNX Runtime fuses the QDQ pairs
// of an `oqc export-qdq` model into its integer kernels QLinearConv, QGemm,
// QLinearAdd, ...).  onnxruntime-node is required from ORT_NODE_MODULES
// (default /work/ort/node_modules).
'use strict';

const path = require('path');
const { readNpy, writeNpy } = require('../../bench/npy.js');   // the project's .npy code

const ortDir = path.resolve(process.env.ORT_NODE_MODULES || '/work/ort/node_modules',
                            'onnxruntime-node');
const ort = require(ortDir);

async function main() {
  const [model, xfile, out] = process.argv.slice(2);
  if (!out) throw new Error('usage: node ort_run.js MODEL.onnx X.npy OUT.npy');
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const x = readNpy(xfile);
  const dims = [1, ...x.shape.slice(1)];
  const per = dims.reduce((a, b) => a * b, 1);
  const name = session.inputNames[0];
  const ys = [];
  for (let s = 0; s < x.shape[0]; s++) {
    const feeds = { [name]: new ort.Tensor('float32', x.data.slice(s * per, (s + 1) * per), dims) };
    const res = await session.run(feeds);
    ys.push(res[session.outputNames[0]].data);
  }
  const n = ys[0].length;
  const all = new Float32Array(ys.length * n);
  ys.forEach((y, s) => all.set(y, s * n));
  writeNpy(out, [ys.length, n], all);
  console.log(`${model}: ${ys.length} samples x ${n} outputs -> ${out} (onnxruntime-node ${ort.env.versions ? ort.env.versions.common : ''})`);
}

main().catch((e) => {
  console.error(`ort_run: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
