// CPU kernels: rnn family (RNN, GRU, LSTM). The input projections of every time step are one
// GEMM (X * W^T + biases) before the recurrence; each step then multiplies the hidden state by
// R^T and applies the gates. Constant W and R are packed once when the kernel is created.
// float16 runs in float32; double in double (with a plain GEMM).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "kernels/rnn_activation.hpp"
#include "ops/rnn.hpp"

namespace onyx::cpu {
namespace {

using namespace rnn_act;  // NOLINT: the activations, by their plain names

template <class C>
inline void clip_values(C* x, int64_t n, C c) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(c, std::max(-c, x[i]));
}

// ---- matrix products: C[m, n] (ldc) = A[m, k] (lda) * B^T, B stored [n, k] (ldb), + bias[n] ----

void gemm_nt(const float* a, int64_t lda, const float* b, int64_t ldb, const PackedMatrix* pb, int64_t m, int64_t n,
             int64_t k, const float* bias, float* c, int64_t ldc, ThreadPool& pool) {
  GemmEpilogue ep;
  ep.bias = bias;
  sgemm_packed(nullptr, false, a, lda, pb, true, pb ? nullptr : b, ldb, m, n, k, 0.0f, c, ldc, &pool, bias ? &ep : nullptr);
}

void gemm_nt(const double* a, int64_t lda, const double* b, int64_t ldb, const PackedMatrix*, int64_t m, int64_t n,
             int64_t k, const double* bias, double* c, int64_t ldc, ThreadPool& pool) {
  parallel_range(pool, m, n * k, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const double* ar = a + i * lda;
      for (int64_t j = 0; j < n; ++j) {
        const double* br = b + j * ldb;
        double s = bias ? bias[j] : 0.0;
        for (int64_t p = 0; p < k; ++p) s += ar[p] * br[p];
        c[i * ldc + j] = s;
      }
    }
  });
}


// ---- kernel ----

class RnnKernel final : public Kernel {
 public:
  explicit RnnKernel(const KernelCreateInfo& info) : node_(info.node) {
    const Node& n = info.node;
    kind_ = rnn_kind(n);
    dir_ = rnn_direction(n);
    dirs_ = rnn_num_directions(dir_);
    batch_major_ = rnn_batch_major(n);
    hidden_attr_ = n.has_attr("hidden_size") ? n.attr_int("hidden_size", 0) : -1;
    if (n.has_attr("hidden_size") && hidden_attr_ <= 0)
      fail(ErrorCode::kInvalidGraph, n.label(), ": hidden_size must be positive, got ", hidden_attr_);
    if (n.has_attr("clip")) {
      clip_ = n.attr_float("clip", 0.0f);
      if (!(clip_ > 0.0f)) fail(ErrorCode::kInvalidGraph, n.label(), ": clip must be positive, got ", clip_);
      has_clip_ = true;
    }
    linear_before_reset_ = kind_ == RnnKind::kGru && n.opset >= 3 && n.attr_int("linear_before_reset", 0) != 0;
    input_forget_ = kind_ == RnnKind::kLstm && n.attr_int("input_forget", 0) != 0;
    parse_activations(n);
    pack_constants(info);
  }

  void compute(KernelContext& ctx) const override;

 private:
  void parse_activations(const Node& n) {
    const int na = rnn_num_activations(kind_);
    const std::vector<std::string> names = n.attr_strings("activations");
    const std::vector<float> alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
    size_t ai = 0, bi = 0;
    if (names.empty()) {
      for (int d = 0; d < 2; ++d) {
        if (kind_ == RnnKind::kRnn) {
          acts_[d][0].kind = ActKind::kTanh;
        } else {
          acts_[d][0].kind = ActKind::kSigmoid;
          acts_[d][1].kind = ActKind::kTanh;
          acts_[d][2].kind = ActKind::kTanh;
        }
      }
      return;
    }
    const size_t want = static_cast<size_t>(na * dirs_);
    // One direction's list serves both directions; a forward / reverse node given two lists
    // (ONNX's RNN default is written that way) uses the first.
    if (names.size() != want && names.size() != static_cast<size_t>(na) && names.size() != static_cast<size_t>(2 * na))
      fail(ErrorCode::kInvalidGraph, n.label(), ": activations has ", names.size(), " entries; expected ", want, " (",
           na, " per direction)");
    for (size_t i = 0; i < std::min(names.size(), want); ++i)
      acts_[i / na][i % na] = parse_activation(n, names[i], alphas, ai, betas, bi);
    if (names.size() < want)
      for (int k = 0; k < na; ++k) acts_[1][k] = acts_[0][k];
  }

