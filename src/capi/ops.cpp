// The ops, their plan queries and synchronize on C structs: each C matrix
// becomes an asynctp::TensorView, the C options asynctp::Options; the
// library's own checks then judge them as they judge a C++ caller's.
#include <algorithm>
#include <cstring>
#include <string>

#include "asynctp/c_api.h"
#include "asynctp/error.hpp"
#include "asynctp/ops.hpp"
#include "capi/comm_handle.hpp"
#include "capi/guard.hpp"
#include "call/collective.hpp"

namespace asynctp::capi {
namespace {

static_assert(static_cast<int>(DeviceKind::cpu) == asynctpCpu &&
                  static_cast<int>(DeviceKind::cuda) == asynctpCuda &&
                  static_cast<int>(DeviceKind::hip) == asynctpHip,
              "asynctpDeviceKind_t mirrors asynctp::DeviceKind");

[[noreturn]] void bad(const std::string& what, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, what + ": " + rule);
}

DType dtype_of(std::int32_t code, const std::string& what) {
  switch (code) {
    case asynctpBf16: return DType::bf16;
    case asynctpFp16: return DType::fp16;
    case asynctpFp32: return DType::fp32;
  }
  bad(what + ".dtype", "must be asynctpBf16 (0), asynctpFp16 (1) or asynctpFp32 (2), got " +
                           std::to_string(code));
}

DeviceKind device_kind_of(std::int32_t code, const std::string& what) {
  switch (code) {
    case asynctpCpu: return DeviceKind::cpu;
    case asynctpCuda: return DeviceKind::cuda;
    case asynctpHip: return DeviceKind::hip;
  }
  bad(what + ".device_kind", "must be asynctpCpu (0), asynctpCuda (1) or asynctpHip (2), got " +
                                 std::to_string(code));
}

TensorView view_of(const asynctpMatrix* m, const char* what) {
  require_pointer(m, what);
  TensorView v;
  v.data = m->data;
  v.dtype = dtype_of(m->dtype, what);
  v.device = Device{device_kind_of(m->device_kind, what), m->device_index};
  v.rows = m->rows;
  v.cols = m->cols;
  v.row_stride = m->row_stride;
  v.col_stride = m->col_stride;
  return v;
}

Options options_of(const asynctpOptions* o) {
  Options options;
  if (o == nullptr) return options;
  switch (o->algorithm) {
    case asynctpAlgorithmDefault: break;
    case asynctpAlgorithmAuto: options.algorithm = Algorithm::automatic; break;
    case asynctpAlgorithmNative: options.algorithm = Algorithm::native; break;
    case asynctpAlgorithmPipelined: options.algorithm = Algorithm::pipelined; break;
    case asynctpAlgorithmDecomposed: options.algorithm = Algorithm::decomposed; break;
    default:
      bad("options.algorithm", "must be an asynctpAlgorithm_t (0 default, 1 auto, 2 native, "
                               "3 pipelined, 4 decomposed), got " + std::to_string(o->algorithm));
  }
  switch (o->tune) {
    case asynctpTuneDefault: break;
    case asynctpTuneOn: options.tune = true; break;
    case asynctpTuneOff: options.tune = false; break;
    default:
      bad("options.tune", "must be an asynctpTune_t (0 default, 1 on, 2 off), got " +
                              std::to_string(o->tune));
  }
  if (o->wait_timeout_ms < 0) {
    bad("options.wait_timeout_ms",
        "must be positive, or 0 for the default, got " + std::to_string(o->wait_timeout_ms));
  }
  if (o->wait_timeout_ms > 0) options.wait_timeout_ms = o->wait_timeout_ms;
  if (o->tile_m < 0 || o->tile_n < 0) {
    bad("options.tile_m/tile_n", "must be positive, or 0 for the default");
  }
  if (o->tile_m > 0) options.tile_m = o->tile_m;
  if (o->tile_n > 0) options.tile_n = o->tile_n;
  options.stream = o->stream;
  return options;
}

asynctpAlgorithm_t algorithm_code(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::automatic: return asynctpAlgorithmAuto;
    case Algorithm::native: return asynctpAlgorithmNative;
    case Algorithm::pipelined: return asynctpAlgorithmPipelined;
    case Algorithm::decomposed: return asynctpAlgorithmDecomposed;
  }
  return asynctpAlgorithmDefault;
}

void write_info(const RunInfo& run, asynctpRunInfo* info) {
  if (info == nullptr) return;
  std::memset(info, 0, sizeof *info);
  info->algorithm = algorithm_code(run.algorithm);
  info->tile_m = run.tile_m;
  info->tile_n = run.tile_n;
  const std::size_t n = std::min(run.reason.size(), sizeof info->reason - 1);
  std::memcpy(info->reason, run.reason.data(), n);
}

enum class Mode { run, plan };

// The arguments of the all-gather op, converted and checked for NULLs.
struct AllGatherArgs {
  TensorView a_shard, b, c_out, a_gathered;
  bool has_gathered = false;
  Options options;

