#include "cpu/producer.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "asynctp/error.hpp"
#include "core/schedule.hpp"

namespace asynctp::cpu {

std::vector<int> producer_order(const CallContext& ctx, std::vector<int> order) {
  const int rank = ctx.problem.rank;
  if (ctx.hooks == nullptr || !ctx.hooks->reorder) return order;
  std::vector<int> custom = ctx.hooks->reorder(rank, order);
  std::vector<int> sorted_custom = custom;
  std::vector<int> sorted_order = order;
  std::sort(sorted_custom.begin(), sorted_custom.end());
  std::sort(sorted_order.begin(), sorted_order.end());
  if (sorted_custom != sorted_order) {
    throw Error(ErrorCode::invalid_argument,
                "options.hooks.reorder: must return a permutation of the " +
                    std::to_string(order.size()) + " chunk indices");
  }
  return custom;
}

bool run_copy_hooks(CallContext& ctx, int chunk, const std::string& args) {
  if (ctx.hooks == nullptr) return false;
  const int rank = ctx.problem.rank;
  if (ctx.hooks->before_copy) ctx.hooks->before_copy(rank, chunk);
  if (!ctx.hooks->drop || !ctx.hooks->drop(rank, chunk)) return false;
  if (ctx.trace) {
    ctx.trace->add_instant(rank, "producer", "signal", "dropped chunk " + std::to_string(chunk),
                           ctx.trace->now_us(), args);
  }
  return true;
}

void copy_and_signal(CallContext& ctx, void* dst, const void* src, std::size_t bytes,
                     core::ChunkSignals& flags, int index, const std::string& copy_name,
                     const std::string& signal_name, const std::string& args) {
  const double begin = ctx.trace ? ctx.trace->now_us() : 0;
  std::memcpy(dst, src, bytes);
  flags.release(index, ctx.epoch);
  if (ctx.trace) {
    const double end = ctx.trace->now_us();
    const int rank = ctx.problem.rank;
    ctx.trace->add_span(rank, "producer", "copy", copy_name, begin, end,
                        args + ", \"bytes\": " + std::to_string(bytes));
    ctx.trace->add_instant(rank, "producer", "signal", signal_name, end, args);
  }
}

void run_producer(CallContext& ctx, const std::vector<int>& order) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(ctx.problem.k) * element_size(ctx.problem.dtype);
  const std::size_t chunk_bytes = row_bytes * static_cast<std::size_t>(ctx.problem.m);
  auto* gathered = static_cast<char*>(ctx.gathered.data);
  for (int chunk : order) {
    if (ctx.abort.load(std::memory_order_relaxed)) return;
    const std::string args = "\"chunk\": " + std::to_string(chunk) +
                             ", \"source_rank\": " + std::to_string(chunk) +
                             ", \"epoch\": " + std::to_string(ctx.epoch);
    if (run_copy_hooks(ctx, chunk, args)) continue;
    copy_and_signal(ctx, gathered + chunk_bytes * static_cast<std::size_t>(chunk),
                    ctx.shards[static_cast<std::size_t>(chunk)].data, chunk_bytes, *ctx.signals,
                    chunk, "copy chunk " + std::to_string(chunk),
                    "signal chunk " + std::to_string(chunk), args);
  }
}

}  // namespace asynctp::cpu
