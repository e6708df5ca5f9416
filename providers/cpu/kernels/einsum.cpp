// CPU kernels: Einsum.
//
// Each input becomes an operand: a strided view whose repeated letters (diagonals) are merged
// into one label with the summed stride, and whose size-1 dims broadcast with stride 0.
// Operands are contracted left to right; before each pairwise contraction, labels that only one
// side uses and nothing later needs are summed out. A pair is then a batched matrix product
// (batch labels in both and kept, M labels only in the left, N only in the right, K in both and
// summed): for float (and the 16-bit floats, computed in float) it runs on the packed SGEMM,
// directly on the inputs when their layout allows, else on packed copies. Everything else goes
// through a general strided loop. Integers accumulate in 64 bits (wrapping like T on store).
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/common.hpp"
#include "kernels/gemm.hpp"
#include "kernels/manifest.hpp"
#include "ops/einsum.hpp"

namespace onyx::cpu {
namespace {

constexpr int kMaxLabels = 64;  // distinct labels one contraction handles

template <class T>
using Work = std::conditional_t<is_half_v<T> || std::is_same_v<T, float>, float,
                                std::conditional_t<std::is_same_v<T, double>, double,
                                                   std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>>;
template <class W>
using Accum = std::conditional_t<std::is_floating_point_v<W>, double, W>;

template <class W>
struct Operand {
  const W* data = nullptr;
  std::shared_ptr<std::vector<W>> own;
  std::vector<int> labels;        // distinct
  std::vector<int64_t> strides;   // per label
  int find(int l) const {
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == l) return static_cast<int>(i);
    return -1;
  }
  bool has(int l) const { return find(l) >= 0; }
  int64_t stride_of(int l) const {
    const int i = find(l);
    return i < 0 ? 0 : strides[i];
  }
};

int64_t product(const std::vector<int>& labels, const std::vector<int64_t>& size) {
  int64_t n = 1;
  for (int l : labels) n = checked_mul(n, size[l], "the Einsum result size");
  return n;
}

/// Contiguous row-major strides for labels in this order.
std::vector<int64_t> packed_strides(const std::vector<int>& labels, const std::vector<int64_t>& size) {
  std::vector<int64_t> s(labels.size());
  int64_t st = 1;
  for (size_t i = labels.size(); i-- > 0;) {
    s[i] = st;
    st *= size[labels[i]];
  }
  return s;
}

template <class W, class T>
Operand<W> input_operand(const Tensor& x, const std::vector<int>& axes, const std::vector<int64_t>& size) {
  Operand<W> op;
  const Shape& s = x.shape();
  const int64_t n = x.numel();
  const T* src = static_cast<const T*>(x.raw_data());
  if constexpr (std::is_same_v<T, W>) {
    op.data = src;
  } else {
    op.own = std::make_shared<std::vector<W>>(static_cast<size_t>(n));
    W* d = op.own->data();
    for (int64_t i = 0; i < n; ++i) d[i] = static_cast<W>(to_acc(src[i]));
    op.data = d;
  }
  int64_t stride = 1;
  std::vector<int64_t> axis_stride(s.size());
  for (size_t a = s.size(); a-- > 0;) {
    axis_stride[a] = stride;
    stride *= s[a];
  }
  for (size_t a = 0; a < s.size(); ++a) {
    const int l = axes[a];
    // A size-1 dim broadcasts (stride 0); a repeated label adds its strides (a diagonal).
    const int64_t contrib = s[a] == 1 ? 0 : axis_stride[a];
    const int i = op.find(l);
    if (i >= 0) {
      op.strides[i] += contrib;
    } else {
      op.labels.push_back(l);
      op.strides.push_back(contrib);
    }
  }
  (void)size;
  return op;
}

/// out[labels in `out_labels` order, contiguous] = sum over the other labels of A (* B).
/// Writes into `dst` when given, else into a new buffer.
template <class W>
Operand<W> contract_general(const Operand<W>& A, const Operand<W>* B, const std::vector<int>& out_labels,
                            const std::vector<int64_t>& size, ThreadPool& pool, W* dst = nullptr) {
  std::vector<int> sum_labels;
  for (int l : A.labels)
    if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) sum_labels.push_back(l);
  if (B)
    for (int l : B->labels)
      if (std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end() &&
          std::find(sum_labels.begin(), sum_labels.end(), l) == sum_labels.end())
        sum_labels.push_back(l);
  const int no = static_cast<int>(out_labels.size()), ns = static_cast<int>(sum_labels.size());
  if (no > kMaxLabels || ns > kMaxLabels)
    fail(ErrorCode::kNotImplemented, "Einsum: more than ", kMaxLabels, " distinct labels in one contraction");
  Operand<W> r;
  r.labels = out_labels;
  r.strides = packed_strides(out_labels, size);
  const int64_t nout = product(out_labels, size);
  if (!dst) {
    r.own = std::make_shared<std::vector<W>>(static_cast<size_t>(nout));
    dst = r.own->data();
  }
  r.data = dst;
  if (nout == 0) return r;
  int64_t od[kMaxLabels], oa[kMaxLabels], ob[kMaxLabels], sd[kMaxLabels], sa[kMaxLabels], sb[kMaxLabels];
  for (int i = 0; i < no; ++i) {
    od[i] = size[out_labels[i]];
    oa[i] = A.stride_of(out_labels[i]);
    ob[i] = B ? B->stride_of(out_labels[i]) : 0;
  }
  int64_t nsum = 1;
  for (int i = 0; i < ns; ++i) {
    sd[i] = size[sum_labels[i]];
    sa[i] = A.stride_of(sum_labels[i]);
    sb[i] = B ? B->stride_of(sum_labels[i]) : 0;
    nsum *= sd[i];
  }
  const W* pa = A.data;
  const W* pb = B ? B->data : nullptr;
  using Ac = Accum<W>;
  auto body = [&](int64_t o0, int64_t o1) {
    int64_t idx[kMaxLabels];
    int64_t offa = 0, offb = 0;
    int64_t rem = o0;
    for (int i = no - 1; i >= 0; --i) {
      idx[i] = rem % od[i];
      rem /= od[i];
      offa += idx[i] * oa[i];
      offb += idx[i] * ob[i];
    }
    int64_t sidx[kMaxLabels];
    for (int64_t o = o0; o < o1; ++o) {
      Ac acc = 0;
      if (nsum > 0) {
        if (ns == 0) {
          acc = pb ? static_cast<Ac>(pa[offa]) * static_cast<Ac>(pb[offb]) : static_cast<Ac>(pa[offa]);
        } else if (ns == 1) {
          const int64_t n = sd[0], s0 = sa[0], s1 = sb[0];
          if (pb)
            for (int64_t k = 0; k < n; ++k) acc += static_cast<Ac>(pa[offa + k * s0]) * static_cast<Ac>(pb[offb + k * s1]);
          else
            for (int64_t k = 0; k < n; ++k) acc += static_cast<Ac>(pa[offa + k * s0]);
        } else {
          for (int i = 0; i < ns; ++i) sidx[i] = 0;
          int64_t xa = offa, xb = offb;
          for (;;) {
            acc += pb ? static_cast<Ac>(pa[xa]) * static_cast<Ac>(pb[xb]) : static_cast<Ac>(pa[xa]);
            int i = ns - 1;
            for (; i >= 0; --i) {
              xa += sa[i];
              xb += sb[i];
              if (++sidx[i] < sd[i]) break;
              xa -= sa[i] * sd[i];
              xb -= sb[i] * sd[i];
              sidx[i] = 0;
            }
            if (i < 0) break;
          }
        }
      }
      dst[o] = static_cast<W>(acc);
      for (int i = no - 1; i >= 0; --i) {
        offa += oa[i];
        offb += ob[i];
        if (++idx[i] < od[i]) break;
        offa -= oa[i] * od[i];
        offb -= ob[i] * od[i];
        idx[i] = 0;
      }
    }
  };
  parallel_range(pool, nout, std::max<int64_t>(1, std::min<int64_t>(nsum, int64_t(1) << 20)) * (B ? 2 : 1), body);
  return r;
}

