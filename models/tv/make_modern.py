#!/usr/bin/python3
"""Export the modern networks of issue #26 to ONNX, with reference data, for `make models`.

The torchvision architectures as they are (Debian's torchvision 0.14, weights=None):
mobilenet_v3_small, mobilenet_v3_large, efficientnet_b0, shufflenet_v2_x1_0,
regnet_y_400mf, mnasnet1_0, convnext_tiny, densenet121, inception_v3 (299x299,
aux_logits=False, init_weights=True), resnet50, and the segmentation networks
fcn_resnet50 and lraspp_mobilenet_v3_large (no backbone weights, no aux head; output
`out`, [1,21,224,224]); and two networks torchvision lacks, built here:

  espcn      super-resolution as in the PyTorch example (Shi et al. 2016): 1x1x224x224
             luminance -> Conv5x5(64)+ReLU, Conv3x3(64)+ReLU, Conv3x3(32)+ReLU,
             Conv3x3(9), PixelShuffle(3) (exported as DepthToSpace) -> 1x1x672x672
  dscnn      the keyword-spotting DS-CNN of MLPerf Tiny (Zhang et al. 2017, "Hello Edge",
             the small model): 1x1x49x10 MFCC -> Conv(64, 10x4, stride 2)+BN+ReLU,
             4 x (depthwise 3x3 + BN + ReLU, pointwise 64 + BN + ReLU), AveragePool
             over the map, FC 12

Weights: torchvision's own initialisation (seeded), not trained: nothing can be
downloaded here, and these exports check operator coverage, FP32 exactness and INT8
code generation, not accuracy (models/tv/make_torchvision.py trains its four networks
because bench/sqnr.sh measures their accuracy).  Every BatchNormalization's running
statistics are then measured on data (cumulative average over 64 inputs in training
mode, no gradient), so the activations have the ranges of a network that has seen
data rather than BatchNorm's (0, 1) defaults: image-like inputs (make_torchvision's
image_like: smooth random images, ImageNet-normalised; bilinear to 299 for
inception_v3; their channel mean for espcn) and, for dscnn, standard-normal MFCC
frames.  BatchNormalization stays a node in the ONNX file (oqc folds it).

Writes to --out (default models/tv/), for each network NAME:
  NAME.onnx          opset 13, input `input` (fixed batch 1), output `output`
  NAME_in1.npy       one float32 input (a fresh image-like one)
  NAME_out1.npy      PyTorch's output for it, computed in float64 (eval mode, reference BLAS)
and one calibration set per input shape, 16 more inputs of the same kind:
  calib_3x224x224.npy, calib_3x299x299.npy, calib_1x224x224.npy, calib_1x49x10.npy
None of these files is committed (see .gitignore); tests/cli/modern_nets.sh (run by
`make check-models`) checks oqc on them.

Re-run:  /usr/bin/python3 models/tv/make_modern.py [--out DIR] [--models a,b]
(about 3 minutes for all on 2 cores; needs python3-torch python3-torchvision
python3-onnx, and libblas3 for the reference BLAS as in make_torchvision.py)
"""
import argparse
import collections
import io
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_blas import use_reference_blas  # noqa: E402
use_reference_blas(__file__)   # before numpy and torch are loaded

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as Fn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# (imported after the re-exec above: OQC_REF_BLAS=1 keeps make_torchvision from re-executing)
from make_torchvision import image_like, inline_identity_initializers  # noqa: E402

TV = torchvision.models


class Espcn(nn.Module):
    def __init__(self, r=3):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(1, 64, 5, padding=2), nn.ReLU(),
                                  nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(64, 32, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(32, r * r, 3, padding=1), nn.PixelShuffle(r))

    def forward(self, x):
        return self.body(x)


class Dscnn(nn.Module):
    def __init__(self, ch=64, classes=12):
        super().__init__()
        layers = [nn.Conv2d(1, ch, (10, 4), stride=2, padding=(5, 1), bias=False), nn.BatchNorm2d(ch),
                  nn.ReLU()]
        for _ in range(4):
            layers += [nn.Conv2d(ch, ch, 3, padding=1, groups=ch, bias=False), nn.BatchNorm2d(ch), nn.ReLU(),
                       nn.Conv2d(ch, ch, 1, bias=False), nn.BatchNorm2d(ch), nn.ReLU()]
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(ch, classes)

    def forward(self, x):
        x = self.features(x)
        x = Fn.avg_pool2d(x, x.shape[2:])
        return self.fc(torch.flatten(x, 1))


class SegOut(nn.Module):
    """torchvision's segmentation networks return a dict; the export keeps `out`."""
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


