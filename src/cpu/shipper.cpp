#include "cpu/shipper.hpp"

#include <cstring>
#include <string>

#include "core/schedule.hpp"
#include "cpu/inbox.hpp"
#include "cpu/producer.hpp"

namespace asynctp::cpu {

std::vector<int> peer_send_order(const core::ProblemDesc& problem) {
  std::vector<int> order = core::send_order(problem.world_size, problem.rank);
  order.pop_back();  // the own chunk comes last and stays here
  return order;
}

void run_shipper(CallContext& ctx, const std::vector<int>& order) {
  const int rank = ctx.problem.rank;
  const int world = ctx.problem.world_size;
  const std::size_t chunk_bytes =
      static_cast<std::size_t>(ctx.problem.m * ctx.problem.n) * element_size(ctx.problem.dtype);
  const auto* partial = static_cast<const char*>(ctx.partial.data);
  for (int chunk : order) {
    const bool computed = ctx.acquire(
        *ctx.signals, chunk, "producer", "wait for the GEMM of chunk " + std::to_string(chunk),
        "\"chunk\": " + std::to_string(chunk), [&](std::uint32_t flag) {
          return core::partial_compute_timeout_message(rank, chunk, flag, ctx.epoch,
                                                       ctx.timeout_ms);
        });
    if (!computed) return;
    const int slot = core::partial_slot(world, chunk, rank);
    const std::string args =
        "\"chunk\": " + std::to_string(chunk) + ", \"owner\": " + std::to_string(chunk) +
        ", \"slot\": " + std::to_string(slot) + ", \"epoch\": " + std::to_string(ctx.epoch);
    if (run_copy_hooks(ctx, chunk, args)) continue;
    const InboxView& owner = ctx.inboxes[static_cast<std::size_t>(chunk)];
    copy_and_signal(ctx, owner.slot(slot, ctx.problem).data,
                    partial + chunk_bytes * static_cast<std::size_t>(chunk), chunk_bytes,
                    *owner.flags, slot, "ship chunk " + std::to_string(chunk),
                    "signal partial " + std::to_string(chunk), args);
  }
}

}  // namespace asynctp::cpu
