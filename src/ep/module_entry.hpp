// Defines an EP module's entry point (for providers built as libonyx_ep_<name>.so):
//
//   ONYX_EP_MODULE("onednn", onyx::onednn::Factory)
//
// The factory is constructed once on first use; an exception during construction is caught and
// reported through the C ABI, never thrown across it.
#pragma once

#include <cstring>
#include <exception>

#include "ep/factory.hpp"
#include "ep/module_abi.h"
#include "onyx/version.hpp"

#define ONYX_EP_MODULE(NAME, FACTORY)                                                                     \
  namespace {                                                                                             \
  void* onyx_ep_create_factory(char* err, size_t len) noexcept {                                          \
    try {                                                                                                 \
      static FACTORY factory;                                                                             \
      return static_cast<onyx::EpFactory*>(&factory);                                                     \
    } catch (const std::exception& e) {                                                                   \
      std::strncpy(err, e.what(), len - 1);                                                               \
    } catch (...) {                                                                                       \
      std::strncpy(err, "unknown error creating the EP factory", len - 1);                                \
    }                                                                                                     \
    return nullptr;                                                                                       \
  }                                                                                                       \
  }                                                                                                       \
  extern "C" __attribute__((visibility("default"))) const OnyxEpModuleInfo* onyx_ep_module(void) {         \
    static const OnyxEpModuleInfo info = {ONYX_EP_ABI_VERSION, sizeof(OnyxEpModuleInfo), NAME,             \
                                          ONYX_VERSION_STRING, ONYX_EP_BUILD_ID, &onyx_ep_create_factory}; \
    return &info;                                                                                         \
  }
