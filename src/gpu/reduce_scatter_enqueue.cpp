#include "gpu/reduce_scatter_enqueue.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/schedule.hpp"
#include "gpu/check.hpp"
#include "gpu/copy.hpp"
#include "gpu/link.hpp"
#include "gpu/partial_kernels.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::gpu {
namespace {

rt::EventHandle computed(const RankResources& res, int chunk) {
  return res.computed[static_cast<std::size_t>(chunk)]->get();
}

bool native(const ReduceScatterSpec& call) { return call.plan.algorithm == Algorithm::native; }

// Piece j of chunk c of this rank's partial is computed once
// computed_flags(res)[c * pieces + j] holds the call's epoch: the native
// grid releases it as the piece's last tile is stored; after a library GEMM
// (one piece a chunk) a stream write sets it where the arrival link's model
// reads it.
std::uint32_t* computed_flags(RankResources& res) {
  return static_cast<std::uint32_t*>(res.flags.get());
}

// Chunk c of this rank's partial is computed on `stream` (a library GEMM
// enqueued there): its event, and on the arrival link its flag.
void mark_computed(const ReduceScatterSpec& call, RankResources& res, rt::StreamHandle stream,
                   int chunk) {
  record(computed(res, chunk), stream, "event record (partial chunk computed)");
  if (call.link == Link::arrival) write_value32(stream, computed_flags(res) + chunk, call.epoch);
}

// `stream`'s later work starts once chunk c of this rank's partial is
// computed: every piece's flag of the native GEMM, or the library GEMM's
// event.
void wait_computed(const ReduceScatterSpec& call, RankResources& res, rt::StreamHandle stream,
                   int chunk) {
  if (native(call)) {
    for (int j = 0; j < call.pieces; ++j) {
      wait_native_chunk(res, stream, chunk * call.pieces + j, call.epoch);
    }
  } else {
    wait(stream, computed(res, chunk), "stream wait (partial chunk computed)");
  }
}

// Untimed: what the peers would have shipped into this rank's slots, each
// computed here from the peer's own A rows and B (the arrival model).
void place_peer_partials(const ReduceScatterSpec& call, RankBackend& backend) {
  const int world = call.problem.world_size;
  const int rank = call.problem.rank;
  LibraryGemm& gemm = library_lane(backend, 0, "reduce-scatter arrival model");
  for (int slot = 0; slot + 1 < world; ++slot) {
    const int source = core::partial_source(world, rank, slot);
    const TensorView& a = call.all_a[static_cast<std::size_t>(source)];
    gemm.run(call.stream, ReduceScatterSpec::a_rows(a, rank * call.problem.m), call.problem.m,
             call.all_b[static_cast<std::size_t>(source)],
             ReduceScatterSpec::slot_of(call.mine, slot, call.chunk_bytes()));
  }
}

void enqueue_gemms(const ReduceScatterSpec& call, RankResources& res, RankBackend& backend) {
  const int world = call.problem.world_size;
  const std::int64_t m = call.problem.m;
  if (native(call)) {
    // The arrival model's delays are small kernels on copy_in, behind the
    // chunk flags: the grid leaves them an SM (bench/NOTES.md states the
    // cost). Shipping over PCIe (real or self-shipped) needs none.
    const int sms_left_free = call.modelled && call.link == Link::arrival ? 1 : 0;
    enqueue_native_partial({call.problem, call.native_kernel, call.a, call.b, call.partial,
                            call.epoch, sms_left_free, nullptr, nullptr, call.pieces},
                           res, backend);
    return;
  }
  if (call.plan.algorithm == Algorithm::pipelined) {
    LibraryGemm* lanes[2] = {&library_lane(backend, 0, "pipelined"),
                             &library_lane(backend, 1, "pipelined")};
    const rt::StreamHandle streams[2] = {res.compute.get(), res.lane2.get()};
    const std::vector<int> order = core::send_order(world, call.problem.rank);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int c = order[i];
      const int lane = static_cast<int>(i % 2);
      res.trace.span(streams[lane], lane == 0 ? core::DeviceLane::compute : core::DeviceLane::lane2,
                     {"gemm", "GEMM chunk", c}, [&] {
                       lanes[lane]->run(streams[lane], ReduceScatterSpec::a_rows(call.a, c * m), m,
                                        call.b, call.partial_chunk(c));
                     });
      mark_computed(call, res, streams[lane], c);
    }
    return;
  }
  LibraryGemm& gemm = library_lane(backend, 0, "decomposed");
  res.trace.span(res.compute.get(), core::DeviceLane::compute, {"gemm", "GEMM of the partial"},
                 [&] {
                   gemm.run(res.compute.get(), call.a.data, call.problem.gathered_rows(), call.b,
                            call.partial);
                 });
  for (int c = 0; c < world; ++c) mark_computed(call, res, res.compute.get(), c);
}

