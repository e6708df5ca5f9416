// A small EP module for tests (libonyx_ep_testdev.so), loaded like a third-party EP through the
// option module_path. It claims the op types listed in its "claim" option (float tensors only)
// and runs them with plain loops. Options let tests make it fail: "fail_probe", "fail_create".
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>

#include "ep/factory.hpp"
#include "ep/kernel.hpp"
#include "ep/module_entry.hpp"
#include "ep/provider.hpp"
#include "onyx/version.hpp"

namespace onyx {
namespace {

std::string option(const OptionList& o, const char* key) {
  for (const auto& [k, v] : o)
    if (k == key) return v;
  return "";
}

// Whole-run capture, emulated (option capture): a run's state records the kernels' work as
// closures over the buffers' addresses, as a CUDA graph records launches, and a copy records its
// host side (the value it reads or writes, and a staging buffer of its own); replay() does the
// host sides around the recorded work. The counters let tests see what ran how.
struct Counters {
  std::atomic<long> computed{0};  // kernel work done when the kernel was called
  std::atomic<long> recorded{0};  // kernel work recorded into a capture
  std::atomic<long> replays{0};   // recordings replayed
} g_counters;

struct TestRun {
  bool capturing = false;
  bool fail_capture = false;  // kernels refuse to be recorded (option fail_capture)
  std::vector<std::function<void()>> recording;
  struct Stage {
    int value;
    std::unique_ptr<std::vector<uint8_t>> buffer;  // fixed address, like pinned staging memory
  };
  std::vector<Stage> h2d, d2h;
};

/// Does `work` now, or records it when the run is being captured.
void run_or_record(KernelContext& ctx, std::function<void()> work) {
  auto* run = static_cast<TestRun*>(ctx.ep_state());
  if (run && run->capturing) {
    if (run->fail_capture) fail(ErrorCode::kNotImplemented, "testdev: ", ctx.node().label(), " cannot be recorded (option fail_capture)");
    run->recording.push_back(std::move(work));
    ++g_counters.recorded;
    return;
  }
  work();
  ++g_counters.computed;
}

void relu(const int&, KernelContext& ctx) {
  const float* x = ctx.input(0).data<float>();
  float* y = ctx.output(0).data<float>();
  const int64_t n = ctx.input(0).numel();
  run_or_record(ctx, [=] {
    for (int64_t i = 0; i < n; ++i) y[i] = std::max(0.0f, x[i]);
  });
}

void add(const int&, KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!(a.shape() == b.shape())) fail(ErrorCode::kRuntime, "testdev Add needs equal shapes");
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float* y = ctx.output(0).data<float>();
  const int64_t n = a.numel();
  run_or_record(ctx, [=] {
    for (int64_t i = 0; i < n; ++i) y[i] = pa[i] + pb[i];
  });
}

std::unique_ptr<Kernel> make_relu(const KernelCreateInfo&) { return std::make_unique<FnKernel<int>>(0, relu); }
std::unique_ptr<Kernel> make_add(const KernelCreateInfo&) { return std::make_unique<FnKernel<int>>(0, add); }

// Channels-last kernels (domain onyx.nhwc, option channels_last): plain loops over [N, H, W, C]
// data with ONNX-layout weights, explicit pads only. They let tests run the optimizer's
// channels-last pass end to end without a device that prefers that layout.
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  static Window of(const Node& n, int64_t kh, int64_t kw) {
    Window w;
    w.kh = kh;
    w.kw = kw;
    const auto s = n.attr_ints("strides", {1, 1}), d = n.attr_ints("dilations", {1, 1}), p = n.attr_ints("pads", {0, 0, 0, 0});
    w.sh = s[0], w.sw = s[1], w.dh = d[0], w.dw = d[1], w.ph = p[0], w.pw = p[1];
    return w;
  }
};

void conv_nhwc(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.optional_input(2);
  Tensor& y = ctx.output(0);
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3);
  const int64_t OH = y.dim(1), OW = y.dim(2), M = y.dim(3);
  const int64_t group = ctx.node().attr_int("group", 1), cg = C / group, mg = M / group;
  const Window k = Window::of(ctx.node(), w.dim(2), w.dim(3));
  const float* X = x.data<float>();
  const float* Wt = w.data<float>();
  float* Y = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t m = 0; m < M; ++m) {
          const int64_t g = m / mg;
          double acc = b ? b->data<float>()[m] : 0.0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t ih = oh * k.sh - k.ph + i * k.dh, iw = ow * k.sw - k.pw + j * k.dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += static_cast<double>(X[((n * H + ih) * W + iw) * C + g * cg + c]) * Wt[((m * cg + c) * k.kh + i) * k.kw + j];
              }
          Y[((n * OH + oh) * OW + ow) * M + m] = static_cast<float>(acc);
        }
}

