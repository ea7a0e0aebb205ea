#include "cpu/reduction.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/dtype_convert.hpp"
#include "core/schedule.hpp"
#include "cpu/inbox.hpp"
#include "cpu/worker_common.hpp"

namespace asynctp::cpu {
namespace {

// Rows widened at a time when adding a slot: bounds the scratch.
constexpr std::int64_t kRowBlock = 64;

// acc (rows x n, dense) += rows [row_begin, row_begin + rows) of src.
void add_rows(const TensorView& src, std::int64_t row_begin, std::int64_t rows, float* acc,
              std::vector<float>& widened) {
  const std::int64_t n = src.cols;
  for (std::int64_t r0 = 0; r0 < rows; r0 += kRowBlock) {
    const std::int64_t block = std::min(kRowBlock, rows - r0);
    widened.resize(static_cast<std::size_t>(block * n));
    core::rows_to_float(src, row_begin + r0, block, widened.data());
    float* dst = acc + r0 * n;
    for (std::int64_t i = 0; i < block * n; ++i) dst[i] += widened[static_cast<std::size_t>(i)];
  }
}

}  // namespace

void reduce_own_chunk(CallContext& ctx, int member, int members, GemmScratch& scratch) {
  const core::ProblemDesc& p = ctx.problem;
  const std::int64_t begin = p.m * member / members;
  const std::int64_t end = p.m * (member + 1) / members;
  if (begin == end) return;
  const std::int64_t rows = end - begin;
  const std::string lane = lane_name(member);
  const std::string chunk_json = "\"chunk\": " + std::to_string(p.rank);

  // The own partial, complete once its chunk's last piece is stored.
  if (!ctx.acquire(*ctx.signals, p.rank, lane,
                   "wait for the GEMM of chunk " + std::to_string(p.rank), chunk_json,
                   [&](std::uint32_t flag) {
                     return core::partial_compute_timeout_message(p.rank, p.rank, flag, ctx.epoch,
                                                                  ctx.timeout_ms);
                   })) {
    return;
  }
  std::vector<float>& acc = scratch.c;  // the fp32 sum of this member's rows
  acc.resize(static_cast<std::size_t>(rows * p.n));
  {
    WorkerSpan span(ctx, member);
    core::rows_to_float(ctx.partial, p.rank * p.m + begin, rows, acc.data());
    span.finish("reduce", [&] {
      return std::pair{std::string("reduce: own partial"),
                       chunk_json + ", \"source_rank\": " + std::to_string(p.rank) + ", " +
                           range_json("rows", begin, end)};
    });
  }

  const InboxView& inbox = ctx.inboxes[static_cast<std::size_t>(p.rank)];
  for (int slot = 0; slot + 1 < p.world_size; ++slot) {
    const int source = core::partial_source(p.world_size, p.rank, slot);
    const std::string source_json = chunk_json + ", \"source_rank\": " + std::to_string(source);
    if (!ctx.acquire(
            *inbox.flags, slot, lane, "wait for the partial of rank " + std::to_string(source),
            source_json, [&](std::uint32_t flag) {
              return core::partial_timeout_message(p.rank, source, flag, ctx.epoch, ctx.timeout_ms);
            })) {
      return;
    }
    WorkerSpan span(ctx, member);
    add_rows(inbox.slot(slot, p), begin, rows, acc.data(), scratch.a);
    span.finish("reduce", [&] {
      return std::pair{"reduce: partial of rank " + std::to_string(source),
                       source_json + ", " + range_json("rows", begin, end)};
    });
  }
  core::float_block_to_view(acc.data(), rows, p.n, p.n, ctx.out, begin, 0);
}

}  // namespace asynctp::cpu
