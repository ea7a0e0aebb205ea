// The argument checks of both ops, with any views a caller can build:
// null, unaligned or wild pointers, zero, negative and huge shapes and
// strides (element counts around 2^31 and 2^63), any dtype and device value,
// any world size and rank; then, for what passes, the planner with any tile
// options. Each must return or throw asynctp::Error: never crash or overflow
// (UBSan aborts on signed overflow), and what passes must keep the checks'
// promises (dims positive, every tensor under 2^31 elements, a known dtype).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "asynctp/error.hpp"
#include "core/config.hpp"
#include "core/planner.hpp"
#include "core/validate.hpp"

using namespace asynctp;

namespace {

alignas(64) unsigned char buffer[4096];

std::int64_t draw_dim(FuzzedDataProvider& in) {
  constexpr std::int64_t kInteresting[] = {0,
                                           1,
                                           -1,
                                           8,
                                           16,
                                           46341,  // its square passes 2^31
                                           65536,
                                           (std::int64_t{1} << 31) - 1,
                                           std::int64_t{1} << 31,
                                           std::int64_t{1} << 32,
                                           std::int64_t{3037000500},  // its square passes 2^63
                                           std::numeric_limits<std::int64_t>::max(),
                                           std::numeric_limits<std::int64_t>::min()};
  if (in.ConsumeBool()) return in.PickValueInArray(kInteresting);
  return in.ConsumeIntegral<std::int64_t>();
}

TensorView draw_view(FuzzedDataProvider& in) {
  TensorView v;
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: v.data = nullptr; break;
    case 1: v.data = buffer + 16 * in.ConsumeIntegralInRange<int>(0, 255); break;
    case 2: v.data = buffer + in.ConsumeIntegralInRange<int>(0, 4095); break;
    default: v.data = reinterpret_cast<void*>(in.ConsumeIntegral<std::uintptr_t>()); break;
  }
  v.dtype = static_cast<DType>(in.ConsumeIntegralInRange<int>(0, 3));
  v.device.kind = static_cast<DeviceKind>(in.ConsumeIntegralInRange<int>(0, 2));
  v.rows = draw_dim(in);
  v.cols = draw_dim(in);
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {  // mostly dense, to get past the layout checks
    case 0: v.row_stride = v.cols; v.col_stride = 1; break;
    case 1: v.row_stride = 1; v.col_stride = v.rows; break;
    default: v.row_stride = draw_dim(in); v.col_stride = draw_dim(in); break;
  }
  return v;
}

void check_passed(const TensorView& v) {
  std::int64_t count = 0;
  if (v.rows <= 0 || v.cols <= 0) std::abort();
  if (!core::checked_element_count(v.rows, v.cols, &count)) std::abort();
  if (count > core::kMaxElementsPerTensor) std::abort();
  if (v.dtype != DType::bf16 && v.dtype != DType::fp16 && v.dtype != DType::fp32) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const bool reduce_scatter = in.ConsumeBool();
  const int world = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(-1, 9)
                                     : in.ConsumeIntegral<int>();
  const int rank = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(-1, 9)
                                    : in.ConsumeIntegral<int>();
  const DeviceKind kind = static_cast<DeviceKind>(in.ConsumeIntegralInRange<int>(0, 2));
  const TensorView a = draw_view(in);
  const TensorView b = draw_view(in);
  const TensorView c = draw_view(in);
  const bool gathered = in.ConsumeBool();
  const TensorView g = draw_view(in);
  Options options;
  if (in.ConsumeBool()) options.tile_m = draw_dim(in);
  if (in.ConsumeBool()) options.tile_n = draw_dim(in);
  if (in.ConsumeBool()) {
    options.algorithm = static_cast<Algorithm>(in.ConsumeIntegralInRange<int>(0, 3));
  }
  try {
    const core::ProblemDesc problem =
        reduce_scatter ? core::validate_fused_matmul_reduce_scatter(world, rank, kind, a, b, c)
                       : core::validate_fused_all_gather_matmul(world, rank, kind, a, b, c,
                                                                 gathered ? &g : nullptr);
    check_passed(a);
    check_passed(b);
    check_passed(c);
    if (!reduce_scatter && gathered) check_passed(g);
    (void)problem.to_string();
    (void)problem.flops();
    const core::ResolvedOptions resolved =
        core::resolve_options(options, [](const char*) { return std::nullopt; });
    core::BackendCaps caps;
    caps.name = "fuzz";
    caps.native_supported = true;
    (void)core::plan(problem, caps, resolved);
  } catch (const Error&) {
  }
  return 0;
}
