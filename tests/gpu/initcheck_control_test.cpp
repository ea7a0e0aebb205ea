// A control for compute-sanitizer's initcheck (scripts/device/sanitize.sh
// runs it under the tool; it also runs as a plain test). A device buffer is
// initialized on one stream (a device delay first, so that an early copy
// would really read it unwritten, then the write) and copied to pinned host
// memory on another stream, ordered after the write in one of two ways:
//
//   ...CopyAfterAFlagWait
//       a flag word written by a stream memory operation after the write
//       and waited for (cuStreamWaitValue32) on the copy's stream: how the
//       native reduce-scatter's finished chunks are handed to the copy engines.
//   ...CopyAfterAnEventWait
//       cudaEventRecord after the write, cudaStreamWaitEvent before the copy.
//
// The write is a memset (InitcheckControl.Copy...) or, as in the native
// reduce-scatter whose partials a kernel stores, a kernel's stores
// (InitcheckControl.KernelWrittenCopy...: the reduction kernel copying a
// memset buffer). Either way every copied byte must be the written pattern
// (checked here). Under initcheck, "uninitialized" reports from a flag wait
// and none from the matching event wait mean the tool does not model
// memory-operation ordering: what its reports against the native
// reduce-scatter's shipping copies need to be told apart from a real early
// read.
//
// InitcheckControl.CopyWhileTheWriterRuns: what the four above leave out.
// In the native reduce-scatter the kernel that stores a chunk is still
// running (on its later chunks) when the chunk is copied. Here the native
// all-gather kernel computes chunk 0's rows of C and then waits, still
// running, for chunk 1, which the host releases only after copying chunk
// 0's rows of C out on another stream; the copy must equal the final C rows
// (so it read written values). Reports here mean initcheck counts a
// kernel's stores as initialization only once the kernel has ended.
// ...EnqueuedBeforeTheWrite: the same, with the copy enqueued as the
// reduce-scatter enqueues its shipping (before the kernel has stored
// anything), behind a stream-memory-operation wait on a host-mapped word the
// host sets once chunk 0's rows are stored. Reports here alone mean the tool
// judges such a copy's source when the copy is enqueued.
//
// InitcheckControl.CopyOfAChunkTheKernelReleased: the reduce-scatter's own
// hand-off, nothing else: its native kernel stores a chunk of the product
// and releases the chunk's flag itself (from the epilogue); the copy to
// pinned host waits for that flag with a stream memory operation on another
// stream. Where the controls above are clean, reports here mean the tool
// does not take a kernel's own flag release as ordering its stores before
// the copy (the copy is checked byte for byte against the final C).
// ...SelfShippedSlotBehindTheKernelsRelease: the self-shipping model's
// copy (pcie, serialized ranks), where the reports were seen: the copied
// slot was written by a kernel on the caller's stream before the fork (an
// event the copy's stream waits on), and the kernel's flag release only
// times the copy. Reports here and none in the previous one mean the flag
// wait hides the event's ordering from the tool.
// InitcheckControl.CopyOfRowsOnlyTmaStoresWrote: see its comment; the one
// thing all the controls above share is a destination written before the
// kernel (the tests' poison), which the reduce-scatter's workspace lacks.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>

#include "gpu/gpu_support.hpp"
#include "gpu/partial_kernels.hpp"
#include "gpu/stream_memops.hpp"
#include "support/seed.hpp"

