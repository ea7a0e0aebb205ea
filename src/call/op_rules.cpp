#include "call/op_rules.hpp"

#include "core/validate.hpp"

namespace asynctp::call {

core::ProblemDesc validate_op(const OpCall& call, int world_size, int rank,
                              DeviceKind device_kind) {
  switch (call.op) {
    case core::OpKind::matmul_reduce_scatter:
      return core::validate_fused_matmul_reduce_scatter(world_size, rank, device_kind, call.a,
                                                        call.b, call.out);
    case core::OpKind::all_gather_matmul:
      break;
  }
  return core::validate_fused_all_gather_matmul(world_size, rank, device_kind, call.a, call.b,
                                                call.out, call.a_gathered_out);
}

std::vector<std::pair<const char*, TensorView>> named_tensors(const OpCall& call) {
  if (call.op == core::OpKind::matmul_reduce_scatter) {
    return {{"a", call.a}, {"b", call.b}, {"out", call.out}};
  }
  std::vector<std::pair<const char*, TensorView>> out = {
      {"a_shard", call.a}, {"b", call.b}, {"c_out", call.out}};
  if (call.a_gathered_out) out.emplace_back("a_gathered_out", *call.a_gathered_out);
  return out;
}

}  // namespace asynctp::call
