#include <cmath>
#include <memory>
#include <string>
#include <vector>

// The loopback group (asynctp/loopback.hpp), over the runtime this library
// was built for (gpu/rank_backend.hpp).
#include "asynctp/error.hpp"
#include "asynctp/loopback.hpp"
#include "core/lookup.hpp"
#include "core/rank_threads.hpp"
#include "gpu/check.hpp"
#include "gpu/loopback_comm.hpp"
#include "gpu/loopback_state.hpp"
#include "gpu/rank_backend.hpp"
#include "gpu/runtime.hpp"
#include "gpu/runtime_backend.hpp"

namespace asynctp::loopback {
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
                "device: must be a GPU ordinal >= 0, got " + std::to_string(config.device));
  }
  if (config.link == Link::arrival && !(std::isfinite(config.link_gbps) && config.link_gbps > 0)) {
    throw Error(ErrorCode::invalid_argument,
                "link_gbps: must be a positive number of GB/s for Link::arrival, got " +
                    std::to_string(config.link_gbps));
  }
}

constexpr core::Entry<Link, const char*> kLinkNames[] = {{Link::pcie, "pcie"},
                                                         {Link::arrival, "arrival"}};

}  // namespace

const char* to_string(Link link) noexcept { return core::lookup(kLinkNames, link, "?"); }

Link parse_link(const std::string& text, const std::string& what) {
  if (const auto link = core::key_named(kLinkNames, text)) return *link;
  throw Error(ErrorCode::invalid_argument, what + ": must be pcie or arrival, got '" + text + "'");
}

std::string unavailable_reason(int device) { return gpu::runtime_unavailable_reason(device); }

struct LoopbackGroup::State {
  explicit State(const LoopbackConfig& config) : shared(config) {
    for (int r = 0; r < config.world_size; ++r) {
      comms.push_back(
          std::make_unique<gpu::LoopbackComm>(shared, r, gpu::make_rank_backend(config.device)));
    }
  }
  gpu::LoopbackState shared;
  std::vector<std::unique_ptr<gpu::LoopbackComm>> comms;
};

LoopbackGroup::LoopbackGroup(const LoopbackConfig& config) {
  check_config(config);
  const std::string why = unavailable_reason(config.device);
  if (!why.empty()) {
    throw Error(ErrorCode::backend,
                std::string("loopback group on ") + gpu::rt::kName + " device: " + why);
  }
  gpu::check(gpu::rt::set_device(config.device), "set device (LoopbackConfig::device)");
  state_ = std::make_unique<State>(config);
}

LoopbackGroup::~LoopbackGroup() {
  // Queued work may still use the ranks' buffers and streams.
  if (state_) (void)gpu::rt::device_synchronize();
}

int LoopbackGroup::world_size() const noexcept { return state_->shared.config.world_size; }

const LoopbackConfig& LoopbackGroup::config() const noexcept { return state_->shared.config; }

Comm& LoopbackGroup::comm(int rank) {
  core::check_rank_argument(rank, world_size());
  return *state_->comms[static_cast<std::size_t>(rank)];
}

double LoopbackGroup::last_call_ms(int rank) const {
  core::check_rank_argument(rank, world_size());
  return state_->comms[static_cast<std::size_t>(rank)]->last_call_ms();
}

void LoopbackGroup::enter_rank_thread(int) {
  gpu::check(gpu::rt::set_device(state_->shared.config.device), "set device (group device)");
}

}  // namespace asynctp::loopback
