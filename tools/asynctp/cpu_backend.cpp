// The cpu backend: W ranks as threads of this process (asynctp::cpu::Group),
// computing on the host buffers directly.
#include "asynctp/bench.hpp"
#include "asynctp/cpu.hpp"
#include "backend.hpp"

namespace asynctp::tool {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const cpu::GroupConfig& config) : group_(config) {
    info.name = "cpu";
    info.gemm_workers_per_rank = group_.gemm_workers_per_rank();
    info.detail = std::to_string(info.gemm_workers_per_rank) + " GEMM workers per rank";
    info.timing_rule =
        "wall time of each call, the slowest rank's per iteration";  // bench::time_calls
  }
  int world_size() const noexcept override { return group_.world_size(); }
  Comm& comm(int rank) override { return group_.comm(rank); }
  void run(const std::function<void(Comm&)>& body) override { group_.run(body); }

  void place(Problem& problem) override { placed_ = &problem; }
  const RankViews& views(int rank) const override { return placed_->tensors(rank); }
  void* stream(int) const noexcept override { return nullptr; }
  void poison_outputs() override { placed_->poison_outputs(); }
  void fetch_outputs() override {}  // the calls wrote the host buffers

  std::vector<double> time_calls(int total, const bench::RankCall& call,
                                 const bench::BeforeIteration& before) override {
    return bench::time_calls(group_, total, call, before);
  }

 private:
  cpu::Group group_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const Args& args) {
  return std::make_unique<CpuBackend>(cpu::GroupConfig{args.world_size, args.workers});
}

}  // namespace asynctp::tool
