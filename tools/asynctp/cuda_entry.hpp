// The CLI's doorway to the CUDA backend. cuda_backend.cpp and bench_cuda.cpp
// implement it when the library target asynctp_cuda exists; otherwise
// cuda_absent.cpp does, saying that this binary was built without it. The
// choice is made once, in tools/CMakeLists.txt, so no other file needs an
// #ifdef.
#pragma once

#include <memory>
#include <string>

#include "backend.hpp"
#include "bench_args.hpp"
#include "cli_args.hpp"

namespace asynctp::tool::cuda_entry {

// Whether this binary has the CUDA backend at all.
bool built() noexcept;

// "" when a CUDA loopback group can run on `device`; otherwise why not
// (including "built without the CUDA backend").
std::string unavailable_reason(int device);

// The loopback backend for `args` (world size, device, link). Throws
// asynctp::Error when the device cannot be used.
std::unique_ptr<Backend> make_backend(const RunArgs& args);

// `asynctp bench`; returns the exit status. Throws asynctp::Error when no
// usable GPU is present.
int bench(BenchArgs args, const std::string& command_line);

}  // namespace asynctp::tool::cuda_entry
