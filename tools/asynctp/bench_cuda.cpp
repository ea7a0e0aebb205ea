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
#include "cuda_backend.hpp"
#include "cuda_entry.hpp"
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

std::string label_of(LinkChoice link, const char* what) {
  std::string label = "[";
  label += to_string(link);
  label += " ";
  label += what;
  label += "] ";
  return label;
}

BenchAlgorithm measure_algorithm(Bench& b, Backend& backend, LinkChoice link, Algorithm algorithm) {
  BenchAlgorithm out;
  out.algorithm = algorithm;
  Options options;
  options.algorithm = algorithm;
  options.wait_timeout_ms = b.args.timeout_ms;
  try {
    out.reason = plan_on_rank0(backend, options).reason;
  } catch (const Error& e) {
    // A forced algorithm this problem or device cannot run (native off
    // sm_90, say) is a row that says why, not the end of the benchmark.
    if (e.code() != ErrorCode::unsupported) throw;
    out.available = false;
    out.reason = e.detail();
    return out;
  }
  const std::string label = label_of(link, to_string(algorithm));
  if (b.references) {
    b.progress.set(label + "checked call, compared with the float64 reference");
    out.timing.check = checked_call(backend, b.host, options, *b.references);
  }
  Timed timed = timed_calls(backend, options, b.args.warmup, b.args.iters, b.progress, label);
  out.timing.iteration_ms = std::move(timed.iteration_ms);
  out.timing.median_ms = timed.median_ms;
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

// T_gemm: the gathered A (all shards, in rank order) times rank 0's B, on a
// stream of its own, one event pair per GEMM.
BenchTiming measure_gemm(Bench& b, Backend& backend, LinkChoice link) {
  const std::string label = label_of(link, "cublas");
  const TensorView device_b = backend.views(0).b;
  const TensorView& host_c = b.host.front().c;  // staging for the check
  const std::int64_t rows = b.args.m_global;
  const std::int64_t k = b.args.k;
  const std::size_t shard_bytes = static_cast<std::size_t>(b.args.m_per_rank() * k) * 2;

  AlignedBuffer host_a(shard_bytes * b.host.size());
  for (std::size_t r = 0; r < b.host.size(); ++r) {
    std::memcpy(static_cast<char*>(host_a.data()) + r * shard_bytes, b.host[r].a_shard.data,
                shard_bytes);
  }
  Stream stream;
  DeviceBuffer a(host_a.size(), "the cuBLAS baseline's gathered A");
  DeviceBuffer c(static_cast<std::size_t>(rows * b.args.n) * 2, "the cuBLAS baseline's C");
  a.upload(host_a.data(), stream.get(), "the cuBLAS baseline's gathered A");
  const Device device = device_b.device;  // rank 0's GPU
  cuda_check(cudaSetDevice(device.index), "cudaSetDevice(rank 0's GPU)");
  const TensorView device_a = TensorView::row_major(a.data(), DType::bf16, rows, k, device);
  const TensorView device_c = TensorView::row_major(c.data(), DType::bf16, rows, b.args.n, device);
  // The library's own cuBLAS path: the GEMM that decomposed runs.
  cuda::CublasGemm gemm;

  BenchTiming out;
  if (b.references) {
    b.progress.set(label + "checked call, compared with the float64 reference");
    core::poison(host_c);
    c.upload(host_c.data, stream.get(), "the poisoned C");
    gemm.run(stream.get(), device_a.data, rows, device_b, device_c.data);
    c.download(host_c.data, stream.get(), "the cuBLAS baseline's C");
    cuda_check(cudaStreamSynchronize(stream.get()), "the checked cuBLAS GEMM");
    out.check = check_gemm(host_c, b.references->front());
  }

  const int total = b.args.warmup + b.args.iters;
  std::vector<Event> begin(static_cast<std::size_t>(total));
  std::vector<Event> end(static_cast<std::size_t>(total));
  b.progress.set(label + std::to_string(total) + " GEMMs");
  for (std::size_t i = 0; i < begin.size(); ++i) {
    begin[i].record(stream.get());
    gemm.run(stream.get(), device_a.data, rows, device_b, device_c.data);
    end[i].record(stream.get());
  }
  cuda_check(cudaStreamSynchronize(stream.get()), "the timed cuBLAS GEMMs");
  for (std::size_t i = static_cast<std::size_t>(b.args.warmup); i < begin.size(); ++i) {
    out.iteration_ms.push_back(end[i].ms_since(begin[i]));
  }
  out.median_ms = median(out.iteration_ms);
  return out;
}

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
    backend = std::make_unique<CudaBackend>(run);
  }
  b.progress.set(label_of(link, "setup") + "copying the inputs to the device");
  backend->place(b.host);
  for (Algorithm algorithm : kAlgorithms) {
    out.algorithms.push_back(measure_algorithm(b, *backend, link, algorithm));
  }
  out.gemm = measure_gemm(b, *backend, link);
  return out;
}

}  // namespace

namespace cuda_entry {

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
    cuda_check(cudaGetDeviceProperties(&props, args.device), "cudaGetDeviceProperties");
    report.device_name = props.name;
  }
  progress.finish();
  std::fputs((args.json ? format_bench_json(report) : format_bench_table(report)).c_str(), stdout);
  std::fflush(stdout);
  return report.checks_ok() ? 0 : 1;
}

}  // namespace cuda_entry

}  // namespace asynctp::tool
