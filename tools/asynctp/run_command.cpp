#include "run_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "asynctp/trace.hpp"
#include "backend.hpp"
#include "check.hpp"
#include "parallel.hpp"
#include "progress.hpp"
#include "rank_data.hpp"
#include "report.hpp"

namespace asynctp::tool {
namespace {

using Clock = std::chrono::steady_clock;

// One row of the table: an algorithm forced through Options, or (auto) left
// to the library so that the row measures exactly what a default call runs.
struct Row {
  std::optional<Algorithm> forced;
  bool requested_alone = false;  // --algo names it: failing to run is an error
};

struct Session {
  const RunArgs& args;
  Backend& backend;
  std::vector<RankData>& ranks;
  Progress& progress;
};

// Nine digits: easy to retype, and exact in every JSON reader (doubles hold
// integers up to 2^53 only).
std::uint64_t clock_seed() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  return static_cast<std::uint64_t>(ns) % 1'000'000'000ull;
}

// Refuse up front what would only end in the OOM killer or swap after minutes.
void check_memory(const RunArgs& args) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;
  const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
  const double needed = static_cast<double>(planned_bytes(args));
  if (needed > physical) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "this run needs %.1f GiB of host memory (inputs and outputs of %d ranks%s), "
                  "more than the machine's %.1f GiB",
                  needed / (1 << 30), args.world_size, args.check ? " and --check references" : "",
                  physical / (1 << 30));
    throw UsageError(std::string("-m/-n/-k/--world-size: ") + buf);
  }
}

std::vector<Row> rows_for(AlgoChoice choice) {
  switch (choice) {
    case AlgoChoice::all:
      return {{Algorithm::native}, {Algorithm::pipelined}, {Algorithm::decomposed}};
    case AlgoChoice::automatic:
      return {{std::nullopt, true}, {Algorithm::decomposed}};
    case AlgoChoice::native:
      return {{Algorithm::native, true}, {Algorithm::decomposed}};
    case AlgoChoice::pipelined:
      return {{Algorithm::pipelined, true}, {Algorithm::decomposed}};
    case AlgoChoice::decomposed:
      return {{Algorithm::decomposed, true}};
  }
  return {};
}

Options options_for(const RunArgs& args, const Row& row, Trace* trace = nullptr) {
  Options options;
  options.algorithm = row.forced;
  options.wait_timeout_ms = args.timeout_ms;
  options.trace = trace;
  return options;
}

RunInfo plan_on_rank0(Session& s, const Options& options) {
  RankData& d = s.ranks.front();
  return plan_fused_all_gather_matmul(s.backend.comm(0), d.a_shard, d.b, d.c, &d.gathered, options);
}

RunInfo call(Comm& comm, RankData& d, const Options& options) {
  return fused_all_gather_matmul(comm, d.a_shard, d.b, d.c, &d.gathered, options);
}

// Error::what() leads with "asynctp <code>: "; inside a table cell that is noise.
std::string reason_of(const Error& e) { return e.detail(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string status_prefix(const AlgorithmResult& result) {
  // Appending (not "[" + ...) sidesteps a GCC 12 -Wrestrict false positive.
  std::string prefix = "[";
  prefix += to_string(result.algorithm);
  prefix += "] ";
  return prefix;
}

CheckResult check_once(Session& s, const Row& row, const AlgorithmResult& result,
                       const References& references) {
  s.progress.set(status_prefix(result) + "checked call");
  poison_outputs(s.ranks);
  const Options options = options_for(s.args, row);
  s.backend.run(
      [&](Comm& comm) { call(comm, s.ranks[static_cast<std::size_t>(comm.rank())], options); });
  s.progress.set(status_prefix(result) + "comparing with the float64 reference");
  return check_outputs(s.ranks, references);
}

// Warmup, then timed calls. A call's time is the slowest rank's: the
// operation is done only when every rank has its C. Returns what rank 0's
// calls ran, so the auto row can name the algorithm.
RunInfo time_calls(Session& s, const Row& row, AlgorithmResult& result) {
  const int world = s.args.world_size;
  const int total = s.args.warmup + s.args.iters;
  std::vector<std::vector<double>> ms(static_cast<std::size_t>(world),
                                      std::vector<double>(static_cast<std::size_t>(total)));
  const Options options = options_for(s.args, row);
  RunInfo ran;
  s.backend.run([&](Comm& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    std::vector<double>& mine = ms[r];
    for (int i = 0; i < total; ++i) {
      if (r == 0) {
        const bool warm = i < s.args.warmup;
        std::string status =
            status_prefix(result) +
            (warm ? "warmup " + std::to_string(i + 1) + "/" + std::to_string(s.args.warmup)
                  : "iteration " + std::to_string(i - s.args.warmup + 1) + "/" +
                        std::to_string(s.args.iters));
        if (i > 0) {
          char last[48];
          std::snprintf(last, sizeof last, ", last %.1f ms", mine[static_cast<std::size_t>(i - 1)]);
          status += last;
        }
        s.progress.set(status);
      }
      const Clock::time_point begin = Clock::now();
      const RunInfo info = call(comm, s.ranks[r], options);
      mine[static_cast<std::size_t>(i)] =
          std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
      if (r == 0) ran = info;
    }
  });
  for (int i = s.args.warmup; i < total; ++i) {
    double slowest = 0;
    for (const auto& rank_ms : ms) {
      slowest = std::max(slowest, rank_ms[static_cast<std::size_t>(i)]);
    }
    result.iteration_ms.push_back(slowest);
  }
  result.median_ms = median(result.iteration_ms);
  return ran;
}

// One traced call per algorithm, back to back, so the trace shows them in turn.
void write_trace(Session& s, const std::vector<Row>& rows,
                 const std::vector<AlgorithmResult>& results, const std::string& path) {
  s.progress.set("[trace] one traced call per algorithm");
  Trace trace;
  s.backend.run([&](Comm& comm) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (!results[i].available) continue;
      call(comm, s.ranks[static_cast<std::size_t>(comm.rank())],
           options_for(s.args, rows[i], &trace));
    }
  });
  trace.write_chrome_json(path);
}

}  // namespace

