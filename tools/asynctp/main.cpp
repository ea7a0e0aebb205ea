// asynctp: subcommand dispatch and the mapping of failures to exit statuses
// (0 success, 1 library error, missing GPU or failed check, 2 bad usage), so
// scripts can tell a typo from a wrong result; then `asynctp run` (inputs,
// planner, per algorithm one checked call and the timed calls, an optional
// trace, the report) and the steps of a row that `run` and `bench` share.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "commands.hpp"

namespace {

using namespace asynctp::tool;

int usage_error(const std::string& context, const std::string& message, const std::string& help) {
  std::fprintf(stderr, "%s: %s\nTry '%s'.\n", context.c_str(), message.c_str(), help.c_str());
  return 2;
}

// The command as the report's header repeats it, quoted where a shell would need it.
std::string join(int argc, char** argv) {
  std::string out = "asynctp";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    const bool plain = !word.empty() && word.find_first_of(" \t'\"$\\") == std::string::npos;
    out += " " + (plain ? word : "'" + word + "'");
  }
  return out;
}

int subcommand_main(Command command, int argc, char** argv) {
  const std::string name = std::string("asynctp ") + to_string(command);
  try {
    const Args args = parse_args(command, std::vector<std::string>(argv + 2, argv + argc));
    if (args.help) {
      std::fputs(help_of(command).c_str(), stdout);
      return 0;
    }
    return command == Command::run ? run_command(args, join(argc, argv))
                                   : bench_command(args, join(argc, argv));
  } catch (const UsageError& e) {
    return usage_error(name, e.what(), name + " --help");
  } catch (const asynctp::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", name.c_str(), e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "%s: out of memory allocating the buffers; try smaller -m/-n/-k or --world-size\n",
                 name.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", name.c_str(), e.what());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc < 2 ? "" : argv[1];
  if (command == "run") return subcommand_main(Command::run, argc, argv);
  if (command == "bench") return subcommand_main(Command::bench, argc, argv);
  if (command == "--version") {
    const std::string gpu = gpu_runtime();
    std::printf("asynctp %s\nGPU backend: %s\n", kVersion, gpu.empty() ? "none" : gpu.c_str());
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help" || argc < 2) {
    std::fputs(main_help().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;  // no command at all is bad usage
  }
  return usage_error("asynctp", "unknown command '" + command + "' (the commands are: run, bench)",
                     "asynctp --help");
}

namespace asynctp::tool {
namespace {

// One row of the table: an algorithm forced through Options, or (auto) left
// to the library so that the row measures exactly what a default call runs.
struct Plan {
  std::optional<Algorithm> forced;
  bool requested_alone = false;  // --algo names it: failing to run is an error
};

std::vector<Plan> plans_for(AlgoChoice choice, bool tune_flag) {
  switch (choice) {
    case AlgoChoice::all:
      // With --tune, auto's calls may run any of them: its row is measured too.
      if (tune_flag) {
        return {{Algorithm::native}, {Algorithm::pipelined}, {Algorithm::decomposed}, {}};
      }
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

  std::vector<Plan> plans = plans_for(args.algo, args.tune);
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
  std::vector<std::string> labels;
  for (const Row& row : report.rows) {
    labels.push_back(std::string("[") + to_string(*row.algorithm) + "] ");
  }
  if (args.check) {
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (!report.rows[i].available) continue;
      check_row(report.rows[i], *backend, options_for(args, plans[i].forced), progress, labels[i]);
    }
  }
  // Round 0 is every row's warmup, then each round times one call of every
  // row in turn: a GPU's clocks move with its load over a run, and rows
  // timed one after another would each see different clocks. The timed
  // rounds rotate the rows' order (at_turn).
  for (int round = 0; round <= args.iters; ++round) {
    const bool warmup = round == 0;
    const std::string of =
        warmup ? "" : "round " + std::to_string(round) + "/" + std::to_string(args.iters) + " ";
    for (std::size_t turn = 0; turn < plans.size(); ++turn) {
      const std::size_t i = at_turn(round, turn, plans.size());
      Row& row = report.rows[i];
      if (!row.available) continue;
      const Options options = options_for(args, plans[i].forced);
      // Under the measured choice auto's first calls measure: its timed
      // calls come after them, and after the call that chooses.
      const int row_warmup = !plans[i].forced && measured_choice_on(options)
                                 ? std::max(args.warmup, kMaxTuningCalls + 1)
                                 : args.warmup;
      const RunInfo ran = time_row(row, *backend, options, warmup ? row_warmup : kLeadCalls,
                                   warmup ? 0 : 1, progress, labels[i] + of,
                                   args.clocks);
      if (!plans[i].forced) {  // name what rank 0's calls ran, and why
        row.algorithm = ran.algorithm;
        row.label = std::string("auto -> ") + to_string(ran.algorithm);
        row.reason = ran.reason;
        row.measured_choice = ran.reason.rfind("measured choice: ", 0) == 0;
        if (row.measured_choice) row.planner_choice = false;
      }
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

// ---- The steps of a row, `run`'s and `bench`'s.

RunInfo enqueue_call(Backend& backend, Comm& comm, Options options) {
  options.stream = backend.stream(comm.rank());
  return backend.problem().call(comm, backend.views(comm.rank()), options);
}

Options options_for(const Args& args, std::optional<Algorithm> algorithm, Trace* trace) {
  Options options;
  options.algorithm = algorithm;
  if (args.tune) options.tune = true;
  options.wait_timeout_ms = args.timeout_ms;
  options.trace = trace;
  return options;
}

RunInfo plan_call(Backend& backend, const Options& options) {
  int rank = 0;
  while (!backend.holds(rank)) ++rank;
  return backend.problem().plan(backend.comm(rank), backend.views(rank), options);
}

void plan_row(Row& row, Backend& backend, const Options& options, bool must_run) {
  try {
    const RunInfo info = plan_call(backend, options);
    row.tile_m = info.tile_m;
    row.tile_n = info.tile_n;
    row.reason = info.reason;
    row.predicted_ms = info.predicted_ms;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unsupported || must_run) throw;
    row.available = false;
    row.reason = e.detail();  // what() leads with "asynctp <code>: ", noise in a cell
  }
}

void require_a_runnable_row(std::span<const Row> rows, const Args& args, const Backend& backend) {
  if (std::any_of(rows.begin(), rows.end(), [](const Row& row) { return row.available; })) return;
  throw Error(ErrorCode::unsupported,
              std::string("--op ") + to_string(args.op) + ": the " + backend.info.name +
                  " backend runs no algorithm of it: " + (rows.empty() ? "" : rows.back().reason));
}

void check_row(Row& row, Backend& backend, const Options& options, Progress& progress,
               const std::string& label) {
  progress.set(label + "checked call, compared with the float64 reference");
  backend.poison_outputs();
  backend.run([&](Comm& comm) {
    enqueue_call(backend, comm, options);
    synchronize(comm);
  });
  backend.fetch_outputs();
  row.check = verify::summarize(backend.problem().check());
}

RunInfo time_row(Row& row, Backend& backend, const Options& options, int warmup, int iters,
                 Progress& progress, const std::string& label, bool clocks) {
  RunInfo rank0;
  const int total = warmup + iters;
  int last_rank = backend.world_size() - 1;
  while (!backend.holds(last_rank)) --last_rank;
  const bool probed = clocks && iters > 0;
  const RankCall call = [&](Comm& comm, int i) {
    const RunInfo info = enqueue_call(backend, comm, options);
    if (comm.rank() == 0) rank0 = info;
    if (probed && comm.rank() == last_rank && i == total - 1) backend.probe_clock(last_rank);
  };
  const BeforeIteration before = [&](int i, std::optional<double> last_ms) {
    std::string status = label;
    status += i < warmup
                  ? "warmup " + std::to_string(i + 1) + "/" + std::to_string(warmup)
                  : "iteration " + std::to_string(i - warmup + 1) + "/" + std::to_string(iters);
    if (last_ms) {
      char last[48];
      std::snprintf(last, sizeof last, ", last %.1f ms", *last_ms);
      status += last;
    }
    progress.set(status);
  };
  // The group's rule times every rank (asynctp/group.hpp); under a launcher
  // the backend times this process's rank.
  std::vector<double> ms;
  if (RankGroup* group = backend.group()) {
    std::vector<void*> streams;
    for (int r = 0; r < backend.world_size(); ++r) streams.push_back(backend.stream(r));
    ms = group->time_calls(total, call, before, streams);
  } else {
    ms = backend.time_rank_calls(total, call, before);
  }
  row.iteration_ms.insert(row.iteration_ms.end(), ms.begin() + warmup, ms.end());
  row.median_ms = bench::median(row.iteration_ms);
  if (probed) row.clock_mhz.push_back(backend.read_clock());
  return rank0;
}

int print_report(const Report& report, bool reports) {
  if (reports) {
    const bool json = report.args.json;
    std::fputs((json ? format_json(report) : format_table(report)).c_str(), stdout);
    std::fflush(stdout);
    if (json && report.trace_written) {  // the table says it in its footer
      std::fprintf(stderr,
                   "# trace written to %s (open in https://ui.perfetto.dev or chrome://tracing)\n",
                   report.trace_written->c_str());
    }
  }
  return report.checks_ok() ? 0 : 1;
}

}  // namespace asynctp::tool
