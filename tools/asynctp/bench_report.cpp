#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

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

std::string optional_number(const std::optional<double>& value, const char* fmt) {
  return value ? format(fmt, *value) : "-";
}

std::string link_label(const BenchLink& l) { return to_string(l.link); }

std::string check_cells(const BenchTiming& t, std::string& status) {
  status = "ok";
  if (!t.check) return "-";
  if (!t.check->ok) status = "WRONG";
  return std::isfinite(t.check->max_rel_error) ? format("%.2e", t.check->max_rel_error) : "inf";
}

std::string algorithm_row(const BenchReport& r, const BenchLink& l, const BenchAlgorithm& a) {
  const std::string label = link_label(l);
  if (!a.available) {
    return format("%-8s %-11s %10s %9s %9s %8s %8s %9s   unavailable: %s\n", label.c_str(),
                  to_string(a.algorithm), "-", "-", "-", "-", "-", "-", a.reason.c_str());
  }
  const double t = a.timing.median_ms;
  std::string status;
  const std::string error = check_cells(a.timing, status);
  return format("%-8s %-11s %10.3f %9.1f %9s %8s %8s %9s   %s\n", label.c_str(),
                to_string(a.algorithm), t, r.tflops(t),
                optional_number(l.speedup_vs_decomposed(t), "%.2fx").c_str(),
                optional_number(l.overlap_efficiency(t), "%.2f").c_str(),
                optional_number(l.ideal_over(t), "%.2f").c_str(), error.c_str(), status.c_str());
}

std::string gemm_row(const BenchReport& r, const BenchLink& l) {
  const double t = l.gemm.median_ms;
  std::string status;
  const std::string error = check_cells(l.gemm, status);
  return format("%-8s %-11s %10.3f %9.1f %9s %8s %8s %9s   %s (T_gemm)\n", link_label(l).c_str(),
                "cublas", t, r.tflops(t), "-", "-", "-", error.c_str(), status.c_str());
}

std::string link_footer(const BenchReport& r, const BenchLink& l) {
  const auto t_comm = l.t_comm_ms();
  std::string out =
      format("# %s: T_gemm %.3f ms, T_comm %s ms (= T_decomposed - T_gemm)", link_label(l).c_str(),
             l.gemm.median_ms, optional_number(t_comm, "%.3f").c_str());
  if (const auto ideal = l.ideal_ms()) out += format(", ideal max(T_comm, T_gemm) %.3f ms", *ideal);
  if (l.link == LinkChoice::arrival && l.link_gbps > 0) {
    // What the release times alone add up to: the last peer chunk's arrival.
    const double peer_bytes = static_cast<double>(r.args.m_global - r.args.m_per_rank()) *
                              static_cast<double>(r.args.k) * 2.0;
    out += format("; modelled transfer %.3f ms", peer_bytes / (l.link_gbps * 1e9) * 1e3);
  }
  if (t_comm && *t_comm <= 0)
    out += "; T_comm <= 0: the all-gather is lost in noise, no efficiency";
  return out + "\n";
}

std::string check_footer(const BenchReport& r) {
  if (!r.args.check)
    return "# check: not run (add --check to compare against a float64 reference)\n";
  std::string out;
  for (const BenchLink& l : r.links) {
    for (const BenchAlgorithm& a : l.algorithms) {
      if (!a.timing.check) continue;
      for (const std::string& failure : a.timing.check->failures) {
        out += "# WRONG: " + link_label(l) + " " + to_string(a.algorithm) + ": " + failure + "\n";
      }
    }
    if (l.gemm.check) {
      for (const std::string& failure : l.gemm.check->failures) {
        out += "# WRONG: " + link_label(l) + " cublas: " + failure + "\n";
      }
    }
  }
  if (out.empty()) {
    out = format(
        "# check: every algorithm's C on all %d ranks (and the cuBLAS C) within %.1e of the "
        "float64 reference (relative Frobenius error), gathered A bitwise equal\n",
        r.args.world_size, core::error_tolerance(DType::bf16));
  }
  return out;
}

void json_optional(JsonWriter& j, const char* key, const std::optional<double>& value) {
  j.key(key);
  if (value)
    j.value(*value);
  else
    j.null();
}