  /// Packs constant W and R (float32 compute types) per direction.
  void pack_constants(const KernelCreateInfo& info) {
    const Tensor* w = info.constant(1);
    const Tensor* r = info.constant(2);
    const int64_t G = rnn_gates(kind_);
    auto as_float = [](const Tensor& t, std::vector<float>& tmp) -> const float* {
      if (t.dtype() == DType::kFloat) return t.data<float>();
      tmp.resize(static_cast<size_t>(t.numel()));
      dispatch_float(t.dtype(), [&]<class T>() {
        const T* p = static_cast<const T*>(t.raw_data());
        for (int64_t i = 0; i < t.numel(); ++i) tmp[i] = static_cast<float>(to_acc(p[i]));
      });
      return tmp.data();
    };
    auto packable = [&](const Tensor* t) {
      return t && (t->dtype() == DType::kFloat || t->dtype() == DType::kFloat16) && t->rank() == 3 && t->dim(0) == dirs_ &&
             t->numel() > 0;
    };
    if (!packable(w) || !packable(r)) return;
    const int64_t H = hidden_attr_ > 0 ? hidden_attr_ : r->dim(2);
    const int64_t I = w->dim(2);
    if (r->dim(2) != H || r->dim(1) != G * H || w->dim(1) != G * H) return;  // reported at run time
    std::vector<float> tw, tr;
    const float* pw = as_float(*w, tw);
    const float* pr = as_float(*r, tr);
    const int64_t GH = G * H;
    for (int64_t d = 0; d < dirs_; ++d) {
      w_packed_.push_back(pack_b(true, I, GH, pw + d * GH * I, I));
      const float* rd = pr + d * GH * H;
      if (kind_ == RnnKind::kGru && !linear_before_reset_) {
        r_packed_.push_back(pack_b(true, H, 2 * H, rd, H));
        rh_packed_.push_back(pack_b(true, H, H, rd + 2 * H * H, H));
      } else {
        r_packed_.push_back(pack_b(true, H, GH, rd, H));
      }
    }
    packed_hidden_ = H;
    packed_input_ = I;
  }

  template <class T, class C>
  void run(KernelContext& ctx, const RnnDims& dm, const int32_t* lens) const;

  const Node& node_;
  RnnKind kind_ = RnnKind::kRnn;
  RnnDirection dir_ = RnnDirection::kForward;
  int64_t dirs_ = 1;
  bool batch_major_ = false;
  int64_t hidden_attr_ = -1;
  bool has_clip_ = false;
  float clip_ = 0;
  bool linear_before_reset_ = false;
  bool input_forget_ = false;
  Activation acts_[2][3];
  std::vector<PackedMatrix> w_packed_, r_packed_, rh_packed_;
  int64_t packed_hidden_ = -1, packed_input_ = -1;
};

void RnnKernel::compute(KernelContext& ctx) const {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& r = ctx.input(2);
  const bool lstm = kind_ == RnnKind::kLstm;
  const Tensor* b = ctx.optional_input(3);
  const Tensor* sl = ctx.optional_input(4);
  const Tensor* h0 = ctx.optional_input(5);
  const Tensor* c0 = lstm ? ctx.optional_input(6) : nullptr;
  const Tensor* p = lstm ? ctx.optional_input(7) : nullptr;
  for (const Tensor* t : {&w, &r, b, h0, c0, p})
    if (t && t->dtype() != x.dtype())
      fail(ErrorCode::kInvalidArgument, "W, R, B, initial_h, initial_c and P must have X's type ", dtype_name(x.dtype()),
           ", got ", dtype_name(t->dtype()));
  const RnnDims dm = rnn_check_shapes(node_, kind_, dirs_, batch_major_, hidden_attr_, x.shape(), w.shape(), r.shape(),
                                      b ? &b->shape() : nullptr, sl ? &sl->shape() : nullptr, h0 ? &h0->shape() : nullptr,
                                      c0 ? &c0->shape() : nullptr, p ? &p->shape() : nullptr);
  const int32_t* lens = nullptr;
  if (sl) {
    if (sl->dtype() != DType::kInt32)
      fail(ErrorCode::kInvalidArgument, "sequence_lens (input 4) must be int32, got ", dtype_name(sl->dtype()));
    lens = sl->data<int32_t>();
    for (int64_t i = 0; i < dm.batch; ++i)
      if (lens[i] < 0 || lens[i] > dm.seq)
        fail(ErrorCode::kRuntime, "sequence_lens (input 4) value ", lens[i], " at batch ", i, " is outside [0, ", dm.seq,
             "] (seq_length)");
  }
  switch (x.dtype()) {
    case DType::kFloat: run<float, float>(ctx, dm, lens); break;
    case DType::kFloat16: run<Float16, float>(ctx, dm, lens); break;
    case DType::kBFloat16: run<BFloat16, float>(ctx, dm, lens); break;
    case DType::kDouble: run<double, double>(ctx, dm, lens); break;
    default: unsupported_dtype(node_.op_type.c_str(), x.dtype());
  }
}

