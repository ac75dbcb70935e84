// ort_latency.js - inference latency of ONNX Runtime (onnxruntime-node) on one model, the
// reference oqc is compared with: an FP32 model, or oqc's QDQ export of it (`oqc
// export-qdq`: float input and output, ORT fuses the Q/DQ nodes into its integer kernels;
// bench/ort_check_fused.js shows which).  A benchmark, not a test.
//
// Usage: node bench/ort_latency.js MODEL [--threads 1,2] [--runs 20] [--warmup 3]
//                                  [--min-ms 1000]
//
// onnxruntime-node is looked up in ORT_NODE_MODULES (bench/run.sh installs it with
// `npm install --ignore-scripts onnxruntime-node` into build/bench/ort/node_modules; the
// CPU binding ships inside the package, the postinstall script only fetches CUDA
// binaries) and then on the normal require path.
//
// Each thread count gets its own session: intraOpNumThreads = T, interOpNumThreads = 1,
// sequential execution, graphOptimizationLevel 'all'.  The input is the same kind of
// deterministic image-like pattern fp32_latency.c feeds (not bit-identical: the timing
// of dense FP32 and INT8 kernels does not depend on the values).  Prints human-readable lines
// and one machine-readable line per thread count:
//   RESULT model=PATH threads=T runs=R median_ms=X min_ms=Y
'use strict';

const path = require('path');

function loadOrt() {
  const dirs = [];
  if (process.env.ORT_NODE_MODULES) dirs.push(path.resolve(process.env.ORT_NODE_MODULES, 'onnxruntime-node'));
  dirs.push('onnxruntime-node');
  let lastErr;
  for (const d of dirs) {
    try {
      return require(d);
    } catch (e) {
      lastErr = e;
    }
  }
  throw lastErr;
}

function parseArgs(argv) {
  const o = { model: null, threads: [1, 2], runs: 20, warmup: 3, minMs: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    if (a === '--threads' && v) { o.threads = v.split(',').map(Number); i++; }
    else if (a === '--runs' && v) { o.runs = Number(v); i++; }
    else if (a === '--warmup' && v) { o.warmup = Number(v); i++; }
    else if (a === '--min-ms' && v) { o.minMs = Number(v); i++; }
    else if (!a.startsWith('-') && !o.model) o.model = a;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model || o.threads.some((t) => !(t >= 1)) || !(o.runs >= 1)) {
    throw new Error('usage: node bench/ort_latency.js MODEL [--threads 1,2] [--runs N] [--warmup N] [--min-ms MS]');
  }
  return o;
}

// Image-like pattern: per-channel gradient plus LCG noise (as fp32_latency.c).
function fillInput(dims, seed) {
  const n = dims.reduce((a, b) => a * b, 1);
  const w = dims.length >= 1 ? dims[dims.length - 1] || 1 : 1;
  const h = dims.length >= 2 ? dims[dims.length - 2] || 1 : 1;
  const f = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    const x = i % w, y = Math.floor(i / w) % h, c = Math.floor(i / (w * h));
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const noise = (s >>> 8) / 16777216 - 0.5;
    const grad = (x + y + 17 * c) / (w + h + 1) - 0.5;
    f[i] = 1.6 * grad + 0.6 * noise;
  }
  return f;
}

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

async function benchThreads(ort, o, T) {
  const session = await ort.InferenceSession.create(o.model, {
    intraOpNumThreads: T,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const feeds = {};
  session.inputNames.forEach((name, i) => {
    const meta = session.inputMetadata ? session.inputMetadata[i] : null;
    let dims = meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1)) : null;
    if (!dims) throw new Error(`${o.model}: cannot read the shape of input ${name}`);
    feeds[name] = new ort.Tensor('float32', fillInput(dims, 12345 + i), dims);
  });
  for (let i = 0; i < o.warmup; i++) await session.run(feeds);
  const ms = [];
  let total = 0;
  const cap = o.runs * 10;
  while (ms.length < o.runs || (total < o.minMs && ms.length < cap)) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    const dt = Number(process.hrtime.bigint() - t0) / 1e6;
    ms.push(dt);
    total += dt;
  }
  const med = median(ms), mn = Math.min(...ms);
  console.log(`  threads=${T}: median ${med.toFixed(3)} ms, min ${mn.toFixed(3)} ms over ${ms.length} runs`);
  console.log(`RESULT model=${o.model} threads=${T} runs=${ms.length} median_ms=${med.toFixed(3)} min_ms=${mn.toFixed(3)}`);
  if (session.release) await session.release();
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(e.message);
    process.exit(2);
  }
  const ort = loadOrt();
  const ver = ort.env && ort.env.versions ? ort.env.versions.node : '?';
  console.log(`${o.model}: onnxruntime-node ${ver}`);
  for (const T of o.threads) await benchThreads(ort, o, T);
}

main().catch((e) => {
  console.error(`ort_latency: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
