#!/usr/bin/python3
"""Train a small CNN on Fashion-MNIST and export it to ONNX, with reference data.

Reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*.gz,
idx format), trains with torch.manual_seed(0) on 2 threads (a few minutes),
and writes into models/fashion/ (or --out):

  fashion_cnn.onnx        opset 13, input `input` [1,1,28,28] float32, output
                          `logits` [1,10]; BatchNormalization kept as nodes;
                          Conv/BN/Relu blocks, a residual Add, an inception block
                          (3 sibling 1x1 convs reading one tensor, joined by
                          Concat), MaxPool, GlobalAveragePool, Flatten, Gemm.
  calib_500.npy           500 TRAIN images (fixed-seed choice), float32, 500x1x28x28
  test_1000.npy           first 1000 TEST images, float32, 1000x1x28x28
  test_labels_1000.npy    their labels, int64, 1000
  test_logits_1000.npy    PyTorch float32 eval-mode logits for them, 1000x10
  accuracy.txt            PyTorch top-1 on those 1000 and on the full 10k test set

Images are normalised as (x/255 - 0.2860)/0.3530.

Re-run:  /usr/bin/python3 models/fashion/make_fashion.py [--out DIR] [--epochs N]
(needs Debian packages python3-torch python3-onnx python3-numpy libblas3
dataset-fashion-mnist; about 6 minutes on 2 idle cores)

Determinism: the output is byte-identical from run to run, but the float
results depend on the BLAS behind torch's nn.Linear (the reference BLAS and
OpenBLAS round differently, and the difference grows through training). So
the script re-executes itself with LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas,
which makes torch use the reference BLAS (package libblas3) whichever
libblas.so.3 alternative is selected; the committed files were made that way.
"""
import argparse
import collections
import gzip
import io
import os
import sys
import time

REF_BLAS_DIR = "/usr/lib/x86_64-linux-gnu/blas"
if os.path.exists(os.path.join(REF_BLAS_DIR, "libblas.so.3")) and os.environ.get("OQC_REF_BLAS") != "1":
    _old = os.environ.get("LD_LIBRARY_PATH")
    _env = dict(os.environ, OQC_REF_BLAS="1",
                LD_LIBRARY_PATH=REF_BLAS_DIR + (":" + _old if _old else ""))
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], _env)

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as Fn

DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530
HERE = os.path.dirname(os.path.abspath(__file__))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    assert magic >> 8 == 0x08, f"{path}: not unsigned-byte idx data"
    ndim = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    assert arr.size == int(np.prod(dims)), path
    return arr.reshape(dims)