template <class T, class C>
void RnnKernel::run(KernelContext& ctx, const RnnDims& dm, const int32_t* lens) const {
  constexpr bool kSame = std::is_same_v<T, C>;
  const int64_t S = dm.seq, Bt = dm.batch, I = dm.input, H = dm.hidden, D = dirs_;
  const int64_t G = rnn_gates(kind_), GH = G * H;
  const bool lstm = kind_ == RnnKind::kLstm, gru = kind_ == RnnKind::kGru;
  const bool bm = batch_major_;
  T* y = ctx.has_output(0) ? static_cast<T*>(ctx.output(0).raw_data()) : nullptr;
  T* yh = ctx.has_output(1) ? static_cast<T*>(ctx.output(1).raw_data()) : nullptr;
  T* yc = lstm && ctx.has_output(2) ? static_cast<T*>(ctx.output(2).raw_data()) : nullptr;
  if (Bt == 0 || H == 0) return;
  if (S == 0) {
    for (T* o : {yh, yc})
      if (o)
        for (int64_t i = 0; i < D * Bt * H; ++i) o[i] = T{};
    return;
  }
  const T* px = static_cast<const T*>(ctx.input(0).raw_data());
  const T* pw = static_cast<const T*>(ctx.input(1).raw_data());
  const T* pr = static_cast<const T*>(ctx.input(2).raw_data());
  const Tensor* bt = ctx.optional_input(3);
  const Tensor* h0t = ctx.optional_input(5);
  const Tensor* c0t = lstm ? ctx.optional_input(6) : nullptr;
  const Tensor* pt = lstm ? ctx.optional_input(7) : nullptr;
  const T* pb = bt ? static_cast<const T*>(bt->raw_data()) : nullptr;
  const T* ph0 = h0t ? static_cast<const T*>(h0t->raw_data()) : nullptr;
  const T* pc0 = c0t ? static_cast<const T*>(c0t->raw_data()) : nullptr;
  const T* pp = pt ? static_cast<const T*>(pt->raw_data()) : nullptr;

  const bool packed = std::is_same_v<C, float> && !w_packed_.empty() && packed_hidden_ == H && packed_input_ == I;
  const bool lbr0 = gru && !linear_before_reset_;

  // Workspace layout.
  struct Work {
    C *x, *w, *r, *xw, *rec, *h, *c, *tmp, *bias, *rbh, *peep;
  } wk{};
  auto layout = [&](Carver& cv) {
    wk.x = kSame ? nullptr : cv.take<C>(S * Bt * I);
    wk.w = (kSame || packed) ? nullptr : cv.take<C>(D * GH * I);
    wk.r = (kSame || packed) ? nullptr : cv.take<C>(D * GH * H);
    wk.xw = cv.take<C>(S * Bt * GH);
    wk.rec = cv.take<C>(Bt * GH);
    wk.h = cv.take<C>(Bt * H);
    wk.c = cv.take<C>(lstm ? Bt * H : 0);
    wk.tmp = cv.take<C>(Bt * H);
    wk.bias = cv.take<C>(GH);
    wk.rbh = cv.take<C>(gru ? H : 0);
    wk.peep = cv.take<C>(lstm ? 3 * H : 0);
  };
  carve(Workspace::kRnn, layout);
  auto convert = [](const T* src, C* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<C>(to_acc(src[i]));
  };
  const C* X;
  const C* W = nullptr;
  const C* R = nullptr;
  if constexpr (kSame) {
    X = px;
    W = pw;
    R = pr;
  } else {
    convert(px, wk.x, S * Bt * I);
    X = wk.x;
    if (!packed) {
      convert(pw, wk.w, D * GH * I);
      convert(pr, wk.r, D * GH * H);
      W = wk.w;
      R = wk.r;
    }
  }
  auto ld = [](const T* p, int64_t i) { return static_cast<C>(to_acc(p[i])); };
  auto st = [](C v) { return from_acc<T>(v); };
  const C clip = static_cast<C>(clip_);
  const bool has_clip = has_clip_;
  ThreadPool& pool = ctx.pool();
  // Row of X (and of the projections) for time t, batch b.
  auto xrow = [&](int64_t t, int64_t b) { return bm ? b * S + t : t * Bt + b; };
  auto yoff = [&](int64_t t, int64_t d, int64_t b) { return bm ? ((b * S + t) * D + d) * H : ((t * D + d) * Bt + b) * H; };
  auto soff = [&](int64_t d, int64_t b) { return bm ? (b * D + d) * H : (d * Bt + b) * H; };

  for (int64_t d = 0; d < D; ++d) {
    const bool reverse = dir_ == RnnDirection::kReverse || (dir_ == RnnDirection::kBidirectional && d == 1);
    const Activation& f = acts_[d][0];
    const Activation& g = acts_[d][1];
    const Activation& hact = acts_[d][2];
    // Biases: Wb + Rb folded into the projections (GRU with linear_before_reset keeps Rbh apart).
    for (int64_t j = 0; j < GH; ++j) {
      const bool split = gru && linear_before_reset_ && j >= 2 * H;
      wk.bias[j] = pb ? ld(pb, d * 2 * GH + j) + (split ? C(0) : ld(pb, d * 2 * GH + GH + j)) : C(0);
    }
    if (gru)
      for (int64_t j = 0; j < H; ++j) wk.rbh[j] = pb && linear_before_reset_ ? ld(pb, d * 2 * GH + GH + 2 * H + j) : C(0);
    if (lstm)
      for (int64_t j = 0; j < 3 * H; ++j) wk.peep[j] = pp ? ld(pp, d * 3 * H + j) : C(0);
    const PackedMatrix* wpk = packed ? &w_packed_[d] : nullptr;
    const PackedMatrix* rpk = packed ? &r_packed_[d] : nullptr;
    const PackedMatrix* rhpk = packed && lbr0 ? &rh_packed_[d] : nullptr;
    const C* Wd = W ? W + d * GH * I : nullptr;
    const C* Rd = R ? R + d * GH * H : nullptr;
    gemm_nt(X, I, Wd, I, wpk, S * Bt, GH, I, wk.bias, wk.xw, GH, pool);
    // Initial states.
    for (int64_t b = 0; b < Bt; ++b)
      for (int64_t j = 0; j < H; ++j) {
        wk.h[b * H + j] = ph0 ? ld(ph0, soff(d, b) + j) : C(0);
        if (lstm) wk.c[b * H + j] = pc0 ? ld(pc0, soff(d, b) + j) : C(0);
      }
    if (lbr0) std::fill(wk.tmp, wk.tmp + Bt * H, C(0));

    for (int64_t s = 0; s < S; ++s) {
      // Recurrent products: rec = h * R^T (GRU without linear_before_reset: z and r only here).
      gemm_nt(wk.h, H, Rd, H, rpk, Bt, lbr0 ? 2 * H : GH, H, nullptr, wk.rec, GH, pool);
      auto active = [&](int64_t b) { return s < (lens ? lens[b] : S); };
      auto time_of = [&](int64_t b) { return reverse ? (lens ? lens[b] : S) - 1 - s : s; };
      auto write_y = [&](int64_t t, int64_t b, const C* hv) {
        if (!y) return;
        T* o = y + yoff(t, d, b);
        for (int64_t j = 0; j < H; ++j) o[j] = st(hv[j]);
      };
      auto zero_y = [&](int64_t b) {
        if (!y) return;
        T* o = y + yoff(s, d, b);
        for (int64_t j = 0; j < H; ++j) o[j] = T{};
      };
      if (kind_ == RnnKind::kRnn) {
        parallel_range(pool, Bt, GH * 8, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            if (!active(b)) {
              zero_y(b);
              continue;
            }
            const int64_t t = time_of(b);
            C* gr = wk.rec + b * GH;
            const C* xw = wk.xw + xrow(t, b) * GH;
            for (int64_t j = 0; j < H; ++j) gr[j] += xw[j];
            if (has_clip) clip_values(gr, H, clip);
            activate(f, gr, H);
            C* hb = wk.h + b * H;
            std::copy(gr, gr + H, hb);
            write_y(t, b, hb);
          }
        });
      } else if (gru) {
        // Phase 1: update and reset gates (and r * h for the h-gate product).
        parallel_range(pool, Bt, GH * 8, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            if (!active(b)) continue;
            const int64_t t = time_of(b);
            C* gr = wk.rec + b * GH;
            const C* xw = wk.xw + xrow(t, b) * GH;
            for (int64_t j = 0; j < 2 * H; ++j) gr[j] += xw[j];
            if (has_clip) clip_values(gr, 2 * H, clip);
            activate(f, gr, 2 * H);
            if (lbr0) {
              const C* hb = wk.h + b * H;
              C* tb = wk.tmp + b * H;
              for (int64_t j = 0; j < H; ++j) tb[j] = gr[H + j] * hb[j];
            }
          }
        });
        if (lbr0) gemm_nt(wk.tmp, H, Rd ? Rd + 2 * H * H : nullptr, H, rhpk, Bt, H, H, nullptr, wk.rec + 2 * H, GH, pool);
        // Phase 2: candidate and new state.
        parallel_range(pool, Bt, GH * 8, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            if (!active(b)) {
              zero_y(b);
              continue;
            }
            const int64_t t = time_of(b);
            C* gr = wk.rec + b * GH;
            const C* xw = wk.xw + xrow(t, b) * GH;
            C* z = gr;
            C* rg = gr + H;
            C* hc = gr + 2 * H;
            if (lbr0) {
              for (int64_t j = 0; j < H; ++j) hc[j] += xw[2 * H + j];
            } else {
              for (int64_t j = 0; j < H; ++j) hc[j] = xw[2 * H + j] + rg[j] * (hc[j] + wk.rbh[j]);
            }
            if (has_clip) clip_values(hc, H, clip);
            activate(g, hc, H);
            C* hb = wk.h + b * H;
            for (int64_t j = 0; j < H; ++j) hb[j] = (C(1) - z[j]) * hc[j] + z[j] * hb[j];
            write_y(t, b, hb);
          }
        });
      } else {
        parallel_range(pool, Bt, GH * 8, [&](int64_t b0, int64_t b1) {
          for (int64_t b = b0; b < b1; ++b) {
            if (!active(b)) {
              zero_y(b);
              continue;
            }
            const int64_t t = time_of(b);
            C* gr = wk.rec + b * GH;
            const C* xw = wk.xw + xrow(t, b) * GH;
            for (int64_t j = 0; j < GH; ++j) gr[j] += xw[j];
            C* gi = gr;
            C* go = gr + H;
            C* gf = gr + 2 * H;
            C* gc = gr + 3 * H;
            C* cb = wk.c + b * H;
            C* hb = wk.h + b * H;
            const C* pi = wk.peep;
            const C* po = wk.peep + H;
            const C* pf = wk.peep + 2 * H;
            if (pp)
              for (int64_t j = 0; j < H; ++j) {
                gi[j] += pi[j] * cb[j];
                gf[j] += pf[j] * cb[j];
              }
            if (has_clip) {
              clip_values(gi, H, clip);
              clip_values(gf, H, clip);
              clip_values(gc, H, clip);
            }
            activate(f, gi, H);
            if (input_forget_)
              for (int64_t j = 0; j < H; ++j) gf[j] = C(1) - gi[j];
            else
              activate(f, gf, H);
            activate(g, gc, H);
            for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
            if (pp)
              for (int64_t j = 0; j < H; ++j) go[j] += po[j] * cb[j];
            if (has_clip) clip_values(go, H, clip);
            activate(f, go, H);
            C* hc = wk.tmp + b * H;
            std::copy(cb, cb + H, hc);
            activate(hact, hc, H);
            for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * hc[j];
            write_y(t, b, hb);
          }
        });
      }
    }
    // Final states (zero for an empty sequence).
    for (int64_t b = 0; b < Bt; ++b) {
      const bool empty = lens && lens[b] == 0;
      for (int64_t j = 0; j < H; ++j) {
        if (yh) yh[soff(d, b) + j] = empty ? T{} : st(wk.h[b * H + j]);
        if (yc) yc[soff(d, b) + j] = empty ? T{} : st(wk.c[b * H + j]);
      }
    }
  }
}

std::unique_ptr<Kernel> make_rnn(const KernelCreateInfo& info) { return std::make_unique<RnnKernel>(info); }

using namespace types;
constexpr TypeMask kRnnTypes = type_mask({DType::kFloat, DType::kFloat16, DType::kDouble});
constexpr TypeMask kInt32 = type_mask({DType::kInt32});

const KernelDef kDefs[] = {
    {"", "RNN", 1, 99, {{0, kRnnTypes}, {4, kInt32}}, make_rnn},
    {"", "GRU", 1, 99, {{0, kRnnTypes}, {4, kInt32}}, make_rnn},
    {"", "LSTM", 1, 99, {{0, kRnnTypes}, {4, kInt32}}, make_rnn},
};

}  // namespace

std::span<const KernelDef> rnn_kernels() { return kDefs; }

}  // namespace onyx::cpu
