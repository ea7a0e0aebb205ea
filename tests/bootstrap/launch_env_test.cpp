// The launcher environment: each launcher's variables give rank, size and
// local rank; MASTER_ADDR and a rendezvous port (ASYNCTP_RENDEZVOUS_PORT, or
// MASTER_PORT + 1) are required with several ranks; bad or conflicting values
// are errors naming the variable.
#include "bootstrap/launch_env.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "asynctp/error.hpp"
#include "support/expect_error.hpp"

namespace asynctp::bootstrap {
namespace {

using Env = std::map<std::string, std::string>;

core::EnvLookup lookup(const Env& env) {
  return [env](const char* name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

// The message of the Error that launch_info_from_env throws for `env`.
std::string error_for(const Env& env, ErrorCode expected = ErrorCode::invalid_argument) {
  try {
    launch_info_from_env(lookup(env));
  } catch (const Error& e) {
    EXPECT_EQ(expected, e.code()) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

const Env kMaster = {{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};

Env with_master(Env env) {
  env.insert(kMaster.begin(), kMaster.end());
  return env;
}

TEST(LaunchEnv, NoLauncherMeansOneProcess) {
  EXPECT_FALSE(launch_info_from_env(lookup({})).has_value());
  EXPECT_FALSE(launch_info_from_env(lookup(kMaster)).has_value());
}

// A communicator that needs a launcher (nccl:: and cpu::comm_from_environment)
// names the variables it looked for when none is set.
TEST(LaunchEnv, ACommunicatorThatNeedsALauncherSaysWhatItLookedFor) {
  asynctp_test::expect_invalid_argument([] { (void)launched_process_info(lookup(kMaster)); },
                                        "environment",
                                        "no launcher variables found (RANK and WORLD_SIZE");
  const LaunchInfo info =
      launched_process_info(lookup({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"LOCAL_RANK", "0"}}));
  EXPECT_EQ(info.world_size, 1);
}

TEST(LaunchEnv, EachLauncherIsRecognised) {
  struct Case {
    Env env;
    const char* launcher;
  };
  const Case cases[] = {
      {{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "3"}}, "torchrun"},
      {{{"OMPI_COMM_WORLD_RANK", "3"},
        {"OMPI_COMM_WORLD_SIZE", "8"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}},
       "mpirun (Open MPI)"},
      {{{"PMI_RANK", "3"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "3"}}, "mpirun (MPICH/Hydra)"},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}}, "srun (Slurm)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.launcher);
    const auto info = launch_info_from_env(lookup(with_master(c.env)));
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(c.launcher, info->launcher);
    EXPECT_EQ(3, info->rank);
    EXPECT_EQ(8, info->world_size);
    EXPECT_EQ(3, info->local_rank);
    EXPECT_EQ("10.0.0.1", info->master_addr);
    EXPECT_EQ(29500, info->master_port);
  }
}

TEST(LaunchEnv, TorchrunVariablesAndTheLaunchersMayBothBeSetIfTheyAgree) {
  const auto info = launch_info_from_env(lookup(with_master({{"RANK", "1"},
                                                             {"WORLD_SIZE", "2"},
                                                             {"SLURM_PROCID", "1"},
                                                             {"SLURM_NTASKS", "2"},
                                                             {"SLURM_LOCALID", "1"}})));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ("torchrun", info->launcher);
  EXPECT_EQ(1, info->local_rank) << "LOCAL_RANK missing: taken from the other launcher";

  const std::string e = error_for(with_master({{"RANK", "1"},
                                               {"WORLD_SIZE", "2"},
                                               {"LOCAL_RANK", "1"},
                                               {"SLURM_PROCID", "0"},
                                               {"SLURM_NTASKS", "2"}}));
  EXPECT_NE(std::string::npos, e.find("RANK: disagrees with SLURM_PROCID/SLURM_NTASKS")) << e;
}

TEST(LaunchEnv, BadValuesNameTheVariable) {
  const struct {
    Env env;
    const char* needle;
  } cases[] = {
      {{{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}, "RANK: must be an integer"},
      {{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}, "RANK: must be less than"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}}, "RANK: must lie in"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"LOCAL_RANK", "0"}}, "WORLD_SIZE: must lie in"},
      {{{"RANK", "0"}, {"LOCAL_RANK", "0"}}, "WORLD_SIZE: not set, but RANK is"},
      {{{"WORLD_SIZE", "2"}}, "RANK: not set, but WORLD_SIZE is"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "z"}}, "LOCAL_RANK: must be an integer"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "LOCAL_RANK: not set"},
  };
  for (const auto& c : cases) {
    const std::string e = error_for(with_master(c.env));
    EXPECT_NE(std::string::npos, e.find(c.needle)) << e;
  }
}

