#include "model/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/common.hpp"

namespace onyx {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::kIo, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(ErrorCode::kIo, "cannot stat '", path, "': ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(ErrorCode::kIo, "'", path, "' is not a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      fail(ErrorCode::kIo, "cannot map '", path, "' (", f->size_, " bytes): ", std::strerror(e));
    }
    f->data_ = static_cast<const uint8_t*>(p);
    f->mapped_ = true;
  }
  ::close(fd);
  return f;
}

std::shared_ptr<MappedFile> MappedFile::copy_of(const void* data, size_t size) {
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = "<memory>";
  f->size_ = size;
  if (size) {
    void* p = std::aligned_alloc(64, (size + 63) / 64 * 64);
    if (!p) fail(ErrorCode::kRuntime, "out of memory copying a ", size, "-byte model");
    std::memcpy(p, data, size);
    f->data_ = static_cast<const uint8_t*>(p);
  }
  return f;
}

MappedFile::~MappedFile() {
  if (mapped_)
    ::munmap(const_cast<uint8_t*>(data_), size_);
  else
    std::free(const_cast<uint8_t*>(data_));
}

}  // namespace onyx
