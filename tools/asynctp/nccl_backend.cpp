#include "nccl_backend.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <functional>
#include <map>
#include <optional>

#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "bootstrap/launch_env.hpp"
#include "check.hpp"
#include "gpu/stream_memops.hpp"
#include "nccl_entry.hpp"

namespace asynctp::tool {
namespace {

// A host word every GPU can read (portable, mapped; UVA gives one address).
class GateWord {
 public:
  GateWord() {
    device_check(cudaHostAlloc(reinterpret_cast<void**>(&word_), sizeof(std::uint32_t),
                               cudaHostAllocMapped | cudaHostAllocPortable),
                 "cudaHostAlloc(start gate word)");
    *word_ = 0;
  }
  ~GateWord() { (void)cudaFreeHost(word_); }
  GateWord(const GateWord&) = delete;
  GateWord& operator=(const GateWord&) = delete;
  std::uint32_t* get() const noexcept { return word_; }
  void open(std::uint32_t value) {
    std::atomic_ref<std::uint32_t>(*word_).store(value, std::memory_order_release);
  }

 private:
  std::uint32_t* word_ = nullptr;
};

}  // namespace

NcclBackend::NcclBackend(const RunArgs& args) : group_(args.world_size), held_(args.world_size) {
  std::map<std::string, int> names;
  for (int r = 0; r < group_.world_size(); ++r) {
    cudaDeviceProp props{};
    device_check(cudaGetDeviceProperties(&props, group_.device(r)), "cudaGetDeviceProperties");
    ++names[props.name];
  }
  for (const auto& [name, count] : names) {
    if (!device_names_.empty()) device_names_ += ", ";
    device_names_ += std::to_string(count) + " x " + name;
  }
}

NcclBackend::~NcclBackend() {
  // Buffers and streams belong to each rank's GPU: free them there.
  group_.run([&](Comm& comm) { held_.release(comm.rank()); });
}

std::string NcclBackend::description() const {
  return "GPUs 0.." + std::to_string(group_.world_size() - 1) + " (" + device_names_ +
         "), one rank each, NCCL communicator from one process";
}

std::string NcclBackend::timing_rule() const {
  return "per call, the slowest rank's cudaEvent span on its own stream (each rank's device work "
         "held until every rank has enqueued, then released together)";
}

void NcclBackend::place(std::vector<RankData>& host) {
  held_.bind(host);
  group_.run([&](Comm& comm) { held_.place(comm.rank(), group_.device(comm.rank())); });
}

void NcclBackend::poison_outputs() {
  held_.poison_host();
  group_.run([&](Comm& comm) { held_.upload_outputs(comm.rank()); });
}

void NcclBackend::fetch_outputs() {
  group_.run([&](Comm& comm) { held_.download_outputs(comm.rank()); });
}

// Every rank's stream waits on one host word before its begin event; the
// word opens once every rank has enqueued its call, so the ranks' device
// work starts together and host enqueue time stays out of the figure. Not on
// the first call (it may allocate, and cudaFree would wait for the gate).
std::vector<double> NcclBackend::time_calls(int total, const CallFn& call, const BeforeFn& before) {
  const int world = world_size();
  const auto iterations = static_cast<std::size_t>(total);
  std::vector<std::vector<double>> per_rank(static_cast<std::size_t>(world),
                                            std::vector<double>(iterations, 0.0));
  std::barrier<> iteration_start(world);
  std::barrier<> all_enqueued(world);
  std::vector<double> previous(iterations, 0.0);
  GateWord gate;
  group_.run([&](Comm& comm) {
    const int r = comm.rank();
    const cudaStream_t s = static_cast<cudaStream_t>(stream(r));
    std::vector<Event> begin(iterations);
    std::vector<Event> end(iterations);
    int i = 0;
    try {
      for (; i < total; ++i) {
        iteration_start.arrive_and_wait();
        const auto at = static_cast<std::size_t>(i);
        const bool gated = i > 0;
        if (r == 0) {
          std::optional<double> last;
          if (i > 0) {
            double slowest = 0;
            for (const auto& ms : per_rank) slowest = std::max(slowest, ms[at - 1]);
            last = slowest;
          }
          before(i, last);
        }
        if (gated) gpu::wait_value32_equal(s, gate.get(), static_cast<std::uint32_t>(i));
        begin[at].record(s);
        call(comm, i);
        end[at].record(s);
        all_enqueued.arrive_and_wait();
        if (r == 0 && gated) gate.open(static_cast<std::uint32_t>(i));
        synchronize(comm);
        end[at].wait();
        per_rank[static_cast<std::size_t>(r)][at] = end[at].ms_since(begin[at]);
      }
    } catch (...) {
      gate.open(static_cast<std::uint32_t>(i));
      iteration_start.arrive_and_drop();
      all_enqueued.arrive_and_drop();
      throw;
    }
  });
  std::vector<double> ms(iterations, 0.0);
  for (std::size_t i = 0; i < iterations; ++i) {
    for (const auto& rank_ms : per_rank) ms[i] = std::max(ms[i], rank_ms[i]);
  }
  return ms;
}

// One rank of a job a launcher started (one process per rank): this
// process's rank only, on the GPU LOCAL_RANK names.
class LaunchedNcclBackend final : public Backend {
 public:
  explicit LaunchedNcclBackend(const RunArgs& args)
      : comm_(nccl::comm_from_environment()), rank_(comm_->rank()), held_(comm_->world_size()) {
    (void)args;
    device_check(cudaGetDevice(&device_), "cudaGetDevice");
    cudaDeviceProp props{};
    device_check(cudaGetDeviceProperties(&props, device_), "cudaGetDeviceProperties");
    device_name_ = props.name;
  }
  ~LaunchedNcclBackend() override {
    (void)cudaSetDevice(device_);
    held_.release(rank_);
  }

