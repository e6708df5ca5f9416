// The CUDA EP: device memory (caching allocator), per-run streams, copies, and the EP object.
#include "runtime.hpp"

#include <cstring>

#include "ep/memory.hpp"

namespace onyx::cuda {

void throw_cuda(cudaError_t e, const char* what) {
  fail(e == cudaErrorMemoryAllocation ? ErrorCode::kRuntime : ErrorCode::kEpFailure, "cuda: ", what, " failed: ",
       cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
}
void throw_cublas(cublasStatus_t e, const char* what) {
  fail(ErrorCode::kEpFailure, "cuda: ", what, " failed: cuBLAS status ", static_cast<int>(e));
}
void throw_cudnn(cudnnStatus_t e, const char* what) {
  fail(ErrorCode::kEpFailure, "cuda: ", what, " failed: ", cudnnGetErrorString(e));
}

Ty to_ty(DType t) {
  switch (t) {
    case DType::kFloat: return Ty::kF32;
    case DType::kFloat16: return Ty::kF16;
    case DType::kBFloat16: return Ty::kBF16;
    case DType::kDouble: return Ty::kF64;
    case DType::kInt8: return Ty::kI8;
    case DType::kUInt8: return Ty::kU8;
    case DType::kInt16: return Ty::kI16;
    case DType::kInt32: return Ty::kI32;
    case DType::kInt64: return Ty::kI64;
    case DType::kBool: return Ty::kBool;
    default: fail(ErrorCode::kNotImplemented, "cuda: no device kernels for ", dtype_name(t));
  }
}

// ---------------------------------------------------------------------------------------------
// Shared state and device memory

namespace {
thread_local RunState* tls_run = nullptr;

void* device_malloc(int device, size_t bytes) {
  cudaSetDevice(device);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state of the failed allocation
    return nullptr;
  }
  return p;
}
}  // namespace

RunState* current_run(const Shared* shared) { return tls_run && &tls_run->shared == shared ? tls_run : nullptr; }

Shared::Shared(const Options& o, int memory)
    : opt(o),
      memory_id(memory),
      arena([dev = o.device_id](size_t n) { return device_malloc(dev, n); },
            [dev = o.device_id](void* p) {
              cudaSetDevice(dev);
              cudaFree(p);
            },
            o.gpu_mem_limit, o.arena_extend) {
  ONYX_CUDA_CHECK(cudaSetDevice(o.device_id));
  ONYX_CUDA_CHECK(cudaGetDeviceProperties(&prop, o.device_id));
}

Shared::~Shared() {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
}

void Shared::drop_uploads() {
  std::vector<std::pair<Tensor, Tensor>> gone;
  {
    std::lock_guard<std::mutex> lock(upload_mu_);
    gone.swap(uploads_);
  }
}

void Shared::release(void* p) {
  if (RunState* r = current_run(this)) {
    r->deferred.push_back(p);  // queued work of this run may still use it
    return;
  }
  arena.release(p);
}

std::shared_ptr<void> Shared::allocate_bytes(size_t bytes) {
  void* p = arena.allocate(bytes);
  std::shared_ptr<Shared> self = shared_from_this();
  return std::shared_ptr<void>(p, [self](void* q) { self->release(q); });
}

Tensor Shared::allocate(DType dtype, const Shape& shape) {
  if (dtype == DType::kString) fail(ErrorCode::kNotImplemented, "cuda: string tensors cannot live on the device");
  const int64_t n = shape.numel();
  if (n < 0) fail(ErrorCode::kInvalidArgument, "cuda: cannot allocate shape ", shape.to_string());
  std::shared_ptr<void> block = allocate_bytes(static_cast<size_t>(n) * dtype_size(dtype));
  void* p = block.get();
  return Tensor::device_tensor(dtype, shape, p, std::move(block), memory_id);
}

Tensor Shared::upload(const Tensor& host) {
  std::lock_guard<std::mutex> lock(upload_mu_);
  for (const auto& [h, d] : uploads_)
    if (h.raw_data() == host.raw_data() && h.nbytes() == host.nbytes() && h.dtype() == host.dtype() && h.shape() == host.shape())
      return d;
  Tensor t = allocate(host.dtype(), host.shape());
  ONYX_CUDA_CHECK(cudaSetDevice(opt.device_id));
  if (host.nbytes()) {
    ONYX_CUDA_CHECK(cudaMemcpy(t.raw_data(), host.raw_data(), host.nbytes(), cudaMemcpyHostToDevice));
    ONYX_CUDA_CHECK(cudaDeviceSynchronize());  // the runs' non-blocking streams do not wait for the legacy stream
  }
  uploads_.emplace_back(host, t);
  return t;
}

std::shared_ptr<RunState> Shared::acquire_run() {
  std::unique_ptr<RunState> r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      r = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!r) r = std::make_unique<RunState>(*this);
  r->start();
  std::shared_ptr<Shared> self = shared_from_this();
  RunState* raw = r.release();
  return std::shared_ptr<RunState>(raw, [self](RunState* s) {
    // end_run() normally finished the run; after an error, wait for the stream here.
    if (tls_run == s) {
      try {
        s->finish();
      } catch (...) {
      }
    }
    s->drop_graph();  // (a run context kept it for its recording)
    std::lock_guard<std::mutex> lock(self->mu_);
    self->idle_.emplace_back(s);
  });
}

