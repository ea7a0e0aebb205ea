#include "cuda_backend.hpp"

#include <atomic>
#include <barrier>
#include <cstdio>
#include <exception>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "check.hpp"
#include "cuda/resources.hpp"
#include "cuda/stream_memops.hpp"
#include "cuda_entry.hpp"

namespace asynctp::tool {
namespace {

std::size_t bytes_of(const TensorView& view) {
  return static_cast<std::size_t>(view.numel()) * element_size(view.dtype);
}

std::string device_name_of(int device) {
  cudaDeviceProp props{};
  cuda_check(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
  return props.name;
}

// Refuse before cudaMalloc fails halfway through W ranks.
void check_device_memory(const std::vector<RankData>& host, int device) {
  std::size_t needed = 0;
  for (const RankData& d : host) {
    needed += bytes_of(d.a_shard) + bytes_of(d.b) + bytes_of(d.c) + bytes_of(d.gathered);
  }
  std::size_t free = 0;
  std::size_t total = 0;
  cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  if (needed > free) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "this run needs %.1f GiB of device memory (A shard, B, C and gathered A of %zu "
                  "ranks), more than the %.1f GiB free on device %d",
                  static_cast<double>(needed) / (1 << 30), host.size(),
                  static_cast<double>(free) / (1 << 30), device);
    throw UsageError(std::string("-m/-n/-k/--world-size: ") + buf);
  }
}

cuda::Link to_link(LinkChoice link) {
  return link == LinkChoice::arrival ? cuda::Link::arrival : cuda::Link::pcie;
}

}  // namespace

cuda::LoopbackConfig loopback_config(const RunArgs& args) {
  cuda::LoopbackConfig config;
  config.world_size = args.world_size;
  config.device = args.device_or_default();
  config.link = to_link(args.link_or_default());
  config.link_gbps = args.link_gbps_or_default();
  // Per-rank timings need each rank's call to run as if it had the GPU alone.
  config.serialize_ranks = true;
  return config;
}

CudaBackend::CudaBackend(const RunArgs& args)
    : args_(args), group_(loopback_config(args)), device_name_(device_name_of(device())) {
  // This (main) thread creates the timing events and frees the buffers.
  cuda_check(cudaSetDevice(device()), "cudaSetDevice");
  ranks_.resize(static_cast<std::size_t>(world_size()));
}

CudaBackend::~CudaBackend() { (void)cudaSetDevice(device()); }

std::string CudaBackend::description() const {
  std::string out = "device " + std::to_string(device()) + " (" + device_name_ +
                    "), loopback group, link " + to_string(args_.link_or_default());
  if (args_.link_or_default() == LinkChoice::arrival) {
    char gbps[48];
    std::snprintf(gbps, sizeof gbps, " at %g GB/s", args_.link_gbps_or_default());
    out += gbps;
  }
  return out + ", ranks serialized";
}

std::string CudaBackend::timing_rule() const {
  return "the per-rank time: (cudaEvent on rank 0's stream just before its call .. cudaEvent on "
         "rank W-1's stream just after its call) / W; ranks are serialized, so each call runs "
         "as if its rank had the GPU alone, and (after the first call) the device work starts "
         "once every rank has enqueued";
}

void CudaBackend::place(std::vector<RankData>& host) {
  check_device_memory(host, device());
  host_ = &host;
  group_.run([&](Comm& comm) { place_rank(comm.rank()); });
}

void CudaBackend::place_rank(int rank) {
  const RankData& h = (*host_)[static_cast<std::size_t>(rank)];
  auto d = std::make_unique<DeviceRank>(h, device(), "rank " + std::to_string(rank) + "'s ");
  ranks_[static_cast<std::size_t>(rank)] = std::move(d);
}

RankViews CudaBackend::views(int rank) const {
  return ranks_[static_cast<std::size_t>(rank)]->views;
}

void* CudaBackend::stream(int rank) const noexcept {
  return ranks_[static_cast<std::size_t>(rank)]->stream.get();
}

