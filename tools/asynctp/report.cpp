#include "report.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "backend.hpp"
#include "core/reference.hpp"
#include "json_writer.hpp"

#ifndef ASYNCTP_VERSION
#define ASYNCTP_VERSION "unknown"
#endif

namespace asynctp::tool {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

const char* layout_name(const RunArgs& args) { return args.b_col_major ? "col" : "row"; }

std::string planner_line(const RunReport& r) {
  const char* choice = r.planner_algorithm ? to_string(*r.planner_algorithm) : "cannot run";
  return std::string("# planner (auto): ") + choice + " \u2014 " + r.planner_reason + "\n";
}

std::string header(const RunReport& r) {
  const RunArgs& a = r.args;
  std::string out;
  out += "# asynctp " ASYNCTP_VERSION " run: fused all-gather + matmul, C = allgather(A) @ B\n";
  out += "# command: " + r.command_line + "\n";
  out += format("# backend %s, world size %d, %s\n", r.backend.c_str(), a.world_size,
                r.backend_description.c_str());
  out += format("# M %lld (m %lld per rank), N %lld, K %lld, dtype %s, B layout %s\n",
                static_cast<long long>(a.m_global), static_cast<long long>(a.m_per_rank()),
                static_cast<long long>(a.n), static_cast<long long>(a.k), to_string(a.dtype),
                layout_name(a));
  out += format("# iters %d, warmup %d, seed %llu (repeat with --seed %llu)\n", a.iters, a.warmup,
                static_cast<unsigned long long>(a.seed), static_cast<unsigned long long>(a.seed));
  out += "# time: median over iterations of " + r.timing_rule + "\n";
  out += "#\n";
  return out;
}

std::string row(const RunReport& r, const AlgorithmResult& result) {
  if (!result.available) {
    return format("%-20s %12s %10s %9s %10s   unavailable: %s\n", result.label.c_str(), "-", "-",
                  "-", "-", result.reason.c_str());
  }
  const auto speedup = r.speedup_vs_decomposed(result);
  const std::string speedup_text = speedup ? format("%.2fx", *speedup) : "-";
  std::string error_text = "-";
  std::string status = "ok";
  if (result.check) {
    error_text = std::isfinite(result.check->max_rel_error)
                     ? format("%.2e", result.check->max_rel_error)
                     : "inf";
    if (!result.check->ok) status = "WRONG";
  }
  if (result.planner_choice) status += "  <- planner";
  return format("%-20s %12.3f %10.4f %9s %10s   %s\n", result.label.c_str(), result.median_ms,
                r.tflops_per_rank(result), speedup_text.c_str(), error_text.c_str(),
                status.c_str());
}

std::string footer(const RunReport& r) {
  const RunArgs& a = r.args;
  if (!a.check) return "# check: not run (add --check to compare against a float64 reference)\n";
  std::string out;
  for (const AlgorithmResult& result : r.algorithms) {
    if (!result.check) continue;
    for (const std::string& failure : result.check->failures) {
      out += "# WRONG: " + result.label + ": " + failure + "\n";
    }
  }
  if (out.empty()) {
    out = format(
        "# check: all %d ranks within tolerance %.1e (relative Frobenius error vs "
        "float64), gathered A bitwise equal, for every algorithm run\n",
        a.world_size, core::error_tolerance(a.dtype));
  }
  return out;
}

}  // namespace

double RunReport::tflops_per_rank(const AlgorithmResult& result) const {
  if (!result.available || result.median_ms <= 0) return 0;
  const double flops = 2.0 * static_cast<double>(args.m_global) * static_cast<double>(args.n) *
                       static_cast<double>(args.k);
  return flops / (result.median_ms * 1e-3) / 1e12;
}

std::optional<double> RunReport::speedup_vs_decomposed(const AlgorithmResult& result) const {
  if (!result.available || result.median_ms <= 0) return std::nullopt;
  for (const AlgorithmResult& other : algorithms) {
    if (other.available && other.algorithm == Algorithm::decomposed && other.median_ms > 0) {
      return other.median_ms / result.median_ms;
    }
  }
  return std::nullopt;
}

bool RunReport::checks_ok() const {
  for (const AlgorithmResult& result : algorithms) {
    if (result.check && !result.check->ok) return false;
  }
  return true;
}

