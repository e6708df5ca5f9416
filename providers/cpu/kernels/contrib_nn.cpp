// CPU kernels of the com.microsoft transformer ops that work row by row: the Gelu family (Gelu,
// BiasGelu, FastGelu, QuickGelu, BiasSplitGelu), BiasAdd, GemmFastGelu and FusedMatMul (on the
// fp32 GEMM), SkipLayerNormalization, SkipSimplifiedLayerNormalization, ONNX Runtime's ai.onnx
// SimplifiedLayerNormalization, and EmbedLayerNormalization. Float32 (the CPU EP computes float16
// graphs in float). Rows are vectorised and split over threads.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/vmath.hpp"

namespace onyx::cpu {

namespace {

using vmath::vf;
constexpr int64_t kL = vmath::kLanes;

// ---- activations (vector forms) ------------------------------------------------------------

enum class Act { kGelu, kFastGelu, kQuickGelu };

struct ActState {
  Act act = Act::kGelu;
  float alpha = 1.702f;  // QuickGelu
};

inline vf act_v(const ActState& st, vf x) {
  switch (st.act) {
    case Act::kGelu: return 0.5f * x * (1.0f + vmath::erf(x * 0.70710678118654752f));
    case Act::kFastGelu: {
      const vf inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
      return 0.5f * x * (1.0f + vmath::tanh(inner));
    }
    case Act::kQuickGelu: return x * vmath::sigmoid(st.alpha * x);
  }
  return x;
}

/// y = act(x [+ bias]) over rows of `cols` values (the bias, when given, has `cols` values).
void act_rows(const ActState& st, const float* x, const float* bias, float* y, int64_t rows, int64_t cols, ThreadPool& pool) {
  if (!bias) {  // one flat range
    const int64_t n = rows * cols;
    const int64_t chunk = 4096;
    parallel_range(pool, (n + chunk - 1) / chunk, chunk * 16, [&](int64_t c0, int64_t c1) {
      const int64_t b = c0 * chunk, e = std::min(n, c1 * chunk);
      vmath::map(x + b, y + b, e - b, [&](vf v) { return act_v(st, v); });
    });
    return;
  }
  parallel_range(pool, rows, cols * 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      int64_t j = 0;
      for (; j + kL <= cols; j += kL) vmath::store(yr + j, act_v(st, vmath::load(xr + j) + vmath::load(bias + j)));
      if (j < cols) vmath::store_n(yr + j, act_v(st, vmath::load_n(xr + j, cols - j) + vmath::load_n(bias + j, cols - j)), cols - j);
    }
  });
}

void require_f32(const Tensor& t, const Node& node, const char* what) {
  if (t.dtype() != DType::kFloat) fail(ErrorCode::kInvalidArgument, node.label(), ": ", what, " must be float32, got ", dtype_name(t.dtype()));
}

/// A bias over X's last dim: 1-D with that many values.
void require_last_dim_vector(const Tensor& b, const Tensor& x, const Node& node, const char* what) {
  const int64_t cols = x.rank() ? x.dim(x.rank() - 1) : 1;
  if (b.rank() != 1 || b.dim(0) != cols)
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", what, " ", b.shape().to_string(), " must be 1-D with X's last dim (", cols, ")");
}

void act_compute(const ActState& st, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* bias = ctx.num_inputs() > 1 ? ctx.optional_input(1) : nullptr;
  const Node& n = ctx.node();
  require_f32(x, n, "X");
  if (bias) {
    require_f32(*bias, n, "the bias");
    require_last_dim_vector(*bias, x, n, "the bias");
  }
  if (x.numel() == 0) return;
  const int64_t cols = x.rank() ? x.dim(x.rank() - 1) : 1;
  act_rows(st, x.data<float>(), bias ? bias->data<float>() : nullptr, ctx.output(0).data<float>(), x.numel() / cols, cols, ctx.pool());
}