// The host pattern is the one check_outputs recognises as unwritten; copying
// it keeps one definition of the poison.
void CudaBackend::poison_outputs() {
  tool::poison_outputs(*host_);
  group_.run([&](Comm& comm) {
    const RankData& h = (*host_)[static_cast<std::size_t>(comm.rank())];
    ranks_[static_cast<std::size_t>(comm.rank())]->upload_outputs(h);
  });
}

void CudaBackend::fetch_outputs() {
  group_.run([&](Comm& comm) {
    const RankData& h = (*host_)[static_cast<std::size_t>(comm.rank())];
    ranks_[static_cast<std::size_t>(comm.rank())]->download_outputs(h);
  });
}

// With serialized ranks, rank W-1's work of a call starts only after rank
// W-2's, ..., after rank 0's: the span from rank 0's first event to rank
// W-1's last covers the W calls one after another. A barrier between
// iterations keeps rank 0's next event from being recorded while another
// rank's previous call still runs.
std::vector<double> CudaBackend::time_calls(int total, const CallFn& call, const BeforeFn& before) {
  const int world = world_size();
  const auto iterations = static_cast<std::size_t>(total);
  std::vector<Event> begin(iterations);
  std::vector<Event> end(iterations);
  std::barrier<> iteration_start(world);
  std::barrier<> all_enqueued(world);
  // The start gate: rank 0's stream holds back the iteration's device work
  // until every rank has enqueued its call, so the time is the device's, not
  // the host's turn-by-turn enqueue of W virtual ranks (real ranks enqueue in
  // parallel, one process each). Not on the first iteration: a first call may
  // allocate, and cudaFree waits for the device, which would wait for the gate.
  cuda::MappedWords gate(1, "cudaHostAlloc(start gate word)");
  group_.run([&](Comm& comm) {
    const int r = comm.rank();
    const cudaStream_t s = static_cast<cudaStream_t>(stream(r));
    int i = 0;
    try {
      for (; i < total; ++i) {
        iteration_start.arrive_and_wait();
        const auto at = static_cast<std::size_t>(i);
        const bool gated = i > 0;
        if (r == 0) {
          // Iteration i-1 is finished on every rank (each synchronized
          // before arriving), so its events are complete.
          before(i, i > 0 ? std::optional<double>(end[at - 1].ms_since(begin[at - 1]) / world)
                          : std::nullopt);
          if (gated) cuda::wait_value32_equal(s, gate.device(), static_cast<std::uint32_t>(i));
          begin[at].record(s);
        }
        call(comm, i);
        if (r == world - 1) end[at].record(s);
        all_enqueued.arrive_and_wait();
        if (r == 0 && gated) {
          std::atomic_ref<std::uint32_t>(*gate.host())
              .store(static_cast<std::uint32_t>(i), std::memory_order_release);
        }
        synchronize(comm);
        // synchronize covers the call's work; the event after it is waited
        // for too, so rank 0 may read it once past the next barrier.
        if (r == world - 1) end[at].wait();
      }
    } catch (...) {
      // A failing rank must not leave the others waiting at a barrier; their
      // next collective call then fails within the wait timeout. The gate
      // opens, so that rank 0's stream does not wait on it forever.
      std::atomic_ref<std::uint32_t>(*gate.host()).store(static_cast<std::uint32_t>(i));
      iteration_start.arrive_and_drop();
      all_enqueued.arrive_and_drop();
      throw;
    }
  });
  std::vector<double> ms(iterations);
  for (std::size_t i = 0; i < iterations; ++i) ms[i] = end[i].ms_since(begin[i]) / world;
  return ms;
}

namespace cuda_entry {

bool built() noexcept { return true; }

std::string unavailable_reason(int device) { return cuda::unavailable_reason(device); }

std::unique_ptr<Backend> make_backend(const RunArgs& args) {
  return std::make_unique<CudaBackend>(args);
}

}  // namespace cuda_entry

}  // namespace asynctp::tool
