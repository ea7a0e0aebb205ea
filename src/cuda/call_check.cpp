#include "cuda/call_check.hpp"

#include <algorithm>
#include <string>

#include "asynctp/error.hpp"
#include "core/schedule.hpp"
#include "core/validate.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu/call_spec.hpp"
#include "gpu/device_checks.hpp"

namespace asynctp::cuda {

void fail_argument(const std::string& argument, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, argument + ": " + rule);
}

RunInfo to_run_info(const core::Plan& plan) {
  return {plan.algorithm, plan.tile_m, plan.tile_n, plan.reason};
}

std::vector<int> arrival_order(int world, int rank, const ArrivalHooks& hooks) {
  std::vector<int> order = core::chunk_order(world, rank);
  if (hooks.reorder) {
    std::vector<int> reordered = hooks.reorder(rank, order);
    std::vector<int> sorted = reordered;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> expected = order;
    std::sort(expected.begin(), expected.end());
    if (sorted != expected) {
      fail_argument("options.hooks.reorder",
                    "must return a permutation of the chunk order it is given");
    }
    order = reordered;
  }
  order.erase(std::remove(order.begin(), order.end(), rank), order.end());
  return order;
}

CheckedCall check_call(const CallSite& site, const TensorView& a_shard, const TensorView& b,
                       const TensorView& c_out, const TensorView* a_gathered_out,
                       const Options& options) {
  const int device = site.device->ordinal;
  check_cuda(cudaSetDevice(device), "cudaSetDevice(rank device)");
  CheckedCall out;
  out.resolved = core::resolve_options(options);
  out.problem = core::validate_fused_all_gather_matmul(site.world_size, site.rank, DeviceKind::cuda,
                                                       a_shard, b, c_out, a_gathered_out);
  gpu::check_on_device("a_shard", a_shard, device);
  gpu::check_on_device("b", b, device);
  gpu::check_on_device("c_out", c_out, device);
  if (a_gathered_out) gpu::check_on_device("a_gathered_out", *a_gathered_out, device);

  const CudaCapsChoice choice = cuda_caps(*site.device, out.problem, out.resolved);
  core::BackendCaps caps = choice.caps;
  if (!site.no_peer_access.empty()) {
    caps.native_supported = false;
    caps.native_unsupported_reason = site.no_peer_access;
    caps.no_overlap_reason = site.no_peer_access;
  }
  out.plan = core::plan(out.problem, caps, out.resolved);
  if (out.plan.algorithm == Algorithm::native) {
    out.config = choice.config;
    if (!out.config) {
      throw Error(ErrorCode::unsupported, "native: no kernel config can run this problem");
    }
  }
  const std::size_t chunk_bytes =
      static_cast<std::size_t>(out.problem.m * out.problem.k) * element_size(out.problem.dtype);
  out.pieces =
      gpu::signal_pieces(out.problem.m, chunk_bytes, out.config ? out.config->m_granularity : 1);
  if (out.config) {
    out.plan.reason += std::string(" (kernel ") + out.config->name + ", " +
                       std::to_string(out.pieces) + " signal" + (out.pieces > 1 ? "s" : "") +
                       " per chunk)";
  }
  if (options.hooks.before_copy) {
    fail_argument(
        "options.hooks.before_copy",
        "not supported by the cuda backend (a host-side delay would only delay the enqueue); "
        "delay arrivals with Link::arrival and a low link_gbps");
  }
  if (options.hooks.drop && out.plan.algorithm != Algorithm::native) {
    fail_argument(
        "options.hooks.drop",
        "the cuda backend honours it for native only, whose waits are bounded in the kernel; "
        "pipelined and decomposed wait on copy events that a dropped chunk would never record");
  }
  out.capturing = gpu::stream_is_capturing(static_cast<cudaStream_t>(options.stream));
  return out;
}

}  // namespace asynctp::cuda
