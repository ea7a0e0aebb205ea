// DeviceBackend (each rank's device copies), and the loopback backend: W
// virtual ranks on one GPU (asynctp::loopback::LoopbackGroup, CUDA or HIP),
// serialized so that each call runs as if its rank had the GPU alone.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "asynctp/loopback.hpp"
#include "backend.hpp"

namespace asynctp::tool {

void DeviceBackend::place(Problem& problem) {
  placed_ = &problem;
  ranks_.resize(static_cast<std::size_t>(world_size()));
  run([&](Comm& comm) {
    const int r = comm.rank();
    ranks_[static_cast<std::size_t>(r)] = std::make_unique<bench::DeviceRank>(
        problem.tensors(r), device_of(r), "rank " + std::to_string(r) + "'s ");
  });
}

const RankViews& DeviceBackend::views(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  if (r >= ranks_.size() || !ranks_[r]) {
    throw std::logic_error("rank " + std::to_string(rank) + " is not placed here");
  }
  return ranks_[r]->views();
}

void* DeviceBackend::stream(int rank) const noexcept {
  const auto r = static_cast<std::size_t>(rank);
  return r < ranks_.size() && ranks_[r] ? ranks_[r]->stream() : nullptr;
}

// Copying the host's poison keeps one definition of the pattern.
void DeviceBackend::poison_outputs() {
  placed_->poison_outputs();
  run([&](Comm& comm) { ranks_[static_cast<std::size_t>(comm.rank())]->upload_outputs(); });
}

void DeviceBackend::fetch_outputs() {
  run([&](Comm& comm) { ranks_[static_cast<std::size_t>(comm.rank())]->download_outputs(); });
}

void DeviceBackend::probe_clock(int rank) {
  if (!clock_) clock_ = std::make_unique<bench::ClockProbe>(1);
  clock_->record(stream(rank), 0);
}

double DeviceBackend::read_clock() { return clock_ ? clock_->read().front() : 0.0; }

// Nothing is worth reporting from a failure to free at exit.
void DeviceBackend::release() noexcept {
  clock_.reset();
  try {
    run([&](Comm& comm) { ranks_.at(static_cast<std::size_t>(comm.rank())).reset(); });
  } catch (...) {
  }
}

namespace {

loopback::LoopbackConfig config_of(const Args& args) {
  loopback::LoopbackConfig config;
  config.world_size = args.world_size;
  config.device = args.device_or_default();
  config.link = args.link() == LinkChoice::arrival ? loopback::Link::arrival : loopback::Link::pcie;
  config.link_gbps = args.link_gbps_or_default();
  config.serialize_ranks = true;  // the group's timing rule: each rank as if alone on the GPU
  return config;
}

class LoopbackBackend final : public DeviceBackend {
 public:
  explicit LoopbackBackend(const Args& args) : loopback_group_(config_of(args)) {
    group_ = &loopback_group_;
    const loopback::LoopbackConfig& config = loopback_group_.config();
    char gbps[48] = "";
    if (config.link == loopback::Link::arrival) {
      std::snprintf(gbps, sizeof gbps, " at %g GB/s", config.link_gbps);
    }
    info.name = gpu_runtime();
    info.detail = "device " + std::to_string(config.device) + " (" +
                  bench::device_name(config.device) + "), loopback group, link " +
                  to_string(args.link().value_or(LinkChoice::pcie)) + gbps + ", ranks serialized";
    info.timing_rule =
        "the per-rank time: the mean over ranks of each rank's own call span (" +
        std::string(info.name == "hip" ? "HIP" : "CUDA") +
        " events on its stream where its work begins and where it is joined, "
        "LoopbackGroup::last_call_ms); ranks are serialized, so each call runs as if its rank had "
        "the GPU alone; the arrival link's set-up (placing the peer chunks) is outside the span, "
        "its release times model the transfer";
  }
  ~LoopbackBackend() override { release(); }

  // Refuses before an allocation fails halfway through W ranks: all of the
  // problem's tensors go to one GPU.
  void place(Problem& problem) override {
    const std::uint64_t needed = problem.tensor_bytes();
    const int device = loopback_group_.config().device;
    if (const std::size_t free = bench::free_memory(device); needed > free) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "this run needs %.1f GiB of device memory (the inputs and outputs of "
                    "%d ranks), more than the %.1f GiB free on device %d",
                    static_cast<double>(needed) / (1 << 30), world_size(),
                    static_cast<double>(free) / (1 << 30), device);
      throw UsageError(std::string("-m/-n/-k/--world-size: ") + buf);
    }
    DeviceBackend::place(problem);
  }

 protected:
  int device_of(int) const override { return loopback_group_.config().device; }

 private:
  loopback::LoopbackGroup loopback_group_;
};

}  // namespace

std::unique_ptr<Backend> make_loopback_backend(const Args& args) {
  return std::make_unique<LoopbackBackend>(args);
}

}  // namespace asynctp::tool
