// Support for the CUDA loopback backend tests (tests/gpu/loopback_*.cpp):
// W virtual ranks on one GPU through asynctp::cuda::LoopbackGroup.
//
//   LoopbackProblem   one fused all-gather + matmul problem across W ranks:
//                     the host side is support/fused_problem.hpp's
//                     FusedProblem (random inputs, per-rank B, float64
//                     references, the checks); this adds per-rank device
//                     copies (inputs uploaded, outputs poisoned with a guard
//                     region after each), device views, download and the
//                     "outputs untouched" check.
//   RankStreams       one non-blocking stream per rank (what a caller gives
//                     Options::stream).
//   run_ranks         runs one call per rank on the group's threads, then
//                     asynctp::synchronize, recording each rank's outcome,
//                     stage and host time; a watchdog aborts the process if the
//                     collective hangs, and every stream is drained (bounded)
//                     before the host reads device memory.
//
// Nothing here touches CUDA at static-initialization time; every test starts
// with ASYNCTP_REQUIRE_SM90() (gpu_support.hpp).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "asynctp/cuda.hpp"
#include "core/reference.hpp"
#include "gpu/gpu_support.hpp"
#include "support/collective.hpp"
#include "support/fused_problem.hpp"
#include "support/host_tensor.hpp"
#include "support/printers.hpp"
#include "support/seed.hpp"

namespace asynctp_test::loopback {

using asynctp_test::gpu::Clock;
using asynctp_test::gpu::DeviceBuffer;
using asynctp_test::gpu::ms_between;
using asynctp_test::gpu::Stream;

// A collective (call + synchronize on every rank) still running after this
// long is a hang: the process reports it and aborts.
inline constexpr double kHostLimitS = 60.0;
// The wait timeout for calls that must succeed: long enough never to fire
// on a healthy run, short enough that a lost signal fails the test quickly.
inline constexpr std::int64_t kSafeWaitTimeoutMs = 10'000;

// True in a process started with CUDA_DEVICE_MAX_CONNECTIONS=1 (every stream
// in one hardware queue; read at CUDA init, so it cannot be set from a test).
inline bool single_hardware_queue() {
  const char* v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return v != nullptr && std::string(v) == "1";
}

// Clears the ASYNCTP_* variables that steer the planner, for one scope, so a
// test of `auto` sees only its Options.
struct CleanPlannerEnv {
  ScopedEnv algo{"ASYNCTP_ALGO", std::nullopt};
  ScopedEnv tile_m{"ASYNCTP_TILE_M", std::nullopt};
  ScopedEnv tile_n{"ASYNCTP_TILE_N", std::nullopt};
  ScopedEnv timeout{"ASYNCTP_WAIT_TIMEOUT_MS", std::nullopt};
};

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Options for a forced algorithm (or auto) with the safe wait timeout.
inline asynctp::Options options_for(asynctp::Algorithm algorithm) {
  asynctp::Options o;
  o.algorithm = algorithm;
  o.wait_timeout_ms = kSafeWaitTimeoutMs;
  return o;
}

inline asynctp::cuda::LoopbackConfig loopback_config(int world, asynctp::cuda::Link link,
                                                     double link_gbps = 400,
                                                     bool serialize_ranks = false) {
  asynctp::cuda::LoopbackConfig config;
  config.world_size = world;
  config.device = 0;
  config.link = link;
  config.link_gbps = link_gbps;
  config.serialize_ranks = serialize_ranks;
  return config;
}

// ---------------------------------------------------------------------------
// Streams

class RankStreams {
 public:
  // devices[r]: rank r's GPU (default: all on GPU 0, the loopback group's).
  cudaError_t create(int world, const std::vector<int>& devices = {}) {
    streams_.clear();
    for (int r = 0; r < world; ++r) {
      if (!devices.empty()) {
        const cudaError_t e = cudaSetDevice(devices[static_cast<std::size_t>(r)]);
        if (e != cudaSuccess) return e;
      }
      streams_.push_back(std::make_unique<Stream>());
      const cudaError_t e = streams_.back()->create();
      if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
  }
  cudaStream_t operator[](int rank) const { return streams_[static_cast<std::size_t>(rank)]->s; }
  int size() const { return static_cast<int>(streams_.size()); }

  // Waits (bounded; aborts on a hang) until every stream is idle; a stream
  // that reports an error is a test failure.
  void drain(const std::string& what) const {
    for (int r = 0; r < size(); ++r) {
      const cudaError_t e = asynctp_test::gpu::wait_stream_bounded(
          (*this)[r], kHostLimitS, what + ": stream of rank " + std::to_string(r));
      EXPECT_EQ(cudaSuccess, e) << what << ": stream of rank " << r << ": " << cudaGetErrorName(e);
    }
    const cudaError_t last = cudaGetLastError();
    EXPECT_EQ(cudaSuccess, last) << what << ": " << cudaGetErrorName(last);
  }

 private:
  std::vector<std::unique_ptr<Stream>> streams_;
};

// ---------------------------------------------------------------------------
// Running a collective on every rank, bounded

// asynctp_test::run_bounded (the watchdog shared with the CPU tests), in
// milliseconds and with the GPU tests' host limit.
template <class Group>
double run_group_bounded(Group& group, const std::function<void(asynctp::Comm&)>& body,
                         const std::string& what, double limit_s = kHostLimitS) {
  return 1e3 * asynctp_test::run_bounded(group, body, limit_s, what);
}

// One rank's outcome of a call followed by asynctp::synchronize.
struct RankResult {
  bool call_ok = false;  // fused_all_gather_matmul returned
  bool sync_ok = false;  // synchronize returned (only tried when call_ok)
  asynctp::RunInfo info;
  std::string stage;  // where it threw: "call" or "synchronize"; "" if it did not
  std::optional<asynctp::ErrorCode> code;  // set when an asynctp::Error was thrown
  std::string message;                     // what() of whatever was thrown
  // cudaStreamQuery of the rank's stream right after synchronize returned:
  // synchronize promises the rank's work is done, so this must be success.
  cudaError_t stream_after_sync = cudaErrorNotReady;
  double call_ms = 0;  // from just before the call to its return (or throw): enqueue time
  double host_ms = 0;  // from just before the call to synchronize's return (or the throw)

