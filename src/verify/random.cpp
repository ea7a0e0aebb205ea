#include <string>

#include "asynctp/error.hpp"
#include "asynctp/verify.hpp"
#include "core/dtype_convert.hpp"

namespace asynctp::verify {
namespace {

// splitmix64: neighbouring (seed, stream) pairs get unrelated engines.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename Element, typename Round>
void fill(void* data, std::int64_t count, std::mt19937_64& engine, Round round) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto* p = static_cast<Element*>(data);
  for (std::int64_t i = 0; i < count; ++i) p[i] = round(normal(engine));
}

}  // namespace

Random::Random(std::uint64_t seed, std::uint64_t stream) : engine_(mix(seed ^ mix(stream))) {}

void Random::fill_normal(const TensorView& host) {
  if (!host.is_row_major() && !host.is_col_major()) {
    throw Error(ErrorCode::invalid_argument,
                "fill_normal: the view must be dense (row- or column-major), got strides " +
                    std::to_string(host.row_stride) + " and " + std::to_string(host.col_stride));
  }
  const std::int64_t count = host.numel();
  switch (host.dtype) {
    case DType::fp32:
      fill<float>(host.data, count, engine_, [](float v) { return v; });
      break;
    case DType::bf16:
      fill<std::uint16_t>(host.data, count, engine_, core::float_to_bf16);
      break;
    case DType::fp16:
      fill<std::uint16_t>(host.data, count, engine_, core::float_to_fp16);
      break;
  }
}

}  // namespace asynctp::verify
