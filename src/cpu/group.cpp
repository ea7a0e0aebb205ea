#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/cpu.hpp"
#include "asynctp/error.hpp"
#include "core/config.hpp"
#include "core/rank_threads.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/comm.hpp"
#include "cpu/group_state.hpp"

namespace asynctp::cpu {
namespace {

constexpr int kMaxWorldSize = 1024;
constexpr int kMaxWorkersPerRank = 256;

}  // namespace

int resolve_gemm_workers(int requested, int world_size, const char* argument) {
  if (requested < 0 || requested > kMaxWorkersPerRank) {
    throw Error(ErrorCode::invalid_argument,
                std::string(argument) + ": must lie in [0, " + std::to_string(kMaxWorkersPerRank) +
                    "] (0 = automatic), got " + std::to_string(requested));
  }
  if (requested > 0) return requested;
  if (auto text = core::process_env("ASYNCTP_CPU_WORKERS")) {
    const auto value = core::parse_positive_int(*text, "ASYNCTP_CPU_WORKERS");
    if (value > kMaxWorkersPerRank) {
      throw Error(ErrorCode::invalid_argument,
                  "ASYNCTP_CPU_WORKERS: must be at most " + std::to_string(kMaxWorkersPerRank));
    }
    return static_cast<int>(value);
  }
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // At least two, so that pipelined has its two lanes.
  return std::max(2, hardware / world_size);
}

struct Group::State {
  explicit State(const GroupConfig& config)
      : shared(config.world_size,
               resolve_gemm_workers(config.gemm_workers_per_rank, config.world_size,
                                    "gemm_workers_per_rank")) {
    for (int r = 0; r < config.world_size; ++r) {
      comms.push_back(std::make_unique<CpuComm>(shared, r));
    }
  }
  GroupState shared;
  std::vector<std::unique_ptr<CpuComm>> comms;
};

Group::Group(const GroupConfig& config) {
  if (config.world_size < 1 || config.world_size > kMaxWorldSize) {
    throw Error(ErrorCode::invalid_argument, "world_size: must lie in [1, " +
                                                 std::to_string(kMaxWorldSize) + "], got " +
                                                 std::to_string(config.world_size));
  }
  configure_blas_threads();
  state_ = std::make_unique<State>(config);
}

Group::~Group() = default;

int Group::world_size() const noexcept { return state_->shared.world_size(); }

int Group::gemm_workers_per_rank() const noexcept { return state_->shared.workers_per_rank(); }

Comm& Group::comm(int rank) {
  core::check_rank_argument(rank, world_size());
  return *state_->comms[static_cast<std::size_t>(rank)];
}

}  // namespace asynctp::cpu
