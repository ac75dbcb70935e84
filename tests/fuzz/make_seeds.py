#!/usr/bin/python3
"""make_seeds.py - writes the image, --preprocess, list-file and XML IR seeds of the fuzz
target (tests/fuzz/fuzz_model.c) into tests/fuzz/seeds/.  Run once from the repository
root with Debian's python3-pil and python3-numpy, and an oqc built in build/ (for the XML
dumps):  /usr/bin/python3 tests/fuzz/make_seeds.py

Images are 16x16 (the size the target's "raw" spec takes, so they go through the whole
preprocessing) in every colour form the decoders meet: JPEG baseline and progressive,
gray, RGB and CMYK (refused: the error path), 4:2:0 and 4:4:4; PNG gray 1/2/4/8/16-bit,
gray+alpha, RGB 8/16-bit, RGBA, palette with and without transparency, interlaced.
The rest are the harness's prefixed forms: "OQCPP" SPEC "\\n" IMAGE, "OQCLIST" TEXT, and
XML IR dumps of small models with their side data after a NUL."""
import io
import os
import subprocess
import zlib
import struct
import tempfile

import numpy as np
from PIL import Image

OUT = "tests/fuzz/seeds"
rng = np.random.default_rng(31)


def pixels(mode):
    """A 16x16 image with a gradient and noise (so the codecs have detail to code)."""
    y, x = np.mgrid[0:16, 0:16]
    base = (x * 13 + y * 7 + rng.integers(0, 40, (16, 16))) % 256
    if mode == "L":
        return Image.fromarray(base.astype(np.uint8), "L")
    chans = [base, (base * 3 + 50) % 256, 255 - base, (base + 128) % 256]
    n = {"RGB": 3, "RGBA": 4, "CMYK": 4, "LA": 2}[mode]
    return Image.fromarray(np.stack(chans[:n], -1).astype(np.uint8), mode)


def save(name, img, **kw):
    buf = io.BytesIO()
    img.save(buf, **kw)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(buf.getvalue())
    return buf.getvalue()


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]  # (x0, y0, dx, dy) of the seven passes


def png_raw(name, depth, ctype, rows, interlace=0, extra=b""):
    """A PNG written by hand, for forms PIL does not write (16-bit RGB, 2-bit gray,
    Adam7 interlacing: rows of whole bytes per pixel only)."""
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    h, w = len(rows), 16
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace)
    if interlace:
        bpp = len(rows[0]) // w
        raw = b"".join(b"\0" + b"".join(rows[y][x * bpp:(x + 1) * bpp] for x in range(x0, w, dx))
                       for x0, y0, dx, dy in ADAM7 for y in range(y0, h, dy))
    else:
        raw = b"".join(b"\0" + r for r in rows)
    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra +
            chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
    return data


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    seeds["rgb"] = save("img_rgb_baseline.jpg", pixels("RGB"), format="JPEG", quality=90)
    save("img_rgb_444.jpg", pixels("RGB"), format="JPEG", quality=95, subsampling=0)
    save("img_rgb_progressive.jpg", pixels("RGB"), format="JPEG", progressive=True)
    save("img_gray.jpg", pixels("L"), format="JPEG")
    save("img_gray_progressive.jpg", pixels("L"), format="JPEG", progressive=True)
    save("img_cmyk.jpg", pixels("CMYK"), format="JPEG")
    seeds["png"] = save("img_rgb.png", pixels("RGB"), format="PNG")
    save("img_gray8.png", pixels("L"), format="PNG")
    save("img_gray_alpha.png", pixels("LA"), format="PNG")
    save("img_rgba.png", pixels("RGBA"), format="PNG")
    png_raw("img_rgb_interlaced.png", 8, 2, [r.tobytes() for r in np.asarray(pixels("RGB"))],
            interlace=1)
    pal = pixels("RGB").quantize(16)
    save("img_palette4.png", pal, format="PNG", bits=4)
    save("img_palette_trns.png", pal, format="PNG", transparency=3)
    g16 = (np.arange(256).reshape(16, 16) * 257).astype(">u2")
    png_raw("img_gray16.png", 16, 0, [r.tobytes() for r in g16])
    rgb16 = np.stack([g16, g16[::-1], g16.T], -1).astype(">u2")
    png_raw("img_rgb16.png", 16, 2, [r.tobytes() for r in rgb16])
    png_raw("img_gray2.png", 2, 0, [bytes([0x1b, 0xe4, 0x55, 0xaa])] * 16)
    png_raw("img_gray1_trns.png", 1, 0, [bytes([0xf0, 0x0f])] * 16,
            extra=struct.pack(">I", 2) + b"tRNS" + b"\0\1" +
            struct.pack(">I", zlib.crc32(b"tRNS\0\1")))
    png_raw("img_rgb16_interlaced.png", 16, 2, [r.tobytes() for r in rgb16], interlace=1)

    # --preprocess specs from the input, each followed by an image
    for i, spec in enumerate(["imagenet,resize=18,crop=16", "cifar,color=bgr,layout=nhwc",
                              "resize=9x7,scale=2,mean=1:2:3,std=0.5",
                              "raw,color=gray,resize=33,crop=5x31"]):
        with open(os.path.join(OUT, "spec_%d.bin" % i), "wb") as f:
            f.write(b"OQCPP" + spec.encode() + b"\n" + seeds["rgb" if i % 2 else "png"])

    # list and labels files (paths relative to the list: the scratch directory's files)
    with open(os.path.join(OUT, "list_labels.bin"), "wb") as f:
        f.write(b"OQCLIST# images and their classes\ninput 3\n  data.bin\t7  \n"
                b"/dev/null 1\nnested/dir/x.png 0\n\nlist.txt -2\n")

    # XML IR dumps with their side data after a NUL, the side file named data.bin
    tmp = tempfile.mkdtemp()
    xml_path = os.path.join(tmp, "seed.xml")
    for m in ["batchnorm_after_conv", "gemm_basic", "concat_axis1", "cleanup_pytorch_cnn"]:
        subprocess.run(["build/oqc", "dump", "models/tiny/%s.onnx" % m, "--format", "xml",
                        "-o", xml_path], check=True)
        xml = open(xml_path, "rb").read().replace(b'data="seed.xml.data"', b'data="data.bin"')
        side = b""
        if os.path.exists(xml_path + ".data"):
            side = open(xml_path + ".data", "rb").read()
            os.remove(xml_path + ".data")
        os.remove(xml_path)
        with open(os.path.join(OUT, "xmlir_%s.bin" % m), "wb") as f:
            f.write(xml + b"\0" + side)
    os.rmdir(tmp)

if __name__ == "__main__":
    main()