std::unique_ptr<Kernel> make_act(const KernelCreateInfo& info) {
  const Node& n = info.node;
  ActState st;
  if (n.op_type == "FastGelu") st.act = Act::kFastGelu;
  if (n.op_type == "QuickGelu") {
    st.act = Act::kQuickGelu;
    st.alpha = n.attr_float("alpha", 1.702f);
  }
  return make_fn_kernel(st, act_compute);
}

// ---- BiasAdd, BiasSplitGelu -----------------------------------------------------------------

void bias_add_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  const Tensor& skip = ctx.input(2);
  const Node& n = ctx.node();
  for (const Tensor* t : {&x, &bias, &skip}) require_f32(*t, n, "every input");
  if (x.rank() != 3 || !(skip.shape() == x.shape()))
    fail(ErrorCode::kInvalidArgument, n.label(), ": X ", x.shape().to_string(), " must be 3-D and skip ", skip.shape().to_string(), " the same");
  require_last_dim_vector(bias, x, n, "bias");
  const int64_t cols = x.dim(2), rows = x.numel() / std::max<int64_t>(1, cols);
  const float *px = x.data<float>(), *pb = bias.data<float>(), *ps = skip.data<float>();
  float* py = ctx.output(0).data<float>();
  parallel_range(ctx.pool(), rows, cols * 2, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < cols; ++j) py[r * cols + j] = px[r * cols + j] + pb[j] + ps[r * cols + j];
  });
}

void bias_split_gelu_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  const Node& n = ctx.node();
  require_f32(x, n, "X");
  require_f32(bias, n, "bias");
  if (x.rank() != 3 || x.dim(2) % 2 != 0) fail(ErrorCode::kInvalidArgument, n.label(), ": X ", x.shape().to_string(), " must be 3-D with an even last dim");
  require_last_dim_vector(bias, x, n, "bias");
  const int64_t d = x.dim(2), h = d / 2, rows = x.dim(0) * x.dim(1);
  const float *px = x.data<float>(), *pb = bias.data<float>();
  float* py = ctx.output(0).data<float>();
  const ActState gelu;
  parallel_range(ctx.pool(), rows, d * 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = px + r * d;
      float* yr = py + r * h;
      for (int64_t j = 0; j < h; j += kL) {
        const int64_t m = std::min(kL, h - j);
        const vf left = vmath::load_n(xr + j, m) + vmath::load_n(pb + j, m);
        const vf right = vmath::load_n(xr + h + j, m) + vmath::load_n(pb + h + j, m);
        vmath::store_n(yr + j, left * act_v(gelu, right), m);
      }
    }
  });
}

// ---- GemmFastGelu and FusedMatMul on the fp32 GEMM ------------------------------------------

/// An operand of a batched product: a matrix per batch index (row stride `ld`, columns dense),
/// `trans` when the stored matrix is the transpose of the operand.
struct MatOperand {
  const float* data = nullptr;
  int64_t rows = 0, cols = 0;  // of the operand (after transposes)
  int64_t ld = 0;
  bool trans = false;
  Shape batch;          // batch dims
  Shape batch_strides;  // element strides of the batch dims
};

