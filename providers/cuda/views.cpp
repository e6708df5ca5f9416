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

Strided slice_view(const Shape& in, const SliceSpec& spec, const Shape& out) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (out.size() != in.size() || static_cast<int64_t>(spec.start.size()) != r)
    fail(ErrorCode::kInvalidArgument, "Slice: output rank differs from the input's");
  const Strided xs = contiguous(in);
  Strided src = contiguous(out);
  for (int64_t k = 0; k < r; ++k) {
    if (out[k] != spec.count[k]) fail(ErrorCode::kInvalidArgument, "Slice: output ", out.to_string(), " does not match the slice");
    src.offset += spec.start[k] * xs.strides[k];
    src.strides[k] = xs.strides[k] * spec.step[k];
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