void pool_nhwc(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Node& node = ctx.node();
  const bool global = node.op_type.rfind("Global", 0) == 0;
  const bool max = node.op_type.find("Max") != std::string::npos;
  const int64_t N = x.dim(0), H = x.dim(1), W = x.dim(2), C = x.dim(3), OH = y.dim(1), OW = y.dim(2);
  const auto ks = node.attr_ints("kernel_shape", {H, W});
  const Window k = global ? Window{H, W, 1, 1, 1, 1, 0, 0} : Window::of(node, ks[0], ks[1]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t c = 0; c < C; ++c) {
          double acc = max ? -1e300 : 0.0;
          int64_t count = 0;
          for (int64_t i = 0; i < k.kh; ++i)
            for (int64_t j = 0; j < k.kw; ++j) {
              const int64_t ih = oh * k.sh - k.ph + i, iw = ow * k.sw - k.pw + j;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const double v = x.data<float>()[((n * H + ih) * W + iw) * C + c];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            }
          y.data<float>()[((n * OH + oh) * OW + ow) * C + c] = static_cast<float>(max ? acc : acc / std::max<int64_t>(count, 1));
        }
}

void batch_norm_nhwc(const int&, KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t C = x.dim(x.rank() - 1);
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  const float *scale = ctx.input(1).data<float>(), *bias = ctx.input(2).data<float>();
  const float *mean = ctx.input(3).data<float>(), *var = ctx.input(4).data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = i % C;
    y.data<float>()[i] = (x.data<float>()[i] - mean[c]) / std::sqrt(var[c] + eps) * scale[c] + bias[c];
  }
}

std::unique_ptr<Kernel> make_conv_nhwc(const KernelCreateInfo& info) {
  if (info.node.attr_string("auto_pad", "NOTSET") != "NOTSET") fail(ErrorCode::kNotImplemented, "testdev: auto_pad");
  return std::make_unique<FnKernel<int>>(0, conv_nhwc);
}
std::unique_ptr<Kernel> make_pool_nhwc(const KernelCreateInfo&) { return std::make_unique<FnKernel<int>>(0, pool_nhwc); }
std::unique_ptr<Kernel> make_batch_norm_nhwc(const KernelCreateInfo&) { return std::make_unique<FnKernel<int>>(0, batch_norm_nhwc); }

constexpr TypeMask kF32 = type_mask({DType::kFloat});
const KernelDef kDefs[] = {
    {"", "Relu", 1, 99, {{0, kF32}}, make_relu},
    {"", "Add", 7, 99, {{0, kF32}}, make_add},
};
const KernelDef kChannelsLastDefs[] = {
    {"onyx.nhwc", "Conv", 1, 99, {{0, kF32}}, make_conv_nhwc},
    {"onyx.nhwc", "MaxPool", 1, 99, {{0, kF32}}, make_pool_nhwc},
    {"onyx.nhwc", "AveragePool", 1, 99, {{0, kF32}}, make_pool_nhwc},
    {"onyx.nhwc", "GlobalAveragePool", 1, 99, {{0, kF32}}, make_pool_nhwc},
    {"onyx.nhwc", "GlobalMaxPool", 1, 99, {{0, kF32}}, make_pool_nhwc},
    {"onyx.nhwc", "BatchNormalization", 1, 99, {{0, kF32}}, make_batch_norm_nhwc},
};

/// What the channels-last kernels above do not handle: declined, so the node stays channels-first.
bool channels_last_supported(const ClaimInfo& info) {
  const Node& n = info.node;
  if (n.attr_string("auto_pad", "NOTSET") != "NOTSET" || n.attr_int("ceil_mode", 0) != 0 || n.attr_int("count_include_pad", 0) != 0)
    return false;
  if (!info.input_types[0] || !info.input_types[0]->has_shape || info.input_types[0]->shape.size() != 4) return false;
  if (n.op_type == "Conv")
    for (size_t i = 1; i < info.input_types.size(); ++i)
      if (n.inputs[i] >= 0 && !info.graph.values[n.inputs[i]].has_initializer) return false;
  return n.op_type != "BatchNormalization" || n.attr_int("training_mode", 0) == 0;
}

