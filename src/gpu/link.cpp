#include "gpu/link.hpp"

#include <memory>
#include <vector>

#include "gpu/check.hpp"
#include "gpu/copy.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::gpu {

void prepare_link(Link link, int world_size, std::size_t bytes, RankResources& res) {
  if (link == Link::pcie) {
    res.bounce.ensure(bytes, "pinned host allocation (PCIe link bounce buffer)");
  } else if (!res.clock) {
    res.clock = std::make_unique<ArrivalClock>(world_size * kMaxSignalPieces);
  }
}

bool link_ready(Link link, std::size_t bytes, const RankResources& res) {
  return link == Link::pcie ? res.bounce.size() >= bytes : res.clock != nullptr;
}

void enqueue_pcie_link(const CallSpec& call, RankResources& res) {
  const std::size_t bytes = call.piece_bytes();
  prepare_link(Link::pcie, call.problem.world_size, gathered_bytes(call.problem), res);
  char* bounce = static_cast<char*>(res.bounce.get());
  DeviceTrace& trace = res.trace;
  for (int c : call.arrival_order) {
    if (call.dropped[static_cast<std::size_t>(c)]) continue;
    for (int j = 0; j < call.pieces; ++j) {
      const int piece = c * call.pieces + j;
      const std::size_t offset = bytes * static_cast<std::size_t>(j);
      char* slot = bounce + bytes * static_cast<std::size_t>(piece);
      const rt::EventHandle staged = res.staged[static_cast<std::size_t>(piece)]->get();
      const int piece_named = call.pieces > 1 ? j : -1;
      trace.span(res.copy_out.get(), core::DeviceLane::copy_out,
                 {"copy", "to pinned host: chunk", c, piece_named}, [&] {
                   copy_rows(slot,
                             static_cast<const char*>(call.shards[static_cast<std::size_t>(c)]) +
                                 offset,
                             bytes, call.row_bytes(), rt::Copy::device_to_host, res.copy_out.get(),
                             "copy (peer shard piece to pinned host)");
                 });
      check(rt::event_record(staged, res.copy_out.get()), "event record (staged)");
      check(rt::stream_wait_event(res.copy_in.get(), staged), "stream wait (staged)");
      trace.span(res.copy_in.get(), core::DeviceLane::copy_in,
                 {"copy", "to gathered: chunk", c, piece_named}, [&] {
                   copy_rows(static_cast<char*>(call.gathered_chunk(c)) + offset, slot, bytes,
                             call.row_bytes(), rt::Copy::host_to_device, res.copy_in.get(),
                             "copy (pinned host to gathered piece)");
                 });
      write_value32(res.copy_in.get(), res.flag(piece), call.epoch);
      trace.instant(res.copy_in.get(), core::DeviceLane::copy_in,
                    {"signal", "signal chunk", c, piece_named});
    }
    check(rt::event_record(res.arrived[static_cast<std::size_t>(c)]->get(), res.copy_in.get()),
          "event record (arrived)");
  }
}

void prepare_arrival_link(const CallSpec& call, RankResources& res, rt::StreamHandle stream) {
  const std::size_t bytes = call.chunk_bytes();
  for (int c : call.arrival_order) {
    if (call.dropped[static_cast<std::size_t>(c)]) continue;
    copy_rows(call.gathered_chunk(c), call.shards[static_cast<std::size_t>(c)], bytes,
              call.row_bytes(), rt::Copy::device_to_device, stream,
              "copy (arrival model: place peer chunk)");
  }
  prepare_link(Link::arrival, call.problem.world_size, 0, res);
  // Dropped chunks are never released (nothing waits for them).
  std::vector<int> pieces;
  for (int c : call.arrival_order) {
    if (call.dropped[static_cast<std::size_t>(c)]) continue;
    for (int j = 0; j < call.pieces; ++j) pieces.push_back(c * call.pieces + j);
  }
  const double seconds_per_piece = static_cast<double>(call.piece_bytes()) / (call.link_gbps * 1e9);
  res.clock->schedule(call.epoch, pieces, seconds_per_piece, call.capturing);

  // A captured graph replays the same epoch: clear the release words first.
  // Memory operations, not a memset: these words are host memory, which a
  // captured memset node may not target.
  for (int piece : pieces) write_value32(stream, res.clock->release_word(piece), 0);
}

void enqueue_arrival_waits(const CallSpec& call, RankResources& res) {
  const rt::StreamHandle s = res.copy_in.get();
  // The modelled transfer starts with the producer, off the GEMM's path.
  write_value32(s, res.clock->start_word(), call.epoch);
  for (int c : call.arrival_order) {
    if (call.dropped[static_cast<std::size_t>(c)]) continue;
    for (int j = 0; j < call.pieces; ++j) {
      const int piece = c * call.pieces + j;
      const int piece_named = call.pieces > 1 ? j : -1;
      res.trace.span(s, core::DeviceLane::copy_in,
                     {"wait", "modelled arrival: chunk", c, piece_named},
                     [&] { wait_value32_equal(s, res.clock->release_word(piece), call.epoch); });
      write_value32(s, res.flag(piece), call.epoch);
      res.trace.instant(s, core::DeviceLane::copy_in, {"signal", "signal chunk", c, piece_named});
    }
    check(rt::event_record(res.arrived[static_cast<std::size_t>(c)]->get(), s),
          "event record (arrived)");
  }
}

}  // namespace asynctp::gpu