NETS = {
    "mobilenet_v3_small": lambda: TV.mobilenet_v3_small(weights=None),
    "mobilenet_v3_large": lambda: TV.mobilenet_v3_large(weights=None),
    "efficientnet_b0": lambda: TV.efficientnet_b0(weights=None),
    "shufflenet_v2_x1_0": lambda: TV.shufflenet_v2_x1_0(weights=None),
    "regnet_y_400mf": lambda: TV.regnet_y_400mf(weights=None),
    "mnasnet1_0": lambda: TV.mnasnet1_0(weights=None),
    "convnext_tiny": lambda: TV.convnext_tiny(weights=None),
    "densenet121": lambda: TV.densenet121(weights=None),
    "inception_v3": lambda: TV.inception_v3(weights=None, aux_logits=False, init_weights=True),
    "resnet50": lambda: TV.resnet50(weights=None),
    "fcn_resnet50": lambda: SegOut(TV.segmentation.fcn_resnet50(weights=None, weights_backbone=None,
                                                                aux_loss=False)),
    "lraspp_mobilenet_v3_large": lambda: SegOut(TV.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None)),
    "espcn": Espcn,
    "dscnn": Dscnn,
}
SHAPE = collections.defaultdict(lambda: (3, 224, 224), {"inception_v3": (3, 299, 299), "espcn": (1, 224, 224),
                                                         "dscnn": (1, 49, 10)})


def inputs(shape, n, seed):
    """n inputs of the given [C,H,W] as described in the header: float32 [n, C, H, W]."""
    if shape == (1, 49, 10):
        return np.random.default_rng(seed).standard_normal((n, 1, 49, 10)).astype(np.float32)
    x = image_like(n, seed)
    if shape[1] != 224:
        x = Fn.interpolate(torch.from_numpy(x), size=shape[1:], mode="bilinear", align_corners=False).numpy()
    if shape[0] == 1:
        x = x.mean(axis=1, keepdims=True)
    return np.ascontiguousarray(x, dtype=np.float32)


def measure_bn(model, x):
    """Each BatchNorm's running statistics: the cumulative average over the inputs x."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    model.eval()
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
        bn.train()
    with torch.no_grad():
        for i in range(0, len(x) if bns else 0, 16):
            model(torch.from_numpy(x[i:i + 16]))
    model.eval()
    return len(bns)


def export(model, shape, path):
    f = io.BytesIO()
    # training=PRESERVE with the model in eval mode keeps BatchNormalization as nodes
    torch.onnx.export(model, torch.zeros(1, *shape), f, opset_version=13, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["input"],
                      output_names=["output"])
    m = inline_identity_initializers(onnx.load_from_string(f.getvalue()))
    onnx.checker.check_model(m)
    with open(path, "wb") as fh:
        fh.write(m.SerializeToString())
    return collections.Counter(n.op_type for n in m.graph.node)


def make(name, idx, out):
    t0 = time.time()
    torch.manual_seed(7000 + idx)
    model = NETS[name]()
    shape = SHAPE[name]
    nbn = measure_bn(model, inputs(shape, 64, 8000 + idx))
    x1 = inputs(shape, 1, 9000 + idx)
    ops = export(model, shape, os.path.join(out, f"{name}.onnx"))
    # The reference output in float64 (rounded to float32 at the end): float32 kernels
    # that sum in different orders differ by a few units of the last place per layer, and
    # the deepest of these untrained networks amplify that to 1e-4 (fcn_resnet50: PyTorch
    # float32 and ONNX Runtime 1.1e-4 apart), so a float32 reference would measure its own
    # rounding as much as oqc's.
    with torch.no_grad():
        y1 = model.double()(torch.from_numpy(x1).double()).numpy().astype(np.float32)
    for suffix, arr in (("in1", x1), ("out1", y1)):
        np.save(os.path.join(out, f"{name}_{suffix}.npy"), np.ascontiguousarray(arr, dtype="<f4"))
    print(f"{name}: {nbn} BatchNorm measured; output {list(y1.shape)} std {y1.std():.4g}; "
          f"ops {dict(sorted(ops.items()))} ({time.time() - t0:.0f}s)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--models", default=",".join(NETS))
    args = ap.parse_args()
    names = [s for s in args.models.split(",") if s]
    for s in names:
        if s not in NETS:
            ap.error(f"unknown model {s}; choose from {','.join(NETS)}")
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    for shape in sorted({SHAPE[n] for n in names}):
        path = os.path.join(args.out, "calib_" + "x".join(map(str, shape)) + ".npy")
        np.save(path, inputs(shape, 16, 10000 + shape[1]))
    for name in names:
        make(name, list(NETS).index(name), args.out)


if __name__ == "__main__":
    sys.exit(main())
