#include "core/agreement_wire.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "asynctp/error.hpp"
#include "core/validate.hpp"

namespace asynctp::core {
namespace {

constexpr std::int64_t kMagic = 0x61747035;  // "atp5": format version 5
constexpr std::size_t kFields = 26;
constexpr std::size_t kTextOffset = kFields * sizeof(std::int64_t);
constexpr std::size_t kTextBytes = kWireRecordBytes - kTextOffset;

enum Field : std::size_t {
  magic,
  ok,
  world_size,
  rank,
  m,
  n,
  k,
  dtype,
  b_layout,
  gathered_out,
  algorithm,
  tile_m,
  tile_n,
  op,
  grows_workspace,
  runnable,
  tune_step,  // the rank's measured-choice proposal (core/tuning.hpp)
  tune_algorithm,
  tune_count,  // how many of the three times follow
  tune_algorithm0,
  tune_algorithm1,
  tune_algorithm2,
  tune_ns0,  // this rank's best time of that candidate, ns
  tune_ns1,
  tune_ns2,
  tune_group_time,  // how the group combines the ranks' times (GroupTime)
};

// What any record this build sends can hold; a peer's record outside these
// bounds is refused before any of it is used (a broken or hostile peer, or
// another build, must not reach the planner or the verdict with absurd
// numbers).
struct Bound {
  const char* name;
  std::int64_t lo;
  std::int64_t hi;
};
constexpr std::int64_t kMaxDim = core::kMaxElementsPerTensor;  // one dimension of one tensor
constexpr std::int64_t kMaxTunedNs = std::int64_t{1} << 50;    // a call's time: 13 days
constexpr Bound kBounds[kFields] = {
    {"magic", kMagic, kMagic},
    {"ok", 0, 1},
    {"world size", 1, kMaxWireWorldSize},
    {"rank", 0, kMaxWireWorldSize - 1},
    {"m", 0, kMaxDim},
    {"n", 0, kMaxDim},
    {"k", 0, kMaxDim},
    {"dtype", 0, static_cast<std::int64_t>(DType::fp32)},
    {"B layout", 0, static_cast<std::int64_t>(core::Layout::col_major)},
    {"gathered output", 0, 1},
    // A plan names what runs: never auto.
    {"algorithm", static_cast<std::int64_t>(Algorithm::native),
     static_cast<std::int64_t>(Algorithm::decomposed)},
    {"tile M", 0, kMaxDim},
    {"tile N", 0, kMaxDim},
    {"op", 0, static_cast<std::int64_t>(core::OpKind::matmul_reduce_scatter)},
    {"whether the workspace grows", 0, 1},
    {"runnable algorithms", 0, core::kEveryAlgorithmBit},
    {"tuning step", 0, static_cast<std::int64_t>(TuneStep::kept)},
    {"tuned algorithm", 0, static_cast<std::int64_t>(Algorithm::decomposed)},
    {"tuned times", 0, 3},
    {"tuned algorithm 0", 0, static_cast<std::int64_t>(Algorithm::decomposed)},
    {"tuned algorithm 1", 0, static_cast<std::int64_t>(Algorithm::decomposed)},
    {"tuned algorithm 2", 0, static_cast<std::int64_t>(Algorithm::decomposed)},
    {"tuned time 0", 0, kMaxTunedNs},
    {"tuned time 1", 0, kMaxTunedNs},
    {"tuned time 2", 0, kMaxTunedNs},
    {"tuned group time", 0, static_cast<std::int64_t>(GroupTime::mean_over_ranks)},
};

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorCode::backend,
              "agreement: a peer sent a record this build refuses (" + why +
                  "; a broken peer, or another asynctp version on another rank?)");
}

}  // namespace

