#include "cli_args.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace asynctp::tool {
namespace {

// The CLI's own bounds: each rank is a thread with its own pool of GEMM
// workers, so absurd counts would exhaust the machine before the library
// could say anything useful.
constexpr std::int64_t kMaxWorldSize = 1024;
constexpr std::int64_t kMaxWorkers = 256;
constexpr std::int64_t kMaxIters = 1'000'000;

[[noreturn]] void fail(const std::string& flag, const std::string& rule) {
  throw UsageError(flag + ": " + rule);
}

// Strict decimal parse: the whole text must be a number within [lo, hi].
std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t lo,
                       std::int64_t hi, const std::string& rule) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == ' ' || value < lo ||
      value > hi) {
    fail(flag, rule + ", got '" + text + "'");
  }
  return value;
}

std::int64_t positive(const std::string& flag, const std::string& text, std::int64_t hi) {
  return parse_int(flag, text, 1, hi,
                   "must be a positive integer (at most " + std::to_string(hi) + ")");
}

std::uint64_t parse_seed(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || text[0] == '-' || text[0] == '+' ||
      text[0] == ' ') {
    fail("--seed", "must be a non-negative integer below 2^64, got '" + text + "'");
  }
  return value;
}

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

bool takes_value(const std::string& flag) {
  static const char* const kValued[] = {
      "--backend",  "--world-size", "-m",       "-n",      "-k",     "--algo",    "--dtype",
      "--b-layout", "--iters",      "--warmup", "--trace", "--seed", "--workers", "--timeout-ms"};
  for (const char* name : kValued) {
    if (flag == name) return true;
  }
  return false;
}

bool is_switch(const std::string& flag) {
  return flag == "--check" || flag == "--json" || flag == "--help" || flag == "-h";
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

RunArgs parse_run_args(const std::vector<std::string>& args) {
  RunArgs out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> value;
    // --name=value is accepted for long flags; short ones take a separate word.
    if (flag.rfind("--", 0) == 0) {
      const auto eq = flag.find('=');
      if (eq != std::string::npos) {
        value = flag.substr(eq + 1);
        flag = flag.substr(0, eq);
      }
    }
    if (is_switch(flag)) {
      if (value) fail(flag, "takes no value, got '" + *value + "'");
      if (flag == "--check") out.check = true;
      if (flag == "--json") out.json = true;
      if (flag == "--help" || flag == "-h") out.help = true;
      continue;
    }
    if (!takes_value(flag)) {
      throw UsageError("unknown flag '" + flag + "'");
    }
    if (!value) {
      if (i + 1 >= args.size()) fail(flag, "missing value");
      value = args[++i];
    }
    const std::string& v = *value;

    if (flag == "--backend") {
      if (v == "auto") {
        out.backend = BackendChoice::automatic;
      } else if (v == "cpu") {
        out.backend = BackendChoice::cpu;
      } else {
        fail(flag, "must be auto or cpu (the backends built into this binary), got '" + v + "'");
      }
    } else if (flag == "--world-size") {
      out.world_size = static_cast<int>(positive(flag, v, kMaxWorldSize));
    } else if (flag == "-m") {
      out.m_global = positive(flag, v, std::numeric_limits<std::int32_t>::max());
    } else if (flag == "-n") {
      out.n = positive(flag, v, std::numeric_limits<std::int32_t>::max());
    } else if (flag == "-k") {
      out.k = positive(flag, v, std::numeric_limits<std::int32_t>::max());
    } else if (flag == "--algo") {
      out.algo = parse_algo(v);
    } else if (flag == "--dtype") {
      out.dtype = parse_dtype(v);
    } else if (flag == "--b-layout") {
      if (v != "row" && v != "col") fail(flag, "must be row or col, got '" + v + "'");
      out.b_col_major = v == "col";
    } else if (flag == "--iters") {
      out.iters = static_cast<int>(positive(flag, v, kMaxIters));
    } else if (flag == "--warmup") {
      out.warmup = static_cast<int>(
          parse_int(flag, v, 0, kMaxIters,
                    "must be a non-negative integer (at most " + std::to_string(kMaxIters) + ")"));
    } else if (flag == "--trace") {
      if (v.empty()) fail(flag, "needs a file name");
      out.trace_path = v;
    } else if (flag == "--seed") {
      out.seed = parse_seed(v);
      out.seed_given = true;
    } else if (flag == "--workers") {
      out.workers = static_cast<int>(parse_int(
          flag, v, 0, kMaxWorkers,
          "must be an integer in [0, " + std::to_string(kMaxWorkers) + "] (0 = automatic)"));
    } else if (flag == "--timeout-ms") {
      out.timeout_ms = positive(flag, v, std::numeric_limits<std::int64_t>::max() / 1000);
    }
  }
  if (out.help) return out;

  if (out.m_global % out.world_size != 0) {
    fail("-m", "must be divisible by --world-size (" + std::to_string(out.world_size) + "), got " +
                   std::to_string(out.m_global));
  }
  return out;
}

}  // namespace asynctp::tool
