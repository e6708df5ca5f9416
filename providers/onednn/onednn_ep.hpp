// oneDNN EP internals shared by its files.
#pragma once

#include <memory>

#include "core/common.hpp"
#include "ep/factory.hpp"

namespace onyx::onednn {

/// The per-session EP.
std::unique_ptr<ExecutionProvider> create_onednn_ep(const EpCreateContext& ctx);

}  // namespace onyx::onednn