int run_command(RunArgs args, const std::string& command_line) {
  if (!args.seed_given) args.seed = clock_seed();
  check_memory(args);

  Progress progress;
  std::unique_ptr<Backend> backend = make_backend(args);
  progress.set("[setup] drawing random inputs for " + std::to_string(args.world_size) + " ranks");
  std::vector<RankData> ranks = allocate_ranks(args);
  parallel_for(args.world_size,
               [&](int r) { fill_inputs(ranks[static_cast<std::size_t>(r)], args.seed, r); });
  Session s{args, *backend, ranks, progress};

  RunReport report;
  report.args = args;
  report.command_line = command_line;
  report.backend = backend->name();
  report.workers_per_rank = backend->gemm_workers_per_rank();

  // What a call with default options would run (ASYNCTP_ALGO or the planner).
  // If ASYNCTP_ALGO forces something this problem cannot run, the forced rows
  // are still worth measuring; only --algo auto depends on that call.
  std::optional<RunInfo> planner;
  try {
    planner = plan_on_rank0(s, options_for(args, Row{}));
    report.planner_algorithm = planner->algorithm;
    report.planner_reason = planner->reason;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported || args.algo == AlgoChoice::automatic) throw;
    report.planner_reason = reason_of(e);
  }

  const std::vector<Row> rows = rows_for(args.algo);
  for (const Row& row : rows) {
    AlgorithmResult result;
    if (row.forced) {
      result.algorithm = *row.forced;
      result.label = to_string(*row.forced);
      result.planner_choice =
          planner && args.algo != AlgoChoice::automatic && *row.forced == planner->algorithm;
    } else {
      result.algorithm = planner->algorithm;
      result.label = std::string("auto -> ") + to_string(planner->algorithm);
      result.planner_choice = true;
    }
    try {
      const RunInfo info = plan_on_rank0(s, options_for(args, row));
      result.tile_m = info.tile_m;
      result.tile_n = info.tile_n;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unsupported || row.requested_alone) throw;
      result.available = false;
      result.reason = reason_of(e);
    }
    report.algorithms.push_back(result);
  }
  // With --algo auto the planner may pick the baseline itself: one row then.
  if (args.algo == AlgoChoice::automatic && planner->algorithm == Algorithm::decomposed) {
    report.algorithms.pop_back();
  }

  std::optional<References> references;
  if (args.check) {
    progress.set("[check] float64 reference GEMMs for " + std::to_string(args.world_size) +
                 " ranks");
    references = compute_references(ranks);
  }

  for (std::size_t i = 0; i < report.algorithms.size(); ++i) {
    AlgorithmResult& result = report.algorithms[i];
    if (!result.available) continue;
    if (references) result.check = check_once(s, rows[i], result, *references);
    const RunInfo ran = time_calls(s, rows[i], result);
    if (!rows[i].forced) {
      result.algorithm = ran.algorithm;
      result.label = std::string("auto -> ") + to_string(ran.algorithm);
    }
  }

  if (args.trace_path) {
    write_trace(s, rows, report.algorithms, *args.trace_path);
    report.trace_written = *args.trace_path;
  }
  progress.finish();

  if (args.json) {
    std::fputs(format_json(report).c_str(), stdout);
    if (report.trace_written) {
      std::fprintf(stderr,
                   "# trace written to %s (open in https://ui.perfetto.dev or "
                   "chrome://tracing)\n",
                   report.trace_written->c_str());
    }
  } else {
    std::fputs(format_table(report).c_str(), stdout);
  }
  std::fflush(stdout);
  return report.checks_ok() ? 0 : 1;
}

}  // namespace asynctp::tool