// PCIe shipping, step by step: once this rank's chunk of step i is computed,
// copy_out moves a partial chunk to the pinned bounce, copy_in moves it on
// into a slot i and sets that slot's flag.
// - real: this rank's partial of the owner's chunk into the owner's slot i;
// - self-shipped (the serialized model): the peer partial already placed in
//   this rank's own slot i, out to the bounce and back. The same bytes cross
//   the same copy engines at the time the peer's shipment of step i would
//   (by the ring's symmetry it computes that chunk at step i too), so the
//   timed span pays what real shipping costs this rank.
void ship_over_pcie(const ReduceScatterSpec& call, RankResources& res) {
  const int world = call.problem.world_size;
  const std::size_t bytes = call.chunk_bytes();
  prepare_link(Link::pcie, world, partial_bytes(call.problem), res);
  char* bounce = static_cast<char*>(res.bounce.get());
  const std::vector<int> order = core::send_order(world, call.problem.rank);
  for (int step = 0; step + 1 < world; ++step) {
    const int owner = order[static_cast<std::size_t>(step)];
    const ReceiveSide& side =
        call.self_shipped() ? call.mine : call.owners[static_cast<std::size_t>(owner)];
    char* slot = ReduceScatterSpec::slot_of(side, step, bytes);
    const char* source = call.self_shipped() ? slot : call.partial_chunk(owner);
    char* staged_at = bounce + bytes * static_cast<std::size_t>(step);
    const rt::EventHandle staged = res.staged[static_cast<std::size_t>(step)]->get();
    wait_computed(call, res, res.copy_out.get(), owner);
    res.trace.span(res.copy_out.get(), core::DeviceLane::copy_out,
                   {"copy", "to pinned host: partial", owner}, [&] {
                     copy_rows(staged_at, source, bytes, call.row_bytes(), rt::Copy::device_to_host,
                               res.copy_out.get(), "copy (partial chunk to pinned host)");
                   });
    record(staged, res.copy_out.get(), "event record (staged)");
    wait(res.copy_in.get(), staged, "stream wait (staged)");
    // The owner's slot is free once its previous reduction has read it (a
    // self-shipped slot is this rank's, behind its previous call already).
    if (!call.self_shipped()) {
      if (const rt::EventHandle freed = call.owner_reduced[static_cast<std::size_t>(owner)]) {
        wait(res.copy_in.get(), freed, "stream wait (owner's previous reduction)");
      }
    }
    res.trace.span(res.copy_in.get(), core::DeviceLane::copy_in,
                   {"copy", "to owner's slot: partial", owner}, [&] {
                     copy_rows(slot, staged_at, bytes, call.row_bytes(), rt::Copy::host_to_device,
                               res.copy_in.get(), "copy (pinned host to owner's slot)");
                   });
    write_value32(res.copy_in.get(), side.flags + step, call.epoch);
    res.trace.instant(res.copy_in.get(), core::DeviceLane::copy_in,
                      {"signal", "signal partial", owner});
  }
}

