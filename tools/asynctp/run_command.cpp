#include "run_command.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "asynctp/trace.hpp"
#include "backend.hpp"
#include "check.hpp"
#include "measure.hpp"
#include "parallel.hpp"
#include "progress.hpp"
#include "rank_data.hpp"
#include "report.hpp"

namespace asynctp::tool {
namespace {

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

// Error::what() leads with "asynctp <code>: "; inside a table cell that is noise.
std::string reason_of(const Error& e) { return e.detail(); }

std::string status_prefix(const AlgorithmResult& result) {
  // Appending (not "[" + ...) sidesteps a GCC 12 -Wrestrict false positive.
  std::string prefix = "[";
  prefix += to_string(result.algorithm);
  prefix += "] ";
  return prefix;
}

CheckResult check_once(Session& s, const Row& row, const AlgorithmResult& result,
                       const References& references) {
  s.progress.set(status_prefix(result) + "checked call, compared with the float64 reference");
  return checked_call(s.backend, s.ranks, options_for(s.args, row), references);
}

// Warmup, then timed calls (the backend's timing rule). Returns what rank 0's
// calls ran, so the auto row can name the algorithm.
RunInfo time_calls(Session& s, const Row& row, AlgorithmResult& result) {
  Timed timed = timed_calls(s.backend, options_for(s.args, row), s.args.warmup, s.args.iters,
                            s.progress, status_prefix(result));
  result.iteration_ms = std::move(timed.iteration_ms);
  result.median_ms = timed.median_ms;
  return timed.rank0;
}

// One traced call per algorithm, back to back, so the trace shows them in turn.
void write_trace(Session& s, const std::vector<Row>& rows,
                 const std::vector<AlgorithmResult>& results, const std::string& path) {
  s.progress.set("[trace] one traced call per algorithm");
  Trace trace;
  s.backend.run([&](Comm& comm) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (!results[i].available) continue;
      enqueue_call(s.backend, comm, options_for(s.args, rows[i], &trace));
      synchronize(comm);
    }
  });
  trace.write_chrome_json(path);
}

}  // namespace

int run_command(RunArgs args, const std::string& command_line) {
  adopt_launcher(args);
  if (!args.seed_given) args.seed = clock_seed();
  check_host_memory(args);

  Progress progress;
  std::unique_ptr<Backend> backend = make_backend(args);
  progress.set("[setup] drawing random inputs for " + std::to_string(args.world_size) + " ranks");
  std::vector<RankData> ranks = allocate_ranks(args);
  parallel_for(args.world_size,
               [&](int r) { fill_inputs(ranks[static_cast<std::size_t>(r)], args.seed, r); });
  progress.set(std::string("[setup] placing the inputs on the ") + backend->name() + " backend");
  backend->place(ranks);
  Session s{args, *backend, ranks, progress};

  RunReport report;
  report.args = args;
  report.command_line = command_line;
  report.backend = backend->name();
  report.backend_description = backend->description();
  report.timing_rule = backend->timing_rule();
  report.workers_per_rank = backend->gemm_workers_per_rank();

  // What a call with default options would run (ASYNCTP_ALGO or the planner).
  // If ASYNCTP_ALGO forces something this problem cannot run, the forced rows
  // are still worth measuring; only --algo auto depends on that call.
  std::optional<RunInfo> planner;
  try {
    planner = plan_on_rank0(s.backend, options_for(args, Row{}));
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
      const RunInfo info = plan_on_rank0(s.backend, options_for(args, row));
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
    references = compute_references(ranks, [&](int r) { return backend->holds(r); });
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

  if (!backend->reports()) return report.checks_ok() ? 0 : 1;  // rank 0's process prints
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
