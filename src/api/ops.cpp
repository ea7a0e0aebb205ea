// The public entry points: each builds the op's call and hands it to the one
// call flow (src/call/collective.hpp), whatever the communicator. A verify
// problem's call (asynctp/verify.hpp) is the op's entry point on the rank's
// tensors, so it is written here too: the caller meets the call flow at once.
#include "asynctp/ops.hpp"

#include "asynctp/verify.hpp"
#include "call/collective.hpp"

namespace asynctp {
namespace {

core::OpCall all_gather_matmul_call(const TensorView& a_shard, const TensorView& b,
                                    const TensorView& c_out, const TensorView* a_gathered_out) {
  core::OpCall call;
  call.op = core::OpKind::all_gather_matmul;
  call.a = a_shard;
  call.b = b;
  call.out = c_out;
  call.a_gathered_out = a_gathered_out;
  return call;
}

core::OpCall matmul_reduce_scatter_call(const TensorView& a, const TensorView& b,
                                        const TensorView& out) {
  core::OpCall call;
  call.op = core::OpKind::matmul_reduce_scatter;
  call.a = a;
  call.b = b;
  call.out = out;
  return call;
}

}  // namespace

RunInfo fused_all_gather_matmul(Comm& comm, const TensorView& a_shard, const TensorView& b,
                                const TensorView& c_out, const TensorView* a_gathered_out,
                                const Options& options) {
  return call::run_collective(call::transport_of(comm),
                              all_gather_matmul_call(a_shard, b, c_out, a_gathered_out), options);
}

RunInfo fused_matmul_reduce_scatter(Comm& comm, const TensorView& a, const TensorView& b,
                                    const TensorView& out, const Options& options) {
  return call::run_collective(call::transport_of(comm), matmul_reduce_scatter_call(a, b, out),
                              options);
}

void synchronize(Comm& comm) { comm.synchronize(); }

RunInfo plan_fused_all_gather_matmul(const Comm& comm, const TensorView& a_shard,
                                     const TensorView& b, const TensorView& c_out,
                                     const TensorView* a_gathered_out, const Options& options) {
  return call::plan_collective(call::transport_of(comm),
                               all_gather_matmul_call(a_shard, b, c_out, a_gathered_out), options);
}

RunInfo plan_fused_matmul_reduce_scatter(const Comm& comm, const TensorView& a, const TensorView& b,
                                         const TensorView& out, const Options& options) {
  return call::plan_collective(call::transport_of(comm), matmul_reduce_scatter_call(a, b, out),
                               options);
}

namespace verify {

RunInfo AllGatherMatmulProblem::call(Comm& comm, const RankTensors& on,
                                     const Options& options) const {
  return fused_all_gather_matmul(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                 on.outputs.at(0).view, &on.outputs.at(1).view, options);
}

RunInfo AllGatherMatmulProblem::plan(const Comm& comm, const RankTensors& on,
                                     const Options& options) const {
  return plan_fused_all_gather_matmul(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                      on.outputs.at(0).view, &on.outputs.at(1).view, options);
}

RunInfo MatmulReduceScatterProblem::call(Comm& comm, const RankTensors& on,
                                         const Options& options) const {
  return fused_matmul_reduce_scatter(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                     on.outputs.at(0).view, options);
}

RunInfo MatmulReduceScatterProblem::plan(const Comm& comm, const RankTensors& on,
                                         const Options& options) const {
  return plan_fused_matmul_reduce_scatter(comm, on.inputs.at(0).view, on.inputs.at(1).view,
                                          on.outputs.at(0).view, options);
}

}  // namespace verify
}  // namespace asynctp