/// X's view for FusedMatMul: transBatch moves dim 0 behind the other batch dims (its stride
/// becomes the matrix's row stride), trans swaps the matrix's two dims. A 1-D X is a row (A) or a
/// column (B).
MatOperand mat_operand(const Tensor& t, bool trans_batch, bool trans, bool is_a) {
  MatOperand m;
  m.data = t.data<float>();
  const int64_t r = t.rank();
  if (r == 1) {
    const int64_t k = t.dim(0);
    if (is_a) {
      m.rows = 1, m.cols = k, m.ld = k;
    } else {  // a column: the stored row of k values, transposed
      m.rows = k, m.cols = 1, m.ld = k, m.trans = true;
    }
    return m;
  }
  // Strides of the stored dims.
  Shape strides = Shape::filled(static_cast<size_t>(r), 1);
  for (int64_t i = r - 2; i >= 0; --i) strides[i] = strides[i + 1] * t.dim(i + 1);
  int64_t srow_dim = r - 2;  // the stored dim giving the matrix's rows
  std::vector<int64_t> batch_dims;
  if (trans_batch && r > 2) {
    srow_dim = 0;
    for (int64_t i = 1; i < r - 1; ++i) batch_dims.push_back(i);
  } else {
    for (int64_t i = 0; i < r - 2; ++i) batch_dims.push_back(i);
  }
  for (int64_t i : batch_dims) {
    m.batch.push_back(t.dim(i));
    m.batch_strides.push_back(strides[i]);
  }
  const int64_t srows = t.dim(srow_dim), scols = t.dim(r - 1);
  m.ld = strides[srow_dim];
  m.trans = trans;
  m.rows = trans ? scols : srows;
  m.cols = trans ? srows : scols;
  return m;
}

/// out = alpha * A x B over broadcast batch dims; `epilogue(c, rows, cols, ldc)` runs on each
/// product's output block.
template <class Epi>
void batched_product(const MatOperand& a, const MatOperand& b, float alpha, Tensor& y, const Node& node, ThreadPool& pool, Epi&& epilogue) {
  if (a.cols != b.rows)
    fail(ErrorCode::kInvalidArgument, node.label(), ": inner dimensions differ (", a.cols, " and ", b.rows, ") after the transposes");
  const size_t rb = std::max(a.batch.size(), b.batch.size());
  Shape dims = Shape::filled(rb, 1), sa = Shape::filled(rb, 0), sb = Shape::filled(rb, 0);
  for (int side = 0; side < 2; ++side) {
    const MatOperand& m = side ? b : a;
    Shape& s = side ? sb : sa;
    for (size_t i = 0; i < m.batch.size(); ++i) {
      const size_t at = rb - m.batch.size() + i;
      const int64_t d = m.batch[i];
      if (d != 1 && dims[at] != 1 && dims[at] != d) fail(ErrorCode::kInvalidArgument, node.label(), ": batch dims do not broadcast");
      if (d != 1) {
        dims[at] = d;
        s[at] = m.batch_strides[i];
      }
    }
  }
  const int64_t M = a.rows, N = b.cols, K = a.cols, batches = dims.numel();
  if (y.numel() != batches * M * N)
    fail(ErrorCode::kInvalidArgument, node.label(), ": output ", y.shape().to_string(), " does not hold the product's ", batches * M * N, " values");
  float* py = y.data<float>();
  if (y.numel() == 0) return;
  // Batches of small products are split over threads; a single large product threads inside sgemm.
  auto one = [&](int64_t bi) {
    int64_t oa = 0, ob = 0, rem = bi;
    for (size_t i = rb; i-- > 0;) {
      const int64_t idx = rem % dims[i];
      rem /= dims[i];
      oa += idx * sa[i];
      ob += idx * sb[i];
    }
    float* c = py + bi * M * N;
    if (K == 0)
      std::fill(c, c + M * N, 0.0f);
    else
      sgemm(a.trans, b.trans, M, N, K, alpha, a.data + oa, a.ld, b.data + ob, b.ld, 0.0f, c, N, batches == 1 ? &pool : nullptr);
    epilogue(c, M, N);
  };
  if (batches == 1) {
    one(0);
    return;
  }
  parallel_range(pool, batches, M * N * std::max<int64_t>(1, K), [&](int64_t b0, int64_t b1) {
    for (int64_t bi = b0; bi < b1; ++bi) one(bi);
  });
}

struct FusedMatMulState {
  float alpha = 1;
  bool ta = false, tb = false, tba = false, tbb = false;
};

