// The public entry points: thin, so that every backend shares one contract.
#include "asynctp/ops.hpp"

namespace asynctp {

RunInfo fused_all_gather_matmul(Comm& comm, const TensorView& a_shard, const TensorView& b,
                                const TensorView& c_out, const TensorView* a_gathered_out,
                                const Options& options) {
  return comm.fused_all_gather_matmul(a_shard, b, c_out, a_gathered_out, options);
}

void synchronize(Comm& comm) { comm.synchronize(); }

RunInfo plan_fused_all_gather_matmul(const Comm& comm, const TensorView& a_shard,
                                     const TensorView& b, const TensorView& c_out,
                                     const TensorView* a_gathered_out, const Options& options) {
  return comm.plan_fused_all_gather_matmul(a_shard, b, c_out, a_gathered_out, options);
}

}  // namespace asynctp