def load(split):
    pre = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(DATA, f"{pre}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(DATA, f"{pre}-labels-idx1-ubyte.gz"))
    x = ((x.astype(np.float32) / np.float32(255.0) - np.float32(MEAN)) / np.float32(STD)).astype(np.float32)
    return np.ascontiguousarray(x[:, None, :, :]), y.astype(np.int64)


def cbr(cin, cout, k):
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = cbr(c, c, 3)
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        return Fn.relu(x + self.bn(self.conv(self.a(x))))


class Inception(nn.Module):
    """Three sibling 1x1 convs read the same tensor; branch outputs are concatenated."""

    def __init__(self, cin):
        super().__init__()
        self.b1 = cbr(cin, 16, 1)
        self.b2 = nn.Sequential(cbr(cin, 16, 1), cbr(16, 24, 3))
        self.b3 = cbr(cin, 8, 1)

    def forward(self, x):
        return torch.cat([self.b1(x), self.b2(x), self.b3(x)], dim=1)


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(cbr(1, 16, 3), cbr(16, 32, 3))
        self.pool1 = nn.MaxPool2d(2)          # 28 -> 14
        self.res = Residual(32)
        self.incep = Inception(32)            # -> 48 channels
        self.pool2 = nn.MaxPool2d(2)          # 14 -> 7
        self.head = cbr(48, 64, 3)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool1(self.stem(x))
        x = self.res(x)
        x = self.pool2(self.incep(x))
        x = self.gap(self.head(x))
        return self.fc(torch.flatten(x, 1))


def evaluate(model, x, y, bs=500):
    model.eval()
    outs = []
    with torch.no_grad():
        for i in range(0, len(x), bs):
            outs.append(model(torch.from_numpy(x[i:i + bs])).numpy())
    logits = np.concatenate(outs).astype(np.float32)
    return logits, float((logits.argmax(1) == y).mean())


def inline_identity_initializers(m):
    """torch dedups equal initializers into Identity nodes; turn them back into initializers."""
    inits = {t.name: t for t in m.graph.initializer}
    keep = []
    for n in m.graph.node:
        if n.op_type == "Identity" and n.input[0] in inits:
            t = onnx.TensorProto()
            t.CopyFrom(inits[n.input[0]])
            t.name = n.output[0]
            m.graph.initializer.append(t)
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


def export(model, path):
    model.eval()
    f = io.BytesIO()
    # training=PRESERVE with the model in eval mode keeps BatchNormalization as
    # nodes (TrainingMode.EVAL always folds BN into the preceding Conv).
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), f, opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                      output_names=["logits"])
    m = inline_identity_initializers(onnx.load_from_string(f.getvalue()))
    onnx.checker.check_model(m)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    for need in ("Conv", "BatchNormalization", "Relu", "Add", "Concat", "MaxPool", "GlobalAveragePool",
                 "Flatten", "Gemm"):
        assert ops[need] > 0, (need, ops)
    assert ops["BatchNormalization"] == sum(isinstance(x, nn.BatchNorm2d) for x in model.modules())
    with open(path, "wb") as fh:
        fh.write(m.SerializeToString())
    return ops


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--epochs", type=int, default=4)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with open("/proc/self/maps") as f:
        blas = sorted({line.split()[-1] for line in f if "libblas.so" in line})
    print(f"BLAS: {', '.join(blas) or 'none mapped'}")
    if not any(b.startswith(REF_BLAS_DIR + "/") for b in blas):
        print("warning: not using the reference BLAS (libblas3); the results will differ from the committed "
              "ones", file=sys.stderr)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)

    xtr, ytr = load("train")
    xte, yte = load("test")
    model = FashionCNN()
    nparams = sum(p.numel() for p in model.parameters())
    print(f"params {nparams}")
    assert nparams < 200_000

    g = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    bs = 128
    steps = args.epochs * ((len(xtr) + bs - 1) // bs)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    for ep in range(args.epochs):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(xtr), generator=g)
        tot = 0.0
        for i in range(0, len(xtr), bs):
            idx = perm[i:i + bs]
            xb = xt[idx]
            # light augmentation: random horizontal flip
            flip = torch.rand(len(idx), generator=g) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = Fn.cross_entropy(model(xb), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += loss.item() * len(idx)
        _, acc = evaluate(model, xte, yte)
        print(f"epoch {ep + 1}: loss {tot / len(xtr):.4f} test acc {acc:.4f} ({time.time() - t0:.0f}s)",
              flush=True)

    model.eval()
    logits10k, acc10k = evaluate(model, xte, yte)
    x1k, y1k = xte[:1000], yte[:1000]
    logits1k, acc1k = evaluate(model, x1k, y1k)
    print(f"test_1000_top1 {acc1k:.4f}  test_10k_top1 {acc10k:.4f}")
    assert acc10k >= 0.88, acc10k

    rng = np.random.default_rng(0)
    calib_idx = np.sort(rng.choice(len(xtr), size=500, replace=False))
    np.save(os.path.join(args.out, "calib_500.npy"), np.ascontiguousarray(xtr[calib_idx], dtype="<f4"))
    np.save(os.path.join(args.out, "test_1000.npy"), np.ascontiguousarray(x1k, dtype="<f4"))
    np.save(os.path.join(args.out, "test_labels_1000.npy"), np.ascontiguousarray(y1k, dtype="<i8"))
    np.save(os.path.join(args.out, "test_logits_1000.npy"), np.ascontiguousarray(logits1k, dtype="<f4"))
    with open(os.path.join(args.out, "accuracy.txt"), "w") as f:
        f.write(f"test_1000_top1 {acc1k:.4f}\ntest_10k_top1 {acc10k:.4f}\n")

    ops = export(model, os.path.join(args.out, "fashion_cnn.onnx"))
    print("ops:", dict(sorted(ops.items())))


if __name__ == "__main__":
    sys.exit(main())
