#!/usr/bin/python3
"""Make the test images and PIL reference tensors of tests/cli/images.sh (run once;
the outputs are committed).  Needs Debian's python3-pil, python3-numpy, and the photos
python3-sklearn, python3-matplotlib and python3-skimage install.

Test images (small crops of real photos, so the resize sees real texture):
  photo.jpg    96x64 RGB JPEG (quality 90), from sklearn's china.jpg
  photo.png    60x80 RGB PNG, from skimage's astronaut.png
  gray.png     50x40 8-bit grayscale PNG, from skimage's camera.png
  palette.png  photo.png reduced to a 16-colour palette (PNG colour type 3)
Conversion cases (oqc converts these as docs/images.md says; the test checks each
against its 8-bit RGB twin):
  rgb8.png     12x10 RGB, random pixels
  rgb16.png    the same pixels as 16-bit RGB, low bytes random (oqc keeps the high byte)
  rgba.png     the same pixels with a random alpha channel (alpha is dropped)
  gray8.png    12x10 gray, random;  la.png: the same with alpha (dropped)
  gray16.png   gray8.png's pixels as 16-bit gray, low bytes random (oqc keeps the high
               byte; PIL would clip to 255 instead, see docs/images.md)
  grayj.jpg    20x16 grayscale JPEG from camera.png; ref_grayj.npy: PIL's decoded L
               pixels as float32 [1, 1, 16, 20] (oqc decodes it as gray, 1 channel)
Error cases: cmyk.jpg (a CMYK JPEG, refused); big.png (a header claiming 20000x20000
pixels over a few bytes of data: refused as too large before any allocation).

References: ref_SET.npy, float32 [4, ...], the torchvision pipeline
(PIL convert, Resize with BILINEAR, CenterCrop, ToTensor, Normalize, written out in
numpy float32 exactly as torchvision computes it) on photo.jpg, photo.png, gray.png,
palette.png for the specs in SPECS below (tests/cli/images.sh runs the same specs).
"""
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

OUT = os.path.dirname(os.path.abspath(__file__))
SPECS = {
    # name: (oqc spec, input shape, resize, crop (h, w), mean, std, PIL mode, layout)
    'shrink': ('resize=24,crop=20,scale=1/255,mean=0.485:0.456:0.406,std=0.229:0.224:0.225',
               (1, 3, 20, 20), 24, (20, 20), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225],
               'RGB', 'nchw'),
    'grow': ('resize=72,crop=64,scale=1/255,color=gray', (1, 1, 64, 64), 72, (64, 64), [0],
             [1], 'L', 'nchw'),
    'bgr': ('resize=30x40,scale=1/255,color=bgr,layout=nhwc', (1, 30, 40, 3), (30, 40), None,
            [0, 0, 0], [1, 1, 1], 'BGR', 'nhwc'),
}
IMAGES = ['photo.jpg', 'photo.png', 'gray.png', 'palette.png']


def torchvision(path, resize, crop, mean, std, mode, layout):
    img = Image.open(path).convert('L' if mode == 'L' else 'RGB')
    w, h = img.size
    if isinstance(resize, tuple):          # Resize((h, w))
        img = img.resize((resize[1], resize[0]), Image.BILINEAR)
    elif resize:                           # Resize(int): the shorter side
        short, long_ = (w, h) if w <= h else (h, w)
        other = int(resize * long_ / short)
        img = img.resize((resize, other) if w <= h else (other, resize), Image.BILINEAR)
    if crop:                               # CenterCrop: offsets by Python's round()
        w, h = img.size
        top, left = int(round((h - crop[0]) / 2.0)), int(round((w - crop[1]) / 2.0))
        img = img.crop((left, top, left + crop[1], top + crop[0]))
    a = np.asarray(img).astype(np.float32)
    if a.ndim == 2:
        a = a[:, :, None]
    if mode == 'BGR':
        a = a[:, :, ::-1]
    a = a / np.float32(255)                # ToTensor
    a = (a - np.array(mean, np.float32)) / np.array(std, np.float32)  # Normalize
    return a if layout == 'nhwc' else a.transpose(2, 0, 1)