namespace {

using namespace asynctp_test::gpu;

constexpr std::size_t kBytes = 1 << 20;
constexpr std::uint64_t kDelayNs = 2'000'000;  // 2 ms ahead of the memset
constexpr unsigned char kPattern = 0x5a;

enum class Order { flag_wait, event_wait };

// Writes src's `bytes` to dst with a kernel's stores (the reduction kernel
// summing fp32 elements alone: the bytes pass unchanged), on `stream`.
cudaError_t enqueue_kernel_copy(void* dst, const void* src, std::size_t bytes,
                                cudaStream_t stream) {
  asynctp::gpu::ReduceArgs copy;
  copy.dtype = asynctp::DType::fp32;
  copy.rows = 1;
  copy.cols = static_cast<std::int64_t>(bytes / sizeof(float));
  copy.own = src;
  copy.out = dst;
  return asynctp::gpu::enqueue_reduce_partials(copy, stream);
}
enum class Writer { memset, kernel };

void copy_after_initialization(Order order, Writer writer) {
  ASYNCTP_REQUIRE_SM90();
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const std::uint32_t epoch = random_epoch(rng);

  DeviceBuffer data, source, flag;
  PinnedBuffer host;
  CUDA_ASSERT(data.alloc(kBytes));
  CUDA_ASSERT(flag.alloc(sizeof(std::uint32_t)));
  if (writer == Writer::kernel) {
    CUDA_ASSERT(source.alloc(kBytes));
    CUDA_ASSERT(cudaMemset(source.p, kPattern, kBytes));
  }
  CUDA_ASSERT(host.alloc(kBytes, cudaHostAllocDefault));
  CUDA_ASSERT(cudaMemset(flag.p, 0, sizeof(std::uint32_t)));  // never the epoch (non-zero)
  std::memset(host.p, 0, kBytes);
  Stream producer, copier;
  CUDA_ASSERT(producer.create());
  CUDA_ASSERT(copier.create());
  Event written;
  CUDA_ASSERT(written.create());

  CUDA_ASSERT(asynctp::gpu::enqueue_link_delay(kDelayNs, producer.s));
  if (writer == Writer::memset) {
    CUDA_ASSERT(cudaMemsetAsync(data.p, kPattern, kBytes, producer.s));
  } else {
    CUDA_ASSERT(enqueue_kernel_copy(data.p, source.p, kBytes, producer.s));
  }
  if (order == Order::flag_wait) {
    asynctp::gpu::write_value32(producer.s, flag.as<std::uint32_t>(), epoch);
    asynctp::gpu::wait_value32_equal(copier.s, flag.as<std::uint32_t>(), epoch);
  } else {
    CUDA_ASSERT(cudaEventRecord(written.e, producer.s));
    CUDA_ASSERT(cudaStreamWaitEvent(copier.s, written.e, 0));
  }
  CUDA_ASSERT(cudaMemcpyAsync(host.p, data.p, kBytes, cudaMemcpyDeviceToHost, copier.s));
  CUDA_ASSERT(wait_stream_bounded(copier.s, 10.0, "the copy after the memset"));
  CUDA_ASSERT(wait_stream_bounded(producer.s, 10.0, "the delay and the memset"));

  const auto* bytes = host.as<const unsigned char>();
  std::size_t wrong = 0, first_wrong = kBytes;
  for (std::size_t i = 0; i < kBytes; ++i) {
    if (bytes[i] != kPattern) {
      if (!wrong) first_wrong = i;
      ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << "bytes copied before they were written; first at " << first_wrong;
}

TEST(InitcheckControl, CopyAfterAFlagWait) {
  copy_after_initialization(Order::flag_wait, Writer::memset);
}

TEST(InitcheckControl, CopyAfterAnEventWait) {
  copy_after_initialization(Order::event_wait, Writer::memset);
}

TEST(InitcheckControl, KernelWrittenCopyAfterAFlagWait) {
  copy_after_initialization(Order::flag_wait, Writer::kernel);
}

TEST(InitcheckControl, KernelWrittenCopyAfterAnEventWait) {
  copy_after_initialization(Order::event_wait, Writer::kernel);
}

void copy_while_the_writer_runs(bool enqueue_before_the_write) {
  ASYNCTP_REQUIRE_SM90();
  namespace nat = asynctp::cuda::native;
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const nat::NativeGemmConfig& config = nat::native_gemm_configs().front();
  const bool bcol = !config.has_b_row_major;
  const HostProblem hp(2, config.m_granularity, 256, 128, bcol, rng);
  DeviceProblem dp;
  ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
  const std::uint32_t epoch = random_epoch(rng);

  // Chunk 0 (the pivot, the kernel's first) released (or, with the copy
  // enqueued first, released once it is), chunk 1 held; flags[2] is the
  // copy's go.
  PinnedBuffer flags_host, rows_host;
  CUDA_ASSERT(flags_host.alloc(3 * sizeof(std::uint32_t), cudaHostAllocMapped));
  std::uint32_t* flags = flags_host.as<std::uint32_t>();
  flags[0] = enqueue_before_the_write ? epoch - 1 : epoch;
  flags[1] = epoch - 1;
  flags[2] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::uint32_t* flags_dev = nullptr;
  CUDA_ASSERT(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_dev), flags_host.p, 0));
  const std::size_t chunk_c_bytes = hp.c_bytes() / 2;
  CUDA_ASSERT(rows_host.alloc(chunk_c_bytes, cudaHostAllocDefault));

  Stream kernel_stream, copier;
  CUDA_ASSERT(kernel_stream.create());
  CUDA_ASSERT(copier.create());
  const nat::NativeGemmArgs args = make_args(hp, dp, /*pivot=*/0, flags_dev, epoch,
                                             /*timeout_ns=*/20'000'000'000ull);
  std::string reason;
  ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
  CUDA_ASSERT(nat::launch(config, args, nullptr, kernel_stream.s));

  // Chunk 0's tiles take microseconds; 50 ms later the kernel only waits.
  // With the copy enqueued first, a thread of its own releases chunk 0 and
  // then the copy: were the tool to block the enqueue until its wait is met,
  // this thread still gets there.
  std::thread releaser;
  cudaError_t copied = cudaSuccess;
  if (enqueue_before_the_write) {
    releaser = std::thread([flags, epoch] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::atomic_ref<std::uint32_t>(flags[0]).store(epoch, std::memory_order_release);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::atomic_ref<std::uint32_t>(flags[2]).store(1, std::memory_order_release);
    });
    try {  // the releaser is joined below whatever happens here
      asynctp::gpu::wait_value32_equal(copier.s, flags_dev + 2, 1);
      copied =
          cudaMemcpyAsync(rows_host.p, dp.c.p, chunk_c_bytes, cudaMemcpyDeviceToHost, copier.s);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
      copied = cudaErrorUnknown;
    }
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    copied = cudaMemcpyAsync(rows_host.p, dp.c.p, chunk_c_bytes, cudaMemcpyDeviceToHost, copier.s);
  }
  const cudaError_t copy_done =
      copied == cudaSuccess ? wait_stream_bounded(copier.s, 10.0, "the copy of chunk 0's C rows")
                            : copied;
  if (releaser.joinable()) releaser.join();
  const bool still_running = cudaStreamQuery(kernel_stream.s) == cudaErrorNotReady;
  std::atomic_ref<std::uint32_t>(flags[1]).store(epoch, std::memory_order_release);
  CUDA_ASSERT(wait_stream_bounded(kernel_stream.s, 30.0, "the kernel after chunk 1's release"));
  CUDA_ASSERT(copy_done);
  EXPECT_TRUE(still_running) << "the kernel ended before chunk 1 was released";

  std::vector<unsigned char> final_rows(chunk_c_bytes);
  CUDA_ASSERT(cudaMemcpy(final_rows.data(), dp.c.p, chunk_c_bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(0, std::memcmp(final_rows.data(), rows_host.p, chunk_c_bytes))
      << "the copy made while the kernel ran differs from chunk 0's final rows";
  ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, "the kernel after the copy"));
}

// What the reduce-scatter's kernel releases a copy for: the chunk of C it
// stored (a real shipment), or (the self-shipping model over pcie) a slot
// another kernel wrote ahead of the fork, which the copy's stream waited
// for with an event before its flag wait.
enum class Shipped { released_chunk, slot_written_before_the_fork };

void copy_behind_the_kernels_release(Shipped shipped) {
  ASYNCTP_REQUIRE_SM90();
  namespace nat = asynctp::cuda::native;
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const nat::NativeGemmConfig& config =
      nat::native_gemm_configs(nat::ChunkSync::release_output).front();
  const int w = 4;
  const HostProblem hp(w, config.m_granularity, 256, 128, !config.has_b_row_major, rng);
  DeviceProblem dp;
  ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
  const std::uint32_t epoch = random_epoch(rng);
  DeviceBuffer done_flags, done_counters, slot, slot_source;
  CUDA_ASSERT(done_flags.alloc(w * sizeof(std::uint32_t)));
  CUDA_ASSERT(done_counters.alloc(w * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaMemset(done_flags.p, 0, w * sizeof(std::uint32_t)));
  CUDA_ASSERT(cudaMemset(done_counters.p, 0, w * sizeof(std::uint32_t)));
  nat::NativeGemmArgs args = make_args(hp, dp, /*pivot=*/0, done_flags.as<std::uint32_t>(), epoch,
                                       /*timeout_ns=*/1);
  args.sync = nat::ChunkSync::release_output;
  args.done_flags = done_flags.as<std::uint32_t>();
  args.done_counters = done_counters.as<std::uint32_t>();
  std::string reason;
  ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;

  const std::size_t chunk_c_bytes = hp.c_bytes() / w;
  PinnedBuffer rows_host;
  CUDA_ASSERT(rows_host.alloc(chunk_c_bytes, cudaHostAllocDefault));
  Stream caller, kernel_stream, copier;
  CUDA_ASSERT(caller.create());
  CUDA_ASSERT(kernel_stream.create());
  CUDA_ASSERT(copier.create());
  const void* source = dp.c.p;
  if (shipped == Shipped::slot_written_before_the_fork) {
    // A kernel fills the slot on the caller's stream; the fork orders it
    // before everything on the other streams.
    CUDA_ASSERT(slot.alloc(chunk_c_bytes));
    CUDA_ASSERT(slot_source.alloc(chunk_c_bytes));
    CUDA_ASSERT(cudaMemset(slot_source.p, kPattern, chunk_c_bytes));
    CUDA_ASSERT(asynctp::gpu::enqueue_link_delay(kDelayNs, caller.s));
    CUDA_ASSERT(enqueue_kernel_copy(slot.p, slot_source.p, chunk_c_bytes, caller.s));
    Event fork;
    CUDA_ASSERT(fork.create());
    CUDA_ASSERT(cudaEventRecord(fork.e, caller.s));
    CUDA_ASSERT(cudaStreamWaitEvent(kernel_stream.s, fork.e, 0));
    CUDA_ASSERT(cudaStreamWaitEvent(copier.s, fork.e, 0));
    source = slot.p;
  }
  // As the reduce-scatter enqueues it: the kernel, then the shipping behind
  // a wait on the flag the kernel releases.
  CUDA_ASSERT(nat::launch(config, args, nullptr, kernel_stream.s));
  asynctp::gpu::wait_value32_equal(copier.s, done_flags.as<std::uint32_t>(), epoch);
  CUDA_ASSERT(cudaMemcpyAsync(rows_host.p, source, chunk_c_bytes, cudaMemcpyDeviceToHost, copier.s));
  CUDA_ASSERT(wait_stream_bounded(copier.s, 10.0, "the shipping copy"));
  CUDA_ASSERT(wait_stream_bounded(kernel_stream.s, 30.0, "the reduce-scatter kernel"));

  std::vector<unsigned char> expected(chunk_c_bytes, kPattern);
  if (shipped == Shipped::released_chunk) {
    CUDA_ASSERT(cudaMemcpy(expected.data(), dp.c.p, chunk_c_bytes, cudaMemcpyDeviceToHost));
  }
  EXPECT_EQ(0, std::memcmp(expected.data(), rows_host.p, chunk_c_bytes))
      << "the shipping copy read bytes before they were written";
  ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, "the reduce-scatter kernel"));
}

