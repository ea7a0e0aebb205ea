#include "core/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "core/planner.hpp"

namespace asynctp::core {
namespace {

double log_distance2(const GemmSample& s, std::int64_t m, std::int64_t n, std::int64_t k) {
  const double dm = std::log2(double(s.m) / double(m));
  const double dn = std::log2(double(s.n) / double(n));
  const double dk = std::log2(double(s.k) / double(k));
  return dm * dm + dn * dn + dk * dk;
}

// Inverse-distance weighting (power 4, so that the nearest samples dominate)
// of value(sample) over the samples that `use` accepts, in log2 (M, N, K);
// a sample at the shape itself is returned as is. nullopt without samples.
template <typename Use, typename Value>
std::optional<double> interpolate(const CostTable& table, std::int64_t m, std::int64_t n,
                                  std::int64_t k, Use use, Value value) {
  double weighted = 0, weights = 0;
  for (const GemmSample& s : table.gemms) {
    if (!use(s)) continue;
    const double d2 = log_distance2(s, m, n, k);
    if (d2 < 1e-12) return value(s);
    const double w = 1.0 / (d2 * d2);
    weighted += w * value(s);
    weights += w;
  }
  if (weights == 0) return std::nullopt;
  return weighted / weights;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// CTAs of a full persistent grid: the processors, whole clusters only.
std::int64_t full_grid(const CostTable& table, const NativeConfig& c) {
  const std::int64_t cluster = std::max<std::int64_t>(1, c.m_granularity / std::max<std::int64_t>(1, c.tile_m));
  return std::max<std::int64_t>(cluster, (table.sms / cluster) * cluster);
}

std::int64_t tiles_of(const NativeConfig& c, std::int64_t m, std::int64_t n) {
  return ceil_div(m, c.tile_m) * ceil_div(n, c.tile_n);
}

// The persistent grid of `grid` CTAs over W chunks of `per_chunk` tiles in
// chunk order: CTA b takes tiles b, b + grid, ...; a tile starts once its
// chunk has arrived (arrival[p], chunk p in schedule order) and lasts
// `tile_ms`. Returns when each chunk's last tile ends (its back is the end).
std::vector<double> run_grid(int world, std::int64_t per_chunk, std::int64_t grid, double tile_ms,
                             const std::vector<double>& arrival) {
  std::vector<double> done(static_cast<std::size_t>(world), 0.0);
  // Tiles of [0, x) that CTA b runs.
  const auto taken_below = [&](std::int64_t x, std::int64_t b) -> std::int64_t {
    return x > b ? (x - b - 1) / grid + 1 : 0;
  };
  for (std::int64_t b = 0; b < grid; ++b) {
    double t = 0;
    for (int p = 0; p < world; ++p) {
      const std::int64_t count = taken_below((p + 1) * per_chunk, b) - taken_below(p * per_chunk, b);
      if (count == 0) continue;
      t = std::max(t, arrival[static_cast<std::size_t>(p)]) + double(count) * tile_ms;
      done[static_cast<std::size_t>(p)] = std::max(done[static_cast<std::size_t>(p)], t);
    }
  }
  for (int p = 1; p < world; ++p) {  // a chunk is done no earlier than the ones before it ends
    done[static_cast<std::size_t>(p)] =
        std::max(done[static_cast<std::size_t>(p)], done[static_cast<std::size_t>(p - 1)]);
  }
  return done;
}

double fixed_ms(const CostTable& table, const ProblemDesc& p, Algorithm a) {
  const FixedCost& f = table.fixed_cost(p.op, a);
  return (f.per_call_us + f.per_chunk_us * p.world_size) / 1000.0;
}

// ms to move `bytes` over the link (bandwidth only).
double transfer_ms(double bytes, const LinkCost& link) { return bytes / (link.gbps * 1e6); }

// Ships the peer chunks finished at done[0..W-2] one after another over the
// link (the own chunk, last, stays); returns when the last lands (0 at W = 1).
double ship_after(const std::vector<double>& done, double chunk_ms, const LinkCost& link) {
  if (done.size() < 2) return 0;
  double link_free = 0;
  for (std::size_t i = 0; i + 1 < done.size(); ++i) {
    link_free = std::max(link_free, done[i]) + chunk_ms;
  }
  return link_free + link.latency_us / 1000.0;
}

struct Native {
  std::vector<double> done;  // per chunk in schedule order
  double alone_ms = 0;       // the same grid with every chunk ready
};

// The grid over the first `chunks` chunks in schedule order (arrival[0..chunks)).
Native native_grid(const ProblemDesc& p, const CostTable& table, const NativeConfig& c,
                   const std::vector<double>& arrival, int chunks) {
  const std::int64_t per_chunk = tiles_of(c, p.m, p.n);
  const std::int64_t total = per_chunk * chunks;
  const std::int64_t grid = std::min(total, c.grid > 0 ? std::int64_t(c.grid) : full_grid(table, c));
  const double tile_ms = native_wave_ms(table, c, p.b_layout, p.gathered_rows(), p.n, p.k);
  Native out;
  out.done = run_grid(chunks, per_chunk, grid, tile_ms, arrival);
  out.alone_ms = double(ceil_div(total, grid)) * tile_ms;
  return out;
}

Prediction all_gather(const ProblemDesc& p, Algorithm a, const CostTable& table,
                      const LinkCost& link, const NativeConfig* c, NativeTail tail) {
  const int w = p.world_size;
  const double chunk_ms = transfer_ms(double(p.m * p.k) * element_size(p.dtype), link);
  std::vector<double> arrival(static_cast<std::size_t>(w), 0.0);
  for (int i = 1; i < w; ++i) arrival[static_cast<std::size_t>(i)] = link.latency_us / 1000.0 + i * chunk_ms;
  Prediction out;
  out.algorithm = a;
  out.fixed_ms = fixed_ms(table, p, a);
  double end = 0;
  if (a == Algorithm::decomposed) {
    out.gemm_ms = library_gemm_ms(table, p.b_layout, p.gathered_rows(), p.n, p.k);
    end = arrival.back() + out.gemm_ms;
  } else if (a == Algorithm::pipelined) {
    const double g = library_gemm_ms(table, p.b_layout, p.m, p.n, p.k);
    out.gemm_ms = g * w;
    for (int i = 0; i < w; ++i) end = std::max(end, arrival[static_cast<std::size_t>(i)]) + g;
  } else if (tail == NativeTail::library) {
    // The grid over the first W - 1 chunks; the last chunk's rows as one
    // library GEMM once it has landed and the grid is done, and that GEMM's
    // launch at the cost of one more chunk GEMM of pipelined's.
    const Native run = native_grid(p, table, *c, arrival, w - 1);
    const double last = library_gemm_ms(table, p.b_layout, p.m, p.n, p.k);
    out.gemm_ms = run.alone_ms + last;
    out.kernel = c->name;
    out.tail = NativeTail::library;
    out.fixed_ms += table.fixed_cost(p.op, Algorithm::pipelined).per_chunk_us / 1000.0;
    end = std::max({run.done.back(), run.alone_ms, arrival.back()}) + last;
  } else {
    const Native run = native_grid(p, table, *c, arrival, w);
    out.gemm_ms = run.alone_ms;
    out.kernel = c->name;
    end = std::max(run.done.back(), run.alone_ms);
  }
  out.exposed_ms = end - out.gemm_ms;
  out.ms = end + out.fixed_ms;
  return out;
}

Prediction reduce_scatter(const ProblemDesc& p, Algorithm a, const CostTable& table,
                          const LinkCost& link, const NativeConfig* c) {
  const int w = p.world_size;
  const double chunk_bytes = double(p.m * p.n) * element_size(p.dtype);
  const double chunk_ms = transfer_ms(chunk_bytes, link);
  Prediction out;
  out.algorithm = a;
  out.fixed_ms = fixed_ms(table, p, a);
  out.reduce_ms = (w + 1) * chunk_bytes / (table.reduce_gbps * 1e6);
  std::vector<double> done(static_cast<std::size_t>(w), 0.0);  // chunks in send order
  if (a == Algorithm::decomposed) {
    out.gemm_ms = library_gemm_ms(table, p.b_layout, p.gathered_rows(), p.n, p.k);
    std::fill(done.begin(), done.end(), out.gemm_ms);
  } else if (a == Algorithm::pipelined) {
    const double g = library_gemm_ms(table, p.b_layout, p.m, p.n, p.k);
    out.gemm_ms = g * w;
    for (int i = 0; i < w; ++i) done[static_cast<std::size_t>(i)] = g * (i + 1);
  } else {
    const Native run = native_grid(p, table, *c, std::vector<double>(done.size(), 0.0), w);
    out.gemm_ms = run.alone_ms;
    out.kernel = c->name;
    done = run.done;
  }
  const double end = std::max(ship_after(done, chunk_ms, link), done.back());
  out.exposed_ms = end - out.gemm_ms;
  out.ms = end + out.reduce_ms + out.fixed_ms;
  return out;
}

std::string ms3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

const char* to_string(LinkFacts::Kind kind) noexcept {
  switch (kind) {
    case LinkFacts::Kind::pcie:
      return "pcie";
    case LinkFacts::Kind::arrival:
      return "arrival";
    case LinkFacts::Kind::nccl:
      return "nccl";
    case LinkFacts::Kind::unknown:
      break;
  }
  return "unknown";
}

std::string describe(const Prediction& p) {
  std::string out = std::string(to_string(p.algorithm)) + " " + ms3(p.ms) + " ms (GEMM " +
                    ms3(p.gemm_ms) + ", link " + ms3(p.exposed_ms);
  if (p.reduce_ms > 0) out += ", reduction " + ms3(p.reduce_ms);
  out += ", fixed " + ms3(p.fixed_ms) + ")";
  if (p.tail == NativeTail::library) out += " with the last chunk as a library GEMM";
  return out;
}

std::optional<LinkCost> resolve_link(const CostTable& table, const LinkFacts& link,
                                     std::string* why) {
  std::optional<LinkCost> cost;
  switch (link.kind) {
    case LinkFacts::Kind::pcie:
      cost = table.pcie;
      break;
    case LinkFacts::Kind::arrival:
      cost = table.arrival;
      break;
    case LinkFacts::Kind::nccl:
      cost = table.nccl;
      break;
    case LinkFacts::Kind::unknown:
      if (why) *why = "the transport reports no link";
      return std::nullopt;
  }
  if (!cost) {
    if (why) {
      *why = std::string("the cost table (") + table.origin + ") has no '" + to_string(link.kind) +
             "' link";
    }
    return std::nullopt;
  }
  if (link.gbps > 0) cost->gbps = link.gbps;
  if (cost->gbps <= 0) {
    if (why) {
      *why = std::string("no bandwidth for the ") + to_string(link.kind) +
             " link (the transport reports none and the table says '-')";
    }
    return std::nullopt;
  }
  return cost;
}

double library_gemm_ms(const CostTable& table, Layout b_layout, std::int64_t m, std::int64_t n,
                       std::int64_t k) {
  const std::optional<double> flops_per_ms = interpolate(
      table, m, n, k,
      [&](const GemmSample& s) { return s.kernel == kLibraryGemmKernel && s.b_layout == b_layout; },
      [](const GemmSample& s) { return 2.0 * double(s.m) * double(s.n) * double(s.k) / s.ms; });
  if (!flops_per_ms) {
    throw Error(ErrorCode::invalid_argument, table.origin + ": no 'gemm cublas " +
                                                 to_string(b_layout) + "' sample");
  }
  return 2.0 * double(m) * double(n) * double(k) / *flops_per_ms;
}

bool can_predict_native(const CostTable& table, const NativeConfig& c, Layout b_layout) {
  if (measured(c)) return true;
  for (const GemmSample& s : table.gemms) {
    if (s.kernel == c.name && s.b_layout == b_layout) return true;
  }
  return false;
}

double native_wave_ms(const CostTable& table, const NativeConfig& c, Layout b_layout,
                      std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t grid_cap = full_grid(table, c);
  const std::optional<double> per_k = interpolate(
      table, m, n, k,
      [&](const GemmSample& s) { return s.kernel == c.name && s.b_layout == b_layout; },
      [&](const GemmSample& s) {
        const std::int64_t tiles = tiles_of(c, s.m, s.n);
        const double waves = double(ceil_div(tiles, std::min(tiles, grid_cap)));
        return s.ms / waves / double(s.k);
      });
  if (per_k) return *per_k * double(k);
  if (!measured(c)) {
    throw Error(ErrorCode::invalid_argument,
                "cost model: native config " + c.name + " has no measured efficiency and " +
                    table.origin + " has no 'gemm " + c.name + " " + to_string(b_layout) +
                    "' sample");
  }
  const double library_flops_per_ms_per_sm =
      2.0 * double(m) * double(n) * double(k) / library_gemm_ms(table, b_layout, m, n, k) /
      double(table.sms);
  return 2.0 * double(c.tile_m) * double(c.tile_n) * double(k) / library_flops_per_ms_per_sm /
         c.efficiency;
}

Prediction predict(const ProblemDesc& problem, Algorithm algorithm, const CostTable& table,
                   const LinkCost& link, const NativeConfig* config, NativeTail tail) {
  if (algorithm == Algorithm::automatic) {
    throw Error(ErrorCode::invalid_argument, "cost model: predict needs a concrete algorithm");
  }
  if (algorithm == Algorithm::native && config == nullptr) {
    throw Error(ErrorCode::invalid_argument, "cost model: native needs a kernel config");
  }
  if (tail == NativeTail::automatic ||
      (tail == NativeTail::library &&
       (problem.op != OpKind::all_gather_matmul || problem.world_size < 2))) {
    throw Error(ErrorCode::invalid_argument,
                std::string("cost model: native tail '") + to_string(tail) +
                    "' (a library tail needs an all-gather of two or more ranks)");
  }
  return problem.op == OpKind::matmul_reduce_scatter
             ? reduce_scatter(problem, algorithm, table, link, config)
             : all_gather(problem, algorithm, table, link, config, tail);
}

}  // namespace asynctp::core
