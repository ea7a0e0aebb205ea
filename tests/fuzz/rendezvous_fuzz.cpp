// Whatever connects to rank 0's rendezvous port, and whatever answers a
// peer there, sends these bytes: decoding them must end in a value or an
// asynctp::Error, never a crash, an overflow or an allocation beyond
// kMaxRecordBytes per record (scripts/fuzz runs this with -malloc_limit_mb).
// The first byte picks the reader (rank 0's hello, a peer's verdict) and,
// for the verdict, the peer's own world size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "asynctp/error.hpp"
#include "bootstrap/rendezvous_wire.hpp"

using namespace asynctp::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  BufferSource source(data + 1, size - 1);
  try {
    if (mode & 1) {
      const int world = 1 + (mode >> 1) % 16;
      const auto records = read_verdict(source, world, "fuzz");
      if (records.size() != static_cast<std::size_t>(world)) std::abort();
      for (const auto& r : records) {
        if (r.size() > kMaxRecordBytes) std::abort();
      }
    } else {
      const Hello h = read_hello(source);
      if (h.record.size() > kMaxRecordBytes) std::abort();
      if (h.kind != Hello::Kind::rank && !h.record.empty()) std::abort();
    }
  } catch (const asynctp::Error&) {
  }
  return 0;
}
