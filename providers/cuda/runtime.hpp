// The CUDA EP's device side: errors, the per-EP shared state (device, caching allocator), the
// per-run state (stream, library handles, scratch, pinned staging) and the kernel base class.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/common.hpp"
#include "cuda_ep.hpp"
#include "launch.hpp"
#include "views.hpp"

namespace onyx::cuda {

[[noreturn]] void throw_cuda(cudaError_t e, const char* what);
[[noreturn]] void throw_cublas(cublasStatus_t e, const char* what);
[[noreturn]] void throw_cudnn(cudnnStatus_t e, const char* what);

#define ONYX_CUDA_CHECK(call)                                    \
  do {                                                           \
    const cudaError_t onyx_e_ = (call);                          \
    if (onyx_e_ != cudaSuccess) ::onyx::cuda::throw_cuda(onyx_e_, #call); \
  } while (0)
#define ONYX_CUBLAS_CHECK(call)                                     \
  do {                                                              \
    const cublasStatus_t onyx_e_ = (call);                          \
    if (onyx_e_ != CUBLAS_STATUS_SUCCESS) ::onyx::cuda::throw_cublas(onyx_e_, #call); \
  } while (0)
#define ONYX_CUDNN_CHECK(call)                                     \
  do {                                                             \
    const cudnnStatus_t onyx_e_ = (call);                          \
    if (onyx_e_ != CUDNN_STATUS_SUCCESS) ::onyx::cuda::throw_cudnn(onyx_e_, #call); \
  } while (0)
/// After a kernel launch: a launch error (bad configuration) becomes an onyx::Error.
#define ONYX_CUDA_LAUNCHED() ONYX_CUDA_CHECK(cudaGetLastError())

Ty to_ty(DType t);

/// Typed device pointer of a device tensor (Tensor::data<T>() refuses device memory on purpose).
template <class T>
T* dptr(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

class RunState;

/// Shared by an EP instance, its kernels and every device tensor it made (tensors keep it alive).
class Shared : public std::enable_shared_from_this<Shared> {
 public:
  Shared(const Options& opt, int memory_id);
  ~Shared();
  const Options opt;
  const int memory_id;
  cudaDeviceProp prop{};
  Arena arena;

  /// A device tensor from the arena (released to the arena when the last handle goes; during a
  /// run the release waits for the end of the run, as queued work may still read the block).
  Tensor allocate(DType dtype, const Shape& shape);
  /// Raw device bytes with the same lifetime rules.
  std::shared_ptr<void> allocate_bytes(size_t bytes);
  /// Uploads a constant host tensor (a weight), synchronously; the same constant read by several
  /// kernels is uploaded once.
  Tensor upload(const Tensor& host);
  void release(void* p);

  std::shared_ptr<RunState> acquire_run();
  /// Forgets the upload cache (its device tensors hold this object: called when the EP goes).
  void drop_uploads();

 private:
  friend class RunState;
  std::mutex mu_;
  std::vector<std::unique_ptr<RunState>> idle_;
  std::mutex upload_mu_;
  std::vector<std::pair<Tensor, Tensor>> uploads_;  // host constant (kept, so its address stays unique), device copy
};

/// One run's stream and everything queued on it.
class RunState {
 public:
  explicit RunState(Shared& shared);
  ~RunState();
  Shared& shared;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  int* error_flag = nullptr;  // device int, set by kernels that find bad data (Gather indices)
  /// Device scratch of at least `bytes`, valid for work queued on this stream until the next call.
  void* workspace(size_t bytes);
  /// Pinned host memory valid until the run ends (host-to-device staging).
  void* staging(size_t bytes);
  /// Starts and finishes a run: finish() waits for the stream, recycles staging, releases the
  /// blocks freed during the run (or, after a recorded run, keeps them for the recording) and
  /// throws if a kernel flagged bad data.
  void start();
  void finish();
  std::vector<void*> deferred;  // device blocks released during the run

  // Whole-run capture (enable_cuda_graph): the run's work is recorded into a CUDA graph while
  // `capturing`; copies record their host sides here instead of doing them.
  struct Stage {
    int value;     // main-graph value the host side reads (h2d) or writes (d2h)
    void* pinned;  // staging memory the recorded copy reads or writes
    size_t bytes;
  };
  bool capturing = false;
  std::vector<Stage> h2d, d2h;
  void begin_capture();
  /// Ends the capture and instantiates the graph; throws if the capture failed.
  void end_capture();
  /// Discards a capture in progress (the stream leaves capture mode; queued work is dropped).
  void abort_capture();
  /// Host inputs into staging, the graph launched and waited for, host outputs out of staging.
  void replay(Value* frame);
  /// Frees the recording and the device blocks it uses (before the state serves other runs).
  void drop_graph();
  /// Throws (kNotImplemented) while capturing: `what` cannot be recorded in a CUDA graph.
  void forbid_while_capturing(const char* what) const;

 private:
  int* host_flag_ = nullptr;  // pinned copy of error_flag
  void* workspace_ = nullptr;
  size_t workspace_size_ = 0;
  struct Pinned {
    void* p;
    size_t size;
  };
  std::vector<Pinned> pinned_;
  size_t pinned_block_ = 0, pinned_off_ = 0;
  RunState* previous_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  std::vector<void*> graph_blocks_;  // device blocks the recorded work uses, freed with it
};

/// The run state of the calling thread's current run of an EP with this Shared (null outside runs).
RunState* current_run(const Shared* shared);

/// Base of the EP's kernels: constant inputs (weights) are uploaded once at creation; the rest
/// come from the run's frame.
class CudaKernel : public Kernel {
 public:
  CudaKernel(const KernelCreateInfo& info, std::shared_ptr<Shared> shared);

 protected:
  RunState& run(const KernelContext& ctx) const;
  cudaStream_t stream(const KernelContext& ctx) const { return run(ctx).stream; }
  /// Device pointer of input i (its uploaded constant or the frame's device tensor).
  const void* dev(const KernelContext& ctx, size_t i) const;
  const float* devf(const KernelContext& ctx, size_t i) const { return static_cast<const float*>(dev(ctx, i)); }
  /// Shape and dtype of input i.
  const Tensor& in(const KernelContext& ctx, size_t i) const;
  bool has(const KernelContext& ctx, size_t i) const { return i < constants_.size() && (constants_[i].defined() || ctx.has_input(i)); }
  /// Values of a small integer input read on the host (constant, host tensor, or copied back).
  std::vector<int64_t> host_ints(const KernelContext& ctx, size_t i) const;
  std::vector<double> host_floats(const KernelContext& ctx, size_t i) const;
  /// The raw bytes of a small input read on the host (Pad's constant_value).
  std::vector<uint8_t> host_bytes(const KernelContext& ctx, size_t i) const;
  /// The host tensor of a constant input (null if the input is not constant).
  const Tensor* host_constant(size_t i) const { return i < host_.size() && host_[i].defined() ? &host_[i] : nullptr; }

  std::shared_ptr<Shared> shared_;
  const Node& node_;

 private:
  std::vector<Tensor> constants_;  // per input: device copy of a constant, or undefined
  std::vector<Tensor> host_;       // per input: the constant's host tensor
  // Host tensors met at run time where device memory was expected: values the plan computed
  // once (an Identity/Unsqueeze of a constant). Uploaded once; the host handle is kept so its
  // address stays unique while cached.
  mutable std::mutex upload_mu_;
  mutable std::vector<std::pair<Tensor, Tensor>> uploads_;
};

/// Kernels of the op families (kernels.cpp: own kernels; dnn.cpp: cuBLASLt and cuDNN).
std::unique_ptr<Kernel> create_own_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& shared);
std::unique_ptr<Kernel> create_dnn_kernel(const KernelCreateInfo& info, const std::shared_ptr<Shared>& shared);
bool is_dnn_op(const std::string& op);


}  // namespace onyx::cuda
