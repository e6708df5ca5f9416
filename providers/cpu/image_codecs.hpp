// The image codec module (libonyx_image_codecs.so) as seen by the CPU EP's ImageDecoder: whether
// it loads on this machine and what it decodes (docs/image-decoder.md).
#pragma once

#include <string>

namespace onyx::cpu {

struct ImageCodecsStatus {
  bool loaded = false;
  std::string module;   // the file loaded
  std::string formats;  // comma-separated: png, jpeg, jpeg2000, tiff, webp (those built in)
  std::string reason;   // why it did not load: every path tried and what went wrong there
};

/// Loads the module if no ImageDecoder has yet (once per process) and says how that went.
ImageCodecsStatus image_codecs_status();

}  // namespace onyx::cpu
