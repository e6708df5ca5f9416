// libonyx_image_codecs.so: PNG, JPEG, JPEG 2000, TIFF and WebP decoding for the CPU EP's
// ImageDecoder kernel, through Debian's libraries. Each codec is compiled in when its library was
// found at build time (ONYX_CODEC_<NAME>); the exported table lists those. Every image comes out
// as 8-bit RGB rows, top to bottom: alpha is dropped, grey is replicated, samples wider than 8
// bits keep their 8 most significant bits. The libraries' fatal errors are caught (setjmp,
// error callbacks) and returned as messages: nothing here throws or aborts.
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "image_codecs_abi.h"
#include "onyx/version.hpp"

#ifdef ONYX_CODEC_PNG
#include <png.h>
#endif
#ifdef ONYX_CODEC_JPEG
#include <jpeglib.h>
#include <jerror.h>
#endif
#ifdef ONYX_CODEC_JPEG2000
#include <openjpeg.h>
#endif
#ifdef ONYX_CODEC_TIFF
#include <tiffio.h>
#endif
#ifdef ONYX_CODEC_WEBP
#include <webp/decode.h>
#endif

namespace {

/// The message buffer of one decode call.
struct Err {
  char* buf;
  size_t size;
  void set(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (!buf || size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, size, fmt, ap);
    va_end(ap);
  }
};

// ---------------------------------------------------------------------------------------------
#ifdef ONYX_CODEC_PNG

struct PngSource {
  const uint8_t* data;
  size_t size, offset;
  Err* err;
};

void png_read_bytes(png_structp png, png_bytep out, size_t n) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > s->size - s->offset) png_error(png, "the data ends early (truncated PNG)");
  std::memcpy(out, s->data + s->offset, n);
  s->offset += n;
}

void png_fatal(png_structp png, png_const_charp msg) {
  static_cast<PngSource*>(png_get_error_ptr(png))->err->set("libpng: %s", msg);
  png_longjmp(png, 1);
}

void png_warning_ignored(png_structp, png_const_charp) {}

int decode_png(const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* ctx, Err& err) {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
    err.set("not a PNG stream (bad signature)");
    return 1;
  }
  PngSource src{data, size, 0, &err};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fatal, png_warning_ignored);
  if (!png) {
    err.set("libpng could not start a decoder");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  png_bytep* volatile rows = nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    err.set("libpng could not start a decoder");
    return 1;
  }
  if (setjmp(png_jmpbuf(png))) {
    std::free(rows);
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  png_set_read_fn(png, &src, png_read_bytes);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info), depth = png_get_bit_depth(png, info);
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * 3) png_error(png, "unexpected row layout after conversion to RGB");
  uint8_t* out = alloc(ctx, h, w);
  if (!out) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  rows = static_cast<png_bytep*>(std::malloc(sizeof(png_bytep) * h));
  if (!rows) png_error(png, "out of memory");
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = out + static_cast<size_t>(y) * w * 3;
  png_read_image(png, rows);
  std::free(rows);
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

#endif
// ---------------------------------------------------------------------------------------------
#ifdef ONYX_CODEC_JPEG

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fatal(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

/// Warnings are ignored except a premature end of the data: a truncated JPEG is an error (as in
/// PIL), not an image padded with grey.
void jpeg_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) jpeg_fatal(c);
}

int decode_jpeg(const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* ctx, Err& err) {
  jpeg_decompress_struct cinfo;
  JpegError jerr;
  jerr.message[0] = '\0';
  cinfo.err = jpeg_std_error(&jerr.mgr);
  jerr.mgr.error_exit = jpeg_fatal;
  jerr.mgr.emit_message = jpeg_message;
  if (setjmp(jerr.jump)) {
    jpeg_destroy_decompress(&cinfo);
    err.set("libjpeg: %s", jerr.message);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    err.set("CMYK JPEG images are not supported (only greyscale, RGB and YCbCr ones)");
    return 1;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    err.set("libjpeg gave %d components for RGB output", cinfo.output_components);
    return 1;
  }
  uint8_t* out = alloc(ctx, cinfo.output_height, cinfo.output_width);
  if (!out) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  const size_t stride = static_cast<size_t>(cinfo.output_width) * 3;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out + cinfo.output_scanline * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

#endif
// ---------------------------------------------------------------------------------------------
#ifdef ONYX_CODEC_JPEG2000

struct J2kSource {
  const uint8_t* data;
  size_t size, offset;
};

OPJ_SIZE_T j2k_read(void* buf, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (s->offset >= s->size) return static_cast<OPJ_SIZE_T>(-1);
  const size_t k = n < s->size - s->offset ? n : s->size - s->offset;
  std::memcpy(buf, s->data + s->offset, k);
  s->offset += k;
  return k;
}

OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (n < 0) {
    const size_t back = static_cast<size_t>(-n) < s->offset ? static_cast<size_t>(-n) : s->offset;
    s->offset -= back;
    return -static_cast<OPJ_OFF_T>(back);
  }
  const size_t k = static_cast<size_t>(n) < s->size - s->offset ? static_cast<size_t>(n) : s->size - s->offset;
  s->offset += k;
  return static_cast<OPJ_OFF_T>(k);
}

