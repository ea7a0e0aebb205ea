// The cpu backend: W ranks as threads of this process (asynctp::cpu::Group),
// or, under a launcher that started several processes, this process's rank
// of a process group on this host (asynctp::cpu::comm_from_environment);
// either way the calls compute on the host buffers directly.
#include "asynctp/bench.hpp"
#include "asynctp/cpu.hpp"
#include "backend.hpp"

namespace asynctp::tool {
namespace {

// What both share: the host tensors are the calls' own.
class HostBackend : public Backend {
 public:
  void place(Problem& problem) override { placed_ = &problem; }
  const RankViews& views(int rank) const override { return placed_->tensors(rank); }
  void* stream(int) const noexcept override { return nullptr; }
  void poison_outputs() override { placed_->poison_outputs(); }
  void fetch_outputs() override {}  // the calls wrote the host buffers
};

class CpuBackend final : public HostBackend {
 public:
  explicit CpuBackend(const cpu::GroupConfig& config) : cpu_group_(config) {
    group_ = &cpu_group_;
    info.name = "cpu";
    info.gemm_workers_per_rank = cpu_group_.gemm_workers_per_rank();
    info.detail = std::to_string(info.gemm_workers_per_rank) + " GEMM workers per rank";
    info.timing_rule =
        "wall time of each call, the slowest rank's per iteration";  // RankGroup::time_calls
  }

 private:
  cpu::Group cpu_group_;
};

// One rank of a job a launcher started, one process per rank.
class CpuProcessBackend final : public HostBackend {
 public:
  explicit CpuProcessBackend(const Args& args)
      : comm_(cpu::comm_from_environment({args.workers, cpu::ProcessOptions{}.setup_timeout_ms})),
        rank_(comm_->rank()) {
    info.name = "cpu";
    info.gemm_workers_per_rank = args.workers;
    info.detail = "rank " + std::to_string(rank_) + " of " + std::to_string(world_size()) +
                  " (one process per rank, shared memory); figures are this rank's";
    info.timing_rule =
        "rank 0's own wall time of each call (the ranks meet in the call's barriers; other ranks "
        "check their own results and report only failures)";
  }
  int world_size() const noexcept override { return comm_->world_size(); }
  Comm& comm(int) override { return *comm_; }
  bool holds(int rank) const noexcept override { return rank == rank_; }
  void run(const std::function<void(Comm&)>& body) override { body(*comm_); }

  std::vector<double> time_rank_calls(int total, const RankCall& call,
                                      const BeforeIteration& before) override {
    return bench::time_calls(*comm_, total, call, before);
  }

 private:
  std::unique_ptr<Comm> comm_;
  int rank_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Args& args) {
  if (const std::optional<LaunchInfo> launch = launch_info(); launch && launch->world_size > 1) {
    return std::make_unique<CpuProcessBackend>(args);
  }
  return std::make_unique<CpuBackend>(cpu::GroupConfig{args.world_size, args.workers});
}

}  // namespace asynctp::tool
