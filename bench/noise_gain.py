#!/usr/bin/python3
"""noise_gain.py - how much a network amplifies small input perturbations, in FP32.

For each model: run `oqc run` (FP32) on the evaluation inputs and on the same inputs
plus uniform noise of half an 8-bit step (the error of quantizing the input alone, with
a max threshold), and print the input SNR and the output SQNR on centered outputs (the
same measure as `oqc eval`).  If quantizing the input alone already brings the output
SQNR near some level, no 8-bit scheme that also quantizes every layer can beat it: this
separates the network's sensitivity from oqc's quantization error.

    /usr/bin/python3 bench/noise_gain.py OQC INPUTS.npy MODEL.onnx...
"""
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(oqc, model, x_path, out):
    subprocess.run([oqc, "run", model, "--input", x_path, "-o", out, "-q"], check=True)
    return np.load(out)


def main():
    oqc, inputs, models = sys.argv[1], sys.argv[2], sys.argv[3:]
    x = np.load(inputs)
    rng = np.random.default_rng(0)
    step = np.abs(x).max() / 127
    xn = (x + rng.uniform(-step / 2, step / 2, x.shape)).astype(np.float32)
    snr_in = 10 * np.log10((x.astype(np.float64) ** 2).sum() / ((xn - x).astype(np.float64) ** 2).sum())
    with tempfile.TemporaryDirectory() as d:
        noisy = os.path.join(d, "xn.npy")
        np.save(noisy, xn)
        print(f"input: {x.shape[0]} samples, noise = half an 8-bit step, SNR {snr_in:.1f} dB")
        print("| model | output SQNR, centered (dB) | top-1 agreement |")
        print("|---|---:|---:|")
        for m in models:
            y0 = run(oqc, m, inputs, os.path.join(d, "y0.npy")).reshape(x.shape[0], -1)
            y1 = run(oqc, m, noisy, os.path.join(d, "y1.npy")).reshape(x.shape[0], -1)
            mu = y0.mean(axis=0)
            s = 10 * np.log10(((y0 - mu) ** 2).sum() / ((y1 - y0) ** 2).sum())
            agree = (y0.argmax(1) == y1.argmax(1)).mean()
            print(f"| {os.path.basename(m)} | {s:.1f} | {agree:.3f} |")


if __name__ == "__main__":
    main()