/// Labels of `labels` ordered by decreasing stride in `op` (its memory order).
template <class W>
std::vector<int> memory_order(std::vector<int> labels, const Operand<W>& op) {
  std::stable_sort(labels.begin(), labels.end(), [&](int a, int b) { return op.stride_of(a) > op.stride_of(b); });
  return labels;
}

/// Whether `op` is laid out contiguously in the order of the concatenated groups.
template <class W>
bool is_packed(const Operand<W>& op, std::initializer_list<const std::vector<int>*> groups, const std::vector<int64_t>& size) {
  std::vector<int> order;
  for (const auto* g : groups) order.insert(order.end(), g->begin(), g->end());
  if (order.size() != op.labels.size()) return false;
  const std::vector<int64_t> want = packed_strides(order, size);
  for (size_t i = 0; i < order.size(); ++i)
    if (size[order[i]] != 1 && op.stride_of(order[i]) != want[i]) return false;
  return true;
}

template <class W>
std::vector<int> concat(std::initializer_list<const std::vector<int>*> groups) {
  std::vector<int> r;
  for (const auto* g : groups) r.insert(r.end(), g->begin(), g->end());
  return r;
}

/// A pair as a batched SGEMM. Every label of A and B is either kept or shared (pre-reduction
/// has run). The result's labels are batch, M, N; `dst` (when given) receives it.
Operand<float> contract_gemm(const Operand<float>& A0, const Operand<float>& B0, const std::vector<int>& lb,
                             const std::vector<int>& lm, const std::vector<int>& ln, const std::vector<int>& lk,
                             const std::vector<int64_t>& size, ThreadPool& pool, float* dst) {
  const int64_t Bt = product(lb, size), M = product(lm, size), N = product(ln, size), K = product(lk, size);
  Operand<float> A = A0, B = B0;
  bool ta = false, tb = false;
  if (is_packed(A, {&lb, &lm, &lk}, size)) ta = false;
  else if (is_packed(A, {&lb, &lk, &lm}, size)) ta = true;
  else A = contract_general<float>(A0, nullptr, concat<float>({&lb, &lm, &lk}), size, pool);
  if (is_packed(B, {&lb, &lk, &ln}, size)) tb = false;
  else if (is_packed(B, {&lb, &ln, &lk}, size)) tb = true;
  else B = contract_general<float>(B0, nullptr, concat<float>({&lb, &lk, &ln}), size, pool);
  Operand<float> C;
  C.labels = concat<float>({&lb, &lm, &ln});
  C.strides = packed_strides(C.labels, size);
  const int64_t nc = Bt * M * N;
  if (!dst) {
    C.own = std::make_shared<std::vector<float>>(static_cast<size_t>(nc));
    dst = C.own->data();
  }
  C.data = dst;
  if (nc == 0) return C;
  if (K == 0) {
    std::fill(dst, dst + nc, 0.0f);
    return C;
  }
  const float* pa = A.data;
  const float* pb = B.data;
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  const int64_t work = M * N * K;
  if (Bt > 1 && (work < (int64_t(1) << 18) || Bt >= 2 * static_cast<int64_t>(pool.num_threads()))) {
    // Small products, or enough of them to share out: one per task, each single-threaded.
    parallel_range(pool, Bt, std::max<int64_t>(1, work), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        sgemm(ta, tb, M, N, K, 1.0f, pa + b * M * K, lda, pb + b * K * N, ldb, 0.0f, dst + b * M * N, N, nullptr);
    });
  } else {
    for (int64_t b = 0; b < Bt; ++b)
      sgemm(ta, tb, M, N, K, 1.0f, pa + b * M * K, lda, pb + b * K * N, ldb, 0.0f, dst + b * M * N, N, &pool);
  }
  return C;
}

