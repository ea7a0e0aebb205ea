// The public doorways to the CPU process transport (asynctp/cpu.hpp):
// make_unique_id, make_process_comm and, under a launcher,
// comm_from_environment.
#include <string>

#include "asynctp/cpu.hpp"
#include "asynctp/error.hpp"
#include "bootstrap/launch_env.hpp"
#include "bootstrap/record_fields.hpp"
#include "bootstrap/tcp_rendezvous.hpp"
#include "cpu/block_gemm.hpp"
#include "cpu/comm.hpp"
#include "cpu/process_group.hpp"
#include "cpu/process_id.hpp"

namespace asynctp::cpu {
namespace {

constexpr int kMaxWorldSize = 1024;

[[noreturn]] void fail(const std::string& argument, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, argument + ": " + rule);
}

}  // namespace

UniqueId make_unique_id() { return new_unique_id(); }

std::unique_ptr<Comm> make_process_comm(const UniqueId& id, int world_size, int rank,
                                        const ProcessOptions& options) {
  if (world_size < 1 || world_size > kMaxWorldSize) {
    fail("world_size", "must lie in [1, " + std::to_string(kMaxWorldSize) + "], got " +
                           std::to_string(world_size));
  }
  if (rank < 0 || rank >= world_size) {
    fail("rank",
         "must lie in [0, " + std::to_string(world_size) + "), got " + std::to_string(rank));
  }
  if (options.setup_timeout_ms <= 0) {
    fail("options.setup_timeout_ms",
         "must be positive, got " + std::to_string(options.setup_timeout_ms));
  }
  const SegmentNames names = segment_names(id);
  const int workers =
      resolve_gemm_workers(options.gemm_workers, world_size, "options.gemm_workers");
  configure_blas_threads();
  auto group =
      std::make_unique<ProcessGroup>(names, world_size, rank, workers, options.setup_timeout_ms);
  return std::make_unique<CpuComm>(std::move(group), rank);
}

std::unique_ptr<Comm> comm_from_environment(const ProcessOptions& options) {
  const bootstrap::LaunchInfo info = bootstrap::launched_process_info();
  if (options.setup_timeout_ms <= 0) {
    fail("options.setup_timeout_ms",
         "must be positive, got " + std::to_string(options.setup_timeout_ms));
  }
  std::string record = "host=" + bootstrap::host_name() + "\n";
  UniqueId id{};
  if (info.rank == 0) {
    id = make_unique_id();
    record += "cpu-shm-id=" + segment_names(id).token + "\n";
  }
  const std::vector<std::string> all =
      bootstrap::all_gather_records(info, record, options.setup_timeout_ms);
  const auto first = bootstrap::parse_record(all.front());
  for (std::size_t r = 1; r < all.size(); ++r) {
    const auto fields = bootstrap::parse_record(all[r]);
    if (fields.count("host") == 0 || first.count("host") == 0 ||
        fields.at("host") != first.at("host")) {
      throw Error(ErrorCode::unsupported,
                  "the CPU process transport needs every rank on one host (shared memory): rank "
                  "0 is on " +
                      (first.count("host") ? first.at("host") : "?") + ", rank " +
                      std::to_string(r) + " on " +
                      (fields.count("host") ? fields.at("host") : "?"));
    }
  }
  if (info.rank != 0) {
    if (first.count("cpu-shm-id") == 0) {
      throw Error(ErrorCode::backend, "rendezvous: rank 0's record has no CPU group id");
    }
    id = unique_id_from_token(first.at("cpu-shm-id"));
  }
  return make_process_comm(id, info.world_size, info.rank, options);
}

}  // namespace asynctp::cpu
