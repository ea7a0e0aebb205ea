// bench::ClockProbe (asynctp/bench.hpp): the slots in device memory, the
// probes enqueued, the readings fetched.
#include <string>

#include "asynctp/bench.hpp"
#include "asynctp/error.hpp"
#include "gpu/check.hpp"
#include "gpu/runtime.hpp"

#if !defined(ASYNCTP_GPU_HIP)
#include "bench/clock_probe_kernel.hpp"
#endif

namespace asynctp::bench {

#if defined(ASYNCTP_GPU_HIP)
// AMD's counters differ (s_memtime counts the shader clock, s_memrealtime
// a constant 100 MHz): the probe stays CUDA's until an AMD GPU can check it.
ClockProbe::ClockProbe(int) {
  throw Error(ErrorCode::unsupported, "the SM clock probe is the CUDA backend's");
}
ClockProbe::~ClockProbe() = default;
void ClockProbe::record(void*, int) {}
std::vector<double> ClockProbe::read() { return {}; }
#else
namespace rt = gpu::rt;

namespace {
// On the legacy stream, which the probes' non-blocking streams do not wait
// for: finished before a probe may be enqueued.
void clear_slots(double* mhz, std::size_t bytes) {
  gpu::check(cudaMemset(mhz, 0, bytes), "memset (clock probe slots)");
  gpu::check(rt::device_synchronize(), "device synchronize (clock probe slots)");
}

// The probe's device for one read, the caller's restored on every way out:
// a failed copy must not leave the caller on another GPU.
class OnDevice {
 public:
  explicit OnDevice(int device) : caller_(current_device()) { set_device(device); }
  ~OnDevice() { (void)rt::set_device(caller_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int caller_;
};
}  // namespace

ClockProbe::ClockProbe(int slots) : device_(current_device()), slots_(slots) {
  if (slots < 1) {
    throw Error(ErrorCode::invalid_argument,
                "slots: a ClockProbe needs at least 1, got " + std::to_string(slots));
  }
  const std::size_t bytes = sizeof(double) * static_cast<std::size_t>(slots);
  void* memory = nullptr;
  gpu::check(rt::device_malloc(&memory, bytes), "device allocation (clock probe slots)");
  mhz_ = static_cast<double*>(memory);
  clear_slots(mhz_, bytes);
}

ClockProbe::~ClockProbe() { (void)rt::device_free(mhz_); }

void ClockProbe::record(void* stream, int slot) {
  if (slot < 0 || slot >= slots_) {
    throw Error(ErrorCode::invalid_argument, "slot: must lie in [0, " + std::to_string(slots_) +
                                                 "), got " + std::to_string(slot));
  }
  gpu::check(enqueue_clock_probe(mhz_ + slot, static_cast<cudaStream_t>(stream)),
             "launch (clock probe)");
}

std::vector<double> ClockProbe::read() {
  std::vector<double> mhz(static_cast<std::size_t>(slots_));
  const std::size_t bytes = sizeof(double) * mhz.size();
  const OnDevice on_device(device_);
  gpu::check(rt::device_synchronize(), "device synchronize (clock probe)");
  gpu::check(cudaMemcpy(mhz.data(), mhz_, bytes, cudaMemcpyDeviceToHost),
             "copy (clock probe slots)");
  clear_slots(mhz_, bytes);
  return mhz;
}
#endif

}  // namespace asynctp::bench
