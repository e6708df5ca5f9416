// A small protobuf wire-format reader and writer (no generated code, no libprotobuf).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common.hpp"

namespace onyx {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

/// Reads one protobuf message from a byte range. Every read is bounds-checked; a malformed
/// message throws onyx::Error(kInvalidModel) naming the message being read and the byte offset
/// from the start of the file (`base`).
class ProtoReader {
 public:
  ProtoReader(const uint8_t* begin, const uint8_t* end, const uint8_t* base, std::string_view file, std::string_view what)
      : p_(begin), end_(end), base_(base), file_(file), what_(what) {}

  /// Reads the next field tag; false at the end of the message.
  bool next() {
    if (p_ >= end_) return false;
    const uint64_t tag = varint();
    field_ = static_cast<uint32_t>(tag >> 3);
    wire_ = static_cast<WireType>(tag & 7);
    if (field_ == 0) error("field number 0");
    return true;
  }
  uint32_t field() const { return field_; }
  WireType wire() const { return wire_; }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) error("truncated varint");
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    error("varint longer than 10 bytes");
  }
  int64_t int64() { return static_cast<int64_t>(varint()); }
  uint32_t fixed32() {
    need(4);
    uint32_t v;
    std::memcpy(&v, p_, 4);
    p_ += 4;
    return v;
  }
  uint64_t fixed64() {
    need(8);
    uint64_t v;
    std::memcpy(&v, p_, 8);
    p_ += 8;
    return v;
  }
  float float32() {
    uint32_t u = fixed32();
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  double float64() {
    uint64_t u = fixed64();
    double d;
    std::memcpy(&d, &u, 8);
    return d;
  }
  /// A length-delimited field's bytes (a view into the buffer).
  std::span<const uint8_t> bytes() {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_))
      error(str("length ", n, " runs past the end of the enclosing message (", end_ - p_, " bytes left)"));
    std::span<const uint8_t> s(p_, static_cast<size_t>(n));
    p_ += n;
    return s;
  }
  std::string string() {
    auto b = bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  /// A reader over an embedded message.
  ProtoReader message(std::string_view what) {
    auto b = bytes();
    return ProtoReader(b.data(), b.data() + b.size(), base_, file_, what);
  }
  void skip() {
    switch (wire_) {
      case WireType::kVarint: varint(); break;
      case WireType::kFixed64: need(8); p_ += 8; break;
      case WireType::kBytes: bytes(); break;
      case WireType::kFixed32: need(4); p_ += 4; break;
      default: error(str("unsupported wire type ", static_cast<int>(wire_), " for field ", field_));
    }
  }
  /// Expect the current field to have wire type `w`.
  void expect(WireType w) {
    if (wire_ != w)
      error(str("field ", field_, " has wire type ", static_cast<int>(wire_), ", expected ", static_cast<int>(w)));
  }
  /// Repeated scalar fields may be packed or not; these append either form.
  template <class T, class F>
  void repeated(std::vector<T>& out, WireType scalar_wire, F read_one) {
    if (wire_ == WireType::kBytes) {
      auto b = bytes();
      ProtoReader sub(b.data(), b.data() + b.size(), base_, file_, what_);
      while (sub.p_ < sub.end_) out.push_back(read_one(sub));
    } else {
      expect(scalar_wire);
      out.push_back(read_one(*this));
    }
  }
  void repeated_int64(std::vector<int64_t>& out) {
    repeated(out, WireType::kVarint, [](ProtoReader& r) { return r.int64(); });
  }
  void repeated_float(std::vector<float>& out) {
    repeated(out, WireType::kFixed32, [](ProtoReader& r) { return r.float32(); });
  }
  void repeated_double(std::vector<double>& out) {
    repeated(out, WireType::kFixed64, [](ProtoReader& r) { return r.float64(); });
  }
  void repeated_uint64(std::vector<uint64_t>& out) {
    repeated(out, WireType::kVarint, [](ProtoReader& r) { return r.varint(); });
  }

  size_t offset() const { return static_cast<size_t>(p_ - base_); }
  std::string_view file() const { return file_; }
  std::string_view what() const { return what_; }
  const uint8_t* base() const { return base_; }
  [[noreturn]] void error(const std::string& msg) const {
    fail(ErrorCode::kInvalidModel, file_, ": malformed ", what_, " at byte offset ", offset(), ": ", msg);
  }

 private:
  void need(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) error("truncated fixed-size field");
  }
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* base_;
  std::string_view file_;
  std::string_view what_;
  uint32_t field_ = 0;
  WireType wire_ = WireType::kVarint;
};

/// Appends protobuf fields to a byte string.
class ProtoWriter {
 public:
  void varint_raw(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void tag(uint32_t field, WireType w) { varint_raw((static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(w)); }
  void varint(uint32_t field, uint64_t v) {
    tag(field, WireType::kVarint);
    varint_raw(v);
  }
  void bytes(uint32_t field, std::string_view b) {
    tag(field, WireType::kBytes);
    varint_raw(b.size());
    out_.append(b.data(), b.size());
  }
  void bytes(uint32_t field, const void* data, size_t n) { bytes(field, std::string_view(static_cast<const char*>(data), n)); }
  void fixed32(uint32_t field, uint32_t v) {
    tag(field, WireType::kFixed32);
    out_.append(reinterpret_cast<const char*>(&v), 4);
  }
  void packed_int64(uint32_t field, const std::vector<int64_t>& v) {
    ProtoWriter w;
    for (int64_t x : v) w.varint_raw(static_cast<uint64_t>(x));
    bytes(field, w.str());
  }
  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

}  // namespace onyx
