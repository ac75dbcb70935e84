#!/usr/bin/python3
"""The networks and data of `make accuracy` (bench/accuracy/run.sh calls this first).

Usage: prepare.py OUT --devset DIR [--cifar-n N]

Writes OUT/networks.tsv, one line per network:
  name  model.onnx  calib.npy  eval.npy  labels.npy|-  ort_int8.onnx|-  note
and the data files it names that are not used in place:
  - fashion (models/fashion/fashion_cnn.onnx, always): calibration on
    models/fashion/calib_500.npy (as scripts/demo.sh); evaluation on all 10,000
    Fashion-MNIST test images of Debian's dataset-fashion-mnist, normalised as
    models/fashion/make_fashion.py does ((x/255 - 0.2860)/0.3530), when installed,
    otherwise on models/fashion/test_1000.npy.
  - the CIFAR-10 networks of DIR/models (when DIR exists): calibration on
    DIR/data/cifar_calib_norm.npy (500 images); evaluation on the first N eval images
    (default 2000: DIR/data/cifar_eval2000_norm.npy in place; any other N is made from
    cifar_eval_u8.npy with the devset README's formula), labels cifar_eval_labels.npy[:N].
  - mobilenetv2_imagenet: the photo crops of make_photos.py (OUT/data/imagenet_*.npy,
    made when missing or older than make_photos.py), no labels.
Data files are written only when missing or out of date, to a temporary name renamed
into place.
"""
import argparse
import gzip
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FASHION = os.path.join(ROOT, "models", "fashion")
FMNIST = "/usr/share/datasets/fashion-mnist"

# name, FP32 model, ONNX Runtime INT8 original (or None), data kind
DEVSET_NETS = [
    ("resnet32_cifar10", "resnet32_cifar10.onnx", None, "cifar"),
    ("resnet44_cifar10", "resnet44_cifar10.onnx", None, "cifar"),
    ("resnet8_tiny", "resnet8_tiny_fp32.onnx", "resnet8_tiny_ort_int8.onnx", "cifar"),
    ("mobilenetv2_cifar10", "mobilenetv2_cifar10_fp32.onnx",
     "mobilenetv2_cifar10_ort_int8.onnx", "cifar"),
    ("mobilenetv2_imagenet", "mobilenetv2_imagenet_fp32.onnx",
     "mobilenetv2_imagenet_ort_int8.onnx", "imagenet"),
]


def save(path, arr):
    tmp = path + ".tmp.npy"
    np.save(tmp, arr)
    os.replace(tmp, path)


def stale(path, *deps):
    return not os.path.isfile(path) or any(
        os.path.getmtime(d) > os.path.getmtime(path) for d in deps if os.path.exists(d))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion(data):
    imgs = os.path.join(FMNIST, "t10k-images-idx3-ubyte.gz")
    labs = os.path.join(FMNIST, "t10k-labels-idx1-ubyte.gz")
    calib = os.path.join(FASHION, "calib_500.npy")
    model = os.path.join(FASHION, "fashion_cnn.onnx")
    if os.path.isfile(imgs) and os.path.isfile(labs):
        x_out = os.path.join(data, "fashion_test10k.npy")
        y_out = os.path.join(data, "fashion_test10k_labels.npy")
        if stale(x_out, imgs, __file__) or stale(y_out, labs, __file__):
            x = read_idx(imgs).astype(np.float32) / np.float32(255.0)
            x = ((x - np.float32(0.2860)) / np.float32(0.3530)).astype(np.float32)
            save(x_out, np.ascontiguousarray(x[:, None, :, :]))
            save(y_out, read_idx(labs).astype(np.int64))
        note = "10000 Fashion-MNIST test images (dataset-fashion-mnist)"
        return ("fashion", model, calib, x_out, y_out, None, note)
    note = ("1000 test images (models/fashion/test_1000.npy; install "
            "dataset-fashion-mnist for all 10000)")
    return ("fashion", model, calib, os.path.join(FASHION, "test_1000.npy"),
            os.path.join(FASHION, "test_labels_1000.npy"), None, note)


def cifar_eval(devset, data, n):
    d = os.path.join(devset, "data")
    labels_all = os.path.join(d, "cifar_eval_labels.npy")
    y_out = os.path.join(data, f"cifar_eval{n}_labels.npy")
    if stale(y_out, labels_all, __file__):
        save(y_out, np.load(labels_all)[:n].astype(np.int64))
    if n == 2000:
        return os.path.join(d, "cifar_eval2000_norm.npy"), y_out
    x_out = os.path.join(data, f"cifar_eval{n}_norm.npy")
    src = os.path.join(d, "cifar_eval_u8.npy")
    if stale(x_out, src, __file__):
        u8 = np.load(src)[:n]
        x = u8.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
        mean = np.array([0.4914, 0.4822, 0.4465], np.float32).reshape(1, 3, 1, 1)
        std = np.array([0.2023, 0.1994, 0.2010], np.float32).reshape(1, 3, 1, 1)
        save(x_out, np.ascontiguousarray((x - mean) / std, dtype=np.float32))
    return x_out, y_out


def imagenet(data):
    script = os.path.join(HERE, "make_photos.py")
    calib = os.path.join(data, "imagenet_calib.npy")
    ev = os.path.join(data, "imagenet_eval.npy")
    if stale(calib, script) or stale(ev, script):
        subprocess.run([sys.executable, script, data], check=True)
    return calib, ev


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--devset", required=True)
    ap.add_argument("--cifar-n", type=int, default=2000)
    a = ap.parse_args()
    data = os.path.join(a.out, "data")
    os.makedirs(data, exist_ok=True)
    nets = [fashion(data)]
    models = os.path.join(a.devset, "models")
    if os.path.isdir(models):
        if not 1 <= a.cifar_n <= 5000:
            sys.exit("prepare: --cifar-n must be 1..5000 (the devset has 5000 eval images)")
        for name, fp32, ort, kind in DEVSET_NETS:
            model = os.path.join(models, fp32)
            if not os.path.isfile(model):
                print(f"prepare: {model} is missing; {name} skipped", file=sys.stderr)
                continue
            ort = os.path.join(models, ort) if ort else None
            if ort and not os.path.isfile(ort):
                ort = None
            if kind == "cifar":
                x, y = cifar_eval(a.devset, data, a.cifar_n)
                nets.append((name, model, os.path.join(a.devset, "data", "cifar_calib_norm.npy"),
                             x, y, ort, f"first {a.cifar_n} devset CIFAR-10 eval images"))
            else:
                calib, ev = imagenet(data)
                n = np.load(ev, mmap_mode="r").shape[0]
                nets.append((name, model, calib, ev, None, ort,
                             f"{n} unlabelled photo crops (bench/accuracy/make_photos.py)"))
    else:
        print(f"prepare: {a.devset} is absent: only the Fashion model is measured",
              file=sys.stderr)
    with open(os.path.join(a.out, "networks.tsv"), "w") as f:
        for name, model, calib, ev, labels, ort, note in nets:
            f.write("\t".join([name, model, calib, ev, labels or "-", ort or "-", note]) + "\n")


if __name__ == "__main__":
    main()
