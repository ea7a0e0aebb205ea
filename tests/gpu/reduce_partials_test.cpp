// The reduce-scatter's reduction kernel (gpu/partial_kernels.hpp), alone:
//
//   ReducePartials.AsTheSlotsLandMatchesOnePassBitwise
//       bf16, fp16 and fp32, W = 2, 3, 5 and 8, rows of an odd count of
//       elements (off every block size and the 16-byte grid: element by
//       element) and of a multiple of 8 (16 bytes at a time); the one pass
//       is bitwise the one pass over the same inputs set one element off
//       the 16-byte grid (element by element), and within the bound of one
//       fp32 sum of W terms rounded once of the float64 sum, every element
//       of out written (out poisoned with NaN first); the reduction as the
//       slots land, with every slot landed at the launch, none (each landing
//       from the host while the kernel waits, which it must still be doing),
//       and half, is bitwise the one pass.
//   ReducePartials.ATimedOutCallWritesNothing
//       error word set before the launch: neither kernel writes out or the
//       fp32 sum.
//   ReducePartials.TheWaitsVerdictPicksOneOfTheTwoKernels
//       verdict 1: the one pass writes out, the other kernel returns before
//       any wait; verdict 0: the one pass writes nothing, the other sums.
//   ReducePartials.ASlotThatNeverLandsTimesOutNamingIt
//       W = 5, slot 2 never lands: the error words name it, the flag seen
//       and the epoch, and out is left as it was.

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
  // Bytes own, the slots and out sit past their allocations' (16-byte
  // aligned) starts: one element puts them off the 16-byte grid, where the
  // kernels take the element-wise path.
  std::size_t shift = 0;

  std::size_t chunk_bytes() const { return own.bytes(); }
  std::int64_t elements() const { return rows * cols; }
  char* own_at() const { return static_cast<char*>(d_own.p) + shift; }
  char* slots_at() const { return static_cast<char*>(d_slots.p) + shift; }
  char* out_at() const { return static_cast<char*>(d_out.p) + shift; }
};

