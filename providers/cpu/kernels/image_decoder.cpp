// CPU kernel: ImageDecoder (opset 20). The format is recognised from the stream's first bytes,
// not from a name. BMP and PNM (PBM, PGM, PPM) are decoded here; PNG, JPEG, JPEG 2000, TIFF and
// WebP through libonyx_image_codecs.so (providers/cpu/codecs), loaded the first time one is met,
// so libonyx itself links no codec library. Every image is first decoded to 8-bit RGB and then
// written in the node's pixel_format; Grayscale is ITU-R 601 luma in PIL's fixed point (the
// reference implementation decodes with PIL), so a greyscale image comes back unchanged.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "../codecs/image_codecs_abi.h"
#include "ep/module.hpp"
#include "image_codecs.hpp"
#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "onyx/version.hpp"

namespace onyx::cpu {
namespace {

/// The largest image decoded: 2^28 pixels (768 MiB as RGB), against headers that claim more
/// than a model should be made to allocate.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

enum class Format { kUnknown, kBmp, kPnm, kPng, kJpeg, kJpeg2000, kTiff, kWebp };

const char* format_name(Format f) {
  switch (f) {
    case Format::kBmp: return "bmp";
    case Format::kPnm: return "pnm";
    case Format::kPng: return "png";
    case Format::kJpeg: return "jpeg";
    case Format::kJpeg2000: return "jpeg2000";
    case Format::kTiff: return "tiff";
    case Format::kWebp: return "webp";
    default: return "unknown";
  }
}

/// PNM's header separators.
bool pnm_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

bool starts_with(const uint8_t* d, size_t n, const char* magic, size_t m, size_t at = 0) {
  return n >= at + m && std::memcmp(d + at, magic, m) == 0;
}

Format sniff(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "BM", 2)) return Format::kBmp;
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' && (pnm_space(d[2]) || d[2] == '#'))
    return Format::kPnm;
  if (starts_with(d, n, "\x89PNG\r\n\x1a\n", 8)) return Format::kPng;
  if (starts_with(d, n, "\xff\xd8\xff", 3)) return Format::kJpeg;
  if (starts_with(d, n, "\0\0\0\x0cjP  \r\n\x87\n", 12) || starts_with(d, n, "\xff\x4f\xff\x51", 4))
    return Format::kJpeg2000;
  if (starts_with(d, n, "II*\0", 4) || starts_with(d, n, "MM\0*", 4)) return Format::kTiff;
  if (starts_with(d, n, "RIFF", 4) && starts_with(d, n, "WEBP", 4, 8)) return Format::kWebp;
  return Format::kUnknown;
}

enum class PixelFormat { kRgb, kBgr, kGray };

/// Where decoders put pixels, 8-bit RGB rows of the size they announce: straight into the output
/// for pixel_format RGB, else into a buffer that finish() converts into the output.
class Canvas {
 public:
  Canvas(KernelContext& ctx, PixelFormat pf) : ctx_(ctx), pf_(pf) {}

  /// The h x w x 3 pixels, after checking the size (`what`: the format, for messages).
  uint8_t* allocate(int64_t h, int64_t w, const char* what) {
    if (h <= 0 || w <= 0) fail(ErrorCode::kInvalidArgument, "the ", what, " image is ", w, " x ", h, " pixels");
    if (h > kMaxPixels / w)
      fail(ErrorCode::kInvalidArgument, "the ", what, " image is ", w, " x ", h,
           " pixels, more than the limit of 2^28 pixels");
    height_ = h, width_ = w;
    if (pf_ == PixelFormat::kRgb) return ctx_.allocate_output(0, DType::kUInt8, Shape{h, w, 3}).data<uint8_t>();
    rgb_.resize(static_cast<size_t>(h * w * 3));
    return rgb_.data();
  }

  void finish() {
    if (pf_ == PixelFormat::kRgb) return;
    const int64_t pixels = height_ * width_;
    uint8_t* y = ctx_.allocate_output(0, DType::kUInt8, Shape{height_, width_, pf_ == PixelFormat::kGray ? 1 : 3})
                     .data<uint8_t>();
    const uint8_t* s = rgb_.data();
    if (pf_ == PixelFormat::kBgr) {
      for (int64_t i = 0; i < pixels; ++i) y[3 * i] = s[3 * i + 2], y[3 * i + 1] = s[3 * i + 1], y[3 * i + 2] = s[3 * i];
      return;
    }
    for (int64_t i = 0; i < pixels; ++i)
      y[i] = static_cast<uint8_t>((s[3 * i] * 19595u + s[3 * i + 1] * 38470u + s[3 * i + 2] * 7471u + 0x8000u) >> 16);
  }