def png(path, w, h, color_type, depth, rows):
    """A PNG written by hand (PIL cannot write 16-bit RGB)."""
    raw = b''.join(b'\0' + r for r in rows)
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth,
                color_type, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def main():
    china = Image.open('/usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg')
    china.crop((200, 150, 296, 214)).save(os.path.join(OUT, 'photo.jpg'), quality=90)
    astro = Image.open('/usr/lib/python3/dist-packages/skimage/data/astronaut.png').convert('RGB')
    astro.crop((180, 60, 240, 140)).save(os.path.join(OUT, 'photo.png'))
    cam = Image.open('/usr/lib/python3/dist-packages/skimage/data/camera.png').convert('L')
    cam.crop((200, 100, 250, 140)).save(os.path.join(OUT, 'gray.png'))
    Image.open(os.path.join(OUT, 'photo.png')).quantize(16).save(os.path.join(OUT, 'palette.png'))
    rng = np.random.default_rng(0)
    px = rng.integers(0, 256, (10, 12, 3), dtype=np.uint8)
    Image.fromarray(px, 'RGB').save(os.path.join(OUT, 'rgb8.png'))
    lo = rng.integers(0, 256, px.shape, dtype=np.uint16)
    v16 = (px.astype(np.uint16) << 8) | lo
    png(os.path.join(OUT, 'rgb16.png'), 12, 10, 2, 16, [r.astype('>u2').tobytes() for r in v16])
    alpha = rng.integers(0, 256, (10, 12, 1), dtype=np.uint8)
    Image.fromarray(np.concatenate([px, alpha], 2), 'RGBA').save(os.path.join(OUT, 'rgba.png'))
    g = rng.integers(0, 256, (10, 12), dtype=np.uint8)
    Image.fromarray(g, 'L').save(os.path.join(OUT, 'gray8.png'))
    Image.fromarray(np.stack([g, alpha[:, :, 0]], 2), 'LA').save(os.path.join(OUT, 'la.png'))
    Image.new('CMYK', (8, 8), (10, 20, 30, 40)).save(os.path.join(OUT, 'cmyk.jpg'))
    png(os.path.join(OUT, 'big.png'), 20000, 20000, 0, 8, [b'\0' * 16])
    for name, (spec, shape, resize, crop, mean, std, mode, layout) in SPECS.items():
        ref = np.stack([torchvision(os.path.join(OUT, f), resize, crop, mean, std, mode, layout)
                        for f in IMAGES]).astype(np.float32)
        assert ref.shape[1:] == shape[1:], (name, ref.shape, shape)
        np.save(os.path.join(OUT, 'ref_%s.npy' % name), ref)
        print('%s: %s %s' % (name, spec, ref.shape))
    gray_cases()


def gray_cases():
    """The 16-bit and JPEG grayscale cases (their own random stream, so adding them left
    the files above unchanged)."""
    g = np.asarray(Image.open(os.path.join(OUT, 'gray8.png')), dtype=np.uint16)
    lo = np.random.default_rng(1).integers(0, 256, g.shape, dtype=np.uint16)
    png(os.path.join(OUT, 'gray16.png'), 12, 10, 0, 16, [r.astype('>u2').tobytes() for r in (g << 8) | lo])
    cam = Image.open('/usr/lib/python3/dist-packages/skimage/data/camera.png').convert('L')
    cam.crop((300, 200, 320, 216)).save(os.path.join(OUT, 'grayj.jpg'), quality=90)
    ref = np.asarray(Image.open(os.path.join(OUT, 'grayj.jpg')), dtype=np.float32)
    assert Image.open(os.path.join(OUT, 'grayj.jpg')).mode == 'L'
    np.save(os.path.join(OUT, 'ref_grayj.npy'), ref.reshape(1, 1, 16, 20))


if __name__ == '__main__':
    sys.exit(main())