OPJ_BOOL j2k_seek(OPJ_OFF_T pos, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (pos < 0 || static_cast<size_t>(pos) > s->size) return OPJ_FALSE;
  s->offset = static_cast<size_t>(pos);
  return OPJ_TRUE;
}

void j2k_error(const char* msg, void* user) {
  auto* e = static_cast<std::string*>(user);
  if (e->empty()) {
    *e = msg;
    while (!e->empty() && (e->back() == '\n' || e->back() == ' ')) e->pop_back();
  }
}

void j2k_quiet(const char*, void*) {}

int decode_jpeg2000(const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* ctx, Err& err) {
  static const uint8_t kJp2[] = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 13, 10, 0x87, 10};
  const bool jp2 = size >= sizeof(kJp2) && std::memcmp(data, kJp2, sizeof(kJp2)) == 0;
  J2kSource src{data, size, 0};
  opj_stream_t* stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  opj_codec_t* codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_image_t* image = nullptr;
  std::string message;
  int rc = 1;
  auto fail = [&](const char* what) {
    if (what) err.set("%s", what);
    else err.set("OpenJPEG: %s", message.empty() ? "the data could not be decoded" : message.c_str());
  };
  do {
    if (!stream || !codec) {
      fail("OpenJPEG could not start a decoder");
      break;
    }
    opj_stream_set_user_data(stream, &src, nullptr);
    opj_stream_set_user_data_length(stream, size);
    opj_stream_set_read_function(stream, j2k_read);
    opj_stream_set_skip_function(stream, j2k_skip);
    opj_stream_set_seek_function(stream, j2k_seek);
    opj_set_error_handler(codec, j2k_error, &message);
    opj_set_warning_handler(codec, j2k_quiet, nullptr);
    opj_set_info_handler(codec, j2k_quiet, nullptr);
    opj_dparameters_t params;
    opj_set_default_decoder_parameters(&params);
    if (!opj_setup_decoder(codec, &params) || !opj_read_header(stream, codec, &image) || !image) {
      fail(nullptr);
      break;
    }
    const int64_t w = static_cast<int64_t>(image->x1) - image->x0, h = static_cast<int64_t>(image->y1) - image->y0;
    if (image->numcomps == 0 || image->numcomps > 4) {
      err.set("%u components; greyscale (1, 2 with alpha) or RGB (3, 4 with alpha) expected", image->numcomps);
      break;
    }
    uint8_t* out = alloc(ctx, h, w);
    if (!out) break;
    if (!opj_decode(codec, stream, image) || !opj_end_decompress(codec, stream)) {
      fail(nullptr);
      break;
    }
    if (image->color_space == OPJ_CLRSPC_SYCC || image->color_space == OPJ_CLRSPC_EYCC ||
        image->color_space == OPJ_CLRSPC_CMYK) {
      err.set("JPEG 2000 images in YCC or CMYK colour spaces are not supported (only greyscale and RGB ones)");
      break;
    }
    const unsigned colours = image->numcomps >= 3 ? 3 : 1;
    bool ok = true;
    for (unsigned c = 0; c < colours; ++c) {
      const opj_image_comp_t& comp = image->comps[c];
      if (!comp.data || comp.w != static_cast<OPJ_UINT32>(w) || comp.h != static_cast<OPJ_UINT32>(h) || comp.prec == 0 ||
          comp.prec > 31) {
        ok = false;
        break;
      }
    }
    if (!ok) {
      err.set("JPEG 2000 images with subsampled components are not supported");
      break;
    }
    for (int64_t i = 0; i < w * h; ++i) {
      for (unsigned ch = 0; ch < 3; ++ch) {
        const opj_image_comp_t& comp = image->comps[colours == 3 ? ch : 0];
        int64_t v = comp.data[i];
        if (comp.sgnd) v += int64_t{1} << (comp.prec - 1);
        if (comp.prec > 8) v >>= (comp.prec - 8);
        else if (comp.prec < 8) v = v * 255 / ((int64_t{1} << comp.prec) - 1);
        out[i * 3 + ch] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    }
    rc = 0;
  } while (false);
  if (image) opj_image_destroy(image);
  if (codec) opj_destroy_codec(codec);
  if (stream) opj_stream_destroy(stream);
  return rc;
}

#endif
// ---------------------------------------------------------------------------------------------
#ifdef ONYX_CODEC_TIFF

struct TiffSource {
  const uint8_t* data;
  toff_t size, offset;
};

