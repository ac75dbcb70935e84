#!/usr/bin/python3
"""ImageNet-style inputs from the real photographs Debian ships, for `make accuracy`.

Writes two float32 arrays [N,3,224,224] (NCHW, RGB, ImageNet preprocessing) that
`oqc calibrate --data` and `oqc eval --data` read as N samples of a [1,3,224,224] model:

  OUT/imagenet_calib.npy   calibration inputs (--calib, default 256)
  OUT/imagenet_eval.npy    evaluation inputs (--eval, default 480)
  OUT/imagenet_photos.txt  one line per input: set, index, photo, crop box, flip

Every input is a random crop of one photo (RandomResizedCrop-like: area 10-100% of the
photo, aspect ratio 3/4..4/3, uniform position, horizontal flip with probability 1/2),
then the standard ImageNet evaluation preprocessing: resize the shorter side to 256
(PIL bilinear), centre crop 224x224, /255, subtract the ImageNet mean
(0.485, 0.456, 0.406) and divide by the std (0.229, 0.224, 0.225).  The first input of
each photo is the whole photo (no crop, no flip).

The photos are split: CALIB_PHOTOS feed the calibration set and half of the evaluation
set (other crops, never one of the calibration crops: the eval crops of a photo are
drawn from its own random stream and checked against the calibration boxes), HELDOUT
photos feed only the evaluation set.  Everything is seeded (--seed), so the arrays are
the same bytes on every run with the same photos, numpy and PIL.  A photo that is
missing is skipped with a note; fewer than 4 calibration photos is an error.
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image

SKIMAGE = "/usr/lib/python3/dist-packages/skimage/data/"
SKLEARN = "/usr/lib/python3/dist-packages/sklearn/datasets/images/"
MPL = "/usr/share/matplotlib/mpl-data/sample_data/"

# Real photographs only (no drawings, text, logos, synthetic or desktop artwork).
# Grey-scale photos are replicated to three channels.  Left out on purpose: skimage's
# cell/clock_motion (almost uniform), retina and microaneurysms (medical), lfw_subset
# (25x25 faces), horse (silhouette); desktop-base backgrounds (rendered artwork).
CALIB_PHOTOS = [
    SKIMAGE + "astronaut.png",       # person, flag, spacesuit
    SKIMAGE + "coffee.png",          # cup of coffee on a saucer
    SKIMAGE + "rocket.jpg",          # rocket on a launch pad
    SKIMAGE + "motorcycle_left.png",  # motorcycle (stereo pair, both on this side)
    SKIMAGE + "motorcycle_right.png",
    SKIMAGE + "hubble_deep_field.jpg",  # galaxies
    SKIMAGE + "camera.png",          # cameraman (grey)
    SKIMAGE + "coins.png",           # coins (grey)
    SKIMAGE + "moon.png",            # lunar surface (grey)
    SKIMAGE + "grass.png",           # grass texture (grey)
    SKIMAGE + "brick.png",           # brick wall (grey)
    SKIMAGE + "ihc.png",             # stained tissue micrograph
    SKLEARN + "china.jpg",           # Chinese temple
]
HELDOUT_PHOTOS = [
    SKIMAGE + "chelsea.png",         # tabby cat
    SKIMAGE + "gravel.png",          # gravel (grey)
    SKLEARN + "flower.jpg",          # flower
    MPL + "grace_hopper.jpg",        # portrait in uniform
]

MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)


def preprocess(img):
    """ImageNet evaluation preprocessing of a PIL RGB image -> float32 [3,224,224]."""
    w, h = img.size
    s = 256.0 / min(w, h)
    nw, nh = max(256, round(w * s)), max(256, round(h * s))
    img = img.resize((nw, nh), Image.BILINEAR)
    left, top = (nw - 224) // 2, (nh - 224) // 2
    img = img.crop((left, top, left + 224, top + 224))
    x = np.asarray(img, np.uint8).transpose(2, 0, 1).astype(np.float32) / np.float32(255)
    return (x - MEAN) / STD


def random_box(rng, w, h):
    """A RandomResizedCrop box (left, top, right, bottom) inside a w x h photo."""
    for _ in range(100):
        area = w * h * rng.uniform(0.10, 1.0)
        ratio = np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        cw = int(round(np.sqrt(area * ratio)))
        ch = int(round(np.sqrt(area / ratio)))
        if 32 <= cw <= w and 32 <= ch <= h:
            left = int(rng.integers(0, w - cw + 1))
            top = int(rng.integers(0, h - ch + 1))
            return (left, top, left + cw, top + ch)
    side = min(w, h)        # fallback: the centred square
    return ((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side)


def crops(img, n, rng, whole, avoid):
    """n (box, flip) pairs for img: the whole photo first when `whole`, then random
    crops not in `avoid` (a set of (box, flip))."""
    out = []
    if whole:
        out.append(((0, 0) + img.size, False))
    while len(out) < n:
        c = (random_box(rng, *img.size), bool(rng.integers(0, 2)))
        if c not in avoid and c not in out:
            out.append(c)
    return out


def load(path):
    img = Image.open(path)
    img.load()
    return img.convert("RGB")


def spread(total, k):
    """total split into k near-equal parts (the first ones get the remainder)."""
    return [total // k + (1 if i < total % k else 0) for i in range(k)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output directory")
    ap.add_argument("--calib", type=int, default=256, help="calibration inputs (256)")
    ap.add_argument("--eval", type=int, default=480, help="evaluation inputs (480)")
    ap.add_argument("--seed", type=int, default=20261127)
    a = ap.parse_args()

    def present(paths):
        have = [p for p in paths if os.path.isfile(p)]
        for p in paths:
            if p not in have:
                print(f"make_photos: {p} is missing; skipped", file=sys.stderr)
        return have

    calib_photos, held = present(CALIB_PHOTOS), present(HELDOUT_PHOTOS)
    if len(calib_photos) < 4 or not held:
        sys.exit("make_photos: too few photos (need python3-skimage, python3-sklearn, "
                 "python3-matplotlib; see scripts/install-deps.sh)")

    # Half the eval set from held-out photos, half from new crops of the calib photos.
    n_held = a.eval // 2
    n_seen = a.eval - n_held
    calib, evals, lines = [], [], []
    for pi, (path, nc, ne) in enumerate(zip(calib_photos,
                                            spread(a.calib, len(calib_photos)),
                                            spread(n_seen, len(calib_photos)))):
        img = load(path)
        # One stream per photo and set: adding a photo does not move the others' crops.
        cc = crops(img, nc, np.random.default_rng([a.seed, pi, 0]), True, set())
        ec = crops(img, ne, np.random.default_rng([a.seed, pi, 1]), False, set(cc))
        for kind, lst, dst in (("calib", cc, calib), ("eval", ec, evals)):
            for box, flip in lst:
                c = img.crop(box)
                if flip:
                    c = c.transpose(Image.FLIP_LEFT_RIGHT)
                lines.append((kind, len(dst), path, box, flip))
                dst.append(preprocess(c))
    for pi, (path, ne) in enumerate(zip(held, spread(n_held, len(held)))):
        img = load(path)
        for box, flip in crops(img, ne, np.random.default_rng([a.seed, 1000 + pi, 1]),
                               True, set()):
            c = img.crop(box)
            if flip:
                c = c.transpose(Image.FLIP_LEFT_RIGHT)
            lines.append(("eval-heldout", len(evals), path, box, flip))
            evals.append(preprocess(c))

    os.makedirs(a.out, exist_ok=True)
    for name, arr in (("imagenet_calib.npy", calib), ("imagenet_eval.npy", evals)):
        tmp = os.path.join(a.out, name + ".tmp.npy")
        np.save(tmp, np.stack(arr).astype(np.float32))
        os.replace(tmp, os.path.join(a.out, name))
    with open(os.path.join(a.out, "imagenet_photos.txt"), "w") as f:
        f.write("# set\tindex\tphoto\tcrop box (left,top,right,bottom)\tflipped\n")
        for kind, i, path, box, flip in lines:
            f.write(f"{kind}\t{i}\t{path}\t{','.join(map(str, box))}\t{int(flip)}\n")
    print(f"make_photos: {len(calib)} calibration inputs from {len(calib_photos)} photos, "
          f"{len(evals)} evaluation inputs ({n_seen} other crops of those photos, "
          f"{len(evals) - n_seen} from {len(held)} held-out photos) in {a.out}")


if __name__ == "__main__":
    main()