void json_timing(JsonWriter& j, const BenchReport& r, const BenchTiming& t) {
  j.key("median_ms");
  j.value(t.median_ms);
  j.key("iteration_ms");
  j.begin_array(true);
  for (double ms : t.iteration_ms) j.value(ms);
  j.end_array();
  j.key("tflops");
  j.value(r.tflops(t.median_ms));
  j.key("max_rel_error");
  if (t.check)
    j.value(t.check->max_rel_error);
  else
    j.null();
  j.key("check_ok");
  if (t.check)
    j.value(t.check->ok);
  else
    j.null();
  if (t.check && !t.check->failures.empty()) {
    j.key("check_failures");
    j.begin_array();
    for (const std::string& failure : t.check->failures) j.value(failure);
    j.end_array();
  }
}

}  // namespace

const BenchAlgorithm* BenchLink::find(Algorithm algorithm) const {
  for (const BenchAlgorithm& a : algorithms) {
    if (a.algorithm == algorithm && a.available) return &a;
  }
  return nullptr;
}

std::optional<double> BenchLink::t_comm_ms() const {
  const BenchAlgorithm* decomposed = find(Algorithm::decomposed);
  if (decomposed == nullptr) return std::nullopt;
  return decomposed->timing.median_ms - gemm.median_ms;
}

std::optional<double> BenchLink::ideal_ms() const {
  const auto t_comm = t_comm_ms();
  if (!t_comm) return std::nullopt;
  return std::max(*t_comm, gemm.median_ms);
}

std::optional<double> BenchLink::overlap_efficiency(double t_ms) const {
  const auto t_comm = t_comm_ms();
  if (!t_comm || *t_comm <= 0 || gemm.median_ms <= 0) return std::nullopt;
  return (*t_comm + gemm.median_ms - t_ms) / std::min(*t_comm, gemm.median_ms);
}

std::optional<double> BenchLink::ideal_over(double t_ms) const {
  const auto ideal = ideal_ms();
  if (!ideal || t_ms <= 0) return std::nullopt;
  return *ideal / t_ms;
}

std::optional<double> BenchLink::speedup_vs_decomposed(double t_ms) const {
  const BenchAlgorithm* decomposed = find(Algorithm::decomposed);
  if (decomposed == nullptr || t_ms <= 0) return std::nullopt;
  return decomposed->timing.median_ms / t_ms;
}

double BenchReport::tflops(double ms) const {
  if (ms <= 0) return 0;
  const double flops = 2.0 * static_cast<double>(args.m_global) * static_cast<double>(args.n) *
                       static_cast<double>(args.k);
  return flops / (ms * 1e-3) / 1e12;
}

bool BenchReport::checks_ok() const {
  for (const BenchLink& l : links) {
    if (l.gemm.check && !l.gemm.check->ok) return false;
    for (const BenchAlgorithm& a : l.algorithms) {
      if (a.timing.check && !a.timing.check->ok) return false;
    }
  }
  return true;
}

std::string describe_link(LinkChoice link, double link_gbps) {
  if (link == LinkChoice::pcie) {
    return "pcie: each peer chunk goes device -> pinned host -> device on copy engines (real "
           "PCIe transfers)";
  }
  if (link == LinkChoice::nccl) {
    return "nccl: real GPUs, rank r on GPU r, one process; native and pipelined pull peer "
           "chunks from NCCL symmetric memory, decomposed is ncclAllGather + cuBLAS; time = the "
           "slowest rank's span, ranks released together";
  }
  return format(
      "arrival: peer chunks are placed before the GEMM starts; chunk i's signal is released no "
      "earlier than (i + 1) * chunk bytes / %g GB/s",
      link_gbps);
}