/// A compiled region: the region's nodes' kernels, run in order on the caller's frame.
class RegionKernel final : public Kernel {
 public:
  RegionKernel(const RegionInfo& info, const KernelRegistry& registry) : graph_(info.graph), nodes_(info.nodes) {
    for (int i : nodes_) {
      const Node& n = graph_.nodes[i];
      std::vector<const TypeInfo*> in, out;
      std::vector<const Tensor*> constants;
      for (int v : n.inputs) {
        in.push_back(v >= 0 ? &graph_.values[v].type : nullptr);
        constants.push_back(v >= 0 ? info.constant(v) : nullptr);
      }
      for (int v : n.outputs) out.push_back(v >= 0 ? &graph_.values[v].type : nullptr);
      KernelCreateInfo ci{n, graph_, in, out, constants, {}, 1};
      Decline why;
      const KernelDef* d = registry.find(n, in, out, &why);
      if (!d) fail(ErrorCode::kNotImplemented, why.message);
      kernels_.push_back(d->create(ci));
    }
  }
  void compute(KernelContext& ctx) const override {
    for (size_t k = 0; k < nodes_.size(); ++k) {
      KernelContext inner(graph_.nodes[nodes_[k]], ctx.frame(), ctx.pool(), nullptr);
      kernels_[k]->compute(inner);
    }
  }

 private:
  const Graph& graph_;
  std::vector<int> nodes_;
  std::vector<std::unique_ptr<Kernel>> kernels_;
};

class TestEp final : public ExecutionProvider {
 public:
  TestEp(std::string claim, std::string device, bool regions, size_t min_nodes, std::string memory, bool channels_last, bool capture,
         bool fail_capture)
      : claim_("," + claim + ","),
        device_(std::move(device)),
        regions_(regions),
        min_nodes_(min_nodes),
        memory_(std::move(memory)),
        channels_last_(channels_last),
        capture_(capture),
        fail_capture_(fail_capture) {
    std::vector<KernelDef> defs(std::begin(kDefs), std::end(kDefs));
    if (channels_last_) defs.insert(defs.end(), std::begin(kChannelsLastDefs), std::end(kChannelsLastDefs));
    registry_.add(defs);
  }
  DataLayout preferred_layout() const override { return channels_last_ ? DataLayout::kChannelsLast : DataLayout::kChannelsFirst; }
  // The memory is host memory under another name: copies are plain memcpy, but the session
  // must still insert them wherever memories differ.
  std::string memory() const override { return memory_; }
  std::unique_ptr<Kernel> create_copy_kernel(bool to_device) const override {
    return std::make_unique<FnKernel<int>>(to_device ? 1 : 0, [](const int& to_dev, KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      auto* run = static_cast<TestRun*>(ctx.ep_state());
      if (!run || !run->capturing) {
        std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
        return;
      }
      // Recorded: the device side copies through a staging buffer; the host side is replay()'s.
      TestRun::Stage st{to_dev ? ctx.node().inputs[0] : ctx.node().outputs[0], std::make_unique<std::vector<uint8_t>>(x.nbytes())};
      uint8_t* stage = st.buffer->data();
      const size_t n = x.nbytes();
      if (to_dev) {
        void* dst = y.raw_data();
        run->recording.push_back([=] { std::memcpy(dst, stage, n); });
        run->h2d.push_back(std::move(st));
      } else {
        const void* src = x.raw_data();
        run->recording.push_back([=] { std::memcpy(stage, src, n); });
        run->d2h.push_back(std::move(st));
      }
    });
  }
  bool captures_runs() const override { return capture_; }
  std::shared_ptr<void> begin_run() const override {
    if (!capture_) return nullptr;
    auto run = std::make_shared<TestRun>();
    run->fail_capture = fail_capture_;
    return run;
  }
  void begin_capture(void* state) const override {
    auto* run = static_cast<TestRun*>(state);
    run->recording.clear();
    run->capturing = true;
  }
  void end_capture(void* state) const override { static_cast<TestRun*>(state)->capturing = false; }
  void abort_capture(void* state) const override {
    auto* run = static_cast<TestRun*>(state);
    run->capturing = false;
    run->recording.clear();
    run->h2d.clear();
    run->d2h.clear();
  }
  void replay(void* state, Value* frame) const override {
    auto* run = static_cast<TestRun*>(state);
    for (auto& st : run->h2d) std::memcpy(st.buffer->data(), frame[st.value].tensor().raw_data(), st.buffer->size());
    for (auto& work : run->recording) work();
    for (auto& st : run->d2h) std::memcpy(frame[st.value].tensor().raw_data(), st.buffer->data(), st.buffer->size());
    ++g_counters.replays;
  }
  bool compiles_regions() const override { return regions_; }
  size_t min_region_nodes() const override { return min_nodes_; }
  std::unique_ptr<Kernel> compile_region(const RegionInfo& info) const override {
    return std::make_unique<RegionKernel>(info, registry_);
  }
  std::string name() const override { return "testdev"; }
  std::string device() const override { return device_; }
  bool claim(const ClaimInfo& info, Decline* why) const override {
    if (claim_.find("," + info.node.op_type + ",") == std::string::npos) {
      *why = {DeclineCode::kUnsupportedOp, "testdev claims only " + claim_.substr(1, claim_.size() - 2)};
      return false;
    }
    if (info.node.domain == "onyx.nhwc" && !channels_last_supported(info)) {
      *why = {DeclineCode::kUnsupportedAttribute, "testdev's channels-last kernels take explicit pads on 4-d inputs only"};
      return false;
    }
    // The channels-first forms of ops that only have a channels-last kernel here: taken (so the
    // optimizer offers the channels-last form), though only that form can run (so with the
    // optimizer disabled such a session fails to prepare its kernels).
    if (channels_last_ && info.node.domain.empty() && channels_last_supported(info)) {
      Node form = info.node;
      form.domain = "onyx.nhwc";
      Decline ignored;
      if (registry_.find(form, info.input_types, info.output_types, &ignored)) return true;
    }
    return registry_.find(info.node, info.input_types, info.output_types, why) != nullptr;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    Decline why;
    const KernelDef* d = registry_.find(info.node, info.input_types, info.output_types, &why);
    if (!d) fail(ErrorCode::kNotImplemented, why.message);
    return d->create(info);
  }