RunState::RunState(Shared& s) : shared(s) {
  ONYX_CUDA_CHECK(cudaSetDevice(s.opt.device_id));
  ONYX_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ONYX_CUDNN_CHECK(cudnnCreate(&cudnn));
  ONYX_CUDNN_CHECK(cudnnSetStream(cudnn, stream));
  ONYX_CUBLAS_CHECK(cublasLtCreate(&lt));
  ONYX_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&error_flag), sizeof(int)));
  ONYX_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_flag_), sizeof(int), cudaHostAllocDefault));
  ONYX_CUDA_CHECK(cudaMemsetAsync(error_flag, 0, sizeof(int), stream));
  ONYX_CUDA_CHECK(cudaStreamSynchronize(stream));
}

RunState::~RunState() {
  cudaSetDevice(shared.opt.device_id);
  if (stream) cudaStreamSynchronize(stream);
  drop_graph();
  if (workspace_) shared.arena.release(workspace_);
  for (auto& p : pinned_) cudaFreeHost(p.p);
  if (error_flag) cudaFree(error_flag);
  if (host_flag_) cudaFreeHost(host_flag_);
  if (lt) cublasLtDestroy(lt);
  if (cudnn) cudnnDestroy(cudnn);
  if (stream) cudaStreamDestroy(stream);
}

void* RunState::workspace(size_t bytes) {
  if (bytes <= workspace_size_) return workspace_;
  forbid_while_capturing("growing the scratch workspace (it waits for the stream)");
  if (workspace_) {
    ONYX_CUDA_CHECK(cudaStreamSynchronize(stream));  // queued work may use the old one
    shared.arena.release(workspace_);
    workspace_ = nullptr;
    workspace_size_ = 0;
  }
  workspace_ = shared.arena.allocate(bytes);
  workspace_size_ = shared.arena.block_size(bytes);
  return workspace_;
}

void* RunState::staging(size_t bytes) {
  bytes = (bytes + 255) / 256 * 256;
  while (pinned_block_ < pinned_.size()) {
    Pinned& b = pinned_[pinned_block_];
    if (pinned_off_ + bytes <= b.size) {
      void* p = static_cast<char*>(b.p) + pinned_off_;
      pinned_off_ += bytes;
      return p;
    }
    ++pinned_block_;
    pinned_off_ = 0;
  }
  size_t size = size_t(4) << 20;
  while (size < bytes) size <<= 1;
  void* p = nullptr;
  ONYX_CUDA_CHECK(cudaHostAlloc(&p, size, cudaHostAllocPortable));
  pinned_.push_back({p, size});
  pinned_block_ = pinned_.size() - 1;
  pinned_off_ = bytes;
  return p;
}

void RunState::start() {
  ONYX_CUDA_CHECK(cudaSetDevice(shared.opt.device_id));
  previous_ = tls_run;
  tls_run = this;
  pinned_block_ = 0;
  pinned_off_ = 0;
}

void RunState::finish() {
  if (tls_run == this) tls_run = previous_;
  previous_ = nullptr;
  *host_flag_ = 0;
  cudaMemcpyAsync(host_flag_, error_flag, sizeof(int), cudaMemcpyDeviceToHost, stream);
  const cudaError_t e = cudaStreamSynchronize(stream);
  if (exec_) {
    // Blocks freed during the recorded run are named by the recording: kept while it lives.
    graph_blocks_.insert(graph_blocks_.end(), deferred.begin(), deferred.end());
  } else {
    for (void* p : deferred) shared.arena.release(p);
  }
  deferred.clear();
  pinned_block_ = 0;
  pinned_off_ = 0;
  if (e != cudaSuccess) throw_cuda(e, "running the graph's kernels (cudaStreamSynchronize)");
  if (*host_flag_) {
    ONYX_CUDA_CHECK(cudaMemsetAsync(error_flag, 0, sizeof(int), stream));
    ONYX_CUDA_CHECK(cudaStreamSynchronize(stream));
    fail(ErrorCode::kRuntime, "cuda: an index was out of range (Gather): the outputs of this run are not valid");
  }
}

