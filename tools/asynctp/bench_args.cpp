#include "bench_args.hpp"

#include <algorithm>
#include <limits>

#include "flag_values.hpp"

namespace asynctp::tool {
namespace {

// One GPU runs every virtual rank: the bounds are those of `run`.
constexpr std::int64_t kMaxWorldSize = 1024;
constexpr std::int64_t kMaxIters = 1'000'000;

const FlagSpec& bench_flags() {
  static const FlagSpec spec{
      {"--link", "--link-gbps", "--world-size", "-m", "-n", "-k", "--b-layout", "--iters",
       "--warmup", "--device", "--seed", "--timeout-ms"},
      {"--check", "--json", "--help", "-h"}};
  return spec;
}

std::vector<LinkChoice> parse_links(const std::string& flag, const std::string& text) {
  if (text == "both") return {LinkChoice::pcie, LinkChoice::arrival};
  if (text == "pcie") return {LinkChoice::pcie};
  if (text == "arrival") return {LinkChoice::arrival};
  if (text == "nccl") return {LinkChoice::nccl};
  fail(flag, "must be pcie, arrival, both or nccl, got '" + text + "'");
}

}  // namespace

RunArgs BenchArgs::run_args(LinkChoice link) const {
  RunArgs out;
  out.backend = BackendChoice::cuda;
  out.world_size = world_size;
  out.m_global = m_global;
  out.n = n;
  out.k = k;
  out.algo = AlgoChoice::all;
  out.dtype = DType::bf16;
  out.b_col_major = b_col_major;
  out.iters = iters;
  out.warmup = warmup;
  out.check = check;
  out.seed = seed;
  out.seed_given = seed_given;
  out.timeout_ms = timeout_ms;
  out.link = link;
  if (link == LinkChoice::arrival) out.link_gbps = link_gbps;
  if (link != LinkChoice::nccl) out.device = device;  // nccl: rank r on GPU r
  return out;
}

BenchArgs parse_bench_args(const std::vector<std::string>& args) {
  BenchArgs out;
  for_each_flag(
      args, bench_flags(), [&](const std::string& flag, const std::optional<std::string>& value) {
        if (!value) {
          if (flag == "--check") out.check = true;
          if (flag == "--json") out.json = true;
          if (flag == "--help" || flag == "-h") out.help = true;
          return;
        }
        const std::string& v = *value;
        if (flag == "--link") {
          out.links = parse_links(flag, v);
        } else if (flag == "--link-gbps") {
          out.link_gbps = parse_positive_real(flag, v, kMaxLinkGbps);
          out.link_gbps_given = true;
        } else if (flag == "--world-size") {
          out.world_size = static_cast<int>(parse_positive(flag, v, kMaxWorldSize));
        } else if (flag == "-m") {
          out.m_global = parse_positive(flag, v, std::numeric_limits<std::int32_t>::max());
        } else if (flag == "-n") {
          out.n = parse_positive(flag, v, std::numeric_limits<std::int32_t>::max());
        } else if (flag == "-k") {
          out.k = parse_positive(flag, v, std::numeric_limits<std::int32_t>::max());
        } else if (flag == "--b-layout") {
          if (v != "row" && v != "col") fail(flag, "must be row or col, got '" + v + "'");
          out.b_col_major = v == "col";
        } else if (flag == "--iters") {
          out.iters = static_cast<int>(parse_positive(flag, v, kMaxIters));
        } else if (flag == "--warmup") {
          out.warmup = static_cast<int>(parse_int(
              flag, v, 0, kMaxIters,
              "must be a non-negative integer (at most " + std::to_string(kMaxIters) + ")"));
        } else if (flag == "--device") {
          out.device = static_cast<int>(
              parse_int(flag, v, 0, kMaxDevice,
                        "must be a GPU device ordinal in [0, " + std::to_string(kMaxDevice) + "]"));
        } else if (flag == "--seed") {
          out.seed = parse_seed(flag, v);
          out.seed_given = true;
        } else if (flag == "--timeout-ms") {
          out.timeout_ms = parse_positive(flag, v, std::numeric_limits<std::int64_t>::max() / 1000);
        }
      });
  if (out.help) return out;
  if (out.m_global % out.world_size != 0) {
    fail("-m", "must be divisible by --world-size (" + std::to_string(out.world_size) + "), got " +
                   std::to_string(out.m_global));
  }
  const bool has_arrival =
      std::find(out.links.begin(), out.links.end(), LinkChoice::arrival) != out.links.end();
  if (out.link_gbps_given && !has_arrival) {
    fail("--link-gbps",
         "only with --link arrival or both (the pcie link moves data at the "
         "bus's own speed)");
  }
  return out;
}

}  // namespace asynctp::tool
