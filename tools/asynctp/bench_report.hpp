// What `asynctp bench` measured, the overlap figures derived from it, and
// its two renderings (an nccl-tests style table and one JSON object).
//
// Per link: T_fused for native and pipelined, T_decomposed, and T_gemm (one
// cuBLAS GEMM of the whole gathered problem). The all-gather's own time is
// not measured alone: T_comm = T_decomposed - T_gemm, since decomposed is the
// all-gather followed by that GEMM with no overlap.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "bench_args.hpp"
#include "check.hpp"

namespace asynctp::tool {

struct BenchTiming {
  std::vector<double> iteration_ms;  // after warmup
  double median_ms = 0;
  std::optional<CheckResult> check;  // with --check
};

struct BenchAlgorithm {
  Algorithm algorithm = Algorithm::decomposed;
  bool available = true;
  std::string reason;  // the planner's reason (why not, when unavailable)
  BenchTiming timing;
};

struct BenchLink {
  LinkChoice link = LinkChoice::pcie;
  double link_gbps = 0;                    // arrival only
  std::vector<BenchAlgorithm> algorithms;  // native, pipelined, decomposed
  BenchTiming gemm;                        // cuBLAS, whole gathered problem

  const BenchAlgorithm* find(Algorithm algorithm) const;
  // T_decomposed - T_gemm; nullopt without a decomposed time. May come out
  // <= 0 when the all-gather hides in the noise: the efficiency is then
  // undefined (nullopt) rather than a division by ~0.
  std::optional<double> t_comm_ms() const;
  // max(T_comm, T_gemm): the time of perfect overlap.
  std::optional<double> ideal_ms() const;
  // (T_comm + T_gemm - t) / min(T_comm, T_gemm); 1 = perfect overlap.
  std::optional<double> overlap_efficiency(double t_ms) const;
  std::optional<double> ideal_over(double t_ms) const;
  std::optional<double> speedup_vs_decomposed(double t_ms) const;
};

struct BenchReport {
  BenchArgs args;
  std::string command_line;
  std::string device_name;
  std::vector<BenchLink> links;

  double tflops(double ms) const;  // 2*M*N*K over ms
  bool checks_ok() const;
};

// One line per link model, for the header: what the link means.
std::string describe_link(LinkChoice link, double link_gbps);

std::string format_bench_table(const BenchReport& report);
std::string format_bench_json(const BenchReport& report);

}  // namespace asynctp::tool
