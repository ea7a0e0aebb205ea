// Measuring asynctp calls as `asynctp run` and `asynctp bench` do: one
// rank's calls timed (a group's ranks: RankGroup::time_calls), the figures of
// an overlap benchmark, and on GPUs device copies of host tensors, streams,
// timing events and the library's own BLAS GEMM, the overlap benchmark's
// baseline.
//
// The overlap figures and the timing of a synchronous rank are built always; the
// rest with the library's GPU backend and on its runtime: CUDA
// (ASYNCTP_HAVE_CUDA_BACKEND) or, in a ROCm build, HIP
// (ASYNCTP_HAVE_HIP_BACKEND). Needs no CUDA or HIP headers: a stream is a
// cudaStream_t or hipStream_t passed as void*. GPU failures throw
// Error(backend) naming what failed and the runtime's reason.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/comm.hpp"
#include "asynctp/group.hpp"
#include "asynctp/tensor.hpp"
#include "asynctp/verify.hpp"

namespace asynctp::bench {

// The figures of an overlap benchmark, from one problem's median times.
// T_comm is derived, not measured: decomposed is the all-gather followed by
// the GEMM with no overlap, so T_comm = T_decomposed - T_gemm. It may come
// out <= 0 when the all-gather hides in the noise; the efficiency is then
// undefined rather than a division by ~0.
struct Overlap {
  double t_comm_ms = 0;
  double t_gemm_ms = 0;

  static Overlap of(double t_decomposed_ms, double t_gemm_ms) noexcept {
    return {t_decomposed_ms - t_gemm_ms, t_gemm_ms};
  }
  // max(T_comm, T_gemm): the time of perfect overlap.
  double ideal_ms() const noexcept { return std::max(t_comm_ms, t_gemm_ms); }
  // Of a call taking t: (T_comm + T_gemm - t) / min(T_comm, T_gemm), 1 =
  // perfect overlap, 0 = none.
  std::optional<double> efficiency(double t_ms) const noexcept {
    if (t_comm_ms <= 0 || t_gemm_ms <= 0) return std::nullopt;
    return (t_comm_ms + t_gemm_ms - t_ms) / std::min(t_comm_ms, t_gemm_ms);
  }
  // ideal / t: 1 = as fast as perfect overlap.
  std::optional<double> ideal_over(double t_ms) const noexcept {
    if (t_ms <= 0) return std::nullopt;
    return ideal_ms() / t_ms;
  }
};

// The median of `values` (0 for none): the one figure of every time asynctp
// reports, robust to the odd slow iteration.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The runtime's name of GPU `device`, e.g. "NVIDIA H200".
std::string device_name(int device);
// Bytes of memory free on `device`, which becomes this thread's current GPU.
std::size_t free_memory(int device);
void set_device(int device);
int current_device();

// A non-blocking stream on the current GPU: it never waits for the legacy
// default stream, so its work is ordered only after what it is given.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* get() const noexcept { return stream_; }
  // Blocks until the work enqueued so far has finished.
  void synchronize() const;

 private:
  void* stream_ = nullptr;
};

// Memory on the current GPU for a device copy of a dense host tensor: the
// same dtype, shape and strides. `what` names it in errors ("rank 3's C").
class DeviceTensor {
 public:
  DeviceTensor(const TensorView& host, int device, std::string what);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  // The host view's shape over this memory, on Device{cuda or hip, device}.
  const TensorView& view() const noexcept { return view_; }
  // Copies of the whole tensor, ordered on `stream`; the caller synchronizes.
  void upload(const TensorView& host, void* stream);
  void download(const TensorView& host, void* stream) const;

 private:
  TensorView view_;
  std::string what_;
};

// A timing event.
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);
  // Blocks until the event has completed.
  void synchronize() const;
  // Milliseconds from `begin` to this event; both recorded and completed.
  double ms_since(const Event& begin) const;

 private:
  void* event_ = nullptr;
};