  bool ok() const { return call_ok && sync_ok; }
};

using RankCall = std::function<asynctp::RunInfo(asynctp::Comm&, cudaStream_t)>;

// Every rank runs call(comm, its stream) and then asynctp::synchronize(comm)
// (unless sync is false), on the group's threads. Afterwards every stream is
// drained, so the host may read device memory.
template <class Group>
std::vector<RankResult> run_ranks(Group& group, const RankStreams& streams, const RankCall& call,
                                  const std::string& what, bool sync = true,
                                  double limit_s = kHostLimitS) {
  std::vector<RankResult> results(static_cast<std::size_t>(group.world_size()));
  run_group_bounded(
      group,
      [&](asynctp::Comm& comm) {
        RankResult& out = results[static_cast<std::size_t>(comm.rank())];
        const cudaStream_t stream = streams[comm.rank()];
        const auto begin = Clock::now();
        const auto record = [&](const char* stage) {
          out.stage = stage;
          try {
            throw;
          } catch (const asynctp::Error& e) {
            out.code = e.code();
            out.message = e.what();
          } catch (const std::exception& e) {
            out.message = e.what();
          } catch (...) {
            out.message = "unknown exception";
          }
        };
        try {
          out.info = call(comm, stream);
          out.call_ok = true;
        } catch (...) {
          record("call");
        }
        out.call_ms = ms_between(begin, Clock::now());
        if (out.call_ok && sync) {
          try {
            asynctp::synchronize(comm);
            out.sync_ok = true;
            out.stream_after_sync = cudaStreamQuery(stream);
          } catch (...) {
            record("synchronize");
          }
        } else if (out.call_ok) {
          out.sync_ok = true;  // not asked for
          out.stream_after_sync = cudaSuccess;
        }
        out.host_ms = ms_between(begin, Clock::now());
      },
      what, limit_s);
  streams.drain(what);
  return results;
}

// Every rank's call and synchronize succeeded; the stream was idle after
// synchronize; the algorithm is `expected` (when given) on every rank, with a
// reason.
inline void expect_all_ok(const std::vector<RankResult>& results,
                          std::optional<asynctp::Algorithm> expected = std::nullopt) {
  for (std::size_t r = 0; r < results.size(); ++r) {
    const RankResult& res = results[r];
    EXPECT_TRUE(res.ok()) << "rank " << r << " threw in " << res.stage << ": " << res.message;
    if (!res.ok()) continue;
    EXPECT_EQ(cudaSuccess, res.stream_after_sync)
        << "rank " << r << ": synchronize returned while its stream still had work ("
        << cudaGetErrorName(res.stream_after_sync) << ")";
    if (expected) {
      EXPECT_EQ(*expected, res.info.algorithm) << "rank " << r << ": " << res.info.reason;
    }
    EXPECT_FALSE(res.info.reason.empty()) << "rank " << r << ": RunInfo without a reason";
  }
}

// ---------------------------------------------------------------------------
// Per-rank device problem

inline asynctp::TensorView on_device(const asynctp::TensorView& host, void* data, int device = 0) {
  asynctp::TensorView v = host;
  v.data = data;
  v.device = asynctp::Device{asynctp::DeviceKind::cuda, device};
  return v;
}

class LoopbackProblem {
 public:
  static constexpr std::size_t kGuardBytes = 4096;
  static constexpr unsigned char kGuardByte = 0xA5;

