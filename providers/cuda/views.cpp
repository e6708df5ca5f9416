#include "views.hpp"

#include <algorithm>

#include "core/common.hpp"

namespace onyx::cuda {

Strided contiguous(const Shape& shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank)) fail(ErrorCode::kNotImplemented, "cuda: rank ", shape.size(), " > 8");
  Strided s;
  s.rank = static_cast<int>(shape.size());
  int64_t st = 1;
  for (int k = s.rank - 1; k >= 0; --k) {
    s.dims[k] = shape[k];
    s.strides[k] = st;
    st *= shape[k];
  }
  return s;
}

Strided broadcast_view(const Shape& shape, const Shape& out) {
  if (out.size() > static_cast<size_t>(kMaxRank)) fail(ErrorCode::kNotImplemented, "cuda: rank ", out.size(), " > 8");
  if (shape.size() > out.size()) fail(ErrorCode::kInvalidArgument, "cuda: cannot broadcast ", shape.to_string(), " to ", out.to_string());
  Strided s;
  s.rank = static_cast<int>(out.size());
  const size_t lead = out.size() - shape.size();
  int64_t st = 1;
  for (int k = s.rank - 1; k >= 0; --k) {
    s.dims[k] = out[k];
    if (static_cast<size_t>(k) < lead) {
      s.strides[k] = 0;
      continue;
    }
    const int64_t d = shape[k - lead];
    if (d != out[k] && d != 1)
      fail(ErrorCode::kInvalidArgument, "cuda: cannot broadcast ", shape.to_string(), " to ", out.to_string());
    s.strides[k] = d == 1 ? 0 : st;
    st *= d;
  }
  return s;
}

Strided transpose_view(const Shape& in, const std::vector<int64_t>& perm_in, const Shape& out) {
  const size_t r = in.size();
  std::vector<int64_t> perm = perm_in;
  if (perm.empty())
    for (size_t k = 0; k < r; ++k) perm.push_back(static_cast<int64_t>(r - 1 - k));
  if (perm.size() != r || out.size() != r)
    fail(ErrorCode::kInvalidArgument, "Transpose: perm has ", perm.size(), " entries for rank ", r);
  const Strided xs = contiguous(in);
  Strided src = contiguous(out);
  std::vector<char> seen(r, 0);
  for (size_t k = 0; k < r; ++k) {
    const int64_t p = perm[k] < 0 ? perm[k] + static_cast<int64_t>(r) : perm[k];
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[p]) fail(ErrorCode::kInvalidArgument, "Transpose: bad perm");
    seen[p] = 1;
    if (in[p] != out[k]) fail(ErrorCode::kInvalidArgument, "Transpose: output shape does not match perm");
    src.strides[k] = xs.strides[p];
  }
  return src;
}

Strided slice_view(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& axes_in,
                   const std::vector<int64_t>& steps_in, const Shape& out) {
  const int64_t r = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes = axes_in, steps = steps_in;
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    fail(ErrorCode::kInvalidArgument, "Slice: starts, axes and steps differ in length");
  if (out.size() != in.size()) fail(ErrorCode::kInvalidArgument, "Slice: output rank differs from the input's");
  const Strided xs = contiguous(in);
  Strided src = contiguous(out);
  for (int64_t k = 0; k < r; ++k) src.strides[k] = xs.strides[k];
  for (size_t j = 0; j < starts.size(); ++j) {
    const int64_t a = normalize_axis(axes[j], r, "Slice axis");
    const int64_t d = in[a];
    const int64_t step = steps[j];
    if (step == 0) fail(ErrorCode::kInvalidArgument, "Slice: a step is 0");
    if (d == 0) continue;
    int64_t st = starts[j] < 0 ? starts[j] + d : starts[j];
    st = step > 0 ? std::clamp<int64_t>(st, 0, d) : std::clamp<int64_t>(st, 0, d - 1);
    src.offset += st * xs.strides[a];
    src.strides[a] = xs.strides[a] * step;
  }
  return src;
}

Strided part_view(const Shape& whole, const Shape& part, int64_t axis, int64_t at) {
  if (whole.size() != part.size()) fail(ErrorCode::kInvalidArgument, "cuda: parts must have the whole's rank");
  Strided v = contiguous(whole);
  for (size_t k = 0; k < part.size(); ++k) v.dims[k] = part[k];
  v.offset = at * v.strides[axis];
  return v;
}

}  // namespace onyx::cuda
