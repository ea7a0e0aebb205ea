// Bad input fails fast with exit status 2 and a message naming the flag;
// --help documents every flag and the environment.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/tool_process.hpp"

namespace asynctp::cli_test {
namespace {

struct BadInput {
  std::vector<std::string> args;
  std::vector<std::string> message_parts;  // all must appear on stderr
};

TEST(CliArgs, BadInputExitsTwoNamingTheFlag) {
  const std::vector<BadInput> cases = {
      {{"-m", "100"}, {"-m: must be divisible by --world-size (8), got 100"}},
      {{"--world-size", "4", "-m", "1026"}, {"-m:", "--world-size (4)", "1026"}},
      {{"--bogus"}, {"unknown flag '--bogus'"}},
      {{"--dtype", "int8"}, {"--dtype:", "bf16, fp16 or fp32", "int8"}},
      {{"--iters", "0"}, {"--iters:", "positive", "'0'"}},
      {{"--iters", "two"}, {"--iters:", "'two'"}},
      {{"-n"}, {"-n: missing value"}},
      {{"--algo", "fastest"}, {"--algo:", "fastest"}},
      {{"--b-layout", "diag"}, {"--b-layout:", "row or col"}},
      {{"--backend", "tpu"}, {"--backend:", "tpu"}},
      {{"--warmup", "-1"}, {"--warmup:"}},
      {{"--world-size", "0"}, {"--world-size:"}},
      {{"--seed", "x"}, {"--seed:"}},
      {{"--workers", "-2"}, {"--workers:"}},
      {{"--timeout-ms", "0"}, {"--timeout-ms:"}},
      {{"--check=yes"}, {"--check: takes no value"}},
  };
  for (const BadInput& c : cases) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    std::string shown;
    for (const auto& a : c.args) shown += a + " ";
    SCOPED_TRACE(shown);
    const ToolResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    for (const std::string& part : c.message_parts) {
      EXPECT_TRUE(contains(r.err, part)) << "missing '" << part << "' in: " << r.err;
    }
    EXPECT_TRUE(contains(r.err, "asynctp run --help")) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(CliArgs, UnknownCommandAndNoCommandAreUsageErrors) {
  EXPECT_EQ(run_tool({"frobnicate"}).exit_code, 2);
  const ToolResult none = run_tool({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.err, "asynctp run")) << none.err;
}

TEST(CliArgs, TooBigForTheMachineIsRefusedBeforeAllocating) {
  const ToolResult r = run_tool({"run", "-m", "1048576", "-n", "1048576", "-k", "1048576"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "GiB")) << r.err;
}

TEST(CliHelp, DocumentsEveryFlagAlgorithmAndVariable) {
  const std::vector<std::string> flags = {"--backend",    "--world-size", "-m ",
                                          "-n ",          "-k ",          "--algo",
                                          "--dtype",      "--b-layout",   "--iters",
                                          "--warmup",     "--check",      "--json",
                                          "--trace",      "--seed",       "--workers",
                                          "--timeout-ms", "--op",         "matmul-reduce-scatter",
                                          "--no-gathered"};
  const std::vector<std::string> words = {
      "native",         "pipelined",      "decomposed",
      "auto",           "ASYNCTP_ALGO",   "ASYNCTP_WAIT_TIMEOUT_MS",
      "ASYNCTP_TILE_M", "ASYNCTP_TILE_N", "ASYNCTP_CPU_WORKERS",
      "ASYNCTP_DEBUG",  "WARN|INFO|TRACE"};
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, std::vector<std::string>{"run", "--help"}}) {
    SCOPED_TRACE(args.size() == 1 ? "asynctp --help" : "asynctp run --help");
    const ToolResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const auto& flag : flags) EXPECT_TRUE(contains(r.out, flag)) << flag;
    for (const auto& word : words) EXPECT_TRUE(contains(r.out, word)) << word;
  }
}

TEST(CliHelp, HelpWinsOverOtherFlagsAndRunsNothing) {
  const ToolResult r = run_tool({"run", "-m", "100", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Usage: asynctp run")) << r.out;
  EXPECT_TRUE(line_starting(r.out, "#").empty()) << "no run took place:\n" << r.out;
}

TEST(CliHelp, VersionPrintsTheProjectVersion) {
  const ToolResult r = run_tool({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  // The version, then the GPU backend this binary was built with.
  EXPECT_EQ(r.out.rfind("asynctp 0.1.0\nGPU backend: ", 0), 0u) << r.out;
  const std::string gpu = r.out.substr(std::string("asynctp 0.1.0\nGPU backend: ").size());
  EXPECT_TRUE(gpu == "cuda\n" || gpu == "hip\n" || gpu == "none\n") << r.out;
}

}  // namespace
}  // namespace asynctp::cli_test
