// What the cost model (core/cost_model.hpp) knows of a device: GEMM times
// measured per kernel over a grid of shapes, the loopback link's bandwidth
// and latency, the reduction's bandwidth and each algorithm's fixed cost per
// call. A table is text, one fact a line, measured on the device by
// scripts/device/calibrate.sh (bench/calibrate.cpp) and kept in data/cost/;
// the library embeds those files and picks the one whose device name matches
// the GPU, or reads ASYNCTP_COST_TABLE (a path) instead.
//
// Format (whitespace separated; '#' starts a comment):
//   asynctp-cost-table 1
//   device <name as the runtime reports it, rest of the line>
//   source <how it was measured, rest of the line>
//   sms <processors>
//   link <pcie|arrival|nccl> <GB/s, or - where the transport reports it> <latency us>
//   reduce <GB/s>                  the reduce-scatter's reduction, bytes read + written
//   fixed <all-gather-matmul|matmul-reduce-scatter> <native|pipelined|decomposed>
//         <us per call> <us per chunk>
//   gemm <cublas|native config name> <row|col> <M> <N> <K> <ms>
// Required: the header, device, sms, link pcie, link arrival, reduce, the six
// fixed lines and at least one cublas gemm per B layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "asynctp/options.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"

namespace asynctp::core {

inline constexpr const char* kLibraryGemmKernel = "cublas";

struct GemmSample {
  std::string kernel;  // kLibraryGemmKernel or a native config's name
  Layout b_layout = Layout::row_major;
  std::int64_t m = 0, n = 0, k = 0;
  double ms = 0;  // one GEMM, sustained (back-to-back calls)
};

struct LinkCost {
  double gbps = 0;  // 0: the transport reports it (the arrival model's link_gbps)
  double latency_us = 0;
};

struct FixedCost {
  double per_call_us = 0;
  double per_chunk_us = 0;
};

struct CostTable {
  std::string device;
  std::string source;
  std::string origin;  // where it was read from: an embedded file or a path
  // 'status calibrated': measured in one run on the device it names
  // (scripts/device/calibrate.sh), and trusted to choose the algorithm.
  // 'status seeded': put together from earlier measurements; the planner
  // reports its predictions beside the rules' choice but does not follow it.
  bool calibrated = false;
  int sms = 0;
  std::optional<LinkCost> pcie, arrival, nccl;
  double reduce_gbps = 0;
  // [op][algorithm]: op 0 all-gather + matmul, 1 matmul + reduce-scatter;
  // algorithm 0 native, 1 pipelined, 2 decomposed.
  FixedCost fixed[2][3];
  std::vector<GemmSample> gemms;

  const FixedCost& fixed_cost(OpKind op, Algorithm algorithm) const;
};

// Parses a table; throws Error(invalid_argument) "<origin>: line N: <rule>"
// for a malformed line, or "<origin>: <what is missing>".
CostTable parse_cost_table(std::string_view text, const std::string& origin);

// The table for a device named `device_name`: the file ASYNCTP_COST_TABLE
// names when set (parsed once per path; a bad file throws, naming the
// variable), else the embedded table whose device line `device_name` starts
// with; nullptr when there is none.
const CostTable* cost_table_for(const std::string& device_name, const EnvLookup& env = process_env);

// The embedded tables (data/cost/*.txt at build time), parsed.
const std::vector<CostTable>& builtin_cost_tables();

}  // namespace asynctp::core
