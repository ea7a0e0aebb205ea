#include "gpu/rank_resources.hpp"

#include <cstdint>

#include "gpu/call_spec.hpp"
#include "gpu/check.hpp"

namespace asynctp::gpu {

RankResources::RankResources(int world_size)
    : copy_in("stream create (copy in)"),
      compute("stream create (GEMM)"),
      lane2("stream create (GEMM lane 2)"),
      copy_out("stream create (copy out)"),
      fork("event create"),
      copy_out_done("event create"),
      copy_in_done("event create"),
      compute_done("event create"),
      lane2_done("event create"),
      call_done("event create"),
      call_begin("event create", /*timed=*/true),
      call_end("event create", /*timed=*/true),
      reduced("event create") {
  for (int c = 0; c < world_size; ++c) {
    arrived.push_back(std::make_unique<Event>("event create"));
    computed.push_back(std::make_unique<Event>("event create"));
  }
  const int pieces = world_size * kMaxSignalPieces;
  for (int p = 0; p < pieces; ++p) staged.push_back(std::make_unique<Event>("event create"));
  flags.ensure(static_cast<std::size_t>(pieces) * sizeof(std::uint32_t),
               "device allocation (flags)");
  check(rt::device_memset(flags.get(), 0, flags.size()), "device memset (flags)");
  tile_counters.ensure(static_cast<std::size_t>(pieces) * sizeof(std::uint32_t),
                       "device allocation (tile counters)");
  check(rt::device_memset(tile_counters.get(), 0, tile_counters.size()),
        "device memset (tile counters)");
  error_words.ensure(3 * sizeof(std::uint32_t), "device allocation (error words)");
  check(rt::device_memset(error_words.get(), 0, error_words.size()), "device memset (error words)");
}

void RankResources::wait_previous_call(rt::StreamHandle stream, bool capturing) {
  if (!capturing && call_end_recorded) {
    wait(stream, call_end.get(), "stream wait (this rank's previous call)");
  }
}

void RankResources::record_call_begin(rt::StreamHandle stream, bool capturing) {
  if (capturing) return;
  record(call_begin.get(), stream, "event record (call begin)");
  for (int slot : armed_slots) {
    TimedSpan& span = *timed[static_cast<std::size_t>(slot)];
    span.recorded = false;
    record(span.begin.get(), stream, "event record (timed call begin)");
  }
}

void RankResources::record_call_end(rt::StreamHandle stream, bool capturing) {
  if (capturing) return;
  record(call_end.get(), stream, "event record (call end)");
  call_end_recorded = true;
  for (int slot : armed_slots) {
    TimedSpan& span = *timed[static_cast<std::size_t>(slot)];
    record(span.end.get(), stream, "event record (timed call end)");
    span.recorded = true;
  }
  armed_slots.clear();
}

void RankResources::arm_timed_span(int slot) {
  while (static_cast<int>(timed.size()) <= slot) timed.push_back(std::make_unique<TimedSpan>());
  timed[static_cast<std::size_t>(slot)]->recorded = false;
  armed_slots.push_back(slot);
}

}  // namespace asynctp::gpu
