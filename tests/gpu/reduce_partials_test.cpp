// The reduce-scatter's reduction kernel (gpu/partial_kernels.hpp), alone:
//
//   ReducePartials.SplitPassesMatchOnePassBitwise
//       bf16, fp16 and fp32, W = 2, 3, 5 and 8, a shape off every block
//       size: one pass, and the same sum split into two passes at every slot
//       (the fp32 sum handed over in between) and into one pass per slot.
//       Every split is bitwise the one pass; the one pass is within the
//       bound of one fp32 sum of W terms rounded once of the float64 sum;
//       every element of out is written (out poisoned with NaN first).
//   ReducePartials.ATimedOutCallWritesNothing
//       error word set: neither a first pass nor a last pass writes.
//   ReducePartials.TheWaitsVerdictTakesOnePassWhereEverySlotLanded
//       W = 5, the first pass's wait over slots 0..2: with slot 3's flag
//       already set its verdict is 1, the first pass writes out (bitwise
//       the one pass) and never the fp32 sum, the last pass nothing; with
//       slot 3's flag stale the verdict is 0 and the two passes run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype_convert.hpp"
#include "core/reference.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/partial_kernels.hpp"
#include "support/host_tensor.hpp"
#include "support/seed.hpp"

namespace {

using asynctp::DType;
using asynctp_test::HostTensor;
using asynctp_test::gpu::DeviceBuffer;
namespace gpu = asynctp::gpu;

struct Partials {
  std::int64_t rows = 0, cols = 0;
  DType dtype = DType::bf16;
  int world = 0;
  HostTensor own;
  std::vector<HostTensor> slots;
  DeviceBuffer d_own, d_slots, d_out, d_sum, d_err;

