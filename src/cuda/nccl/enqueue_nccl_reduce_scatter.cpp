#include "cuda/nccl/enqueue_nccl_reduce_scatter.hpp"

#include "cuda/nccl/nccl_check.hpp"
#include "gpu/check.hpp"
#include "gpu/gemm_paths.hpp"

namespace asynctp::nccl {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::bf16:
      return ncclBfloat16;
    case DType::fp16:
      return ncclFloat16;
    case DType::fp32:
      break;
  }
  return ncclFloat32;
}

}  // namespace

void enqueue_nccl_reduce_scatter(const NcclReduceScatterCall& call, ncclComm_t comm,
                                 gpu::RankResources& res, gpu::RankBackend& backend) {
  const gpu::rt::StreamHandle s = call.stream;
  // The partial is shared by this rank's calls: a call on another stream
  // must not overwrite it while the previous reduce-scatter still reads it.
  if (!call.capturing && res.call_end_recorded) {
    gpu::check(gpu::rt::stream_wait_event(s, res.call_end.get()),
               "stream wait (this rank's previous call)");
  }
  gpu::library_lane(backend, 0, "decomposed")
      .run(s, call.a.data, call.problem.gathered_rows(), call.b, call.partial);
  check_nccl(ncclReduceScatter(call.partial, call.out.data,
                               static_cast<std::size_t>(call.problem.m * call.problem.n),
                               nccl_type(call.problem.dtype), ncclSum, comm, s),
             "ncclReduceScatter(partials)", comm);
  if (!call.capturing) {
    gpu::check(gpu::rt::event_record(res.call_end.get(), s), "event record (call end)");
    res.call_end_recorded = true;
  }
}

}  // namespace asynctp::nccl
