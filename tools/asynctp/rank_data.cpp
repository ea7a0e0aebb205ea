#include "rank_data.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "core/dtype_convert.hpp"
#include "parallel.hpp"

namespace asynctp::tool {
namespace {

std::uint64_t bytes_of(std::int64_t rows, std::int64_t cols, DType dtype) {
  return static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * element_size(dtype);
}

// splitmix64: neighbouring (seed, rank) pairs get unrelated streams.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fill_normal(const TensorView& view, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::int64_t count = view.numel();
  switch (view.dtype) {
    case DType::fp32: {
      auto* p = static_cast<float*>(view.data);
      for (std::int64_t i = 0; i < count; ++i) p[i] = normal(rng);
      break;
    }
    case DType::bf16: {
      auto* p = static_cast<std::uint16_t*>(view.data);
      for (std::int64_t i = 0; i < count; ++i) p[i] = core::float_to_bf16(normal(rng));
      break;
    }
    case DType::fp16: {
      auto* p = static_cast<std::uint16_t*>(view.data);
      for (std::int64_t i = 0; i < count; ++i) p[i] = core::float_to_fp16(normal(rng));
      break;
    }
  }
}

}  // namespace

std::uint64_t planned_bytes(const RunArgs& args) {
  const std::int64_t m = args.m_per_rank();
  const std::int64_t rows = args.m_global;
  const std::uint64_t per_rank =
      bytes_of(m, args.k, args.dtype) + bytes_of(args.k, args.n, args.dtype) +
      bytes_of(rows, args.n, args.dtype) + bytes_of(rows, args.k, args.dtype);
  std::uint64_t total = per_rank * static_cast<std::uint64_t>(args.world_size);
  if (args.check) {
    // One float64 C per rank is kept; building one also needs the float64
    // gathered A and B while its GEMM runs, on each host thread at once.
    total += bytes_of(rows, args.n, DType::fp32) * 2 * static_cast<std::uint64_t>(args.world_size);
    const auto concurrent = static_cast<std::uint64_t>(host_parallelism(args.world_size));
    total += (bytes_of(rows, args.k, DType::fp32) + bytes_of(args.k, args.n, DType::fp32)) * 2 *
             concurrent;
  }
  return total;
}

void check_host_memory(const RunArgs& args) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;
  const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
  const double needed = static_cast<double>(planned_bytes(args));
  if (needed > physical) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "this run needs %.1f GiB of host memory (inputs and outputs of %d ranks%s), "
                  "more than the machine's %.1f GiB",
                  needed / (1 << 30), args.world_size, args.check ? " and --check references" : "",
                  physical / (1 << 30));
    throw UsageError(std::string("-m/-n/-k/--world-size: ") + buf);
  }
}

std::uint64_t clock_seed() {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  return static_cast<std::uint64_t>(ns) % 1'000'000'000ull;
}

std::vector<RankData> allocate_ranks(const RunArgs& args) {
  const std::int64_t m = args.m_per_rank();
  const std::int64_t rows = args.m_global;
  std::vector<RankData> ranks(static_cast<std::size_t>(args.world_size));
  for (RankData& r : ranks) {
    r.a_storage = AlignedBuffer(bytes_of(m, args.k, args.dtype));
    r.b_storage = AlignedBuffer(bytes_of(args.k, args.n, args.dtype));
    r.c_storage = AlignedBuffer(bytes_of(rows, args.n, args.dtype));
    r.gathered_storage = AlignedBuffer(bytes_of(rows, args.k, args.dtype));
    r.a_shard = TensorView::row_major(r.a_storage.data(), args.dtype, m, args.k);
    r.b = args.b_col_major ? TensorView::col_major(r.b_storage.data(), args.dtype, args.k, args.n)
                           : TensorView::row_major(r.b_storage.data(), args.dtype, args.k, args.n);
    r.c = TensorView::row_major(r.c_storage.data(), args.dtype, rows, args.n);
    r.gathered = TensorView::row_major(r.gathered_storage.data(), args.dtype, rows, args.k);
  }
  return ranks;
}

void fill_inputs(RankData& data, std::uint64_t seed, int rank) {
  std::mt19937_64 rng(mix(seed ^ mix(static_cast<std::uint64_t>(rank))));
  fill_normal(data.a_shard, rng);
  fill_normal(data.b, rng);
}

}  // namespace asynctp::tool
