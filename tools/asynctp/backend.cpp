#include "backend.hpp"

#include "asynctp/cpu.hpp"

namespace asynctp::tool {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const cpu::GroupConfig& config) : group_(config) {}
  const char* name() const noexcept override { return "cpu"; }
  int world_size() const noexcept override { return group_.world_size(); }
  int gemm_workers_per_rank() const noexcept override { return group_.gemm_workers_per_rank(); }
  Comm& comm(int rank) override { return group_.comm(rank); }
  void run(const std::function<void(Comm&)>& body) override { group_.run(body); }

 private:
  cpu::Group group_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const RunArgs& args) {
  switch (args.backend) {
    case BackendChoice::automatic:  // the best present: cpu is the only one yet
    case BackendChoice::cpu: {
      cpu::GroupConfig config;
      config.world_size = args.world_size;
      config.gemm_workers_per_rank = args.workers;
      return std::make_unique<CpuBackend>(config);
    }
  }
  return nullptr;
}

}  // namespace asynctp::tool
