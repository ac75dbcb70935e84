// ort_run.js - ONNX Runtime's outputs for `make accuracy` (a benchmark helper, not a test).
//
// Usage: node bench/accuracy/ort_run.js MODEL.onnx X.npy OUT.npy
//
// Runs MODEL with ONNX Runtime (CPU execution provider, graph optimization level 'all',
// one intra-op thread) on every sample of X.npy (float32, C order, samples on the first
// axis: [S, ...one input] with the model's batch of 1, or [S*B, ...] stacked batches)
// and writes the first output of every sample as float32 [S, elements] to OUT.npy, the
// layout `oqc eval --save-int8` writes.  A model whose input has a fixed batch B > 1
// (the devset's ResNet-8 INT8 original: 16) is fed B samples at a time, the last group
// padded with zeros (samples do not interact; padded outputs are dropped).  OUT.npy is
// written to OUT.npy.tmp and renamed, so a failed run leaves nothing behind.
// onnxruntime-node is taken from ORT_NODE_MODULES/onnxruntime-node.
'use strict';

const fs = require('fs');
const path = require('path');

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hl = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hl);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header)) {
    throw new Error(`${file}: expected little-endian float32 in C order`);
  }
  const m = header.match(/'shape':\s*\(([^)]*)\)/);
  const shape = m[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  const start = off + hl;
  if (buf.length < start + 4 * n) throw new Error(`${file}: truncated`);
  // Copy into a fresh (aligned) buffer: the header length need not be a multiple of 4.
  const data = new Float32Array(n);
  new Uint8Array(data.buffer).set(buf.subarray(start, start + 4 * n));
  return { shape, data };
}

function writeNpy(file, rows, cols, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows}, ${cols}), }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file + '.tmp', Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(file + '.tmp', file);
}

async function main() {
  const [model, xfile, outfile] = process.argv.slice(2);
  if (!outfile) {
    console.error('usage: node bench/accuracy/ort_run.js MODEL.onnx X.npy OUT.npy');
    process.exit(2);
  }
  const ort = require(path.resolve(process.env.ORT_NODE_MODULES || '.', 'onnxruntime-node'));
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
  const meta = session.inputMetadata[0];
  const ishape = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const batch = ishape[0];
  const one = ishape.slice(1).reduce((a, b) => a * b, 1);
  const x = readNpy(xfile);
  if (x.data.length % one) {
    throw new Error(`${xfile}: ${x.data.length} values are not whole samples of ${one} (${model} input ${JSON.stringify(meta.shape)})`);
  }
  const samples = x.data.length / one;
  let out = null;
  let per = 0;
  for (let s = 0; s < samples; s += batch) {
    const feed = new Float32Array(batch * one);
    const n = Math.min(batch, samples - s);
    feed.set(x.data.subarray(s * one, (s + n) * one));
    const r = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', feed, ishape) });
    const y = r[session.outputNames[0]].data;
    if (!out) {
      per = y.length / batch;
      out = new Float32Array(samples * per);
    }
    out.set(y.subarray(0, n * per), s * per);
  }
  writeNpy(outfile, samples, per, out);
  console.log(`ort_run: ${path.basename(model)}: ${samples} samples -> ${outfile} [${samples}, ${per}]`);
}

main().catch((e) => {
  console.error(`ort_run: ${e.message || e}`);
  process.exit(1);
});
