#include "bootstrap/launch_env.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "asynctp/error.hpp"

namespace asynctp::bootstrap {
namespace {

struct LauncherVars {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;  // nullptr: the launcher has none
};

// Most specific first: torchrun's variables are also what users export by
// hand for other launchers, so they win when they agree with the launcher's.
constexpr LauncherVars kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"mpirun (Open MPI)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"mpirun (MPICH/Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
    {"srun (Slurm)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

[[noreturn]] void fail(const std::string& variable, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, variable + ": " + rule);
}

int parse_int(const std::string& variable, const std::string& text, std::int64_t lo,
              std::int64_t hi) {
  const std::optional<std::int64_t> value = core::parse_integer(text);
  if (!value) fail(variable, "must be an integer, got '" + text + "'");
  if (*value < lo || *value > hi) {
    fail(variable,
         "must lie in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + text);
  }
  return static_cast<int>(*value);
}

struct Found {
  const LauncherVars* vars;
  int rank, size;
  std::optional<int> local_rank;
};

std::optional<Found> read_launcher(const LauncherVars& v, const core::EnvLookup& env) {
  const auto rank = env(v.rank);
  const auto size = env(v.size);
  if (!rank && !size) return std::nullopt;
  if (!rank) fail(v.rank, std::string("not set, but ") + v.size + " is (" + v.name + ")");
  if (!size) fail(v.size, std::string("not set, but ") + v.rank + " is (" + v.name + ")");
  Found f{&v, 0, parse_int(v.size, *size, 1, INT32_MAX), std::nullopt};
  f.rank = parse_int(v.rank, *rank, 0, INT32_MAX);
  if (f.rank >= f.size) {
    fail(v.rank, "must be less than " + std::string(v.size) + " (" + *size + "), got " + *rank);
  }
  if (v.local_rank) {
    if (const auto local = env(v.local_rank)) {
      f.local_rank = parse_int(v.local_rank, *local, 0, INT32_MAX);
    }
  }
  return f;
}

}  // namespace

int default_rendezvous_port(int master_port) {
  return master_port < 65535 ? master_port + 1 : master_port - 1;
}

std::string describe_rendezvous_port(const LaunchInfo& info) {
  return "port " + std::to_string(info.rendezvous_port) + " (" +
         (info.rendezvous_port_source.empty() ? std::string("rendezvous_port")
                                              : info.rendezvous_port_source) +
         ")";
}

std::optional<LaunchInfo> launch_info_from_env(const core::EnvLookup& env) {
  std::vector<Found> found;
  for (const LauncherVars& v : kLaunchers) {
    if (auto f = read_launcher(v, env)) found.push_back(*f);
  }
  if (found.empty()) return std::nullopt;
  const Found& first = found.front();
  for (const Found& other : found) {
    if (other.rank != first.rank || other.size != first.size) {
      fail(first.vars->rank, std::string("disagrees with ") + other.vars->rank + "/" +
                                 other.vars->size + " (" + first.vars->name + " says rank " +
                                 std::to_string(first.rank) + " of " + std::to_string(first.size) +
                                 ", " + other.vars->name + " says " + std::to_string(other.rank) +
                                 " of " + std::to_string(other.size) + ")");
    }
  }

  LaunchInfo info;
  info.launcher = first.vars->name;
  info.rank = first.rank;
  info.world_size = first.size;
  // The first launcher that knows the local rank; a one-process job is rank 0.
  std::optional<int> local;
  for (const Found& f : found) {
    if (!local && f.local_rank) local = f.local_rank;
  }
  if (!local && info.world_size > 1) {
    fail(first.vars->local_rank ? first.vars->local_rank : "LOCAL_RANK",
         "not set: with several ranks each process must know its index on its node (it picks "
         "the GPU)");
  }
  info.local_rank = local.value_or(0);

  const auto addr = env("MASTER_ADDR");
  const auto port = env("MASTER_PORT");
  const auto rendezvous = env(kRendezvousPortVariable);
  if (info.world_size > 1) {
    if (!addr || addr->empty()) {
      fail("MASTER_ADDR",
           "not set; the rendezvous listens on rank 0's host at MASTER_ADDR (torchrun sets it; "
           "export it for mpirun or srun)");
    }
    if (!port && !rendezvous) {
      fail("MASTER_PORT",
           "not set; the rendezvous needs a port on rank 0's host: ASYNCTP_RENDEZVOUS_PORT, or "
           "by default MASTER_PORT + 1 (torchrun sets MASTER_PORT)");
    }
  }
  if (addr) info.master_addr = *addr;
  if (port) info.master_port = parse_int("MASTER_PORT", *port, 1, 65535);
  if (rendezvous) {
    info.rendezvous_port = parse_int(kRendezvousPortVariable, *rendezvous, 1, 65535);
    info.rendezvous_port_source = kRendezvousPortVariable;
    if (info.rendezvous_port == info.master_port) {
      fail(kRendezvousPortVariable,
           "must differ from MASTER_PORT (" + *port +
               "), where torchrun's and init_process_group's TCPStore listens; unset it to use "
               "MASTER_PORT + 1");
    }
  } else if (info.master_port > 0) {
    info.rendezvous_port = default_rendezvous_port(info.master_port);
    info.rendezvous_port_source =
        info.rendezvous_port > info.master_port ? "MASTER_PORT + 1" : "MASTER_PORT - 1";
  }
  return info;
}

LaunchInfo launched_process_info(const core::EnvLookup& env) {
  std::optional<LaunchInfo> info = launch_info_from_env(env);
  if (!info) {
    throw Error(ErrorCode::invalid_argument,
                "environment: no launcher variables found (RANK and WORLD_SIZE as torchrun sets "
                "them, or Open MPI's OMPI_COMM_WORLD_*, MPICH's PMI_*, Slurm's "
                "SLURM_PROCID/SLURM_NTASKS)");
  }
  return *info;
}

}  // namespace asynctp::bootstrap