void RunState::forbid_while_capturing(const char* what) const {
  if (capturing) fail(ErrorCode::kNotImplemented, "cuda: a CUDA graph cannot record ", what);
}

void RunState::begin_capture() {
  drop_graph();
  h2d.clear();
  d2h.clear();
  // Relaxed: the caching allocator may still call cudaMalloc for a block the recording names.
  ONYX_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  capturing = true;
}

void RunState::end_capture() {
  capturing = false;
  cudaGraph_t g = nullptr;
  ONYX_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
  graph_ = g;
  ONYX_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

void RunState::abort_capture() {
  if (capturing) {
    capturing = false;
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream, &g);  // (fails when the capture was invalidated; the stream leaves capture mode either way)
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
  }
  drop_graph();
  h2d.clear();
  d2h.clear();
}

void RunState::replay(Value* frame) {
  if (!exec_) fail(ErrorCode::kRuntime, "cuda: internal error: replaying a run that was not recorded");
  auto host_tensor = [&](const Stage& st) -> Tensor& {
    Value& v = frame[st.value];
    if (!v.is_tensor() || !v.tensor().on_host() || v.tensor().nbytes() != st.bytes)
      fail(ErrorCode::kRuntime, "cuda: internal error: a recorded copy's host value changed its size or memory");
    return v.tensor();
  };
  for (const Stage& st : h2d) std::memcpy(st.pinned, host_tensor(st).raw_data(), st.bytes);
  ONYX_CUDA_CHECK(cudaGraphLaunch(exec_, stream));
  ONYX_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (const Stage& st : d2h) std::memcpy(host_tensor(st).raw_data(), st.pinned, st.bytes);
}

void RunState::drop_graph() {
  if (exec_) cudaGraphExecDestroy(exec_);
  if (graph_) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  for (void* p : graph_blocks_) shared.arena.release(p);
  graph_blocks_.clear();
}

// ---------------------------------------------------------------------------------------------
// Kernel base

CudaKernel::CudaKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> shared) : shared_(std::move(shared)), node_(info.node) {
  constants_.resize(info.node.inputs.size());
  host_.resize(info.node.inputs.size());
  for (size_t i = 0; i < info.node.inputs.size(); ++i) {
    const Tensor* c = info.constant(i);
    if (!c || !c->defined() || c->dtype() == DType::kString) continue;
    host_[i] = *c;
    constants_[i] = shared_->upload(*c);
  }
}

RunState& CudaKernel::run(const KernelContext& ctx) const {
  auto* r = static_cast<RunState*>(ctx.ep_state());
  if (!r) fail(ErrorCode::kRuntime, "cuda: ", node_.label(), " ran outside a CUDA run");
  return *r;
}

const Tensor& CudaKernel::in(const KernelContext& ctx, size_t i) const {
  if (i < constants_.size() && constants_[i].defined()) return constants_[i];
  return ctx.input(i);
}

const void* CudaKernel::dev(const KernelContext& ctx, size_t i) const {
  const Tensor& t = in(ctx, i);
  if (!t.on_host() || !t.nbytes()) return t.raw_data();
  RunState& rs = run(ctx);
  if (!t.storage()) {
    // Not an owned constant: upload for this run only (the block is released after the run).
    rs.forbid_while_capturing("the upload of a host value that may change between runs");
    Tensor d = shared_->allocate(t.dtype(), t.shape());
    void* stage = rs.staging(t.nbytes());
    std::memcpy(stage, t.raw_data(), t.nbytes());
    ONYX_CUDA_CHECK(cudaMemcpyAsync(d.raw_data(), stage, t.nbytes(), cudaMemcpyHostToDevice, rs.stream));
    return d.raw_data();
  }
  std::lock_guard<std::mutex> lock(upload_mu_);
  for (const auto& [h, d] : uploads_)
    if (h.raw_data() == t.raw_data() && h.nbytes() == t.nbytes() && h.storage() == t.storage()) return d.raw_data();
  if (uploads_.size() >= 64)
    fail(ErrorCode::kRuntime, "cuda: internal error: ", node_.label(), " input ", i, " keeps arriving in host memory");
  rs.forbid_while_capturing("a first upload (it waits for the stream)");
  Tensor d = shared_->allocate(t.dtype(), t.shape());
  ONYX_CUDA_CHECK(cudaMemcpyAsync(d.raw_data(), t.raw_data(), t.nbytes(), cudaMemcpyHostToDevice, rs.stream));
  ONYX_CUDA_CHECK(cudaStreamSynchronize(rs.stream));
  uploads_.emplace_back(t, d);
  return d.raw_data();
}

