#include "cli_args.hpp"

#include <limits>

#include "flag_values.hpp"

namespace asynctp::tool {
namespace {

// The CLI's own bounds: each rank is a thread with its own pool of GEMM
// workers, so absurd counts would exhaust the machine before the library
// could say anything useful.
constexpr std::int64_t kMaxWorldSize = 1024;
constexpr std::int64_t kMaxWorkers = 256;
constexpr std::int64_t kMaxIters = 1'000'000;

AlgoChoice parse_algo(const std::string& text) {
  if (text == "all") return AlgoChoice::all;
  if (text == "auto") return AlgoChoice::automatic;
  if (text == "native") return AlgoChoice::native;
  if (text == "pipelined") return AlgoChoice::pipelined;
  if (text == "decomposed") return AlgoChoice::decomposed;
  fail("--algo", "must be all, auto, native, pipelined or decomposed, got '" + text + "'");
}

DType parse_dtype(const std::string& text) {
  if (text == "bf16") return DType::bf16;
  if (text == "fp16") return DType::fp16;
  if (text == "fp32") return DType::fp32;
  fail("--dtype", "must be bf16, fp16 or fp32, got '" + text + "'");
}

BackendChoice parse_backend(const std::string& text) {
  if (text == "auto") return BackendChoice::automatic;
  if (text == "cpu") return BackendChoice::cpu;
  if (text == "cuda") return BackendChoice::cuda;
  if (text == "hip") return BackendChoice::hip;
  fail("--backend", "must be auto, cpu, cuda or hip, got '" + text + "'");
}

const FlagSpec& run_flags() {
  static const FlagSpec spec{{"--backend", "--world-size", "-m", "-n", "-k", "--algo", "--dtype",
                              "--b-layout", "--iters", "--warmup", "--trace", "--seed", "--workers",
                              "--timeout-ms", "--link", "--link-gbps", "--device"},
                             {"--check", "--json", "--help", "-h"}};
  return spec;
}

// Rules between flags, checked once all are read. Whether a GPU backend
// exists here is not known yet (auto decides at run time): only an explicit
// --backend cpu is judged now.
void check_combinations(const RunArgs& out) {
  if (out.m_global % out.world_size != 0) {
    fail("-m", "must be divisible by --world-size (" + std::to_string(out.world_size) + "), got " +
                   std::to_string(out.m_global));
  }
  if (out.backend == BackendChoice::cpu) {
    if (const auto flag = out.first_gpu_only_flag()) {
      fail(*flag, "only with a GPU backend (--backend cuda, hip or auto), not with --backend cpu");
    }
  }
  if ((out.backend == BackendChoice::cuda || out.backend == BackendChoice::hip) &&
      out.workers_given) {
    fail("--workers", "only with the cpu backend (a GPU backend's GEMMs run on the GPU)");
  }
  if (out.link_gbps && out.link_or_default() != LinkChoice::arrival) {
    fail("--link-gbps",
         "only with --link arrival (the pcie link moves data at the bus's own speed)");
  }
}

}  // namespace

const char* to_string(AlgoChoice choice) noexcept {
  switch (choice) {
    case AlgoChoice::all:
      return "all";
    case AlgoChoice::automatic:
      return "auto";
    case AlgoChoice::native:
      return "native";
    case AlgoChoice::pipelined:
      return "pipelined";
    case AlgoChoice::decomposed:
      return "decomposed";
  }
  return "unknown";
}

const char* to_string(LinkChoice link) noexcept {
  switch (link) {
    case LinkChoice::pcie:
      return "pcie";
    case LinkChoice::arrival:
      return "arrival";
    case LinkChoice::nccl:
      return "nccl";
  }
  return "unknown";
}

LinkChoice parse_link_choice(const std::string& flag, const std::string& text) {
  if (text == "pcie") return LinkChoice::pcie;
  if (text == "arrival") return LinkChoice::arrival;
  if (text == "nccl") return LinkChoice::nccl;
  fail(flag, "must be pcie, arrival or nccl, got '" + text + "'");
}

std::optional<std::string> RunArgs::first_gpu_only_flag() const {
  if (link) return "--link";
  if (link_gbps) return "--link-gbps";
  if (device) return "--device";
  return std::nullopt;
}

RunArgs parse_run_args(const std::vector<std::string>& args) {
  RunArgs out;
  for_each_flag(
      args, run_flags(), [&](const std::string& flag, const std::optional<std::string>& value) {
        if (!value) {
          if (flag == "--check") out.check = true;
          if (flag == "--json") out.json = true;
          if (flag == "--help" || flag == "-h") out.help = true;
          return;
        }
        const std::string& v = *value;
        if (flag == "--backend") {
          out.backend = parse_backend(v);
        } else if (flag == "--world-size") {
          out.world_size = static_cast<int>(parse_positive(flag, v, kMaxWorldSize));
          out.world_size_given = true;
        } else if (flag == "-m") {
          out.m_global = parse_positive(flag, v, std::numeric_limits<std::int32_t>::max());
        } else if (flag == "-n") {
          out.n = parse_positive(flag, v, std::numeric_limits<std::int32_t>::max());
        } else if (flag == "-k") {
          out.k = parse_positive(flag, v, std::numeric_limits<std::int32_t>::max());
        } else if (flag == "--algo") {
          out.algo = parse_algo(v);
        } else if (flag == "--dtype") {
          out.dtype = parse_dtype(v);
        } else if (flag == "--b-layout") {
          if (v != "row" && v != "col") fail(flag, "must be row or col, got '" + v + "'");
          out.b_col_major = v == "col";
        } else if (flag == "--iters") {
          out.iters = static_cast<int>(parse_positive(flag, v, kMaxIters));
        } else if (flag == "--warmup") {
          out.warmup = static_cast<int>(parse_int(
              flag, v, 0, kMaxIters,
              "must be a non-negative integer (at most " + std::to_string(kMaxIters) + ")"));
        } else if (flag == "--trace") {
          if (v.empty()) fail(flag, "needs a file name");
          out.trace_path = v;
        } else if (flag == "--seed") {
          out.seed = parse_seed(flag, v);
          out.seed_given = true;
        } else if (flag == "--workers") {
          out.workers = static_cast<int>(parse_int(
              flag, v, 0, kMaxWorkers,
              "must be an integer in [0, " + std::to_string(kMaxWorkers) + "] (0 = automatic)"));
          out.workers_given = true;
        } else if (flag == "--timeout-ms") {
          out.timeout_ms = parse_positive(flag, v, std::numeric_limits<std::int64_t>::max() / 1000);
        } else if (flag == "--link") {
          out.link = parse_link_choice(flag, v);
        } else if (flag == "--link-gbps") {
          out.link_gbps = parse_positive_real(flag, v, kMaxLinkGbps);
        } else if (flag == "--device") {
          out.device = static_cast<int>(
              parse_int(flag, v, 0, kMaxDevice,
                        "must be a GPU device ordinal in [0, " + std::to_string(kMaxDevice) + "]"));
        }
      });
  if (!out.help) check_combinations(out);
  return out;
}

}  // namespace asynctp::tool
