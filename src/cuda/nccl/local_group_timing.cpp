// nccl::LocalGroup's timing rule (RankGroup::time_calls): its ranks run at
// once on GPUs of their own, so each rank's calls are timed by events on its
// stream and an iteration takes as long as its slowest rank.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/nccl.hpp"
#include "gpu/check.hpp"
#include "gpu/resources.hpp"
#include "gpu/runtime.hpp"
#include "gpu/stream_memops.hpp"

namespace asynctp::nccl {
namespace {

// A host word the streams of every GPU of this process wait on, so that the
// ranks' device work starts together once every rank has enqueued.
class StartGate {
 public:
  StartGate() {
    void* word = nullptr;
    gpu::check(gpu::rt::host_alloc_mapped_portable(&word, sizeof(std::uint32_t)),
               "host allocation of the start gate's word");
    word_ = static_cast<std::uint32_t*>(word);
    *word_ = 0;
  }
  ~StartGate() { (void)gpu::rt::host_free(word_); }
  StartGate(const StartGate&) = delete;
  StartGate& operator=(const StartGate&) = delete;
  // The stream's later work waits until open(round).
  void hold(void* stream, std::uint32_t round) {
    gpu::wait_value32_equal(static_cast<gpu::rt::StreamHandle>(stream), word_, round);
  }
  void open(std::uint32_t round) {
    std::atomic_ref<std::uint32_t>(*word_).store(round, std::memory_order_release);
  }

 private:
  std::uint32_t* word_ = nullptr;
};

double elapsed_ms(const gpu::Event& begin, const gpu::Event& end) {
  gpu::check(gpu::rt::event_synchronize(end.get()), "wait for a timed call's end event");
  float ms = 0;
  gpu::check(gpu::rt::event_elapsed_ms(&ms, begin.get(), end.get()),
             "elapsed time of a timed call");
  return ms;
}

void record(const gpu::Event& event, void* stream) {
  gpu::check(gpu::rt::event_record(event.get(), static_cast<gpu::rt::StreamHandle>(stream)),
             "record a timed call's event");
}

}  // namespace

std::vector<double> LocalGroup::time_calls(int iterations, const RankCall& call,
                                           const BeforeIteration& before,
                                           const std::vector<void*>& streams) {
  const int world = world_size();
  if (static_cast<int>(streams.size()) != world) {
    throw Error(ErrorCode::invalid_argument, "streams: must name each rank's stream (" +
                                                 std::to_string(world) + "), got " +
                                                 std::to_string(streams.size()));
  }
  const auto rounds = static_cast<std::uint32_t>(std::max(iterations, 0));
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
  run([&](Comm& comm) {
    const int r = comm.rank();
    void* stream = streams[static_cast<std::size_t>(r)];
    std::uint32_t i = 0;
    try {
      // One pair for every iteration: each is read before it is recorded again.
      gpu::Event begin("a timed call's begin event", /*timed=*/true);
      gpu::Event end("a timed call's end event", /*timed=*/true);
      for (; i < rounds; ++i) {
        iteration_start.arrive_and_wait();
        if (r == 0 && before)
          before(static_cast<int>(i), i > 0 ? slowest(i - 1) : std::optional<double>());
        // Not the first: it may allocate, and a free would wait for the hold.
        if (i > 0) gate.hold(stream, i);
        record(begin, stream);
        call(comm, static_cast<int>(i));
        record(end, stream);
        all_enqueued.arrive_and_wait();
        if (r == 0 && i > 0) gate.open(i);
        comm.synchronize();
        per_rank[static_cast<std::size_t>(r)][i] = elapsed_ms(begin, end);
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

}  // namespace asynctp::nccl
