// Linear algebra family: MatMul, Gemm, Det, Einsum.
#include <algorithm>
#include <map>

#include "ops/schema.hpp"

namespace onyx {
namespace {

void infer_matmul(InferContext& ctx) {
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  if (a.dtype != b.dtype) ctx.fail_node("inputs have different types: ", dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  if (!a.has_shape || !b.has_shape) return ctx.set_output_unranked(0, a.dtype);
  Shape sa = a.shape, sb = b.shape;
  if (sa.empty() || sb.empty()) ctx.fail_node("inputs must have rank >= 1");
  const bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va) sa.insert(0, 1);
  if (vb) sb.push_back(1);
  const int64_t ka = sa[sa.size() - 1], kb = sb[sb.size() - 2];
  if (ka >= 0 && kb >= 0 && ka != kb)
    ctx.fail_node("inner dimensions differ: ", a.shape.to_string(), " x ", b.shape.to_string());
  Shape ba(std::span<const int64_t>(sa.data(), sa.size() - 2));
  Shape bb(std::span<const int64_t>(sb.data(), sb.size() - 2));
  Shape out = shape_util::broadcast(ctx, ba, bb);
  if (!va) out.push_back(sa[sa.size() - 2]);
  if (!vb) out.push_back(sb[sb.size() - 1]);
  ctx.set_output(0, a.dtype, out);
}

/// onyx::Attention(Q [.., Sq, D], KT [.., D, Sk], V [.., Sk, Dv], bias): Y [.., Sq, Dv], batch dims
/// broadcast as in MatMul.
void infer_attention(InferContext& ctx) {
  const TypeInfo& q = ctx.input_type(0);
  const TypeInfo& kt = ctx.input_type(1);
  const TypeInfo& v = ctx.input_type(2);
  if (q.dtype != kt.dtype || q.dtype != v.dtype)
    ctx.fail_node("Q, KT and V have different types: ", dtype_name(q.dtype), ", ", dtype_name(kt.dtype), ", ", dtype_name(v.dtype));
  if (!q.has_shape || !kt.has_shape || !v.has_shape) return ctx.set_output_unranked(0, q.dtype);
  const Shape &sq = q.shape, &sk = kt.shape, &sv = v.shape;
  if (sq.size() < 2 || sk.size() < 2 || sv.size() < 2)
    ctx.fail_node("Q, KT and V must have rank >= 2, got ", sq.to_string(), ", ", sk.to_string(), ", ", sv.to_string());
  const int64_t d_q = sq[sq.size() - 1], d_k = sk[sk.size() - 2], s_k = sk[sk.size() - 1], s_v = sv[sv.size() - 2];
  if (d_q >= 0 && d_k >= 0 && d_q != d_k) ctx.fail_node("Q ", sq.to_string(), " and KT ", sk.to_string(), " differ in the head size");
  if (s_k >= 0 && s_v >= 0 && s_k != s_v) ctx.fail_node("KT ", sk.to_string(), " and V ", sv.to_string(), " differ in the key count");
  auto batch = [](const Shape& s) { return Shape(std::span<const int64_t>(s.data(), s.size() - 2)); };
  Shape out = shape_util::broadcast(ctx, shape_util::broadcast(ctx, batch(sq), batch(sk)), batch(sv));
  out.push_back(sq[sq.size() - 2]);
  out.push_back(sv[sv.size() - 1]);
  ctx.set_output(0, q.dtype, out);
}

void infer_gemm(InferContext& ctx) {
  const TypeInfo& a = ctx.input_type(0);
  const TypeInfo& b = ctx.input_type(1);
  if (a.dtype != b.dtype) ctx.fail_node("A and B have different types");
  if (!a.has_shape || !b.has_shape) return ctx.set_output(0, a.dtype, ctx.fresh_shape(2));
  if (a.shape.size() != 2 || b.shape.size() != 2)
    ctx.fail_node("A and B must be 2-D, got ", a.shape.to_string(), " and ", b.shape.to_string());
  const bool ta = ctx.node().attr_int("transA", 0) != 0, tb = ctx.node().attr_int("transB", 0) != 0;
  const int64_t m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (ka >= 0 && kb >= 0 && ka != kb)
    ctx.fail_node("inner dimensions differ: A ", a.shape.to_string(), (ta ? "^T" : ""), " x B ", b.shape.to_string(), (tb ? "^T" : ""));
  if (ctx.has_input(2) && ctx.input_has_shape(2) && m >= 0 && n >= 0) {
    // C must broadcast to [M, N] (unidirectionally).
    const Shape& c = ctx.input_shape(2);
    const bool legacy_ok = ctx.opset() < 7 && ctx.node().attr_int("broadcast", 0) == 0 && c == Shape({m, n});
    if (c.size() > 2) ctx.fail_node("C has rank ", c.size(), "; it must broadcast to [", m, ",", n, "]");
    for (size_t k = 0; k < c.size() && !legacy_ok; ++k) {
      const int64_t want = k + 2 - c.size() == 0 ? m : n;
      if (c[k] >= 0 && c[k] != 1 && c[k] != want)
        ctx.fail_node("C of shape ", c.to_string(), " does not broadcast to [", m, ",", n, "]");
    }
  }
  ctx.set_output(0, a.dtype, Shape{m, n});
}

void infer_det(InferContext& ctx) {
  const TypeInfo& x = ctx.input_type(0);
  if (!x.has_shape) return ctx.set_output_unranked(0, x.dtype);
  if (x.shape.size() < 2) ctx.fail_node("input must have rank >= 2");
  const int64_t r = x.shape[x.shape.size() - 2], c = x.shape[x.shape.size() - 1];
  if (r >= 0 && c >= 0 && r != c) ctx.fail_node("input matrices must be square, got ", x.shape.to_string());
  ctx.set_output(0, x.dtype, Shape(std::span<const int64_t>(x.shape.data(), x.shape.size() - 2)));
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  r.add("", "MatMul", {1, 9, 13}, infer_matmul);
  // onyx's own fused op (made by the optimizer from the decomposed attention pattern).
  r.add("onyx", "Attention", {1}, infer_attention);
  r.add("", "Gemm", {1, 6, 7, 9, 11, 13}, infer_gemm);
  // MatMul + bias row (+ activation), made by the optimizer: MatMul's shape.
  r.add("onyx", "FusedMatMul", {1}, infer_matmul);
  // Gemm with a Relu / Clip in its epilogue (made by the optimizer).
  r.add("onyx", "FusedGemm", {1}, infer_gemm);
  r.add("", "Det", {11, 22}, infer_det);
}

}  // namespace onyx
