// The two subcommands and the steps they share, written once against the
// Backend interface and for any op: the problem (problem_setup.cpp), a row's
// plan, checked call and timed calls, the printed report (main.cpp).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "asynctp/trace.hpp"
#include "backend.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "round_order.hpp"

namespace asynctp::tool {

// Each returns the exit status (1 when a check failed) and throws UsageError
// for input this machine cannot take, asynctp::Error from the library.
int run_command(Args args, const std::string& command_line);
int bench_command(Args args, const std::string& command_line);

// Draws the seed when --seed is not given, then refuses (UsageError naming
// the flags) a run whose host tensors and --check references would not fit
// in the machine's memory: better than the OOM killer or swap after minutes.
void settle_seed_and_memory(Args& args);

// The op's tensors on every rank, the inputs drawn from args.seed; with
// --check, the references of the ranks `wanted` accepts.
std::unique_ptr<Problem> make_problem(const Args& args, Progress& progress);
void compute_references(Problem& problem, const Args& args, Progress& progress,
                        const std::function<bool(int)>& wanted = {});

// A call's options: the algorithm forced (nullopt: the library's choice),
// --timeout-ms, a trace to record into.
Options options_for(const Args& args, std::optional<Algorithm> algorithm, Trace* trace = nullptr);

// What a call of the placed problem would run on this process's first rank
// (runs nothing), and rank comm.rank()'s call enqueued on its tensors and
// stream.
RunInfo plan_call(Backend& backend, const Options& options);
RunInfo enqueue_call(Backend& backend, Comm& comm, Options options);

// Untimed calls of a row ahead of each of its timed calls after the
// warmup, so that the timed call runs back to back behind one, as a
// model's calls do (on an idle GPU its span would hold the host's enqueue).
inline constexpr int kLeadCalls = 1;

// What the planner says of `row`'s call: its tiles and reason. One this
// problem cannot run makes the row unavailable, or with `must_run` an error.
void plan_row(Row& row, Backend& backend, const Options& options, bool must_run);
// Throws Error(unsupported) naming --op, the backend and its reason when no
// row is available: a backend that refuses the op leaves nothing to measure.
void require_a_runnable_row(std::span<const Row> rows, const Args& args, const Backend& backend);
// One call on poisoned outputs, compared with the placed problem's references.
void check_row(Row& row, Backend& backend, const Options& options, Progress& progress,
               const std::string& label);
// `warmup` untimed then `iters` timed calls (the group's rule,
// RankGroup::time_calls; under a launcher Backend::time_rank_calls) into the
// row's times, with progress lines prefixed by `label`; returns what rank 0's
// calls ran. With `clocks` (and iters > 0) a probe of the SM clock follows
// the last held rank's last call, when nothing timed runs beside it
// (Backend::probe_clock), into row.clock_mhz.
RunInfo time_row(Row& row, Backend& backend, const Options& options, int warmup, int iters,
                 Progress& progress, const std::string& label, bool clocks = false);

// Prints the table or JSON (where this process reports); the exit status.
int print_report(const Report& report, bool reports);

}  // namespace asynctp::tool
