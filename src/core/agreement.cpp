#include "core/agreement.hpp"

#include <algorithm>
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

// How much of the GEMM an algorithm overlaps with the communication; the
// group never runs more than the least any rank's planner chose. A record
// that names no algorithm (auto) ranks below them all.
int ambition(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::native:
      return 2;
    case Algorithm::pipelined:
      return 1;
    case Algorithm::decomposed:
      return 0;
    case Algorithm::automatic:
      break;
  }
  return -1;
}

bool same_choice(const Plan& a, const Plan& b) {
  return a.algorithm == b.algorithm && a.tile_m == b.tile_m && a.tile_n == b.tile_n;
}

std::string choice_words(const Plan& plan) {
  return std::string(to_string(plan.algorithm)) + " (tile " + std::to_string(plan.tile_m) + "x" +
         std::to_string(plan.tile_n) + ")";
}

std::string runnable_words(unsigned runnable) {
  std::string out;
  for (Algorithm a : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    if (runnable & algorithm_bit(a)) out += (out.empty() ? "" : ", ") + std::string(to_string(a));
  }
  return out.empty() ? "nothing" : out;
}

// The first rank whose planner chose the least ambitious algorithm: the
// rank whose choice bounds the group's.
int least_ambitious_rank(const std::vector<CallRecord>& records) {
  int least = 0;
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (ambition(records[r].plan.algorithm) <
        ambition(records[static_cast<std::size_t>(least)].plan.algorithm)) {
      least = static_cast<int>(r);
    }
  }
  return least;
}

// The verdict when the ranks chose differently and no algorithm is one
// every rank can run: the first rank whose choice differs from rank 0's,
// each one's reason (transports whose records travel without it leave it
// out), and what each of the two could have run.
std::string no_common_algorithm(const std::vector<CallRecord>& records) {
  const Plan& first = records.front().plan;
  std::size_t i = 1;
  while (i + 1 < records.size() && same_choice(records[i].plan, first)) ++i;
  const Plan& other = records[i].plan;
  const std::string r = std::to_string(i);
  std::string verdict = field_mismatch("the algorithm", static_cast<int>(i), choice_words(first),
                                       choice_words(other));
  if (!first.reason.empty() && !other.reason.empty()) {
    verdict += " (rank 0: " + first.reason + "; rank " + r + ": " + other.reason + ")";
  }
  return verdict + "; no algorithm can run on every rank (rank 0 can run " +
         runnable_words(first.runnable) + "; rank " + r + " can run " +
         runnable_words(other.runnable) + ")";
}

}  // namespace

std::optional<Algorithm> group_algorithm(const std::vector<CallRecord>& records) {
  if (records.empty()) return std::nullopt;
  const Plan& first = records.front().plan;
  const bool all_same = std::all_of(records.begin(), records.end(), [&](const CallRecord& r) {
    return same_choice(r.plan, first);
  });
  if (all_same) return first.algorithm;
  const int ceiling =
      ambition(records[static_cast<std::size_t>(least_ambitious_rank(records))].plan.algorithm);
  for (Algorithm a : {Algorithm::pipelined, Algorithm::decomposed}) {
    if (ambition(a) > ceiling) continue;
    const bool everyone = std::all_of(records.begin(), records.end(), [&](const CallRecord& r) {
      return (r.plan.runnable & algorithm_bit(a)) != 0;
    });
    if (everyone) return a;
  }
  return std::nullopt;
}

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
  }
  // Each rank plans from its own problem (its own k or n), so the planners
  // may choose differently: the group then runs what every rank can run.
  const std::optional<Algorithm> together = group_algorithm(records);
  if (!together) return no_common_algorithm(records);
  // Decomposed needs no peer workspace on any transport: only when the group
  // works with its peers' memory must every rank take part in its growth.
  if (*together != Algorithm::decomposed) {
    for (std::size_t i = 1; i < records.size(); ++i) {
      if (records[i].grows_workspace != first.grows_workspace) {
        return field_mismatch("whether the workspace must grow", static_cast<int>(i),
                              first.grows_workspace ? "yes" : "no",
                              records[i].grows_workspace ? "yes" : "no");
      }
    }
  }
  // A record from another process must be the one its rank should send.
  for (std::size_t r = 0; r < records.size(); ++r) {
    const CallRecord& record = records[r];
    if (record.problem.rank != static_cast<int>(r) ||
        record.world_size != static_cast<int>(records.size())) {
      return "the record from rank " + std::to_string(r) + " of " + std::to_string(records.size()) +
             " says it is rank " + std::to_string(record.problem.rank) + " of " +
             std::to_string(record.world_size);
    }
  }
  return {};
}