  std::size_t chunk_bytes() const { return own.bytes(); }
  std::int64_t elements() const { return rows * cols; }
};

void upload(Partials& p, std::mt19937_64& rng) {
  p.own = HostTensor(p.dtype, p.rows, p.cols);
  p.own.fill_normal(rng);
  p.slots.clear();
  for (int s = 0; s + 1 < p.world; ++s) {
    p.slots.emplace_back(p.dtype, p.rows, p.cols);
    p.slots.back().fill_normal(rng);
  }
  const std::size_t chunk = p.chunk_bytes();
  CUDA_ASSERT(p.d_own.alloc(chunk));
  CUDA_ASSERT(p.d_slots.alloc(chunk * static_cast<std::size_t>(std::max(p.world - 1, 1))));
  CUDA_ASSERT(p.d_out.alloc(chunk));
  CUDA_ASSERT(p.d_sum.alloc(static_cast<std::size_t>(p.elements()) * sizeof(float)));
  CUDA_ASSERT(p.d_err.alloc(3 * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaMemset(p.d_err.p, 0, 3 * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaMemcpy(p.d_own.p, p.own.data(), chunk, cudaMemcpyHostToDevice));
  for (std::size_t s = 0; s < p.slots.size(); ++s) {
    CUDA_ASSERT(cudaMemcpy(static_cast<char*>(p.d_slots.p) + chunk * s, p.slots[s].data(), chunk,
                           cudaMemcpyHostToDevice));
  }
}

gpu::ReduceArgs base_args(const Partials& p) {
  gpu::ReduceArgs args;
  args.dtype = p.dtype;
  args.rows = p.rows;
  args.cols = p.cols;
  args.own = p.d_own.p;
  args.slots = p.d_slots.p;
  args.out = p.d_out.p;
  args.error_words = p.d_err.as<std::uint32_t>();
  return args;
}

// The sum in passes that end after the slots in `ends` (ascending, the last
// = W - 1), into out, poisoned first; returns out's bytes.
// all_landed: the wait's verdict word (ReduceArgs::all_landed), or null.
void reduce_in_passes(const Partials& p, const std::vector<int>& ends,
                      std::vector<unsigned char>* out,
                      const std::uint32_t* all_landed = nullptr) {
  CUDA_ASSERT(cudaMemset(p.d_out.p, 0xFF, p.chunk_bytes()));  // NaN in every dtype
  gpu::ReduceArgs all = base_args(p);
  all.slot_count = p.world - 1;
  all.all_landed = all_landed;
  int first = 0;
  for (const int end : ends) {
    CUDA_ASSERT(gpu::enqueue_reduce_partials(
        gpu::reduction_pass(all, first, end, p.d_sum.as<float>()), nullptr));
    first = end;
  }
  CUDA_ASSERT(cudaDeviceSynchronize());
  out->assign(p.chunk_bytes(), 0);
  CUDA_ASSERT(cudaMemcpy(out->data(), p.d_out.p, p.chunk_bytes(), cudaMemcpyDeviceToHost));
}

std::string label(const std::vector<int>& ends) {
  std::string s = "passes ending after slots";
  for (int e : ends) s.append(" ").append(std::to_string(e));
  return s;
}

TEST(ReducePartials, SplitPassesMatchOnePassBitwise) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (int world : {2, 3, 5, 8}) {
      Partials p;
      p.dtype = dtype;
      p.world = world;
      p.rows = 37;
      p.cols = 1000 + static_cast<std::int64_t>(rng() % 64) * 2 + 1;  // off the 4 x 256 block
      const std::string what = std::string(asynctp::to_string(dtype)) + " W " +
                               std::to_string(world) + " " + std::to_string(p.rows) + " x " +
                               std::to_string(p.cols);
      SCOPED_TRACE(what);
      ASSERT_NO_FATAL_FAILURE(upload(p, rng));
      const int slots = world - 1;
      std::vector<unsigned char> one;
      ASSERT_NO_FATAL_FAILURE(reduce_in_passes(p, {slots}, &one));

      // Against float64: one fp32 sum of W terms, rounded once.
      HostTensor out(dtype, p.rows, p.cols);
      std::memcpy(out.data(), one.data(), one.size());
      const double u = asynctp::core::unit_roundoff(dtype);
      const double u32 = std::ldexp(1.0, -24);
      std::int64_t unwritten = 0, outside = 0;
      for (std::int64_t r = 0; r < p.rows; ++r) {
        for (std::int64_t c = 0; c < p.cols; ++c) {
          double exact = asynctp::core::load_as_double(p.own.view(), r, c);
          double magnitude = std::fabs(exact);
          for (const HostTensor& s : p.slots) {
            const double v = asynctp::core::load_as_double(s.view(), r, c);
            exact += v;
            magnitude += std::fabs(v);
          }
          const double got = asynctp::core::load_as_double(out.view(), r, c);
          if (std::isnan(got)) {
            ++unwritten;
            continue;
          }
          const double sum_error = slots * u32 * magnitude;
          const double bound = u * (std::fabs(exact) + sum_error) + sum_error;
          if (std::fabs(got - exact) > bound) ++outside;
        }
      }
      EXPECT_EQ(0, unwritten) << "elements left NaN (poison)";
      EXPECT_EQ(0, outside) << "elements outside the bound of one rounded fp32 sum";

      std::vector<std::vector<int>> splits;
      for (int k = 1; k < slots; ++k) splits.push_back({k, slots});
      std::vector<int> per_slot;
      for (int k = 1; k <= slots; ++k) per_slot.push_back(k);
      if (slots >= 2) splits.push_back(per_slot);
      for (const std::vector<int>& ends : splits) {
        std::vector<unsigned char> split;
        ASSERT_NO_FATAL_FAILURE(reduce_in_passes(p, ends, &split));
        EXPECT_TRUE(split == one) << label(ends) << ": not bitwise the one pass";
      }
    }
  }
}

TEST(ReducePartials, ATimedOutCallWritesNothing) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Partials p;
  p.world = 4;
  p.rows = 16;
  p.cols = 520;
  ASSERT_NO_FATAL_FAILURE(upload(p, rng));
  const std::uint32_t timed_out[3] = {2, 0, 7};
  CUDA_ASSERT(cudaMemcpy(p.d_err.p, timed_out, sizeof timed_out, cudaMemcpyHostToDevice));
  const std::size_t sum_bytes = static_cast<std::size_t>(p.elements()) * sizeof(float);
  CUDA_ASSERT(cudaMemset(p.d_sum.p, 0x5a, sum_bytes));
  std::vector<unsigned char> out;
  ASSERT_NO_FATAL_FAILURE(reduce_in_passes(p, {2, 3}, &out));
  for (unsigned char byte : out) ASSERT_EQ(0xFF, byte) << "out written by a timed-out call";
  std::vector<unsigned char> sum(sum_bytes);
  CUDA_ASSERT(cudaMemcpy(sum.data(), p.d_sum.p, sum_bytes, cudaMemcpyDeviceToHost));
  for (unsigned char byte : sum) ASSERT_EQ(0x5a, byte) << "fp32 sum written by a timed-out call";
}