// The model (LinkModelArgs): piece j of slot i is carried one piece's
// transfer time after this rank's own piece j of step i is computed, on a
// link that carries one piece at a time, and slot i is released with its
// last piece. By the ring's symmetry that is when the peer's partial of
// step i would land. The model starts once the first piece is computed, so
// that it holds no SM while a library GEMM could use it.
void model_arrivals(const ReduceScatterSpec& call, RankResources& res) {
  const int world = call.problem.world_size;
  if (world < 2) return;
  const rt::StreamHandle s = res.copy_in.get();
  const std::vector<int> order = core::send_order(world, call.problem.rank);
  LinkModelArgs args;
  args.computed = computed_flags(res);
  args.steps = world - 1;
  for (int step = 0; step < args.steps; ++step) {
    args.owners[step] = order[static_cast<std::size_t>(step)];
  }
  args.pieces = call.pieces;
  args.slot_flags = call.mine.flags;
  args.epoch = call.epoch;
  args.transfer_ns =
      static_cast<std::uint64_t>(static_cast<double>(call.chunk_bytes()) / call.link_gbps /
                                 call.pieces);  // bytes / (GB/s) = ns, a piece
  args.timeout_ns = static_cast<std::uint64_t>(call.timeout_ms) * 1'000'000u;
  args.error_words = static_cast<std::uint32_t*>(res.error_words.get());
  // The model starts with the first piece computed.
  if (native(call)) {
    wait_native_chunk(res, s, order.front() * call.pieces, call.epoch);
  } else {
    wait_computed(call, res, s, order.front());
  }
  res.trace.span(s, core::DeviceLane::copy_in, {"model", "modelled link: the peers' partials"},
                 [&] { check(enqueue_link_model(args, s), "launch (arrival link model)"); });
}

}  // namespace

void reset_native_signals(RankResources& res, int flags, rt::StreamHandle stream) {
  check(rt::memset_async(res.flags.get(), 0,
                         sizeof(std::uint32_t) * static_cast<std::size_t>(flags), stream),
        "memset (chunk flags)");
}

void enqueue_native_partial(NativeReduceScatter call, RankResources& res, RankBackend& backend) {
  call.done_flags = computed_flags(res);
  call.done_counters = static_cast<std::uint32_t*>(res.tile_counters.get());
  const int world = call.problem.world_size;
  res.trace.kernel(res.compute.get(), call.kernel, world, call.pieces,
                   res.trace.on() ? core::send_order(world, call.problem.rank) : std::vector<int>{},
                   [&] { backend.launch_native_reduce_scatter(call, res); });
  // The own chunk is the last one the grid computes: the reduction's wait.
  record(computed(res, call.problem.rank), res.compute.get(), "event record (partial computed)");
}

void wait_native_chunk(RankResources& res, rt::StreamHandle stream, int flag, std::uint32_t epoch) {
  wait_value32_equal(stream, computed_flags(res) + flag, epoch);
}

void enqueue_rs_products(const ReduceScatterSpec& call, RankResources& res, RankBackend& backend) {
  const rt::StreamHandle s = call.stream;
  // The workspace and flags are this rank's, shared by its calls.
  res.wait_previous_call(s, call.capturing);
  res.trace.begin_call(s);
  if (call.modelled) {
    res.trace.span(s, core::DeviceLane::stream, {"model", "arrival model: the peers' partials"},
                   [&] { place_peer_partials(call, backend); });
  }
  res.record_call_begin(s, call.capturing);
  // The chunk flags (native's on either link, the arrival model's for every
  // algorithm) and the modelled slot flags are fresh by their epoch, except
  // where a graph replays the one it captured, or once the epochs have
  // wrapped. (Over PCIe the peers' copies set this rank's slot flags, and a
  // capture is refused.)
  const bool stale = res.flag_reset.reset_before(call.epoch, call.capturing);
  if (stale && (native(call) || call.link == Link::arrival)) {
    reset_native_signals(res, call.problem.world_size * call.pieces, s);
  }
  if (stale && call.link == Link::arrival) {
    const auto slots = static_cast<std::size_t>(call.problem.world_size - 1);
    check(rt::memset_async(call.mine.flags, 0, sizeof(std::uint32_t) * slots, s),
          "memset (slot flags)");
  }

  record(res.fork.get(), s, "event record (fork)");
  for (rt::StreamHandle side :
       {res.copy_out.get(), res.copy_in.get(), res.compute.get(), res.lane2.get()}) {
    wait(side, res.fork.get(), "stream wait (fork)");
  }
  enqueue_gemms(call, res, backend);
  if (call.link == Link::arrival) {
    model_arrivals(call, res);
  } else {
    ship_over_pcie(call, res);
  }
}