TEST(LaunchEnv, SeveralRanksNeedTheRendezvousAddress) {
  const Env ranks = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}};
  EXPECT_NE(std::string::npos, error_for(ranks).find("MASTER_ADDR: not set"));
  Env no_port = ranks;
  no_port["MASTER_ADDR"] = "localhost";
  EXPECT_NE(std::string::npos, error_for(no_port).find("MASTER_PORT: not set"));
  Env bad_port = no_port;
  bad_port["MASTER_PORT"] = "70000";
  EXPECT_NE(std::string::npos, error_for(bad_port).find("MASTER_PORT: must lie in [1, 65535]"));

  // One rank needs no rendezvous, so neither variable is required.
  const auto single = launch_info_from_env(lookup({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  ASSERT_TRUE(single.has_value());
  EXPECT_EQ(1, single->world_size);
  EXPECT_EQ(0, single->local_rank);
}

TEST(LaunchEnv, RendezvousPortIsMasterPortPlusOneByDefault) {
  const Env ranks = {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}};
  auto info = launch_info_from_env(lookup(with_master(ranks)));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(29500, info->master_port);
  EXPECT_EQ(29501, info->rendezvous_port);
  EXPECT_EQ("MASTER_PORT + 1", info->rendezvous_port_source);
  EXPECT_EQ("port 29501 (MASTER_PORT + 1)", describe_rendezvous_port(*info));

  Env top = ranks;
  top["MASTER_ADDR"] = "h";
  top["MASTER_PORT"] = "65535";
  info = launch_info_from_env(lookup(top));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(65534, info->rendezvous_port);
  EXPECT_EQ("MASTER_PORT - 1", info->rendezvous_port_source);
}

TEST(LaunchEnv, RendezvousPortVariableWins) {
  Env env = with_master({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}});
  env["ASYNCTP_RENDEZVOUS_PORT"] = "7000";
  auto info = launch_info_from_env(lookup(env));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(29500, info->master_port);
  EXPECT_EQ(7000, info->rendezvous_port);
  EXPECT_EQ("port 7000 (ASYNCTP_RENDEZVOUS_PORT)", describe_rendezvous_port(*info));

  // Under mpirun or srun nothing needs MASTER_PORT when the port is given.
  env.erase("MASTER_PORT");
  info = launch_info_from_env(lookup(env));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(0, info->master_port);
  EXPECT_EQ(7000, info->rendezvous_port);
}

TEST(LaunchEnv, BadRendezvousPortsNameTheVariable) {
  const Env ranks = with_master({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}});
  const struct {
    const char* value;
    const char* needle;
  } cases[] = {
      {"x", "ASYNCTP_RENDEZVOUS_PORT: must be an integer"},
      {"0", "ASYNCTP_RENDEZVOUS_PORT: must lie in [1, 65535]"},
      {"65536", "ASYNCTP_RENDEZVOUS_PORT: must lie in [1, 65535]"},
      {"29500", "ASYNCTP_RENDEZVOUS_PORT: must differ from MASTER_PORT (29500)"},
  };
  for (const auto& c : cases) {
    Env env = ranks;
    env["ASYNCTP_RENDEZVOUS_PORT"] = c.value;
    const std::string e = error_for(env);
    EXPECT_NE(std::string::npos, e.find(c.needle)) << e;
  }
}

}  // namespace
}  // namespace asynctp::bootstrap
