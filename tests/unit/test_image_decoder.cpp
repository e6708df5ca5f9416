// ImageDecoder: BMP and PNM variants built byte by byte here (the node tests have one of each),
// a PNG built here with stored deflate blocks (through the codec module), the three pixel
// formats, and malformed streams, each an onyx::Error saying what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "one_node.hpp"
#include "onyx_build_config.hpp"

using namespace onyx;
using namespace onyx::test;

namespace {

using Bytes = std::vector<uint8_t>;

Tensor decode(const Bytes& stream, const std::string& pixel_format = "RGB") {
  const Tensor x = tensor<uint8_t>({static_cast<int64_t>(stream.size())}, stream);
  return run1("ImageDecoder", {{"x", x}}, DType::kUInt8, {attr_string("pixel_format", pixel_format)}, 20);
}

std::string decode_error(const Bytes& stream) {
  try {
    decode(stream);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Bytes pixels_of(const Tensor& t) { return {t.data<uint8_t>(), t.data<uint8_t>() + t.numel()}; }

void put16(Bytes& b, uint32_t v) { b.push_back(v & 255), b.push_back((v >> 8) & 255); }
void put32(Bytes& b, uint32_t v) { put16(b, v & 0xffff), put16(b, v >> 16); }

/// A BMP with a 40-byte info header: `rows` are the stored rows (bottom-up unless height < 0),
/// each padded here to 4 bytes.
Bytes bmp(int32_t width, int32_t height, uint16_t bits, const std::vector<Bytes>& rows, uint32_t compression = 0,
          const std::vector<uint32_t>& extra = {}, uint32_t colours_used = 0) {
  Bytes pix;
  for (Bytes r : rows) {
    while (r.size() % 4) r.push_back(0);
    pix.insert(pix.end(), r.begin(), r.end());
  }
  const uint32_t offset = 14 + 40 + 4 * static_cast<uint32_t>(extra.size());
  Bytes b{'B', 'M'};
  put32(b, offset + static_cast<uint32_t>(pix.size()));
  put32(b, 0);
  put32(b, offset);
  put32(b, 40);
  put32(b, static_cast<uint32_t>(width));
  put32(b, static_cast<uint32_t>(height));
  put16(b, 1);
  put16(b, bits);
  put32(b, compression);
  put32(b, static_cast<uint32_t>(pix.size()));
  put32(b, 2835), put32(b, 2835), put32(b, colours_used), put32(b, 0);
  for (uint32_t e : extra) put32(b, e);  // masks or palette entries (B, G, R, 0)
  b.insert(b.end(), pix.begin(), pix.end());
  return b;
}

Bytes text(const std::string& s) { return {s.begin(), s.end()}; }

TEST(ImageDecoder, Bmp24BottomUpWithRowPadding) {
  // 3 x 2: top row red, green, blue; bottom row white, black, grey (stored first).
  const Bytes b = bmp(3, 2, 24, {{255, 255, 255, 0, 0, 0, 128, 128, 128}, {0, 0, 255, 0, 255, 0, 255, 0, 0}});
  const Tensor rgb = decode(b);
  EXPECT_EQ(rgb.shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(pixels_of(rgb), (Bytes{255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 128, 128, 128}));
  EXPECT_EQ(pixels_of(decode(b, "BGR")), (Bytes{0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255, 0, 0, 0, 128, 128, 128}));
  const Tensor grey = decode(b, "Grayscale");
  EXPECT_EQ(grey.shape(), (Shape{2, 3, 1}));
  // ITU-R 601 luma in PIL's fixed point: red 76, green 150, blue 29; grey levels unchanged.
  EXPECT_EQ(pixels_of(grey), (Bytes{76, 150, 29, 255, 0, 128}));
}

TEST(ImageDecoder, BmpTopDown32BitPaletteAndBitFields) {
  // 32-bit BI_RGB, top-down (negative height): B, G, R, X.
  EXPECT_EQ(pixels_of(decode(bmp(2, -1, 32, {{1, 2, 3, 99, 4, 5, 6, 99}}))), (Bytes{3, 2, 1, 6, 5, 4}));
  // 8-bit indices into a palette of two colours (B, G, R, 0 entries).
  EXPECT_EQ(pixels_of(decode(bmp(3, 1, 8, {{1, 0, 1}}, 0, {0x00102030u, 0x00a0b0c0u}, 2))),
            (Bytes{0xa0, 0xb0, 0xc0, 0x10, 0x20, 0x30, 0xa0, 0xb0, 0xc0}));
  // 16-bit default 5-5-5, then 5-6-5 bit fields: full red, full green, then full red, blue 16 of 31.
  EXPECT_EQ(pixels_of(decode(bmp(2, 1, 16, {{0x00, 0x7c, 0xe0, 0x03}}))), (Bytes{255, 0, 0, 0, 255, 0}));
  EXPECT_EQ(pixels_of(decode(bmp(2, 1, 16, {{0x00, 0xf8, 0x10, 0x00}}, 3, {0xf800u, 0x07e0u, 0x001fu}))),
            (Bytes{255, 0, 0, 0, 0, 132}));
}

TEST(ImageDecoder, Bmp1BitPixels) {
  const Tensor t = decode(bmp(10, 1, 1, {{0b10100000, 0b01000000}}, 0, {0x000000u, 0xffffffu}, 2));
  Bytes want;
  for (int bit : {1, 0, 1, 0, 0, 0, 0, 0, 0, 1})
    for (int c = 0; c < 3; ++c) want.push_back(bit ? 255 : 0);
  EXPECT_EQ(pixels_of(t), want);
}

TEST(ImageDecoder, PnmPlainRawGreyBitmapAndSixteenBit) {
  // Plain PPM with comments and a maximum value of 15 (scaled to 0..255).
  EXPECT_EQ(pixels_of(decode(text("P3\n# a comment\n2 1 # width height\n15\n15 0 5  0 15 10\n"))),
            (Bytes{255, 0, 85, 0, 255, 170}));
  // Raw PPM.
  Bytes p6 = text("P6 2 1 255\n");
  for (uint8_t v : {1, 2, 3, 4, 5, 6}) p6.push_back(v);
  EXPECT_EQ(pixels_of(decode(p6)), (Bytes{1, 2, 3, 4, 5, 6}));
  // Raw 16-bit PGM: big-endian samples over 65535.
  Bytes p5 = text("P5\n2 1\n65535\n");
  for (uint8_t v : {0xff, 0xff, 0x80, 0x00}) p5.push_back(v);
  EXPECT_EQ(pixels_of(decode(p5, "Grayscale")), (Bytes{255, 128}));
  // Raw and plain PBM: 1 is black.
  Bytes p4 = text("P4\n3 2\n");
  p4.push_back(0b10100000), p4.push_back(0b01000000);
  EXPECT_EQ(pixels_of(decode(p4, "Grayscale")), (Bytes{0, 255, 0, 255, 0, 255}));
  EXPECT_EQ(pixels_of(decode(text("P1\n3 1\n101"), "Grayscale")), (Bytes{0, 255, 0}));
}

// ---------------------------------------------------------------------------------------------
// PNG (through the codec module), written with stored deflate blocks.

uint32_t crc32(const uint8_t* p, size_t n, uint32_t c = 0xffffffffu) {
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return c;
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back((v >> s) & 255);
}

void chunk(Bytes& png, const char* type, const Bytes& data) {
  put_be32(png, static_cast<uint32_t>(data.size()));
  Bytes body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  png.insert(png.end(), body.begin(), body.end());
  put_be32(png, crc32(body.data(), body.size()) ^ 0xffffffffu);
}

/// An 8-bit PNG of `colour_type` (0 grey, 2 RGB, 6 RGBA) with the given rows (no filter).
Bytes png(uint32_t w, uint32_t h, uint8_t colour_type, const Bytes& samples) {
  Bytes out{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be32(ihdr, w), put_be32(ihdr, h);
  for (uint8_t v : {8, static_cast<int>(colour_type), 0, 0, 0}) ihdr.push_back(v);
  chunk(out, "IHDR", ihdr);
  const size_t row = samples.size() / h;
  Bytes raw;
  for (uint32_t y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), samples.begin() + y * row, samples.begin() + (y + 1) * row);
  }
  Bytes z{0x78, 0x01, 0x01};  // zlib header, one final stored block
  put16(z, static_cast<uint32_t>(raw.size())), put16(z, static_cast<uint32_t>(~raw.size() & 0xffff));
  z.insert(z.end(), raw.begin(), raw.end());
  uint32_t a = 1, b = 0;
  for (uint8_t v : raw) a = (a + v) % 65521, b = (b + a) % 65521;
  put_be32(z, (b << 16) | a);
  chunk(out, "IDAT", z);
  chunk(out, "IEND", {});
  return out;
}

bool module_decodes(const std::string& format) {
  return ("," + std::string(kImageCodecFormats) + ",").find("," + format + ",") != std::string::npos;
}

TEST(ImageDecoder, PngThroughTheCodecModule) {
  if (!module_decodes("png")) GTEST_SKIP() << "this build has no image codec module for PNG (libpng-dev missing)";
  const Bytes rgb{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
  EXPECT_EQ(pixels_of(decode(png(2, 2, 2, rgb))), rgb);
  const Tensor t = decode(png(2, 2, 2, rgb), "BGR");
  EXPECT_EQ(t.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(pixels_of(t), (Bytes{30, 20, 10, 60, 50, 40, 90, 80, 70, 120, 110, 100}));
  // Grey is replicated; alpha is dropped.
  EXPECT_EQ(pixels_of(decode(png(3, 1, 0, {0, 128, 255}))), (Bytes{0, 0, 0, 128, 128, 128, 255, 255, 255}));
  EXPECT_EQ(pixels_of(decode(png(1, 1, 6, {1, 2, 3, 4}))), (Bytes{1, 2, 3}));
  EXPECT_EQ(pixels_of(decode(png(3, 1, 0, {0, 128, 255}), "Grayscale")), (Bytes{0, 128, 255}));
}

TEST(ImageDecoder, CorruptPngIsAnError) {
  if (!module_decodes("png")) GTEST_SKIP() << "this build has no image codec module for PNG (libpng-dev missing)";
  Bytes p = png(2, 1, 2, {1, 2, 3, 4, 5, 6});
  Bytes truncated(p.begin(), p.begin() + 40);
  EXPECT_NE(decode_error(truncated).find("cannot decode the png image"), std::string::npos) << decode_error(truncated);
  p[30] ^= 0xff;  // inside IHDR: its CRC no longer matches
  EXPECT_NE(decode_error(p).find("libpng"), std::string::npos) << decode_error(p);
}

// ---------------------------------------------------------------------------------------------
// Malformed streams

TEST(ImageDecoder, MalformedStreamsAreErrors) {
  auto expect_error = [](const Bytes& b, const std::string& part) {
    const std::string m = decode_error(b);
    EXPECT_NE(m.find(part), std::string::npos) << "got: " << m;
  };
  expect_error({}, "not a BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP image (0 bytes)");
  expect_error(text("GIF89a...."), "starting 47 49 46 38 39 61 2e 2e");
  Bytes b = bmp(4, 4, 24, {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2, 3}});
  expect_error(Bytes(b.begin(), b.end() - 5), "past the end");
  expect_error(Bytes(b.begin(), b.begin() + 20), "shorter than a BMP header");
  expect_error(bmp(4, 1, 8, {{0, 0, 0, 0}}, 1), "run-length encoded (RLE8) bitmaps are not supported");
  expect_error(bmp(4, 1, 7, {{0, 0, 0, 0}}), "7 bits per pixel");
  expect_error(text("P6 100000 100000 255\n"), "more than the limit of 2^28 pixels");
  expect_error(bmp(0, 1, 24, {}), "0 x 1 pixels");
  expect_error(text("P3\n1 1\n15\n16 0 0\n"), "sample 16 is larger than the maximum value 15");
  expect_error(text("P6\n2 2\n255\nabc"), "the pixel data needs 12 bytes, the stream has 3");
  expect_error(text("P2\nx"), "expected the width");
  expect_error(text("P2\n2 2\n0\n"), "the maximum value is 0");
}

TEST(ImageDecoder, BadAttributeOrRankIsRefusedAtCreation) {
  const Tensor x = tensor<uint8_t>({2}, {1, 2});
  EXPECT_THROW(run1("ImageDecoder", {{"x", x}}, DType::kUInt8, {attr_string("pixel_format", "CMYK")}, 20), Error);
  const Tensor x2 = tensor<uint8_t>({1, 2}, {1, 2});
  EXPECT_THROW(run1("ImageDecoder", {{"x", x2}}, DType::kUInt8, {}, 20), Error);
}

}  // namespace