  LoopbackProblem(const Shape& shape, std::mt19937_64& rng) : host_(shape, rng) {}

  // Rank r's buffers on GPU devices[r] (before prepare(); default: all on
  // GPU 0, as for a loopback group).
  void set_devices(std::vector<int> devices) { devices_ = std::move(devices); }
  int device(int r) const { return devices_.empty() ? 0 : devices_[static_cast<std::size_t>(r)]; }

  const Shape& shape() const { return host_.shape(); }
  int world() const { return host_.world(); }
  FusedProblem& host() { return host_; }
  // Bytes of one rank's A shard: the size of one chunk of the gather.
  std::size_t chunk_bytes() const { return host_.a(0).numel() * asynctp::element_size(dtype()); }

  // Allocates every rank's buffers, uploads the inputs and poisons the
  // outputs. Call through ASSERT_NO_FATAL_FAILURE.
  void prepare() {
    ranks_.clear();
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaSetDevice(device(r)));
      auto buf = std::make_unique<RankBuffers>();
      CUDA_ASSERT(buf->a.alloc(host_.a_tensor(r).bytes()));
      CUDA_ASSERT(buf->b.alloc(host_.b_tensor(r).bytes()));
      CUDA_ASSERT(buf->c.alloc(host_.c_tensor(r).bytes() + kGuardBytes));
      CUDA_ASSERT(buf->g.alloc(host_.g_tensor(r).bytes() + kGuardBytes));
      ranks_.push_back(std::move(buf));
    }
    ASSERT_NO_FATAL_FAILURE(upload_inputs());
    ASSERT_NO_FATAL_FAILURE(poison_outputs());
  }

  // Fresh random inputs on the host and the device.
  void refill(std::mt19937_64& rng) {
    host_.refill(rng);
    ASSERT_NO_FATAL_FAILURE(upload_inputs());
  }

