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
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>

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
    // fp32 elements of the byte pattern, summed alone: written unchanged.
    asynctp::gpu::ReduceArgs copy;
    copy.dtype = asynctp::DType::fp32;
    copy.rows = 1;
    copy.cols = static_cast<std::int64_t>(kBytes / sizeof(float));
    copy.own = source.p;
    copy.out = data.p;
    CUDA_ASSERT(asynctp::gpu::enqueue_reduce_partials(copy, producer.s));
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

}  // namespace