void fused_matmul_compute(const FusedMatMulState& st, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_f32(a, ctx.node(), "A");
  require_f32(b, ctx.node(), "B");
  if (a.rank() == 0 || b.rank() == 0) fail(ErrorCode::kInvalidArgument, ctx.node().label(), ": inputs must have rank >= 1");
  batched_product(mat_operand(a, st.tba, st.ta, true), mat_operand(b, st.tbb, st.tb, false), st.alpha, ctx.output(0), ctx.node(),
                  ctx.pool(), [](float*, int64_t, int64_t) {});
}

std::unique_ptr<Kernel> make_fused_matmul(const KernelCreateInfo& info) {
  const Node& n = info.node;
  FusedMatMulState st;
  st.alpha = n.attr_float("alpha", 1.0f);
  st.ta = n.attr_int("transA", 0) != 0;
  st.tb = n.attr_int("transB", 0) != 0;
  st.tba = n.attr_int("transBatchA", 0) != 0;
  st.tbb = n.attr_int("transBatchB", 0) != 0;
  return make_fn_kernel(st, fused_matmul_compute);
}

void gemm_fast_gelu_compute(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  const Node& n = ctx.node();
  require_f32(x, n, "X");
  require_f32(w, n, "W");
  if (w.rank() != 2 || x.rank() < 1) fail(ErrorCode::kInvalidArgument, n.label(), ": W ", w.shape().to_string(), " must be 2-D and X of rank >= 1");
  if (bias) {
    require_f32(*bias, n, "bias");
    if (bias->rank() != 1 || bias->dim(0) != w.dim(1))
      fail(ErrorCode::kInvalidArgument, n.label(), ": bias ", bias->shape().to_string(), " must have W's ", w.dim(1), " columns");
  }
  const int64_t K = x.dim(x.rank() - 1);
  if (K != w.dim(0)) fail(ErrorCode::kInvalidArgument, n.label(), ": X ", x.shape().to_string(), " and W ", w.shape().to_string(), " do not chain");
  MatOperand a;
  a.data = x.data<float>();
  a.rows = K ? x.numel() / K : 0;
  a.cols = a.ld = K;
  const MatOperand b = mat_operand(w, false, false, false);
  Tensor& y = ctx.output(0);
  const ActState fast{Act::kFastGelu, 0};
  ThreadPool& pool = ctx.pool();
  batched_product(a, b, 1.0f, y, n, pool, [&](float* c, int64_t rows, int64_t cols) {
    act_rows(fast, c, bias ? bias->data<float>() : nullptr, c, rows, cols, pool);
  });
}

// ---- normalisations ---------------------------------------------------------------------------

using vmath::hsum;