namespace {
template <class Fn>
void read_host(const CudaKernel* k, const KernelContext& ctx, const Tensor& t, RunState& run, Fn&& fn) {
  (void)k;
  if (t.on_host()) {
    fn(t);
    return;
  }
  run.forbid_while_capturing("a device value read on the host in the middle of a run");
  Tensor h(t.dtype(), t.shape());
  if (t.nbytes()) {
    ONYX_CUDA_CHECK(cudaMemcpyAsync(h.raw_data(), t.raw_data(), t.nbytes(), cudaMemcpyDeviceToHost, run.stream));
    ONYX_CUDA_CHECK(cudaStreamSynchronize(run.stream));
  }
  fn(h);
}
}  // namespace

std::vector<int64_t> CudaKernel::host_ints(const KernelContext& ctx, size_t i) const {
  const Tensor* c = host_constant(i);
  std::vector<int64_t> out;
  auto take = [&](const Tensor& t) {
    out.resize(static_cast<size_t>(t.numel()));
    for (int64_t k = 0; k < t.numel(); ++k) {
      switch (t.dtype()) {
        case DType::kInt64: out[k] = t.data<int64_t>()[k]; break;
        case DType::kInt32: out[k] = t.data<int32_t>()[k]; break;
        default: fail(ErrorCode::kInvalidArgument, node_.label(), ": input ", i, " must be int32 or int64");
      }
    }
  };
  if (c) take(*c);
  else read_host(this, ctx, ctx.input(i), run(ctx), take);
  return out;
}

std::vector<double> CudaKernel::host_floats(const KernelContext& ctx, size_t i) const {
  const Tensor* c = host_constant(i);
  std::vector<double> out;
  auto take = [&](const Tensor& t) {
    for (int64_t k = 0; k < t.numel(); ++k) out.push_back(t.element_as_double(k));
  };
  if (c) take(*c);
  else read_host(this, ctx, ctx.input(i), run(ctx), take);
  return out;
}

std::vector<uint8_t> CudaKernel::host_bytes(const KernelContext& ctx, size_t i) const {
  const Tensor* c = host_constant(i);
  std::vector<uint8_t> out;
  auto take = [&](const Tensor& t) {
    const auto* b = static_cast<const uint8_t*>(t.raw_data());
    if (t.nbytes()) out.assign(b, b + t.nbytes());
  };
  if (c) take(*c);
  else read_host(this, ctx, ctx.input(i), run(ctx), take);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Copies between host and device memory

namespace {

class CopyKernel final : public Kernel {
 public:
  CopyKernel(std::shared_ptr<Shared> s, bool to_device) : shared_(std::move(s)), to_device_(to_device) {}
  void compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    auto* run = static_cast<RunState*>(ctx.ep_state());
    if (!run) fail(ErrorCode::kRuntime, "cuda: a copy ran outside a CUDA run");
    if (x.dtype() == DType::kString) fail(ErrorCode::kNotImplemented, "cuda: string tensors cannot be copied to the device");
    if (to_device_) {
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if (!x.nbytes()) return;
      if (!x.on_host()) {
        ONYX_CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), x.raw_data(), x.nbytes(), cudaMemcpyDeviceToDevice, run->stream));
        return;
      }
      // Through pinned staging: the copy is asynchronous and the host buffer may be reused at once.
      void* stage = run->staging(x.nbytes());
      std::memcpy(stage, x.raw_data(), x.nbytes());
      ONYX_CUDA_CHECK(cudaMemcpyAsync(y.raw_data(), stage, x.nbytes(), cudaMemcpyHostToDevice, run->stream));
      if (run->capturing) run->h2d.push_back({ctx.node().inputs[0], stage, x.nbytes()});  // replay refills the staging
    } else {
      Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
      if (!x.nbytes()) return;
      if (x.on_host()) {
        run->forbid_while_capturing("a host-to-host copy");
        std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
        return;
      }
      if (run->capturing) {  // recorded into staging; replay copies it out once the graph is done
        void* stage = run->staging(x.nbytes());
        ONYX_CUDA_CHECK(cudaMemcpyAsync(stage, x.raw_data(), x.nbytes(), cudaMemcpyDeviceToHost, run->stream));
        run->d2h.push_back({ctx.node().outputs[0], stage, x.nbytes()});
        return;
      }
      // The host consumer runs right after: wait for the stream (the copy is ordered after the
      // kernels producing x).
      void* stage = run->staging(x.nbytes());
      ONYX_CUDA_CHECK(cudaMemcpyAsync(stage, x.raw_data(), x.nbytes(), cudaMemcpyDeviceToHost, run->stream));
      ONYX_CUDA_CHECK(cudaStreamSynchronize(run->stream));
      std::memcpy(y.raw_data(), stage, x.nbytes());
    }
  }

 private:
  std::shared_ptr<Shared> shared_;
  bool to_device_;
};

