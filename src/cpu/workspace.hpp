// Memory a CPU rank keeps between calls (the gathered A, the partial
// product, the reduce-scatter's receive slots): it grows to the largest call
// seen and is never shrunk, so calls of one shape allocate nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace asynctp::cpu {

class Workspace {
 public:
  // At least `bytes` of cache-line aligned memory; logs (ASYNCTP_DEBUG=INFO)
  // when it grows. Growing moves the memory: callers must know that nobody
  // else holds the old address. Throws std::bad_alloc.
  void* ensure(std::size_t bytes, int rank, const char* what);

 private:
  struct alignas(64) CacheLine {
    unsigned char bytes[64];
  };
  std::vector<CacheLine> storage_;
};

}  // namespace asynctp::cpu
