#include "measure.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <type_traits>

#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"

namespace asynctp::tool {
namespace {

verify::ProblemShape shape_of(const Args& args) {
  return {args.world_size, args.m_per_rank(), args.n, args.k, args.dtype, args.b_col_major};
}

// fn(std::type_identity<the op's verify problem>): the one place an op's
// type is named, which -Wswitch points to when an op is added.
template <typename Fn>
auto with_problem_type(Op op, Fn&& fn) {
  switch (op) {
    case Op::all_gather_matmul:
      return fn(std::type_identity<verify::AllGatherMatmulProblem>{});
    case Op::matmul_reduce_scatter:
      return fn(std::type_identity<verify::MatmulReduceScatterProblem>{});
  }
  throw std::logic_error("unknown op");
}

}  // namespace

RunInfo enqueue_call(Backend& backend, Comm& comm, Options options) {
  options.stream = backend.stream(comm.rank());
  return backend.problem().call(comm, backend.views(comm.rank()), options);
}

Options options_for(const Args& args, std::optional<Algorithm> algorithm, Trace* trace) {
  Options options;
  options.algorithm = algorithm;
  options.wait_timeout_ms = args.timeout_ms;
  options.trace = trace;
  return options;
}

void settle_seed_and_memory(Args& args) {
  if (!args.seed_given) {
    // From the clock: nine digits, easy to retype and exact in every JSON
    // reader (doubles hold integers up to 2^53 only).
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    args.seed = static_cast<std::uint64_t>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) %
                1'000'000'000ull;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;
  const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
  const auto needed = static_cast<double>(with_problem_type(args.op, [&](auto type) {
    return decltype(type)::type::host_bytes(shape_of(args), args.check);
  }));
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

std::unique_ptr<Problem> make_problem(const Args& args, Progress& progress) {
  progress.set("[setup] drawing random inputs for " + std::to_string(args.world_size) + " ranks");
  return with_problem_type(args.op, [&](auto type) -> std::unique_ptr<Problem> {
    return std::make_unique<typename decltype(type)::type>(shape_of(args), args.seed);
  });
}

void compute_references(Problem& problem, const Args& args, Progress& progress,
                        const std::function<bool(int)>& wanted) {
  if (!args.check) return;
  progress.set("[check] float64 reference GEMMs for " + std::to_string(args.world_size) + " ranks");
  problem.compute_references(wanted);
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
                 Progress& progress, const std::string& label) {
  RunInfo rank0;
  const std::vector<double> ms = backend.time_calls(
      warmup + iters,
      [&](Comm& comm, int) {
        const RunInfo info = enqueue_call(backend, comm, options);
        if (comm.rank() == 0) rank0 = info;
      },
      [&](int i, std::optional<double> last_ms) {
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
      });
  row.iteration_ms.insert(row.iteration_ms.end(), ms.begin() + warmup, ms.end());
  row.median_ms = bench::median(row.iteration_ms);
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
