// Shape arithmetic shared by the device EPs (Vulkan, WebGPU), whose kernels address tensors by
// element strides passed to the shader.
#pragma once

#include <cstdint>
#include <vector>

#include "onyx/shape.hpp"

namespace onyx {

/// Contiguous element strides of a shape.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

/// Element strides of `in` broadcast to `out` (0 on broadcast dims), aligned to the output's rank.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  const std::vector<int64_t> own = strides_of(in);
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) st[off + d] = in[d] == 1 && out[off + d] != 1 ? 0 : own[d];
  return st;
}

}  // namespace onyx
