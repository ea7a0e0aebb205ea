// Where a run's ranks execute, where their tensors live and how a call is
// timed, behind one interface that `run` and `bench` are written against:
// the cpu backend (cpu_backend.cpp) and, where the library has them, the
// loopback group and the NCCL ranks over DeviceBackend (gpu_backends.cpp,
// nccl_backends.cpp).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "args.hpp"
#include "asynctp/bench.hpp"
#include "asynctp/comm.hpp"
#include "asynctp/group.hpp"
#include "asynctp/launch.hpp"
#include "asynctp/verify.hpp"
#include "report.hpp"

namespace asynctp::tool {

// The op's host tensors, and a rank's arguments of its call: the host
// tensors themselves on the cpu backend, device copies on a GPU.
using Problem = verify::Problem;
using RankViews = verify::RankTensors;

class Backend {
 public:
  virtual ~Backend() = default;
  BackendInfo info;

  // The in-process group that holds every rank (cpu, loopback, local NCCL),
  // whose rule times the calls (RankGroup::time_calls); null under a
  // launcher, where this process holds one rank and time_rank_calls times it.
  RankGroup* group() const noexcept { return group_; }
  virtual int world_size() const noexcept { return group_->world_size(); }
  virtual Comm& comm(int rank) { return group_->comm(rank); }
  // Every rank, unless a launcher started one process per rank: only held
  // ranks are placed, run, timed and checked here; rank 0's process reports.
  virtual bool holds(int) const noexcept { return true; }
  // body(comm) once per held rank, concurrently; rethrows a rank's error.
  virtual void run(const std::function<void(Comm&)>& body) { group_->run(body); }

  // Makes each held rank's tensors from the problem's, which must outlive
  // the calls; views() and stream() (nullptr where calls are synchronous)
  // are what a rank's calls are given, problem() what makes them.
  virtual void place(Problem& problem) = 0;
  virtual const RankViews& views(int rank) const = 0;
  const Problem& problem() const { return *placed_; }
  virtual void* stream(int rank) const noexcept = 0;
  // Poisons the outputs where the calls write them; brings them back.
  virtual void poison_outputs() = 0;
  virtual void fetch_outputs() = 0;
  // Under a launcher: `total` calls of this process's rank, each waited for,
  // one time in ms per iteration by info.timing_rule.
  virtual std::vector<double> time_rank_calls(int total, const RankCall& call,
                                              const BeforeIteration& before) {
    (void)total, (void)call, (void)before;
    throw std::logic_error("time_rank_calls: only a launched backend times one rank");
  }
  // --clocks: a probe of the SM clock on held rank `rank`'s stream, after
  // the work enqueued there so far (on the thread run() gives the rank), and
  // its reading in MHz once that work is done (bench::ClockProbe). Only a
  // GPU backend has a clock to read; --clocks is refused elsewhere.
  virtual void probe_clock(int rank) {
    (void)rank;
    throw std::logic_error("probe_clock: only a GPU backend has an SM clock");
  }
  virtual double read_clock() {
    throw std::logic_error("read_clock: only a GPU backend has an SM clock");
  }

 protected:
  Problem* placed_ = nullptr;
  RankGroup* group_ = nullptr;  // set by a backend that holds every rank
};

// Each held rank's tensors on its GPU, made, filled and freed on the thread
// that drives the rank, through run().
class DeviceBackend : public Backend {
 public:
  void place(Problem& problem) override;
  const RankViews& views(int rank) const override;
  void* stream(int rank) const noexcept override;
  void poison_outputs() override;
  void fetch_outputs() override;
  void probe_clock(int rank) override;
  double read_clock() override;

 protected:
  virtual int device_of(int rank) const = 0;  // current on the thread run() gives it
  // Frees the device parts: the derived destructor calls it while run() works.
  void release() noexcept;

 private:
  std::vector<std::unique_ptr<bench::DeviceRank>> ranks_;
  std::unique_ptr<bench::ClockProbe> clock_;  // made by the first probe, on its rank's GPU
};

// The backend --backend names (auto: this binary's GPU backend when built in
// and usable, else cpu). Throws UsageError naming a flag that does not fit
// the backend or a GPU backend the binary lacks, asynctp::Error when the
// backend cannot start.
std::unique_ptr<Backend> make_backend(const Args& args);

// --link when given; otherwise nccl under a launcher, or when W > 1, W GPUs
// can run NCCL ranks and no --device is named; else the pcie loopback model.
LinkChoice gpu_link_for(const Args& args);

// Under a launcher (one process per rank; on the cpu backend, of a world
// larger than one): the world size comes from the launcher (a different
// --world-size is a UsageError), the seed without --seed from the job.
void adopt_launcher(Args& args);

// W thread ranks in this process, or this process's rank under a launcher
// whose world is larger than one.
std::unique_ptr<Backend> make_cpu_backend(const Args& args);
std::unique_ptr<Backend> make_loopback_backend(const Args& args);  // W ranks on one GPU
std::unique_ptr<Backend> make_nccl_backend(const Args& args);      // rank r on GPU r
std::unique_ptr<Backend> make_launched_backend(const Args& args);  // this process's rank

// What this binary was built with (backend.cpp, which also makes the GPU
// backends it lacks errors that say so): the GPU runtime ("cuda", "hip" or
// ""); why a loopback group cannot run on `device`, or `world_size` GPUs
// cannot each run an NCCL rank ("" when they can); the launcher's view of
// this process, where it can run one rank per process.
const char* gpu_runtime() noexcept;
std::string gpu_unavailable_reason(int device);
std::string nccl_unavailable_reason(int world_size);
std::optional<LaunchInfo> launch_info();

}  // namespace asynctp::tool
