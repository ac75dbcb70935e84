#!/usr/bin/python3
"""Export torchvision CNNs, briefly trained on Fashion-MNIST, to ONNX, with reference data.

For each of resnet18, mobilenet_v2, squeezenet1_1, googlenet (torchvision's architectures
as they are, 1000 outputs; googlenet with aux_logits=False, transform_input=False,
init_weights=True), input 1x3x224x224:

  * Training.  No pretrained weights can be downloaded here, and random-weight networks
    are chaotic: rounding the input to 8 bits alone took random mobilenet_v2's output
    down to ~6 dB SQNR, so they could not say anything about quantization.  So each
    network is trained for a few minutes on Debian's dataset-fashion-mnist (the only
    real image set on the machine): grey images replicated to 3 channels, ImageNet-
    normalised, labels 0-9 of the 1000 outputs; Adam with a one-cycle schedule (max lr
    2e-3) at 64x64 (STEPS steps of 32, random horizontal flips), then FT_STEPS steps of
    16 at 224x224 (lr 2e-4): training at 64 alone gives ~15-20% at 224.  Then every
    BatchNorm's running statistics are recomputed at 224 (cumulative average over 200
    training images).  Accuracy at 224 on the first 1000 test images: about 0.55-0.70
    (printed).  Such networks amplify input noise like real ones do (input rounding
    alone: 27-55 dB).  The classifier keeps its 1000 outputs (torchvision's architecture,
    the benchmark's workload); the rows of logits 10-999, which no class trained, are
    zeroed, so those outputs are exactly 0 in float and in INT8 and accuracy measures
    (centered SQNR) see the 10 real logits only.
  * The outputs are checked to depend on the input: over 8 image-like inputs, mean over
    the 10 trained logits of (std across inputs) / (std of those logits) > 0.1.

Writes to --out (default models/tv/):
  <name>.onnx        opset 13, input `input` [1,3,224,224], output `output`
                     [1,1000], BatchNormalization kept as nodes, fixed batch 1
  <name>_in1.npy     1x3x224x224 float32 input      <name>_out1.npy  1x1000
  <name>_in4.npy     4x3x224x224 float32 inputs     <name>_out4.npy  4x1000
(models/tv/make_fashion224.py writes Fashion-MNIST images as these networks' inputs;
bench/sqnr.sh measures their INT8 accuracy.)
(reference inputs: smooth random images (image_like); outputs: PyTorch float32, eval
mode; the batch-4 reference is one torch forward over the 4-batch.)

Only squeezenet1_1's files are committed (see .gitignore); the others are
generated on demand by `make models`.

Re-run:  /usr/bin/python3 models/tv/make_torchvision.py [--out DIR] [--models resnet18,googlenet]
(about 12 minutes for all four on 2 idle cores; squeezenet1_1 alone ~2 min; needs the
Debian packages python3-torch python3-torchvision python3-onnx dataset-fashion-mnist)

Determinism: fixed seeds and 2 threads make the output byte-identical from run to run
with the same torch build (a different build may train to slightly different weights).
The reference outputs depend (at the 1e-6 level) on the BLAS behind torch, so, like
models/fashion/make_fashion.py, the script re-executes itself with
LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas to use the reference BLAS
(package libblas3) whichever libblas.so.3 alternative is selected.
"""
import argparse
import collections
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_blas import REF_BLAS_DIR, use_reference_blas  # noqa: E402
use_reference_blas(__file__)   # before numpy and torch are loaded

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as Fn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fashion224 import fashion, prep  # noqa: E402  (the same images and preprocessing)
ALL = ["resnet18", "mobilenet_v2", "squeezenet1_1", "googlenet"]
# training steps at 64x64 (batch 32) and at 224x224 (batch 16) per network: squeezenet
# (no BatchNorm) needs more at 224 to carry over (40 steps: 26% at 224; 240: 70%)
STEPS = {"resnet18": (640, 30), "mobilenet_v2": (800, 30), "squeezenet1_1": (1000, 240),
         "googlenet": (640, 30)}
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def image_like(n, seed):
    """n smooth random RGB images, 8-bit quantised, ImageNet-normalised: float32 [n,3,224,224]."""
    rng = np.random.default_rng(seed)
    imgs = np.zeros((n, 3, 224, 224), np.float32)
    yy, xx = np.meshgrid(np.linspace(-1, 1, 224, dtype=np.float32), np.linspace(-1, 1, 224, dtype=np.float32),
                         indexing="ij")
    for i in range(n):
        img = np.zeros((3, 224, 224), np.float32)
        # low-frequency noise at a few scales, upsampled
        for s, w in ((3, 0.35), (7, 0.25), (14, 0.15), (56, 0.06)):
            z = torch.from_numpy(rng.standard_normal((1, 3, s, s)).astype(np.float32))
            img += w * Fn.interpolate(z, size=(224, 224), mode="bicubic", align_corners=False)[0].numpy()
        # colour gradient in a random direction
        ang = rng.uniform(0, 2 * np.pi)
        ramp = np.cos(ang) * xx + np.sin(ang) * yy
        img += rng.uniform(-0.3, 0.3, size=(3, 1, 1)).astype(np.float32) * ramp
        # a few soft-edged blobs (objects)
        for _ in range(rng.integers(1, 4)):
            cy, cx = rng.uniform(-0.8, 0.8, 2)
            r = rng.uniform(0.1, 0.5)
            blob = 1 / (1 + np.exp(np.clip(((xx - cx) ** 2 + (yy - cy) ** 2 - r * r) / (0.02 * r), -50, 50)))
            img += rng.uniform(-0.5, 0.5, size=(3, 1, 1)).astype(np.float32) * blob.astype(np.float32)
        # global brightness/colour and contrast
        img = img * rng.uniform(0.5, 1.5) + rng.uniform(0.25, 0.75, size=(3, 1, 1)).astype(np.float32)
        img = np.round(np.clip(img, 0, 1) * 255) / 255
        imgs[i] = (img - IMAGENET_MEAN[:, None, None]) / IMAGENET_STD[:, None, None]
    return imgs.astype(np.float32)


