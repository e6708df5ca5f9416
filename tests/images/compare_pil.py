"""ImageDecoder against PIL (what ONNX's reference implementation decodes with), image by image.

    venv/bin/pip install onnx numpy pillow
    venv/bin/python tests/images/compare_pil.py build/bin/onyx [--keep DIR]

Encodes checkerboards and noise in every format and variant PIL writes (BMP 1/4/8/24/32-bit,
PGM/PPM/PBM, PNG in each colour type and 16-bit, JPEG baseline/progressive/4:4:4/4:2:0/greyscale,
JPEG 2000 lossless and lossy, TIFF raw/LZW/Deflate/PackBits/JPEG, WebP lossy and lossless), has
onyx decode each with `onyx run --inputs DIR --save DIR` in the three pixel formats, and compares
with PIL's decoding as the reference implementation does it (RGB: `np.array(Image.open(...)
.convert("RGB"))`, BGR: that reversed, Grayscale: `.convert("L")`) — except 16-bit samples, which
PIL clips to 255 and onyx reduces to their high byte (docs/image-decoder.md). Prints each difference and a
summary; exits non-zero on any difference or failure.
"""

import argparse
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
from PIL import Image


def images():
    rng = np.random.default_rng(7)

    def board(h, w, tile=4):
        colours = rng.integers(0, 256, size=(h // tile + 1, w // tile + 1, 3), dtype=np.uint8)
        return np.repeat(np.repeat(colours, tile, 0), tile, 1)[:h, :w]

    def noise(h, w):
        return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)

    for h, w in [(32, 32), (17, 23), (1, 9), (40, 3)]:
        for kind, px in [("board", board(h, w)), ("noise", noise(h, w))]:
            rgb = Image.fromarray(px, "RGB")
            tag = f"{kind}{h}x{w}"
            yield f"bmp24_{tag}", rgb, "BMP", {}
            yield f"bmp8_{tag}", rgb.convert("P"), "BMP", {}
            yield f"bmp1_{tag}", rgb.convert("1"), "BMP", {}
            yield f"bmp_gray_{tag}", rgb.convert("L"), "BMP", {}
            yield f"bmp32_{tag}", rgb.convert("RGBA"), "BMP", {}
            yield f"ppm_{tag}", rgb, "PPM", {}
            yield f"pgm_{tag}", rgb.convert("L"), "PPM", {}
            yield f"pbm_{tag}", rgb.convert("1"), "PPM", {}
            yield f"png_{tag}", rgb, "PNG", {}
            yield f"png_gray_{tag}", rgb.convert("L"), "PNG", {}
            yield f"png_rgba_{tag}", rgb.convert("RGBA"), "PNG", {}
            yield f"png_la_{tag}", rgb.convert("LA"), "PNG", {}
            yield f"png_palette_{tag}", rgb.convert("P"), "PNG", {}
            yield f"png_1bit_{tag}", rgb.convert("1"), "PNG", {}
            yield f"png_interlaced_{tag}", rgb, "PNG", {"interlace": 1}
            yield f"jpeg_{tag}", rgb, "JPEG", {}
            yield f"jpeg_q95_444_{tag}", rgb, "JPEG", {"quality": 95, "subsampling": 0}
            yield f"jpeg_422_{tag}", rgb, "JPEG", {"subsampling": 1}
            yield f"jpeg_progressive_{tag}", rgb, "JPEG", {"progressive": True}
            yield f"jpeg_gray_{tag}", rgb.convert("L"), "JPEG", {}
            yield f"jp2_{tag}", rgb, "JPEG2000", {}
            yield f"j2k_{tag}", rgb, "JPEG2000", {"no_jp2": True}
            yield f"jp2_lossy_{tag}", rgb, "JPEG2000", {"quality_mode": "rates", "quality_layers": [20],
                                                       "irreversible": True}
            yield f"jp2_gray_{tag}", rgb.convert("L"), "JPEG2000", {}
            yield f"tiff_{tag}", rgb, "TIFF", {}
            for c in ["tiff_lzw", "tiff_adobe_deflate", "packbits", "jpeg"]:
                yield f"tiff_{c}_{tag}", rgb, "TIFF", {"compression": c}
            yield f"tiff_gray_{tag}", rgb.convert("L"), "TIFF", {}
            yield f"webp_{tag}", rgb, "WEBP", {}
            yield f"webp_lossless_{tag}", rgb, "WEBP", {"lossless": True}
            yield f"webp_rgba_{tag}", rgb.convert("RGBA"), "WEBP", {"lossless": True}
    big = Image.fromarray(board(300, 400, 16), "RGB")
    for fmt, kw in [("PNG", {}), ("JPEG", {}), ("WEBP", {}), ("TIFF", {}), ("BMP", {}), ("JPEG2000", {})]:
        yield f"big_{fmt.lower()}", big, fmt, kw
    png16 = Image.fromarray((rng.integers(0, 65536, size=(9, 11))).astype(np.uint16))
    yield "png_gray16", png16, "PNG", {}


def reference(data, pixel_format):
    im = Image.open(io.BytesIO(data))
    if im.mode in ("I;16", "I;16B", "I"):
        # PIL clips 16-bit samples to 255 when converting them to 8 bits; onyx keeps their 8 most
        # significant bits, as libpng's strip_16 and OpenCV do.
        g = (np.array(im).astype(np.uint32) >> 8).astype(np.uint8)
        if pixel_format == "Grayscale":
            return g[:, :, np.newaxis]
        return np.repeat(g[:, :, np.newaxis], 3, axis=2)
    if pixel_format == "Grayscale":
        return np.array(im.convert("L"))[:, :, np.newaxis]
    rgb = np.array(im.convert("RGB"))
    return rgb[:, :, ::-1] if pixel_format == "BGR" else rgb


def model(pixel_format):
    node = helper.make_node("ImageDecoder", ["data"], ["image"], pixel_format=pixel_format)
    g = helper.make_graph([node], "decode", [helper.make_tensor_value_info("data", TensorProto.UINT8, [None])],
                          [helper.make_tensor_value_info("image", TensorProto.UINT8, [None, None, None])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onyx")
    ap.add_argument("--keep", help="keep the cases in this directory")
    a = ap.parse_args()
    root = a.keep or tempfile.mkdtemp(prefix="onyx-images-")
    same = differ = failed = skipped = 0
    for name, im, fmt, kw in images():
        buf = io.BytesIO()
        im.save(buf, format=fmt, **kw)
        data = buf.getvalue()
        for pf in ["RGB", "BGR", "Grayscale"]:
            try:
                want = reference(data, pf)
            except Exception as e:  # PIL cannot read back some of its own variants
                print(f"skipped {name} {pf}: PIL cannot decode it ({e})")
                skipped += 1
                continue
            d = os.path.join(root, f"{name}_{pf}")
            os.makedirs(d + "/in", exist_ok=True)
            onnx.save(model(pf), d + "/model.onnx")
            onnx.save_tensor(numpy_helper.from_array(np.frombuffer(data, np.uint8), "data"), d + "/in/input_0.pb")
            r = subprocess.run([a.onyx, "run", d + "/model.onnx", "--inputs", d + "/in", "--save", d + "/out"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAILED {name} {pf}: {r.stderr.strip()}")
                failed += 1
                continue
            t = onnx.TensorProto()
            with open(d + "/out/output_0.pb", "rb") as f:
                t.ParseFromString(f.read())
            got = numpy_helper.to_array(t)
            if got.shape == want.shape and np.array_equal(got, want):
                same += 1
            else:
                diff = "shape %s, expected %s" % (got.shape, want.shape) if got.shape != want.shape else \
                    "%d of %d values differ, by at most %d" % (np.count_nonzero(got != want), want.size,
                                                             np.abs(got.astype(int) - want.astype(int)).max())
                print(f"DIFFERENT {name} {pf}: {diff}")
                differ += 1
    print(f"{same} the same as PIL, {differ} different, {failed} failed, {skipped} skipped")
    sys.exit(1 if differ or failed else 0)


if __name__ == "__main__":
    main()
