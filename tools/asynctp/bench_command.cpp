// `asynctp bench` on the CUDA backend: for each link, the per-rank time of
// native, pipelined and decomposed, and T_gemm, one library GEMM (cuBLAS) of
// rank 0's whole GEMM: the figures overlap efficiency is made of.
#include <optional>

#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"
#include "asynctp/verify.hpp"
#include "commands.hpp"

namespace asynctp::tool {
namespace {

constexpr Algorithm kAlgorithms[] = {Algorithm::native, Algorithm::pipelined,
                                     Algorithm::decomposed};

std::string label_of(LinkChoice link, const std::string& what) {
  return std::string("[") + to_string(link) + " " + what + "] ";
}

std::unique_ptr<Backend> backend_for(const Args& args, LinkChoice link) {
  if (link != LinkChoice::nccl) return make_loopback_backend(args);
  if (const std::string why = nccl_unavailable_reason(args.world_size); !why.empty()) {
    throw Error(ErrorCode::backend, "--link nccl: " + why);
  }
  return make_nccl_backend(args);
}

// Every figure of a link is taken under the same clocks: the card slows
// under sustained load, so the algorithms and the GEMM baseline are timed in
// rounds, one iteration of each per round, rather than one after another. On
// a loopback group a round runs the GEMM W times, as one iteration of an
// algorithm runs W ranks' calls.
void measure_link(const Args& all, LinkChoice link, Problem& problem, Progress& progress,
                  std::vector<Row>& rows) {
  Args args = all;
  args.links = {link};
  const std::unique_ptr<Backend> backend = backend_for(args, link);
  progress.set(label_of(link, "setup") + "copying the inputs to the device");
  backend->place(problem);
  std::vector<std::size_t> timed;  // indices: `rows` grows below
  for (Algorithm algorithm : kAlgorithms) {
    Row& row = rows.emplace_back();
    row.link = to_string(link);
    row.label = to_string(algorithm);
    row.algorithm = algorithm;
    // A forced algorithm this problem or device cannot run (native off
    // sm_90, say) is a row that says why, not the end of the benchmark.
    plan_row(row, *backend, options_for(args, algorithm), false);
    if (!row.available) continue;
    if (args.check) {
      check_row(row, *backend, options_for(args, algorithm), progress, label_of(link, row.label));
    }
    timed.push_back(rows.size() - 1);
  }
  require_a_runnable_row(std::span(rows).last(std::size(kAlgorithms)), args, *backend);
  Row& gemm_row = rows.emplace_back();
  gemm_row.link = to_string(link);
  gemm_row.label = "cublas";
  // On rank 0's GPU, beside its B (every op's second input).
  const TensorView device_b = backend->views(0).inputs.at(1).view;
  bench::set_device(device_b.device.index);
  bench::GemmBaseline gemm(problem.gemm_a_blocks(), device_b);
  if (args.check) {
    progress.set(label_of(link, "cublas") + "checked call, compared with the float64 reference");
    gemm_row.check = verify::summarize({gemm.check(problem.gemm_reference())});
  }
  const int gemms_per_round = link == LinkChoice::nccl ? 1 : args.world_size;
  // --clocks: the rows probe through the backend (time_row); the GEMM's
  // probe follows its round's last timed GEMM, on rank 0's GPU with it.
  std::optional<bench::ClockProbe> gemm_clocks;
  if (args.clocks) gemm_clocks.emplace(1);

  // Round 0 is the warmup: each measurement's untimed iterations. A round's
  // measurements are the timed rows, then the GEMM (index timed.size()), in
  // an order that rotates (at_turn).
  const std::size_t measurements = timed.size() + 1;
  for (int round = 0; round <= args.iters; ++round) {
    const bool warmup = round == 0;
    const std::string of =
        warmup ? "" : "round " + std::to_string(round) + "/" + std::to_string(args.iters) + " ";
    for (std::size_t turn = 0; turn < measurements; ++turn) {
      const std::size_t which = at_turn(round, turn, measurements);
      if (which < timed.size()) {
        Row& row = rows[timed[which]];
        time_row(row, *backend, options_for(args, row.algorithm), warmup ? args.warmup : kLeadCalls,
                 warmup ? 0 : 1, progress, label_of(link, row.label) + of,
                 args.clocks);
        continue;
      }
      progress.set(label_of(link, "cublas") + (warmup ? "warmup" : of));
      const int count = (warmup ? args.warmup : 1) * gemms_per_round;
      const bool probed = gemm_clocks && !warmup;
      const std::vector<double> ms = gemm.time(count, [&](void* stream, int i) {
        if (probed && i == count - 1) gemm_clocks->record(stream, 0);
      });
      if (!warmup) gemm_row.iteration_ms.insert(gemm_row.iteration_ms.end(), ms.begin(), ms.end());
      if (probed) gemm_row.clock_mhz.push_back(gemm_clocks->read().front());
    }
  }
  gemm_row.median_ms = bench::median(gemm_row.iteration_ms);
}

}  // namespace

int bench_command(Args args, const std::string& command_line) {
  if (const std::string why = gpu_unavailable_reason(args.device_or_default()); !why.empty()) {
    throw Error(ErrorCode::backend, "needs a usable CUDA GPU at --device " +
                                        std::to_string(args.device_or_default()) + ": " + why);
  }
  settle_seed_and_memory(args);
  Progress progress;
  const std::unique_ptr<Problem> problem = make_problem(args, progress);
  compute_references(*problem, args, progress);
  Report report;
  report.args = args;
  report.command_line = command_line;
  for (LinkChoice link : args.links) {
    measure_link(args, link, *problem, progress, report.rows);
  }
  report.device_name = bench::device_name(args.device_or_default());
  progress.finish();
  return print_report(report, true);
}

}  // namespace asynctp::tool
