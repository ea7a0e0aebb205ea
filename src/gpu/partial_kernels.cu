#include <algorithm>
#include <atomic>

#include "gpu/partial_kernels.hpp"

#if defined(ASYNCTP_GPU_HIP)
// The few device names below that HIP spells differently (bf16, the
// system-scope acquire load and release store, the nanosecond clock, the
// back-off).
#include "hip/partial_kernel_names.hpp"
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace asynctp::gpu {
namespace {

constexpr int kThreads = 256;
// Elements per thread per pass: enough in flight to stream HBM.
constexpr int kPerThread = 4;

__device__ __forceinline__ float widen(const __nv_bfloat16& v) { return __bfloat162float(v); }
__device__ __forceinline__ float widen(const __half& v) { return __half2float(v); }
__device__ __forceinline__ float widen(const float& v) { return v; }

template <class T>
__device__ __forceinline__ T narrow(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half narrow<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ float narrow<float>(float v) {
  return v;
}

#if !defined(ASYNCTP_GPU_HIP)
__device__ __forceinline__ std::uint32_t load_acquire_sys(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void store_release_sys(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" : : "l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

template <class Kernel>
rt::Status occupancy_blocks_per_sm(int* blocks, Kernel kernel, int threads) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, threads, 0);
}
#endif

// The bounded wait every kernel here shares: polls *flag (a system-scope
// acquire load) until it holds `epoch`. Gives up after timeout_ns, writing
// error_words [0] = 1 + index, [1] = the value seen, [2] = epoch (first
// failure wins), or at once when error_words show that another wait of the
// call has failed already. Sleeps between polls, doubling from 32 ns up to
// backoff_cap_ns.
__device__ bool wait_flag(const std::uint32_t* flag, std::uint32_t epoch, std::uint64_t timeout_ns,
                          std::uint32_t* error_words, int index, std::uint32_t backoff_cap_ns) {
  const std::uint64_t start = globaltimer_ns();
  std::uint32_t backoff = 32u < backoff_cap_ns ? 32u : backoff_cap_ns;
  while (true) {
    const std::uint32_t seen = load_acquire_sys(flag);
    if (seen == epoch) return true;
    if (*static_cast<volatile std::uint32_t*>(error_words) != 0u) return false;
    if (globaltimer_ns() - start > timeout_ns) {
      if (atomicCAS(error_words, 0u, static_cast<std::uint32_t>(index) + 1u) == 0u) {
        atomicExch(error_words + 1, seen);
        atomicExch(error_words + 2, epoch);
      }
      return false;
    }
    __nanosleep(backoff);
    backoff = backoff * 2u < backoff_cap_ns ? backoff * 2u : backoff_cap_ns;
  }
}

// Over rows * cols (every input is dense, ld = cols): each thread adds
// slots [first, end) to its elements' fp32 sum, in order, starting from own
// (sum_in null) or from sum_in, and stores the sum into sum_out, or rounded
// into out where sum_out is null. Element by element (any alignment).
template <class T>
__device__ void add_slots_elementwise(const ReduceArgs& args, int first, int end,
                                      const float* sum_in, float* sum_out) {
  const std::int64_t total = args.rows * args.cols;
  const T* own = static_cast<const T*>(args.own);
  const T* slots = static_cast<const T*>(args.slots);
  T* out = static_cast<T*>(args.out);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x * kPerThread;
  for (std::int64_t base =
           (static_cast<std::int64_t>(blockIdx.x) * blockDim.x) * kPerThread + threadIdx.x;
       base < total; base += stride) {
    float acc[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const std::int64_t i = base + static_cast<std::int64_t>(j) * blockDim.x;
      if (i >= total) {
        acc[j] = 0.f;
      } else {
        acc[j] = sum_in != nullptr ? sum_in[i] : widen(own[i]);
      }
    }
    for (int s = first; s < end; ++s) {
      const T* slot = slots + static_cast<std::int64_t>(s) * total;
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const std::int64_t i = base + static_cast<std::int64_t>(j) * blockDim.x;
        if (i < total) acc[j] += widen(slot[i]);
      }
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const std::int64_t i = base + static_cast<std::int64_t>(j) * blockDim.x;
      if (i >= total) continue;
      if (sum_out != nullptr) {
        sum_out[i] = acc[j];
      } else {
        out[i] = narrow<T>(acc[j]);
      }
    }
  }
}

// The same sum 16 bytes of each input at a time (kWidth elements a
// thread), for inputs whose every 16-byte group starts aligned: a quarter
// to an eighth of the loads, each as wide as the memory system's, so that
// the pass streams HBM near a copy's speed. Each element's sum is the same
// additions in the same order as element by element: bitwise the same.
template <class T>
struct Vector {
  static constexpr int kWidth = 16 / static_cast<int>(sizeof(T));
  union {
    uint4 raw;
    T values[kWidth];
  };
};

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

template <class T>
__device__ bool vectorizable(const ReduceArgs& args, const float* sum_in, const float* sum_out) {
  return (args.rows * args.cols) % Vector<T>::kWidth == 0 && aligned16(args.own) &&
         aligned16(args.slots) && aligned16(args.out) && (sum_in == nullptr || aligned16(sum_in)) &&
         (sum_out == nullptr || aligned16(sum_out));
}

template <class T>
__device__ void add_slots_vectorized(const ReduceArgs& args, int first, int end,
                                     const float* sum_in, float* sum_out) {
  constexpr int kWidth = Vector<T>::kWidth;
  const std::int64_t total = args.rows * args.cols;
  const T* own = static_cast<const T*>(args.own);
  const T* slots = static_cast<const T*>(args.slots);
  T* out = static_cast<T*>(args.out);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x * kWidth;
  for (std::int64_t i = (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kWidth;
       i < total; i += stride) {
    float acc[kWidth];
    if (sum_in != nullptr) {
#pragma unroll
      for (int q = 0; q < kWidth; q += 4) {
        const float4 v = *reinterpret_cast<const float4*>(sum_in + i + q);
        acc[q] = v.x;
        acc[q + 1] = v.y;
        acc[q + 2] = v.z;
        acc[q + 3] = v.w;
      }
    } else {
      Vector<T> v;
      v.raw = *reinterpret_cast<const uint4*>(own + i);
#pragma unroll
      for (int q = 0; q < kWidth; ++q) acc[q] = widen(v.values[q]);
    }
    for (int s = first; s < end; ++s) {
      Vector<T> v;
      v.raw = *reinterpret_cast<const uint4*>(slots + static_cast<std::int64_t>(s) * total + i);
#pragma unroll
      for (int q = 0; q < kWidth; ++q) acc[q] += widen(v.values[q]);
    }
    if (sum_out != nullptr) {
#pragma unroll
      for (int q = 0; q < kWidth; q += 4) {
        *reinterpret_cast<float4*>(sum_out + i + q) =
            make_float4(acc[q], acc[q + 1], acc[q + 2], acc[q + 3]);
      }
    } else {
      Vector<T> v;
#pragma unroll
      for (int q = 0; q < kWidth; ++q) v.values[q] = narrow<T>(acc[q]);
      *reinterpret_cast<uint4*>(out + i) = v.raw;
    }
  }
}

template <class T>
__device__ void add_slots(const ReduceArgs& args, int first, int end, const float* sum_in,
                          float* sum_out) {
  if (vectorizable<T>(args, sum_in, sum_out)) {
    add_slots_vectorized<T>(args, first, end, sum_in, sum_out);
  } else {
    add_slots_elementwise<T>(args, first, end, sum_in, sum_out);
  }
}

template <class T>
__global__ void reduce_kernel(ReduceArgs args) {
  if (args.error_words != nullptr && *args.error_words != 0u) return;
  if (args.all_landed != nullptr && *args.all_landed == 0u) return;
  add_slots<T>(args, 0, args.slot_count, nullptr, nullptr);
}

// Thread 0 waits for slot `first` and extends the run over every later slot
// that has landed; the block learns the run's end (-1: the wait failed).
// Thread 0's acquire loads and the barrier order every thread's reads of
// the run's slots after the writes their flags announce.
__device__ int landed_run_end(const ReduceArgs& args, const SlotFlags& land, int first) {
  __shared__ int run_end;
  if (threadIdx.x == 0) {
    int end = -1;
    if (wait_flag(land.flags + first, land.epoch, land.timeout_ns, args.error_words, first,
                  1024u)) {
      end = first + 1;
      while (end < args.slot_count && load_acquire_sys(land.flags + end) == land.epoch) ++end;
    }
    run_end = end;
  }
  __syncthreads();
  const int end = run_end;
  __syncthreads();  // every thread has it before thread 0 writes the next
  return end;
}

template <class T>
__global__ void reduce_as_landed_kernel(ReduceArgs args, SlotFlags land, float* sum) {
  if (*static_cast<volatile std::uint32_t*>(args.error_words) != 0u) return;
  if (args.all_landed != nullptr && *args.all_landed != 0u) return;
  int first = 0;
  do {
    const int end = first < args.slot_count ? landed_run_end(args, land, first) : 0;
    if (end < 0) return;
    const bool last = end >= args.slot_count;
    add_slots<T>(args, first, end, first > 0 ? sum : nullptr, last ? nullptr : sum);
    first = end;
  } while (first < args.slot_count);
}

__global__ void wait_flags_kernel(const std::uint32_t* flags, int first, int count,
                                  std::uint32_t epoch, std::uint64_t timeout_ns,
                                  std::uint32_t* error_words, std::uint32_t* rest_landed,
                                  int rest_end) {
  if (threadIdx.x != 0) return;
  for (int i = first; i < count; ++i) {
    if (!wait_flag(flags + i, epoch, timeout_ns, error_words, i, 1024u)) return;
  }
  if (rest_landed != nullptr) {
    std::uint32_t landed = 1u;
    for (int i = count; i < rest_end; ++i) {
      if (load_acquire_sys(flags + i) != epoch) landed = 0u;
    }
    *rest_landed = landed;
  }
}

__global__ void link_model_kernel(LinkModelArgs args) {
  if (threadIdx.x != 0) return;
  bool failed = false;
  std::uint64_t link_free = 0;  // when the link has carried the previous piece
  for (int i = 0; i < args.steps; ++i) {
    for (int j = 0; j < args.pieces && !failed; ++j) {
      const std::uint32_t* computed = args.computed + args.owners[i] * args.pieces + j;
      // A piece computed while the link still carried the one before starts
      // exactly when the link is free: only a piece the model had to wait
      // for starts when the model saw it, so that the polling's and the
      // timer's granularity do not pile up over the steps.
      const bool waited = load_acquire_sys(computed) != args.epoch;
      failed = !wait_flag(computed, args.epoch, args.timeout_ns, args.error_words, i, 64u);
      if (!failed) {
        const std::uint64_t now = globaltimer_ns();
        if (waited || link_free == 0) link_free = now > link_free ? now : link_free;
        link_free += args.transfer_ns;
        while (globaltimer_ns() < link_free) __nanosleep(64);
      }
    }
    store_release_sys(args.slot_flags + i, args.epoch);
  }
}

__global__ void delay_kernel(std::uint64_t ns) {
  const std::uint64_t start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) __nanosleep(256);
}

std::int64_t blocks_to_cover(const ReduceArgs& args) {
  const std::int64_t per_block = static_cast<std::int64_t>(kThreads) * kPerThread;
  return (args.rows * args.cols + per_block - 1) / per_block;
}

template <class T>
rt::Status launch_reduce(const ReduceArgs& args, rt::StreamHandle stream) {
  // Enough blocks to cover the device several times over; the grid-stride
  // loop takes the rest.
  const std::int64_t blocks = std::min<std::int64_t>(blocks_to_cover(args), 4096);
  if (blocks == 0) return rt::kSuccess;
  reduce_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
  return rt::last_error();
}

// The blocks of reduce_as_landed_kernel<T> that `device` holds at once (its
// SMs times the kernel's occupancy), asked of the runtime once per device
// and kept: every reduce-scatter call's launch needs it.
template <typename T>
rt::Status resident_blocks(int device, std::int64_t* out) {
  constexpr int kMaxDevices = 64;
  static std::atomic<std::int64_t> cache[kMaxDevices];  // 0: not asked yet
  const bool cacheable = device >= 0 && device < kMaxDevices;
  if (cacheable) {
    if (const std::int64_t known = cache[device].load(std::memory_order_relaxed); known > 0) {
      *out = known;
      return rt::kSuccess;
    }
  }
  int sms = 0, per_sm = 0;
  if (const rt::Status e = rt::sm_count(device, &sms); e != rt::kSuccess) return e;
  if (const rt::Status e = occupancy_blocks_per_sm(&per_sm, reduce_as_landed_kernel<T>, kThreads);
      e != rt::kSuccess) {
    return e;
  }
  *out = static_cast<std::int64_t>(sms) * std::max(per_sm, 1);
  if (cacheable) cache[device].store(*out, std::memory_order_relaxed);
  return rt::kSuccess;
}

// As many blocks as the device holds at once: a block that waits for a slot
// must not keep another of its grid from starting.
template <class T>
rt::Status launch_reduce_as_landed(const ReduceArgs& args, const SlotFlags& land, float* sum,
                                   rt::StreamHandle stream) {
  int device = 0;
  std::int64_t resident = 0;
  if (const rt::Status e = rt::get_device(&device); e != rt::kSuccess) return e;
  if (const rt::Status e = resident_blocks<T>(device, &resident); e != rt::kSuccess) return e;
  const std::int64_t blocks = std::min(blocks_to_cover(args), resident);
  if (blocks == 0) return rt::kSuccess;
  reduce_as_landed_kernel<T>
      <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, land, sum);
  return rt::last_error();
}

}  // namespace

