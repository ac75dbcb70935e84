// npy.js - float32 .npy reading and writing for the benchmark helpers (node; no
// dependencies).  Only what oqc and numpy write for these tools: little-endian float32
// in C order, format version 1 or 2.  The data are copied into a fresh Float32Array, so
// the header length need not be a multiple of 4 (the host is little-endian: x86, Arm).
'use strict';

const fs = require('fs');

// readNpy(file) -> { shape: [..], data: Float32Array }
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
  const data = new Float32Array(n);
  new Uint8Array(data.buffer).set(buf.subarray(start, start + 4 * n));
  return { shape, data };
}

// writeNpy(file, shape, data): a version-1 .npy, written to FILE.tmp and renamed, so
// a failure leaves nothing at FILE.
function writeNpy(file, shape, data) {
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file + '.tmp', Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(file + '.tmp', file);
}

module.exports = { readNpy, writeNpy };
