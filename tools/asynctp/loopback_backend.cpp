#include "loopback_backend.hpp"

#include <barrier>
#include <cstdio>
#include <exception>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "check.hpp"
#include "gpu/runtime.hpp"
#include "gpu_entry.hpp"

namespace asynctp::tool {
namespace {

std::size_t bytes_of(const TensorView& view) {
  return static_cast<std::size_t>(view.numel()) * element_size(view.dtype);
}

std::string device_name_of(int device) {
  std::string name;
  device_check(gpu::rt::device_name(device, &name), "device properties");
  return name;
}

// Refuse before an allocation fails halfway through W ranks.
void check_device_memory(const std::vector<RankData>& host, int device) {
  std::size_t needed = 0;
  for (const RankData& d : host) {
    needed += bytes_of(d.a_shard) + bytes_of(d.b) + bytes_of(d.c) + bytes_of(d.gathered);
  }
  std::size_t free = 0;
  std::size_t total = 0;
  device_check(gpu::rt::mem_get_info(&free, &total), "device memory info");
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

loopback::Link to_link(LinkChoice link) {
  return link == LinkChoice::arrival ? loopback::Link::arrival : loopback::Link::pcie;
}

}  // namespace

loopback::LoopbackConfig loopback_config(const RunArgs& args) {
  loopback::LoopbackConfig config;
  config.world_size = args.world_size;
  config.device = args.device_or_default();
  config.link = to_link(args.link_or_default());
  config.link_gbps = args.link_gbps_or_default();
  // Per-rank timings need each rank's call to run as if it had the GPU alone.
  config.serialize_ranks = true;
  return config;
}

LoopbackBackend::LoopbackBackend(const RunArgs& args)
    : args_(args),
      group_(loopback_config(args)),
      device_name_(device_name_of(device())),
      held_(args.world_size) {
  // This (main) thread creates the timing events and frees the buffers.
  device_check(gpu::rt::set_device(device()), "set device");
}

LoopbackBackend::~LoopbackBackend() { (void)gpu::rt::set_device(device()); }

const char* LoopbackBackend::name() const noexcept { return gpu::rt::kBackendName; }

std::string LoopbackBackend::description() const {
  std::string out = "device " + std::to_string(device()) + " (" + device_name_ +
                    "), loopback group, link " + to_string(args_.link_or_default());
  if (args_.link_or_default() == LinkChoice::arrival) {
    char gbps[48];
    std::snprintf(gbps, sizeof gbps, " at %g GB/s", args_.link_gbps_or_default());
    out += gbps;
  }
  return out + ", ranks serialized";
}

std::string LoopbackBackend::timing_rule() const {
  return std::string("the per-rank time: the mean over ranks of each rank's own call span (") +
         gpu::rt::kName +
         " events on "
         "its stream where its work begins and where it is joined, LoopbackGroup::last_call_ms); "
         "ranks are serialized, so each call runs as if its rank had the GPU alone; the arrival "
         "link's set-up (placing the peer chunks) is outside the span, its release times model "
         "the transfer";
}

void LoopbackBackend::place(std::vector<RankData>& host) {
  check_device_memory(host, device());
  held_.bind(host);
  group_.run([&](Comm& comm) { held_.place(comm.rank(), device()); });
}

void LoopbackBackend::poison_outputs() {
  held_.poison_host();
  group_.run([&](Comm& comm) { held_.upload_outputs(comm.rank()); });
}

void LoopbackBackend::fetch_outputs() {
  group_.run([&](Comm& comm) { held_.download_outputs(comm.rank()); });
}

// Each rank's own call span (LoopbackGroup::last_call_ms): with serialized
// ranks each call runs as if its rank had the GPU alone, so the spans are what
// W ranks on W GPUs would each take, without the gaps between one virtual
// rank's call and the next that a real rank never waits through. A barrier
// between iterations keeps a rank from starting iteration i+1 while rank 0
// still reports iteration i.
std::vector<double> LoopbackBackend::time_calls(int total, const CallFn& call,
                                                const BeforeFn& before) {
  const int world = world_size();
  const auto iterations = static_cast<std::size_t>(total);
  // spans[i][r]: rank r's call of iteration i.
  std::vector<std::vector<double>> spans(iterations, std::vector<double>(world, 0.0));
  const auto mean_span = [&](std::size_t i) {
    double sum = 0;
    for (double ms : spans[i]) sum += ms;
    return sum / world;
  };
  std::barrier<> iteration_start(world);
  group_.run([&](Comm& comm) {
    const int r = comm.rank();
    try {
      for (int i = 0; i < total; ++i) {
        iteration_start.arrive_and_wait();
        const auto at = static_cast<std::size_t>(i);
        if (r == 0) before(i, i > 0 ? std::optional<double>(mean_span(at - 1)) : std::nullopt);
        call(comm, i);
        synchronize(comm);
        spans[at][static_cast<std::size_t>(r)] = group_.last_call_ms(r);
      }
    } catch (...) {
      // A failing rank must not leave the others waiting at the barrier;
      // their next collective call then fails within the wait timeout.
      iteration_start.arrive_and_drop();
      throw;
    }
  });
  std::vector<double> ms(iterations);
  for (std::size_t i = 0; i < iterations; ++i) ms[i] = mean_span(i);
  return ms;
}

namespace gpu_entry {

const char* runtime() noexcept { return gpu::rt::kBackendName; }

std::string unavailable_reason(int device) { return loopback::unavailable_reason(device); }

std::unique_ptr<Backend> make_backend(const RunArgs& args) {
  return std::make_unique<LoopbackBackend>(args);
}

}  // namespace gpu_entry

}  // namespace asynctp::tool