/// Mean and 1 / sqrt(variance + eps) of a row (simplified: mean 0 and the root mean square).
void row_stats(const float* x, int64_t n, float eps, bool simplified, float* mean, float* inv_std) {
  vf s = vf{}, ss = vf{};
  int64_t j = 0;
  for (; j + kL <= n; j += kL) {
    const vf v = vmath::load(x + j);
    s += v;
    ss += v * v;
  }
  if (j < n) {
    const vf v = vmath::load_n(x + j, n - j);
    s += v;
    ss += v * v;
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mu = simplified ? 0.0f : hsum(s) * inv_n;
  const float var = simplified ? hsum(ss) * inv_n : std::max(0.0f, hsum(ss) * inv_n - mu * mu);
  *mean = mu;
  *inv_std = 1.0f / std::sqrt(var + eps);
}

using vmath::normalize_row;

struct SkipNormState {
  bool simplified = false;
  float eps = 1e-12f;
};

void skip_norm_compute(const SkipNormState& st, KernelContext& ctx) {
  const Node& n = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  const Tensor& gamma = ctx.input(2);
  const Tensor* beta = st.simplified ? nullptr : ctx.optional_input(3);
  const Tensor* bias = ctx.num_inputs() > (st.simplified ? 3u : 4u) ? ctx.optional_input(st.simplified ? 3 : 4) : nullptr;
  for (const Tensor* t : {&x, &skip, &gamma, beta, bias})
    if (t) require_f32(*t, n, "every input");
  if (x.rank() < 2 || x.rank() > 3) fail(ErrorCode::kInvalidArgument, n.label(), ": input must be 2-D or 3-D, got ", x.shape().to_string());
  const int64_t d = x.dim(x.rank() - 1), rows = d ? x.numel() / d : 0;
  for (const Tensor* t : {&gamma, beta, bias})
    if (t && (t->rank() != 1 || t->dim(0) != d))
      fail(ErrorCode::kInvalidArgument, n.label(), ": gamma, beta and bias must be 1-D of the hidden size ", d, ", got ", t->shape().to_string());
  // skip: like input, or broadcast over the batch ([S, D] or [1, S, D] for [B, S, D]).
  const int64_t skip_rows = d ? skip.numel() / d : 0;
  const bool skip_ok = skip.shape() == x.shape() ||
                       (x.rank() == 3 && skip.dim(skip.rank() - 1) == d && skip_rows == x.dim(1) &&
                        (skip.rank() == 2 || (skip.rank() == 3 && skip.dim(0) == 1)));
  if (!skip_ok) fail(ErrorCode::kInvalidArgument, n.label(), ": skip ", skip.shape().to_string(), " does not match input ", x.shape().to_string());
  Tensor& y = ctx.output(0);
  float* pmean = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
  float* pinv = ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;
  float* psum = ctx.num_outputs() > 3 && ctx.has_output(3) ? ctx.output(3).data<float>() : nullptr;
  const float *px = x.data<float>(), *ps = skip.data<float>(), *pg = gamma.data<float>();
  const float* pbeta = beta ? beta->data<float>() : nullptr;
  const float* pbias = bias ? bias->data<float>() : nullptr;
  float* py = y.data<float>();
  parallel_range(ctx.pool(), rows, d * 6, [&](int64_t r0, int64_t r1) {
    float* tmp = psum ? nullptr : reinterpret_cast<float*>(thread_workspace(Workspace::kWindow, static_cast<size_t>(d) * sizeof(float)));
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = px + r * d;
      const float* sr = ps + (r % skip_rows) * d;
      float* sum = psum ? psum + r * d : tmp;
      for (int64_t j = 0; j < d; j += kL) {
        const int64_t c = std::min(kL, d - j);
        vf v = vmath::load_n(xr + j, c) + vmath::load_n(sr + j, c);
        if (pbias) v += vmath::load_n(pbias + j, c);
        vmath::store_n(sum + j, v, c);
      }
      float mean, inv;
      row_stats(sum, d, st.eps, st.simplified, &mean, &inv);
      normalize_row(sum, py + r * d, d, mean, inv, pg, pbeta);
      if (pmean) pmean[r] = mean;
      if (pinv) pinv[r] = inv;
    }
  });
}

std::unique_ptr<Kernel> make_skip_norm(const KernelCreateInfo& info) {
  SkipNormState st;
  st.simplified = info.node.op_type == "SkipSimplifiedLayerNormalization";
  st.eps = info.node.attr_float("epsilon", 1e-12f);
  return make_fn_kernel(st, skip_norm_compute);
}

