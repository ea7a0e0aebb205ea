// Non-owning 2-D tensor views. asynctp never allocates or frees caller memory:
// a view is a pointer plus shape and strides (in elements), like a DLPack
// tensor restricted to two dimensions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace asynctp {

enum class DType { bf16, fp16, fp32 };

const char* to_string(DType dtype) noexcept;
std::size_t element_size(DType dtype) noexcept;

enum class DeviceKind { cpu, cuda, hip };

const char* to_string(DeviceKind kind) noexcept;

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;
};

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::bf16;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t row_stride = 0;  // elements between (i, j) and (i + 1, j)
  std::int64_t col_stride = 0;  // elements between (i, j) and (i, j + 1)
  Device device{};

  bool is_row_major() const noexcept { return col_stride == 1 && row_stride == cols; }
  bool is_col_major() const noexcept { return row_stride == 1 && col_stride == rows; }
  std::int64_t numel() const noexcept { return rows * cols; }

  static TensorView row_major(void* data, DType dtype, std::int64_t rows, std::int64_t cols,
                              Device device = {}) noexcept {
    return {data, dtype, rows, cols, cols, 1, device};
  }
  static TensorView col_major(void* data, DType dtype, std::int64_t rows, std::int64_t cols,
                              Device device = {}) noexcept {
    return {data, dtype, rows, cols, 1, rows, device};
  }
};

}  // namespace asynctp
