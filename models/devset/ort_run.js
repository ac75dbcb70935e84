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

const fs = require('fs');
const path = require('path');

const ortDir = path.resolve(process.env.ORT_NODE_MODULES || '/work/ort/node_modules',
                            'onnxruntime-node');
const ort = require(ortDir);

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const hl = buf[6] === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = buf[6] === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hl);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${file}: expected little-endian float32 in C order`);
  }
  const m = header.match(/'shape':\s*\(([^)]*)\)/);
  const shape = m[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = buf.readFloatLE(off + hl + 4 * i);
  return { shape, data };
}

function writeNpy(file, shape, data) {
  let h = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')},), }`;
  while ((10 + h.length + 1) % 64) h += ' ';
  h += '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(h.length, 8);
  const body = Buffer.alloc(4 * data.length);
  for (let i = 0; i < data.length; i++) body.writeFloatLE(data[i], 4 * i);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(h, 'latin1'), body]));
}

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
