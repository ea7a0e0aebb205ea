// `asynctp run`: inputs, planner, then per algorithm one checked call and the
// timed calls, an optional trace, and the report.
#include <optional>
#include <vector>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "measure.hpp"

namespace asynctp::tool {
namespace {

// One row of the table: an algorithm forced through Options, or (auto) left
// to the library so that the row measures exactly what a default call runs.
struct Plan {
  std::optional<Algorithm> forced;
  bool requested_alone = false;  // --algo names it: failing to run is an error
};

std::vector<Plan> plans_for(AlgoChoice choice) {
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

// One traced call per algorithm, back to back, so the trace shows them in turn.
void write_trace(const Args& args, Backend& backend, const std::vector<Plan>& plans,
                 const std::vector<Row>& rows) {
  Trace trace;
  backend.run([&](Comm& comm) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (!rows[i].available) continue;
      enqueue_call(backend, comm, options_for(args, plans[i].forced, &trace));
      synchronize(comm);
    }
  });
  trace.write_chrome_json(*args.trace_path);
}

}  // namespace

int run_command(Args args, const std::string& command_line) {
  adopt_launcher(args);
  settle_seed_and_memory(args);
  Progress progress;
  std::unique_ptr<Backend> backend = make_backend(args);
  const std::unique_ptr<Problem> problem = make_problem(args, progress);
  progress.set("[setup] placing the inputs on the " + backend->info.name + " backend");
  backend->place(*problem);
  Report report;
  report.args = args;
  report.command_line = command_line;
  report.backend = backend->info;
  if (backend->info.name != "cpu") report.link = gpu_link_for(args);

  // What a call with default options would run (ASYNCTP_ALGO or the planner).
  // If ASYNCTP_ALGO forces something this problem cannot run, the forced rows
  // are still worth measuring; only --algo auto depends on that call.
  std::optional<RunInfo> planner;
  try {
    planner = plan_call(*backend, options_for(args, std::nullopt));
    report.planner_algorithm = planner->algorithm;
    report.planner_reason = planner->reason;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported || args.algo == AlgoChoice::automatic) throw;
    report.planner_reason = e.detail();
  }

  std::vector<Plan> plans = plans_for(args.algo);
  // With --algo auto the planner may pick the baseline itself: one row then.
  if (args.algo == AlgoChoice::automatic && planner->algorithm == Algorithm::decomposed) {
    plans.pop_back();
  }
  for (const Plan& plan : plans) {
    Row& row = report.rows.emplace_back();
    row.algorithm = plan.forced.value_or(planner ? planner->algorithm : Algorithm::automatic);
    row.label = plan.forced ? to_string(*row.algorithm)
                            : std::string("auto -> ") + to_string(*row.algorithm);
    row.planner_choice = !plan.forced || (planner && args.algo != AlgoChoice::automatic &&
                                          *plan.forced == planner->algorithm);
    plan_row(row, *backend, options_for(args, plan.forced), plan.requested_alone);
  }
  require_a_runnable_row(report.rows, args, *backend);

  compute_references(*problem, args, progress, [&](int r) { return backend->holds(r); });
  for (std::size_t i = 0; i < plans.size(); ++i) {
    Row& row = report.rows[i];
    if (!row.available) continue;
    const Options options = options_for(args, plans[i].forced);
    const std::string label = std::string("[") + to_string(*row.algorithm) + "] ";
    if (args.check) check_row(row, *backend, options, progress, label);
    const RunInfo ran = time_row(row, *backend, options, args.warmup, args.iters, progress, label);
    if (!plans[i].forced) {  // name what rank 0's calls ran
      row.algorithm = ran.algorithm;
      row.label = std::string("auto -> ") + to_string(ran.algorithm);
    }
  }

  if (args.trace_path) {
    progress.set("[trace] one traced call per algorithm");
    write_trace(args, *backend, plans, report.rows);
    report.trace_written = args.trace_path;
  }
  progress.finish();
  return print_report(report, backend->holds(0));
}

}  // namespace asynctp::tool
