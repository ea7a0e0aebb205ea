// Support for the GPU tests of fused_matmul_reduce_scatter (loopback and
// NCCL): support/reduce_scatter_problem.hpp's host problem (random inputs
// with uneven K-slices, float64 references) with per-rank device copies:
// inputs uploaded, outputs poisoned with a guard region after each,
// download, the checks against the reference within its error bound, and
// the "outputs untouched" check. Nothing touches CUDA at static
// initialization.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/reference.hpp"
#include "gpu/gpu_support.hpp"
#include "support/reduce_scatter_problem.hpp"

namespace asynctp_test::gpu {

class DeviceRsProblem {
 public:
  static constexpr std::size_t kGuardBytes = 4096;
  static constexpr unsigned char kGuardByte = 0xA5;

  // devices[r]: rank r's GPU (default: all on GPU 0, as a loopback group).
  DeviceRsProblem(const RsShape& shape, std::mt19937_64& rng, std::vector<int> devices = {})
      : host_(shape, rng), devices_(std::move(devices)) {}

  const RsShape& shape() const { return host_.shape(); }
  int world() const { return host_.world(); }
  int device(int r) const { return devices_.empty() ? 0 : devices_[static_cast<std::size_t>(r)]; }
  // A transport whose reduction rounds differently (NCCL's) has its own bound.
  void set_partial_sum(asynctp::verify::PartialSum sum) { host_.set_partial_sum(sum); }