  const char* name() const noexcept override { return "cuda"; }
  std::string description() const override {
    return "rank " + std::to_string(rank_) + " of " + std::to_string(world_size()) +
           " (one process per rank, NCCL), GPU " + std::to_string(device_) + " (" + device_name_ +
           "); figures are this rank's";
  }
  std::string timing_rule() const override {
    return "rank 0's own cudaEvent span around each call on its stream (the ranks meet in the "
           "call's barriers; other ranks check their own results and report only failures)";
  }
  int world_size() const noexcept override { return comm_->world_size(); }
  int gemm_workers_per_rank() const noexcept override { return 0; }
  Comm& comm(int rank) override {
    (void)rank;
    return *comm_;
  }
  bool holds(int rank) const noexcept override { return rank == rank_; }
  bool reports() const noexcept override { return rank_ == 0; }
  void run(const std::function<void(Comm&)>& body) override {
    device_check(cudaSetDevice(device_), "cudaSetDevice");
    body(*comm_);
  }

  void place(std::vector<RankData>& host) override {
    held_.bind(host);
    device_check(cudaSetDevice(device_), "cudaSetDevice");
    held_.place(rank_, device_);
  }
  RankViews views(int rank) const override { return held_.views(rank); }
  void* stream(int rank) const noexcept override { return held_.stream(rank); }
  void poison_outputs() override {
    held_.poison_host();
    held_.upload_outputs(rank_);
  }
  void fetch_outputs() override { held_.download_outputs(rank_); }
  std::vector<double> time_calls(int total, const CallFn& call, const BeforeFn& before) override {
    device_check(cudaSetDevice(device_), "cudaSetDevice");
    const auto s = static_cast<cudaStream_t>(held_.stream(rank_));
    std::vector<double> ms;
    for (int i = 0; i < total; ++i) {
      before(i, ms.empty() ? std::nullopt : std::optional<double>(ms.back()));
      Event begin, end;
      begin.record(s);
      call(*comm_, i);
      end.record(s);
      synchronize(*comm_);
      end.wait();
      ms.push_back(end.ms_since(begin));
    }
    return ms;
  }

 private:
  std::unique_ptr<Comm> comm_;
  int rank_ = 0;
  int device_ = 0;
  std::string device_name_;
  HeldRanks held_;  // only this process's rank is placed
};

namespace nccl_entry {

std::optional<Launch> launch_from_env() {
  const auto info = bootstrap::launch_info_from_env();
  if (!info) return std::nullopt;
  Launch out;
  out.launcher = info->launcher;
  out.rank = info->rank;
  out.world_size = info->world_size;
  const std::string job = info->master_addr + ":" + std::to_string(info->master_port) + "/" +
                          std::to_string(info->world_size);
  out.job_seed = std::hash<std::string>{}(job) % 1'000'000'000ull;  // nine digits, like --seed's
  return out;
}

std::unique_ptr<Backend> make_launched_backend(const RunArgs& args) {
  return std::make_unique<LaunchedNcclBackend>(args);
}

bool built() noexcept { return true; }

std::string unavailable_reason(int world_size) { return nccl::unavailable_reason(world_size); }

std::unique_ptr<Backend> make_backend(const RunArgs& args) {
  return std::make_unique<NcclBackend>(args);
}

}  // namespace nccl_entry

}  // namespace asynctp::tool
