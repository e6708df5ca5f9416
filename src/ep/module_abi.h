/* onyx EP module ABI: the one C symbol an EP module (libonyx_ep_<name>.so) exports.
 *
 * The module is built from onyx's source tree with the same compiler; its factory is a C++
 * onyx::EpFactory, handed over only after the loader has checked that the ABI version, the onyx
 * version and the toolchain build id all match. Nothing throws across this boundary: the entry
 * point and create_factory are noexcept and report failure by returning null.
 */
#ifndef ONYX_EP_MODULE_ABI_H_
#define ONYX_EP_MODULE_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define ONYX_EP_ABI_VERSION 1u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct OnyxEpModuleInfo {
  uint32_t abi_version;     /* ONYX_EP_ABI_VERSION the module was built against */
  uint32_t struct_size;     /* sizeof(OnyxEpModuleInfo) in the module */
  const char* name;         /* the EP's name, e.g. "onednn" */
  const char* onyx_version; /* onyx version the module was built from */
  const char* build_id;     /* compiler and C++ library ABI */
  /* Returns an onyx::EpFactory* (owned by the module, alive until exit) or null; on null, writes
   * a message into err (at most err_len bytes, NUL-terminated). */
  void* (*create_factory)(char* err, size_t err_len);
} OnyxEpModuleInfo;

/* Exported by every module. */
const OnyxEpModuleInfo* onyx_ep_module(void);

#ifdef __cplusplus
}
#endif

/* The toolchain id both sides compare. */
#define ONYX_EP_BUILD_ID_STRINGIFY2(x) #x
#define ONYX_EP_BUILD_ID_STRINGIFY(x) ONYX_EP_BUILD_ID_STRINGIFY2(x)
#define ONYX_EP_BUILD_ID "gcc " __VERSION__ " cxx11abi " ONYX_EP_BUILD_ID_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)

#endif /* ONYX_EP_MODULE_ABI_H_ */