WireRecord encode(const CallRecord& record) {
  std::int64_t fields[kFields] = {};
  fields[magic] = kMagic;
  fields[ok] = record.ok ? 1 : 0;
  fields[world_size] = record.world_size;
  fields[rank] = record.problem.rank;
  fields[m] = record.problem.m;
  fields[n] = record.problem.n;
  fields[k] = record.problem.k;
  fields[dtype] = static_cast<std::int64_t>(record.problem.dtype);
  fields[b_layout] = static_cast<std::int64_t>(record.problem.b_layout);
  fields[gathered_out] = record.problem.gathered_out ? 1 : 0;
  fields[algorithm] = static_cast<std::int64_t>(record.plan.algorithm);
  fields[tile_m] = record.plan.tile_m;
  fields[tile_n] = record.plan.tile_n;
  fields[op] = static_cast<std::int64_t>(record.problem.op);
  fields[grows_workspace] = record.grows_workspace ? 1 : 0;
  fields[runnable] = record.plan.runnable;
  const TuneProposal& tune = record.tune;
  fields[tune_step] = static_cast<std::int64_t>(tune.step);
  fields[tune_algorithm] = static_cast<std::int64_t>(tune.algorithm);
  fields[tune_group_time] = static_cast<std::int64_t>(tune.group_time);
  const std::size_t times = std::min<std::size_t>(tune.times.size(), 3);
  fields[tune_count] = static_cast<std::int64_t>(times);
  for (std::size_t i = 0; i < times; ++i) {
    fields[tune_algorithm0 + i] = static_cast<std::int64_t>(tune.times[i].algorithm);
    fields[tune_ns0 + i] =
        std::clamp<std::int64_t>(std::llround(tune.times[i].ms * 1e6), 0, kMaxTunedNs);
  }
  WireRecord wire{};
  std::memcpy(wire.data(), fields, sizeof fields);
  std::string text = record.ok ? record.plan.reason : record.error;
  if (text.size() > kTextBytes - 1) text = text.substr(0, kTextBytes - 4) + "...";
  std::memcpy(wire.data() + kTextOffset, text.data(), text.size());
  return wire;
}

CallRecord decode(const WireRecord& wire) {
  std::int64_t fields[kFields];
  std::memcpy(fields, wire.data(), sizeof fields);
  if (fields[magic] != kMagic) refuse("not a record of format version 5");
  for (std::size_t i = 0; i < kFields; ++i) {
    const Bound& b = kBounds[i];
    if (fields[i] < b.lo || fields[i] > b.hi) {
      refuse(std::string(b.name) + " = " + std::to_string(fields[i]) + ", outside [" +
             std::to_string(b.lo) + ", " + std::to_string(b.hi) + "]");
    }
  }
  if (fields[rank] >= fields[world_size]) {
    refuse("rank " + std::to_string(fields[rank]) + " of world size " +
           std::to_string(fields[world_size]));
  }
  if ((fields[runnable] & ~core::kEveryAlgorithmBit) != 0) {
    refuse("runnable algorithms = " + std::to_string(fields[runnable]) +
           ", which names no algorithm");
  }
  // The text ends in its field, and nothing follows it (encode() writes zeros).
  const char* text = reinterpret_cast<const char*>(wire.data() + kTextOffset);
  const std::size_t length = strnlen(text, kTextBytes);
  if (length == kTextBytes)
    refuse("its text does not end within its " + std::to_string(kTextBytes) + " bytes");
  for (std::size_t i = length; i < kTextBytes; ++i) {
    if (text[i] != '\0') refuse("bytes after the end of its text");
  }

  CallRecord record;
  record.ok = fields[ok] != 0;
  record.world_size = static_cast<int>(fields[world_size]);
  record.problem.world_size = record.world_size;
  record.problem.rank = static_cast<int>(fields[rank]);
  record.problem.m = fields[m];
  record.problem.n = fields[n];
  record.problem.k = fields[k];
  record.problem.dtype = static_cast<DType>(fields[dtype]);
  record.problem.b_layout = static_cast<Layout>(fields[b_layout]);
  record.problem.gathered_out = fields[gathered_out] != 0;
  record.plan.algorithm = static_cast<Algorithm>(fields[algorithm]);
  record.plan.tile_m = fields[tile_m];
  record.plan.tile_n = fields[tile_n];
  record.plan.runnable = static_cast<unsigned>(fields[runnable]);
  record.problem.op = static_cast<core::OpKind>(fields[op]);
  record.grows_workspace = fields[grows_workspace] != 0;
  record.tune.step = static_cast<TuneStep>(fields[tune_step]);
  record.tune.algorithm = static_cast<Algorithm>(fields[tune_algorithm]);
  record.tune.group_time = static_cast<GroupTime>(fields[tune_group_time]);
  for (std::int64_t i = 0; i < fields[tune_count]; ++i) {
    record.tune.times.push_back({static_cast<Algorithm>(fields[tune_algorithm0 + i]),
                                 static_cast<double>(fields[tune_ns0 + i]) / 1e6});
  }
  (record.ok ? record.plan.reason : record.error).assign(text, length);
  return record;
}

}  // namespace asynctp::core
