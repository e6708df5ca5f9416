// onyx: tensor shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace onyx {

/// The dimensions of a tensor. Up to 8 dims are stored inline (no heap allocation), so shapes can
/// be built and copied on the run path freely. In shape inference a negative dim stands for a
/// symbolic or unknown dimension (see ir/symbols); a concrete tensor's shape never has one.
class Shape {
 public:
  static constexpr uint32_t kInline = 8;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.size()); }
  explicit Shape(std::span<const int64_t> dims) { assign(dims.data(), dims.size()); }
  explicit Shape(const std::vector<int64_t>& dims) { assign(dims.data(), dims.size()); }
  /// A shape of `rank` dims, all equal to `fill`.
  static Shape filled(size_t rank, int64_t fill) {
    Shape s;
    s.resize(rank, fill);
    return s;
  }
  Shape(const Shape& o) { assign(o.data(), o.size()); }
  Shape(Shape&& o) noexcept { move_from(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) move_from(o);
    return *this;
  }

  size_t size() const { return size_; }
  size_t rank() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return heap_ ? heap_.get() : inline_; }
  int64_t* data() { return heap_ ? heap_.get() : inline_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t back() const { return data()[size_ - 1]; }
  std::span<const int64_t> span() const { return {data(), size_}; }
  std::vector<int64_t> to_vector() const { return {begin(), end()}; }

  void push_back(int64_t v) {
    reserve(size_ + 1);
    data()[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    reserve(size_ + 1);
    int64_t* d = data();
    for (size_t i = size_; i > pos; --i) d[i] = d[i - 1];
    d[pos] = v;
    ++size_;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    for (size_t i = pos; i + 1 < size_; ++i) d[i] = d[i + 1];
    --size_;
  }
  void resize(size_t n, int64_t fill = 0) {
    reserve(n);
    int64_t* d = data();
    for (size_t i = size_; i < n; ++i) d[i] = fill;
    size_ = static_cast<uint32_t>(n);
  }
  void clear() { size_ = 0; }

  /// Product of the dims (1 for a scalar). Only meaningful when every dim is known.
  int64_t numel() const {
    int64_t n = 1;
    for (size_t i = 0; i < size_; ++i) n *= data()[i];
    return n;
  }
  /// True when every dim is >= 0.
  bool is_concrete() const {
    for (size_t i = 0; i < size_; ++i)
      if (data()[i] < 0) return false;
    return true;
  }
  /// "[1,3,224,224]"; symbolic dims print as "?".
  std::string to_string() const;

  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }

 private:
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max<size_t>(n, 2 * cap_);
    std::unique_ptr<int64_t[]> h(new int64_t[cap]);
    for (size_t i = 0; i < size_; ++i) h[i] = data()[i];
    heap_ = std::move(h);
    cap_ = static_cast<uint32_t>(cap);
  }
  void assign(const int64_t* d, size_t n) {
    if (n > kInline) {
      if (n > cap_ || !heap_) {
        heap_.reset(new int64_t[n]);
        cap_ = static_cast<uint32_t>(n);
      }
    } else {
      heap_.reset();
      cap_ = kInline;
    }
    int64_t* dst = data();
    for (size_t i = 0; i < n; ++i) dst[i] = d[i];
    size_ = static_cast<uint32_t>(n);
  }
  void move_from(Shape& o) {
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      cap_ = o.cap_;
      size_ = o.size_;
    } else {
      heap_.reset();
      cap_ = kInline;
      for (size_t i = 0; i < o.size_; ++i) inline_[i] = o.inline_[i];
      size_ = o.size_;
    }
    o.size_ = 0;
    o.cap_ = kInline;
  }

  uint32_t size_ = 0;
  uint32_t cap_ = kInline;
  int64_t inline_[kInline] = {};
  std::unique_ptr<int64_t[]> heap_;
};

}  // namespace onyx
