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

Shape matmul_batch_shape(const Shape& a, const Shape& b, const Node& node, Shape* ab, Shape* bb) {
  *ab = Shape{};
  *bb = Shape{};
  for (size_t d = 0; d + 2 < a.size(); ++d) ab->push_back(a[d]);
  for (size_t d = 0; d + 2 < b.size(); ++d) bb->push_back(b[d]);
  Shape batch;
  const size_t nb = std::max(ab->size(), bb->size());
  for (size_t d = 0; d < nb; ++d) {
    const int64_t da = d + ab->size() >= nb ? (*ab)[d + ab->size() - nb] : 1;
    const int64_t db = d + bb->size() >= nb ? (*bb)[d + bb->size() - nb] : 1;
    if (da != db && da != 1 && db != 1) fail(ErrorCode::kInvalidArgument, node.label(), ": batch shapes do not broadcast");
    batch.push_back(da == 1 ? db : da);
  }
  return batch;
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

Strided tile_view(const Shape& in, const std::vector<int64_t>& repeats, const Shape& out, Strided* dst) {
  const size_t r = in.size();
  if (repeats.size() != r || out.size() != r)
    fail(ErrorCode::kInvalidArgument, "Tile: ", repeats.size(), " repeats for an input of rank ", r);
  const Strided xs = contiguous(in);
  Shape dims;
  std::vector<int64_t> strides;
  for (size_t k = 0; k < r; ++k) {
    if (repeats[k] < 0 || in[k] * repeats[k] != out[k])
      fail(ErrorCode::kInvalidArgument, "Tile: repeats do not give the output shape ", out.to_string());
    if (repeats[k] != 1) {
      dims.push_back(repeats[k]);
      strides.push_back(0);
    }
    dims.push_back(in[k]);
    strides.push_back(xs.strides[k]);
  }
  if (dims.size() > static_cast<size_t>(kMaxRank))
    fail(ErrorCode::kNotImplemented, "cuda: Tile of rank ", r, " repeating ", dims.size() - r, " dims (at most ", kMaxRank, " split dims)");
  *dst = contiguous(dims);
  Strided src = *dst;
  for (size_t k = 0; k < dims.size(); ++k) src.strides[k] = strides[k];
  return src;
}

namespace {
/// The 6-dim iteration of a block rearrangement: destination dims (contiguous) and the source's
/// strides for them.
Strided six(const Shape& dims, const int64_t (&src_strides)[6], Strided* dst) {
  *dst = contiguous(dims);
  Strided s = *dst;
  for (int k = 0; k < 6; ++k) s.strides[k] = src_strides[k];
  return s;
}
}  // namespace

Strided depth_to_space_view(const Shape& in, int64_t b, bool crd, const Shape& out, Strided* dst) {
  if (in.size() != 4 || b <= 0 || in[1] % (b * b) != 0)
    fail(ErrorCode::kInvalidArgument, "DepthToSpace: input ", in.to_string(), " and blocksize ", b);
  const int64_t N = in[0], C = in[1] / (b * b), H = in[2], W = in[3];
  if (!(out == Shape{N, C, H * b, W * b})) fail(ErrorCode::kInvalidArgument, "DepthToSpace: output ", out.to_string());
  // y[n, c, h b + i, w b + j] = x[n, channel, h, w]: channel (i b + j) C + c (DCR) or c b^2 + i b + j (CRD).
  const int64_t hw = H * W;
  const int64_t st[6] = {in[1] * hw, crd ? b * b * hw : hw, W, crd ? b * hw : b * C * hw, 1, crd ? hw : C * hw};
  return six(Shape{N, C, H, b, W, b}, st, dst);
}

Strided space_to_depth_view(const Shape& in, int64_t b, bool crd, const Shape& out, Strided* dst) {
  if (in.size() != 4 || b <= 0 || in[2] % b != 0 || in[3] % b != 0)
    fail(ErrorCode::kInvalidArgument, "SpaceToDepth: input ", in.to_string(), " and blocksize ", b);
  const int64_t N = in[0], C = in[1], H = in[2] / b, W = in[3] / b;
  if (!(out == Shape{N, C * b * b, H, W})) fail(ErrorCode::kInvalidArgument, "SpaceToDepth: output ", out.to_string());
  // y[n, (i b + j) C + c, h, w] (DCR) or y[n, (c b + i) b + j, h, w] (CRD) = x[n, c, h b + i, w b + j].
  if (crd) {
    const int64_t st[6] = {C * in[2] * in[3], in[2] * in[3], in[3], 1, b * in[3], b};
    return six(Shape{N, C, b, b, H, W}, st, dst);
  }
  const int64_t st[6] = {C * in[2] * in[3], in[3], 1, in[2] * in[3], b * in[3], b};
  return six(Shape{N, b, b, C, H, W}, st, dst);
}

bool pad_mode_of(const std::string& name, PadMode* mode) {
  static const std::pair<const char*, PadMode> kModes[] = {
      {"constant", PadMode::kConstant}, {"reflect", PadMode::kReflect}, {"edge", PadMode::kEdge}, {"wrap", PadMode::kWrap}};
  for (const auto& [n, m] : kModes)
    if (name == n) {
      *mode = m;
      return true;
    }
  return false;
}

PoolArgs pool_args(const Shape& x, const WindowGeometry& g, bool max, bool count_include_pad, bool column_major_indices, float p) {
  const size_t sp = x.size() < 2 ? 0 : x.size() - 2;
  if (sp > 3 || g.out.size() != sp) fail(ErrorCode::kNotImplemented, "cuda: pooling over ", sp, " spatial dims (at most 3)");
  PoolArgs a;
  a.planes = x[0] * x[1];
  for (size_t k = 0; k < sp; ++k) {
    a.in[k] = x[k + 2];
    a.out[k] = g.out[k];
    a.k[k] = g.kernel[k];
    a.s[k] = g.stride[k];
    a.d[k] = g.dilation[k];
    a.pad_begin[k] = g.pad_begin[k];
    a.pad_end[k] = g.pad_end[k];
  }
  a.max = max;
  a.count_include_pad = count_include_pad;
  a.column_major_indices = column_major_indices;
  a.p = p;
  return a;
}

}  // namespace onyx::cuda