def build(name):
    if name == "googlenet":
        return torchvision.models.googlenet(weights=None, aux_logits=False, transform_input=False,
                                            init_weights=True)
    return getattr(torchvision.models, name)(weights=None)


def train(model, name, xtr, ytr, xte, yte, seed):
    """The short training described above; returns the accuracy at 224 on 1000 test images."""
    steps, ft_steps = STEPS[name]
    g = torch.Generator().manual_seed(seed)
    model.train()
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=steps, pct_start=0.15)
    perm = torch.randperm(len(xtr), generator=g)
    for s in range(steps):
        idx = perm[(s * 32) % (len(xtr) - 32):][:32]
        xb = prep(xtr[idx], 64)
        flip = torch.rand(32, generator=g) < 0.5
        xb[flip] = xb[flip].flip(-1)
        loss = Fn.cross_entropy(model(xb), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if s % 200 == 0:
            print(f"{name}: step {s} loss {loss.item():.3f}", flush=True)
    for group in opt.param_groups:
        group["lr"] = 2e-4
    for s in range(ft_steps):
        idx = perm[(steps * 32 + s * 16) % (len(xtr) - 16):][:16]
        loss = Fn.cross_entropy(model(prep(xtr[idx], 224)), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"{name}: 224 fine-tune loss {loss.item():.3f}", flush=True)
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    model.eval()
    for bn in bns:   # running statistics at 224: cumulative average, no gradient
        bn.reset_running_stats()
        bn.momentum = None
        bn.train()
    cal = torch.arange(200) * 37 % len(xtr)
    with torch.no_grad():
        for i in range(0, 200 if bns else 0, 20):
            model(prep(xtr[cal[i:i + 20]], 224))
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, 1000, 50):
            correct += (model(prep(xte[i:i + 50], 224)).argmax(1) == yte[i:i + 50]).sum().item()
    return correct / 1000