/// SimplifiedLayerNormalization: y = x / sqrt(mean(x^2) + eps) * scale over the dims from `axis`
/// on; inv_std_var per row.
void simplified_norm_compute(const int&, KernelContext& ctx) {
  const Node& n = ctx.node();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  require_f32(x, n, "X");
  require_f32(scale, n, "scale");
  const int64_t r = x.rank();
  const int64_t axis = normalize_axis(n.attr_int("axis", -1), r, n.label());
  int64_t rows = 1, cols = 1;
  for (int64_t k = 0; k < r; ++k) (k < axis ? rows : cols) *= x.dim(k);
  if (scale.numel() != cols)
    fail(ErrorCode::kInvalidArgument, n.label(), ": scale ", scale.shape().to_string(), " must have the ", cols, " values of the normalised dims");
  const float eps = n.attr_float("epsilon", 1e-5f);
  const float *px = x.data<float>(), *pg = scale.data<float>();
  float* py = ctx.output(0).data<float>();
  float* pinv = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
  if (cols == 0) return;
  parallel_range(ctx.pool(), rows, cols * 4, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      float mean, inv;
      row_stats(px + row * cols, cols, eps, true, &mean, &inv);
      normalize_row(px + row * cols, py + row * cols, cols, 0.0f, inv, pg, nullptr);
      if (pinv) pinv[row] = inv;
    }
  });
}

// ---- EmbedLayerNormalization ----------------------------------------------------------------

void embed_norm_compute(const float& eps, KernelContext& ctx) {
  const Node& n = ctx.node();
  const Tensor& ids = ctx.input(0);
  const Tensor* seg = ctx.optional_input(1);
  const Tensor& we = ctx.input(2);
  const Tensor& pe = ctx.input(3);
  const Tensor* se = ctx.optional_input(4);
  const Tensor& gamma = ctx.input(5);
  const Tensor& beta = ctx.input(6);
  const Tensor* mask = ctx.num_inputs() > 7 ? ctx.optional_input(7) : nullptr;
  const Tensor* pos = ctx.num_inputs() > 8 ? ctx.optional_input(8) : nullptr;
  for (const Tensor* t : {&we, &pe, se, &gamma, &beta})
    if (t) require_f32(*t, n, "the embeddings, gamma and beta");
  if (ids.rank() != 2) fail(ErrorCode::kInvalidArgument, n.label(), ": input_ids must be 2-D, got ", ids.shape().to_string());
  const int64_t B = ids.dim(0), S = ids.dim(1), D = we.dim(1);
  if (!seg != !se) fail(ErrorCode::kInvalidArgument, n.label(), ": segment_ids and segment_embedding must be given together");
  for (const Tensor* t : {&we, &pe, se})
    if (t && (t->rank() != 2 || t->dim(1) != D))
      fail(ErrorCode::kInvalidArgument, n.label(), ": the embedding tables must be 2-D of one width, got ", t->shape().to_string());
  for (const Tensor* t : {&gamma, &beta})
    if (t->rank() != 1 || t->dim(0) != D) fail(ErrorCode::kInvalidArgument, n.label(), ": gamma and beta must have ", D, " values");
  for (const Tensor* t : {seg, mask})
    if (t && !(t->shape() == ids.shape()))
      fail(ErrorCode::kInvalidArgument, n.label(), ": segment_ids and mask must be shaped like input_ids ", ids.shape().to_string());
  if (pos && !(pos->shape() == ids.shape()) && !(pos->shape() == Shape{1, S}))
    fail(ErrorCode::kInvalidArgument, n.label(), ": position_ids ", pos->shape().to_string(), " must be [", B, ",", S, "] or [1,", S, "]");
  // Indices are checked before anything is read.
  auto check = [&](const Tensor* t, int64_t limit, const char* what) {
    if (!t) return;
    for (int64_t e = 0; e < t->numel(); ++e)
      if (int_at(*t, e) < 0 || int_at(*t, e) >= limit)
        fail(ErrorCode::kInvalidArgument, n.label(), ": ", what, " value ", int_at(*t, e), " at ", e, " is outside [0, ", limit, ")");
  };
  check(&ids, we.dim(0), "input_ids");
  check(seg, se ? se->dim(0) : 0, "segment_ids");
  check(pos, pe.dim(0), "position_ids");
  if (!pos && S > pe.dim(0))
    fail(ErrorCode::kInvalidArgument, n.label(), ": sequence length ", S, " exceeds the position_embedding's ", pe.dim(0), " positions");
  float* py = ctx.output(0).data<float>();
  float* psum = ctx.num_outputs() > 2 && ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;
  const float *pw = we.data<float>(), *pp = pe.data<float>(), *ps = se ? se->data<float>() : nullptr;
  const float *pg = gamma.data<float>(), *pb = beta.data<float>();
  parallel_range(ctx.pool(), B * S, D * 6, [&](int64_t r0, int64_t r1) {
    float* tmp = psum ? nullptr : reinterpret_cast<float*>(thread_workspace(Workspace::kWindow, static_cast<size_t>(D) * sizeof(float)));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t s = r % S;
      const int64_t p = pos ? int_at(*pos, pos->numel() == S ? s : r) : s;
      const float* w = pw + int_at(ids, r) * D;
      const float* pr = pp + p * D;
      const float* sg = ps ? ps + int_at(*seg, r) * D : nullptr;
      float* sum = psum ? psum + r * D : tmp;
      for (int64_t j = 0; j < D; j += kL) {
        const int64_t c = std::min(kL, D - j);
        vf v = vmath::load_n(w + j, c) + vmath::load_n(pr + j, c);
        if (sg) v += vmath::load_n(sg + j, c);
        vmath::store_n(sum + j, v, c);
      }
      float mean, inv;
      row_stats(sum, D, eps, false, &mean, &inv);
      normalize_row(sum, py + r * D, D, mean, inv, pg, pb);
    }
  });
  if (ctx.num_outputs() > 1 && ctx.has_output(1)) {
    // mask_index: the number of ones in each mask row (0 without a mask).
    int32_t* mi = ctx.output(1).data<int32_t>();
    for (int64_t b = 0; b < B; ++b) {
      int64_t c = 0;
      if (mask)
        for (int64_t s = 0; s < S; ++s) c += int_at(*mask, b * S + s) != 0;
      mi[b] = static_cast<int32_t>(c);
    }
  }
}

