#!/usr/bin/python3
"""make_data.py - the CIFAR-10 inputs of models/devset/ from the devset's uint8 images.

Usage: /usr/bin/python3 models/devset/make_data.py DEVSET_DIR
(DEVSET_DIR: the folder holding data/cifar_calib_u8.npy, data/cifar_eval_u8.npy and
data/cifar_eval_labels.npy, see README.md here).  Writes into this folder:

  calib_200.npy        float32 [200,3,32,32]: calib images 0..199, preprocessed
  eval_300.npy         float32 [300,3,32,32]: eval images 0..299, preprocessed
  eval_labels_300.npy  int64 [300]: their class ids

Preprocessing ('cifar', the one both networks were trained with), in float32 exactly as
the devset README gives it (a float32 divide by std, not a multiply by 1/std):
  x = (u8 HWC -> NCHW as float32) / 255;  x = (x - mean) / std
  mean = (0.4914, 0.4822, 0.4465), std = (0.2023, 0.1994, 0.2010), RGB order.
"""
import os
import sys

import numpy as np

MEAN = np.array([0.4914, 0.4822, 0.4465], np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.2023, 0.1994, 0.2010], np.float32).reshape(1, 3, 1, 1)


def cifar(u8):
    x = u8.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
    return np.ascontiguousarray((x - MEAN) / STD, dtype=np.float32)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    src = os.path.join(sys.argv[1], 'data')
    here = os.path.dirname(os.path.abspath(__file__))
    calib = np.load(os.path.join(src, 'cifar_calib_u8.npy'))[:200]
    ev = np.load(os.path.join(src, 'cifar_eval_u8.npy'))[:300]
    labels = np.load(os.path.join(src, 'cifar_eval_labels.npy'))[:300].astype(np.int64)
    np.save(os.path.join(here, 'calib_200.npy'), cifar(calib))
    np.save(os.path.join(here, 'eval_300.npy'), cifar(ev))
    np.save(os.path.join(here, 'eval_labels_300.npy'), labels)
    # The devset's own float32 arrays were made by the same formula: check that the
    # eval inputs equal its first 300 preprocessed images bit for bit.
    ref = os.path.join(src, 'cifar_eval2000_norm.npy')
    if os.path.exists(ref):
        same = np.array_equal(np.load(ref, mmap_mode='r')[:300], cifar(ev))
        print('eval_300.npy equals cifar_eval2000_norm.npy[:300]:', same)
        if not same:
            sys.exit(1)


if __name__ == '__main__':
    main()
