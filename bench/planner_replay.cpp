// The planner replayed over measured points: for each point of a planner
// grid (scripts/device/planner-grid.sh; one line per point, written by
// scripts/device/grid_points.py), what auto would pick under a given cost
// table, and whether that pick passes the grid's verdict against the times
// measured for every algorithm at that point. No device: the planner is a
// pure function of the problem and the backend's facts, and the measured
// times do not depend on which algorithm auto picked. So a change to the
// cost model or a new table can be judged against the same measurements
// before the device confirms it.
//
//   asynctp_planner_replay [--rules] TABLE POINTS
//     TABLE   a cost table (src/core/cost_table.hpp), used as if calibrated
//     POINTS  op W link gbps M N K layout native_config native_ms
//             pipelined_ms decomposed_ms   ('-' for none)
//     --rules the planner without a table (its rules), for comparison
//
// The replayed backend offers native the config the measurement ran with
// (the planner cannot choose another config whose time was not measured)
// and no library tail (the grid measures the kernel tail); a point whose
// native ran with a config the line does not name is skipped and counted.
// Verdict per point, as planner-grid.sh's: ok when the pick is within 3 %
// of the fastest measured algorithm and at most 2 % slower than decomposed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "asynctp/error.hpp"
#include "core/cost_model.hpp"
#include "core/cost_table.hpp"
#include "core/planner.hpp"

