// The NCCL backends, ranks on real GPUs at the same time: W ranks on W GPUs
// of this machine (nccl::LocalGroup, --link nccl), or this process's rank of
// a job a launcher started (nccl::comm_from_environment).
#include <map>

#include "asynctp/nccl.hpp"
#include "backend.hpp"

namespace asynctp::tool {
namespace {

class NcclBackend final : public DeviceBackend {
 public:
  explicit NcclBackend(const Args& args) : nccl_group_(args.world_size) {
    group_ = &nccl_group_;
    std::map<std::string, int> count_of;
    for (int r = 0; r < world_size(); ++r) ++count_of[bench::device_name(nccl_group_.device(r))];
    std::string names;
    for (const auto& [device_name, count] : count_of) {
      names += (names.empty() ? "" : ", ") + std::to_string(count) + " x " + device_name;
    }
    info.name = "cuda";
    info.detail = "GPUs 0.." + std::to_string(world_size() - 1) + " (" + names +
                  "), one rank each, NCCL communicator from one process";
    info.timing_rule =
        "per call, the slowest rank's cudaEvent span on its own stream (each rank's device work "
        "held until every rank has enqueued, then released together)";
  }
  ~NcclBackend() override { release(); }

 protected:
  int device_of(int rank) const override { return nccl_group_.device(rank); }

 private:
  nccl::LocalGroup nccl_group_;
};

// One rank of a job a launcher started: this process's rank only, on the
// GPU the launcher's local rank names.
class LaunchedBackend final : public DeviceBackend {
 public:
  LaunchedBackend()
      : comm_(nccl::comm_from_environment()),
        rank_(comm_->rank()),
        device_(bench::current_device()) {
    info.name = "cuda";
    info.detail = "rank " + std::to_string(rank_) + " of " + std::to_string(world_size()) +
                  " (one process per rank, NCCL), GPU " + std::to_string(device_) + " (" +
                  bench::device_name(device_) + "); figures are this rank's";
    info.timing_rule =
        "rank 0's own cudaEvent span around each call on its stream (the ranks meet in the "
        "call's barriers; other ranks check their own results and report only failures)";
  }
  ~LaunchedBackend() override { release(); }

  int world_size() const noexcept override { return comm_->world_size(); }
  Comm& comm(int) override { return *comm_; }
  bool holds(int rank) const noexcept override { return rank == rank_; }
  void run(const std::function<void(Comm&)>& body) override {
    bench::set_device(device_);
    body(*comm_);
  }
  std::vector<double> time_rank_calls(int total, const RankCall& call,
                                      const BeforeIteration& before) override {
    bench::set_device(device_);
    return bench::time_calls(*comm_, stream(rank_), total, call, before);
  }

 protected:
  int device_of(int) const override { return device_; }

 private:
  std::unique_ptr<Comm> comm_;
  int rank_ = 0;
  int device_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const Args& args) {
  return std::make_unique<NcclBackend>(args);
}

std::unique_ptr<Backend> make_launched_backend(const Args&) {
  return std::make_unique<LaunchedBackend>();
}

}  // namespace asynctp::tool
