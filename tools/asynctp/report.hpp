// What `run` and `bench` measured, and its two renderings: an nccl-tests
// style table ('#' header, units in a second header row, '#' footer) and one
// JSON object. A row is an algorithm's calls, or in `bench` the library GEMM
// baseline; `bench` groups its rows by the link they ran over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "asynctp/options.hpp"
#include "asynctp/verify.hpp"

namespace asynctp::tool {

// Where `run` ran, as its report says it.
struct BackendInfo {
  std::string name;               // "cpu", "cuda", "hip"
  std::string detail;             // "4 GEMM workers per rank"
  std::string timing_rule;        // how one time is made of an iteration's calls
  int gemm_workers_per_rank = 0;  // 0 where the GPU runs the GEMMs
};

// --check of one row, over the ranks this process holds.
using CheckResult = verify::Summary;

struct Row {
  std::string link;                    // bench: the link it ran over; run: ""
  std::string label;                   // "native", "auto -> native", "cublas"
  std::optional<Algorithm> algorithm;  // nullopt: the library GEMM baseline (T_gemm)
  bool available = true;
  std::string reason;  // the planner's reason; why not, when unavailable
  bool planner_choice = false;
  bool measured_choice = false;  // auto's calls ran the measured choice's pick
  std::int64_t tile_m = 0;       // native only
  std::int64_t tile_n = 0;
  std::vector<double> iteration_ms;
  double median_ms = 0;
  double predicted_ms = 0;           // the planner's cost model (RunInfo::predicted_ms); 0: none
  std::vector<double> clock_mhz;     // --clocks: the SM clock after each timed round
  std::optional<CheckResult> check;  // with --check
};

struct Report {
  Args args;  // as measured: the seed drawn, the launcher's world size
  std::string command_line;
  // run: the backend, and its link on a GPU.
  BackendInfo backend;
  LinkChoice link = LinkChoice::pcie;
  // bench: the GPU's name.
  std::string device_name;
  // run: what a call with default options runs, or nullopt and why not
  // (ASYNCTP_ALGO forcing what this problem cannot run).
  std::optional<Algorithm> planner_algorithm;
  std::string planner_reason;
  std::vector<Row> rows;
  std::optional<std::string> trace_written;  // path, once the trace is on disk

  bool checks_ok() const;
};

std::string format_table(const Report& report);
std::string format_json(const Report& report);

}  // namespace asynctp::tool
