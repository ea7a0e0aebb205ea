// Timed calls on a local NCCL group: asynctp/bench.hpp. NCCL is the CUDA
// backend's transport, so this file names the CUDA runtime directly.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <barrier>

#include "asynctp/bench.hpp"
#include "asynctp/nccl.hpp"
#include "asynctp/ops.hpp"
#include "gpu/check.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::bench {
namespace {

// A host word the streams of every GPU of this process wait on: mapped for
// the devices to read it, portable for every GPU's context to count it as
// pinned (with unified addressing the host address is the device one).
class StartGate {
 public:
  StartGate() {
    gpu::check(cudaHostAlloc(reinterpret_cast<void**>(&word_), sizeof(std::uint32_t),
                             cudaHostAllocMapped | cudaHostAllocPortable),
               "host allocation of the start gate's word");
    *word_ = 0;
  }
  ~StartGate() { (void)cudaFreeHost(word_); }
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;
  // The stream's later work waits until open(round).
  void hold(void* stream, std::uint32_t round) {
    gpu::wait_value32_equal(static_cast<cudaStream_t>(stream), word_, round);
  }
  void open(std::uint32_t round) {
    std::atomic_ref<std::uint32_t>(*word_).store(round, std::memory_order_release);
  }

 private:
  std::uint32_t* word_ = nullptr;
};

}  // namespace

std::vector<double> time_calls(nccl::LocalGroup& group, const std::vector<void*>& streams,
                               int iterations, const RankCall& call,
                               const BeforeIteration& before) {
  const int world = group.world_size();
  const auto rounds = static_cast<std::uint32_t>(iterations);
  // per_rank[r][i]: rank r's call of iteration i.
  std::vector<std::vector<double>> per_rank(static_cast<std::size_t>(world),
                                            std::vector<double>(rounds, 0.0));
  const auto slowest = [&](std::uint32_t i) {
    double ms = 0;
    for (const auto& rank_ms : per_rank) ms = std::max(ms, rank_ms[i]);
    return ms;
  };
  std::barrier<> iteration_start(world);
  std::barrier<> all_enqueued(world);
  StartGate gate;
  group.run([&](Comm& comm) {
    const int r = comm.rank();
    void* stream = streams.at(static_cast<std::size_t>(r));
    std::vector<Event> begin(rounds);
    std::vector<Event> end(rounds);
    std::uint32_t i = 0;
    try {
      for (; i < rounds; ++i) {
        iteration_start.arrive_and_wait();
        if (r == 0 && before)
          before(static_cast<int>(i), i > 0 ? slowest(i - 1) : std::optional<double>());
        if (i > 0) gate.hold(stream, i);
        begin[i].record(stream);
        call(comm, static_cast<int>(i));
        end[i].record(stream);
        all_enqueued.arrive_and_wait();
        if (r == 0 && i > 0) gate.open(i);
        synchronize(comm);
        end[i].synchronize();
        per_rank[static_cast<std::size_t>(r)][i] = end[i].ms_since(begin[i]);
      }
    } catch (...) {
      // Release the held streams and the barriers, so the others fail too
      // rather than wait forever.
      gate.open(i);
      iteration_start.arrive_and_drop();
      all_enqueued.arrive_and_drop();
      throw;
    }
  });
  std::vector<double> ms(rounds);
  for (std::uint32_t i = 0; i < rounds; ++i) ms[i] = slowest(i);
  return ms;
}

}  // namespace asynctp::bench
