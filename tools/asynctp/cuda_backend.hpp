// The cuda backend for `asynctp run` and `asynctp bench`: a loopback group
// (W virtual ranks on one GPU, asynctp::cuda::LoopbackGroup) with ranks
// serialized, so that each rank's call runs as if it had the GPU alone and
// the per-rank time is measurable. Each rank has its own non-blocking stream
// and device copies of its tensors.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "asynctp/cuda.hpp"
#include "backend.hpp"
#include "device_buffers.hpp"
#include "device_rank.hpp"

namespace asynctp::tool {

class CudaBackend final : public Backend {
 public:
  // Throws Error(backend) when the device cannot be used.
  explicit CudaBackend(const RunArgs& args);
  ~CudaBackend() override;

  const char* name() const noexcept override { return "cuda"; }
  std::string description() const override;
  std::string timing_rule() const override;
  int world_size() const noexcept override { return group_.world_size(); }
  int gemm_workers_per_rank() const noexcept override { return 0; }
  Comm& comm(int rank) override { return group_.comm(rank); }
  void run(const std::function<void(Comm&)>& body) override { group_.run(body); }

  void place(std::vector<RankData>& host) override;
  RankViews views(int rank) const override;
  void* stream(int rank) const noexcept override;
  void poison_outputs() override;
  void fetch_outputs() override;
  std::vector<double> time_calls(int total, const CallFn& call, const BeforeFn& before) override;

  int device() const noexcept { return group_.config().device; }
  const std::string& device_name() const noexcept { return device_name_; }

 private:
  // Each rank's thread makes its own stream and buffers.
  void place_rank(int rank);

  RunArgs args_;
  cuda::LoopbackGroup group_;
  std::string device_name_;
  std::vector<RankData>* host_ = nullptr;
  std::vector<std::unique_ptr<DeviceRank>> ranks_;  // made by place, on each rank's thread
};

// The LoopbackConfig `asynctp run --backend cuda` and `bench` use.
cuda::LoopbackConfig loopback_config(const RunArgs& args);

}  // namespace asynctp::tool
