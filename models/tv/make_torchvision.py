#!/usr/bin/python3
"""Export torchvision CNNs with random (but input-sensitive) weights to ONNX, with reference data.

For each of resnet18, mobilenet_v2, squeezenet1_1, googlenet (random weights,
fixed torch.manual_seed; googlenet with aux_logits=False, transform_input=False,
init_weights=True), input 1x3x224x224:

  * BatchNorm models: every BatchNorm's running_mean/running_var is calibrated
    layer by layer, in execution order, on image-like inputs (low-frequency
    noise + colour gradients, 8-bit quantised, ImageNet-normalised) so each BN
    normalises its actual input; right after its calibration each BN is
    perturbed (gamma ~ U(0.5,1.5), beta ~ N(0,0.2), mean += 0.1*std*N(0,1),
    var *= U(0.8,1.2)) so Conv+BN folding is non-trivial.
  * squeezenet1_1 (no BN): each conv's weight and bias are rescaled layer by
    layer, per output channel, so that the channel's output (before ReLU) has
    mean beta ~ N(0,0.2) and std g ~ U(0.5,1.5), i.e. layer std ~1 (a plain
    per-layer rescale leaves the logits almost input-independent).
  * The outputs are checked to depend on the input: over 8 image-like inputs,
    mean over logits of (std across inputs) / (std of all logits) > 0.1.

Writes to --out (default models/tv/):
  <name>.onnx        opset 13, input `input` [1,3,224,224], output `output`
                     [1,1000], BatchNormalization kept as nodes, fixed batch 1
  <name>_in1.npy     1x3x224x224 float32 input      <name>_out1.npy  1x1000
  <name>_in4.npy     4x3x224x224 float32 inputs     <name>_out4.npy  4x1000
(outputs: PyTorch float32, eval mode, torch.set_num_threads(2); the batch-4
reference is one torch forward over the 4-batch.)

Only squeezenet1_1's files are committed (see .gitignore); the others are
generated on demand by `make models`.

Re-run:  /usr/bin/python3 models/tv/make_torchvision.py [--out DIR] [--models resnet18,googlenet]
(about 4 minutes for all four on 2 idle cores; squeezenet1_1 alone ~20 s)

Determinism: the output is byte-identical from run to run. The reference
outputs depend (at the 1e-6 level) on the BLAS behind torch, so, like
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
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
ALL = ["resnet18", "mobilenet_v2", "squeezenet1_1", "googlenet"]
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


class _Stop(Exception):
    pass


def exec_order(model, x, types):
    """Modules of the given types in forward execution order."""
    order = []
    hooks = [m.register_forward_pre_hook(lambda mod, inp: order.append(mod))
             for m in model.modules() if isinstance(m, types)]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    seen, out = set(), []
    for m in order:
        if id(m) not in seen:
            seen.add(id(m))
            out.append(m)
    return out


def run_until(model, x, module, pre=True):
    """Forward x until `module` runs; return its input (pre) or output."""
    got = {}

    def hook(mod, inp, out=None):
        got["t"] = inp[0] if pre else out
        raise _Stop()

    h = module.register_forward_pre_hook(hook) if pre else module.register_forward_hook(hook)
    try:
        with torch.no_grad():
            model(x)
    except _Stop:
        pass
    finally:
        h.remove()
    return got["t"]


def calibrate_bn(model, x, gen):
    bns = exec_order(model, x, nn.BatchNorm2d)
    for bn in bns:
        t = run_until(model, x, bn).double()
        mean = t.mean(dim=(0, 2, 3))
        var = t.var(dim=(0, 2, 3), unbiased=False)
        c = mean.numel()
        u = lambda lo, hi: lo + (hi - lo) * torch.rand(c, generator=gen, dtype=torch.float64)
        bn.running_mean.copy_(mean + 0.1 * var.sqrt() * torch.randn(c, generator=gen, dtype=torch.float64))
        bn.running_var.copy_(var * u(0.8, 1.2))
        with torch.no_grad():
            bn.weight.copy_(u(0.5, 1.5))
            bn.bias.copy_(0.2 * torch.randn(c, generator=gen, dtype=torch.float64))
    return len(bns)


def rescale_convs(model, x, gen):
    """Per output channel: zero mean, std g ~ U(0.5,1.5), then bias shift N(0,0.2) (a folded BN)."""
    convs = exec_order(model, x, nn.Conv2d)
    for conv in convs:
        with torch.no_grad():
            conv.bias.zero_()
            t = run_until(model, x, conv, pre=False).double()
            mean = t.mean(dim=(0, 2, 3))
            std = t.std(dim=(0, 2, 3)).clamp_min(1e-12)
            c = mean.numel()
            g = 0.5 + torch.rand(c, generator=gen, dtype=torch.float64)
            beta = 0.2 * torch.randn(c, generator=gen, dtype=torch.float64)
            conv.weight.mul_((g / std).to(conv.weight.dtype)[:, None, None, None])
            conv.bias.copy_(beta - mean * g / std)
    return len(convs)


def dependence(model, seed):
    x = torch.from_numpy(image_like(8, seed))
    with torch.no_grad():
        y = model(x).double()
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


def make(name, out):
    t0 = time.time()
    idx = ALL.index(name)
    torch.manual_seed(1000 + idx)
    gen = torch.Generator().manual_seed(2000 + idx)
    model = build(name).eval()
    xcal = torch.from_numpy(image_like(16, 3000 + idx))
    if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
        n = calibrate_bn(model, xcal, gen)
        print(f"{name}: calibrated {n} BatchNorm layers")
    else:
        n = rescale_convs(model, xcal, gen)
        print(f"{name}: rescaled {n} conv layers")
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
    for name in names:
        make(name, args.out)


if __name__ == "__main__":
    sys.exit(main())