// The host partials into device memory, `shift` bytes in (allocated on
// the first call, 16 bytes to spare).
void copy_to_device(Partials& p) {
  const std::size_t chunk = p.chunk_bytes();
  if (p.d_own.p == nullptr) {
    CUDA_ASSERT(p.d_own.alloc(chunk + 16));
    CUDA_ASSERT(p.d_slots.alloc(chunk * static_cast<std::size_t>(std::max(p.world - 1, 1)) + 16));
    CUDA_ASSERT(p.d_out.alloc(chunk + 16));
    CUDA_ASSERT(p.d_sum.alloc(static_cast<std::size_t>(p.elements()) * sizeof(float)));
    CUDA_ASSERT(p.d_err.alloc(3 * sizeof(std::uint32_t)));
  }
  CUDA_ASSERT(cudaMemset(p.d_err.p, 0, 3 * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaMemcpy(p.own_at(), p.own.data(), chunk, cudaMemcpyHostToDevice));
  for (std::size_t s = 0; s < p.slots.size(); ++s) {
    CUDA_ASSERT(
        cudaMemcpy(p.slots_at() + chunk * s, p.slots[s].data(), chunk, cudaMemcpyHostToDevice));
  }
}

void upload(Partials& p, std::mt19937_64& rng) {
  p.own = HostTensor(p.dtype, p.rows, p.cols);
  p.own.fill_normal(rng);
  p.slots.clear();
  for (int s = 0; s + 1 < p.world; ++s) {
    p.slots.emplace_back(p.dtype, p.rows, p.cols);
    p.slots.back().fill_normal(rng);
  }
  ASSERT_NO_FATAL_FAILURE(copy_to_device(p));
}

gpu::ReduceArgs base_args(const Partials& p) {
  gpu::ReduceArgs args;
  args.dtype = p.dtype;
  args.rows = p.rows;
  args.cols = p.cols;
  args.own = p.own_at();
  args.slots = p.slots_at();
  args.out = p.out_at();
  args.error_words = p.d_err.as<std::uint32_t>();
  return args;
}

void download_out(const Partials& p, std::vector<unsigned char>* out) {
  out->assign(p.chunk_bytes(), 0);
  CUDA_ASSERT(cudaMemcpy(out->data(), p.out_at(), p.chunk_bytes(), cudaMemcpyDeviceToHost));
}

// The one pass into out, poisoned first; returns out's bytes.
void reduce_once(const Partials& p, std::vector<unsigned char>* out) {
  CUDA_ASSERT(cudaMemset(p.out_at(), 0xFF, p.chunk_bytes()));  // NaN in every dtype
  gpu::ReduceArgs args = base_args(p);
  args.slot_count = p.world - 1;
  CUDA_ASSERT(gpu::enqueue_reduce_partials(args, nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  ASSERT_NO_FATAL_FAILURE(download_out(p, out));
}

// Slot flags the host writes while a kernel waits on them (mapped memory),
// and the kernel's view of them.
struct HostFlags {
  asynctp_test::gpu::PinnedBuffer buffer;
  volatile std::uint32_t* words = nullptr;
  gpu::SlotFlags land;
};

void make_host_flags(HostFlags* flags, int count, std::uint32_t epoch, std::uint64_t timeout_ns) {
  CUDA_ASSERT(flags->buffer.alloc(
      static_cast<std::size_t>(std::max(count, 1)) * sizeof(std::uint32_t), cudaHostAllocMapped));
  flags->words = static_cast<volatile std::uint32_t*>(flags->buffer.p);
  flags->land.flags = static_cast<const std::uint32_t*>(flags->buffer.p);
  flags->land.epoch = epoch;
  flags->land.timeout_ns = timeout_ns;
}

// The reduction as the slots land, on a stream of its own: slots [0,
// landed_before) have landed at the launch, each later one lands `gap_ms`
// after the one before, from the host, while the kernel waits. Returns out's
// bytes (poisoned first) and the error words.
void reduce_as_landed(const Partials& p, int landed_before, int gap_ms,
                      std::vector<unsigned char>* out, std::uint32_t error[3],
                      std::uint64_t timeout_ns = 10'000'000'000u, int never_lands = -1) {
  constexpr std::uint32_t kEpoch = 77;
  const int slots = p.world - 1;
  HostFlags flags;
  ASSERT_NO_FATAL_FAILURE(make_host_flags(&flags, slots, kEpoch, timeout_ns));
  for (int i = 0; i < slots; ++i) flags.words[i] = i < landed_before ? kEpoch : kEpoch - 1;
  CUDA_ASSERT(cudaMemset(p.out_at(), 0xFF, p.chunk_bytes()));
  CUDA_ASSERT(cudaMemset(p.d_err.p, 0, 3 * sizeof(std::uint32_t)));
  cudaStream_t stream = nullptr;
  CUDA_ASSERT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  gpu::ReduceArgs args = base_args(p);
  args.slot_count = slots;
  CUDA_ASSERT(gpu::enqueue_reduce_as_slots_land(args, flags.land, p.d_sum.as<float>(), stream));
  for (int i = landed_before; i < slots; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(gap_ms));
    if (i == never_lands) break;
    EXPECT_EQ(cudaErrorNotReady, cudaStreamQuery(stream)) << "done before slot " << i << " landed";
    flags.words[i] = kEpoch;
  }
  CUDA_ASSERT(cudaStreamSynchronize(stream));
  CUDA_ASSERT(cudaStreamDestroy(stream));
  CUDA_ASSERT(cudaMemcpy(error, p.d_err.p, 3 * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  ASSERT_NO_FATAL_FAILURE(download_out(p, out));
}

// One shape of AsTheSlotsLandMatchesOnePassBitwise.
void check_one_pass_and_landed(DType dtype, int world, std::int64_t cols, std::mt19937_64& rng) {
  Partials p;
  p.dtype = dtype;
  p.world = world;
  p.rows = 37;
  p.cols = cols;
  SCOPED_TRACE(std::string(asynctp::to_string(dtype)) + " W " + std::to_string(world) + " " +
               std::to_string(p.rows) + " x " + std::to_string(p.cols));
  ASSERT_NO_FATAL_FAILURE(upload(p, rng));
  const int slots = world - 1;
  std::vector<unsigned char> one;
  ASSERT_NO_FATAL_FAILURE(reduce_once(p, &one));

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

  // The same inputs one element off the 16-byte grid take the element-wise
  // path: bitwise whichever path the aligned inputs took.
  p.shift = asynctp::element_size(dtype);
  ASSERT_NO_FATAL_FAILURE(copy_to_device(p));
  std::vector<unsigned char> elementwise;
  ASSERT_NO_FATAL_FAILURE(reduce_once(p, &elementwise));
  EXPECT_TRUE(elementwise == one) << "off the 16-byte grid: not bitwise the aligned pass";
  p.shift = 0;
  ASSERT_NO_FATAL_FAILURE(copy_to_device(p));

  // Every slot landed at the launch (one run), none (a run per slot), and
  // half of them (a run, then one per slot).
  for (const int landed_before : {slots, 0, slots / 2}) {
    SCOPED_TRACE("slots landed at the launch: " + std::to_string(landed_before));
    std::vector<unsigned char> landed;
    std::uint32_t error[3] = {};
    ASSERT_NO_FATAL_FAILURE(reduce_as_landed(p, landed_before, 3, &landed, error));
    EXPECT_EQ(0u, error[0]) << "a wait timed out";
    EXPECT_TRUE(landed == one) << "not bitwise the one pass";
  }
}

TEST(ReducePartials, AsTheSlotsLandMatchesOnePassBitwise) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  for (DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    for (int world : {2, 3, 5, 8}) {
      // Rows of an odd count of elements (off every block size and the
      // 16-byte grid: element by element) and of a multiple of 8 (16 bytes
      // at a time).
      const std::int64_t odd = 1000 + static_cast<std::int64_t>(rng() % 64) * 2 + 1;
      const std::int64_t wide = 1024 + static_cast<std::int64_t>(rng() % 64) * 8;
      for (const std::int64_t cols : {odd, wide}) {
        ASSERT_NO_FATAL_FAILURE(check_one_pass_and_landed(dtype, world, cols, rng));
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
  const std::size_t sum_bytes = static_cast<std::size_t>(p.elements()) * sizeof(float);
  // An earlier wait of the call (the arrival model's) has failed: neither
  // kernel writes.
  CUDA_ASSERT(cudaMemcpy(p.d_err.p, timed_out, sizeof timed_out, cudaMemcpyHostToDevice));
  CUDA_ASSERT(cudaMemset(p.out_at(), 0xFF, p.chunk_bytes()));
  CUDA_ASSERT(cudaMemset(p.d_sum.p, 0x5a, sum_bytes));
  gpu::ReduceArgs args = base_args(p);
  args.slot_count = 3;
  CUDA_ASSERT(gpu::enqueue_reduce_partials(args, nullptr));
  HostFlags flags;
  ASSERT_NO_FATAL_FAILURE(make_host_flags(&flags, 3, /*epoch=*/1, 1'000'000'000u));
  for (int i = 0; i < 3; ++i) flags.words[i] = 1;
  CUDA_ASSERT(gpu::enqueue_reduce_as_slots_land(args, flags.land, p.d_sum.as<float>(), nullptr));
  CUDA_ASSERT(cudaDeviceSynchronize());
  std::vector<unsigned char> out;
  ASSERT_NO_FATAL_FAILURE(download_out(p, &out));
  for (unsigned char byte : out) ASSERT_EQ(0xFF, byte) << "out written by a timed-out call";
  std::vector<unsigned char> sum(sum_bytes);
  CUDA_ASSERT(cudaMemcpy(sum.data(), p.d_sum.p, sum_bytes, cudaMemcpyDeviceToHost));
  for (unsigned char byte : sum) ASSERT_EQ(0x5a, byte) << "fp32 sum written by a timed-out call";
}

// The wait's verdict (ReduceArgs::all_landed) picks one of the two kernels
// enqueued one after the other: with 1 the one pass writes out and the
// reduction as the slots land returns before its wait (its flags are stale:
// a wait would time out); with 0 the one pass writes nothing and the other
// does the sum. Bitwise the one pass either way.
TEST(ReducePartials, TheWaitsVerdictPicksOneOfTheTwoKernels) {
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
  ASSERT_NO_FATAL_FAILURE(reduce_once(p, &one));
  DeviceBuffer verdict;
  CUDA_ASSERT(verdict.alloc(sizeof(std::uint32_t)));
  constexpr std::uint32_t kEpoch = 5;
  HostFlags flags;
  ASSERT_NO_FATAL_FAILURE(make_host_flags(&flags, 4, kEpoch, 10'000'000u));
  gpu::ReduceArgs args = base_args(p);
  args.slot_count = 4;
  args.all_landed = verdict.as<std::uint32_t>();
  for (const std::uint32_t all_landed : {1u, 0u}) {
    SCOPED_TRACE("verdict " + std::to_string(all_landed));
    // Verdict 1: stale flags, which only a kernel that waits would notice.
    for (int i = 0; i < 4; ++i) flags.words[i] = all_landed != 0u ? kEpoch - 1 : kEpoch;
    CUDA_ASSERT(cudaMemcpy(verdict.p, &all_landed, sizeof all_landed, cudaMemcpyHostToDevice));
    CUDA_ASSERT(cudaMemset(p.d_err.p, 0, 3 * sizeof(std::uint32_t)));
    CUDA_ASSERT(cudaMemset(p.out_at(), 0xFF, p.chunk_bytes()));
    CUDA_ASSERT(gpu::enqueue_reduce_partials(args, nullptr));
    CUDA_ASSERT(cudaDeviceSynchronize());
    std::vector<unsigned char> after_one_pass;
    ASSERT_NO_FATAL_FAILURE(download_out(p, &after_one_pass));
    EXPECT_EQ(all_landed != 0u, after_one_pass == one) << "the one pass ran against its verdict";
    if (all_landed == 0u) {
      for (unsigned char byte : after_one_pass) ASSERT_EQ(0xFF, byte) << "the one pass wrote";
    }
    CUDA_ASSERT(gpu::enqueue_reduce_as_slots_land(args, flags.land, p.d_sum.as<float>(), nullptr));
    CUDA_ASSERT(cudaDeviceSynchronize());
    std::uint32_t error[3] = {};
    CUDA_ASSERT(cudaMemcpy(error, p.d_err.p, sizeof error, cudaMemcpyDeviceToHost));
    EXPECT_EQ(0u, error[0]) << "the reduction as the slots land waited against its verdict";
    std::vector<unsigned char> out;
    ASSERT_NO_FATAL_FAILURE(download_out(p, &out));
    EXPECT_TRUE(out == one) << "not bitwise the one pass";
  }
}

// A slot that never lands: the blocks give up after the timeout, the error
// words name it (1 + slot, the flag seen, the epoch), and out stays as it
// was, since only a block that has every slot writes it.
TEST(ReducePartials, ASlotThatNeverLandsTimesOutNamingIt) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Partials p;
  p.world = 5;
  p.rows = 24;
  p.cols = 1030;
  ASSERT_NO_FATAL_FAILURE(upload(p, rng));
  std::vector<unsigned char> out;
  std::uint32_t error[3] = {};
  ASSERT_NO_FATAL_FAILURE(
      reduce_as_landed(p, 1, 2, &out, error, /*timeout_ns=*/20'000'000u, /*never_lands=*/2));
  EXPECT_EQ(3u, error[0]) << "1 + the slot that never landed";
  EXPECT_EQ(76u, error[1]) << "the flag seen";
  EXPECT_EQ(77u, error[2]) << "the epoch waited for";
  for (unsigned char byte : out) ASSERT_EQ(0xFF, byte) << "out written by a timed-out call";
}

}  // namespace
