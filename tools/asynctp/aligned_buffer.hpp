// Host memory with the alignment the library demands of every tensor
// (16 bytes; we give a cache line so ranks never share one).
#pragma once

#include <cstddef>
#include <memory>

namespace asynctp::tool {

class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  // Throws std::bad_alloc when the memory is not there.
  explicit AlignedBuffer(std::size_t bytes);

  void* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, Free> data_;
  std::size_t bytes_ = 0;
};

}  // namespace asynctp::tool