class CudaAllocator final : public DeviceAllocator {
 public:
  explicit CudaAllocator(std::shared_ptr<Shared> s) : shared_(std::move(s)) {}
  int memory() const override { return shared_->memory_id; }
  Tensor allocate(DType dtype, const Shape& shape) override { return shared_->allocate(dtype, shape); }

 private:
  std::shared_ptr<Shared> shared_;
};

class CudaEp final : public ExecutionProvider {
 public:
  explicit CudaEp(const Options& opt)
      : device_(str("cuda:", opt.device_id)),
        shared_(std::make_shared<Shared>(opt, register_device_memory(device_))),
        allocator_(shared_) {}
  ~CudaEp() override {
    cudaSetDevice(shared_->opt.device_id);
    cudaDeviceSynchronize();
    shared_->drop_uploads();  // kernels that still hold a weight keep theirs
  }
  std::string name() const override { return "cuda"; }
  std::string device() const override { return device_; }
  bool host_memory() const override { return false; }
  std::string memory() const override { return device_; }
  DeviceAllocator* allocator() const override { return const_cast<CudaAllocator*>(&allocator_); }
  std::shared_ptr<void> begin_run() const override { return shared_->acquire_run(); }
  void end_run(void* state) const override { static_cast<RunState*>(state)->finish(); }
  std::unique_ptr<Kernel> create_copy_kernel(bool to_device) const override {
    return std::make_unique<CopyKernel>(shared_, to_device);
  }
  bool reads_host_input(const Node& node, size_t input, const Graph& graph) const override {
    return cuda::reads_host_input(node, input, graph);
  }
  bool claim(const ClaimInfo& info, Decline* why) const override { return claim_node(info, why, shared_->opt.prefer_nhwc); }
  bool captures_runs() const override { return shared_->opt.enable_cuda_graph; }
  void begin_capture(void* state) const override { static_cast<RunState*>(state)->begin_capture(); }
  void end_capture(void* state) const override { static_cast<RunState*>(state)->end_capture(); }
  void abort_capture(void* state) const override { static_cast<RunState*>(state)->abort_capture(); }
  void resume_run(void* state) const override { static_cast<RunState*>(state)->start(); }
  void replay(void* state, Value* frame) const override { static_cast<RunState*>(state)->replay(frame); }
  DataLayout preferred_layout() const override {
    return shared_->opt.prefer_nhwc ? DataLayout::kChannelsLast : DataLayout::kChannelsFirst;
  }
  std::unique_ptr<Kernel> create_kernel(const KernelCreateInfo& info) const override {
    ONYX_CUDA_CHECK(cudaSetDevice(shared_->opt.device_id));
    if (is_dnn_op(info.node.op_type)) return create_dnn_kernel(info, shared_);
    return create_own_kernel(info, shared_);
  }

 private:
  std::string device_;
  std::shared_ptr<Shared> shared_;
  CudaAllocator allocator_;
};

}  // namespace

std::unique_ptr<ExecutionProvider> create_cuda_ep(const Options& opt) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) throw_cuda(e, "cudaGetDeviceCount");
  if (opt.device_id >= count)
    fail(ErrorCode::kInvalidArgument, "cuda: option 'device_id' is ", opt.device_id, " but this machine has ", count, " CUDA device(s)");
  cudaDeviceProp p{};
  ONYX_CUDA_CHECK(cudaGetDeviceProperties(&p, opt.device_id));
  if (p.major < 8)
    fail(ErrorCode::kNotAvailable, "cuda: device ", opt.device_id, " (", p.name, ") has compute capability ", p.major, ".", p.minor,
         "; this build needs 8.0 or newer");
  return std::make_unique<CudaEp>(opt);
}

}  // namespace onyx::cuda
