// Why the persistent native grid can never wait on work that needs what it
// holds (DESIGN.md, Deadlock rules):
// - It waits only on chunk flags, written by stream memory operations after
//   copies to or from pinned host memory (copy engines) or after waits on
//   host words the arrival clock's thread sets: on CUDA none of them needs an
//   SM (on HIP some may run as small kernels: there the grid leaves compute
//   units free, src/hip/deadlock_rules.hpp). Every device-to-device copy the
//   grid reads (the local chunk, unless the kernel reads it from the shard;
//   the arrival model's placement) is enqueued on the caller's stream ahead of
//   the kernel, so it has finished before the grid starts. The local chunk's
//   copy for the caller's gathered output, when the kernel reads the shard,
//   runs beside the grid: nothing waits on it, so it may wait for SMs.
// - The ranks' agreement (a host barrier) happens before anything is enqueued.
// - Hardware queues: the producer is enqueued before the kernel, and the
//   ranks of a loopback group enqueue one after another, so in any FIFO queue
//   the work a wait depends on is always ahead of the wait. (With fewer
//   queues than streams, e.g. CUDA_DEVICE_MAX_CONNECTIONS=1 or a small
//   GPU_MAX_HW_QUEUES, that keeps the
//   call correct; overlap needs the GEMM and producer in different queues,
//   see RankResources.)
// - The kernel's own waits are bounded (timeout -> error words), so even a
//   producer that never comes (a dropped chunk) ends the call.
#include "gpu/enqueue_call.hpp"

#include <string>
#include <vector>

#include "core/schedule.hpp"
#include "gpu/check.hpp"
#include "gpu/copy.hpp"
#include "gpu/link.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::gpu {

void enqueue_call(const CallSpec& call, RankResources& res, RankBackend& backend) {
  const rt::StreamHandle s = call.stream;
  const int world = call.problem.world_size;
  const int rank = call.problem.rank;
  const std::size_t bytes = call.chunk_bytes();
  DeviceTrace& trace = res.trace;

  // A call on another stream must not start while the previous one runs.
  res.wait_previous_call(s, call.capturing);
  trace.begin_call(s);
  // The arrival model's set-up stands in for the transfer its release times
  // model, so it runs before the call's own work begins (call_begin): one
  // rank's call is then timed as on a GPU of its own, where copy engines
  // would move the chunks while the GEMM runs.
  if (call.link == Link::arrival) {
    trace.span(s, core::DeviceLane::stream, {"model", "arrival model: place the peer chunks"},
               [&] { prepare_arrival_link(call, res, s); });
  }
  res.record_call_begin(s, call.capturing);

  // The native kernel is the flags' one reader. They go back to 0 in stream
  // order before it runs where a flag could hold this call's epoch already
  // (a captured call: its graph replays the epoch it captured;
  // core::FlagResetRule). Memsets rather than a memory operation per flag
  // (~2 us of device time each, bench/NOTES.md v6, v8); they run ahead of
  // the GEMM like every other kernel-class work of the call. The local
  // chunk's flags are set here too, before its copy, for a kernel that reads
  // the copy (ordered after it by the compute stream's wait below); one that
  // reads the shard passes no gate for it.
  const int pieces = call.pieces;
  const bool reset = res.flag_reset.reset_before(call.epoch, call.capturing);
  if (call.plan.algorithm == Algorithm::native) {
    if (reset) {
      check(rt::memset_async(res.flags.get(), 0,
                             sizeof(std::uint32_t) * static_cast<std::size_t>(world * pieces), s),
            "memset (flags)");
    }
    if (!call.local_chunk_in_place) {
      memset_d32(s, res.flag(rank * pieces), call.epoch, static_cast<std::size_t>(pieces));
    }
  }

  // The producer starts with the call: the link reads the shards, not the
  // gathered A. The local chunk needs no link; its copy into the gathered A
  // runs ahead of a GEMM that reads it there, and beside GEMMs that read the
  // shard (local_chunk_in_place), only when the caller wants the gathered A.
  record(res.fork.get(), s, "event record (fork)");
  wait(res.copy_out.get(), res.fork.get(), "stream wait (fork)");
  wait(res.copy_in.get(), res.fork.get(), "stream wait (fork)");
  if (!call.local_chunk_in_place || call.gathered_is_output) {
    trace.span(s, core::DeviceLane::stream, {"copy", "copy local chunk", rank}, [&] {
      copy_rows(call.gathered_chunk(rank), call.shards[static_cast<std::size_t>(rank)], bytes,
                call.row_bytes(), rt::Copy::device_to_device, s, "copy (local shard to gathered)");
    });
  }
  if (!call.local_chunk_in_place) record(res.fork.get(), s, "event record (local chunk copied)");
  wait(res.compute.get(), res.fork.get(), "stream wait (fork)");

  // Producer first (see the top of this file), then the GEMM.
  if (call.link == Link::pcie) {
    enqueue_pcie_link(call, res);
  } else {
    enqueue_arrival_waits(call, res);
  }
  record(res.copy_out_done.get(), res.copy_out.get(), "event record (copy out done)");
  record(res.copy_in_done.get(), res.copy_in.get(), "event record (copy in done)");

  enqueue_gemm(call, res, backend);

  record(res.compute_done.get(), res.compute.get(), "event record (compute done)");
  wait(s, res.copy_out_done.get(), "stream wait (copy out done)");
  wait(s, res.copy_in_done.get(), "stream wait (copy in done)");
  wait(s, res.compute_done.get(), "stream wait (compute done)");
  trace.end_call(s, "all-gather + matmul");
  res.record_call_end(s, call.capturing);
}