std::string format_table(const RunReport& r) {
  std::string out = header(r);
  out += format("#%-19s %12s %10s %9s %10s   %s\n", " algorithm", "time", "TFLOP/s", "speedup",
                "max rel", "status");
  out += format("#%-19s %12s %10s %9s %10s\n", "", "(ms)", "(per rank)", "(vs dec.)", "error");
  for (const AlgorithmResult& result : r.algorithms) out += row(r, result);
  out += "#\n";
  out += planner_line(r);
  out += footer(r);
  if (r.trace_written) {
    out += "# trace written to " + *r.trace_written +
           " (open in https://ui.perfetto.dev or chrome://tracing)\n";
  }
  return out;
}

std::string format_json(const RunReport& r) {
  const RunArgs& a = r.args;
  JsonWriter j;
  j.begin_object();
  j.key("tool");
  j.value("asynctp");
  j.key("version");
  j.value(ASYNCTP_VERSION);
  j.key("command");
  j.value(r.command_line);
  j.key("backend");
  j.value(r.backend);
  j.key("world_size");
  j.value(a.world_size);
  j.key("backend_detail");
  j.value(r.backend_description);
  j.key("timing");
  j.value(r.timing_rule);
  // A GPU backend has no host GEMM workers: null rather than a made-up 0.
  j.key("gemm_workers_per_rank");
  if (r.workers_per_rank > 0)
    j.value(r.workers_per_rank);
  else
    j.null();
  if (r.backend != "cpu") {  // a GPU backend: cuda or hip
    j.key("device");
    j.value(a.device_or_default());
    j.key("link");
    j.value(to_string(gpu_link_for(a)));
    j.key("link_gbps");
    if (gpu_link_for(a) == LinkChoice::arrival)
      j.value(a.link_gbps_or_default());
    else
      j.null();
  }
  j.key("M");
  j.value(a.m_global);
  j.key("m_per_rank");
  j.value(a.m_per_rank());
  j.key("N");
  j.value(a.n);
  j.key("K");
  j.value(a.k);
  j.key("dtype");
  j.value(to_string(a.dtype));
  j.key("b_layout");
  j.value(layout_name(a));
  j.key("iters");
  j.value(a.iters);
  j.key("warmup");
  j.value(a.warmup);
  j.key("seed");
  j.value(static_cast<std::uint64_t>(a.seed));
  j.key("check");
  j.value(a.check);
  j.key("tolerance");
  if (a.check) {
    j.value(core::error_tolerance(a.dtype));
  } else {
    j.null();
  }
  j.key("planner");
  j.begin_object();
  j.key("algorithm");
  if (r.planner_algorithm)
    j.value(to_string(*r.planner_algorithm));
  else
    j.null();
  j.key("reason");
  j.value(r.planner_reason);
  j.end_object();

  j.key("algorithms");
  j.begin_array();
  for (const AlgorithmResult& result : r.algorithms) {
    j.begin_object();
    j.key("name");
    j.value(result.label);
    j.key("algorithm");
    j.value(to_string(result.algorithm));
    j.key("available");
    j.value(result.available);
    if (!result.available) {
      j.key("reason");
      j.value(result.reason);
    }
    j.key("planner_choice");
    j.value(result.planner_choice);
    if (result.available && result.algorithm == Algorithm::native) {
      j.key("tile_m");
      j.value(result.tile_m);
      j.key("tile_n");
      j.value(result.tile_n);
    }
    j.key("median_ms");
    if (result.available)
      j.value(result.median_ms);
    else
      j.null();
    j.key("iteration_ms");
    j.begin_array(true);
    for (double ms : result.iteration_ms) j.value(ms);
    j.end_array();
    j.key("tflops_per_rank");
    if (result.available)
      j.value(r.tflops_per_rank(result));
    else
      j.null();
    j.key("speedup_vs_decomposed");
    if (const auto speedup = r.speedup_vs_decomposed(result))
      j.value(*speedup);
    else
      j.null();
    // Infinite errors (non-finite outputs) print as null; check_ok still says false.
    j.key("max_rel_error");
    if (result.check)
      j.value(result.check->max_rel_error);
    else
      j.null();
    j.key("check_ok");
    if (result.check)
      j.value(result.check->ok);
    else
      j.null();
    if (result.check && !result.check->failures.empty()) {
      j.key("check_failures");
      j.begin_array();
      for (const std::string& failure : result.check->failures) j.value(failure);
      j.end_array();
    }
    j.end_object();
  }
  j.end_array();

  j.key("check_ok");
  if (a.check)
    j.value(r.checks_ok());
  else
    j.null();
  j.key("trace_file");
  if (r.trace_written)
    j.value(*r.trace_written);
  else
    j.null();
  j.end_object();
  return j.str();
}

}  // namespace asynctp::tool