struct EinsumState {
  EinsumEquation eq;
};

template <class T>
void einsum_typed(const EinsumState& st, const EinsumDims& d, KernelContext& ctx, Tensor& y) {
  using W = Work<T>;
  ThreadPool& pool = ctx.pool();
  const size_t nin = ctx.num_inputs();
  const std::vector<int64_t>& size = d.size;
  std::vector<Operand<W>> ops;
  ops.reserve(nin);
  for (size_t k = 0; k < nin; ++k) ops.push_back(input_operand<W, T>(ctx.input(k), d.axes[k], size));
  T* out = static_cast<T*>(y.raw_data());
  W* direct = nullptr;  // the output buffer when the working type is T
  if constexpr (std::is_same_v<T, W>) direct = out;
  auto in_list = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  bool done = false;
  size_t next = 1;
  Operand<W> cur = std::move(ops[0]);
  while (next < nin) {
    Operand<W> B = std::move(ops[next]);
    const bool last = next + 1 == nin;
    std::vector<int> needed = d.out;
    for (size_t j = next + 1; j < nin; ++j)
      for (int l : ops[j].labels)
        if (!in_list(needed, l)) needed.push_back(l);
    // Sum out labels only one side has and nothing after needs.
    auto prune = [&](Operand<W>& X, const Operand<W>& other) {
      std::vector<int> keep;
      for (int l : X.labels)
        if (other.has(l) || in_list(needed, l)) keep.push_back(l);
      if (keep.size() != X.labels.size()) X = contract_general<W>(X, nullptr, keep, size, pool);
    };
    prune(cur, B);
    prune(B, cur);
    std::vector<int> lb, lm, ln, lk;
    for (int l : cur.labels) {
      const bool kept = in_list(needed, l);
      if (B.has(l)) (kept ? lb : lk).push_back(l);
      else lm.push_back(l);
    }
    for (int l : B.labels)
      if (!cur.has(l)) ln.push_back(l);
    bool gemm = false;
    if constexpr (std::is_same_v<W, float>) {
      const double flops = static_cast<double>(product(lb, size)) * static_cast<double>(product(lm, size)) *
                           static_cast<double>(product(ln, size)) * static_cast<double>(product(lk, size));
      gemm = flops >= 4096;
    }
    if (gemm) {
      if constexpr (std::is_same_v<W, float>) {
        lb = memory_order(lb, cur);
        lm = memory_order(lm, cur);
        lk = memory_order(lk, cur);
        ln = memory_order(ln, B);
        const std::vector<int> order = concat<float>({&lb, &lm, &ln});
        const std::vector<int> swapped = concat<float>({&lb, &ln, &lm});
        if (last && direct && order != d.out && swapped == d.out) {
          // The output wants the transposed product: compute it as B^T A^T.
          cur = contract_gemm(B, cur, lb, ln, lm, lk, size, pool, direct);
          done = true;
        } else {
          float* dst = last && direct && order == d.out ? direct : nullptr;
          cur = contract_gemm(cur, B, lb, lm, ln, lk, size, pool, dst);
          if (dst) done = true;
        }
      }
    } else {
      std::vector<int> keep = concat<W>({&lb, &lm, &ln});
      W* dst = last && direct ? direct : nullptr;
      if (dst) keep = d.out;  // the last contraction writes the output in its order
      cur = contract_general<W>(cur, &B, keep, size, pool, dst);
      if (dst) done = true;
    }
    ++next;
  }
  if (done) return;
  // Final pass: sum the remaining labels out and lay the result out in the output's order.
  if constexpr (std::is_same_v<T, W>) {
    (void)contract_general<W>(cur, nullptr, d.out, size, pool, direct);
  } else {
    const Operand<W> r = contract_general<W>(cur, nullptr, d.out, size, pool);
    const int64_t n = y.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = from_acc<T>(r.data[i]);
  }
}

