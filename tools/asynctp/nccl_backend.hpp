// The CLI backend of --link nccl: W ranks on W GPUs of this machine, one
// host thread each, through asynctp::nccl::LocalGroup. Unlike the loopback
// group the ranks run at the same time, each on its own GPU; a call's time is
// the slowest rank's (see timing_rule).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "asynctp/nccl.hpp"
#include "backend.hpp"
#include "device_buffers.hpp"
#include "device_rank.hpp"

namespace asynctp::tool {

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(const RunArgs& args);
  ~NcclBackend() override;

  const char* name() const noexcept override { return "cuda"; }
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

 private:
  nccl::LocalGroup group_;
  std::string device_names_;
  HeldRanks held_;  // each rank's part made and freed on that rank's thread
};

}  // namespace asynctp::tool
