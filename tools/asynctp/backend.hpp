// The backend a run executes on: where the ranks run, where their tensors
// live and how a call is timed. run_command is written once against this
// interface; cpu_backend.cpp, loopback_backend.cpp (when the library has a
// GPU backend) and nccl_backend.cpp implement it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/comm.hpp"
#include "asynctp/options.hpp"
#include "cli_args.hpp"
#include "rank_data.hpp"

namespace asynctp::tool {

// The tensors a rank passes to the library: the host buffers themselves on
// the cpu backend, device copies on a GPU backend.
struct RankViews {
  TensorView a_shard, b, c, gathered;
};

// Enqueues rank comm.rank()'s i-th call (the backend waits for it) and
// returns what the call said it runs.
using CallFn = std::function<RunInfo(Comm& comm, int iteration)>;
// Runs on rank 0's thread before its i-th call, with the previous
// iteration's time once known (progress display).
using BeforeFn = std::function<void(int iteration, std::optional<double> last_ms)>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const noexcept = 0;
  // What else the report header says about the backend, e.g. "4 GEMM
  // workers per rank".
  virtual std::string description() const = 0;
  // How time_calls turns calls into one time per iteration (report header).
  virtual std::string timing_rule() const = 0;
  virtual int world_size() const noexcept = 0;
  // 0 where the concept does not apply (GPU backends).
  virtual int gemm_workers_per_rank() const noexcept = 0;
  virtual Comm& comm(int rank) = 0;
  // Whether this process holds rank `rank`: every rank, except when a
  // launcher started one process per rank. Only held ranks are placed, run,
  // timed and checked here.
  virtual bool holds(int rank) const noexcept {
    (void)rank;
    return true;
  }
  // Whether this process prints the report (rank 0's, under a launcher).
  virtual bool reports() const noexcept { return true; }
  // Runs body(comm) once per rank, concurrently, and joins; rethrows a rank's
  // exception.
  virtual void run(const std::function<void(Comm&)>& body) = 0;

  // Takes every rank's host data (inputs filled) and makes the tensors the calls use, copying
  // the inputs to the device where there is one. The host data must outlive
  // the last call made through this interface.
  virtual void place(std::vector<RankData>& host) = 0;
  virtual RankViews views(int rank) const = 0;
  // The stream a rank's calls are ordered on (Options::stream); nullptr on
  // synchronous backends.
  virtual void* stream(int rank) const noexcept = 0;
  // Fills every rank's C and gathered A with the poison pattern where the
  // calls write them, so an element the call never wrote is caught.
  virtual void poison_outputs() = 0;
  // Makes the host RankData's C and gathered A hold what the calls wrote.
  virtual void fetch_outputs() = 0;

  // Makes `total` collective calls per rank, waiting for each
  // (asynctp::synchronize), and returns one time in ms per iteration
  // (timing_rule says how it is measured).
  virtual std::vector<double> time_calls(int total, const CallFn& call, const BeforeFn& before) = 0;
};

// The backend --backend names (auto: this binary's GPU backend, cuda or hip,
// when built in and usable, else cpu). Throws UsageError when a flag does not
// fit the backend chosen (naming the flag) or the binary lacks the GPU backend
// named, asynctp::Error when the backend cannot start (no usable GPU, a bad
// ASYNCTP_CPU_WORKERS).
std::unique_ptr<Backend> make_backend(const RunArgs& args);

// The link a GPU-backend run uses: --link when given; otherwise nccl (one
// rank per GPU) when W > 1 and this process sees W GPUs that can run NCCL
// ranks and no --device was named, else the pcie loopback model on one GPU.
LinkChoice gpu_link_for(const RunArgs& args);

// The lowest rank this process holds.
int first_held_rank(const Backend& backend);

// Under a launcher (one process per rank) on a GPU backend: takes the
// world size from the launcher (a different --world-size is a UsageError)
// and, without --seed, the job's seed. Returns whether a launcher was found.
bool adopt_launcher(RunArgs& args);

}  // namespace asynctp::tool
