// Read-only memory mapping of a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace onyx {

class MappedFile {
 public:
  /// Maps `path` read-only; throws onyx::Error(kIo) naming the path and the OS error.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  /// Wraps a copy of an in-memory buffer (for commit_from_memory).
  static std::shared_ptr<MappedFile> copy_of(const void* data, size_t size);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::string path_;
};

}  // namespace onyx
