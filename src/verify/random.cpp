#include <cmath>
#include <string>

#include "asynctp/error.hpp"
#include "asynctp/verify.hpp"
#include "core/dtype_convert.hpp"

namespace asynctp::verify {
namespace {

constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// splitmix64: neighbouring (seed, stream) pairs get unrelated keys, and
// neighbouring counters of one key unrelated words.
std::uint64_t mix(std::uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Draws 2p and 2p + 1 of stream `key`: Box-Muller on two 24-bit uniforms of
// one word (u1 in (0, 1], so the log is finite; the tails end at 5.8 sigma).
struct NormalPair {
  float even, odd;
};
NormalPair normal_pair(std::uint64_t key, std::uint64_t p) {
  const std::uint64_t word = mix(key + p * kGolden);
  const float u1 = static_cast<float>((word >> 40) + 1) * 0x1p-24f;
  const float u2 = static_cast<float>(word & 0xffffffu) * 0x1p-24f;
  const float radius = std::sqrt(-2.0f * std::log(u1));
  const float angle = 6.28318530717958647692f * u2;
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

// Draws [first, first + count) of stream `key` into p[0, count).
template <typename Element, typename Round>
void draw(Element* p, std::uint64_t key, std::uint64_t first, std::int64_t count, Round round) {
  std::int64_t i = 0;
  if (count > 0 && first % 2 == 1) {  // starts on a pair's second draw
    p[i++] = round(normal_pair(key, first / 2).odd);
  }
  for (; i + 1 < count; i += 2) {
    const NormalPair z = normal_pair(key, (first + static_cast<std::uint64_t>(i)) / 2);
    p[i] = round(z.even);
    p[i + 1] = round(z.odd);
  }
  if (i < count) p[i] = round(normal_pair(key, (first + static_cast<std::uint64_t>(i)) / 2).even);
}

void check_dense(const TensorView& host, const char* who) {
  if (!host.is_row_major() && !host.is_col_major()) {
    throw Error(ErrorCode::invalid_argument,
                std::string(who) + ": the view must be dense (row- or column-major), got strides " +
                    std::to_string(host.row_stride) + " and " + std::to_string(host.col_stride));
  }
}

// Elements [begin, end) of a dense host tensor whose element 0 is draw
// `drawn` of stream `key`, rounded to its dtype (the public calls check the
// arguments).
void draw_into(const TensorView& host, std::uint64_t key, std::uint64_t drawn, std::int64_t begin,
               std::int64_t end) {
  const std::uint64_t first = drawn + static_cast<std::uint64_t>(begin);
  const std::int64_t count = end - begin;
  switch (host.dtype) {
    case DType::fp32:
      draw(static_cast<float*>(host.data) + begin, key, first, count, [](float v) { return v; });
      break;
    case DType::bf16:
      draw(static_cast<std::uint16_t*>(host.data) + begin, key, first, count, core::float_to_bf16);
      break;
    case DType::fp16:
      draw(static_cast<std::uint16_t*>(host.data) + begin, key, first, count, core::float_to_fp16);
      break;
  }
}

}  // namespace

Random::Random(std::uint64_t seed, std::uint64_t stream) : key_(mix(seed ^ mix(stream))) {}

void Random::fill_normal(const TensorView& host) {
  check_dense(host, "fill_normal");
  draw_into(host, key_, drawn_, 0, host.numel());
  skip(host.numel());
}

void Random::fill_normal_part(const TensorView& host, std::int64_t begin, std::int64_t end) const {
  check_dense(host, "fill_normal_part");
  if (begin < 0 || begin > end || end > host.numel()) {
    throw Error(ErrorCode::invalid_argument,
                "fill_normal_part: [begin, end) must lie in [0, " + std::to_string(host.numel()) +
                    "], got [" + std::to_string(begin) + ", " + std::to_string(end) + ")");
  }
  draw_into(host, key_, drawn_, begin, end);
}

}  // namespace asynctp::verify
