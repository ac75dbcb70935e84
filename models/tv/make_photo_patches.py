#!/usr/bin/python3
"""make_photo_patches.py - image-like inputs for the torchvision models: random crops of
real photographs that Debian ships (scikit-learn's china.jpg and flower.jpg, matplotlib's
grace_hopper.jpg), resized to 224x224, randomly flipped and brightness-jittered, then
ImageNet-normalised, as float32 [N, 1, 3, 224, 224] .npy files (samples on the first
axis).  Calibration and evaluation sets come from different random crops (different
seeds), so evaluation never sees a calibration input.  Needs numpy and PIL only.

    /usr/bin/python3 models/tv/make_photo_patches.py OUT.npy COUNT SEED
"""
import sys
import numpy as np
from PIL import Image

PHOTOS = ["/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg",
          "/usr/lib/python3/dist-packages/sklearn/datasets/images/flower.jpg",
          "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"]
MEAN = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
STD = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]


def main():
    out, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(seed)
    photos = [Image.open(p).convert("RGB") for p in PHOTOS]
    x = np.empty((n, 1, 3, 224, 224), np.float32)
    for i in range(n):
        im = photos[rng.integers(len(photos))]
        w, h = im.size
        side = int(min(w, h) * rng.uniform(0.3, 1.0))
        left = int(rng.integers(0, w - side + 1))
        top = int(rng.integers(0, h - side + 1))
        crop = im.crop((left, top, left + side, top + side)).resize((224, 224), Image.BILINEAR)
        a = np.asarray(crop, np.float32).transpose(2, 0, 1) / 255.0
        if rng.random() < 0.5:
            a = a[:, :, ::-1]
        a = np.clip(a * rng.uniform(0.7, 1.3), 0, 1)
        x[i, 0] = (a - MEAN) / STD
    np.save(out, x)


if __name__ == "__main__":
    main()
