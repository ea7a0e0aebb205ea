#include "core/agreement.hpp"

#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "core/log.hpp"

namespace asynctp::core {
namespace {

std::string field_mismatch(const char* field, int rank, const std::string& first,
                           const std::string& other) {
  return std::string("ranks disagree on ") + field + ": rank 0 has " + first + ", rank " +
         std::to_string(rank) + " has " + other;
}

// M = m * W, as a peer's record states it: the record may come from another
// process (a different build, a broken peer), so the product may not fit.
std::string rows_of(const ProblemDesc& p) {
  std::int64_t rows = 0;
  if (__builtin_mul_overflow(p.m, static_cast<std::int64_t>(p.world_size), &rows)) {
    return std::to_string(p.m) + " x " + std::to_string(p.world_size);
  }
  return std::to_string(rows);
}

}  // namespace

std::string find_disagreement(const std::vector<CallRecord>& records) {
  for (std::size_t r = 0; r < records.size(); ++r) {
    if (!records[r].ok)
      return "rank " + std::to_string(r) + " rejected its arguments: " + records[r].error;
  }
  const CallRecord& first = records.front();
  for (std::size_t i = 1; i < records.size(); ++i) {
    const CallRecord& other = records[i];
    const int r = static_cast<int>(i);
    if (other.world_size != first.world_size) {
      return field_mismatch("world size", r, std::to_string(first.world_size),
                            std::to_string(other.world_size));
    }
    if (other.problem.op != first.problem.op) {
      return field_mismatch("the operation", r, op_name(first.problem.op),
                            op_name(other.problem.op));
    }
    if (first.problem.op == OpKind::all_gather_matmul) {
      // Every rank's gathered buffer holds every shard: the shards agree.
      if (other.problem.m != first.problem.m) {
        return field_mismatch("a_shard rows (m)", r, std::to_string(first.problem.m),
                              std::to_string(other.problem.m));
      }
      if (other.problem.k != first.problem.k) {
        return field_mismatch("a_shard columns (k)", r, std::to_string(first.problem.k),
                              std::to_string(other.problem.k));
      }
    } else {
      // Every rank's partial product is M x n, cut into the same chunks; the
      // K-slices (k) may differ, as partials do not depend on them.
      if (other.problem.m != first.problem.m) {
        return field_mismatch("a rows (M)", r, rows_of(first.problem), rows_of(other.problem));
      }
      if (other.problem.n != first.problem.n) {
        return field_mismatch("b columns (n)", r, std::to_string(first.problem.n),
                              std::to_string(other.problem.n));
      }
    }
    if (other.problem.dtype != first.problem.dtype) {
      return field_mismatch("dtype", r, to_string(first.problem.dtype),
                            to_string(other.problem.dtype));
    }
    if (other.plan.algorithm != first.plan.algorithm || other.plan.tile_m != first.plan.tile_m ||
        other.plan.tile_n != first.plan.tile_n) {
      // Each rank plans from its own problem (e.g. its own k), so the
      // planners' reasons say why they differ; transports whose records
      // travel without the reason (NCCL's wire) leave it out.
      std::string verdict = field_mismatch(
          "the algorithm", r,
          std::string(to_string(first.plan.algorithm)) + " (tile " +
              std::to_string(first.plan.tile_m) + "x" + std::to_string(first.plan.tile_n) + ")",
          std::string(to_string(other.plan.algorithm)) + " (tile " +
              std::to_string(other.plan.tile_m) + "x" + std::to_string(other.plan.tile_n) + ")");
      if (!first.plan.reason.empty() && !other.plan.reason.empty()) {
        verdict += " (rank 0: " + first.plan.reason + "; rank " + std::to_string(r) + ": " +
                   other.plan.reason + ")";
      }
      return verdict;
    }
    if (other.grows_workspace != first.grows_workspace) {
      return field_mismatch("whether the workspace must grow", r,
                            first.grows_workspace ? "yes" : "no",
                            other.grows_workspace ? "yes" : "no");
    }
  }
  return {};
}

void record_local_failure(CallRecord& mine, std::exception_ptr& local_error,
                          const std::string& error) {
  local_error = std::current_exception();
  mine.ok = false;
  mine.error = error;
}

void publish_and_agree(Barrier& barrier, std::vector<CallRecord>& records,
                       const CallRecord& mine, int rank, std::int64_t timeout_ms,
                       const std::exception_ptr& local_error) {
  records[static_cast<std::size_t>(rank)] = mine;
  agree_or_throw(barrier, records, rank, timeout_ms, local_error);
}

void agree_or_throw(Barrier& barrier, const std::vector<CallRecord>& records, int rank,
                    std::int64_t timeout_ms, const std::exception_ptr& local_error) {
  barrier.arrive_and_wait(rank, "arguments", timeout_ms);
  const std::string disagreement = find_disagreement(records);
  if (!disagreement.empty()) {
    barrier.arrive_and_wait(rank, "abort", timeout_ms);
    if (local_error) std::rethrow_exception(local_error);
    throw Error(ErrorCode::mismatch, disagreement);
  }
  if (log_enabled(LogLevel::info)) {
    const CallRecord& mine = records[static_cast<std::size_t>(rank)];
    log(LogLevel::info, rank,
        mine.problem.to_string() + " -> " + to_string(mine.plan.algorithm) + ": " +
            mine.plan.reason);
  }
}

}  // namespace asynctp::core