  // Allocates, uploads the inputs, poisons the outputs. ASSERT_NO_FATAL_FAILURE.
  void prepare() {
    ranks_.clear();
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaSetDevice(device(r)));
      auto buf = std::make_unique<Buffers>();
      CUDA_ASSERT(buf->a.alloc(host_.a_tensor(r).bytes()));
      CUDA_ASSERT(buf->b.alloc(host_.b_tensor(r).bytes()));
      CUDA_ASSERT(buf->out.alloc(host_.out_tensor(r).bytes() + kGuardBytes));
      ranks_.push_back(std::move(buf));
    }
    ASSERT_NO_FATAL_FAILURE(upload_inputs());
    ASSERT_NO_FATAL_FAILURE(poison_outputs());
  }

  void refill(std::mt19937_64& rng) {
    host_.refill(rng);
    ASSERT_NO_FATAL_FAILURE(upload_inputs());
  }

  void upload_inputs() {
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaSetDevice(device(r)));
      CUDA_ASSERT(cudaMemcpy(buf(r).a.p, host_.a_tensor(r).data(), host_.a_tensor(r).bytes(),
                             cudaMemcpyHostToDevice));
      CUDA_ASSERT(cudaMemcpy(buf(r).b.p, host_.b_tensor(r).data(), host_.b_tensor(r).bytes(),
                             cudaMemcpyHostToDevice));
    }
    ASSERT_NO_FATAL_FAILURE(sync_devices());
  }

  void poison_outputs() {
    host_.poison_outputs();
    poisoned_.clear();
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaSetDevice(device(r)));
      const HostTensor& out = host_.out_tensor(r);
      poisoned_.push_back(out.snapshot());
      CUDA_ASSERT(cudaMemcpy(buf(r).out.p, out.data(), out.bytes(), cudaMemcpyHostToDevice));
      CUDA_ASSERT(
          cudaMemset(static_cast<char*>(buf(r).out.p) + out.bytes(), kGuardByte, kGuardBytes));
    }
    ASSERT_NO_FATAL_FAILURE(sync_devices());
  }

  void sync_devices() {
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaSetDevice(device(r)));
      CUDA_ASSERT(cudaDeviceSynchronize());
    }
  }

  asynctp::TensorView a(int r) const { return on_device(host_.a(r), buf(r).a.p, r); }
  asynctp::TensorView b(int r) const { return on_device(host_.b(r), buf(r).b.p, r); }
  asynctp::TensorView out(int r) const { return on_device(host_.out(r), buf(r).out.p, r); }

  asynctp::RunInfo call(asynctp::Comm& comm, asynctp::Options options, cudaStream_t stream) const {
    const int r = comm.rank();
    options.stream = stream;
    return asynctp::fused_matmul_reduce_scatter(comm, a(r), b(r), out(r), options);
  }
  asynctp::RunInfo plan(const asynctp::Comm& comm, const asynctp::Options& options) const {
    const int r = comm.rank();
    return asynctp::plan_fused_matmul_reduce_scatter(comm, a(r), b(r), out(r), options);
  }

  // Rank r's out copied to its host tensor (the streams must be idle), for a
  // caller that judges it itself; the guard is checked.
  asynctp::TensorView downloaded_out(int r) {
    HostTensor& out_host = host_.out_tensor(r);
    EXPECT_EQ(cudaSuccess, cudaSetDevice(device(r)));
    EXPECT_EQ(cudaSuccess, cudaMemcpy(out_host.data(), buf(r).out.p, out_host.bytes(),
                                      cudaMemcpyDeviceToHost));
    expect_guard_intact(r);
    return host_.out(r);
  }
  // Rank r's out downloaded (as downloaded_out) against its error bound.
  asynctp::verify::Verdict downloaded_verdict(int r) {
    return host_.verdict_of(downloaded_out(r), r);
  }

  // Every element written and within its error bound, nothing written past
  // the output. The streams must be idle.
  void expect_correct(int r) {
    SCOPED_TRACE("rank " + std::to_string(r) + " of " + shape().to_string());
    CUDA_ASSERT(cudaSetDevice(device(r)));
    HostTensor& out_host = host_.out_tensor(r);
    CUDA_ASSERT(
        cudaMemcpy(out_host.data(), buf(r).out.p, out_host.bytes(), cudaMemcpyDeviceToHost));
    ASSERT_NO_FATAL_FAILURE(expect_guard_intact(r));
    const asynctp::verify::Verdict verdict = host_.verdict(r);
    EXPECT_TRUE(verdict.ok) << verdict.failure;
  }
  void expect_all_correct() {
    for (int r = 0; r < world(); ++r) ASSERT_NO_FATAL_FAILURE(expect_correct(r));
  }

  // Rank r's out still holds exactly the last poison (and the guard).
  void expect_outputs_untouched(int r, const std::string& what) {
    SCOPED_TRACE(what + ": rank " + std::to_string(r));
    CUDA_ASSERT(cudaSetDevice(device(r)));
    HostTensor out = host_.out_tensor(r);
    CUDA_ASSERT(cudaMemcpy(out.data(), buf(r).out.p, out.bytes(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(out.equals(poisoned_[static_cast<std::size_t>(r)]))
        << "out of rank " << r << " was written";
    ASSERT_NO_FATAL_FAILURE(expect_guard_intact(r));
  }
  void expect_all_outputs_untouched(const std::string& what) {
    for (int r = 0; r < world(); ++r) ASSERT_NO_FATAL_FAILURE(expect_outputs_untouched(r, what));
  }

 private:
  struct Buffers {
    DeviceBuffer a, b, out;
  };
  Buffers& buf(int r) { return *ranks_[static_cast<std::size_t>(r)]; }
  const Buffers& buf(int r) const { return *ranks_[static_cast<std::size_t>(r)]; }

  asynctp::TensorView on_device(const asynctp::TensorView& host, void* data, int r) const {
    asynctp::TensorView v = host;
    v.data = data;
    v.device = asynctp::Device{asynctp::DeviceKind::cuda, device(r)};
    return v;
  }

  void expect_guard_intact(int r) {
    std::vector<unsigned char> guard(kGuardBytes);
    const std::size_t used = host_.out_tensor(r).bytes();
    CUDA_ASSERT(cudaMemcpy(guard.data(), static_cast<const char*>(buf(r).out.p) + used, kGuardBytes,
                           cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (unsigned char v : guard) bad += v != kGuardByte;
    EXPECT_EQ(0u, bad) << "rank " << r << ": bytes written past the end of out";
  }

  ReduceScatterProblem host_;
  std::vector<int> devices_;
  std::vector<std::unique_ptr<Buffers>> ranks_;
  std::vector<std::vector<unsigned char>> poisoned_;
};

}  // namespace asynctp_test::gpu