def dependence(model, seed):
    """On 8 image-like inputs: mean over the 10 trained logits of (std across inputs) /
    (std of those logits), and the outputs."""
    x = torch.from_numpy(image_like(8, seed))
    with torch.no_grad():
        y = model(x).double()[:, :10]
    ratio = (y.std(dim=0).mean() / y.std()).item()
    return ratio, y


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
    f = io.BytesIO()
    # training=PRESERVE with the model in eval mode keeps BatchNormalization as
    # nodes (TrainingMode.EVAL always folds BN into the preceding Conv).
    torch.onnx.export(model, torch.zeros(1, 3, 224, 224), f, opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                      output_names=["output"])
    m = inline_identity_initializers(onnx.load_from_string(f.getvalue()))
    onnx.checker.check_model(m)
    ops = collections.Counter(n.op_type for n in m.graph.node)
    nbn = sum(isinstance(x, nn.BatchNorm2d) for x in model.modules())
    assert ops["BatchNormalization"] == nbn, (ops, nbn)
    with open(path, "wb") as fh:
        fh.write(m.SerializeToString())
    return ops


def classifier(model, name):
    """The layer that makes the 1000 logits (a Linear, or squeezenet's 1x1 Conv)."""
    return {"resnet18": lambda m: m.fc, "googlenet": lambda m: m.fc,
            "mobilenet_v2": lambda m: m.classifier[1],
            "squeezenet1_1": lambda m: m.classifier[1]}[name](model)


def make(name, out, data):
    t0 = time.time()
    idx = ALL.index(name)
    torch.manual_seed(1000 + idx)
    model = build(name)
    acc = train(model, name, *data, 2000 + idx)
    with torch.no_grad():   # logits 10-999 (no class): exactly 0 (see the header)
        head = classifier(model, name)
        head.weight[10:] = 0
        head.bias[10:] = 0
    print(f"{name}: trained in {time.time() - t0:.0f}s, top-1 at 224 on 1000 Fashion-MNIST test images {acc:.3f}")
    model.eval()
    ratio, y = dependence(model, 4000 + idx)
    print(f"{name}: logits std {y.std().item():.4f}, mean per-logit std across 8 inputs "
          f"{y.std(dim=0).mean().item():.4f}, ratio {ratio:.3f}; argmax {y.argmax(1).tolist()}")
    assert ratio > 0.1, f"{name}: output barely depends on the input (ratio {ratio:.3f})"

    x1 = image_like(1, 5000 + idx)
    x4 = image_like(4, 6000 + idx)
    with torch.no_grad():
        y1 = model(torch.from_numpy(x1)).numpy().astype(np.float32)
        y4 = model(torch.from_numpy(x4)).numpy().astype(np.float32)
    ops = export(model, os.path.join(out, f"{name}.onnx"))
    for suffix, arr in (("in1", x1), ("out1", y1), ("in4", x4), ("out4", y4)):
        np.save(os.path.join(out, f"{name}_{suffix}.npy"), np.ascontiguousarray(arr, dtype="<f4"))
    print(f"{name}: ops {dict(sorted(ops.items()))} ({time.time() - t0:.0f}s)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--models", default=",".join(ALL))
    args = ap.parse_args()
    names = [s for s in args.models.split(",") if s]
    for s in names:
        if s not in ALL:
            ap.error(f"unknown model {s}; choose from {','.join(ALL)}")
    os.makedirs(args.out, exist_ok=True)
    with open("/proc/self/maps") as f:
        blas = sorted({line.split()[-1] for line in f if "libblas.so" in line})
    print(f"BLAS: {', '.join(blas) or 'none mapped'}")
    if not any(b.startswith(REF_BLAS_DIR + "/") for b in blas):
        print("warning: not using the reference BLAS (libblas3); the reference outputs will differ slightly "
              "from the committed ones", file=sys.stderr)
    torch.set_num_threads(2)
    xtr, ytr = fashion("train")
    xte, yte = fashion("test")
    for name in names:
        make(name, args.out, (xtr, ytr, xte, yte))


if __name__ == "__main__":
    sys.exit(main())
