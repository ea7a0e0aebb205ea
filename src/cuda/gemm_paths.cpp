#include "cuda/gemm_paths.hpp"

#include <string>

#include "asynctp/error.hpp"
#include "cuda/cuda_check.hpp"
#include "gpu/call_spec.hpp"

namespace asynctp::cuda {
namespace {

void wait(cudaStream_t stream, cudaEvent_t event, const char* what) {
  check_cuda(cudaStreamWaitEvent(stream, event, 0), what);
}

void record(cudaEvent_t event, cudaStream_t stream, const char* what) {
  check_cuda(cudaEventRecord(event, stream), what);
}

void* c_rows(const gpu::CallSpec& call, int chunk) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(call.problem.n) * element_size(call.problem.dtype);
  return static_cast<char*>(call.c_out.data) +
         row_bytes * static_cast<std::size_t>(call.problem.m) * static_cast<std::size_t>(chunk);
}

}  // namespace

void CudaGemmPaths::launch_native(const gpu::CallSpec& call, gpu::RankResources& res,
                                  const std::uint32_t* flags) {
  native::NativeGemmArgs args;
  args.a = call.gathered;
  args.b = call.b.data;
  args.b_col_major = call.problem.b_layout == core::Layout::col_major;
  args.c = call.c_out.data;
  // The kernel's chunks are the signal pieces: same rows, same order (the
  // pivot chunk's first piece first), finer flags.
  args.m_per_chunk = call.problem.m / call.pieces;
  args.n = call.problem.n;
  args.k = call.problem.k;
  args.world_size = call.problem.world_size * call.pieces;
  args.pivot = call.problem.rank * call.pieces;
  args.chunk_flags = flags;
  args.epoch = call.epoch;
  args.timeout_ns = static_cast<std::uint64_t>(call.timeout_ms) * 1'000'000u;
  args.error_words = static_cast<std::uint32_t*>(res.error_words.get());
  args.max_sms = 0;  // the whole device: nothing the grid waits on needs an SM
  std::string why;
  if (config_ == nullptr) {
    throw Error(ErrorCode::backend, "native GEMM launch without a kernel config (planner bug)");
  }
  if (!native::can_implement(*config_, args, &why)) {
    throw Error(ErrorCode::unsupported,
                std::string("native kernel ") + config_->name + " cannot run this call: " + why);
  }
  check_cuda(native::launch(*config_, args, nullptr, res.compute.get()), "native GEMM launch");
}

void CudaGemmPaths::enqueue_pipelined(const gpu::CallSpec& call, gpu::RankResources& res) {
  const cudaStream_t lanes[2] = {res.compute.get(), res.lane2.get()};
  const int world = call.problem.world_size;
  // Forked here only: a captured stream that is forked must be joined back.
  wait(res.lane2.get(), res.fork.get(), "cudaStreamWaitEvent(fork)");
  for (int i = 0; i < world; ++i) {
    const int c = (call.problem.rank + i) % world;
    const int lane = i % 2;
    if (c != call.problem.rank) {
      wait(lanes[lane], res.arrived[static_cast<std::size_t>(c)]->get(),
           "cudaStreamWaitEvent(chunk arrived)");
    }
    cublas_.lane[lane].run(lanes[lane], call.gathered_chunk(c), call.problem.m, call.b,
                           c_rows(call, c));
  }
  record(res.lane2_done.get(), res.lane2.get(), "cudaEventRecord(lane 2 done)");
  wait(res.compute.get(), res.lane2_done.get(), "cudaStreamWaitEvent(lane 2 done)");
}

void CudaGemmPaths::enqueue_decomposed(const gpu::CallSpec& call, gpu::RankResources& res) {
  const cudaStream_t s = res.compute.get();
  for (int c : call.arrival_order) {
    wait(s, res.arrived[static_cast<std::size_t>(c)]->get(), "cudaStreamWaitEvent(chunk arrived)");
  }
  cublas_.lane[0].run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
}

}  // namespace asynctp::cuda