// The GEMM that decomposed runs after its all-gather, alone: the library's
// BLAS (cuBLAS: cublasGemmEx with fp32 accumulation) on the whole gathered
// problem, the baseline T_gemm of an overlap benchmark. Made on the current
// GPU with a stream of its own. The CUDA backend's only so far: on HIP the
// constructor throws Error(unsupported).
class GemmBaseline {
 public:
  // C = A @ B, A given as host row blocks stacked in order (the ranks'
  // shards: the gathered A, with no host copy of it), each row-major with k
  // columns, copied to the device; `device_b` (k x n, row- or column-major)
  // stays the caller's; C (rows x n, row-major, A's dtype) is made here.
  // Throws Error(invalid_argument) when the shapes or dtypes do not fit.
  GemmBaseline(const std::vector<TensorView>& a_blocks, const TensorView& device_b);
  ~GemmBaseline();
  GemmBaseline(const GemmBaseline&) = delete;
  GemmBaseline& operator=(const GemmBaseline&) = delete;
  // One GEMM on a poisoned C, waited for, its C copied back and compared
  // with `reference` (its float64 product: every element written, within
  // verify::tolerance of the dtype).
  verify::Verdict check(const std::vector<double>& reference);
  // `count` GEMMs back to back, waited for: the time of each, in ms.
  // `after_each(stream, i)`, where given, enqueues work of its own on the
  // baseline's stream after GEMM i's span (a ClockProbe, say).
  std::vector<double> time(int count,
                           const std::function<void(void* stream, int i)>& after_each = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The SM clock where a stream's work reaches a point. The card slows under
// sustained load (its power cap), so two measurements taken in the same
// rounds may still run at different clocks; probes after each say whether
// they did. A probe is a one-thread kernel that counts the SM's cycles
// (clock64) between two ticks of the GPU's global timer 4 us apart: it
// holds one SM for about 5 us, taken from any work that runs beside it, so
// place it where nothing timed does. Made on the current GPU; the CUDA
// backend's only so far: on HIP the constructor throws Error(unsupported).
class ClockProbe {
 public:
  // Room for `slots` readings (>= 1).
  explicit ClockProbe(int slots);
  ~ClockProbe();
  ClockProbe(const ClockProbe&) = delete;
  ClockProbe& operator=(const ClockProbe&) = delete;
  // Enqueues a probe on `stream` that leaves its reading in `slot`, in
  // [0, slots). Throws Error(invalid_argument) naming the slot otherwise.
  void record(void* stream, int slot);
  // Every slot's clock in MHz (0 where no probe was recorded since the last
  // read), once the probe's GPU has finished its work; then clears the
  // slots. Any thread may read: the calling thread's current GPU is kept.
  std::vector<double> read();

 private:
  int device_ = 0;
  int slots_ = 0;
  double* mhz_ = nullptr;  // device memory, `slots_` of them
};

// One rank of a verify::Problem on the current GPU: device copies of its
// tensors, the inputs uploaded when made, and a stream for the rank's calls.
// `who` names the rank in errors ("rank 3's ").
class DeviceRank {
 public:
  DeviceRank(const verify::RankTensors& host, int device, const std::string& who);
  // The call's arguments on the device, in the host tensors' order.
  const verify::RankTensors& views() const noexcept { return views_; }
  void* stream() const noexcept { return stream_.get(); }
  // The host outputs (poisoned, say) onto the device, and back; waited for.
  void upload_outputs();
  void download_outputs();

 private:
  verify::RankTensors host_;
  verify::RankTensors views_;
  Stream stream_;
  std::vector<std::unique_ptr<DeviceTensor>> inputs_, outputs_;
};

// ---- Timed collective calls, every rank's, as `asynctp run` reports them.
// On an in-process group, RankGroup::time_calls (asynctp/group.hpp) times
// every rank by the group's rule; these time one rank of a launched job.

using RankCall = asynctp::RankCall;
using BeforeIteration = asynctp::BeforeIteration;

// One rank's calls on a communicator whose calls finish before they return
// (the CPU backend's, e.g. this process's rank of a process group): the wall
// time of each.
std::vector<double> time_calls(Comm& comm, int iterations, const RankCall& call,
                               const BeforeIteration& before = {});

// One rank's calls on `stream` (this process's rank of a launched job): the
// event span of each.
std::vector<double> time_calls(Comm& comm, void* stream, int iterations, const RankCall& call,
                               const BeforeIteration& before = {});

}  // namespace asynctp::bench
