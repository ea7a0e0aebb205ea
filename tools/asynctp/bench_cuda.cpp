// `asynctp bench` on the CUDA backend: for each link model, the per-rank
// time of native, pipelined and decomposed on a serialized loopback group,
// and T_gemm, one cuBLAS GEMM of the whole gathered problem.
#include <cstdio>
#include <cstring>
#include <optional>

#include "asynctp/cuda.hpp"
#include "asynctp/error.hpp"
#include "bench_report.hpp"
#include "core/reference.hpp"
#include "cuda/cublas_gemm.hpp"
#include "gpu_entry.hpp"
#include "loopback_backend.hpp"
#include "measure.hpp"
#include "nccl_entry.hpp"
#include "parallel.hpp"
#include "progress.hpp"

namespace asynctp::tool {
namespace {

constexpr Algorithm kAlgorithms[] = {Algorithm::native, Algorithm::pipelined,
                                     Algorithm::decomposed};

struct Bench {
  const BenchArgs& args;
  std::vector<RankData>& host;
  const std::optional<References>& references;
  Progress& progress;
};

Options options_for(const Bench& b, Algorithm algorithm) {
  Options options;
  options.algorithm = algorithm;
  options.wait_timeout_ms = b.args.timeout_ms;
  return options;
}

std::string label_of(LinkChoice link, const char* what) {
  std::string label = "[";
  label += to_string(link);
  label += " ";
  label += what;
  label += "] ";
  return label;
}

// An algorithm's row before timing: whether it runs here, the planner's
// reason, and (with --check) one call compared with the float64 reference.
BenchAlgorithm prepare_algorithm(Bench& b, Backend& backend, LinkChoice link, Algorithm algorithm) {
  BenchAlgorithm out;
  out.algorithm = algorithm;
  try {
    out.reason = plan_on_rank0(backend, options_for(b, algorithm)).reason;
  } catch (const Error& e) {
    // A forced algorithm this problem or device cannot run (native off
    // sm_90, say) is a row that says why, not the end of the benchmark.
    if (e.code() != ErrorCode::unsupported) throw;
    out.available = false;
    out.reason = e.detail();
    return out;
  }
  if (b.references) {
    b.progress.set(label_of(link, to_string(algorithm)) +
                   "checked call, compared with the float64 reference");
    out.timing.check = checked_call(backend, b.host, options_for(b, algorithm), *b.references);
  }
  return out;
}

// Rank 0's C against its reference, in the shape of the run's checks.
CheckResult check_gemm(const TensorView& host_c, const std::vector<double>& reference) {
  const core::Comparison c = core::compare_to_reference(host_c, reference);
  CheckResult out;
  out.tolerance = core::error_tolerance(host_c.dtype);
  out.max_rel_error = c.relative_frobenius_error;
  out.ok = c.ok(out.tolerance);
  if (!out.ok) {
    char why[160];
    std::snprintf(why, sizeof why,
                  "C: %lld elements never written, %lld not finite, rel. error %.3g (tolerance "
                  "%.3g)",
                  static_cast<long long>(c.unwritten), static_cast<long long>(c.non_finite),
                  c.relative_frobenius_error, out.tolerance);
    out.failures.push_back(why);
  }
  return out;
}

// T_gemm: the gathered A (all shards, in rank order) times rank 0's B with
// the library's own cuBLAS path (the GEMM decomposed runs), on a stream of
// its own, one event pair per GEMM.
class GemmBaseline {
 public:
  GemmBaseline(Bench& b, Backend& backend)
      : b_(b),
        device_b_(backend.views(0).b),
        a_(static_cast<std::size_t>(b.args.m_global * b.args.k) * 2,
           "the cuBLAS baseline's gathered A"),
        c_(static_cast<std::size_t>(b.args.m_global * b.args.n) * 2, "the cuBLAS baseline's C") {
    const std::size_t shard_bytes = static_cast<std::size_t>(b.args.m_per_rank() * b.args.k) * 2;
    AlignedBuffer host_a(shard_bytes * b.host.size());
    for (std::size_t r = 0; r < b.host.size(); ++r) {
      std::memcpy(static_cast<char*>(host_a.data()) + r * shard_bytes, b.host[r].a_shard.data,
                  shard_bytes);
    }
    device_check(cudaSetDevice(device_b_.device.index), "cudaSetDevice(rank 0's GPU)");
    a_.upload(host_a.data(), stream_.get(), "the cuBLAS baseline's gathered A");
    device_check(cudaStreamSynchronize(stream_.get()), "the cuBLAS baseline's upload");
  }

  CheckResult check() {
    const TensorView& host_c = b_.host.front().c;  // staging for the check
    core::poison(host_c);
    c_.upload(host_c.data, stream_.get(), "the poisoned C");
    run();
    c_.download(host_c.data, stream_.get(), "the cuBLAS baseline's C");
    device_check(cudaStreamSynchronize(stream_.get()), "the checked cuBLAS GEMM");
    return check_gemm(host_c, b_.references->front());
  }