TEST(InitcheckControl, CopyOfAChunkTheKernelReleased) {
  copy_behind_the_kernels_release(Shipped::released_chunk);
}

TEST(InitcheckControl, SelfShippedSlotBehindTheKernelsRelease) {
  copy_behind_the_kernels_release(Shipped::slot_written_before_the_fork);
}

// Rows only TMA stores ever wrote: the native kernel's C in a fresh
// allocation (no poison, no memset: in every control above and in the GPU
// tests C was written by the poison's upload first), then, once the kernel
// has ended, a plain device-to-device copy of it. The reduce-scatter's
// partial workspace is such memory: only its kernel's TMA stores write it.
// Reports here mean initcheck does not count TMA (bulk async) stores as
// initialization.
TEST(InitcheckControl, CopyOfRowsOnlyTmaStoresWrote) {
  ASYNCTP_REQUIRE_SM90();
  namespace nat = asynctp::cuda::native;
  const asynctp_test::Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  const nat::NativeGemmConfig& config = nat::native_gemm_configs().front();
  const HostProblem hp(2, config.m_granularity, 256, 128, !config.has_b_row_major, rng);
  DeviceProblem dp;
  ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
  const std::uint32_t epoch = random_epoch(rng);
  DeviceBuffer flags, fresh_c;
  CUDA_ASSERT(flags.alloc(2 * sizeof(std::uint32_t)));
  const std::uint32_t ready[2] = {epoch, epoch};
  CUDA_ASSERT(cudaMemcpy(flags.p, ready, sizeof ready, cudaMemcpyHostToDevice));
  CUDA_ASSERT(fresh_c.alloc(hp.c_bytes()));
  nat::NativeGemmArgs args =
      make_args(hp, dp, /*pivot=*/0, flags.as<std::uint32_t>(), epoch, 5'000'000'000ull);
  args.c = fresh_c.p;
  std::string reason;
  ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
  Stream stream;
  CUDA_ASSERT(stream.create());
  CUDA_ASSERT(nat::launch(config, args, nullptr, stream.s));
  CUDA_ASSERT(wait_stream_bounded(stream.s, 30.0, "the native kernel"));
  CUDA_ASSERT(cudaMemcpy(dp.c.p, fresh_c.p, hp.c_bytes(), cudaMemcpyDeviceToDevice));
  ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, "the rows the kernel stored"));
}

TEST(InitcheckControl, CopyWhileTheWriterRuns) { copy_while_the_writer_runs(false); }

TEST(InitcheckControl, CopyWhileTheWriterRunsEnqueuedBeforeTheWrite) {
  copy_while_the_writer_runs(true);
}

}  // namespace