  void upload_inputs() {
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaMemcpy(buffers(r).a.p, host_.a_tensor(r).data(), host_.a_tensor(r).bytes(),
                             cudaMemcpyHostToDevice));
      CUDA_ASSERT(cudaMemcpy(buffers(r).b.p, host_.b_tensor(r).data(), host_.b_tensor(r).bytes(),
                             cudaMemcpyHostToDevice));
    }
    sync_devices();  // the calls run on non-blocking streams
  }

  // Poisons c_out and a_gathered_out of every rank (host and device) and
  // writes the guard pattern after each.
  void poison_outputs() {
    host_.poison_outputs();
    poisoned_c_.clear();
    poisoned_g_.clear();
    for (int r = 0; r < world(); ++r) {
      poisoned_c_.push_back(host_.c_tensor(r).snapshot());
      poisoned_g_.push_back(host_.g_tensor(r).snapshot());
      const std::size_t cb = host_.c_tensor(r).bytes(), gb = host_.g_tensor(r).bytes();
      CUDA_ASSERT(cudaMemcpy(buffers(r).c.p, host_.c_tensor(r).data(), cb, cudaMemcpyHostToDevice));
      CUDA_ASSERT(cudaMemcpy(buffers(r).g.p, host_.g_tensor(r).data(), gb, cudaMemcpyHostToDevice));
      CUDA_ASSERT(cudaMemset(static_cast<char*>(buffers(r).c.p) + cb, kGuardByte, kGuardBytes));
      CUDA_ASSERT(cudaMemset(static_cast<char*>(buffers(r).g.p) + gb, kGuardByte, kGuardBytes));
    }
    sync_devices();
  }

  void sync_devices() {
    for (int r = 0; r < world(); ++r) {
      CUDA_ASSERT(cudaSetDevice(device(r)));
      CUDA_ASSERT(cudaDeviceSynchronize());
    }
  }

  // Device views of rank r's tensors (device {cuda, device(r)}).
  asynctp::TensorView a(int r) const { return on_device(host_.a(r), buffers(r).a.p, device(r)); }
  asynctp::TensorView b(int r) const { return on_device(host_.b(r), buffers(r).b.p, device(r)); }
  asynctp::TensorView c(int r) const { return on_device(host_.c(r), buffers(r).c.p, device(r)); }
  asynctp::TensorView g(int r) const { return on_device(host_.g(r), buffers(r).g.p, device(r)); }

  // The call every rank makes, on `stream`, gathered output per the shape.
  asynctp::RunInfo call(asynctp::Comm& comm, asynctp::Options options, cudaStream_t stream) const {
    const int r = comm.rank();
    options.stream = stream;
    const asynctp::TensorView gathered = g(r);
    return asynctp::fused_all_gather_matmul(comm, a(r), b(r), c(r),
                                            shape().gathered ? &gathered : nullptr, options);
  }
  asynctp::RunInfo plan(const asynctp::Comm& comm, const asynctp::Options& options) const {
    const int r = comm.rank();
    const asynctp::TensorView gathered = g(r);
    return asynctp::plan_fused_all_gather_matmul(comm, a(r), b(r), c(r),
                                                 shape().gathered ? &gathered : nullptr, options);
  }

  // Copies every rank's outputs to the host tensors and checks the guards.
  // The streams must be idle (run_ranks drains them).
  void download_outputs() {
    for (int r = 0; r < world(); ++r) {
      const std::size_t cb = host_.c_tensor(r).bytes(), gb = host_.g_tensor(r).bytes();
      CUDA_ASSERT(cudaMemcpy(host_.c_tensor(r).data(), buffers(r).c.p, cb, cudaMemcpyDeviceToHost));
      if (shape().gathered) {
        CUDA_ASSERT(
            cudaMemcpy(host_.g_tensor(r).data(), buffers(r).g.p, gb, cudaMemcpyDeviceToHost));
      }
      ASSERT_NO_FATAL_FAILURE(expect_guard_intact(buffers(r).c, cb, r, "c_out"));
      ASSERT_NO_FATAL_FAILURE(expect_guard_intact(buffers(r).g, gb, r, "a_gathered_out"));
    }
  }

  // Downloads and checks every rank: every element of c_out written, relative
  // Frobenius error within core::error_tolerance of the float64 reference,
  // the gathered A bitwise equal to the concatenated shards (or, when not
  // requested, left poisoned), nothing written past either output.
  void expect_all_correct() {
    ASSERT_NO_FATAL_FAILURE(download_outputs());
    host_.expect_all_correct();
  }
  void expect_correct(int r) {
    ASSERT_NO_FATAL_FAILURE(download_outputs());
    host_.expect_correct(r);
  }

  // Rank r's c_out and a_gathered_out still hold exactly the poison written
  // by the last poison_outputs() (and the guards are intact).
  void expect_outputs_untouched(int r, const std::string& what) {
    SCOPED_TRACE(what + ": rank " + std::to_string(r));
    HostTensor c = host_.c_tensor(r), g = host_.g_tensor(r);
    CUDA_ASSERT(cudaMemcpy(c.data(), buffers(r).c.p, c.bytes(), cudaMemcpyDeviceToHost));
    CUDA_ASSERT(cudaMemcpy(g.data(), buffers(r).g.p, g.bytes(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(c.equals(poisoned_c_[static_cast<std::size_t>(r)]))
        << "c_out of rank " << r << " was written";
    EXPECT_TRUE(g.equals(poisoned_g_[static_cast<std::size_t>(r)]))
        << "a_gathered_out of rank " << r << " was written";
    ASSERT_NO_FATAL_FAILURE(expect_guard_intact(buffers(r).c, c.bytes(), r, "c_out"));
    ASSERT_NO_FATAL_FAILURE(expect_guard_intact(buffers(r).g, g.bytes(), r, "a_gathered_out"));
  }
  void expect_all_outputs_untouched(const std::string& what) {
    for (int r = 0; r < world(); ++r) ASSERT_NO_FATAL_FAILURE(expect_outputs_untouched(r, what));
  }

 private:
  struct RankBuffers {
    DeviceBuffer a, b, c, g;
  };
  asynctp::DType dtype() const { return shape().dtype; }
  RankBuffers& buffers(int r) { return *ranks_[static_cast<std::size_t>(r)]; }
  const RankBuffers& buffers(int r) const { return *ranks_[static_cast<std::size_t>(r)]; }

  static void expect_guard_intact(const DeviceBuffer& buf, std::size_t used, int r,
                                  const char* name) {
    std::vector<unsigned char> guard(kGuardBytes);
    CUDA_ASSERT(cudaMemcpy(guard.data(), static_cast<const char*>(buf.p) + used, kGuardBytes,
                           cudaMemcpyDeviceToHost));
    std::size_t bad = 0;
    for (unsigned char v : guard) bad += v != kGuardByte;
    EXPECT_EQ(0u, bad) << "rank " << r << ": bytes written past the end of " << name;
  }

  FusedProblem host_;
  std::vector<int> devices_;
  std::vector<std::unique_ptr<RankBuffers>> ranks_;
  std::vector<std::vector<unsigned char>> poisoned_c_, poisoned_g_;
};

// A shape for the loopback tests (gathered output on unless told).
inline Shape loopback_shape(int world, std::int64_t m, std::int64_t n, std::int64_t k,
                            asynctp::DType dtype = asynctp::DType::bf16, bool b_col_major = false,
                            bool gathered = true) {
  Shape s = make_shape(world, m, n, k, dtype, b_col_major);
  s.gathered = gathered;
  return s;
}

// Prints a case's seed and shape (the seed replays it; see support/seed.hpp).
inline void print_case(const Seed& seed, const std::string& what) {
  std::printf("  %s: %s\n", what.c_str(), seed.note().c_str());
  std::fflush(stdout);
}

}  // namespace asynctp_test::loopback
