// The GPU backend for `asynctp run` and `asynctp bench`: a loopback group
// (W virtual ranks on one GPU, asynctp::loopback::LoopbackGroup, on CUDA or
// in a ROCm build on HIP) with ranks
// serialized, so that each rank's call runs as if it had the GPU alone and
// the per-rank time is measurable. Each rank has its own non-blocking stream
// and device copies of its tensors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "asynctp/loopback.hpp"
#include "backend.hpp"
#include "device_buffers.hpp"
#include "device_rank.hpp"

namespace asynctp::tool {

class LoopbackBackend final : public Backend {
 public:
  // Throws Error(backend) when the device cannot be used.
  explicit LoopbackBackend(const RunArgs& args);
  ~LoopbackBackend() override;

  const char* name() const noexcept override;  // "cuda" or "hip"
  std::string description() const override;
  std::string timing_rule() const override;
  int world_size() const noexcept override { return group_.world_size(); }
  int gemm_workers_per_rank() const noexcept override { return 0; }
  Comm& comm(int rank) override { return group_.comm(rank); }
  void run(const std::function<void(Comm&)>& body) override { group_.run(body); }

  void place(std::vector<RankData>& host) override;
  RankViews views(int rank) const override { return held_.views(rank); }
  void* stream(int rank) const noexcept override { return held_.stream(rank); }
  void poison_outputs() override;
  void fetch_outputs() override;
  std::vector<double> time_calls(int total, const CallFn& call, const BeforeFn& before) override;

  int device() const noexcept { return group_.config().device; }
  const std::string& device_name() const noexcept { return device_name_; }

 private:
  RunArgs args_;
  loopback::LoopbackGroup group_;
  std::string device_name_;
  HeldRanks held_;  // each rank's part made by place, on that rank's thread
};

// The LoopbackConfig `asynctp run --backend cuda|hip` and `bench` use.
loopback::LoopbackConfig loopback_config(const RunArgs& args);

}  // namespace asynctp::tool