tmsize_t tiff_read(thandle_t h, void* buf, tmsize_t n) {
  auto* s = static_cast<TiffSource*>(h);
  if (n < 0 || s->offset >= s->size) return 0;
  const toff_t k = static_cast<toff_t>(n) < s->size - s->offset ? static_cast<toff_t>(n) : s->size - s->offset;
  std::memcpy(buf, s->data + s->offset, k);
  s->offset += k;
  return static_cast<tmsize_t>(k);
}
tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return 0; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  toff_t base = whence == SEEK_CUR ? s->offset : whence == SEEK_END ? s->size : 0;
  if (off > ~toff_t{0} - base) return static_cast<toff_t>(-1);
  s->offset = base + off;
  return s->offset;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffSource*>(h)->size; }

int tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* e = static_cast<std::string*>(user);
  if (e->empty()) {
    char buf[512];
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    *e = std::string(module ? module : "libtiff") + ": " + buf;
  }
  return 1;
}
int tiff_quiet(TIFF*, void*, const char*, const char*, va_list) { return 1; }

int decode_tiff(const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* ctx, Err& err) {
  TiffSource src{data, size, 0};
  std::string message;
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  if (!opts) {
    err.set("libtiff could not start a decoder");
    return 1;
  }
  TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_error, &message);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_quiet, nullptr);
  TIFF* tif = TIFFClientOpenExt("ImageDecoder input", "rm", &src, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                                nullptr, nullptr, opts);
  TIFFOpenOptionsFree(opts);
  if (!tif) {
    err.set("%s", message.empty() ? "libtiff: not a readable TIFF stream" : message.c_str());
    return 1;
  }
  uint32_t w = 0, h = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
  uint8_t* out = alloc(ctx, h, w);
  if (!out) {
    TIFFClose(tif);
    return 1;
  }
  const size_t pixels = static_cast<size_t>(w) * h;
  auto* raster = static_cast<uint32_t*>(std::malloc(pixels * sizeof(uint32_t)));
  if (!raster) {
    TIFFClose(tif);
    err.set("out of memory for a %u x %u TIFF raster", w, h);
    return 1;
  }
  const int ok = TIFFReadRGBAImageOriented(tif, w, h, raster, ORIENTATION_TOPLEFT, 1);
  TIFFClose(tif);
  if (!ok) {
    std::free(raster);
    err.set("%s", message.empty() ? "libtiff could not decode the image" : message.c_str());
    return 1;
  }
  for (size_t i = 0; i < pixels; ++i) {
    out[i * 3 + 0] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    out[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    out[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
  std::free(raster);
  return 0;
}

#endif
// ---------------------------------------------------------------------------------------------
#ifdef ONYX_CODEC_WEBP

int decode_webp(const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* ctx, Err& err) {
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(data, size, &f) != VP8_STATUS_OK) {
    err.set("libwebp: not a readable WebP stream");
    return 1;
  }
  if (f.has_animation) {
    err.set("animated WebP images are not supported");
    return 1;
  }
  uint8_t* out = alloc(ctx, f.height, f.width);
  if (!out) return 1;
  const size_t stride = static_cast<size_t>(f.width) * 3;
  if (!WebPDecodeRGBInto(data, size, out, stride * f.height, static_cast<int>(stride))) {
    err.set("libwebp could not decode the image (corrupt or truncated data)");
    return 1;
  }
  return 0;
}

#endif
// ---------------------------------------------------------------------------------------------

using DecodeFn = int (*)(const uint8_t*, size_t, OnyxImageAlloc, void*, Err&);

/// The codecs this build has.
constexpr struct {
  const char* name;
  DecodeFn decode;
} kCodecs[] = {
#ifdef ONYX_CODEC_PNG
    {"png", decode_png},
#endif
#ifdef ONYX_CODEC_JPEG
    {"jpeg", decode_jpeg},
#endif
#ifdef ONYX_CODEC_JPEG2000
    {"jpeg2000", decode_jpeg2000},
#endif
#ifdef ONYX_CODEC_TIFF
    {"tiff", decode_tiff},
#endif
#ifdef ONYX_CODEC_WEBP
    {"webp", decode_webp},
#endif
};

const std::string& format_list() {
  static const std::string s = [] {
    std::string f;
    for (const auto& c : kCodecs) {
      if (!f.empty()) f += ',';
      f += c.name;
    }
    return f;
  }();
  return s;
}

int decode(const char* format, const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* ctx, char* error,
           size_t error_size) {
  Err err{error, error_size};
  if (error && error_size) error[0] = '\0';
  for (const auto& c : kCodecs)
    if (format && std::strcmp(format, c.name) == 0) return c.decode(data, size, alloc, ctx, err);
  err.set("this build of the image codec module does not decode %s (it decodes: %s)", format ? format : "(null)",
          format_list().empty() ? "nothing" : format_list().c_str());
  return 1;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const OnyxImageCodecs* onyx_image_codecs(void) {
  static const OnyxImageCodecs table = {ONYX_IMAGE_CODECS_ABI_VERSION, sizeof(OnyxImageCodecs), ONYX_VERSION_STRING,
                                        format_list().c_str(), decode};
  return &table;
}
