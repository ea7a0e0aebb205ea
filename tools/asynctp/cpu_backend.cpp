#include "cpu_backend.hpp"

#include <algorithm>
#include <chrono>

#include "asynctp/cpu.hpp"
#include "asynctp/ops.hpp"
#include "check.hpp"

namespace asynctp::tool {
namespace {

using Clock = std::chrono::steady_clock;

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const cpu::GroupConfig& config) : group_(config) {}
  const char* name() const noexcept override { return "cpu"; }
  std::string description() const override {
    return std::to_string(group_.gemm_workers_per_rank()) + " GEMM workers per rank";
  }
  std::string timing_rule() const override {
    return "wall time of each call, the slowest rank's per iteration";
  }
  int world_size() const noexcept override { return group_.world_size(); }
  int gemm_workers_per_rank() const noexcept override { return group_.gemm_workers_per_rank(); }
  Comm& comm(int rank) override { return group_.comm(rank); }
  void run(const std::function<void(Comm&)>& body) override { group_.run(body); }

  void place(std::vector<RankData>& host) override { host_ = &host; }
  RankViews views(int rank) const override {
    const RankData& d = (*host_)[static_cast<std::size_t>(rank)];
    return {d.a_shard, d.b, d.c, d.gathered};
  }
  void* stream(int) const noexcept override { return nullptr; }
  void poison_outputs() override { tool::poison_outputs(*host_); }
  void fetch_outputs() override {}  // the calls wrote the host buffers

  // A call is done only when every rank has its C: the slowest rank's wall
  // time is the iteration's.
  std::vector<double> time_calls(int total, const CallFn& call, const BeforeFn& before) override {
    const auto iterations = static_cast<std::size_t>(total);
    std::vector<std::vector<double>> ms(static_cast<std::size_t>(world_size()),
                                        std::vector<double>(iterations));
    group_.run([&](Comm& comm) {
      const auto r = static_cast<std::size_t>(comm.rank());
      std::vector<double>& mine = ms[r];
      for (int i = 0; i < total; ++i) {
        if (r == 0) {
          before(i, i > 0 ? std::optional<double>(mine[static_cast<std::size_t>(i - 1)])
                          : std::nullopt);
        }
        const Clock::time_point begin = Clock::now();
        call(comm, i);
        synchronize(comm);
        mine[static_cast<std::size_t>(i)] =
            std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
      }
    });
    std::vector<double> slowest(iterations, 0.0);
    for (const auto& rank_ms : ms) {
      for (std::size_t i = 0; i < iterations; ++i) slowest[i] = std::max(slowest[i], rank_ms[i]);
    }
    return slowest;
  }

 private:
  cpu::Group group_;
  std::vector<RankData>* host_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const RunArgs& args) {
  cpu::GroupConfig config;
  config.world_size = args.world_size;
  config.gemm_workers_per_rank = args.workers;
  return std::make_unique<CpuBackend>(config);
}

}  // namespace asynctp::tool