  AllGatherArgs(const asynctpMatrix* a, const asynctpMatrix* b_in, const asynctpMatrix* c,
                const asynctpMatrix* gathered, const asynctpOptions* o)
      : a_shard(view_of(a, "a_shard")),
        b(view_of(b_in, "b")),
        c_out(view_of(c, "c_out")),
        options(options_of(o)) {
    if (gathered) {
      a_gathered = view_of(gathered, "a_gathered_out");
      has_gathered = true;
    }
  }
  RunInfo call(Comm& comm, Mode mode) const {
    const TensorView* gathered = has_gathered ? &a_gathered : nullptr;
    return mode == Mode::run
               ? fused_all_gather_matmul(comm, a_shard, b, c_out, gathered, options)
               : plan_fused_all_gather_matmul(comm, a_shard, b, c_out, gathered, options);
  }
};

struct ReduceScatterArgs {
  TensorView a, b, out;
  Options options;

  ReduceScatterArgs(const asynctpMatrix* a_in, const asynctpMatrix* b_in,
                    const asynctpMatrix* out_in, const asynctpOptions* o)
      : a(view_of(a_in, "a")), b(view_of(b_in, "b")), out(view_of(out_in, "out")),
        options(options_of(o)) {}
  RunInfo call(Comm& comm, Mode mode) const {
    return mode == Mode::run ? fused_matmul_reduce_scatter(comm, a, b, out, options)
                             : plan_fused_matmul_reduce_scatter(comm, a, b, out, options);
  }
};

// A collective call's arguments converted; when they cannot be (a NULL
// pointer, an unknown dtype code, a Python tensor of the wrong rank), the
// peers, who are making the call, are told through the call's agreement
// before this rank throws, so they fail naming it instead of waiting.
template <class Args, class... In>
Args converted_or_rejected(Comm& comm, const In*... in) {
  try {
    return Args(in...);
  } catch (const Error& e) {
    call::reject_collective(call::transport_of(comm), e);
    throw;
  }
}

// An op's C entry point, or its plan query's: the arguments converted (a
// plan is local, so arguments it cannot read just fail it), the op run or
// planned, what it chose written to `info`.
template <class Args, class... In>
asynctpResult_t entry(Mode mode, asynctpComm_t comm, asynctpRunInfo* info, const In*... in) {
  return guarded([&] {
    Comm& c = comm_of(comm);
    if (mode == Mode::plan) require_pointer(info, "info");
    const Args args = mode == Mode::run ? converted_or_rejected<Args>(c, in...) : Args(in...);
    write_info(args.call(c, mode), info);
  });
}

}  // namespace
}  // namespace asynctp::capi

using asynctp::capi::AllGatherArgs;
using asynctp::capi::entry;
using asynctp::capi::guarded;
using asynctp::capi::Mode;
using asynctp::capi::ReduceScatterArgs;

extern "C" asynctpResult_t asynctpFusedAllGatherMatmul(
    asynctpComm_t comm, const asynctpMatrix* a_shard, const asynctpMatrix* b,
    const asynctpMatrix* c_out, const asynctpMatrix* a_gathered_out,
    const asynctpOptions* options, asynctpRunInfo* info) {
  return entry<AllGatherArgs>(Mode::run, comm, info, a_shard, b, c_out, a_gathered_out, options);
}

extern "C" asynctpResult_t asynctpPlanFusedAllGatherMatmul(
    asynctpComm_t comm, const asynctpMatrix* a_shard, const asynctpMatrix* b,
    const asynctpMatrix* c_out, const asynctpMatrix* a_gathered_out,
    const asynctpOptions* options, asynctpRunInfo* info) {
  return entry<AllGatherArgs>(Mode::plan, comm, info, a_shard, b, c_out, a_gathered_out, options);
}

extern "C" asynctpResult_t asynctpFusedMatmulReduceScatter(
    asynctpComm_t comm, const asynctpMatrix* a, const asynctpMatrix* b, const asynctpMatrix* out,
    const asynctpOptions* options, asynctpRunInfo* info) {
  return entry<ReduceScatterArgs>(Mode::run, comm, info, a, b, out, options);
}

extern "C" asynctpResult_t asynctpPlanFusedMatmulReduceScatter(
    asynctpComm_t comm, const asynctpMatrix* a, const asynctpMatrix* b, const asynctpMatrix* out,
    const asynctpOptions* options, asynctpRunInfo* info) {
  return entry<ReduceScatterArgs>(Mode::plan, comm, info, a, b, out, options);
}

extern "C" asynctpResult_t asynctpSynchronize(asynctpComm_t comm) {
  return guarded([&] { asynctp::synchronize(asynctp::capi::comm_of(comm)); });
}

extern "C" asynctpResult_t asynctpCommRejectCall(asynctpComm_t comm, const char* message) {
  return guarded([&] {
    asynctp::Comm& c = asynctp::capi::comm_of(comm);
    asynctp::capi::require_pointer(message, "message");
    asynctp::call::reject_collective(
        asynctp::call::transport_of(c),
        asynctp::Error(asynctp::ErrorCode::invalid_argument, message));
  });
}
