// The CLI's doorway to the library's GPU backend: CUDA, or HIP in a ROCm
// build. loopback_backend.cpp implements it when the library has one
// (asynctp_cuda or, in a ROCm build, asynctp_gpu_hip), gpu_absent.cpp
// otherwise; `bench` is bench_cuda.cpp on CUDA and bench_absent.cpp
// elsewhere. The choice is made once, in tools/CMakeLists.txt, so no other
// file needs an #ifdef.
#pragma once

#include <memory>
#include <string>

#include "backend.hpp"
#include "bench_args.hpp"
#include "cli_args.hpp"

namespace asynctp::tool::gpu_entry {

// The GPU backend this binary has: "cuda", "hip", or "" for none.
const char* runtime() noexcept;

// "" when a loopback group can run on `device`; otherwise why not
// (including "built without a GPU backend").
std::string unavailable_reason(int device);

// The loopback backend for `args` (world size, device, link). Throws
// asynctp::Error when the device cannot be used.
std::unique_ptr<Backend> make_backend(const RunArgs& args);

// `asynctp bench`; returns the exit status. Throws asynctp::Error when no
// usable GPU is present or the benchmark is not built for this backend.
int bench(BenchArgs args, const std::string& command_line);

}  // namespace asynctp::tool::gpu_entry