// The consumer half: the GEMM paths of enqueue_gemm (enqueue_call.hpp).
namespace {

void* c_rows(const CallSpec& call, int chunk) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(call.problem.n) * element_size(call.problem.dtype);
  return static_cast<char*>(call.c_out.data) +
         row_bytes * static_cast<std::size_t>(call.problem.m) * static_cast<std::size_t>(chunk);
}

void enqueue_pipelined(const CallSpec& call, RankResources& res, RankBackend& backend) {
  LibraryGemm* lanes[2] = {&library_lane(backend, 0, "pipelined"),
                           &library_lane(backend, 1, "pipelined")};
  const rt::StreamHandle streams[2] = {res.compute.get(), res.lane2.get()};
  const int world = call.problem.world_size;
  // Forked here only: a captured stream that is forked must be joined back.
  wait(res.lane2.get(), res.fork.get(), "stream wait (fork)");
  for (int i = 0; i < world; ++i) {
    const int c = (call.problem.rank + i) % world;
    const int lane = i % 2;
    if (c != call.problem.rank) {
      wait(streams[lane], res.arrived[static_cast<std::size_t>(c)]->get(),
           "stream wait (chunk arrived)");
    }
    res.trace.span(streams[lane], lane == 0 ? core::DeviceLane::compute : core::DeviceLane::lane2,
                   {"gemm", "GEMM chunk", c}, [&] {
                     lanes[lane]->run(streams[lane], call.gemm_rows(c), call.problem.m, call.b,
                                      c_rows(call, c));
                   });
  }
  check(rt::event_record(res.lane2_done.get(), res.lane2.get()), "event record (lane 2 done)");
  wait(res.compute.get(), res.lane2_done.get(), "stream wait (lane 2 done)");
}

// Native; with a library tail (NativeTail::library) the kernel leaves the
// last chunk in schedule order (core::chunk_order's, the one before this
// rank's) to a library GEMM on the second lane, which waits for that chunk's
// arrival and takes SMs as the grid's CTAs run out of tiles. The kernel is
// enqueued first: were both streams in one hardware queue, the GEMM's wait
// would then sit behind the kernel, not hold it back.
void enqueue_native(const CallSpec& call, RankResources& res, RankBackend& backend) {
  // Traced: the chunks a library tail takes are never stamped, so they have
  // no tile span (core::write_device_timeline leaves them out).
  res.trace.kernel(res.compute.get(), call.native_kernel, call.problem.world_size, call.pieces,
                   res.trace.on() ? core::chunk_order(call.problem.world_size, call.problem.rank)
                                  : std::vector<int>{},
                   [&] { backend.launch_native(call, res, res.flag(0)); });
  if (call.plan.native_tail != NativeTail::library) return;
  const int world = call.problem.world_size;
  const int last = (call.problem.rank + world - 1) % world;
  LibraryGemm& gemm = library_lane(backend, 1, "native's library tail");
  wait(res.lane2.get(), res.fork.get(), "stream wait (fork)");
  wait(res.lane2.get(), res.arrived[static_cast<std::size_t>(last)]->get(),
       "stream wait (chunk arrived)");
  res.trace.span(res.lane2.get(), core::DeviceLane::lane2, {"gemm", "tail GEMM chunk", last}, [&] {
    gemm.run(res.lane2.get(), call.gemm_rows(last), call.problem.m, call.b, c_rows(call, last));
  });
  check(rt::event_record(res.lane2_done.get(), res.lane2.get()), "event record (lane 2 done)");
  wait(res.compute.get(), res.lane2_done.get(), "stream wait (lane 2 done)");
}

void enqueue_decomposed(const CallSpec& call, RankResources& res, RankBackend& backend) {
  LibraryGemm& gemm = library_lane(backend, 0, "decomposed");
  const rt::StreamHandle s = res.compute.get();
  for (int c : call.arrival_order) {
    wait(s, res.arrived[static_cast<std::size_t>(c)]->get(), "stream wait (chunk arrived)");
  }
  res.trace.span(s, core::DeviceLane::compute, {"gemm", "GEMM of the gathered A"}, [&] {
    gemm.run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
  });
}

}  // namespace

void enqueue_gemm(const CallSpec& call, RankResources& res, RankBackend& backend) {
  switch (call.plan.algorithm) {
    case Algorithm::native:
      enqueue_native(call, res, backend);
      return;
    case Algorithm::pipelined:
      enqueue_pipelined(call, res, backend);
      return;
    case Algorithm::decomposed:
    case Algorithm::automatic:  // the plan never leaves auto
      enqueue_decomposed(call, res, backend);
      return;
  }
}

}  // namespace asynctp::gpu
