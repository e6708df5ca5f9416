// The CUDA execution provider (module libonyx_ep_cuda.so): factory, options, availability.
//
// The module links cuBLAS/cuBLASLt and cuDNN 9 dynamically (found through its RUNPATH), so a
// missing library makes the module fail to load and the loader names it ("libcudnn.so.9: cannot
// open shared object file"). The CUDA runtime is linked statically; it needs the driver
// (libcuda.so.1), which probe() looks for first so the reason is precise: no driver, driver too
// old, no device, or a device too old for this build.
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <mutex>

#include "ep/module_entry.hpp"
#include "runtime.hpp"

namespace onyx::cuda {

std::unique_ptr<ExecutionProvider> create_cuda_ep(const Options& opt);

namespace {

std::string cuda_version_string(int v) { return str(v / 1000, ".", (v % 1000) / 10); }

/// Checks driver, runtime and devices; empty when usable, else the reason.
std::string probe_device() {
  void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!drv) {
    const char* e = dlerror();
    return str("no CUDA driver (", e ? e : "libcuda.so.1 not found", ")");
  }
  using GetVersion = int (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(drv, "cuDriverGetVersion"));
  int driver = 0;
  if (!get_version || get_version(&driver) != 0) return "the CUDA driver (libcuda.so.1) does not report its version";
  if (driver < CUDART_VERSION)
    return str("CUDA driver too old: it supports CUDA ", cuda_version_string(driver), ", this EP was built with CUDA ",
               cuda_version_string(CUDART_VERSION), " (update the NVIDIA driver)");
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0))
    return str("no CUDA device (driver for CUDA ", cuda_version_string(driver), " present, but it sees no GPU)");
  if (e == cudaErrorInsufficientDriver)
    return str("CUDA driver too old for the CUDA ", cuda_version_string(CUDART_VERSION), " runtime");
  if (e != cudaSuccess) return str("CUDA runtime error: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")");
  std::string old;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    if (p.major >= 8) return "";
    old = str("device ", d, " (", p.name, ") has compute capability ", p.major, ".", p.minor);
  }
  return str("no CUDA device of compute capability 8.0 or newer (this build has code for sm_80 and sm_90; ", old, ")");
}

/// Runs probe_device() in a child process: initialising CUDA in the caller would break a later
/// fork() (the conformance runner probes once, then forks a child per test), and a driver that
/// crashes must not take the caller down. Falls back to probing in-process if fork fails.
std::string probe_isolated() {
  int fds[2];
  if (pipe(fds) != 0) return probe_device();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return probe_device();
  }
  if (pid == 0) {
    close(fds[0]);
    std::string r;
    try {
      r = probe_device();
    } catch (...) {
      r = "the CUDA probe failed with an exception";
    }
    r.insert(r.begin(), 'R');
    size_t off = 0;
    while (off < r.size()) {
      const ssize_t n = write(fds[1], r.data() + off, r.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  bool timed_out = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, 30000);
    if (ready == 0) {
      timed_out = true;
      break;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return "the CUDA driver did not answer within 30 s (probing the devices timed out)";
  if (out.empty() || out[0] != 'R') {
    if (WIFSIGNALED(status)) return str("probing the CUDA driver crashed (signal ", WTERMSIG(status), ")");
    return "probing the CUDA driver failed";
  }
  return out.substr(1);
}

std::string library_versions() {
  const size_t dnn = cudnnGetVersion();
  if (dnn / 10000 != CUDNN_MAJOR)
    return str("cuDNN ", dnn / 10000, ".", (dnn % 10000) / 100, " was loaded but this EP was built against cuDNN ", CUDNN_MAJOR);
  return "";
}

class Factory final : public EpFactory {
 public:
  std::string name() const override { return "cuda"; }
  std::string version() const override {
    const size_t dnn = cudnnGetVersion();
    return str("CUDA ", cuda_version_string(CUDART_VERSION), ", cuDNN ", dnn / 10000, ".", (dnn % 10000) / 100, ".", dnn % 100,
               ", cuBLASLt ", cublasLtGetVersion(), ", sm ", ONYX_CUDA_ARCHS);
  }
  std::vector<ep::OptionInfo> options() const override { return option_schema(); }
  bool probe(std::string* reason) const override {
    static std::once_flag once;
    static std::string why;
    std::call_once(once, [] {
      why = library_versions();
      if (why.empty()) why = probe_isolated();
    });
    if (!why.empty() && reason) *reason = why;
    return why.empty();
  }
  std::unique_ptr<ExecutionProvider> create(const EpCreateContext& ctx) const override {
    const Options opt = parse_options(ctx.options);
    std::string why;
    if (!probe(&why)) fail(ErrorCode::kNotAvailable, "cuda: ", why);
    return create_cuda_ep(opt);
  }
};

}  // namespace
}  // namespace onyx::cuda

ONYX_EP_MODULE("cuda", onyx::cuda::Factory)
