#include "core/dtype_convert.hpp"

#include <cmath>
#include <cstring>

namespace asynctp::core {
namespace {

std::uint32_t float_bits(float value) noexcept {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float bits_float(std::uint32_t bits) noexcept {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

template <typename T>
T* element_ptr(const TensorView& view, std::int64_t row, std::int64_t col) noexcept {
  return static_cast<T*>(view.data) + row * view.row_stride + col * view.col_stride;
}

}  // namespace

float bf16_to_float(std::uint16_t bits) noexcept {
  return bits_float(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bf16(float value) noexcept {
  std::uint32_t bits = float_bits(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;  // round to nearest, ties to even
  return static_cast<std::uint16_t>(bits >> 16);
}

float fp16_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf/NaN
  if (exponent == 0) {
    if (mantissa == 0) return bits_float(sign);
    // Subnormal: value = mantissa * 2^-24.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

std::uint16_t float_to_fp16(float value) noexcept {
  const std::uint32_t bits = float_bits(value);
  const std::uint16_t sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000u);
  const std::uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs_bits >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs_bits < 0x38800000u) {
    // Result is subnormal (or zero): scale so that one fp16 subnormal ulp is 1
    // and let the FPU's round-to-nearest-even do the rounding.
    const float scaled = bits_float(abs_bits) * 16777216.0f;  // * 2^24
    const auto ulps = static_cast<std::uint32_t>(std::nearbyint(scaled));
    return static_cast<std::uint16_t>(sign | ulps);
  }
  const std::uint32_t lsb = (abs_bits >> 13) & 1u;
  const std::uint32_t rounded = abs_bits + 0xfffu + lsb;
  return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

double load_as_double(const TensorView& view, std::int64_t row, std::int64_t col) noexcept {
  switch (view.dtype) {
    case DType::bf16:
      return bf16_to_float(*element_ptr<const std::uint16_t>(view, row, col));
    case DType::fp16:
      return fp16_to_float(*element_ptr<const std::uint16_t>(view, row, col));
    case DType::fp32:
      return *element_ptr<const float>(view, row, col);
  }
  return 0.0;
}

void store_from_float(const TensorView& view, std::int64_t row, std::int64_t col,
                      float value) noexcept {
  switch (view.dtype) {
    case DType::bf16:
      *element_ptr<std::uint16_t>(view, row, col) = float_to_bf16(value);
      break;
    case DType::fp16:
      *element_ptr<std::uint16_t>(view, row, col) = float_to_fp16(value);
      break;
    case DType::fp32:
      *element_ptr<float>(view, row, col) = value;
      break;
  }
}

void rows_to_float(const TensorView& src, std::int64_t row_begin, std::int64_t rows,
                   float* dst) noexcept {
  const std::int64_t cols = src.cols;
  for (std::int64_t i = 0; i < rows; ++i) {
    float* out = dst + i * cols;
    const std::int64_t r = row_begin + i;
    if (src.col_stride == 1) {
      // Contiguous rows: tight loops the compiler vectorizes.
      if (src.dtype == DType::fp32) {
        std::memcpy(out, element_ptr<const float>(src, r, 0), sizeof(float) * cols);
      } else {
        const auto* in = element_ptr<const std::uint16_t>(src, r, 0);
        if (src.dtype == DType::bf16) {
          for (std::int64_t j = 0; j < cols; ++j) out[j] = bf16_to_float(in[j]);
        } else {
          for (std::int64_t j = 0; j < cols; ++j) out[j] = fp16_to_float(in[j]);
        }
      }
    } else {
      for (std::int64_t j = 0; j < cols; ++j)
        out[j] = static_cast<float>(load_as_double(src, r, j));
    }
  }
}

void float_block_to_view(const float* src, std::int64_t rows, std::int64_t cols,
                         std::int64_t src_ld, const TensorView& dst, std::int64_t row_begin,
                         std::int64_t col_begin) noexcept {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* in = src + i * src_ld;
    const std::int64_t r = row_begin + i;
    if (dst.col_stride == 1 && dst.dtype == DType::bf16) {
      auto* out = element_ptr<std::uint16_t>(dst, r, col_begin);
      for (std::int64_t j = 0; j < cols; ++j) out[j] = float_to_bf16(in[j]);
    } else if (dst.col_stride == 1 && dst.dtype == DType::fp32) {
      std::memcpy(element_ptr<float>(dst, r, col_begin), in, sizeof(float) * cols);
    } else {
      for (std::int64_t j = 0; j < cols; ++j) store_from_float(dst, r, col_begin + j, in[j]);
    }
  }
}

}  // namespace asynctp::core
