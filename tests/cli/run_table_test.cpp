// `asynctp run` end to end through its table output: the rows, the planner's
// choice and reason, the check footer, and the exit status.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cli/tool_process.hpp"

namespace asynctp::cli_test {
namespace {

// Small enough that a whole run takes well under a second: 4 ranks with
// shards of 256 rows, exactly one native tile.
const std::vector<std::string> kSmall = {"run", "--world-size", "4",   "-m",      "1024", "-n",
                                         "256", "-k",           "256", "--iters", "2"};

std::vector<std::string> small(std::vector<std::string> extra) {
  std::vector<std::string> args = kSmall;
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The whitespace-separated fields of a table row.
std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    const std::size_t begin = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > begin) out.push_back(line.substr(begin, i - begin));
  }
  return out;
}

TEST(CliRun, CheckPassesForEveryAlgorithmAndNamesThePlannerChoice) {
  const ToolResult r = run_tool(small({"--check", "--seed", "42"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  for (const char* algo : {"native", "pipelined", "decomposed"}) {
    const std::string line = line_starting(r.out, std::string(algo) + " ");
    ASSERT_FALSE(line.empty()) << "no row for " << algo << " in:\n" << r.out;
    const auto f = fields(line);
    // algorithm, time, TFLOP/s, speedup, max rel error, status...
    ASSERT_GE(f.size(), 6u) << line;
    EXPECT_GT(std::atof(f[1].c_str()), 0.0) << line;
    const double error = std::atof(f[4].c_str());
    EXPECT_LT(error, 1e-2) << line;
    EXPECT_GT(error, 0.0) << "bf16 outputs cannot match float64 exactly: " << line;
    EXPECT_EQ(f[5], "ok") << line;
  }
  EXPECT_TRUE(contains(line_starting(r.out, "native "), "<- planner")) << r.out;
  EXPECT_FALSE(contains(line_starting(r.out, "pipelined "), "<- planner")) << r.out;
  EXPECT_TRUE(contains(line_starting(r.out, "decomposed "), "1.00x")) << r.out;
  EXPECT_TRUE(contains(r.out, "# planner (auto): native")) << r.out;
  EXPECT_TRUE(contains(r.out, "# check: all 4 ranks within tolerance")) << r.out;
  EXPECT_TRUE(contains(r.out, "seed 42")) << r.out;
  EXPECT_TRUE(contains(r.out, "# M 1024 (m 256 per rank), N 256, K 256, dtype bf16")) << r.out;
  EXPECT_TRUE(contains(r.out, "(ms)")) << "units row missing:\n" << r.out;
}

TEST(CliRun, WithoutCheckErrorsAreDashes) {
  const ToolResult r = run_tool(small({}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto f = fields(line_starting(r.out, "native "));
  ASSERT_GE(f.size(), 6u) << r.out;
  EXPECT_EQ(f[4], "-");
  EXPECT_TRUE(contains(r.out, "# check: not run")) << r.out;
  EXPECT_TRUE(contains(r.out, "seed ")) << "a clock seed must still be printed:\n" << r.out;
}

TEST(CliRun, ShardNotAMultipleOfTheTileFallsBackToPipelined) {
  // m per rank = 200: native's 256-row tiles would straddle two chunks.
  const ToolResult r = run_tool({"run", "--world-size", "4", "-m", "800", "-n", "256", "-k", "256",
                                 "--iters", "2", "--check"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string native = line_starting(r.out, "native ");
  EXPECT_TRUE(contains(native, "unavailable:")) << native;
  EXPECT_TRUE(contains(native, "m per rank (200) is not a multiple of the native tile M (256)"))
      << native;
  EXPECT_TRUE(contains(line_starting(r.out, "pipelined "), "ok  <- planner")) << r.out;
  EXPECT_TRUE(contains(line_starting(r.out, "decomposed "), "ok")) << r.out;
  EXPECT_TRUE(contains(r.out, "# planner (auto): pipelined")) << r.out;
  EXPECT_TRUE(contains(r.out, "not a multiple of the native tile M")) << r.out;
}

TEST(CliRun, ForcedNativeThatCannotRunIsAnError) {
  const ToolResult r = run_tool(small({"--algo", "native", "--dtype", "fp16"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "native")) << r.err;
  EXPECT_TRUE(contains(r.err, "bf16")) << r.err;
  EXPECT_EQ(r.out.find("native "), std::string::npos) << "no table on failure:\n" << r.out;
}

TEST(CliRun, AutoRunsThePlannersPickAgainstDecomposed) {
  const ToolResult r = run_tool(small({"--algo", "auto", "--check"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(line_starting(r.out, "auto -> native "), "ok  <- planner")) << r.out;
  EXPECT_TRUE(contains(line_starting(r.out, "decomposed "), "1.00x")) << r.out;
  EXPECT_TRUE(line_starting(r.out, "pipelined ").empty()) << r.out;
}

TEST(CliRun, AutoFollowsAsynctpAlgo) {
  const ToolResult r = run_tool(small({"--algo", "auto"}), {{"ASYNCTP_ALGO", "pipelined"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(line_starting(r.out, "auto -> pipelined ").empty()) << r.out;
  EXPECT_TRUE(contains(r.out, "# planner (auto): pipelined")) << r.out;
}

TEST(CliRun, AsynctpAlgoForcingWhatCannotRunStillMeasuresTheForcedRows) {
  const std::vector<std::pair<std::string, std::string>> env = {{"ASYNCTP_ALGO", "native"}};
  const std::vector<std::string> args = {"run", "--world-size", "4",   "-m",      "800", "-n",
                                         "256", "-k",           "256", "--iters", "2"};
  const ToolResult all = run_tool(args, env);
  ASSERT_EQ(all.exit_code, 0) << all.out << all.err;
  EXPECT_TRUE(contains(all.out, "# planner (auto): cannot run")) << all.out;
  EXPECT_TRUE(contains(line_starting(all.out, "pipelined "), " ok")) << all.out;

  // --algo auto is the default call itself, which ASYNCTP_ALGO makes fail.
  std::vector<std::string> auto_args = args;
  auto_args.insert(auto_args.end(), {"--algo", "auto"});
  const ToolResult automatic = run_tool(auto_args, env);
  EXPECT_EQ(automatic.exit_code, 1) << automatic.out;
  EXPECT_TRUE(contains(automatic.err, "native was forced but cannot run")) << automatic.err;
}

TEST(CliRun, ColumnMajorFp32BChecksOutAndNativeIsUnavailable) {
  const ToolResult r = run_tool(small({"--dtype", "fp32", "--b-layout", "col", "--check"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(line_starting(r.out, "native "), "native needs bf16")) << r.out;
  EXPECT_TRUE(contains(line_starting(r.out, "pipelined "), " ok")) << r.out;
  EXPECT_TRUE(contains(r.out, "dtype fp32, B layout col")) << r.out;
}

TEST(CliRun, SingleAlgorithmRunsWithTheBaseline) {
  const ToolResult r = run_tool(small({"--algo", "pipelined", "--workers", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_FALSE(line_starting(r.out, "pipelined ").empty()) << r.out;
  EXPECT_FALSE(line_starting(r.out, "decomposed ").empty()) << r.out;
  EXPECT_TRUE(line_starting(r.out, "native ").empty()) << r.out;
  EXPECT_TRUE(contains(r.out, "3 GEMM workers per rank")) << r.out;
}

}  // namespace
}  // namespace asynctp::cli_test