TEST(ReducePartials, TheWaitsVerdictTakesOnePassWhereEverySlotLanded) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Partials p;
  p.world = 5;
  p.rows = 24;
  p.cols = 1030;
  ASSERT_NO_FATAL_FAILURE(upload(p, rng));
  std::vector<unsigned char> one;
  ASSERT_NO_FATAL_FAILURE(reduce_in_passes(p, {4}, &one));
  constexpr std::uint32_t kEpoch = 9;
  DeviceBuffer flags, verdict;
  CUDA_ASSERT(flags.alloc(4 * sizeof(std::uint32_t)));
  CUDA_ASSERT(verdict.alloc(sizeof(std::uint32_t)));
  const std::size_t sum_bytes = static_cast<std::size_t>(p.elements()) * sizeof(float);
  for (const bool last_landed : {true, false}) {
    SCOPED_TRACE(last_landed ? "slot 3 landed before the wait ended" : "slot 3 still to come");
    const std::uint32_t words[4] = {kEpoch, kEpoch, kEpoch, last_landed ? kEpoch : kEpoch - 1};
    CUDA_ASSERT(cudaMemcpy(flags.p, words, sizeof words, cudaMemcpyHostToDevice));
    CUDA_ASSERT(cudaMemset(verdict.p, 0x77, sizeof(std::uint32_t)));
    CUDA_ASSERT(gpu::enqueue_wait_flags(flags.as<std::uint32_t>(), 0, 3, kEpoch, 1'000'000'000u,
                                        p.d_err.as<std::uint32_t>(), nullptr,
                                        verdict.as<std::uint32_t>(), 4));
    CUDA_ASSERT(cudaDeviceSynchronize());
    std::uint32_t seen = 0;
    CUDA_ASSERT(cudaMemcpy(&seen, verdict.p, sizeof seen, cudaMemcpyDeviceToHost));
    EXPECT_EQ(last_landed ? 1u : 0u, seen) << "the wait's verdict";
    CUDA_ASSERT(cudaMemset(p.d_sum.p, 0x5a, sum_bytes));
    std::vector<unsigned char> out;
    ASSERT_NO_FATAL_FAILURE(reduce_in_passes(p, {3, 4}, &out, verdict.as<std::uint32_t>()));
    EXPECT_TRUE(out == one) << "not bitwise the one pass";
    std::vector<unsigned char> sum(sum_bytes);
    CUDA_ASSERT(cudaMemcpy(sum.data(), p.d_sum.p, sum_bytes, cudaMemcpyDeviceToHost));
    const bool sum_untouched =
        std::all_of(sum.begin(), sum.end(), [](unsigned char b) { return b == 0x5a; });
    EXPECT_EQ(last_landed, sum_untouched)
        << (last_landed ? "the fp32 sum written although one pass took every slot"
                        : "the first of two passes left the fp32 sum unwritten");
  }
}

}  // namespace