std::string format_bench_table(const BenchReport& r) {
  const BenchArgs& a = r.args;
  std::string out;
  out += "# asynctp " ASYNCTP_VERSION " bench: single-GPU overlap of fused all-gather + matmul\n";
  out += "# command: " + r.command_line + "\n";
  out += format(
      "# device %d: %s; %d ranks (loopback links: virtual ranks on this GPU, "
      "serialized)\n",
      a.device, r.device_name.c_str(), a.world_size);
  out += format("# M %lld (m %lld per rank), N %lld, K %lld, dtype bf16, B layout %s\n",
                static_cast<long long>(a.m_global), static_cast<long long>(a.m_per_rank()),
                static_cast<long long>(a.n), static_cast<long long>(a.k),
                a.b_col_major ? "col" : "row");
  out += format("# iters %d, warmup %d, seed %llu (repeat with --seed %llu)\n", a.iters, a.warmup,
                static_cast<unsigned long long>(a.seed), static_cast<unsigned long long>(a.seed));
  for (const BenchLink& l : r.links) out += "# link " + describe_link(l.link, l.link_gbps) + "\n";
  out +=
      "# time: per rank, median over rounds; a round times one iteration of each algorithm,\n"
      "#   then the cuBLAS GEMM (W times on a loopback link), so all run at the same clocks.\n"
      "#   Loopback links: the mean of the ranks' own call spans (CUDA events where a rank's\n"
      "#   work begins and where it is joined; ranks serialized; the arrival link places the\n"
      "#   peer chunks before the span, its release times stand for the transfer); nccl: the\n"
      "#   slowest rank's call. cublas: one GEMM of the whole gathered problem (T_gemm).\n"
      "#   T_comm = T_decomposed - T_gemm (derived, not measured: decomposed is the all-gather\n"
      "#   followed by the GEMM, no overlap)\n";
  out += "#\n";
  out += format("#%-7s %-11s %10s %9s %9s %8s %8s %9s   %s\n", "link", "algorithm", "time",
                "TFLOP/s", "speedup", "overlap", "ideal", "max rel", "status");
  out += format("#%-7s %-11s %10s %9s %9s %8s %8s %9s\n", "", "", "(ms)", "", "(vs dec.)", "eff.",
                "/ time", "error");
  for (const BenchLink& l : r.links) {
    for (const BenchAlgorithm& algo : l.algorithms) out += algorithm_row(r, l, algo);
    out += gemm_row(r, l);
  }
  out += "#\n";
  for (const BenchLink& l : r.links) out += link_footer(r, l);
  out +=
      "# overlap eff. = (T_comm + T_gemm - T) / min(T_comm, T_gemm): 1 = perfect overlap, 0 = "
      "none\n";
  out += check_footer(r);
  return out;
}

std::string format_bench_json(const BenchReport& r) {
  const BenchArgs& a = r.args;
  JsonWriter j;
  j.begin_object();
  j.key("tool");
  j.value("asynctp bench");
  j.key("version");
  j.value(ASYNCTP_VERSION);
  j.key("command");
  j.value(r.command_line);
  j.key("device");
  j.value(a.device);
  j.key("device_name");
  j.value(r.device_name);
  j.key("world_size");
  j.value(a.world_size);
  j.key("M");
  j.value(a.m_global);
  j.key("m_per_rank");
  j.value(a.m_per_rank());
  j.key("N");
  j.value(a.n);
  j.key("K");
  j.value(a.k);
  j.key("dtype");
  j.value("bf16");
  j.key("b_layout");
  j.value(a.b_col_major ? "col" : "row");
  j.key("iters");
  j.value(a.iters);
  j.key("warmup");
  j.value(a.warmup);
  j.key("seed");
  j.value(static_cast<std::uint64_t>(a.seed));
  j.key("t_comm_rule");
  j.value("T_comm = T_decomposed - T_gemm (derived)");
  j.key("links");
  j.begin_array();
  for (const BenchLink& l : r.links) {
    j.begin_object();
    j.key("link");
    j.value(to_string(l.link));
    j.key("link_gbps");
    if (l.link == LinkChoice::arrival)
      j.value(l.link_gbps);
    else
      j.null();
    j.key("t_gemm_ms");
    j.value(l.gemm.median_ms);
    json_optional(j, "t_comm_ms", l.t_comm_ms());
    json_optional(j, "ideal_ms", l.ideal_ms());
    j.key("gemm");
    j.begin_object();
    json_timing(j, r, l.gemm);
    j.end_object();
    j.key("algorithms");
    j.begin_array();
    for (const BenchAlgorithm& algo : l.algorithms) {
      j.begin_object();
      j.key("algorithm");
      j.value(to_string(algo.algorithm));
      j.key("available");
      j.value(algo.available);
      j.key("reason");
      j.value(algo.reason);
      if (algo.available) {
        json_timing(j, r, algo.timing);
        const double t = algo.timing.median_ms;
        json_optional(j, "speedup_vs_decomposed", l.speedup_vs_decomposed(t));
        json_optional(j, "overlap_efficiency", l.overlap_efficiency(t));
        json_optional(j, "ideal_over_time", l.ideal_over(t));
      }
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("check_ok");
  if (a.check)
    j.value(r.checks_ok());
  else
    j.null();
  j.end_object();
  return j.str();
}

}  // namespace asynctp::tool