void einsum_compute(const EinsumState& st, KernelContext& ctx) {
  const size_t nin = ctx.num_inputs();
  std::vector<Shape> shapes;
  shapes.reserve(nin);
  const DType dt = ctx.input(0).dtype();
  for (size_t k = 0; k < nin; ++k) {
    const Tensor& x = ctx.input(k);
    if (x.dtype() != dt)
      fail(ErrorCode::kInvalidArgument, "input ", k, " has type ", dtype_name(x.dtype()), " but input 0 has type ",
           dtype_name(dt));
    shapes.push_back(x.shape());
  }
  const EinsumDims d = resolve_einsum(ctx.node(), st.eq, shapes);
  Tensor& y = ctx.allocate_output(0, dt, d.out_shape());
  if (y.numel() == 0) return;
  dispatch_numeric(dt, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) unsupported_dtype("Einsum", dt);
    else einsum_typed<T>(st, d, ctx, y);
  }, "Einsum");
}

std::unique_ptr<Kernel> make_einsum(const KernelCreateInfo& info) {
  if (info.node.inputs.empty()) fail(ErrorCode::kInvalidGraph, info.node.label(), ": needs at least one input");
  return make_fn_kernel(EinsumState{parse_einsum(info.node, info.node.inputs.size())}, einsum_compute);
}

using namespace types;

const KernelDef kDefs[] = {
    {"", "Einsum", 12, 99, {{0, kNumeric}}, make_einsum},
};

}  // namespace

std::span<const KernelDef> einsum_kernels() { return kDefs; }

}  // namespace onyx::cpu
