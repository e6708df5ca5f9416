// onyx: version.
#pragma once

#define ONYX_VERSION_MAJOR 0
#define ONYX_VERSION_MINOR 1
#define ONYX_VERSION_PATCH 0
#define ONYX_VERSION_STRING "0.1.0"

namespace onyx {
/// "0.1.0"
const char* version();
}  // namespace onyx
