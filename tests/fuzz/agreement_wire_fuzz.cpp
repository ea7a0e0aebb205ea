// The agreement records a peer process sends (through NCCL's all-gather or
// a shared-memory slot; src/core/agreement_wire): any 512-byte block must decode to a record
// or an asynctp::Error, re-encode to the same record, and a set of decoded
// records must reach a verdict (core::find_disagreement) without a crash or
// an overflow, whatever numbers they carry. The input is cut into up to
// eight blocks (the last one zero-padded).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "asynctp/error.hpp"
#include "core/agreement.hpp"
#include "core/agreement_wire.hpp"

using asynctp::core::kWireRecordBytes;
using asynctp::core::WireRecord;

namespace {

bool same(const asynctp::core::CallRecord& x, const asynctp::core::CallRecord& y) {
  return x.ok == y.ok && x.error == y.error && x.world_size == y.world_size &&
         x.problem.rank == y.problem.rank && x.problem.m == y.problem.m &&
         x.problem.n == y.problem.n && x.problem.k == y.problem.k &&
         x.problem.dtype == y.problem.dtype && x.problem.b_layout == y.problem.b_layout &&
         x.problem.gathered_out == y.problem.gathered_out && x.problem.op == y.problem.op &&
         x.plan.algorithm == y.plan.algorithm && x.plan.tile_m == y.plan.tile_m &&
         x.plan.tile_n == y.plan.tile_n && x.grows_workspace == y.grows_workspace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<asynctp::core::CallRecord> records;
  for (std::size_t offset = 0; offset < size && records.size() < 8; offset += kWireRecordBytes) {
    WireRecord wire{};
    std::memcpy(wire.data(), data + offset, std::min(kWireRecordBytes, size - offset));
    try {
      records.push_back(asynctp::core::decode(wire));
    } catch (const asynctp::Error& e) {
      if (e.code() != asynctp::ErrorCode::backend) std::abort();
      return 0;
    }
    // An error text that fills its field ends in "..." once re-encoded.
    if (records.back().error.size() < 255 &&
        !same(asynctp::core::decode(asynctp::core::encode(records.back())), records.back())) {
      std::abort();
    }
  }
  if (!records.empty()) (void)asynctp::core::find_disagreement(records);
  return 0;
}
