// CPU kernel: com.microsoft DynamicQuantizeLSTM, an LSTM whose W and R are 8-bit (int8 or uint8,
// stored [num_directions, input or hidden, 4*hidden] with per-tensor or per-column scales and
// zero points) and whose float activations are quantized to uint8 at run time, as ONNX Runtime
// computes it:
// - X is quantized once, over the first max(sequence_lens) time steps of every batch entry
//   (DynamicQuantizeLinear's scale and zero point: the range with 0 in it over 255 steps), and
//   its projection X W for all those steps is one integer GEMM, dequantized with
//   x_scale * W_scale[column];
// - at each step the hidden-state rows of the whole batch are quantized together the same way
//   and multiplied by R (a second integer GEMM), dequantized with h_scale * R_scale[column] and
//   added to the projection; the gates then follow ai.onnx LSTM (gate order i, o, f, c).
// Which hidden rows enter a step's quantization is ONNX Runtime's too: at step 0 every row's
// initial_h; later a row whose sequence has ended reads as zeros when Y is computed, and keeps
// its last state when it is not (a row with an empty sequence reads as zeros either way).
// Per-column zero points are applied column by column (ONNX Runtime takes the first of each
// direction and refuses others than all 0 for int8 or all equal for uint8, so the results agree
// wherever it runs). Activation alpha / beta defaults are ONNX Runtime's: 0 where the ONNX spec
// gives other values, except LeakyRelu 0.01, HardSigmoid 0.2 / 0.5, Elu 1.
// Constant W and R (with constant zero points) are packed for the integer GEMM once, when the
// kernel is made.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/manifest.hpp"
#include "kernels/qgemm.hpp"
#include "kernels/qmath.hpp"
#include "kernels/rnn_activation.hpp"
#include "ops/rnn.hpp"

namespace onyx {
// ops/contrib_rnn.cpp: the shape checks shared with shape inference.
RnnDims dq_lstm_check_shapes(const Node& node, int64_t dirs, int64_t hidden, const Shape& x, const Shape& w,
                             const Shape& r, const Shape* b, const Shape* seq_lens, const Shape* initial_h,
                             const Shape* initial_c, const Shape* p, const Shape* w_scale, const Shape* w_zp,
                             const Shape* r_scale, const Shape* r_zp);
}  // namespace onyx

