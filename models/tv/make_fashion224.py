#!/usr/bin/python3
"""make_fashion224.py - Fashion-MNIST images as inputs of the `make models` networks (which
make_torchvision.py trains on them): COUNT images of the train or test split, chosen
with SEED (a fixed-seed choice without repeats), as make_torchvision.py feeds them in
training: bilinear resize to 224x224, grey replicated to 3 channels, ImageNet-
normalised; float32 [COUNT, 1, 3, 224, 224] .npy (samples on the first axis), and with
--labels the int64 labels.  Needs numpy, torch (the same resize) and Debian's
dataset-fashion-mnist.

    /usr/bin/python3 models/tv/make_fashion224.py OUT.npy COUNT SEED train|test [--labels L.npy]
"""
import gzip
import os
import sys

import numpy as np
import torch
import torch.nn.functional as Fn

DATA = "/usr/share/datasets/fashion-mnist"
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(data[3])]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def fashion(split):
    """Fashion-MNIST images (uint8 tensor [N,28,28]) and labels (int64 tensor [N])."""
    pre = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(DATA, f"{pre}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(DATA, f"{pre}-labels-idx1-ubyte.gz"))
    return torch.from_numpy(x.copy()), torch.from_numpy(y.astype(np.int64))


def prep(xu8, res):
    """uint8 [N,28,28] -> float32 [N,3,res,res]: bilinear resize, grey replicated, ImageNet-normalised
    (make_torchvision.py trains with this too)."""
    x = xu8.float().div(255.0)[:, None]
    x = Fn.interpolate(x, size=(res, res), mode="bilinear", align_corners=False).clamp(0, 1)
    return ((x.expand(-1, 3, -1, -1) - MEAN) / STD).contiguous()


def main():
    if len(sys.argv) not in (5, 7) or sys.argv[4] not in ("train", "test") or \
            (len(sys.argv) == 7 and sys.argv[5] != "--labels"):
        sys.exit(__doc__)
    out, n, seed, split = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    x, y = fashion(split)
    idx = torch.from_numpy(np.sort(np.random.default_rng(seed).choice(len(x), n, replace=False)))
    np.save(out, np.ascontiguousarray(prep(x[idx], 224).numpy()[:, None], dtype="<f4"))
    if len(sys.argv) == 7:
        np.save(sys.argv[6], y[idx].numpy())


if __name__ == "__main__":
    main()