// The reduction keeps up with the arrivals: where a slot is still on the
// link once slot 0 has landed, one kernel whose blocks add each run of
// landed slots as soon as it lands (enqueue_reduce_as_slots_land), so that
// after the last arrival only the last run is left; where every slot has
// landed by then, the one pass, which streams HBM faster. The wait for slot
// 0 says which (ReduceArgs::all_landed), and both kernels are enqueued, the
// one not chosen returning at once. The reduction starts once every chunk of
// this rank's partial is computed (no GEMM is still to need an SM its
// waiting blocks hold) and slot 0 has landed behind a one-block wait (so
// the arrival model's thread, which released it, is running). Bitwise the
// same result either way.
void enqueue_rs_reduction(const ReduceScatterSpec& call, RankResources& res) {
  const rt::StreamHandle s = call.stream;
  const rt::StreamHandle r = res.compute.get();
  const int world = call.problem.world_size;
  const int rank = call.problem.rank;
  const int slots = world - 1;
  auto* error_words = static_cast<std::uint32_t*>(res.error_words.get());
  SlotFlags land;
  land.flags = call.mine.flags;
  land.epoch = call.epoch;
  land.timeout_ns = static_cast<std::uint64_t>(call.timeout_ms) * 1'000'000u;
  if (native(call)) {
    wait(r, computed(res, rank), "stream wait (partial computed)");
  } else {
    for (int c = 0; c < world; ++c) wait(r, computed(res, c), "stream wait (partial computed)");
  }
  // With one slot, its wait leaves nothing to land.
  auto* all_landed = slots > 1 ? static_cast<std::uint32_t*>(res.reduce_verdict.get()) : nullptr;
  res.trace.span(r, core::DeviceLane::compute, {"wait", "wait for the peers' partials"}, [&] {
    check(enqueue_wait_flags(land, 0, std::min(slots, 1), error_words, r, all_landed, slots),
          "launch (wait for the first partial)");
  });
  ReduceArgs args;
  args.dtype = call.problem.dtype;
  args.rows = call.problem.m;
  args.cols = call.problem.n;
  args.own = call.partial_chunk(rank);
  args.slots = call.mine.slots;
  args.slot_count = slots;
  args.out = call.out.data;
  args.error_words = error_words;
  args.all_landed = all_landed;
  res.trace.span(r, core::DeviceLane::compute, {"reduce", "reduce the partials"}, [&] {
    check(enqueue_reduce_partials(args, r), "launch (reduction of the partials)");
  });
  if (all_landed != nullptr) {
    res.trace.span(r, core::DeviceLane::compute, {"reduce", "reduce the partials as they land"},
                   [&] {
                     check(enqueue_reduce_as_slots_land(
                               args, land, static_cast<float*>(res.reduce_sum.get()), r),
                           "launch (reduction of the partials as they land)");
                   });
  }
  if (!call.capturing) record(res.reduced.get(), r, "event record (reduced)");

  record(res.compute_done.get(), r, "event record (compute done)");
  record(res.lane2_done.get(), res.lane2.get(), "event record (lane 2 done)");
  record(res.copy_out_done.get(), res.copy_out.get(), "event record (copy out done)");
  record(res.copy_in_done.get(), res.copy_in.get(), "event record (copy in done)");
  for (rt::EventHandle done : {res.compute_done.get(), res.lane2_done.get(),
                               res.copy_out_done.get(), res.copy_in_done.get()}) {
    wait(s, done, "stream wait (join)");
  }
  res.trace.end_call(s, "matmul + reduce-scatter");
  res.record_call_end(s, call.capturing);
}

}  // namespace asynctp::gpu