namespace onyx::cpu {
namespace {

using rnn_act::Activation;
using rnn_act::ActDefaults;

/// acc[j] += a[j] * b[j] for j < n with the product rounded before the add (GCC would fuse
/// them where the target has FMA; in separate loops it cannot), `t` n floats of scratch.
void add_product(float* acc, const float* a, const float* b, float* t, int64_t n) {
  for (int64_t j = 0; j < n; ++j) t[j] = a[j] * b[j];
  for (int64_t j = 0; j < n; ++j) acc[j] += t[j];
}

// ---- inputs ----

constexpr int kW = 1, kR = 2, kWScale = 8, kWZeroPoint = 9, kRScale = 10, kRZeroPoint = 11;

bool is_q8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

/// The zero points of direction d of a [num_directions] or [num_directions, n] tensor, as int32
/// (one value, or one per column).
std::vector<int32_t> zero_points(const Tensor& zp, int64_t d, int64_t n) {
  const int64_t count = zp.rank() == 2 ? n : 1;
  std::vector<int32_t> z(static_cast<size_t>(count));
  const auto* raw = static_cast<const uint8_t*>(zp.raw_data()) + d * count;
  for (int64_t j = 0; j < count; ++j)
    z[static_cast<size_t>(j)] = zp.dtype() == DType::kInt8 ? static_cast<int32_t>(static_cast<int8_t>(raw[j])) : raw[j];
  return z;
}

/// The dtype checks of one 8-bit weight (W or R) and its zero point.
void check_weight_types(const Node& node, const Tensor& w, const Tensor& zp, const char* name, int idx,
                        const char* zp_name, int zp_idx) {
  if (!is_q8(w.dtype()))
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", name, " (input ", idx, ") must be int8 or uint8, got ",
         dtype_name(w.dtype()));
  if (zp.dtype() != w.dtype())
    fail(ErrorCode::kInvalidArgument, node.label(), ": ", zp_name, " (input ", zp_idx, ") has type ",
         dtype_name(zp.dtype()), " but ", name, " has type ", dtype_name(w.dtype()));
}

/// DynamicQuantizeLinear's uint8 quantization of n floats (dynamic_quantize_u8, quant.cpp):
/// below 16384 values here in one pass on this thread (the same scale, zero point and rounding;
/// that function's split into parts for the threads costs more than the work for a step's
/// hidden rows).
DynamicQuant quantize_u8(const float* x, int64_t n, uint8_t* y, ThreadPool& pool) {
  if (n > 16384) return dynamic_quantize_u8(x, n, y, pool);
  float lo = 0.0f, hi = 0.0f;
  qmath::min_max(x, n, lo, hi);
  DynamicQuant q;
  q.scale = (hi - lo) / 255.0f;
  float zp = 0.0f;
  if (q.scale > 0.0f && std::isfinite(q.scale)) zp = std::nearbyint(std::clamp(0.0f - lo / q.scale, 0.0f, 255.0f));
  q.zero_point = static_cast<int32_t>(zp);
  if (!(q.scale > 0.0f))
    std::memset(y, 0, static_cast<size_t>(n));
  else
    qmath::quantize_row(x, y, n, q.scale, zp);
  return q;
}

// ---- kernel ----

class DqLstmKernel final : public Kernel {
 public:
  explicit DqLstmKernel(const KernelCreateInfo& info) : node_(info.node) {
    const Node& n = info.node;
    dir_ = rnn_direction(n);
    dirs_ = rnn_num_directions(dir_);
    if (!n.has_attr("hidden_size"))
      fail(ErrorCode::kInvalidGraph, n.label(), ": the hidden_size attribute is required");
    hidden_ = n.attr_int("hidden_size", 0);
    if (hidden_ <= 0 || hidden_ > (int64_t(1) << 40))
      fail(ErrorCode::kInvalidGraph, n.label(), ": hidden_size must be positive and at most 2^40, got ", hidden_);
    if (n.has_attr("clip")) {
      clip_ = n.attr_float("clip", 0.0f);
      if (!(clip_ > 0.0f)) fail(ErrorCode::kInvalidGraph, n.label(), ": clip must be positive, got ", clip_);
      has_clip_ = true;
    }
    if (n.attr_int("layout", 0) != 0)
      fail(ErrorCode::kNotImplemented, n.label(), ": layout ", n.attr_int("layout", 0), " is not supported (only 0)");
    input_forget_ = n.attr_int("input_forget", 0) != 0;
    parse_activations(n);
    w_packed_ = prepack(info, kW, kWZeroPoint);  // (none when input_size is 0: nothing to multiply)
    r_packed_ = prepack(info, kR, kRZeroPoint);
  }

  void compute(KernelContext& ctx) const override;

 private:
  void parse_activations(const Node& n) {
    const std::vector<std::string> names = n.attr_strings("activations");
    if (names.empty()) {
      for (auto& d : acts_) {
        d[0].kind = rnn_act::ActKind::kSigmoid;
        d[1].kind = rnn_act::ActKind::kTanh;
        d[2].kind = rnn_act::ActKind::kTanh;
      }
      return;
    }
    if (names.size() != static_cast<size_t>(3 * dirs_))
      fail(ErrorCode::kInvalidGraph, n.label(), ": activations has ", names.size(), " entries; expected ", 3 * dirs_,
           " (3 per direction)");
    const std::vector<float> alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
    size_t ai = 0, bi = 0;
    for (size_t i = 0; i < names.size(); ++i)
      acts_[i / 3][i % 3] = rnn_act::parse_activation(n, names[i], alphas, ai, betas, bi, ActDefaults::kOnnxRuntime);
  }

  /// W or R ([num_directions, k, 4*hidden]) packed per direction for qgemm, its zero points
  /// taken off.
  std::vector<QPackedB> pack(const Tensor& w, const Tensor& zp) const {
    const int64_t k = w.dim(1), n = w.dim(2);
    std::vector<QPackedB> out;
    for (int64_t d = 0; d < dirs_; ++d) {
      const std::vector<int32_t> z = zero_points(zp, d, n);
      const auto* base = static_cast<const uint8_t*>(w.raw_data()) + d * k * n;
      out.push_back(qpack_b(base, w.dtype() == DType::kUInt8, k, n, n, 1, z.data(), static_cast<int64_t>(z.size())));
    }
    return out;
  }

