// The command line of `asynctp run` and `asynctp bench`: one set of
// arguments and one parser, over the flags each subcommand declares as data
// (args.cpp). Everything is validated before anything is allocated, so a
// typo costs milliseconds and names the flag at fault.
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

// Throws UsageError "<flag>: <rule>".
[[noreturn]] void fail(const std::string& flag, const std::string& rule);

// The project's version, which CMake gives the tool.
inline constexpr const char* kVersion = ASYNCTP_VERSION;

enum class Command { run, bench };

// The collective op measured (--op): which verify::Problem is made, and what
// the report calls it; the steps between are the same for every op.
enum class Op { all_gather_matmul, matmul_reduce_scatter };

// What --algo asked for. `all` measures every algorithm; the others measure
// that one plus decomposed, the baseline of the speedup column.
enum class AlgoChoice { all, automatic, native, pipelined, decomposed };

// cuda and hip are the library's GPU backend in a CUDA or a ROCm build.
enum class BackendChoice { automatic, cpu, cuda, hip };

// How a peer's shard reaches a rank on a GPU backend: the loopback group's
// link models on one GPU (asynctp::loopback::Link), or real GPUs, one rank
// each, through NCCL.
enum class LinkChoice { pcie, arrival, nccl };

const char* to_string(Command command) noexcept;
const char* to_string(Op op) noexcept;  // as --op spells it
const char* to_string(LinkChoice link) noexcept;

constexpr double kDefaultLinkGbps = 400;

struct Args {
  Command command = Command::run;
  Op op = Op::all_gather_matmul;
  BackendChoice backend = BackendChoice::automatic;
  int world_size = 8;
  bool world_size_given = false;
  std::int64_t m_global = 8192;  // M; each rank's A shard or out has M / W rows
  std::int64_t n = 2048;
  std::int64_t k = 2048;  // K of each rank's GEMM: its K-slice in the reduce-scatter
  AlgoChoice algo = AlgoChoice::all;
  DType dtype = DType::bf16;
  bool b_col_major = false;
  bool gathered = true;  // all-gather: the calls ask for the gathered A too
  int iters = 5;
  int warmup = 1;
  bool tune = false;  // run: auto's calls take the measured choice (Options::tune)
  bool check = false;
  bool clocks = false;  // GPU backends: the SM clock after each round's timed calls
  bool json = false;
  bool help = false;  // --help was given: print it and do nothing else
  std::optional<std::string> trace_path;
  std::uint64_t seed = 0;
  bool seed_given = false;
  int workers = 0;  // GEMM workers per rank; 0 = the backend's default
  bool workers_given = false;
  std::optional<std::int64_t> timeout_ms;
  // GPU backends only; unset = not given on the command line. `run` takes
  // one link (none: chosen at run time), `bench` measures each in turn.
  std::vector<LinkChoice> links;
  std::optional<double> link_gbps;
  std::optional<int> device;

  std::int64_t m_per_rank() const noexcept { return m_global / world_size; }
  std::optional<LinkChoice> link() const {
    return links.empty() ? std::nullopt : std::optional(links.front());
  }
  double link_gbps_or_default() const noexcept { return link_gbps.value_or(kDefaultLinkGbps); }
  int device_or_default() const noexcept { return device.value_or(0); }
  // The first GPU-only flag given ("--link", ...), or nullopt: the flags
  // that make a run on the cpu backend an error.
  std::optional<std::string> first_gpu_only_flag() const;
};

// Parses the words after the subcommand. Throws UsageError naming the flag
// and its rule. The seed is left for the caller to draw when not given.
Args parse_args(Command command, const std::vector<std::string>& words);

// A flag's value as given, with the rules it may be held to (args.cpp).
struct FlagValue;

// The text of `asynctp --help` and of `asynctp <command> --help` (help.cpp).
std::string main_help();
std::string help_of(Command command);

// One command-line flag of a subcommand, as --help lists it.
struct Flag {
  const char* name;     // "--iters"
  const char* alias;    // "-h" beside "--help"; nullptr for none
  const char* metavar;  // "N"; nullptr for a switch, which takes no value
  void (*apply)(Args& args, const FlagValue& value);
  const char* help;  // the lines after the flag in --help, '\n' between them
};

// The flags `command` takes, in the order its --help lists them.
const std::vector<Flag>& flags_of(Command command);

}  // namespace asynctp::tool
