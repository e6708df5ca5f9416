#include "kernels/common.hpp"

#include <cstdlib>
#include <string>

namespace onyx::cpu {

void unsupported_dtype(const char* what, DType dt) {
  fail(ErrorCode::kNotImplemented, what, ": element type ", dtype_name(dt), " is not supported");
}

void copy_elements(DType dt, const void* src, void* dst, int64_t n, int64_t src_off, int64_t dst_off) {
  if (n <= 0) return;
  if (dt == DType::kString) {
    const auto* s = static_cast<const std::string*>(src) + src_off;
    auto* d = static_cast<std::string*>(dst) + dst_off;
    for (int64_t i = 0; i < n; ++i) d[i] = s[i];
    return;
  }
  const size_t es = dtype_size(dt);
  std::memcpy(static_cast<uint8_t*>(dst) + dst_off * es, static_cast<const uint8_t*>(src) + src_off * es, n * es);
}

std::vector<int64_t> read_ints(const Tensor& t, const char* what) {
  const int64_t n = t.numel();
  std::vector<int64_t> out(static_cast<size_t>(n));
  if (t.dtype() == DType::kInt64) {
    const int64_t* d = t.data<int64_t>();
    std::copy(d, d + n, out.begin());
  } else if (t.dtype() == DType::kInt32) {
    const int32_t* d = t.data<int32_t>();
    std::copy(d, d + n, out.begin());
  } else {
    fail(ErrorCode::kInvalidArgument, what, " must be int32 or int64, got ", dtype_name(t.dtype()));
  }
  return out;
}

Shape read_dims(const Tensor& t, const char* what) {
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32)
    fail(ErrorCode::kInvalidArgument, what, " must be int32 or int64, got ", dtype_name(t.dtype()));
  Shape s;
  for (int64_t i = 0; i < t.numel(); ++i) s.push_back(int_at(t, i));
  return s;
}

double read_scalar(const Tensor& t) {
  if (t.numel() < 1) fail(ErrorCode::kInvalidArgument, "expected a scalar, got an empty tensor");
  return t.element_as_double(0);
}

char* thread_workspace(Workspace w, size_t bytes) {
  struct Buf {
    char* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[static_cast<size_t>(Workspace::kCount)];
  Buf& buf = bufs[static_cast<size_t>(w)];
  if (bytes > buf.n) {
    std::free(buf.p);
    buf.p = nullptr;
    buf.n = 0;
    const size_t sz = std::max<size_t>(64, (bytes + 63) / 64 * 64);
    buf.p = static_cast<char*>(std::aligned_alloc(64, sz));
    if (!buf.p) fail(ErrorCode::kRuntime, "out of memory allocating ", sz, " bytes of kernel workspace");
    buf.n = sz;
  }
  return buf.p;
}

}  // namespace onyx::cpu