  /// Packs a constant weight with a constant zero point of fitting shapes; else nothing (it is
  /// then packed, or its shapes reported, at run time).
  std::vector<QPackedB> prepack(const KernelCreateInfo& info, int idx, int zp_idx) const {
    const Tensor* w = info.constant(static_cast<size_t>(idx));
    const Tensor* zp = info.constant(static_cast<size_t>(zp_idx));
    if (!w || !zp || !is_q8(w->dtype()) || zp->dtype() != w->dtype() || w->rank() != 3 || w->numel() == 0 ||
        w->dim(0) != dirs_ || w->dim(2) != 4 * hidden_ || (idx == kR && w->dim(1) != hidden_))
      return {};
    const bool per_tensor = zp->rank() == 1 && zp->dim(0) == dirs_;
    const bool per_column = zp->rank() == 2 && zp->dim(0) == dirs_ && zp->dim(1) == 4 * hidden_;
    if (!per_tensor && !per_column) return {};
    return pack(*w, *zp);
  }

  const Node& node_;
  RnnDirection dir_ = RnnDirection::kForward;
  int64_t dirs_ = 1;
  int64_t hidden_ = 0;
  bool has_clip_ = false;
  float clip_ = 0.0f;
  bool input_forget_ = false;
  Activation acts_[2][3];
  std::vector<QPackedB> w_packed_, r_packed_;
};

void DqLstmKernel::compute(KernelContext& ctx) const {
  const Node& node = node_;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(kW);
  const Tensor& r = ctx.input(kR);
  const Tensor* bt = ctx.optional_input(3);
  const Tensor* sl = ctx.optional_input(4);
  const Tensor* h0t = ctx.optional_input(5);
  const Tensor* c0t = ctx.optional_input(6);
  const Tensor* pt = ctx.optional_input(7);
  const Tensor& ws = ctx.input(kWScale);
  const Tensor& wz = ctx.input(kWZeroPoint);
  const Tensor& rs = ctx.input(kRScale);
  const Tensor& rz = ctx.input(kRZeroPoint);

  // Types, then shapes.
  static const char* const kFloatNames[] = {"X",         "",  "",        "B", "",       "initial_h",
                                            "initial_c", "P", "W_scale", "",  "R_scale"};
  for (size_t i : {size_t(0), size_t(3), size_t(5), size_t(6), size_t(7), size_t(8), size_t(10)}) {
    const Tensor* t = i == 0 ? &x : ctx.optional_input(i);
    if (t && t->dtype() != DType::kFloat)
      fail(ErrorCode::kInvalidArgument, node.label(), ": ", kFloatNames[i], " (input ", i, ") must be float, got ",
           dtype_name(t->dtype()));
  }
  check_weight_types(node, w, wz, "W", kW, "W_zero_point", kWZeroPoint);
  check_weight_types(node, r, rz, "R", kR, "R_zero_point", kRZeroPoint);
  auto shape_of = [](const Tensor* t) { return t ? &t->shape() : nullptr; };
  const RnnDims dm = dq_lstm_check_shapes(node, dirs_, hidden_, x.shape(), w.shape(), r.shape(), shape_of(bt),
                                          shape_of(sl), shape_of(h0t), shape_of(c0t), shape_of(pt), &ws.shape(),
                                          &wz.shape(), &rs.shape(), &rz.shape());
  const int64_t S = dm.seq, Bt = dm.batch, I = dm.input, H = hidden_, D = dirs_, G = 4 * H;
  const int32_t* lens = nullptr;
  if (sl) {
    if (sl->dtype() != DType::kInt32)
      fail(ErrorCode::kInvalidArgument, node.label(), ": sequence_lens (input 4) must be int32, got ",
           dtype_name(sl->dtype()));
    lens = sl->data<int32_t>();
    for (int64_t b = 0; b < Bt; ++b)
      if (lens[b] < 0 || lens[b] > S)
        fail(ErrorCode::kInvalidArgument, node.label(), ": sequence_lens (input 4) has value ", lens[b], " at batch ",
             b, " outside [0, ", S, "] (seq_length)");
  }

  float* y = ctx.has_output(0) ? ctx.output(0).data<float>() : nullptr;
  float* yh = ctx.has_output(1) ? ctx.output(1).data<float>() : nullptr;
  float* yc = ctx.has_output(2) ? ctx.output(2).data<float>() : nullptr;
  // Steps past a sequence's end, and the states of empty sequences, are zeros.
  if (y) std::fill(y, y + S * D * Bt * H, 0.0f);
  for (float* o : {yh, yc})
    if (o) std::fill(o, o + D * Bt * H, 0.0f);
  if (Bt == 0) return;
  int64_t max_len = S;
  if (lens) max_len = *std::max_element(lens, lens + Bt);
  if (max_len == 0) return;

  // The packed weights: made at creation, or now.
  std::vector<QPackedB> w_now, r_now;
  const std::vector<QPackedB>* wp = &w_packed_;
  const std::vector<QPackedB>* rp = &r_packed_;
  if (I > 0 && (wp->empty() || (*wp)[0].k() != I)) {
    w_now = pack(w, wz);
    wp = &w_now;
  }
  if (rp->empty()) {
    r_now = pack(r, rz);
    rp = &r_now;
  }
  const int64_t ws_count = ws.rank() == 2 ? G : 1, rs_count = rs.rank() == 2 ? G : 1;

  const float* px = x.data<float>();
  const float* pb = bt ? bt->data<float>() : nullptr;
  const float* ph0 = h0t ? h0t->data<float>() : nullptr;
  const float* pc0 = c0t ? c0t->data<float>() : nullptr;
  const float* pp = pt ? pt->data<float>() : nullptr;

  const int64_t rows = max_len * Bt;  // rows of the input projection
  // X may be empty (input_size 0) with any seq_length: the projections' workspace must be
  // counted without overflow.
  if (work_of({rows, G}) > (int64_t(1) << 56))
    fail(ErrorCode::kRuntime, node.label(), ": the input projections of ", rows, " rows by ", G,
         " columns are too large");
  uint8_t *xq = nullptr, *hq = nullptr;
  float *xw = nullptr, *rec = nullptr, *h = nullptr, *c = nullptr, *tmp = nullptr, *bias = nullptr, *peep = nullptr,
        *mult_x = nullptr, *mult_h = nullptr;
  carve(Workspace::kRnn, [&](Carver& cv) {
    xq = cv.take<uint8_t>(rows * I);
    xw = cv.take<float>(rows * G);
    hq = cv.take<uint8_t>(Bt * H);
    rec = cv.take<float>(Bt * G);
    h = cv.take<float>(Bt * H);
    c = cv.take<float>(Bt * H);
    tmp = cv.take<float>(Bt * H);
    bias = cv.take<float>(G);
    peep = cv.take<float>(3 * H);
    mult_x = cv.take<float>(G);
    mult_h = cv.take<float>(G);
  });
  ThreadPool& pool = ctx.pool();
  // X over the steps that run, quantized once for both directions.
  const DynamicQuant xqp = quantize_u8(px, rows * I, xq, pool);
  const bool has_clip = has_clip_;
  const float clip = clip_;
  const bool input_forget = input_forget_;
  const QGemmOut xw_out = QGemmOut::to_float(xw, G, mult_x), rec_out = QGemmOut::to_float(rec, G, mult_h);

  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = dir_ == RnnDirection::kReverse || (dir_ == RnnDirection::kBidirectional && d == 1);
    const Activation& f = acts_[d][0];
    const Activation& g = acts_[d][1];
    const Activation& ha = acts_[d][2];
    const float* wsd = ws.data<float>() + d * ws_count;
    const float* rsd = rs.data<float>() + d * rs_count;
    for (int64_t j = 0; j < G; ++j) {
      mult_x[j] = xqp.scale * wsd[ws_count == 1 ? 0 : j];
      bias[j] = pb ? pb[d * 2 * G + j] + pb[d * 2 * G + G + j] : 0.0f;
    }
    for (int64_t j = 0; j < 3 * H; ++j) peep[j] = pp ? pp[d * 3 * H + j] : 0.0f;
    // Input projection of every step: xw[t * batch + b] = dequant(X[t, b] W).
    if (I > 0)
      qgemm(QGemmA::matrix(xq, I, false, xqp.zero_point), (*wp)[static_cast<size_t>(d)], rows, xw_out, &pool);
    else
      std::fill(xw, xw + rows * G, 0.0f);
    for (int64_t i = 0; i < Bt * H; ++i) {
      h[i] = ph0 ? ph0[d * Bt * H + i] : 0.0f;
      c[i] = pc0 ? pc0[d * Bt * H + i] : 0.0f;
    }
    const QPackedB& rpk = (*rp)[static_cast<size_t>(d)];
    for (int64_t s = 0; s < max_len; ++s) {
      // Recurrent product of the whole batch's hidden rows, quantized together.
      const DynamicQuant hqp = quantize_u8(h, Bt * H, hq, pool);
      for (int64_t j = 0; j < G; ++j) mult_h[j] = hqp.scale * rsd[rs_count == 1 ? 0 : j];
      qgemm(QGemmA::matrix(hq, H, false, hqp.zero_point), rpk, Bt, rec_out, &pool);
      parallel_range(pool, Bt, G * 24, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const int64_t len = lens ? lens[b] : S;
          float* hb = h + b * H;
          if (s >= len) {
            // An ended sequence: its state reads as zeros in the next steps' quantization
            // when Y is computed (or when it never started), else keeps its last value.
            if (y || len == 0) std::fill(hb, hb + H, 0.0f);
            continue;
          }
          const int64_t t = reverse ? len - 1 - s : s;
          float* gr = rec + b * G;
          const float* xr = xw + (t * Bt + b) * G;
          for (int64_t j = 0; j < G; ++j) gr[j] = xr[j] + gr[j];
          float* gi = gr;
          float* go = gr + H;
          float* gf = gr + 2 * H;
          float* gc = gr + 3 * H;
          float* cb = c + b * H;
          float* tb = tmp + b * H;
          const float* pi = peep;
          const float* po = peep + H;
          const float* pf = peep + 2 * H;
          const float* bi = bias;
          const float* bo = bias + H;
          const float* bf = bias + 2 * H;
          const float* bc = bias + 3 * H;
          if (pp) add_product(gi, cb, pi, tb, H);
          if (pb)
            for (int64_t j = 0; j < H; ++j) gi[j] += bi[j];
          if (has_clip)
            for (int64_t j = 0; j < H; ++j) gi[j] = std::max(-clip, std::min(clip, gi[j]));
          rnn_act::activate(f, gi, H);
          if (input_forget) {
            for (int64_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
          } else {
            if (pp) add_product(gf, cb, pf, tb, H);
            if (pb)
              for (int64_t j = 0; j < H; ++j) gf[j] += bf[j];
            if (has_clip)
              for (int64_t j = 0; j < H; ++j) gf[j] = std::max(-clip, std::min(clip, gf[j]));
            rnn_act::activate(f, gf, H);
          }
          if (pb)
            for (int64_t j = 0; j < H; ++j) gc[j] += bc[j];
          if (has_clip)
            for (int64_t j = 0; j < H; ++j) gc[j] = std::max(-clip, std::min(clip, gc[j]));
          rnn_act::activate(g, gc, H);
          // c = c f + i g, both products rounded (no fused multiply-add, as ONNX Runtime's
          // x86-64 build computes it).
          for (int64_t j = 0; j < H; ++j) gc[j] = gi[j] * gc[j];
          add_product(gc, cb, gf, tb, H);
          std::copy(gc, gc + H, cb);
          if (pp) add_product(go, cb, po, tb, H);
          if (pb)
            for (int64_t j = 0; j < H; ++j) go[j] += bo[j];
          if (has_clip)
            for (int64_t j = 0; j < H; ++j) go[j] = std::max(-clip, std::min(clip, go[j]));
          rnn_act::activate(f, go, H);
          std::copy(cb, cb + H, tb);
          rnn_act::activate(ha, tb, H);
          for (int64_t j = 0; j < H; ++j) hb[j] = tb[j] * go[j];
          if (y) std::copy(hb, hb + H, y + ((t * D + d) * Bt + b) * H);
          if (s == len - 1) {
            if (yh) std::copy(hb, hb + H, yh + (d * Bt + b) * H);
            if (yc) std::copy(cb, cb + H, yc + (d * Bt + b) * H);
          }
        }
      });
    }
  }
}

std::unique_ptr<Kernel> make_dq_lstm(const KernelCreateInfo& info) { return std::make_unique<DqLstmKernel>(info); }

using namespace types;
constexpr TypeMask kQ8 = type_mask({DType::kUInt8, DType::kInt8});

const KernelDef kDefs[] = {
    {"com.microsoft", "DynamicQuantizeLSTM", 1, 1, {{0, kFloat}, {1, kQ8}}, make_dq_lstm},
};

}  // namespace

std::span<const KernelDef> dq_lstm_kernels() { return kDefs; }

}  // namespace onyx::cpu
