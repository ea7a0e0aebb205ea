// The parser of `run` and `bench`, and every flag of each as data: its
// value's rule (a strict parser that names the flag, the rule and what was
// given) and its --help text.
#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <optional>
#include <utility>

namespace asynctp::tool {

void fail(const std::string& flag, const std::string& rule) {
  throw UsageError(flag + ": " + rule);
}

// Each rule throws a UsageError naming the flag, the rule and what was given.
struct FlagValue {
  const std::string& flag;
  const std::string& text;

  // The whole text as a decimal T, or nullopt: no blanks; a leading '+', as
  // the C library allows one.
  template <typename T>
  std::optional<T> number() const {
    const char* begin = text.data() + (text.size() > 1 && text[0] == '+' && text[1] != '-');
    const char* end = text.data() + text.size();
    T value{};
    const auto [stop, error] = std::from_chars(begin, end, value);
    if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
    return value;
  }

  [[noreturn]] void reject(const std::string& rule) const {
    fail(flag, rule + ", got '" + text + "'");
  }
  std::int64_t integer(std::int64_t lo, std::int64_t hi, const std::string& rule) const {
    const std::optional<std::int64_t> value = number<std::int64_t>();
    if (!value || *value < lo || *value > hi) reject(rule);
    return *value;
  }
  std::int64_t positive(std::int64_t hi) const {
    return integer(1, hi, "must be a positive integer (at most " + std::to_string(hi) + ")");
  }
  double positive_real(double lo, double hi) const {
    const std::optional<double> value = number<double>();
    // `!(value >= lo)` also rejects NaN.
    if (!value || !std::isfinite(*value) || !(*value > 0) || !(*value >= lo) || *value > hi) {
      char bounds[64];
      std::snprintf(bounds, sizeof bounds, "at least %g and at most %g", lo, hi);
      reject(std::string("must be a number > 0 (") + bounds + ")");
    }
    return *value;
  }
  std::uint64_t seed() const {
    const auto value = text.starts_with('+') ? std::nullopt : number<std::uint64_t>();
    if (!value) reject("must be a non-negative integer below 2^64");
    return *value;
  }
  // One of the named choices; the rule lists them ("a, b or c").
  template <typename T>
  T one_of(std::initializer_list<std::pair<const char*, T>> choices) const {
    std::string names;
    std::size_t i = 0;
    for (const auto& [name, value] : choices) {
      if (text == name) return value;
      names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(name);
      ++i;
    }
    reject("must be " + names);
  }
};

namespace {

// The CLI's own bounds: each rank is a thread with its own pool of GEMM
// workers (or a virtual rank on one GPU), so absurd counts would exhaust the
// machine before the library could say anything useful.
constexpr std::int64_t kMaxWorldSize = 1024;
constexpr std::int64_t kMaxWorkers = 256;
constexpr std::int64_t kMaxIters = 1'000'000;
constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMaxDevice = 1023;
constexpr double kMaxLinkGbps = 1e6;
// 1 MB/s. Below it the arrival model's transfer time of a large chunk, in
// nanoseconds, no longer fits its 64-bit clock (1e-300 GB/s parsed as a
// positive number and overflowed it: tests/fuzz/cli_args_fuzz.cpp's rule);
// nothing that slow is worth modelling.
constexpr double kMinLinkGbps = 1e-3;

void set_op(Args& a, const FlagValue& v) {
  a.op = v.one_of<Op>({{to_string(Op::all_gather_matmul), Op::all_gather_matmul},
                       {to_string(Op::matmul_reduce_scatter), Op::matmul_reduce_scatter}});
}
void set_backend(Args& a, const FlagValue& v) {
  a.backend = v.one_of<BackendChoice>({{"auto", BackendChoice::automatic},
                                       {"cpu", BackendChoice::cpu},
                                       {"cuda", BackendChoice::cuda},
                                       {"hip", BackendChoice::hip}});
}
void set_world_size(Args& a, const FlagValue& v) {
  a.world_size = static_cast<int>(v.positive(kMaxWorldSize));
  a.world_size_given = true;
}
void set_m(Args& a, const FlagValue& v) { a.m_global = v.positive(kMaxDim); }
void set_n(Args& a, const FlagValue& v) { a.n = v.positive(kMaxDim); }
void set_k(Args& a, const FlagValue& v) { a.k = v.positive(kMaxDim); }
void set_algo(Args& a, const FlagValue& v) {
  a.algo = v.one_of<AlgoChoice>({{"all", AlgoChoice::all},
                                 {"auto", AlgoChoice::automatic},
                                 {"native", AlgoChoice::native},
                                 {"pipelined", AlgoChoice::pipelined},
                                 {"decomposed", AlgoChoice::decomposed}});
}
void set_dtype(Args& a, const FlagValue& v) {
  a.dtype = v.one_of<DType>({{"bf16", DType::bf16}, {"fp16", DType::fp16}, {"fp32", DType::fp32}});
}
void set_b_layout(Args& a, const FlagValue& v) {
  a.b_col_major = v.one_of<bool>({{"row", false}, {"col", true}});
}
void set_iters(Args& a, const FlagValue& v) { a.iters = static_cast<int>(v.positive(kMaxIters)); }
void set_warmup(Args& a, const FlagValue& v) {
  a.warmup = static_cast<int>(v.integer(
      0, kMaxIters, "must be a non-negative integer (at most " + std::to_string(kMaxIters) + ")"));
}
void set_trace(Args& a, const FlagValue& v) {
  if (v.text.empty()) fail(v.flag, "needs a file name");
  a.trace_path = v.text;
}
void set_seed(Args& a, const FlagValue& v) {
  a.seed = v.seed();
  a.seed_given = true;
}
void set_workers(Args& a, const FlagValue& v) {
  a.workers = static_cast<int>(
      v.integer(0, kMaxWorkers,
                "must be an integer in [0, " + std::to_string(kMaxWorkers) + "] (0 = automatic)"));
  a.workers_given = true;
}
void set_timeout(Args& a, const FlagValue& v) {
  a.timeout_ms = v.positive(std::numeric_limits<std::int64_t>::max() / 1000);
}
void set_link(Args& a, const FlagValue& v) {
  a.links = {v.one_of<LinkChoice>(
      {{"pcie", LinkChoice::pcie}, {"arrival", LinkChoice::arrival}, {"nccl", LinkChoice::nccl}})};
}
void set_links(Args& a, const FlagValue& v) {
  using Links = std::vector<LinkChoice>;
  a.links = v.one_of<Links>({{"pcie", Links{LinkChoice::pcie}},
                             {"arrival", Links{LinkChoice::arrival}},
                             {"both", Links{LinkChoice::pcie, LinkChoice::arrival}},
                             {"nccl", Links{LinkChoice::nccl}}});
}
void set_link_gbps(Args& a, const FlagValue& v) {
  a.link_gbps = v.positive_real(kMinLinkGbps, kMaxLinkGbps);
}
void set_device(Args& a, const FlagValue& v) {
  a.device = static_cast<int>(v.integer(
      0, kMaxDevice, "must be a GPU device ordinal in [0, " + std::to_string(kMaxDevice) + "]"));
}
void set_check(Args& a, const FlagValue&) { a.check = true; }
void set_tune(Args& a, const FlagValue&) { a.tune = true; }
void set_no_gathered(Args& a, const FlagValue&) { a.gathered = false; }
void set_json(Args& a, const FlagValue&) { a.json = true; }
void set_clocks(Args& a, const FlagValue&) { a.clocks = true; }
void set_help(Args& a, const FlagValue&) { a.help = true; }

const Flag kJson{"--json", nullptr, nullptr, set_json,
                 "print one JSON object on stdout instead of the table"};
const Flag kBLayout{"--b-layout", nullptr, "L", set_b_layout,
                    "row|col: B row- or column-major (default row)"};
const Flag kTimeout{"--timeout-ms", nullptr, "T", set_timeout,
                    "bound on every cross-rank wait in ms (default:\n"
                    "ASYNCTP_WAIT_TIMEOUT_MS, else 60000)"};
const Flag kHelp{"--help", "-h", nullptr, set_help, "this text"};
const Flag kClocks{"--clocks", nullptr, nullptr, set_clocks,
                   "GPU backend only (cuda): after each round's timed calls of\n"
                   "a row, read the SM clock with a probe kernel (clock64\n"
                   "over the global timer, about 5 us on one SM, after the\n"
                   "row's last timed call: outside every span) and print\n"
                   "each row's median and range below the table (JSON:\n"
                   "sm_clock_mhz), to see whether the rows ran at the same\n"
                   "clocks: the card slows under sustained load"};
const Flag kNoGathered{"--no-gathered", nullptr, nullptr, set_no_gathered,
                       "all-gather-matmul only: the calls ask for C alone, not\n"
                       "the gathered A (PyTorch's return_A=False); GEMMs that\n"
                       "read the rank's own chunk where it is then skip its copy"};
const Flag kOp{"--op", nullptr, "OP", set_op,
               "all-gather-matmul|matmul-reduce-scatter (default\n"
               "all-gather-matmul): C = allgather(A) @ B, or rank r gets\n"
               "its M / W rows of the sum over s of A_s @ B_s"};
const Flag kM{"-m", nullptr, "M", set_m,
              "GLOBAL rows, divisible by W: of the gathered A and C, or\n"
              "of every rank's A in matmul-reduce-scatter; each rank's\n"
              "A shard or out has M / W rows (default 8192)"};

const std::vector<Flag> kRunFlags = {
    kOp,
    {"--backend", nullptr, "B", set_backend,
     "auto|cpu|cuda|hip: where the ranks run (default auto =\n"
     "this binary's GPU backend, cuda or in a ROCm build\n"
     "hip, when --device is a\n"
     "usable GPU, else cpu; the header and JSON say which ran).\n"
     "cpu: W ranks as threads of this process, on host memory.\n"
     "cuda: W virtual ranks on one GPU (a loopback group), on\n"
     "device memory; an error when not built in or no usable\n"
     "GPU is present. native on cuda needs bf16 and sm_90;\n"
     "hip: the same on an AMD GPU (never run so far; native\n"
     "needs gfx942/gfx950, pipelined/decomposed hipBLAS);\n"
     "pipelined and decomposed take bf16, fp16 and fp32."},
    {"--world-size", nullptr, "W", set_world_size, "number of ranks (default 8)"},
    kM,
    {"-n", nullptr, "N", set_n, "columns of B and C or out (default 2048)"},
    {"-k", nullptr, "K", set_k,
     "columns of A, rows of B: K per rank in matmul-reduce-\n"
     "scatter (global K = W * K) (default 2048)"},
    {"--algo", nullptr, "A", set_algo,
     "all|auto|native|pipelined|decomposed (default all = native,\n"
     "pipelined and decomposed); a single algorithm is measured\n"
     "with decomposed as the baseline; auto runs the planner's\n"
     "pick. An algorithm that cannot run this problem shows as\n"
     "unavailable; asked for alone, it is an error."},
    {"--tune", nullptr, nullptr, set_tune,
     "auto's calls take the measured choice (as with\n"
     "ASYNCTP_TUNE=on): a problem's first calls measure\n"
     "each algorithm in turn (6 rounds where the GEMM is\n"
     "under 2e11 flops, else 2), the next ones run the\n"
     "fastest. Adds an auto row to --algo all. An auto\n"
     "row's warmup is at least 19 calls whenever the choice\n"
     "is on, so that its timed calls run what was chosen"},
    {"--dtype", nullptr, "D", set_dtype,
     "bf16|fp16|fp32 storage of A, B, C (default bf16; fp32\n"
     "accumulation always)"},
    kBLayout,
    kNoGathered,
    {"--iters", nullptr, "N", set_iters, "timed iterations per algorithm (default 5)"},
    {"--warmup", nullptr, "N", set_warmup, "untimed iterations first (default 1)"},
    {"--check", nullptr, nullptr, set_check,
     "before timing, run each algorithm once on poisoned outputs\n"
     "and compare every rank's C with a float64 reference\n"
     "(every element written, relative Frobenius error within\n"
     "the dtype's tolerance) and its gathered A bit for bit\n"
     "with the shards (cuda: both copied back to the host);\n"
     "matmul-reduce-scatter: every out, within the bound of W\n"
     "summed partials; failing exits 1"},
    kJson,
    kClocks,
    {"--trace", nullptr, "FILE", set_trace,
     "after timing, run one more call of each algorithm with\n"
     "tracing and write a Chrome trace (Perfetto,\n"
     "chrome://tracing) of the spans the backend records (cpu:\n"
     "producer and GEMM worker threads; cuda/hip: each\n"
     "rank's host-side check and enqueue, and the device's\n"
     "timeline from timed events on its streams: copies,\n"
     "signals, GEMMs, the reduction; cuda native: each chunk's\n"
     "first tile start to last tile end from the kernel's\n"
     "timer). Costs the traced calls 2 events per span, 1 per\n"
     "signal, 2 atomics per native tile; untraced calls a\n"
     "branch per step and per native tile"},
    {"--seed", nullptr, "S", set_seed,
     "seed of the random inputs (default: from the clock; always\n"
     "printed so a run can be repeated)"},
    {"--workers", nullptr, "P", set_workers,
     "cpu backend only: GEMM workers per rank (default 0 =\n"
     "automatic)"},
    kTimeout,
    {"--link", nullptr, "L", set_link,
     "GPU backend only: pcie|arrival|nccl, how peer shards\n"
     "reach a rank (default nccl with W > 1 and W GPUs, else\n"
     "pcie; see Links below)"},
    {"--link-gbps", nullptr, "X", set_link_gbps,
     "GPU backend and --link arrival only: the modelled\n"
     "link's bandwidth into each rank in GB/s, a number in\n"
     "[0.001, 1e6] (default 400)"},
    {"--device", nullptr, "N", set_device, "GPU backend only: the GPU device ordinal (default 0)"},
    kHelp,
};

const std::vector<Flag> kBenchFlags = {
    kOp,
    {"--link", nullptr, "L", set_links,
     "pcie|arrival|both|nccl: the links to measure, in turn\n"
     "(default both; nccl: W GPUs; see Links below)"},
    {"--link-gbps", nullptr, "X", set_link_gbps,
     "the arrival link's bandwidth into each rank in GB/s, a\n"
     "number in [0.001, 1e6] (default 400); needs arrival in\n"
     "--link"},
    {"--world-size", nullptr, "W", set_world_size, "number of virtual ranks (default 8)"},
    kM,
    {"-n", nullptr, "N", set_n, "columns of B and C or out (default 8192)"},
    {"-k", nullptr, "K", set_k,
     "columns of A, rows of B: K per rank in matmul-reduce-\n"
     "scatter (default 8192)"},
    kBLayout,
    kNoGathered,
    {"--iters", nullptr, "N", set_iters, "timed iterations per measurement (default 20)"},
    {"--warmup", nullptr, "N", set_warmup, "untimed iterations first (default 3)"},
    {"--device", nullptr, "N", set_device, "the CUDA device ordinal (default 0)"},
    {"--check", nullptr, nullptr, set_check,
     "before timing, run each algorithm (and the cuBLAS GEMM)\n"
     "once on poisoned outputs and compare with a float64\n"
     "reference (relative Frobenius error, every element\n"
     "written, gathered A bitwise); failing exits 1"},
    kJson,
    kClocks,
    {"--seed", nullptr, "S", set_seed,
     "seed of the random inputs (default: from the clock;\n"
     "always printed)"},
    kTimeout,
    kHelp,
};

// The single-GPU benchmark measures bf16 on the CUDA backend, at a size
// where the overlap shows, over more iterations than a quick `run`.
Args defaults_of(Command command) {
  Args args;
  args.command = command;
  if (command == Command::bench) {
    args.backend = BackendChoice::cuda;
    args.n = args.k = 8192;
    args.iters = 20;
    args.warmup = 3;
    args.links = {LinkChoice::pcie, LinkChoice::arrival};
  }
  return args;
}

const Flag* find_flag(Command command, const std::string& word) {
  for (const Flag& flag : flags_of(command)) {
    if (word == flag.name || (flag.alias != nullptr && word == flag.alias)) return &flag;
  }
  return nullptr;
}

// Rules between flags, checked once all are read. Whether a GPU backend
// exists here is not known yet (auto decides at run time): only an explicit
// --backend cpu is judged now.
void check_combinations(const Args& a) {
  if (a.m_global % a.world_size != 0) {
    fail("-m", "must be divisible by --world-size (" + std::to_string(a.world_size) + "), got " +
                   std::to_string(a.m_global));
  }
  if (!a.gathered && a.op != Op::all_gather_matmul) {
    fail("--no-gathered", "only with --op all-gather-matmul (the reduce-scatter gathers nothing)");
  }
  if (a.backend == BackendChoice::cpu) {
    if (const auto flag = a.first_gpu_only_flag()) {
      fail(*flag, "only with a GPU backend (--backend cuda, hip or auto), not with --backend cpu");
    }
  }
  if ((a.backend == BackendChoice::cuda || a.backend == BackendChoice::hip) && a.workers_given) {
    fail("--workers", "only with the cpu backend (a GPU backend's GEMMs run on the GPU)");
  }
  const bool arrival = std::count(a.links.begin(), a.links.end(), LinkChoice::arrival) > 0;
  if (a.link_gbps && !arrival) {
    fail("--link-gbps", std::string("only with --link arrival") +
                            (a.command == Command::bench ? " or both" : "") +
                            " (the pcie link moves data at the bus's own speed)");
  }
}

}  // namespace

const std::vector<Flag>& flags_of(Command command) {
  return command == Command::run ? kRunFlags : kBenchFlags;
}

const char* to_string(Command command) noexcept {
  return command == Command::run ? "run" : "bench";
}

const char* to_string(Op op) noexcept {
  return op == Op::all_gather_matmul ? "all-gather-matmul" : "matmul-reduce-scatter";
}

const char* to_string(LinkChoice link) noexcept {
  constexpr const char* kNames[] = {"pcie", "arrival", "nccl"};  // in LinkChoice's order
  return kNames[static_cast<int>(link)];
}

std::optional<std::string> Args::first_gpu_only_flag() const {
  if (!links.empty()) return "--link";
  if (link_gbps) return "--link-gbps";
  if (device) return "--device";
  if (clocks) return "--clocks";
  return std::nullopt;
}

Args parse_args(Command command, const std::vector<std::string>& words) {
  Args args = defaults_of(command);
  for (std::size_t i = 0; i < words.size(); ++i) {
    std::string name = words[i];
    std::optional<std::string> value;
    // --name=value is accepted for long flags; short ones take a separate word.
    if (const auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const Flag* flag = find_flag(command, name);
    if (flag == nullptr) throw UsageError("unknown flag '" + name + "'");
    if (flag->metavar == nullptr && value) fail(name, "takes no value, got '" + *value + "'");
    if (flag->metavar != nullptr && !value) {
      if (i + 1 >= words.size()) fail(name, "missing value");
      value = words[++i];
    }
    const std::string text = value.value_or("");
    flag->apply(args, FlagValue{name, text});
  }
  if (!args.help) check_combinations(args);
  return args;
}

}  // namespace asynctp::tool
