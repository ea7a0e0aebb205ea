// What `asynctp run` measured, and its two renderings: an nccl-tests style
// table ('#' header, units in a second header row, footer) and one JSON object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "check.hpp"
#include "cli_args.hpp"

namespace asynctp::tool {

struct AlgorithmResult {
  std::string label;                            // "native", or "auto -> native" for --algo auto
  Algorithm algorithm = Algorithm::decomposed;  // what ran (or would have)
  bool available = true;
  std::string reason;       // why not, when unavailable
  std::int64_t tile_m = 0;  // native only
  std::int64_t tile_n = 0;
  std::vector<double> iteration_ms;  // per iteration: the slowest rank's call
  double median_ms = 0;
  bool planner_choice = false;
  std::optional<CheckResult> check;  // set with --check
};

struct RunReport {
  RunArgs args;
  std::string command_line;
  std::string backend;
  std::string backend_description;  // Backend::description(), for the header
  std::string timing_rule;          // Backend::timing_rule()
  int workers_per_rank = 0;         // 0 on GPU backends
  // What a call with default options runs; nullopt when that call would fail
  // (ASYNCTP_ALGO forcing an algorithm this problem cannot run): the reason
  // then says why.
  std::optional<Algorithm> planner_algorithm;
  std::string planner_reason;
  std::vector<AlgorithmResult> algorithms;
  std::optional<std::string> trace_written;  // path, once the trace is on disk

  // 2*M*N*K per rank per call over the median time.
  double tflops_per_rank(const AlgorithmResult& result) const;
  // Decomposed's median over this one's; nullopt without a decomposed row.
  std::optional<double> speedup_vs_decomposed(const AlgorithmResult& result) const;
  bool checks_ok() const;
};

std::string format_table(const RunReport& report);
std::string format_json(const RunReport& report);

}  // namespace asynctp::tool
