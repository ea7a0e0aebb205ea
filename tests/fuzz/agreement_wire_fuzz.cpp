// The agreement records a peer process sends (through NCCL's all-gather or
// a shared-memory slot; src/core/agreement_wire): any 512-byte block must
// decode to a record within the decoder's bounds or an asynctp::Error,
// re-encode to the same record, and a set of decoded records must reach a
// verdict (core::find_disagreement) and, where they agree, the same agreed
// plan on every rank (core::agreed_plan: an algorithm every rank said it can
// run), without a crash or an overflow, whatever numbers they carry. The
// input is cut into up to eight blocks (the last one zero-padded).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "core/agreement.hpp"
#include "core/agreement_wire.hpp"
#include "core/validate.hpp"

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
         x.plan.tile_n == y.plan.tile_n && x.plan.runnable == y.plan.runnable &&
         x.plan.reason == y.plan.reason && x.grows_workspace == y.grows_workspace &&
         x.tune.step == y.tune.step && x.tune.algorithm == y.tune.algorithm &&
         x.tune.times.size() == y.tune.times.size() && x.tune.group_time == y.tune.group_time;
}

// What the decoder promises of every record it returns.
bool within_bounds(const asynctp::core::CallRecord& r) {
  const std::int64_t max_dim = asynctp::core::kMaxElementsPerTensor;
  return r.world_size >= 1 && r.world_size <= asynctp::core::kMaxWireWorldSize &&
         r.problem.rank >= 0 && r.problem.rank < r.world_size && r.problem.m >= 0 &&
         r.problem.m <= max_dim && r.problem.n >= 0 && r.problem.n <= max_dim && r.problem.k >= 0 &&
         r.problem.k <= max_dim && r.plan.tile_m >= 0 && r.plan.tile_m <= max_dim &&
         r.plan.tile_n >= 0 && r.plan.tile_n <= max_dim &&
         r.plan.algorithm != asynctp::Algorithm::automatic &&
         (r.plan.runnable & ~asynctp::core::kEveryAlgorithmBit) == 0;
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
    if (!within_bounds(records.back())) std::abort();
    // A text that fills its field ends in "..." once re-encoded.
    const std::string& text = records.back().ok ? records.back().plan.reason : records.back().error;
    if (text.size() < 255 &&
        !same(asynctp::core::decode(asynctp::core::encode(records.back())), records.back())) {
      std::abort();
    }
  }
  if (records.empty() || !asynctp::core::find_disagreement(records).empty()) return 0;
  // Agreed: every rank runs one algorithm, one each rank can run (or its own).
  const asynctp::core::Plan first = asynctp::core::agreed_plan(records, 0);
  for (std::size_t r = 0; r < records.size(); ++r) {
    const asynctp::core::Plan plan = asynctp::core::agreed_plan(records, static_cast<int>(r));
    if (plan.algorithm != first.algorithm) std::abort();
    const bool own = plan.algorithm == records[r].plan.algorithm;
    if (!own && !(records[r].plan.runnable & asynctp::core::algorithm_bit(plan.algorithm))) {
      std::abort();
    }
  }
  return 0;
}
