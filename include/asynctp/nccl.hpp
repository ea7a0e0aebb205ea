// asynctp on real GPUs: one rank per GPU over an NCCL communicator.
//
// Three ways to get a communicator, each collective (every rank makes it at
// the same time):
//  (a) wrap_nccl_comm: around an ncclComm_t the caller already has (PyTorch's
//      ProcessGroupNCCL, Megatron); the caller keeps it and must keep it alive.
//  (b) comm_from_environment: one process per GPU under torchrun, mpirun
//      (Open MPI, MPICH) or srun. RANK/WORLD_SIZE/LOCAL_RANK (or the
//      launcher's own variables) say who this process is, LOCAL_RANK picks the
//      GPU (device 0 when the launcher leaves each process one GPU through
//      CUDA_VISIBLE_DEVICES, logged at ASYNCTP_DEBUG=INFO), and rank 0 hands
//      the NCCL unique id to the others through a TCP rendezvous on
//      MASTER_ADDR at ASYNCTP_RENDEZVOUS_PORT, by default MASTER_PORT + 1
//      (MASTER_PORT is torchrun's TCPStore; no file system, no extra service:
//      rank 0 serves it for the length of the call).
//  (c) LocalGroup: every local GPU from one process, one host thread per rank
//      (ncclCommInitAll).
//
// The native path needs every peer's memory mapped here (NCCL symmetric
// windows over one NVLink domain); where that is missing (ranks on several
// nodes, GPUs without peer access) the planner picks decomposed
// (ncclAllGather + cuBLAS) and says why. Calls are asynchronous like the
// loopback group's: they enqueue on Options::stream; asynctp::synchronize(comm)
// waits (bounded) and reports device-side errors.
//
// Built where NCCL (with its device API, 2.28 or newer) was found next to the
// CUDA backend; the library then defines ASYNCTP_HAVE_NCCL_BACKEND.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "asynctp/comm.hpp"
#include "asynctp/group.hpp"

struct ncclComm;  // nccl.h: typedef struct ncclComm* ncclComm_t;

namespace asynctp::nccl {

// "" when this process can make NCCL ranks on `world_size` local GPUs;
// otherwise why not (no driver, fewer GPUs, a GPU older than sm_80).
std::string unavailable_reason(int world_size = 1);

// (a) Collective over `comm`. Throws Error(backend) on NCCL or CUDA failures.
std::unique_ptr<Comm> wrap_nccl_comm(ncclComm* comm);

struct EnvironmentOptions {
  int device = -1;  // -1: the launcher's local rank
  std::int64_t rendezvous_timeout_ms = 120'000;
};

// (b) Throws Error(invalid_argument) naming the variable when the launcher's
// environment is missing or malformed, when several GPUs are visible and
// LOCAL_RANK is not one of them, or when two ranks would share a GPU;
// Error(mismatch) when the ranks disagree on the world size; Error(timeout)
// when not every rank reached the rendezvous in time.
std::unique_ptr<Comm> comm_from_environment(const EnvironmentOptions& options = {});

class LocalGroup final : public RankGroup {
 public:
  // (c) world_size ranks on devices[r] (default: GPUs 0 .. world_size - 1).
  // Throws Error(invalid_argument) on too few GPUs or a GPU named twice.
  explicit LocalGroup(int world_size, std::vector<int> devices = {});
  ~LocalGroup() override;

  int world_size() const noexcept override;
  Comm& comm(int rank) override;
  int device(int rank) const;
  // run(body): RankGroup's, one host thread per rank with its GPU current.

  // RankGroup's, by this group's rule: rank r's calls ordered on streams[r]
  // (one per rank, required), each timed by events on it; per iteration the
  // slowest rank's span. From the second iteration on, each rank's device
  // work is held until every rank has enqueued, so the ranks start together
  // and host enqueue time stays out of the figure (not the first: it may
  // allocate, and a free would wait for the hold).
  std::vector<double> time_calls(int iterations, const RankCall& call,
                                 const BeforeIteration& before = {},
                                 const std::vector<void*>& streams = {}) override;

 private:
  void enter_rank_thread(int rank) override;

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace asynctp::nccl
