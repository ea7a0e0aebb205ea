#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <string>

#include "asynctp/bench.hpp"
#include "asynctp/verify.hpp"
#include "json_writer.hpp"

namespace asynctp::tool {
namespace {

[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string optional_number(const std::optional<double>& value, const char* fmt) {
  return value ? format(fmt, *value) : "-";
}

// The op: what the report calls it and says of its check, the work of one
// call, and the bytes a rank receives.
struct OpFacts {
  const char* title;       // and its formula
  const char* k_per;       // what K is counted per: "" or " per rank"
  const char* check_also;  // what --check compares beyond the outputs
  // The relative Frobenius bound every output is checked against; none
  // where the check is elementwise, against a bound computed from the inputs.
  std::optional<double> tolerance;
  double peer_elements;  // elements each rank receives from its W - 1 peers
  // What the serialized loopback links model (bench's header); the arrival
  // line takes the link's GB/s.
  const char* pcie_model;
  const char* arrival_model;
};

OpFacts facts_of(const Args& a) {
  const auto peer_rows = static_cast<double>(a.m_global - a.m_per_rank());
  switch (a.op) {
    case Op::all_gather_matmul:
      return {a.gathered ? "fused all-gather + matmul, C = allgather(A) @ B"
                         : "fused all-gather + matmul, C = allgather(A) @ B (C alone, "
                           "--no-gathered)",
              "",
              a.gathered ? ", gathered A bitwise equal" : "",
              verify::tolerance(a.dtype),
              peer_rows * static_cast<double>(a.k),
              "each peer chunk goes device -> pinned host -> device on copy engines (real PCIe "
              "transfers)",
              "peer chunks are placed before the GEMM starts; chunk i's signal is released no "
              "earlier than (i + 1) * chunk bytes / %g GB/s"};
    case Op::matmul_reduce_scatter:
      return {"fused matmul + reduce-scatter, out_r = rows r of sum_s A_s @ B_s",
              " per rank",
              "",
              std::nullopt,
              peer_rows * static_cast<double>(a.n),
              "the peers' partials of this rank's rows are computed before the span; each goes "
              "device -> pinned host -> device on this rank's copy engines once its own chunk of "
              "the same ring step is computed, when the peer's would ship (real PCIe transfers)",
              "the peers' partials of this rank's rows are placed before the GEMM starts; slot i "
              "is ready one transfer (chunk bytes / %g GB/s) after this rank's own chunk of ring "
              "step i"};
  }
  return {"unknown op", "", "", std::nullopt, 0, "", "%g"};
}

// Figures derived from the rows: speedups compare with decomposed over the
// same link, overlap also with the library GEMM baseline there (bench).

double tflops(const Report& r, const Row& row) {
  if (!row.available || row.median_ms <= 0) return 0;
  // Each rank's GEMM, in either op: M x N outputs of K multiply-adds.
  const double flops = 2.0 * static_cast<double>(r.args.m_global) * static_cast<double>(r.args.n) *
                       static_cast<double>(r.args.k);
  return flops / (row.median_ms * 1e-3) / 1e12;
}

// The median of the available row that ran `algorithm` over `link`
// (nullopt: the library GEMM baseline).
std::optional<double> median_of(const Report& r, const std::string& link,
                                std::optional<Algorithm> algorithm) {
  for (const Row& row : r.rows) {
    if (row.link == link && row.algorithm == algorithm && row.available) return row.median_ms;
  }
  return std::nullopt;
}

std::optional<double> speedup(const Report& r, const Row& row) {
  const auto decomposed = median_of(r, row.link, Algorithm::decomposed);
  if (!row.available || !row.algorithm || !decomposed || row.median_ms <= 0) return std::nullopt;
  return *decomposed / row.median_ms;
}

std::optional<bench::Overlap> overlap(const Report& r, const std::string& link) {
  const auto decomposed = median_of(r, link, Algorithm::decomposed);
  const auto gemm = median_of(r, link, std::nullopt);
  if (!decomposed || !gemm) return std::nullopt;
  return bench::Overlap::of(*decomposed, *gemm);
}

// An algorithm's overlap efficiency and ideal/time.
std::optional<double> efficiency(const Report& r, const Row& row) {
  const auto o = row.algorithm ? overlap(r, row.link) : std::nullopt;
  return o ? o->efficiency(row.median_ms) : std::nullopt;
}
std::optional<double> ideal_over_time(const Report& r, const Row& row) {
  const auto o = row.algorithm ? overlap(r, row.link) : std::nullopt;
  return o ? o->ideal_over(row.median_ms) : std::nullopt;
}

// The table: columns as data, then '#' header rows of names and units.

struct Column {
  const char* title;
  const char* unit;
  int width;  // negative: text, left-aligned, shown on unavailable rows too
  std::string (*cell)(const Report& r, const Row& row);
};

std::string label(const Report&, const Row& row) { return row.label; }
std::string time_ms(const Report&, const Row& row) { return format("%.3f", row.median_ms); }
std::string speedup_x(const Report& r, const Row& row) {
  return optional_number(speedup(r, row), "%.2fx");
}
std::string max_error(const Report&, const Row& row) {
  if (!row.check) return "-";
  return std::isfinite(row.check->max_relative_error)
             ? format("%.2e", row.check->max_relative_error)
             : "inf";
}

const std::vector<Column> kRunColumns = {
    {" algorithm", "", -20, label},
    {"time", "(ms)", 12, time_ms},
    {"TFLOP/s", "(per rank)", 10,
     [](const Report& r, const Row& row) { return format("%.4f", tflops(r, row)); }},
    {"speedup", "(vs dec.)", 9, speedup_x},
    {"max rel", "error", 10, max_error},
};
const std::vector<Column> kBenchColumns = {
    {"link", "", -8, [](const Report&, const Row& row) { return row.link; }},
    {"algorithm", "", -11, label},
    {"time", "(ms)", 10, time_ms},
    {"TFLOP/s", "", 9,
     [](const Report& r, const Row& row) { return format("%.1f", tflops(r, row)); }},
    {"speedup", "(vs dec.)", 9, speedup_x},
    {"overlap", "eff.", 8,
     [](const Report& r, const Row& row) { return optional_number(efficiency(r, row), "%.2f"); }},
    {"ideal", "/ time", 8,
     [](const Report& r, const Row& row) {
       return optional_number(ideal_over_time(r, row), "%.2f");
     }},
    {"max rel", "error", 9, max_error},
};

// Each column's cell padded to its width, one space apart.
template <typename Cell>
std::string line(const std::vector<Column>& columns, Cell cell) {
  std::string out;
  for (const Column& column : columns) {
    const std::string text = cell(column);
    const auto room = static_cast<std::size_t>(std::abs(column.width));
    const std::string fill(text.size() < room ? room - text.size() : 0, ' ');
    if (!out.empty()) out += ' ';
    out += column.width < 0 ? text + fill : fill + text;
  }
  return out;
}

// A header row's first cell carries the '#'.
std::string header_row(const std::vector<Column>& columns, const char* Column::*text) {
  return line(columns, [&](const Column& c) {
    return std::string(&c == &columns.front() ? "#" : "") + c.*text;
  });
}

std::string table_row(const Report& r, const std::vector<Column>& columns, const Row& row) {
  const std::string cells = line(columns, [&](const Column& c) {
    return row.available || c.width < 0 ? c.cell(r, row) : "-";
  });
  if (!row.available) return cells + "   unavailable: " + row.reason + "\n";
  std::string status = row.check && !row.check->ok ? "WRONG" : "ok";
  if (row.planner_choice) status += "  <- planner";
  if (row.measured_choice) status += "  <- measured choice";
  if (!row.algorithm) status += " (T_gemm)";
  return cells + "   " + status + "\n";
}

// What ran, the command, where, the problem, and how to repeat it.
std::string header(const Report& r, const std::string& what, const std::string& where) {
  const Args& a = r.args;
  return std::string("# asynctp ") + kVersion + " " + what + "\n# command: " + r.command_line +
         "\n# " + where + "\n" +
         format("# M %lld (m %lld per rank), N %lld, K %lld%s, dtype %s, B layout %s\n",
                static_cast<long long>(a.m_global), static_cast<long long>(a.m_per_rank()),
                static_cast<long long>(a.n), static_cast<long long>(a.k), facts_of(a).k_per,
                to_string(a.dtype), a.b_col_major ? "col" : "row") +
         format("# iters %d, warmup %d, seed %llu (repeat with --seed %llu)\n", a.iters, a.warmup,
                static_cast<unsigned long long>(a.seed), static_cast<unsigned long long>(a.seed));
}

std::string run_header(const Report& r) {
  return header(r, std::string("run: ") + facts_of(r.args).title,
                format("backend %s, world size %d, %s", r.backend.name.c_str(), r.args.world_size,
                       r.backend.detail.c_str())) +
         "# time: median over iterations of " + r.backend.timing_rule + "\n";
}

std::string bench_header(const Report& r) {
  std::string out = header(
      r, std::string("bench: single-GPU overlap of ") + facts_of(r.args).title,
      format("device %d: %s; %d ranks (loopback links: virtual ranks on this GPU, serialized)",
             r.args.device_or_default(), r.device_name.c_str(), r.args.world_size));
  for (LinkChoice link : r.args.links) {
    const OpFacts op = facts_of(r.args);
    out +=
        link == LinkChoice::pcie ? std::string("# link pcie: ") + op.pcie_model + "\n"
        : link == LinkChoice::nccl
            ? "# link nccl: real GPUs, rank r on GPU r, one process; native and pipelined pull "
              "peer chunks from NCCL symmetric memory, decomposed is ncclAllGather + cuBLAS; "
              "time = the slowest rank's span, ranks released together\n"
            : "# link arrival: " + format(op.arrival_model, r.args.link_gbps_or_default()) + "\n";
  }
  return out +
         "# time: per rank, median over rounds; a round times one iteration of each algorithm\n"
         "#   and of the cuBLAS GEMM (W times on a loopback link), so all run at the same clocks;\n"
         "#   the order rotates from round to round.\n"
         "#   Loopback links: the mean of the ranks' own call spans (CUDA events where a rank's\n"
         "#   work begins and where it is joined; ranks serialized; the arrival link places the\n"
         "#   peer chunks before the span, its release times stand for the transfer); nccl: the\n"
         "#   slowest rank's call. cublas: rank 0's whole GEMM alone (T_gemm).\n"
         "#   T_comm = T_decomposed - T_gemm (derived, not measured: decomposed runs the\n"
         "#   communication and the GEMM one after the other, no overlap)\n";
}

std::string link_footer(const Report& r, LinkChoice link) {
  const std::string name = to_string(link);
  const auto o = overlap(r, name);
  std::string out = format("# %s: T_gemm %.3f ms, T_comm %s ms (= T_decomposed - T_gemm)",
                           name.c_str(), median_of(r, name, std::nullopt).value_or(0),
                           o ? format("%.3f", o->t_comm_ms).c_str() : "-");
  if (o) out += format(", ideal max(T_comm, T_gemm) %.3f ms", o->ideal_ms());
  if (link == LinkChoice::arrival) {
    // What the release times alone add up to: the last peer chunk's arrival.
    const double peer_bytes =
        facts_of(r.args).peer_elements * static_cast<double>(element_size(r.args.dtype));
    out += format("; modelled transfer %.3f ms",
                  peer_bytes / (r.args.link_gbps_or_default() * 1e9) * 1e3);
  }
  if (o && o->t_comm_ms <= 0)
    out += "; T_comm <= 0: the communication is lost in noise, no efficiency";
  return out + "\n";
}

// --clocks: each row's SM clock after its timed rounds, median (min-max).
std::string clocks_footer(const Report& r) {
  if (!r.args.clocks) return "";
  std::string out;
  for (const Row& row : r.rows) {
    if (row.clock_mhz.empty()) continue;
    const auto [low, high] = std::minmax_element(row.clock_mhz.begin(), row.clock_mhz.end());
    out += format("%s %s%s %.0f (%.0f-%.0f)", out.empty() ? "#" : ";",
                  row.link.empty() ? "" : (row.link + " ").c_str(), row.label.c_str(),
                  bench::median(row.clock_mhz), *low, *high);
  }
  return "# SM clock (MHz) after each round's last timed call, median (min-max):\n" +
         (out.empty() ? std::string("# none recorded") : out) + "\n";
}

std::string check_footer(const Report& r) {
  const Args& a = r.args;
  if (!a.check) return "# check: not run (add --check to compare against a float64 reference)\n";
  std::string out;
  for (const Row& row : r.rows) {
    for (const std::string& failure :
         row.check ? row.check->failures : std::vector<std::string>{}) {
      out += "# WRONG: " + (row.link.empty() ? "" : row.link + " ") + row.label + ": " + failure +
             "\n";
    }
  }
  if (!out.empty()) return out;
  const OpFacts op = facts_of(a);
  const std::string by_inputs =
      "within an error bound computed from the inputs element by element (every rounding step "
      "bounded)";
  if (a.command == Command::bench) {
    const std::string within =
        op.tolerance ? format("within %.1e of the float64 reference (relative Frobenius error)",
                              *op.tolerance)
                     : by_inputs;
    return format(
        "# check: every algorithm's output on all %d ranks %s%s, the cuBLAS C within %.1e\n",
        a.world_size, within.c_str(), op.check_also, verify::tolerance(a.dtype));
  }
  const std::string within =
      op.tolerance
          ? format("within tolerance %.1e (relative Frobenius error vs float64)", *op.tolerance)
          : by_inputs;
  return format("# check: all %d ranks %s%s, for every algorithm run\n", a.world_size,
                within.c_str(), op.check_also);
}

template <typename T>
std::optional<T> when(bool known, const T& value) {
  return known ? std::optional<T>(value) : std::nullopt;
}

void json_head(JsonWriter& j, const char* tool, const Report& r) {
  j.open('{');
  j.field("tool", tool);
  j.field("version", kVersion);
  j.field("command", r.command_line);
  j.field("op", to_string(r.args.op));
}

void json_problem(JsonWriter& j, const Args& a) {
  j.field("M", a.m_global);
  j.field("m_per_rank", a.m_per_rank());
  j.field("N", a.n);
  j.field("K", a.k);
  j.field("dtype", to_string(a.dtype));
  j.field("b_layout", a.b_col_major ? "col" : "row");
  if (a.op == Op::all_gather_matmul) j.field("gathered_out", a.gathered);
  j.field("iters", a.iters);
  j.field("warmup", a.warmup);
  j.field("seed", static_cast<std::uint64_t>(a.seed));
}

// Infinite errors (non-finite outputs) print as null; check_ok still says false.
void json_check(JsonWriter& j, const Row& row) {
  j.field("max_rel_error", row.check ? std::optional(row.check->max_relative_error) : std::nullopt);
  j.field("check_ok", row.check ? std::optional(row.check->ok) : std::nullopt);
  if (row.check && !row.check->failures.empty()) j.field("check_failures", row.check->failures);
}

void json_run_row(JsonWriter& j, const Report& r, const Row& row) {
  j.open('{');
  j.field("name", row.label);
  j.field("algorithm", to_string(row.algorithm.value_or(Algorithm::decomposed)));
  j.field("available", row.available);
  // Why it cannot run, or the plan it ran with (native: its kernel config).
  j.field("reason", row.reason);
  j.field("planner_choice", row.planner_choice);
  j.field("measured_choice", row.measured_choice);
  if (row.available && row.algorithm == Algorithm::native) {
    j.field("tile_m", row.tile_m);
    j.field("tile_n", row.tile_n);
  }
  j.field("median_ms", when(row.available, row.median_ms));
  j.field("predicted_ms", when(row.available && row.predicted_ms > 0, row.predicted_ms));
  j.field("iteration_ms", row.iteration_ms);
  j.field("sm_clock_mhz", when(r.args.clocks, row.clock_mhz));
  j.field("tflops_per_rank", when(row.available, tflops(r, row)));
  j.field("speedup_vs_decomposed", speedup(r, row));
  json_check(j, row);
  j.close();
}

// An algorithm's row, or (no algorithm) the GEMM baseline's.
void json_bench_row(JsonWriter& j, const Report& r, const Row& row) {
  j.open('{');
  if (row.algorithm) {
    j.field("algorithm", to_string(*row.algorithm));
    j.field("available", row.available);
    j.field("reason", row.reason);
  }
  if (row.available) {
    j.field("median_ms", row.median_ms);
    j.field("iteration_ms", row.iteration_ms);
    j.field("sm_clock_mhz", when(r.args.clocks, row.clock_mhz));
    j.field("tflops", tflops(r, row));
    json_check(j, row);
  }
  if (row.available && row.algorithm) {
    j.field("speedup_vs_decomposed", speedup(r, row));
    j.field("overlap_efficiency", efficiency(r, row));
    j.field("ideal_over_time", ideal_over_time(r, row));
  }
  j.close();
}

std::string run_json(const Report& r) {
  const Args& a = r.args;
  JsonWriter j;
  json_head(j, "asynctp", r);
  j.field("backend", r.backend.name);
  j.field("world_size", a.world_size);
  j.field("backend_detail", r.backend.detail);
  j.field("timing", r.backend.timing_rule);
  // A GPU backend has no host GEMM workers: null rather than a made-up 0.
  const int workers = r.backend.gemm_workers_per_rank;
  j.field("gemm_workers_per_rank", when(workers > 0, workers));
  if (r.backend.name != "cpu") {
    j.field("device", a.device_or_default());
    j.field("link", to_string(r.link));
    j.field("link_gbps", when(r.link == LinkChoice::arrival, a.link_gbps_or_default()));
  }
  json_problem(j, a);
  j.field("check", a.check);
  j.field("tolerance", a.check ? facts_of(a).tolerance : std::nullopt);
  j.key("planner");
  j.open('{');
  j.field("algorithm",
          when(r.planner_algorithm.has_value(),
               std::string(to_string(r.planner_algorithm.value_or(Algorithm::automatic)))));
  j.field("reason", r.planner_reason);
  j.close();
  j.key("algorithms");
  j.open('[');
  for (const Row& row : r.rows) json_run_row(j, r, row);
  j.close();
  j.field("check_ok", when(a.check, r.checks_ok()));
  j.field("trace_file", r.trace_written);
  j.close();
  return j.str();
}

std::string bench_json(const Report& r) {
  const Args& a = r.args;
  JsonWriter j;
  json_head(j, "asynctp bench", r);
  j.field("device", a.device_or_default());
  j.field("device_name", r.device_name);
  j.field("world_size", a.world_size);
  json_problem(j, a);
  j.field("t_comm_rule", "T_comm = T_decomposed - T_gemm (derived)");
  j.key("links");
  j.open('[');
  for (LinkChoice link : a.links) {
    const std::string name = to_string(link);
    const auto o = overlap(r, name);
    j.open('{');
    j.field("link", name);
    j.field("link_gbps", when(link == LinkChoice::arrival, a.link_gbps_or_default()));
    j.field("t_gemm_ms", median_of(r, name, std::nullopt).value_or(0));
    j.field("t_comm_ms", o ? std::optional(o->t_comm_ms) : std::nullopt);
    j.field("ideal_ms", o ? std::optional(o->ideal_ms()) : std::nullopt);
    for (const Row& row : r.rows) {
      if (row.link != name || row.algorithm) continue;
      j.key("gemm");
      json_bench_row(j, r, row);
    }
    j.key("algorithms");
    j.open('[');
    for (const Row& row : r.rows) {
      if (row.link == name && row.algorithm) json_bench_row(j, r, row);
    }
    j.close();
    j.close();
  }
  j.close();
  j.field("check_ok", when(a.check, r.checks_ok()));
  j.close();
  return j.str();
}

}  // namespace

bool Report::checks_ok() const {
  return std::none_of(rows.begin(), rows.end(),
                      [](const Row& row) { return row.check && !row.check->ok; });
}

namespace {

// The cost model's prediction beside each timed row's median.
std::string predicted_footer(const Report& r) {
  std::string out;
  for (const Row& row : r.rows) {
    if (!row.available || row.predicted_ms <= 0) continue;
    out +=
        format("%s %s %.3f ms, measured %.3f (predicted / measured %.2f)",
               out.empty() ? "# predicted (cost model):" : ";", row.label.c_str(), row.predicted_ms,
               row.median_ms, row.median_ms > 0 ? row.predicted_ms / row.median_ms : 0.0);
  }
  return out.empty() ? "# predicted (cost model): none (the planner's reason says why)\n"
                     : out + "\n";
}

}  // namespace

std::string format_table(const Report& r) {
  const bool bench = r.args.command == Command::bench;
  const std::vector<Column>& columns = bench ? kBenchColumns : kRunColumns;
  std::string out = (bench ? bench_header(r) : run_header(r)) + "#\n";
  out += header_row(columns, &Column::title) + "   status\n";
  out += header_row(columns, &Column::unit) + "\n";
  for (const Row& row : r.rows) out += table_row(r, columns, row);
  out += "#\n";
  if (bench) {
    for (LinkChoice link : r.args.links) out += link_footer(r, link);
    out +=
        "# overlap eff. = (T_comm + T_gemm - T) / min(T_comm, T_gemm): 1 = perfect overlap, 0 "
        "= none\n";
  } else {
    out += std::string("# planner (auto): ") +
           (r.planner_algorithm ? to_string(*r.planner_algorithm) : "cannot run") + " \u2014 " +
           r.planner_reason + "\n";
    out += predicted_footer(r);
  }
  out += clocks_footer(r);
  out += check_footer(r);
  if (r.trace_written) {
    out += "# trace written to " + *r.trace_written +
           " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  }
  return out;
}

std::string format_json(const Report& r) {
  return r.args.command == Command::bench ? bench_json(r) : run_json(r);
}

}  // namespace asynctp::tool
