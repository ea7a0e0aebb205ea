// The arguments of `asynctp run`, parsed and validated before anything is
// allocated, so that a typo costs milliseconds and names the flag at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"

namespace asynctp::tool {

// Bad command-line input: main prints it with a pointer to --help and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What --algo asked for. `all` measures every algorithm; the others measure
// that one plus decomposed, the baseline of the speedup column.
enum class AlgoChoice { all, automatic, native, pipelined, decomposed };

const char* to_string(AlgoChoice choice) noexcept;

enum class BackendChoice { automatic, cpu };

struct RunArgs {
  BackendChoice backend = BackendChoice::automatic;
  int world_size = 8;
  std::int64_t m_global = 8192;  // rows of the gathered A; each rank holds m_global / world_size
  std::int64_t n = 2048;
  std::int64_t k = 2048;
  AlgoChoice algo = AlgoChoice::all;
  DType dtype = DType::bf16;
  bool b_col_major = false;
  int iters = 5;
  int warmup = 1;
  bool check = false;
  bool json = false;
  std::optional<std::string> trace_path;
  std::uint64_t seed = 0;
  bool seed_given = false;
  int workers = 0;  // GEMM workers per rank; 0 = the backend's default
  std::optional<std::int64_t> timeout_ms;
  bool help = false;  // --help was given: print it and do nothing else

  std::int64_t m_per_rank() const noexcept { return m_global / world_size; }
};

// Parses the arguments that follow `run`. Throws UsageError naming the flag
// and its rule. The seed is left for the caller to draw when not given.
RunArgs parse_run_args(const std::vector<std::string>& args);

}  // namespace asynctp::tool
