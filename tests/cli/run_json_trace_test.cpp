// `asynctp run --json` and `--trace`: machine-readable output that other
// tools consume, so its shape is part of the contract.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cli/mini_json.hpp"
#include "cli/tool_process.hpp"

namespace asynctp::cli_test {
namespace {

const std::vector<std::string> kSmall = {"run", "--world-size", "4",   "-m",      "1024", "-n",
                                         "256", "-k",           "256", "--iters", "3"};

std::vector<std::string> small(std::vector<std::string> extra) {
  std::vector<std::string> args = kSmall;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(CliJson, OneObjectWithParametersPlannerAndEveryAlgorithm) {
  const ToolResult r = run_tool(small({"--json", "--check", "--seed", "7"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json doc;
  ASSERT_NO_THROW(doc = parse_json(r.out)) << r.out;

  EXPECT_EQ(doc["version"].string, "0.1.0");
  EXPECT_EQ(doc["backend"].string, "cpu");
  EXPECT_EQ(doc["world_size"].number, 4);
  EXPECT_EQ(doc["M"].number, 1024);
  EXPECT_EQ(doc["m_per_rank"].number, 256);
  EXPECT_EQ(doc["N"].number, 256);
  EXPECT_EQ(doc["K"].number, 256);
  EXPECT_EQ(doc["dtype"].string, "bf16");
  EXPECT_EQ(doc["b_layout"].string, "row");
  EXPECT_EQ(doc["seed"].number, 7);
  EXPECT_EQ(doc["iters"].number, 3);
  EXPECT_TRUE(doc["check_ok"].boolean);
  EXPECT_EQ(doc["planner"]["algorithm"].string, "native");
  EXPECT_FALSE(doc["planner"]["reason"].string.empty());

  const Json& algos = doc["algorithms"];
  ASSERT_EQ(algos.array.size(), 3u) << r.out;
  const std::vector<std::string> names = {"native", "pipelined", "decomposed"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const Json& a = algos[i];
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(a["name"].string, names[i]);
    EXPECT_TRUE(a["available"].boolean);
    EXPECT_GT(a["median_ms"].number, 0);
    ASSERT_EQ(a["iteration_ms"].array.size(), 3u);
    for (const Json& ms : a["iteration_ms"].array) EXPECT_GT(ms.number, 0);
    EXPECT_GT(a["tflops_per_rank"].number, 0);
    EXPECT_GT(a["speedup_vs_decomposed"].number, 0);
    EXPECT_LT(a["max_rel_error"].number, doc["tolerance"].number);
    EXPECT_TRUE(a["check_ok"].boolean);
    EXPECT_EQ(a["planner_choice"].boolean, names[i] == "native");
    // The plan the row ran with (a forced algorithm's reason says so).
    EXPECT_FALSE(a["reason"].string.empty());
  }
  EXPECT_DOUBLE_EQ(algos[2]["speedup_vs_decomposed"].number, 1.0);
}

// --no-gathered: the calls ask for C alone; the check is C's (every element
// written, within tolerance) and the JSON says no gathered A was asked for.
// --tune: auto's calls take the measured choice, and --algo all gains the
// auto row: checked like the others, timed after its measuring calls (every
// timed call runs the kept choice, whose reason gives the measured times).
TEST(CliJson, TuneAddsAnAutoRowThatRunsTheMeasuredChoice) {
  const ToolResult r = run_tool(small({"--json", "--check", "--tune", "--iters", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json doc;
  ASSERT_NO_THROW(doc = parse_json(r.out)) << r.out;
  EXPECT_TRUE(doc["check_ok"].boolean);
  const Json& algos = doc["algorithms"];
  ASSERT_EQ(algos.array.size(), 4u) << r.out;
  const Json& tuned = algos[3];
  EXPECT_EQ(tuned["name"].string, "auto -> " + tuned["algorithm"].string);
  EXPECT_TRUE(tuned["available"].boolean);
  EXPECT_LT(tuned["max_rel_error"].number, doc["tolerance"].number);
  ASSERT_EQ(tuned["iteration_ms"].array.size(), 2u);
  const std::string& why = tuned["reason"].string;
  EXPECT_NE(why.find("measured choice: native "), std::string::npos) << why;
  EXPECT_NE(why.find("kept for this problem"), std::string::npos) << why;
  EXPECT_TRUE(tuned["measured_choice"].boolean);
  EXPECT_FALSE(tuned["planner_choice"].boolean);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(algos[i]["measured_choice"].boolean);
  // Without --tune (and ASYNCTP_TUNE unset) the table is the three rows.
  const ToolResult plain = run_tool(small({"--json"}));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(parse_json(plain.out)["algorithms"].array.size(), 3u);
}

TEST(CliJson, NoGatheredChecksCAlone) {
  const ToolResult r = run_tool(small({"--json", "--check", "--no-gathered"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  Json doc;
  ASSERT_NO_THROW(doc = parse_json(r.out)) << r.out;
  EXPECT_FALSE(doc["gathered_out"].boolean);
  EXPECT_TRUE(doc["check_ok"].boolean);
  ASSERT_EQ(doc["algorithms"].array.size(), 3u) << r.out;
  for (const Json& a : doc["algorithms"].array) {
    SCOPED_TRACE(a["name"].string);
    EXPECT_TRUE(a["check_ok"].boolean);
    EXPECT_LT(a["max_rel_error"].number, doc["tolerance"].number);
  }
  const ToolResult with = run_tool(small({"--json"}));
  ASSERT_EQ(with.exit_code, 0) << with.out << with.err;
  EXPECT_TRUE(parse_json(with.out)["gathered_out"].boolean);
}

TEST(CliJson, NoGatheredWithTheReduceScatterIsAUsageError) {
  const ToolResult r = run_tool(small({"--op", "matmul-reduce-scatter", "--no-gathered"}));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--no-gathered: only with --op all-gather-matmul")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliJson, UnavailableAlgorithmCarriesItsReasonAndNulls) {
  const ToolResult r = run_tool({"run", "--world-size", "4", "-m", "800", "-n", "256", "-k", "256",
                                 "--iters", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = parse_json(r.out);
  const Json& native = doc["algorithms"][0];
  EXPECT_EQ(native["name"].string, "native");
  EXPECT_FALSE(native["available"].boolean);
  EXPECT_TRUE(contains(native["reason"].string, "not a multiple of the native tile M"));
  EXPECT_TRUE(native["median_ms"].is_null());
  EXPECT_TRUE(native["max_rel_error"].is_null());
  EXPECT_EQ(doc["planner"]["algorithm"].string, "pipelined");
  // Without --check there is no error to report.
  EXPECT_TRUE(doc["algorithms"][1]["max_rel_error"].is_null());
  EXPECT_TRUE(doc["algorithms"][1]["check_ok"].is_null());
}

TEST(CliJson, SameSeedSameInputs) {
  // The decomposed baseline is one deterministic GEMM: equal errors mean
  // equal inputs.
  auto error_of = [](const std::string& seed) {
    const ToolResult r =
        run_tool(small({"--json", "--check", "--algo", "decomposed", "--seed", seed}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parse_json(r.out)["algorithms"][0]["max_rel_error"].number;
  };
  const double first = error_of("123");
  EXPECT_EQ(first, error_of("123"));
  EXPECT_NE(first, error_of("124"));
}

TEST(CliTrace, HoldsCopiesSignalsAndGemmSpansOfEveryRank) {
  TempDir dir;
  const std::string path = dir.file("trace.json");
  const ToolResult r = run_tool(small({"--trace", path}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "# trace written to " + path)) << r.out;

  const std::string text = read_file(path);
  ASSERT_TRUE(contains(text, "\"traceEvents\"")) << text.substr(0, 200);
  Json doc;
  ASSERT_NO_THROW(doc = parse_json(text));

  // (rank, category) -> event count, and the traced calls' names per rank.
  std::map<std::pair<int, std::string>, int> count;
  std::map<int, std::set<std::string>> calls;
  int copy_chunk_spans = 0;
  for (const Json& e : doc["traceEvents"].array) {
    if (e["ph"].string == "M") continue;
    const int rank = static_cast<int>(e["pid"].number);
    const std::string cat = e["cat"].string;
    ++count[{rank, cat}];
    if (cat == "call") calls[rank].insert(e["name"].string);
    if (cat == "copy" && contains(e["name"].string, "copy chunk")) {
      EXPECT_EQ(e["ph"].string, "X") << "copies are spans";
      ++copy_chunk_spans;
    }
    if (cat == "signal") {
      EXPECT_EQ(e["ph"].string, "i") << "signals are instants";
    }
  }
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    // One traced call per algorithm: native and pipelined copy every chunk
    // through the producer.
    EXPECT_GE((count[{rank, "copy"}]), 4);
    EXPECT_GE((count[{rank, "signal"}]), 4);
    EXPECT_GE((count[{rank, "gemm"}]), 3);
    EXPECT_EQ(calls[rank], (std::set<std::string>{"fused_all_gather_matmul (native)",
                                                  "fused_all_gather_matmul (pipelined)",
                                                  "fused_all_gather_matmul (decomposed)"}));
  }
  EXPECT_GT(copy_chunk_spans, 0);
}

TEST(CliTrace, AutoPickingTheBaselineTracesOneCall) {
  // Shards of 64 rows are too small for per-chunk GEMMs: auto picks decomposed,
  // which is then the only row.
  TempDir dir;
  const std::string path = dir.file("trace.json");
  const ToolResult r = run_tool({"run", "--world-size", "4", "-m", "256", "-n", "256", "-k", "256",
                                 "--iters", "2", "--algo", "auto", "--json", "--trace", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json doc = parse_json(r.out);
  ASSERT_EQ(doc["algorithms"].array.size(), 1u) << r.out;
  EXPECT_EQ(doc["algorithms"][0]["name"].string, "auto -> decomposed");
  EXPECT_EQ(doc["trace_file"].string, path);
  int calls = 0;
  // Named: a range-for over a member of a temporary would dangle.
  const Json trace = parse_json(read_file(path));
  for (const Json& e : trace["traceEvents"].array) {
    if (e.has("cat") && e["cat"].string == "call") ++calls;
  }
  EXPECT_EQ(calls, 4) << "one traced call per rank";
  EXPECT_TRUE(contains(r.err, "# trace written to " + path)) << r.err;
}

TEST(CliTrace, UnwritablePathIsALibraryError) {
  const ToolResult r =
      run_tool(small({"--algo", "decomposed", "--trace", "/nonexistent-dir/trace.json"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "/nonexistent-dir/trace.json")) << r.err;
}

}  // namespace
}  // namespace asynctp::cli_test
