// Why the persistent native grid can never wait on work that needs what it
// holds (issue 3, section 6):
// - It waits only on chunk flags, written by stream memory operations after
//   copies to or from pinned host memory (copy engines) or after waits on
//   host words the arrival clock sets: none of them needs an SM. Every device-to-device copy (the
//   local chunk; the arrival model's placement) is enqueued on the caller's stream ahead of the
//   kernel, so it has finished before the grid starts.
// - The ranks' agreement (a host barrier) happens before anything is enqueued.
// - Hardware queues: the producer is enqueued before the kernel, and the
//   ranks of a loopback group enqueue one after another, so in any FIFO queue
//   the work a wait depends on is always ahead of the wait. (With fewer
//   queues than streams, e.g. CUDA_DEVICE_MAX_CONNECTIONS=1, that keeps the
//   call correct; overlap needs the GEMM and producer in different queues,
//   see RankResources.)
// - The kernel's own waits are bounded (timeout -> error words), so even a
//   producer that never comes (a dropped chunk) ends the call.
#include "cuda/enqueue_call.hpp"

#include <string>

#include "asynctp/error.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/link.hpp"
#include "cuda/stream_memops.hpp"

namespace asynctp::cuda {
namespace {

std::uint32_t* flag(const RankResources& res, int c) {
  return static_cast<std::uint32_t*>(res.flags.get()) + c;
}

void wait(cudaStream_t stream, cudaEvent_t event, const char* what) {
  check_cuda(cudaStreamWaitEvent(stream, event, 0), what);
}

void record(cudaEvent_t event, cudaStream_t stream, const char* what) {
  check_cuda(cudaEventRecord(event, stream), what);
}

void* c_rows(const CallSpec& call, int chunk) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(call.problem.n) * element_size(call.problem.dtype);
  return static_cast<char*>(call.c_out.data) +
         row_bytes * static_cast<std::size_t>(call.problem.m) * static_cast<std::size_t>(chunk);
}

void launch_native(const CallSpec& call, RankResources& res) {
  native::NativeGemmArgs args;
  args.a = call.gathered;
  args.b = call.b.data;
  args.b_col_major = call.problem.b_layout == core::Layout::col_major;
  args.c = call.c_out.data;
  // The kernel's chunks are the signal pieces: same rows, same order (the
  // pivot chunk's first piece first), finer flags.
  args.m_per_chunk = call.problem.m / call.pieces;
  args.n = call.problem.n;
  args.k = call.problem.k;
  args.world_size = call.problem.world_size * call.pieces;
  args.pivot = call.problem.rank * call.pieces;
  args.chunk_flags = static_cast<const std::uint32_t*>(res.flags.get());
  args.epoch = call.epoch;
  args.timeout_ns = static_cast<std::uint64_t>(call.timeout_ms) * 1'000'000u;
  args.error_words = static_cast<std::uint32_t*>(res.error_words.get());
  args.max_sms = 0;  // the whole device: nothing the grid waits on needs an SM
  std::string why;
  if (!native::can_implement(*call.config, args, &why)) {
    throw Error(ErrorCode::unsupported, std::string("native kernel ") + call.config->name +
                                            " cannot run this call: " + why);
  }
  check_cuda(native::launch(*call.config, args, nullptr, res.compute.get()), "native GEMM launch");
}

// Per-chunk cuBLAS GEMMs in schedule order (pivot first), alternating two
// lanes so that one chunk's GEMM overlaps the next chunk's wait.
void enqueue_pipelined(const CallSpec& call, RankResources& res) {
  const cudaStream_t lanes[2] = {res.compute.get(), res.lane2.get()};
  const int world = call.problem.world_size;
  // Forked here only: a captured stream that is forked must be joined back.
  wait(res.lane2.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");
  for (int i = 0; i < world; ++i) {
    const int c = (call.problem.rank + i) % world;
    const int lane = i % 2;
    if (c != call.problem.rank) {
      wait(lanes[lane], res.arrived[static_cast<std::size_t>(c)]->get(),
           "cudaStreamWaitEvent(chunk arrived)");
    }
    res.gemm[lane].run(lanes[lane], call.gathered_chunk(c), call.problem.m, call.b,
                       c_rows(call, c));
  }
  record(res.lane2_done.get(), res.lane2.get(), "cudaEventRecord(lane 2 done)");
  wait(res.compute.get(), res.lane2_done.get(), "cudaStreamWaitEvent(lane 2 done)");
}

void enqueue_decomposed(const CallSpec& call, RankResources& res) {
  const cudaStream_t s = res.compute.get();
  for (int c : call.arrival_order) {
    wait(s, res.arrived[static_cast<std::size_t>(c)]->get(), "cudaStreamWaitEvent(chunk arrived)");
  }
  res.gemm[0].run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
}

}  // namespace

void enqueue_call(const CallSpec& call, RankResources& res) {
  const cudaStream_t s = call.stream;
  const int world = call.problem.world_size;
  const int rank = call.problem.rank;
  const std::size_t bytes = call.chunk_bytes();

  // Flags go back to 0 in stream order before anything reads them: a graph
  // replays the epoch it captured, so last replay's flags would look ready.
  const int pieces = call.pieces;
  for (int f = 0; f < world * pieces; ++f) write_value32(s, flag(res, f), 0);

  // The local chunk needs no link; device copies run ahead of the GEMM.
  check_cuda(cudaMemcpyAsync(call.gathered_chunk(rank), call.shards[static_cast<std::size_t>(rank)],
                             bytes, cudaMemcpyDeviceToDevice, s),
             "cudaMemcpyAsync(local shard to gathered)");
  for (int j = 0; j < pieces; ++j) write_value32(s, flag(res, rank * pieces + j), call.epoch);
  if (call.link == Link::arrival) {
    for (int c : call.arrival_order) {
      if (call.dropped[static_cast<std::size_t>(c)]) continue;
      check_cuda(cudaMemcpyAsync(call.gathered_chunk(c), call.shards[static_cast<std::size_t>(c)],
                                 bytes, cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync(arrival model: place peer chunk)");
    }
  }

  record(res.fork.get(), s, "cudaEventRecord(fork)");
  wait(res.copy_out.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");
  wait(res.copy_in.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");
  wait(res.compute.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");

  // Producer first (see the top of this file), then the GEMM.
  if (call.link == Link::pcie) {
    enqueue_pcie_link(call, res);
  } else {
    enqueue_arrival_link(call, res);
  }
  record(res.copy_out_done.get(), res.copy_out.get(), "cudaEventRecord(copy out done)");
  record(res.copy_in_done.get(), res.copy_in.get(), "cudaEventRecord(copy in done)");

  switch (call.plan.algorithm) {
    case Algorithm::native:
      launch_native(call, res);
      break;
    case Algorithm::pipelined:
      enqueue_pipelined(call, res);
      break;
    case Algorithm::decomposed:
    case Algorithm::automatic:  // the plan never leaves auto
      enqueue_decomposed(call, res);
      break;
  }

  record(res.compute_done.get(), res.compute.get(), "cudaEventRecord(compute done)");
  wait(s, res.copy_out_done.get(), "cudaStreamWaitEvent(copy out done)");
  wait(s, res.copy_in_done.get(), "cudaStreamWaitEvent(copy in done)");
  wait(s, res.compute_done.get(), "cudaStreamWaitEvent(compute done)");
}

}  // namespace asynctp::cuda
