// `asynctp run --op matmul-reduce-scatter` end to end on the cpu backend: the
// same table, --check, --json and --trace as the all-gather op, and the
// rules of its shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/mini_json.hpp"
#include "cli/tool_process.hpp"

namespace asynctp::cli_test {
namespace {

// -m is global M; 256 rows per rank is one native tile, so every algorithm runs.
std::vector<std::string> rs_run(int world_size, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run",
                                   "--backend",
                                   "cpu",
                                   "--op",
                                   "matmul-reduce-scatter",
                                   "--world-size",
                                   std::to_string(world_size),
                                   "-m",
                                   std::to_string(256 * world_size),
                                   "-n",
                                   "128",
                                   "-k",
                                   "128",
                                   "--iters",
                                   "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

class CliReduceScatterCheck : public testing::TestWithParam<int> {};

TEST_P(CliReduceScatterCheck, EveryAlgorithmRunsAndPasses) {
  const int world_size = GetParam();
  const ToolResult r = run_tool(rs_run(world_size, {"--check", "--json", "--seed", "5"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = parse_json(r.out);
  EXPECT_TRUE(doc["check_ok"].boolean);
  const Json& algos = doc["algorithms"];
  ASSERT_EQ(algos.array.size(), 3u) << r.out;
  for (const Json& a : algos.array) {
    SCOPED_TRACE(a["name"].string);
    EXPECT_TRUE(a["available"].boolean) << a["reason"].string;
    EXPECT_TRUE(a["check_ok"].boolean);
    EXPECT_GT(a["max_rel_error"].number, 0) << "bf16 outputs cannot match float64 exactly";
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CliReduceScatterCheck, testing::Values(1, 3, 8),
                         [](const testing::TestParamInfo<int>& info) {
                           return "W" + std::to_string(info.param);
                         });

TEST(CliReduceScatter, TableNamesTheOpAndItsShapes) {
  const ToolResult r = run_tool(rs_run(4, {"--check", "--seed", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "run: fused matmul + reduce-scatter")) << r.out;
  EXPECT_TRUE(contains(r.out, "# M 1024 (m 256 per rank), N 128, K 128 per rank")) << r.out;
  for (const char* algo : {"native ", "pipelined ", "decomposed "}) {
    EXPECT_TRUE(contains(line_starting(r.out, algo), "ok")) << r.out;
  }
  EXPECT_TRUE(
      contains(r.out, "# check: all 4 ranks within an error bound computed from the inputs"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "gathered A")) << "the reduce-scatter gathers nothing:\n" << r.out;
}

TEST(CliReduceScatter, JsonNamesTheOpAndShapesAndNoRelativeTolerance) {
  const ToolResult r = run_tool(rs_run(4, {"--check", "--json", "--seed", "9"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = parse_json(r.out);
  EXPECT_EQ(doc["op"].string, "matmul-reduce-scatter");
  EXPECT_EQ(doc["backend"].string, "cpu");
  const std::map<std::string, double> numbers = {
      {"world_size", 4}, {"M", 1024}, {"m_per_rank", 256}, {"N", 128}, {"K", 128}, {"seed", 9}};
  for (const auto& [key, value] : numbers) EXPECT_EQ(doc[key].number, value) << key;
  EXPECT_TRUE(doc["check"].boolean);
  // Checked element by element against a bound from the inputs: no single
  // relative figure.
  EXPECT_TRUE(doc["tolerance"].is_null());
  EXPECT_FALSE(doc["planner"]["algorithm"].is_null());
  const Json& algos = doc["algorithms"];
  ASSERT_EQ(algos.array.size(), 3u);
  for (const Json& a : algos.array) {
    EXPECT_GT(a["median_ms"].number, 0);
    EXPECT_EQ(a["iteration_ms"].array.size(), 2u);
    EXPECT_GT(a["tflops_per_rank"].number, 0);
  }
  EXPECT_DOUBLE_EQ(algos[2]["speedup_vs_decomposed"].number, 1.0);

  const ToolResult ag = run_tool({"run", "--backend", "cpu", "--world-size", "4", "-m", "1024",
                                  "-n", "128", "-k", "128", "--iters", "1", "--json"});
  ASSERT_EQ(ag.exit_code, 0) << ag.err;
  EXPECT_EQ(parse_json(ag.out)["op"].string, "all-gather-matmul") << "the default op";
}

TEST(CliReduceScatter, TraceShipsEveryPeerChunkAndReducesEveryPartial) {
  constexpr int kWorld = 3;
  TempDir dir;
  const std::string path = dir.file("trace.json");
  const ToolResult r = run_tool(rs_run(kWorld, {"--trace", path}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json trace = parse_json(read_file(path));

  std::map<int, std::multiset<std::string>> ships, reductions;
  std::map<int, std::set<std::string>> calls;
  for (const Json& e : trace["traceEvents"].array) {
    if (e["ph"].string == "M") continue;
    const int rank = static_cast<int>(e["pid"].number);
    const std::string& name = e["name"].string;
    if (name.rfind("ship chunk ", 0) == 0) {
      EXPECT_EQ(e["ph"].string, "X") << "shipping is a span";
      ships[rank].insert(name);
    }
    if (e["cat"].string == "reduce") reductions[rank].insert(name);
    if (e["cat"].string == "call") calls[rank].insert(name);
  }
  for (int rank = 0; rank < kWorld; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_EQ(calls[rank], (std::set<std::string>{"fused_matmul_reduce_scatter (native)",
                                                  "fused_matmul_reduce_scatter (pipelined)",
                                                  "fused_matmul_reduce_scatter (decomposed)"}));
    // One traced call per algorithm: each ships its partial of every peer's
    // chunk to that peer, never its own, and adds every peer's partial.
    for (int chunk = 0; chunk < kWorld; ++chunk) {
      const std::string ship = "ship chunk " + std::to_string(chunk);
      const std::string add = "reduce: partial of rank " + std::to_string(chunk);
      EXPECT_EQ(ships[rank].count(ship), chunk == rank ? 0u : 3u) << ship;
      EXPECT_EQ(reductions[rank].count(add) > 0, chunk != rank) << add;
    }
    EXPECT_GT(reductions[rank].count("reduce: own partial"), 0u);
  }
}

TEST(CliReduceScatter, UnknownOpIsAUsageErrorNamingTheFlag) {
  const ToolResult r = run_tool({"run", "--op", "reduce-scatter"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err,
                       "--op: must be all-gather-matmul or matmul-reduce-scatter, got "
                       "'reduce-scatter'"))
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliReduceScatter, MNotDivisibleByTheWorldSizeIsAUsageError) {
  const ToolResult r = run_tool({"run", "--backend", "cpu", "--op", "matmul-reduce-scatter",
                                 "--world-size", "3", "-m", "1000", "-n", "64", "-k", "64"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "-m: must be divisible by --world-size (3), got 1000")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace
}  // namespace asynctp::cli_test