 private:
  std::string claim_, device_;
  bool regions_;
  size_t min_nodes_;
  std::string memory_;
  bool channels_last_, capture_, fail_capture_;
  KernelRegistry registry_;
};

class TestFactory final : public EpFactory {
 public:
  std::string name() const override { return "testdev"; }
  std::string version() const override { return "test-1"; }
  std::vector<ep::OptionInfo> options() const override {
    return {{"claim", "string", "Relu,Add", "comma-separated op types to claim"},
            {"device", "string", "cpu:0", "device the EP reports"},
            {"fail_create", "bool", "false", "make create() throw"},
            {"regions", "bool", "false", "compile claimed nodes into regions"},
            {"min_region_nodes", "int", "1", "smallest region worth compiling"},
            {"memory", "string", "cpu", "memory the EP's tensors live in (copies are inserted where it differs)"},
            {"threads", "int", "0", "unused; tests option validation"},
            {"channels_last", "bool", "false", "prefer channels-last (runs onyx.nhwc Conv, pooling, BatchNormalization)"},
            {"capture", "bool", "false", "record static runs and replay them (an emulation of CUDA graphs)"},
            {"fail_capture", "bool", "false", "kernels refuse to be recorded"}};
  }
  bool probe(std::string* reason) const override {
    if (std::getenv("ONYX_TESTDEV_NO_DEVICE")) {
      *reason = "ONYX_TESTDEV_NO_DEVICE is set";
      return false;
    }
    return true;
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override {
    if (option(ctx.options, "fail_create") == "true") fail(ErrorCode::kEpFailure, "testdev was told to fail");
    return std::make_unique<TestEp>(option(ctx.options, "claim"), option(ctx.options, "device"),
                                    option(ctx.options, "regions") == "true",
                                    static_cast<size_t>(std::stoul(option(ctx.options, "min_region_nodes"))),
                                    option(ctx.options, "memory"), option(ctx.options, "channels_last") == "true",
                                    option(ctx.options, "capture") == "true", option(ctx.options, "fail_capture") == "true");
  }
};

}  // namespace
}  // namespace onyx

ONYX_EP_MODULE("testdev", onyx::TestFactory)

/// For tests: how often kernel work was done directly ("computed"), recorded ("recorded"), and
/// how many recordings were replayed ("replays").
extern "C" __attribute__((visibility("default"))) long onyx_testdev_count(const char* what) {
  const std::string w = what;
  return w == "computed" ? onyx::g_counters.computed : w == "recorded" ? onyx::g_counters.recorded : onyx::g_counters.replays;
}
