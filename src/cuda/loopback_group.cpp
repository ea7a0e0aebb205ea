#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "asynctp/cuda.hpp"
#include "asynctp/error.hpp"
#include "core/rank_threads.hpp"
#include "cuda/backend_caps.hpp"
#include "cuda/comm.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/loopback_state.hpp"

namespace asynctp::cuda {
namespace {

constexpr int kMaxWorldSize = 64;  // virtual ranks share one GPU's memory

void check_config(const LoopbackConfig& config) {
  if (config.world_size < 1 || config.world_size > kMaxWorldSize) {
    throw Error(ErrorCode::invalid_argument, "world_size: must lie in [1, " +
                                                 std::to_string(kMaxWorldSize) + "], got " +
                                                 std::to_string(config.world_size));
  }
  if (config.device < 0) {
    throw Error(ErrorCode::invalid_argument,
                "device: must be a CUDA device ordinal >= 0, got " + std::to_string(config.device));
  }
  if (config.link == Link::arrival && !(std::isfinite(config.link_gbps) && config.link_gbps > 0)) {
    throw Error(ErrorCode::invalid_argument,
                "link_gbps: must be a positive number of GB/s for Link::arrival, got " +
                    std::to_string(config.link_gbps));
  }
}

}  // namespace

const char* to_string(Link link) noexcept {
  switch (link) {
    case Link::pcie:
      return "pcie";
    case Link::arrival:
      return "arrival";
  }
  return "?";
}

Link parse_link(const std::string& text, const std::string& what) {
  if (text == "pcie") return Link::pcie;
  if (text == "arrival") return Link::arrival;
  throw Error(ErrorCode::invalid_argument, what + ": must be pcie or arrival, got '" + text + "'");
}

std::string unavailable_reason(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("no usable CUDA driver or device (cudaGetDeviceCount: ") +
           cudaGetErrorName(e) + ")";
  }
  if (device < 0 || device >= count) {
    return "no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " present)";
  }
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "cannot query CUDA device " + std::to_string(device);
  }
  if (major < 8) {
    return "CUDA device " + std::to_string(device) + " is sm_" + std::to_string(major) +
           "x; bf16 GEMMs need sm_80 or newer";
  }
  return "";
}

struct LoopbackGroup::State {
  State(const LoopbackConfig& config, const DeviceInfo& device) : shared(config, device) {
    for (int r = 0; r < config.world_size; ++r) {
      comms.push_back(std::make_unique<CudaComm>(shared, r));
    }
  }
  LoopbackState shared;
  std::vector<std::unique_ptr<CudaComm>> comms;
};

LoopbackGroup::LoopbackGroup(const LoopbackConfig& config) {
  check_config(config);
  const std::string why = unavailable_reason(config.device);
  if (!why.empty()) throw Error(ErrorCode::backend, "cuda loopback group: " + why);
  check_cuda(cudaSetDevice(config.device), "cudaSetDevice(LoopbackConfig::device)");
  state_ = std::make_unique<State>(config, query_device(config.device));
}

LoopbackGroup::~LoopbackGroup() {
  // Queued work may still use the ranks' buffers and streams.
  if (state_) (void)cudaDeviceSynchronize();
}

int LoopbackGroup::world_size() const noexcept { return state_->shared.config.world_size; }

const LoopbackConfig& LoopbackGroup::config() const noexcept { return state_->shared.config; }

Comm& LoopbackGroup::comm(int rank) {
  if (rank < 0 || rank >= world_size()) {
    throw Error(
        ErrorCode::invalid_argument,
        "rank: must lie in [0, " + std::to_string(world_size()) + "), got " + std::to_string(rank));
  }
  return *state_->comms[static_cast<std::size_t>(rank)];
}

double LoopbackGroup::last_call_ms(int rank) const {
  if (rank < 0 || rank >= world_size()) {
    throw Error(
        ErrorCode::invalid_argument,
        "rank: must lie in [0, " + std::to_string(world_size()) + "), got " + std::to_string(rank));
  }
  return state_->comms[static_cast<std::size_t>(rank)]->last_call_ms();
}

void LoopbackGroup::run(const std::function<void(Comm&)>& body) {
  const int device = state_->shared.config.device;
  core::run_on_rank_threads(world_size(), [&](int rank) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice(group device)");
    body(*state_->comms[static_cast<std::size_t>(rank)]);
  });
}

}  // namespace asynctp::cuda