namespace {

using asynctp::Algorithm;
namespace core = asynctp::core;

struct Point {
  core::ProblemDesc problem;
  core::LinkFacts link;
  std::string link_name;
  std::int64_t global_m = 0, global_k = 0;
  std::string config;
  std::map<Algorithm, double> measured;  // ms, the algorithms that ran
};

std::optional<double> number_or_dash(const std::string& s) {
  if (s == "-") return std::nullopt;
  return std::stod(s);
}

// The CUDA backend's name for a config: [rs_]{coop|pp}_MxNxK_cAxB_sS.
core::NativeConfig config_from_name(const std::string& name) {
  core::NativeConfig c;
  c.name = name;
  const std::string body = name.rfind("rs_", 0) == 0 ? name.substr(3) : name;
  int tm = 0, tn = 0, tk = 0, cm = 0, cn = 0, sw = 0;
  const auto us = body.find('_');
  if (us == std::string::npos || std::sscanf(body.c_str() + us + 1, "%dx%dx%d_c%dx%d_s%d", &tm, &tn,
                                             &tk, &cm, &cn, &sw) != 6) {
    throw std::runtime_error("native config name '" + name + "' is not [rs_]kind_MxNxK_cAxB_sS");
  }
  c.tile_m = tm;
  c.tile_n = tn;
  c.m_granularity = std::int64_t(tm) * cm;
  c.efficiency = 1.0;  // the table's own samples of the config predict it
  return c;
}

Point parse_point(const std::string& line) {
  std::istringstream in(line);
  std::string op, link, gbps, layout, config, n_ms, p_ms, d_ms;
  int w = 0;
  std::int64_t m = 0, n = 0, k = 0;
  if (!(in >> op >> w >> link >> gbps >> m >> n >> k >> layout >> config >> n_ms >> p_ms >> d_ms)) {
    throw std::runtime_error("expected 12 fields");
  }
  Point p;
  core::ProblemDesc& d = p.problem;
  d.op = op == "matmul-reduce-scatter" ? core::OpKind::matmul_reduce_scatter
                                       : core::OpKind::all_gather_matmul;
  d.world_size = w;
  d.m = m / w;
  d.n = n;
  d.k = k;  // the CLI's -k: the all-gather's whole K, the reduce-scatter's slice per rank
  d.dtype = asynctp::DType::bf16;
  d.b_layout = layout == "col" ? core::Layout::col_major : core::Layout::row_major;
  d.gathered_out = d.op == core::OpKind::all_gather_matmul;
  p.global_m = m;
  p.global_k = k;
  p.link_name = link + (gbps == "-" ? "" : "-" + gbps);
  p.link.kind = link == "pcie" ? core::LinkFacts::Kind::pcie : core::LinkFacts::Kind::arrival;
  p.link.gbps = number_or_dash(gbps).value_or(0);
  p.config = config;
  const std::pair<Algorithm, std::string> times[] = {
      {Algorithm::native, n_ms}, {Algorithm::pipelined, p_ms}, {Algorithm::decomposed, d_ms}};
  for (const auto& [a, s] : times) {
    if (const auto v = number_or_dash(s)) p.measured[a] = *v;
  }
  return p;
}

// The facts the CUDA backend reports for this point, the measured config alone.
core::BackendCaps caps_for(const Point& p, const core::CostTable* table) {
  core::BackendCaps caps;
  caps.name = "cuda sm_90 (replayed)";
  caps.min_pipelined_chunk_rows = 128;
  caps.sm_count = table ? table->sms : 132;
  caps.cost_table = table;
  if (!table) caps.no_cost_table = "replayed without a table";
  caps.link = p.link;
  if (p.config != "-") {
    caps.native_supported = true;
    caps.native_configs.push_back(config_from_name(p.config));
  } else {
    caps.native_unsupported_reason = "not measured at this point";
  }
  return caps;
}

double predicted(const core::Plan& plan, Algorithm a) {
  const core::Prediction* p = core::prediction_of(plan, a);
  return p ? p->ms : NAN;
}

int run(const std::string& table_path, const std::string& points_path, bool rules,
        std::ostream& residuals, std::ostream& tails) {
  std::optional<core::CostTable> table;
  if (!rules) {
    std::ifstream file(table_path);
    if (!file) throw std::runtime_error("cannot read " + table_path);
    std::stringstream text;
    text << file.rdbuf();
    table = core::parse_cost_table(text.str(), table_path);
    table->calibrated = true;  // replayed as deciding, whatever its status line says
  }
  std::ifstream points(points_path);
  if (!points) throw std::runtime_error("cannot read " + points_path);

  std::printf("%-3s %-2s %-12s %-20s %9s %9s %9s %-10s %-17s %s\n", "op", "W", "link", "shape",
              "native", "pipelined", "decomposed", "pick", "pred/meas n/p/d", "verdict");
  int ok = 0, total = 0, lineno = 0, unnamed = 0;
  std::vector<double> ratios;
  std::string line;
  while (std::getline(points, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    Point p;
    try {
      p = parse_point(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(points_path + ": line " + std::to_string(lineno) + ": " + e.what());
    }
    if (!p.measured.count(Algorithm::decomposed)) continue;
    // Native ran, but with a config the line does not name (a run from
    // before the JSON named it, where auto picked another algorithm): the
    // planner's rules for it cannot be replayed.
    if (p.measured.count(Algorithm::native) && p.config == "-") {
      ++unnamed;
      continue;
    }
    const core::BackendCaps caps = caps_for(p, table ? &*table : nullptr);
    std::string no_link;
    const auto link = table ? core::resolve_link(*table, p.link, &no_link) : std::nullopt;
    if (tails && link && !caps.native_configs.empty() && p.problem.world_size > 1 &&
        p.problem.op == core::OpKind::all_gather_matmul) {
      // The model's two tails for the measured config (library / kernel).
      const core::NativeConfig& c = caps.native_configs.front();
      const auto native_ms = [&](asynctp::NativeTail tail) {
        return core::predict(p.problem, Algorithm::native, *table, *link, &c, tail).ms;
      };
      tails << line << ' '
            << native_ms(asynctp::NativeTail::library) / native_ms(asynctp::NativeTail::kernel)
            << '\n';
    }
    core::ResolvedOptions options;
    options.native_tail = asynctp::NativeTail::kernel;
    const core::Plan plan = core::plan(p.problem, caps, options);
    double best = 1e300;
    for (const auto& [a, ms] : p.measured) best = std::min(best, ms);
    const auto pick = p.measured.find(plan.algorithm);
    const bool good = pick != p.measured.end() && pick->second <= 1.03 * best &&
                      pick->second <= 1.02 * p.measured.at(Algorithm::decomposed);
    ok += good;
    ++total;
    std::string rat;
    for (Algorithm a : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      const double pr = predicted(plan, a);
      const auto m = p.measured.find(a);
      char buf[16] = "-";
      if (std::isfinite(pr) && m != p.measured.end()) {
        std::snprintf(buf, sizeof buf, "%.2f", pr / m->second);
        ratios.push_back(pr / m->second);
        if (residuals) {
          const core::Prediction* q = core::prediction_of(plan, a);
          residuals << asynctp::to_string(a) << ' ' << line << ' ' << q->ms - q->fixed_ms << ' '
                    << q->fixed_ms << '\n';
        }
      }
      if (!rat.empty()) rat += '/';
      rat += buf;
    }
    const auto cell = [&](Algorithm a) {
      const auto m = p.measured.find(a);
      char buf[16];
      if (m == p.measured.end()) return std::string("        -");
      std::snprintf(buf, sizeof buf, "%9.3f", m->second);
      return std::string(buf);
    };
    const std::string shape = std::to_string(p.global_m) + "x" + std::to_string(p.problem.n) + "x" +
                              std::to_string(p.global_k) +
                              (p.problem.b_layout == core::Layout::col_major ? ":col" : "");
    std::printf("%-3s %-2d %-12s %-20s %s %s %s %-10s %-17s %s\n",
                p.problem.op == core::OpKind::matmul_reduce_scatter ? "rs" : "ag",
                p.problem.world_size, p.link_name.c_str(), shape.c_str(),
                cell(Algorithm::native).c_str(), cell(Algorithm::pipelined).c_str(),
                cell(Algorithm::decomposed).c_str(), asynctp::to_string(plan.algorithm),
                rat.c_str(), good ? "ok" : "MISS");
  }
  if (total == 0) throw std::runtime_error(points_path + ": no point with a decomposed time");
  std::printf("# verdict: %d of %d points ok (%.0f %%; target >= 95 %%)\n", ok, total,
              100.0 * ok / total);
  if (unnamed > 0) {
    std::printf("# %d point%s skipped: native ran with a config the line does not name\n", unnamed,
                unnamed > 1 ? "s" : "");
  }
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    const auto q = [&](double f) { return ratios[std::size_t(f * double(ratios.size() - 1))]; };
    std::printf(
        "# predicted / measured over %zu timings: median %.2f, p10 %.2f, p90 %.2f, "
        "min %.2f, max %.2f\n",
        ratios.size(), q(0.5), q(0.1), q(0.9), ratios.front(), ratios.back());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool rules = !args.empty() && args.front() == "--rules";
  if (rules) args.erase(args.begin());
  if (args.size() != (rules ? 1u : 2u)) {
    std::fprintf(stderr, "usage: %s TABLE POINTS | --rules POINTS\n", argv[0]);
    return 2;
  }
  try {
    // ASYNCTP_REPLAY_RESIDUALS=FILE: each prediction less its fixed cost,
    // beside the point's line, for fitting the fixed costs to the grid.
    std::ofstream residuals;
    if (const char* path = std::getenv("ASYNCTP_REPLAY_RESIDUALS")) residuals.open(path);
    // ASYNCTP_REPLAY_TAILS=FILE: native's predicted library / kernel tail per point.
    std::ofstream tails;
    if (const char* path = std::getenv("ASYNCTP_REPLAY_TAILS")) tails.open(path);
    return run(rules ? "" : args[0], args.back(), rules, residuals, tails);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asynctp_planner_replay: %s\n", e.what());
    return 1;
  }
}
