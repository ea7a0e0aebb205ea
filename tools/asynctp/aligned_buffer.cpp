#include "aligned_buffer.hpp"

#include <cstdlib>
#include <new>

namespace asynctp::tool {

AlignedBuffer::AlignedBuffer(std::size_t bytes) : bytes_(bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(p);
}

void AlignedBuffer::Free::operator()(void* p) const noexcept { std::free(p); }

}  // namespace asynctp::tool