  // `count` GEMMs back to back; the time of each.
  std::vector<double> time(int count) {
    std::vector<Event> begin(static_cast<std::size_t>(count));
    std::vector<Event> end(static_cast<std::size_t>(count));
    for (std::size_t i = 0; i < begin.size(); ++i) {
      begin[i].record(stream_.get());
      run();
      end[i].record(stream_.get());
    }
    device_check(cudaStreamSynchronize(stream_.get()), "the timed cuBLAS GEMMs");
    std::vector<double> ms;
    for (std::size_t i = 0; i < begin.size(); ++i) ms.push_back(end[i].ms_since(begin[i]));
    return ms;
  }

 private:
  void run() { gemm_.run(stream_.get(), a_.data(), b_.args.m_global, device_b_, c_.data()); }

  Bench& b_;
  const TensorView device_b_;
  Stream stream_;
  DeviceBuffer a_;
  DeviceBuffer c_;
  cuda::CublasGemm gemm_;
};

// Every figure of a link is taken under the same clocks: the card slows
// under sustained load (bench/NOTES.md, v7), so the algorithms and the cuBLAS
// baseline are timed in rounds, one iteration of each per round, rather than
// one after another. On a loopback group a round runs the GEMM W times, as
// one iteration of an algorithm runs W ranks' calls.
BenchLink measure_link(Bench& b, LinkChoice link) {
  BenchLink out;
  out.link = link;
  out.link_gbps = link == LinkChoice::arrival ? b.args.link_gbps : 0;
  const RunArgs run = b.args.run_args(link);
  std::unique_ptr<Backend> backend;
  if (link == LinkChoice::nccl) {
    if (const std::string why = nccl_entry::unavailable_reason(run.world_size); !why.empty()) {
      throw Error(ErrorCode::backend, "--link nccl: " + why);
    }
    backend = nccl_entry::make_backend(run);
  } else {
    backend = std::make_unique<LoopbackBackend>(run);
  }
  b.progress.set(label_of(link, "setup") + "copying the inputs to the device");
  backend->place(b.host);
  for (Algorithm algorithm : kAlgorithms) {
    out.algorithms.push_back(prepare_algorithm(b, *backend, link, algorithm));
  }
  GemmBaseline gemm(b, *backend);
  if (b.references) {
    b.progress.set(label_of(link, "cublas") + "checked call, compared with the float64 reference");
    out.gemm.check = gemm.check();
  }
  const int gemms_per_round = link == LinkChoice::nccl ? 1 : b.args.world_size;

  for (BenchAlgorithm& row : out.algorithms) {
    if (!row.available) continue;
    timed_calls(*backend, options_for(b, row.algorithm), b.args.warmup, 0, b.progress,
                label_of(link, to_string(row.algorithm)));
  }
  b.progress.set(label_of(link, "cublas") + "warmup");
  gemm.time(b.args.warmup * gemms_per_round);

  for (int round = 0; round < b.args.iters; ++round) {
    const std::string of =
        "round " + std::to_string(round + 1) + "/" + std::to_string(b.args.iters) + " ";
    for (BenchAlgorithm& row : out.algorithms) {
      if (!row.available) continue;
      const Timed timed = timed_calls(*backend, options_for(b, row.algorithm), 0, 1, b.progress,
                                      label_of(link, to_string(row.algorithm)) + of);
      row.timing.iteration_ms.push_back(timed.iteration_ms.front());
    }
    b.progress.set(label_of(link, "cublas") + of);
    for (double ms : gemm.time(gemms_per_round)) out.gemm.iteration_ms.push_back(ms);
  }
  for (BenchAlgorithm& row : out.algorithms) {
    if (row.available) row.timing.median_ms = median(row.timing.iteration_ms);
  }
  out.gemm.median_ms = median(out.gemm.iteration_ms);
  return out;
}

}  // namespace

namespace gpu_entry {

int bench(BenchArgs args, const std::string& command_line) {
  if (const std::string why = cuda::unavailable_reason(args.device); !why.empty()) {
    throw Error(ErrorCode::backend,
                "needs a usable CUDA GPU at --device " + std::to_string(args.device) + ": " + why);
  }
  if (!args.seed_given) args.seed = clock_seed();
  const RunArgs shape = args.run_args(args.links.front());
  check_host_memory(shape);

  Progress progress;
  progress.set("[setup] drawing random inputs for " + std::to_string(args.world_size) + " ranks");
  std::vector<RankData> host = allocate_ranks(shape);
  parallel_for(args.world_size,
               [&](int r) { fill_inputs(host[static_cast<std::size_t>(r)], args.seed, r); });
  std::optional<References> references;
  if (args.check) {
    progress.set("[check] float64 reference GEMMs for " + std::to_string(args.world_size) +
                 " ranks");
    references = compute_references(host);
  }

  BenchReport report;
  report.args = args;
  report.command_line = command_line;
  Bench b{args, host, references, progress};
  for (LinkChoice link : args.links) {
    report.links.push_back(measure_link(b, link));
  }
  {
    cudaDeviceProp props{};
    device_check(cudaGetDeviceProperties(&props, args.device), "cudaGetDeviceProperties");
    report.device_name = props.name;
  }
  progress.finish();
  std::fputs((args.json ? format_bench_json(report) : format_bench_table(report)).c_str(), stdout);
  std::fflush(stdout);
  return report.checks_ok() ? 0 : 1;
}

}  // namespace gpu_entry

}  // namespace asynctp::tool
