// ort_check_fused.js - does ONNX Runtime run oqc's QDQ export (`oqc export-qdq`) with
// integer kernels?  A benchmark helper, not a test.
//
// Usage: node bench/ort_check_fused.js MODEL_QDQ.onnx [--save OPT.onnx]
//                                      [--data X.npy --ref REF.npy [--limit N]]
//
// Creates a session (CPU, graphOptimizationLevel 'all', one intra-op and one inter-op
// thread) with optimizedModelFilePath set, so ONNX Runtime writes the graph it actually
// runs, then decodes that file with a minimal protobuf reader (ModelProto.graph ->
// GraphProto.node -> NodeProto.op_type/domain; nothing else is parsed) and counts the
// operators.  Integer kernels: QLinearConv, QLinearMatMul, QGemm, QLinearAdd,
// QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool, ...; float compute: Conv
// (any domain: ORT's NCHWc layout makes float convs com.microsoft.nchwc Conv), Gemm,
// MatMul, FusedConv, FusedGemm, Add.  Prints
//   OPS model=PATH QLinearConv=N QGemm=N ... Conv=N ...    (every op type, sorted)
//   FUSED model=PATH int8_compute=N float_compute=N q=N dq=N
// With --data X.npy (float32, samples on the first axis) and --ref REF.npy (float32
// [S, n]: what `oqc eval --save-int8` writes), it runs the first N samples (--limit,
// default all) and compares ORT's first output with oqc's INT8 output:
//   AGREE model=PATH samples=S argmax_agree=F max_abs_err=E rel_max_err=R
// (rel_max_err = max |ort - oqc| / max |oqc|).
//
// onnxruntime-node is looked up in ORT_NODE_MODULES (as bench/ort_latency.js).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const { readNpy } = require('./npy.js');

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
  const o = { model: null, save: null, data: null, ref: null, limit: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i], v = argv[i + 1];
    if (a === '--save' && v) { o.save = v; i++; }
    else if (a === '--data' && v) { o.data = v; i++; }
    else if (a === '--ref' && v) { o.ref = v; i++; }
    else if (a === '--limit' && v) { o.limit = Number(v); i++; }
    else if (!a.startsWith('-') && !o.model) o.model = a;
    else throw new Error(`unknown argument ${a}`);
  }
  if (!o.model || (!!o.data !== !!o.ref)) {
    throw new Error('usage: node bench/ort_check_fused.js MODEL_QDQ.onnx [--save OPT.onnx] [--data X.npy --ref REF.npy [--limit N]]');
  }
  return o;
}

// ---- minimal protobuf wire-format reader: just enough for op_type and domain.
function varint(buf, pos) {
  let v = 0, mul = 1, b;
  do {
    if (pos.p >= buf.length) throw new Error('truncated varint');
    b = buf[pos.p++];
    v += (b & 0x7f) * mul;
    mul *= 128;
  } while (b & 0x80);
  return v;
}

// Calls fn(field, wiretype, start, end) for every field of the message in buf[start, end);
// start/end are the payload bounds of length-delimited fields.
function fields(buf, start, end, fn) {
  const pos = { p: start };
  while (pos.p < end) {
    const tag = varint(buf, pos);
    const field = Math.floor(tag / 8), wt = tag & 7;
    if (wt === 0) { varint(buf, pos); fn(field, wt, 0, 0); }
    else if (wt === 1) pos.p += 8;
    else if (wt === 5) pos.p += 4;
    else if (wt === 2) {
      const len = varint(buf, pos);
      fn(field, wt, pos.p, pos.p + len);
      pos.p += len;
    } else throw new Error(`unsupported wire type ${wt}`);
  }
}