Plan agreed_plan(const std::vector<CallRecord>& records, int rank) {
  const Plan& own = records[static_cast<std::size_t>(rank)].plan;
  // The measured choice, where every rank's proposal says the same and
  // every rank can run what it names (a tuning rank's record offers its
  // tuner's candidates: what its check passes when forced).
  std::vector<TuneProposal> proposals;
  double largest_flops = 0;
  for (const CallRecord& r : records) {
    proposals.push_back(r.tune);
    largest_flops = std::max(largest_flops, r.problem.flops());
  }
  const TuneVerdict tuned = resolve_tuning(proposals, tune_runs_per_candidate(largest_flops));
  if (tuned.action != TuneAction::none &&
      std::all_of(records.begin(), records.end(), [&](const CallRecord& r) {
        return (r.plan.runnable & algorithm_bit(tuned.algorithm)) != 0;
      })) {
    Plan plan;
    if (tuned.algorithm == own.algorithm) plan = own;
    plan.algorithm = tuned.algorithm;
    plan.runnable = own.runnable;
    plan.reason = tuned.reason + (own.reason.empty() ? "" : "; the planner: " + own.reason);
    plan.tune = tuned.action;
    plan.tune_runs = tuned.runs;
    return plan;
  }
  const std::optional<Algorithm> together = group_algorithm(records);
  if (!together || *together == own.algorithm) return own;
  const int setter = least_ambitious_rank(records);
  const Plan& bound = records[static_cast<std::size_t>(setter)].plan;
  Plan plan;
  plan.algorithm = *together;
  plan.runnable = own.runnable;
  plan.reason = std::string("the group runs ") + to_string(*together) +
                ", the most every rank can run, not this rank's choice: rank " +
                std::to_string(setter) + "'s planner chose " + to_string(bound.algorithm) +
                (bound.reason.empty() ? "" : " (" + bound.reason + ")") + ", this rank's " +
                to_string(own.algorithm) + (own.reason.empty() ? "" : " (" + own.reason + ")");
  return plan;
}

void record_local_failure(CallRecord& mine, std::exception_ptr& local_error,
                          const std::string& error) {
  local_error = std::current_exception();
  mine.ok = false;
  mine.error = error;
}

void publish_and_agree(Barrier& barrier, std::vector<CallRecord>& records, CallRecord& mine,
                       int rank, std::int64_t timeout_ms, const std::exception_ptr& local_error) {
  records[static_cast<std::size_t>(rank)] = mine;
  mine.plan = agree_or_throw(barrier, records, rank, timeout_ms, local_error);
}

Plan agree_or_throw(Barrier& barrier, const std::vector<CallRecord>& records, int rank,
                    std::int64_t timeout_ms, const std::exception_ptr& local_error) {
  barrier.arrive_and_wait(rank, "arguments", timeout_ms);
  const std::string disagreement = find_disagreement(records);
  if (!disagreement.empty()) {
    barrier.arrive_and_wait(rank, "abort", timeout_ms);
    if (local_error) std::rethrow_exception(local_error);
    throw Error(ErrorCode::mismatch, disagreement);
  }
  const Plan plan = agreed_plan(records, rank);
  if (log_enabled(LogLevel::info)) {
    log(LogLevel::info, rank,
        records[static_cast<std::size_t>(rank)].problem.to_string() + " -> " +
            to_string(plan.algorithm) + ": " + plan.reason);
  }
  return plan;
}

}  // namespace asynctp::core