rt::Status enqueue_reduce_partials(const ReduceArgs& args, rt::StreamHandle stream) {
  switch (args.dtype) {
    case DType::bf16:
      return launch_reduce<__nv_bfloat16>(args, stream);
    case DType::fp16:
      return launch_reduce<__half>(args, stream);
    case DType::fp32:
      return launch_reduce<float>(args, stream);
  }
  return rt::kInvalidValue;
}

rt::Status enqueue_reduce_as_slots_land(const ReduceArgs& args, const SlotFlags& land, float* sum,
                                        rt::StreamHandle stream) {
  if (args.error_words == nullptr || (args.slot_count > 0 && land.flags == nullptr) ||
      (args.slot_count > 1 && sum == nullptr)) {
    return rt::kInvalidValue;
  }
  switch (args.dtype) {
    case DType::bf16:
      return launch_reduce_as_landed<__nv_bfloat16>(args, land, sum, stream);
    case DType::fp16:
      return launch_reduce_as_landed<__half>(args, land, sum, stream);
    case DType::fp32:
      return launch_reduce_as_landed<float>(args, land, sum, stream);
  }
  return rt::kInvalidValue;
}

rt::Status enqueue_wait_flags(const SlotFlags& land, int first, int count,
                              std::uint32_t* error_words, rt::StreamHandle stream,
                              std::uint32_t* rest_landed, int rest_end) {
  if (count <= first && rest_landed == nullptr) return rt::kSuccess;
  wait_flags_kernel<<<1, 32, 0, stream>>>(land.flags, first, count, land.epoch, land.timeout_ns,
                                          error_words, rest_landed, rest_end);
  return rt::last_error();
}

rt::Status enqueue_link_model(const LinkModelArgs& args, rt::StreamHandle stream) {
  if (args.steps <= 0) return rt::kSuccess;
  if (args.steps > LinkModelArgs::kMaxSteps || args.pieces < 1) return rt::kInvalidValue;
  link_model_kernel<<<1, 32, 0, stream>>>(args);
  return rt::last_error();
}

rt::Status enqueue_link_delay(std::uint64_t ns, rt::StreamHandle stream) {
  if (ns == 0) return rt::kSuccess;
  delay_kernel<<<1, 1, 0, stream>>>(ns);
  return rt::last_error();
}

}  // namespace asynctp::gpu