// {"domain:op_type" or "op_type": count} of the main graph of an ONNX file.
function countOps(file) {
  const buf = fs.readFileSync(file);
  const counts = {};
  fields(buf, 0, buf.length, (f, wt, s, e) => {
    if (f !== 7 || wt !== 2) return;                    // ModelProto.graph
    fields(buf, s, e, (gf, gwt, gs, ge) => {
      if (gf !== 1 || gwt !== 2) return;                // GraphProto.node
      let op = '', domain = '';
      fields(buf, gs, ge, (nf, nwt, ns, ne) => {
        if (nwt !== 2) return;
        if (nf === 4) op = buf.toString('utf8', ns, ne);       // NodeProto.op_type
        else if (nf === 7) domain = buf.toString('utf8', ns, ne); // NodeProto.domain
      });
      const key = domain && domain !== 'ai.onnx' ? `${domain}:${op}` : op;
      counts[key] = (counts[key] || 0) + 1;
    });
  });
  return counts;
}

const INT8_OPS = /^(com\.microsoft:)?(QLinear\w+|QGemm|MatMulInteger\w*|ConvInteger|DynamicQuantize\w*)$/;
const FLOAT_OPS = /(^|:)(Conv|FusedConv|Gemm|FusedGemm|MatMul|FusedMatMul|Add|Sum|AveragePool|GlobalAveragePool)$/;

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(e.message);
    process.exit(2);
  }
  const ort = loadOrt();
  const save = o.save || path.join(os.tmpdir(), `ort_opt_${process.pid}.onnx`);
  const session = await ort.InferenceSession.create(o.model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    optimizedModelFilePath: save,
  });
  const counts = countOps(save);
  if (!o.save) fs.unlinkSync(save);
  const keys = Object.keys(counts).sort();
  let int8 = 0, float = 0;
  for (const k of keys) {
    if (INT8_OPS.test(k)) int8 += counts[k];
    else if (FLOAT_OPS.test(k)) float += counts[k];
  }
  const q = (counts.QuantizeLinear || 0), dq = (counts.DequantizeLinear || 0);
  console.log(`OPS model=${o.model} ${keys.map((k) => `${k}=${counts[k]}`).join(' ')}`);
  console.log(`FUSED model=${o.model} int8_compute=${int8} float_compute=${float} q=${q} dq=${dq}`);

  if (o.data) {
    const x = readNpy(o.data), ref = readNpy(o.ref);
    const name = session.inputNames[0];
    const meta = session.inputMetadata ? session.inputMetadata[0] : null;
    const dims = meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1)) : null;
    if (!dims) throw new Error(`${o.model}: cannot read the shape of input ${name}`);
    const per = dims.reduce((a, b) => a * b, 1);
    const samples = Math.floor(x.data.length / per);
    const outPer = ref.data.length / ref.shape[0];
    const n = Math.min(samples, ref.shape[0], o.limit > 0 ? o.limit : Infinity);
    let agree = 0, maxErr = 0, maxRef = 0;
    for (let s = 0; s < n; s++) {
      const feeds = { [name]: new ort.Tensor('float32', x.data.slice(s * per, (s + 1) * per), dims) };
      const res = await session.run(feeds);
      const y = res[session.outputNames[0]].data;
      if (y.length !== outPer) throw new Error(`output has ${y.length} values, the reference ${outPer}`);
      const r = ref.data.subarray(s * outPer, (s + 1) * outPer);
      let ay = 0, ar = 0;
      for (let i = 0; i < outPer; i++) {
        if (y[i] > y[ay]) ay = i;
        if (r[i] > r[ar]) ar = i;
        maxErr = Math.max(maxErr, Math.abs(y[i] - r[i]));
        maxRef = Math.max(maxRef, Math.abs(r[i]));
      }
      agree += ay === ar;
    }
    console.log(`AGREE model=${o.model} samples=${n} argmax_agree=${(agree / n).toFixed(4)} ` +
                `max_abs_err=${maxErr.toPrecision(4)} rel_max_err=${(maxErr / (maxRef || 1)).toPrecision(4)}`);
  }
  if (session.release) await session.release();
}

main().catch((e) => {
  console.error(`ort_check_fused: ${e && e.message ? e.message : e}`);
  process.exit(1);
});
