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

const path = require('path');
const { readNpy, writeNpy } = require('../npy.js');

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
  writeNpy(outfile, [samples, per], out);
  console.log(`ort_run: ${path.basename(model)}: ${samples} samples -> ${outfile} [${samples}, ${per}]`);
}

main().catch((e) => {
  console.error(`ort_run: ${e.message || e}`);
  process.exit(1);
});