 private:
  KernelContext& ctx_;
  PixelFormat pf_;
  int64_t height_ = 0, width_ = 0;
  std::vector<uint8_t> rgb_;
};

// ---------------------------------------------------------------------------------------------
// BMP

uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t(p[3]) << 24); }
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

/// One colour channel of a BI_BITFIELDS pixel, scaled to 8 bits.
struct Field {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;
  explicit Field(uint32_t m = 0) : mask(m) {
    if (!m) return;
    while (!((m >> shift) & 1)) ++shift;
    max = m >> shift;
  }
  uint8_t operator()(uint32_t px) const {
    if (!mask) return 0;
    const uint64_t v = (px & mask) >> shift;
    return static_cast<uint8_t>((v * 255 + max / 2) / max);
  }
};

void decode_bmp(const uint8_t* d, size_t n, Canvas& canvas) {
  auto bad = [](auto&&... what) { fail(ErrorCode::kInvalidArgument, "BMP: ", what...); };
  if (n < 26) bad("the stream is ", n, " bytes, shorter than a BMP header");
  const uint32_t data_offset = le32(d + 10), header = le32(d + 14);
  int64_t width, height;
  uint32_t bits, compression = 0, colours_used = 0;
  size_t palette_entry = 4;
  if (header == 12) {  // OS/2 BITMAPCOREHEADER
    width = le16(d + 18);
    height = le16(d + 20);
    bits = le16(d + 24);
    palette_entry = 3;
  } else if (header >= 40 && header <= 124) {
    if (n < 14 + size_t{header}) bad("the stream ends inside its ", header, "-byte info header");
    width = static_cast<int32_t>(le32(d + 18));
    height = static_cast<int32_t>(le32(d + 22));
    bits = le16(d + 28);
    compression = le32(d + 30);
    colours_used = le32(d + 46);
  } else {
    bad("unknown info header size ", header);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;
  if (width <= 0 || height <= 0) bad("the image is ", width, " x ", height, " pixels");
  uint32_t masks[3] = {0, 0, 0};
  if (compression == 3 || compression == 6) {  // BI_BITFIELDS, BI_ALPHABITFIELDS
    if (bits != 16 && bits != 32) bad("bit fields with ", bits, " bits per pixel");
    const size_t at = 14 + 40;  // after a 40-byte header, or inside a V4 / V5 one
    if (n < at + 12) bad("the stream ends before its colour masks");
    for (int i = 0; i < 3; ++i) masks[i] = le32(d + at + 4 * i);
  } else if (compression == 1 || compression == 2) {
    fail(ErrorCode::kNotImplemented, "BMP: run-length encoded (RLE", compression == 1 ? 8 : 4,
         ") bitmaps are not supported");
  } else if (compression != 0) {
    fail(ErrorCode::kNotImplemented, "BMP: compression method ", compression, " is not supported");
  } else if (bits == 16) {
    masks[0] = 0x7c00, masks[1] = 0x03e0, masks[2] = 0x001f;  // 5-5-5
  }
  if (bits != 1 && bits != 4 && bits != 8 && bits != 16 && bits != 24 && bits != 32)
    bad(bits, " bits per pixel (expected 1, 4, 8, 16, 24 or 32)");
  std::vector<uint8_t> palette;  // RGB triples
  if (bits <= 8) {
    const uint32_t count = colours_used ? colours_used : (1u << bits);
    if (count > (1u << bits)) bad(count, " palette entries for ", bits, "-bit pixels");
    const size_t at = 14 + header + (compression == 3 && header == 40 ? 12 : 0);
    if (at + count * palette_entry > n) bad("the stream ends inside the palette");
    palette.assign(3 * (size_t{1} << bits), 0);
    for (uint32_t i = 0; i < count; ++i) {
      const uint8_t* e = d + at + i * palette_entry;
      palette[3 * i] = e[2], palette[3 * i + 1] = e[1], palette[3 * i + 2] = e[0];
    }
  }
  const int64_t stride = (width * bits + 31) / 32 * 4;
  if (data_offset > n || (n - data_offset) / stride < static_cast<size_t>(height))
    bad("the pixel data (", height, " rows of ", stride, " bytes from offset ", data_offset, ") is past the end of the ",
        n, "-byte stream");
  uint8_t* const pixels = canvas.allocate(height, width, "BMP");
  const Field fr(masks[0]), fg(masks[1]), fb(masks[2]);
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = d + data_offset + (top_down ? y : height - 1 - y) * stride;
    uint8_t* out = pixels + y * width * 3;
    for (int64_t x = 0; x < width; ++x, out += 3) {
      switch (bits) {
        case 24: out[0] = row[3 * x + 2], out[1] = row[3 * x + 1], out[2] = row[3 * x]; break;
        case 32:
          if (compression == 0) {
            out[0] = row[4 * x + 2], out[1] = row[4 * x + 1], out[2] = row[4 * x];
          } else {
            const uint32_t px = le32(row + 4 * x);
            out[0] = fr(px), out[1] = fg(px), out[2] = fb(px);
          }
          break;
        case 16: {
          const uint32_t px = le16(row + 2 * x);
          out[0] = fr(px), out[1] = fg(px), out[2] = fb(px);
          break;
        }
        default: {  // palette indices, most significant bits first
          const int64_t bit = x * bits;
          const uint32_t idx = (row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
          std::memcpy(out, &palette[3 * idx], 3);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// PNM (PBM, PGM, PPM; plain and raw)

struct PnmReader {
  const uint8_t* d;
  size_t n, pos = 2;

  [[noreturn]] void bad(const std::string& what) const {
    fail(ErrorCode::kInvalidArgument, "PNM: ", what, " (at byte ", pos, ")");
  }
  void skip_space() {
    while (pos < n) {
      if (d[pos] == '#') {
        while (pos < n && d[pos] != '\n' && d[pos] != '\r') ++pos;
      } else if (pnm_space(d[pos])) {
        ++pos;
      } else {
        break;
      }
    }
  }
  int64_t number(const char* what, int64_t max) {
    skip_space();
    if (pos >= n || d[pos] < '0' || d[pos] > '9') bad(str("expected the ", what));
    int64_t v = 0;
    while (pos < n && d[pos] >= '0' && d[pos] <= '9') {
      v = v * 10 + (d[pos++] - '0');
      if (v > max) bad(str("the ", what, " is larger than ", max));
    }
    return v;
  }
};

void decode_pnm(const uint8_t* d, size_t n, Canvas& canvas) {
  PnmReader r{d, n};
  const int kind = d[1] - '0';
  const bool bitmap = kind == 1 || kind == 4, colour = kind == 3 || kind == 6, raw = kind >= 4;
  const int64_t width = r.number("width", kMaxPixels), height = r.number("height", kMaxPixels);
  const int64_t maxval = bitmap ? 1 : r.number("maximum value", 65535);
  if (maxval == 0) r.bad("the maximum value is 0");
  if (raw) {
    if (r.pos >= n) r.bad("the stream ends before the pixel data");
    ++r.pos;  // the one whitespace character after the header
  }
  uint8_t* out = canvas.allocate(height, width, "PNM");
  const int channels = colour ? 3 : 1;
  const int bytes = maxval > 255 ? 2 : 1;
  auto scale = [&](int64_t v) -> uint8_t {
    if (v > maxval) r.bad(str("sample ", v, " is larger than the maximum value ", maxval));
    return static_cast<uint8_t>(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
  };
  if (raw && !bitmap) {
    const size_t need = static_cast<size_t>(width * height * channels * bytes);
    if (n - r.pos < need) r.bad(str("the pixel data needs ", need, " bytes, the stream has ", n - r.pos));
  }
  if (kind == 4) {
    const size_t row_bytes = static_cast<size_t>((width + 7) / 8);
    if ((n - r.pos) / row_bytes < static_cast<size_t>(height))
      r.bad(str("the pixel data needs ", row_bytes * height, " bytes, the stream has ", n - r.pos));
  }
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x, out += 3) {
      uint8_t s[3];
      if (kind == 4) {
        const uint8_t byte = d[r.pos + y * ((width + 7) / 8) + x / 8];
        s[0] = ((byte >> (7 - x % 8)) & 1) ? 0 : 255;  // 1 is black
      } else if (kind == 1) {
        r.skip_space();
        if (r.pos >= n || (d[r.pos] != '0' && d[r.pos] != '1')) r.bad("expected a 0 or 1 pixel");
        s[0] = d[r.pos++] == '1' ? 0 : 255;
      } else {
        for (int c = 0; c < channels; ++c) {
          int64_t v;
          if (raw) {
            v = bytes == 2 ? (d[r.pos] << 8) | d[r.pos + 1] : d[r.pos];
            r.pos += bytes;
          } else {
            v = r.number("sample", 65535);
          }
          s[c] = scale(v);
        }
      }
      if (channels == 1) s[1] = s[2] = s[0];
      std::memcpy(out, s, 3);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The codec module

struct Loaded {
  const OnyxImageCodecs* table = nullptr;
  ImageCodecsStatus status;
};

const Loaded& load_codecs() {
  static const Loaded loaded = [] {
    Loaded l;
    std::string reason;
    using Entry = const OnyxImageCodecs* (*)();
    auto entry = reinterpret_cast<Entry>(load_module_symbol("libonyx_image_codecs.so", "onyx_image_codecs", &reason));
    if (!entry) {
      l.status.reason = reason;
      return l;
    }
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(entry), &info) && info.dli_fname) l.status.module = info.dli_fname;
    const OnyxImageCodecs* t = entry();
    if (!t || t->abi_version != ONYX_IMAGE_CODECS_ABI_VERSION || t->struct_size < sizeof(OnyxImageCodecs) || !t->decode) {
      l.status.reason = str(l.status.module, " has another ABI version than this onyx");
    } else if (!t->onyx_version || std::strcmp(t->onyx_version, ONYX_VERSION_STRING) != 0) {
      l.status.reason = str(l.status.module, " was built for onyx ", t->onyx_version ? t->onyx_version : "?",
                            ", this is onyx ", ONYX_VERSION_STRING);
    } else {
      l.table = t;
      l.status.loaded = true;
      l.status.formats = t->formats ? t->formats : "";
    }
    return l;
  }();
  return loaded;
}

const OnyxImageCodecs* codec_module() {
  const Loaded& l = load_codecs();
  if (!l.table)
    fail(ErrorCode::kNotImplemented, "PNG, JPEG, JPEG 2000, TIFF and WebP images need the image codec module: ",
         l.status.reason);
  return l.table;
}

struct AllocCtx {
  Canvas* canvas;
  std::string refusal;
};

uint8_t* alloc_rgb(void* ctx, int64_t h, int64_t w) {
  auto* a = static_cast<AllocCtx*>(ctx);
  try {  // never throw through the codec libraries' C frames
    return a->canvas->allocate(h, w, "encoded");
  } catch (const std::exception& e) {
    a->refusal = e.what();
    return nullptr;
  }
}

void decode_with_module(Format f, const uint8_t* d, size_t n, Canvas& canvas) {
  const OnyxImageCodecs* codecs = codec_module();
  AllocCtx ctx{&canvas, {}};
  char error[512] = {};
  if (codecs->decode(format_name(f), d, n, alloc_rgb, &ctx, error, sizeof(error)) == 0) return;
  if (!ctx.refusal.empty()) fail(ErrorCode::kInvalidArgument, ctx.refusal);
  fail(ErrorCode::kInvalidArgument, "cannot decode the ", format_name(f), " image: ",
       error[0] ? error : "the codec gave no reason");
}

// ---------------------------------------------------------------------------------------------

void image_decoder_compute(const PixelFormat& pf, KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  if (X.shape().size() != 1)
    fail(ErrorCode::kInvalidArgument, "encoded_stream must be 1-D, got shape ", X.shape().to_string());
  const auto* d = X.data<uint8_t>();
  const size_t n = static_cast<size_t>(X.numel());
  const Format f = sniff(d, n);
  Canvas canvas(ctx, pf);
  switch (f) {
    case Format::kBmp: decode_bmp(d, n, canvas); break;
    case Format::kPnm: decode_pnm(d, n, canvas); break;
    case Format::kUnknown: {
      std::string head;
      static const char kHex[] = "0123456789abcdef";
      for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) {
        if (i) head += ' ';
        head += kHex[d[i] >> 4];
        head += kHex[d[i] & 15];
      }
      fail(ErrorCode::kInvalidArgument,
           "the encoded stream is not a BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP image (", n,
           " bytes", n ? ", starting " + head : std::string(), ")");
    }
    default: decode_with_module(f, d, n, canvas);
  }
  canvas.finish();
}

std::unique_ptr<Kernel> make_image_decoder(const KernelCreateInfo& info) {
  const std::string f = info.node.attr_string("pixel_format", "RGB");
  PixelFormat pf;
  if (f == "RGB") pf = PixelFormat::kRgb;
  else if (f == "BGR") pf = PixelFormat::kBgr;
  else if (f == "Grayscale") pf = PixelFormat::kGray;
  else fail(ErrorCode::kInvalidGraph, info.node.label(), ": attribute 'pixel_format' is '", f, "'; expected RGB, BGR or Grayscale");
  return make_fn_kernel(pf, image_decoder_compute);
}

const KernelDef kDefs[] = {
    {"", "ImageDecoder", 20, 99, {{0, type_mask({DType::kUInt8})}}, make_image_decoder},
};

}  // namespace

std::span<const KernelDef> image_decoder_kernels() { return kDefs; }

ImageCodecsStatus image_codecs_status() { return load_codecs().status; }

}  // namespace onyx::cpu
