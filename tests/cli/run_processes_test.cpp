// `asynctp run` on the cpu backend under a launcher, as torchrun starts it:
// one process per rank (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set by
// the test), each a rank of a CPU process group on this host. Rank 0 prints
// the report; every rank checks its own output.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli/mini_json.hpp"
#include "cli/tool_process.hpp"

namespace asynctp::cli_test {
namespace {

// A MASTER_PORT of this test's own (the rendezvous listens on the next one).
std::string test_port(int offset) {
  return std::to_string(31000 + (::getpid() % 1000) * 4 + offset);
}

// What torchrun sets for rank `rank` of `world` on this host.
std::vector<std::pair<std::string, std::string>> launcher_env(int rank, int world,
                                                              const std::string& port) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", port},
          {"ASYNCTP_WAIT_TIMEOUT_MS", "20000"}};
}

std::vector<ToolResult> run_ranks(int world, const std::vector<std::string>& args,
                                  const std::string& port) {
  std::vector<StartedTool> started;
  for (int r = 0; r < world; ++r) started.push_back(start_tool(args, launcher_env(r, world, port)));
  std::vector<ToolResult> results;
  for (StartedTool& tool : started) results.push_back(finish_tool(std::move(tool)));
  return results;
}

TEST(CliCpuProcesses, EachProcessIsOneRankAndEveryAlgorithmChecks) {
  for (const std::string op : {"all-gather-matmul", "matmul-reduce-scatter"}) {
    SCOPED_TRACE(op);
    const std::vector<ToolResult> ranks =
        run_ranks(2, {"run", "--backend", "cpu", "--op",      op,   "--algo",  "all",
                      "-m",  "512",       "-n",  "64",        "-k", "64",      "--iters",
                      "2",   "--warmup",  "1",   "--workers", "2",  "--check", "--json"},
                  test_port(op == "all-gather-matmul" ? 0 : 2));
    ASSERT_EQ(ranks.size(), 2u);
    ASSERT_EQ(ranks[0].exit_code, 0) << ranks[0].out << ranks[0].err;
    ASSERT_EQ(ranks[1].exit_code, 0) << ranks[1].out << ranks[1].err;
    EXPECT_EQ(ranks[1].out, "") << "only rank 0 reports";
    const Json doc = JsonParser(ranks[0].out).parse_document();
    EXPECT_EQ(doc["backend"].string, "cpu");
    EXPECT_EQ(doc["world_size"].number, 2);
    EXPECT_TRUE(contains(doc["backend_detail"].string, "rank 0 of 2 (one process per rank"))
        << doc["backend_detail"].string;
    EXPECT_TRUE(doc["check_ok"].boolean);
    int checked = 0;
    for (const Json& algo : doc["algorithms"].array) {
      SCOPED_TRACE(algo["name"].string);
      EXPECT_TRUE(algo["available"].boolean);
      EXPECT_TRUE(algo["check_ok"].boolean);
      EXPECT_GT(algo["median_ms"].number, 0);
      ++checked;
    }
    EXPECT_EQ(checked, 3);
  }
}

// Refused before any rank meets the others: nothing to wait for.
TEST(CliCpuProcesses, WorldSizeThatContradictsTheLauncherIsRefused) {
  const ToolResult r =
      run_tool({"run", "--backend", "cpu", "--world-size", "4", "-m", "64", "-n", "8", "-k", "8"},
               launcher_env(1, 2, test_port(0)));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "--world-size: this process is rank 1 of 2")) << r.err;
}

}  // namespace
}  // namespace asynctp::cli_test