std::unique_ptr<Kernel> make_embed_norm(const KernelCreateInfo& info) {
  return make_fn_kernel(info.node.attr_float("epsilon", 1e-12f), embed_norm_compute);
}

template <void (*Fn)(const int&, KernelContext&)>
std::unique_ptr<Kernel> make_plain(const KernelCreateInfo&) {
  return make_fn_kernel(0, Fn);
}

constexpr TypeMask kF32 = types::kFloat;

const KernelDef kDefs[] = {
    {"com.microsoft", "Gelu", 1, 1, {{0, kF32}}, make_act},
    {"com.microsoft", "BiasGelu", 1, 1, {{0, kF32}}, make_act},
    {"com.microsoft", "FastGelu", 1, 1, {{0, kF32}}, make_act},
    {"com.microsoft", "QuickGelu", 1, 1, {{0, kF32}}, make_act},
    {"com.microsoft", "BiasAdd", 1, 1, {{0, kF32}}, make_plain<bias_add_compute>},
    {"com.microsoft", "BiasSplitGelu", 1, 1, {{0, kF32}}, make_plain<bias_split_gelu_compute>},
    {"com.microsoft", "GemmFastGelu", 1, 1, {{0, kF32}}, make_plain<gemm_fast_gelu_compute>},
    {"com.microsoft", "FusedMatMul", 1, 1, {{0, kF32}}, make_fused_matmul},
    {"com.microsoft", "SkipLayerNormalization", 1, 1, {{0, kF32}}, make_skip_norm},
    {"com.microsoft", "SkipSimplifiedLayerNormalization", 1, 1, {{0, kF32}}, make_skip_norm},
    {"", "SimplifiedLayerNormalization", 1, 99, {{0, kF32}}, make_plain<simplified_norm_compute>},
    {"com.microsoft", "EmbedLayerNormalization", 1, 1, {{2, kF32}}, make_embed_norm},
};

}  // namespace

std::span<const KernelDef> contrib_nn_kernels() { return kDefs; }

}  // namespace onyx::cpu
