/* The C interface between the CPU EP's ImageDecoder kernel and libonyx_image_codecs.so, the
 * module that decodes PNG, JPEG, JPEG 2000, TIFF and WebP with Debian's libraries (libpng,
 * libjpeg-turbo, OpenJPEG, libtiff, libwebp). libonyx never links them: the module is loaded the
 * first time an image in one of these formats is decoded, so a machine without them runs
 * everything else (and BMP / PNM images, which the kernel decodes itself). */
#ifndef ONYX_IMAGE_CODECS_ABI_H
#define ONYX_IMAGE_CODECS_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ONYX_IMAGE_CODECS_ABI_VERSION 1u

/* Called once per decoded image with its size: returns height * width * 3 bytes for the pixels
 * (8-bit RGB, rows top to bottom), or null when the image may not be that large (the caller
 * has kept the reason). */
typedef uint8_t* (*OnyxImageAlloc)(void* ctx, int64_t height, int64_t width);

typedef struct OnyxImageCodecs {
  uint32_t abi_version; /* ONYX_IMAGE_CODECS_ABI_VERSION */
  uint32_t struct_size; /* sizeof(OnyxImageCodecs) */
  const char* onyx_version;
  /* The formats this build of the module decodes, comma-separated, from "png", "jpeg",
   * "jpeg2000", "tiff", "webp". */
  const char* formats;
  /* Decodes one image of `format` into the buffer alloc() returns. 0 on success; otherwise
   * nonzero with a message in `error` (NUL-terminated, truncated to error_size). Never throws,
   * never aborts: corrupt data is an error. */
  int (*decode)(const char* format, const uint8_t* data, size_t size, OnyxImageAlloc alloc, void* alloc_ctx,
                char* error, size_t error_size);
} OnyxImageCodecs;

/* The module's one exported symbol. */
const OnyxImageCodecs* onyx_image_codecs(void);

#ifdef __cplusplus
}
#endif

#endif
