// The CUDA side of the CLI as seen from a machine that may have no GPU:
// `run --backend cuda|auto`, the cuda-only flags (--link, --link-gbps,
// --device) and `bench` fail clearly, naming the flag or the missing GPU;
// every help text documents them. The last tests run the cuda backend for
// real and skip themselves where this binary or machine cannot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli/mini_json.hpp"
#include "cli/tool_process.hpp"

namespace asynctp::cli_test {
namespace {

struct BadInput {
  std::vector<std::string> args;
  std::vector<std::string> message_parts;  // all must appear on stderr
};

std::string shown(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += a + " ";
  return out;
}

void expect_usage_error(const std::string& command, const BadInput& c) {
  std::vector<std::string> args = {command};
  args.insert(args.end(), c.args.begin(), c.args.end());
  SCOPED_TRACE(shown(args));
  const ToolResult r = run_tool(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const std::string& part : c.message_parts) {
    EXPECT_TRUE(contains(r.err, part)) << "missing '" << part << "' in: " << r.err;
  }
  EXPECT_TRUE(contains(r.err, "asynctp " + command + " --help")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliCudaFlags, CudaOnlyFlagsWithTheCpuBackendNameTheFlag) {
  const std::vector<BadInput> cases = {
      {{"--backend", "cpu", "--link", "pcie"},
       {"--link: only with a GPU backend", "not with --backend cpu"}},
      {{"--backend", "cpu", "--link", "arrival", "--link-gbps", "100"},
       {"--link: only with a GPU backend"}},
      {{"--backend", "cpu", "--device", "0"}, {"--device: only with a GPU backend"}},
      {{"--backend", "cpu", "--clocks"}, {"--clocks: only with a GPU backend"}},
      {{"--backend", "cuda", "--workers", "2"}, {"--workers: only with the cpu backend"}},
  };
  for (const BadInput& c : cases) expect_usage_error("run", c);
}

// run_tool hides the GPUs, so auto picks cpu here whatever was built; a
// cuda-only flag must then fail rather than be dropped silently.
TEST(CliCudaFlags, AutoFallingBackToCpuRefusesCudaOnlyFlagsAndSaysWhy) {
  for (const std::string flag : {"--link", "--device", "--clocks"}) {
    SCOPED_TRACE(flag);
    std::vector<std::string> args = {"run", flag};
    if (flag != "--clocks") args.push_back(flag == "--link" ? "pcie" : "0");
    const ToolResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, flag + ": only with a GPU backend (cuda or hip), and --backend "
                                       "auto chose cpu because "))
        << r.err;
    // The reason is the real one: no CUDA backend in this binary, or no GPU.
    EXPECT_TRUE(contains(r.err, "built without the CUDA backend") || contains(r.err, "GPU") ||
                contains(r.err, "device"))
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(CliCudaFlags, BadCudaFlagValuesExitTwoNamingTheFlagAndRule) {
  const std::vector<BadInput> cases = {
      {{"--backend", "cuda", "--link", "nvlink"},
       {"--link: must be pcie, arrival or nccl", "nvlink"}},
      {{"--backend", "cuda", "--link", "arrival", "--link-gbps", "0"},
       {"--link-gbps: must be a number > 0", "'0'"}},
      {{"--backend", "cuda", "--link", "arrival", "--link-gbps", "-5"},
       {"--link-gbps: must be a number > 0", "'-5'"}},
      {{"--backend", "cuda", "--link", "arrival", "--link-gbps", "fast"},
       {"--link-gbps: must be a number > 0", "'fast'"}},
      {{"--backend", "cuda", "--link", "arrival", "--link-gbps", "nan"}, {"--link-gbps:", "nan"}},
      {{"--backend", "cuda", "--link", "arrival", "--link-gbps", "inf"}, {"--link-gbps:", "inf"}},
      // Positive, but so slow that the link model's clock would overflow
      // (tests/fuzz/cli_args_fuzz.cpp's rule).
      {{"--backend", "cuda", "--link", "arrival", "--link-gbps", "1e-300"},
       {"--link-gbps: must be a number > 0 (at least 0.001 and at most 1e+06)", "'1e-300'"}},
      {{"--backend", "cuda", "--link-gbps", "100"}, {"--link-gbps: only with --link arrival"}},
      {{"--backend", "cuda", "--link", "pcie", "--link-gbps", "100"},
       {"--link-gbps: only with --link arrival"}},
      {{"--backend", "cuda", "--device", "-1"}, {"--device: must be a GPU device ordinal"}},
      {{"--backend", "cuda", "--device", "gpu0"}, {"--device:", "gpu0"}},
      {{"--backend", "rocm"}, {"--backend: must be auto, cpu, cuda or hip", "rocm"}},
  };
  for (const BadInput& c : cases) expect_usage_error("run", c);
}

TEST(CliCudaFlags, BackendCudaWithoutAGpuFailsClearly) {
  const ToolResult r = run_tool(
      {"run", "--backend", "cuda", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64"});
  // 2 where the binary has no CUDA backend (the flag names something absent),
  // 1 where it has one but no GPU is visible; never a crash.
  EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << r.exit_code << " " << r.err;
  EXPECT_TRUE(contains(r.err, "asynctp run: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "--backend")) << r.err;
  EXPECT_TRUE(contains(r.err, "built without the CUDA backend") || contains(r.err, "no usable GPU"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing was measured:\n" << r.out;
}

// A GPU backend this binary lacks is bad usage: hip in a CUDA (or CPU-only)
// build, cuda in a ROCm build.
TEST(CliCudaFlags, BackendHipWhereNotBuiltIsBadUsage) {
  const ToolResult version = run_tool({"--version"});
  if (contains(version.out, "GPU backend: hip")) GTEST_SKIP() << "a ROCm build has it";
  const ToolResult r = run_tool(
      {"run", "--backend", "hip", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "--backend: hip: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "built without the HIP backend") ||
              contains(r.err, "built without the CUDA backend"))
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// The CLI of a ROCm build (asynctp-hip beside CI's compile-checked HIP
// backend, or a real ROCm build) without an AMD GPU: --backend hip is a
// library error naming HIP's answer, not a crash; auto falls back to cpu.
TEST(CliCudaFlags, BackendHipWithoutAnAmdGpuFailsClearly) {
  const ToolResult version = run_tool({"--version"});
  if (!contains(version.out, "GPU backend: hip")) GTEST_SKIP() << "not a ROCm build's CLI";
  const ToolResult r = run_tool(
      {"run", "--backend", "hip", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64"});
  if (r.exit_code == 0) GTEST_SKIP() << "an AMD GPU is present";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "--backend hip: no usable GPU at --device 0")) << r.err;
  EXPECT_TRUE(contains(r.err, "HIP")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  const ToolResult fallback =
      run_tool({"run", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64", "--check"});
  EXPECT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_TRUE(contains(fallback.out, "# backend cpu")) << fallback.out;
}

TEST(CliBench, WithoutAGpuExitsOneSayingWhy) {
  const ToolResult r =
      run_tool({"bench", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "asynctp bench: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "built without the CUDA backend") ||
              contains(r.err, "needs a usable CUDA GPU at --device 0"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Usage is judged before the GPU is looked for: a typo costs milliseconds
// and exits 2 on any machine.
TEST(CliBench, BadInputExitsTwoNamingTheFlag) {
  const std::vector<BadInput> cases = {
      {{"--link", "ethernet"}, {"--link: must be pcie, arrival, both or nccl", "ethernet"}},
      {{"--link", "pcie", "--link-gbps", "100"}, {"--link-gbps: only with --link arrival or both"}},
      {{"--link-gbps", "0"}, {"--link-gbps: must be a number > 0"}},
      {{"-m", "100"}, {"-m: must be divisible by --world-size (8), got 100"}},
      {{"--iters", "0"}, {"--iters:", "positive"}},
      {{"--warmup", "-1"}, {"--warmup:"}},
      {{"--b-layout", "diag"}, {"--b-layout:", "row or col"}},
      {{"--device", "x"}, {"--device:"}},
      {{"--dtype", "fp16"}, {"unknown flag '--dtype'"}},
      {{"--algo", "native"}, {"unknown flag '--algo'"}},
      {{"--json=1"}, {"--json: takes no value"}},
  };
  for (const BadInput& c : cases) expect_usage_error("bench", c);
}

TEST(CliCudaHelp, EveryHelpDocumentsTheCudaFlags) {
  const ToolResult main = run_tool({"--help"});
  ASSERT_EQ(main.exit_code, 0) << main.err;
  for (const char* word :
       {"asynctp bench", "auto|cpu|cuda|hip", "--link pcie|arrival", "--link pcie|arrival|both",
        "--link-gbps", "--device", "asynchronous", "serialized", "pcie", "arrival"}) {
    EXPECT_TRUE(contains(main.out, word)) << word;
  }

  const ToolResult run = run_tool({"run", "--help"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* word :
       {"auto|cpu|cuda|hip", "--link L", "pcie|arrival", "--link-gbps X", "(default 400)",
        "--device N", "--clocks", "GPU backend only", "cpu backend only", "asynchronous", "serialized",
        "each call's own span", "LoopbackGroup::last_call_ms", "pinned host",
        "(i + 1) * chunk bytes / --link-gbps"}) {
    EXPECT_TRUE(contains(run.out, word)) << word;
  }

  const ToolResult bench = run_tool({"bench", "--help"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_TRUE(contains(bench.out, "Usage: asynctp bench")) << bench.out;
  for (const char* word : {"--link L",
                           "pcie|arrival|both",
                           "default both",
                           "--link-gbps X",
                           "(default 400)",
                           "--world-size W",
                           "(default 8)",
                           "-m M",
                           "-n N",
                           "-k K",
                           "(default 8192)",
                           "--b-layout",
                           "--iters N",
                           "(default 20)",
                           "--warmup N",
                           "(default 3)",
                           "--device N",
                           "--check",
                           "--json",
                           "--clocks",
                           "--seed",
                           "--timeout-ms",
                           "cublasGemmEx",
                           "T_comm = T_decomposed - T_gemm",
                           "(T_comm + T_gemm - time) / min(T_comm, T_gemm)",
                           "max(T_comm, T_gemm) / time",
                           "2*M*N*K",
                           "asynchronous",
                           "serialized"}) {
    EXPECT_TRUE(contains(bench.out, word)) << word;
  }
  // Help wins over the rules between flags, and needs no GPU.
  const ToolResult late = run_tool({"bench", "-m", "100", "--help"});
  EXPECT_EQ(late.exit_code, 0) << late.err;
  EXPECT_TRUE(contains(late.out, "Usage: asynctp bench")) << late.out;
}

TEST(CliCudaReport, CpuRunNamesItsBackendAndTimingRule) {
  const ToolResult table =
      run_tool({"run", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64", "--iters", "1"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(contains(table.out, "# backend cpu, world size 2, ")) << table.out;
  EXPECT_TRUE(contains(table.out,
                       "# time: median over iterations of wall time of each call, the slowest "
                       "rank's per iteration"))
      << table.out;

  const ToolResult json = run_tool(
      {"run", "--world-size", "2", "-m", "512", "-n", "64", "-k", "64", "--iters", "1", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json doc = JsonParser(json.out).parse_document();
  EXPECT_EQ(doc["backend"].string, "cpu");
  EXPECT_TRUE(contains(doc["backend_detail"].string, "GEMM workers per rank"));
  EXPECT_GT(doc["gemm_workers_per_rank"].number, 0);
  EXPECT_FALSE(doc.has("link")) << "cuda-only keys stay out of a cpu report";
}

// ---- On a machine with a usable GPU and a CUDA-built binary only ----

bool cuda_unusable(const ToolResult& r) {
  return contains(r.err, "built without the CUDA backend") || contains(r.err, "no usable GPU") ||
         contains(r.err, "needs a usable CUDA GPU");
}

TEST(CliCudaRun, ChecksEveryAlgorithmOnTheGpu) {
  const ToolResult r =
      run_tool({"run", "--backend", "cuda", "--world-size", "2", "-m", "512", "-n", "256", "-k",
                "256", "--iters", "2", "--check", "--json", "--link", "arrival"},
               {kMachineGpus});
  if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = JsonParser(r.out).parse_document();
  EXPECT_EQ(doc["backend"].string, "cuda");
  EXPECT_EQ(doc["link"].string, "arrival");
  EXPECT_EQ(doc["link_gbps"].number, 400);
  EXPECT_TRUE(doc["gemm_workers_per_rank"].is_null());
  EXPECT_TRUE(doc["check_ok"].boolean);
  for (const Json& algo : doc["algorithms"].array) {
    SCOPED_TRACE(algo["name"].string);
    if (!algo["available"].boolean) continue;  // native off sm_90
    EXPECT_GT(algo["median_ms"].number, 0);
    EXPECT_GT(algo["max_rel_error"].number, 0);
    EXPECT_TRUE(algo["check_ok"].boolean);
    // A forced native's plan names the kernel config it ran (the planner
    // grid's replay reads it there).
    if (algo["name"].string == "native") {
      EXPECT_TRUE(contains(algo["reason"].string, "(kernel ")) << algo["reason"].string;
    }
  }
}

// --clocks: one SM clock reading per timed round of every row (bench: and
// of the GEMM), in the JSON and summed up below the table.
TEST(CliCudaRun, ClocksReadTheSmClockAfterEveryTimedRound) {
  const std::vector<std::string> problem = {"--world-size", "2", "-m", "512", "-n", "256",
                                            "-k", "256", "--iters", "3", "--clocks"};
  std::vector<std::string> run = {"run", "--backend", "cuda", "--link", "pcie", "--json"};
  run.insert(run.end(), problem.begin(), problem.end());
  const ToolResult r = run_tool(run, {kMachineGpus});
  if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto expect_readings = [](const Json& row) {
    SCOPED_TRACE(row.has("name") ? row["name"].string : "gemm");
    ASSERT_EQ(row["sm_clock_mhz"].array.size(), 3u);
    for (const Json& mhz : row["sm_clock_mhz"].array) {
      EXPECT_GT(mhz.number, 50);
      EXPECT_LT(mhz.number, 4000);
    }
  };
  const Json doc = JsonParser(r.out).parse_document();
  for (const Json& algo : doc["algorithms"].array) {
    if (algo["available"].boolean) expect_readings(algo);
  }

  std::vector<std::string> bench = {"bench", "--link", "pcie", "--json"};
  bench.insert(bench.end(), problem.begin(), problem.end());
  const ToolResult b = run_tool(bench, {kMachineGpus});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  const Json link = JsonParser(b.out).parse_document()["links"][0];
  expect_readings(link["gemm"]);
  for (const Json& algo : link["algorithms"].array) {
    if (algo["available"].boolean) expect_readings(algo);
  }

  std::vector<std::string> table = {"run", "--backend", "cuda", "--link", "pcie"};
  table.insert(table.end(), problem.begin(), problem.end());
  const ToolResult t = run_tool(table, {kMachineGpus});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(contains(t.out, "# SM clock (MHz) after each round's last timed call, median "
                              "(min-max):\n# "))
      << t.out;
  EXPECT_TRUE(contains(t.out, " decomposed ")) << t.out;
}

// Without the gathered A: native and pipelined read the rank's own chunk in
// place and skip its copy; C is still checked on every rank, over both links.
TEST(CliCudaRun, NoGatheredChecksEveryAlgorithmOnTheGpu) {
  for (const char* link : {"pcie", "arrival"}) {
    SCOPED_TRACE(link);
    const ToolResult r =
        run_tool({"run", "--backend", "cuda", "--world-size", "4", "-m", "1024", "-n", "256", "-k",
                  "256", "--iters", "2", "--check", "--json", "--no-gathered", "--link", link},
                 {kMachineGpus});
    if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const Json doc = JsonParser(r.out).parse_document();
    EXPECT_FALSE(doc["gathered_out"].boolean);
    EXPECT_TRUE(doc["check_ok"].boolean);
    for (const Json& algo : doc["algorithms"].array) {
      SCOPED_TRACE(algo["name"].string);
      if (!algo["available"].boolean) continue;  // native off sm_90
      EXPECT_GT(algo["max_rel_error"].number, 0);
      EXPECT_TRUE(algo["check_ok"].boolean);
    }
  }
}

// --trace on the GPU: each rank's row holds, beside its host enqueue, the
// device's lanes: one device call span per traced algorithm, the pcie
// link's copies and signals, and native's one tile lane per chunk.
TEST(CliCudaRun, TraceHoldsTheDeviceTimeline) {
  TempDir dir;
  const std::string path = dir.file("trace.json");
  const ToolResult r =
      run_tool({"run", "--backend", "cuda",   "--world-size", "2",       "-m", "512",
                "-n",  "256",       "-k",     "256",          "--iters", "2",  "--algo",
                "all", "--json",    "--link", "pcie",         "--trace", path},
               {kMachineGpus, {"ASYNCTP_NATIVE_TAIL", "kernel"}});  // every chunk in the kernel
  if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json run = JsonParser(r.out).parse_document();
  int available = 0;
  bool native = false;
  for (const Json& algo : run["algorithms"].array) {
    if (!algo["available"].boolean) continue;
    ++available;
    native = native || algo["algorithm"].string == "native";
  }
  const Json trace = JsonParser(read_file(path)).parse_document();
  std::vector<std::vector<std::string>> lanes(2);  // per rank: thread names by tid
  for (const Json& e : trace["traceEvents"].array) {
    if (e["ph"].string != "M" || e["name"].string != "thread_name") continue;
    auto& names = lanes[static_cast<std::size_t>(e["pid"].number)];
    const auto tid = static_cast<std::size_t>(e["tid"].number);
    if (names.size() <= tid) names.resize(tid + 1);
    names[tid] = e["args"]["name"].string;
  }
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto& names = lanes[static_cast<std::size_t>(rank)];
    int calls = 0, copies = 0, signals = 0, tile_spans = 0;
    for (const Json& e : trace["traceEvents"].array) {
      if (e["ph"].string == "M" || static_cast<int>(e["pid"].number) != rank) continue;
      const std::string& lane = names.at(static_cast<std::size_t>(e["tid"].number));
      if (lane == "device stream" && e["name"].string == "all-gather + matmul") ++calls;
      if (lane == "device copy in" && e["cat"].string == "copy") ++copies;
      if (lane == "device copy in" && e["cat"].string == "signal") ++signals;
      if (lane.rfind("device tiles: chunk ", 0) == 0) {
        ++tile_spans;
        EXPECT_GE(e["dur"].number, 0) << e["name"].string;
      }
    }
    EXPECT_EQ(calls, available) << "one device call span per traced algorithm";
    EXPECT_GE(copies, available) << "the peer chunk's copy in every traced call";
    EXPECT_EQ(signals, copies) << "a signal after every piece's copy";
    if (native) {
      EXPECT_EQ(tile_spans, 2) << "one tile span per chunk of the native call";
    }
  }
}

TEST(CliBench, DerivedFiguresFollowFromTheMeasuredOnes) {
  const ToolResult r = run_tool({"bench", "--world-size", "2", "-m", "512", "-n", "256", "-k",
                                 "256", "--iters", "3", "--warmup", "1", "--check", "--json"},
                                {kMachineGpus});
  if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = JsonParser(r.out).parse_document();
  EXPECT_TRUE(doc["check_ok"].boolean);
  ASSERT_EQ(doc["links"].array.size(), 2u);
  EXPECT_EQ(doc["links"][0]["link"].string, "pcie");
  EXPECT_EQ(doc["links"][1]["link"].string, "arrival");
  EXPECT_EQ(doc["links"][1]["link_gbps"].number, 400);
  const double flops = 2.0 * 512 * 256 * 256;
  for (const Json& link : doc["links"].array) {
    SCOPED_TRACE(link["link"].string);
    const double t_gemm = link["t_gemm_ms"].number;
    EXPECT_GT(t_gemm, 0);
    EXPECT_TRUE(link["gemm"]["check_ok"].boolean);
    double t_dec = 0;
    for (const Json& algo : link["algorithms"].array) {
      if (algo["algorithm"].string == "decomposed") t_dec = algo["median_ms"].number;
    }
    ASSERT_GT(t_dec, 0);
    // The JSON holds 9 significant digits: compare relative to the inputs.
    EXPECT_NEAR(link["t_comm_ms"].number, t_dec - t_gemm, 1e-6 * t_dec);
    for (const Json& algo : link["algorithms"].array) {
      if (!algo["available"].boolean) continue;
      const double t = algo["median_ms"].number;
      const double flops_rate = flops / (t * 1e-3) / 1e12;
      EXPECT_NEAR(algo["tflops"].number, flops_rate, 1e-6 * flops_rate);
      EXPECT_NEAR(algo["speedup_vs_decomposed"].number, t_dec / t, 1e-6 * t_dec / t);
      const double t_comm = t_dec - t_gemm;
      const double ideal = std::max(t_comm, t_gemm) / t;
      EXPECT_NEAR(algo["ideal_over_time"].number, ideal, 1e-6 * ideal);
      if (t_comm > 0) {
        const double low = std::min(t_comm, t_gemm);
        EXPECT_NEAR(algo["overlap_efficiency"].number, (t_comm + t_gemm - t) / low,
                    1e-6 * (t_dec + t) / low);
      } else {
        EXPECT_TRUE(algo["overlap_efficiency"].is_null());
      }
    }
  }
}

// --link nccl on real GPUs: one rank needs one GPU (runs on a one-GPU
// machine); more ranks than GPUs is an error that says how many there are.
TEST(CliCudaRun, NcclLinkChecksEveryAlgorithm) {
  const ToolResult r =
      run_tool({"run", "--backend", "cuda", "--link", "nccl", "--world-size", "1", "-m", "512",
                "-n", "256", "-k", "256", "--iters", "2", "--check", "--json"},
               {kMachineGpus});
  if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = JsonParser(r.out).parse_document();
  EXPECT_EQ(doc["link"].string, "nccl");
  EXPECT_TRUE(doc["check_ok"].boolean);
  for (const Json& algo : doc["algorithms"].array) {
    SCOPED_TRACE(algo["name"].string);
    if (!algo["available"].boolean) continue;  // native off sm_90
    EXPECT_GT(algo["median_ms"].number, 0);
    EXPECT_TRUE(algo["check_ok"].boolean);
  }
}

TEST(CliCudaRun, NcclLinkWithMoreRanksThanGpusSaysSo) {
  const ToolResult r = run_tool({"run", "--backend", "cuda", "--link", "nccl", "--world-size", "64",
                                 "-m", "16384", "-n", "64", "-k", "64"},
                                {kMachineGpus});
  if (cuda_unusable(r)) GTEST_SKIP() << r.err;
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "--link nccl: 64 ranks need 64 GPUs; this process sees")) << r.err;
}

// One process per rank, as torchrun starts them: a world of one runs on one
// GPU through the launcher path; a --world-size that contradicts the
// launcher is refused before anything runs (no GPU needed).
TEST(CliCudaRun, UnderALauncherEachProcessIsOneRank) {
  const std::string port = std::to_string(29000 + (::getpid() % 2000));
  const ToolResult r = run_tool({"run", "--backend", "cuda", "-m", "512", "-n", "256", "-k", "256",
                                 "--iters", "2", "--check", "--json"},
                                {kMachineGpus,
                                 {"RANK", "0"},
                                 {"WORLD_SIZE", "1"},
                                 {"LOCAL_RANK", "0"},
                                 {"MASTER_ADDR", "127.0.0.1"},
                                 {"MASTER_PORT", port}});
  if (r.exit_code != 0 && cuda_unusable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = JsonParser(r.out).parse_document();
  EXPECT_EQ(doc["link"].string, "nccl");
  EXPECT_EQ(doc["world_size"].number, 1);
  EXPECT_TRUE(doc["check_ok"].boolean);
}

TEST(CliCudaFlags, WorldSizeThatContradictsTheLauncherIsRefused) {
  const ToolResult r =
      run_tool({"run", "--backend", "cuda", "--world-size", "4", "-m", "64", "-n", "8", "-k", "8"},
               {{"RANK", "1"},
                {"WORLD_SIZE", "2"},
                {"LOCAL_RANK", "1"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", "29511"}});
  if (contains(r.err, "built without the NCCL transport") ||
      contains(r.err, "built without the CUDA backend")) {
    GTEST_SKIP() << r.err;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "--world-size: this process is rank 1 of 2")) << r.err;
}

}  // namespace
}  // namespace asynctp::cli_test
