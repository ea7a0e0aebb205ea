// The CLI's argument parser (tools/asynctp/args.cpp): any words after `run`
// or `bench` must parse to arguments that keep every rule the parser states
// (bounds, divisibility, flags that need each other) or throw UsageError;
// nothing else may escape, and parsing is a function of the words alone.
// Input: the first byte picks the subcommand; the rest is words separated by
// NUL bytes (at most 64 words, as a shell would pass them).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "args.hpp"

using namespace asynctp::tool;

namespace {

constexpr std::int64_t kMaxDim = std::numeric_limits<std::int32_t>::max();

bool same(const Args& x, const Args& y) {
  return x.command == y.command && x.op == y.op && x.backend == y.backend &&
         x.world_size == y.world_size && x.m_global == y.m_global && x.n == y.n && x.k == y.k &&
         x.algo == y.algo && x.dtype == y.dtype && x.b_col_major == y.b_col_major &&
         x.iters == y.iters && x.warmup == y.warmup && x.check == y.check && x.json == y.json &&
         x.help == y.help && x.trace_path == y.trace_path && x.seed == y.seed &&
         x.workers == y.workers && x.timeout_ms == y.timeout_ms && x.links == y.links &&
         x.link_gbps == y.link_gbps && x.device == y.device;
}

// The rules args.hpp and --help state, on arguments the parser accepted.
bool keeps_the_rules(const Args& a) {
  if (a.world_size < 1 || a.world_size > 1024) return false;
  if (a.m_global < 1 || a.m_global > kMaxDim || a.n < 1 || a.n > kMaxDim || a.k < 1 ||
      a.k > kMaxDim) {
    return false;
  }
  if (a.iters < 1 || a.warmup < 0 || a.workers < 0 || a.workers > 256) return false;
  if (a.timeout_ms && *a.timeout_ms < 1) return false;
  if (a.trace_path && a.trace_path->empty()) return false;
  if (a.device && (*a.device < 0 || *a.device > 1023)) return false;
  if (a.link_gbps) {
    // A modelled transfer of the largest tensor (2^31 fp32 elements) in ns
    // must be a finite number that fits the link model's 64-bit clock.
    const double ns = 8.6e9 / *a.link_gbps;
    if (!std::isfinite(*a.link_gbps) || !(*a.link_gbps > 0) || !(ns < 9e18)) return false;
  }
  if (a.help) return true;  // --help skips the rules between flags
  if (a.m_global % a.world_size != 0) return false;
  if (a.backend == BackendChoice::cpu && a.first_gpu_only_flag()) return false;
  if (a.link_gbps) {
    bool arrival = false;
    for (LinkChoice l : a.links) arrival = arrival || l == LinkChoice::arrival;
    if (!arrival) return false;
  }
  return a.m_per_rank() * a.world_size == a.m_global;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Command command = (data[0] & 1) ? Command::bench : Command::run;
  std::vector<std::string> words;
  std::string word;
  for (std::size_t i = 1; i < size && words.size() < 64; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word.push_back(static_cast<char>(data[i]));
    }
  }
  if (size > 1 && data[size - 1] != 0 && words.size() < 64) words.push_back(word);
  Args args;
  try {
    args = parse_args(command, words);
  } catch (const UsageError& e) {
    // The message names the flag or the word at fault: never empty.
    if (std::string(e.what()).empty()) std::abort();
    return 0;
  }
  if (!keeps_the_rules(args)) std::abort();
  if (!same(args, parse_args(command, words))) std::abort();
  return 0;
}
