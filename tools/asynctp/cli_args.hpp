// The arguments of `asynctp run`, parsed and validated before anything is
// allocated, so that a typo costs milliseconds and names the flag at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/tensor.hpp"
#include "usage_error.hpp"

namespace asynctp::tool {

// What --algo asked for. `all` measures every algorithm; the others measure
// that one plus decomposed, the baseline of the speedup column.
enum class AlgoChoice { all, automatic, native, pipelined, decomposed };

const char* to_string(AlgoChoice choice) noexcept;

// cuda and hip are the library's GPU backend in a CUDA or a ROCm build.
enum class BackendChoice { automatic, cpu, cuda, hip };

// How a peer's shard reaches a rank on a GPU backend, spelled here so that
// parsing needs no GPU library: the loopback group's link models on one GPU
// (asynctp::loopback::Link), or real GPUs, one rank each, through NCCL.
enum class LinkChoice { pcie, arrival, nccl };

const char* to_string(LinkChoice link) noexcept;
LinkChoice parse_link_choice(const std::string& flag, const std::string& text);

// Defaults of the GPU-only flags (shared by `run` and `bench`).
constexpr double kDefaultLinkGbps = 400;
constexpr double kMaxLinkGbps = 1e6;
constexpr int kMaxDevice = 1023;

struct RunArgs {
  BackendChoice backend = BackendChoice::automatic;
  int world_size = 8;
  bool world_size_given = false;
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
  bool workers_given = false;
  std::optional<std::int64_t> timeout_ms;
  // GPU backends only; unset = not given on the command line (defaults below).
  std::optional<LinkChoice> link;
  std::optional<double> link_gbps;
  std::optional<int> device;
  bool help = false;  // --help was given: print it and do nothing else

  std::int64_t m_per_rank() const noexcept { return m_global / world_size; }
  LinkChoice link_or_default() const noexcept { return link.value_or(LinkChoice::pcie); }
  double link_gbps_or_default() const noexcept { return link_gbps.value_or(kDefaultLinkGbps); }
  int device_or_default() const noexcept { return device.value_or(0); }
  // The first GPU-only flag given ("--link", ...), or nullopt: the flags
  // that make a run on the cpu backend an error.
  std::optional<std::string> first_gpu_only_flag() const;
};

// Parses the arguments that follow `run`. Throws UsageError naming the flag
// and its rule. The seed is left for the caller to draw when not given.
RunArgs parse_run_args(const std::vector<std::string>& args);

}  // namespace asynctp::tool
