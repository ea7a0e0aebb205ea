// Owning host tensors for tests: 64-byte aligned storage (validation requires
// 16), filled with normally distributed values rounded to the dtype (never
// zeros: a kernel that writes nothing must not pass), or with a byte pattern
// so a test can prove a buffer was left untouched.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "asynctp/tensor.hpp"
#include "core/dtype_convert.hpp"

namespace asynctp_test {

class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(asynctp::DType dtype, std::int64_t rows, std::int64_t cols, bool col_major = false)
      : dtype_(dtype), rows_(rows), cols_(cols), col_major_(col_major),
        blocks_((bytes() + sizeof(Block) - 1) / sizeof(Block) + 1) {}

  std::size_t bytes() const {
    return static_cast<std::size_t>(rows_ * cols_) * asynctp::element_size(dtype_);
  }
  void* data() { return blocks_.data(); }
  const void* data() const { return blocks_.data(); }

  asynctp::TensorView view() const {
    void* p = const_cast<Block*>(blocks_.data());
    return col_major_ ? asynctp::TensorView::col_major(p, dtype_, rows_, cols_)
                      : asynctp::TensorView::row_major(p, dtype_, rows_, cols_);
  }

  void fill_normal(std::mt19937_64& rng, float stddev = 1.0f) {
    std::normal_distribution<float> normal(0.0f, stddev);
    const asynctp::TensorView v = view();
    for (std::int64_t i = 0; i < rows_; ++i) {
      for (std::int64_t j = 0; j < cols_; ++j) asynctp::core::store_from_float(v, i, j, normal(rng));
    }
  }
  // Row by row, each value rounded to the dtype.
  void set(const std::vector<float>& values) {
    const asynctp::TensorView v = view();
    std::size_t i = 0;
    for (std::int64_t r = 0; r < rows_; ++r) {
      for (std::int64_t c = 0; c < cols_; ++c) asynctp::core::store_from_float(v, r, c, values.at(i++));
    }
  }
  void fill_bytes(unsigned char byte) { std::memset(data(), byte, bytes()); }

  std::vector<unsigned char> snapshot() const {
    const auto* p = static_cast<const unsigned char*>(data());
    return {p, p + bytes()};
  }
  bool equals(const std::vector<unsigned char>& snapshot) const {
    return snapshot.size() == bytes() && std::memcmp(snapshot.data(), data(), bytes()) == 0;
  }

 private:
  struct alignas(64) Block {
    unsigned char bytes[64];
  };
  asynctp::DType dtype_ = asynctp::DType::fp32;
  std::int64_t rows_ = 0, cols_ = 0;
  bool col_major_ = false;
  std::vector<Block> blocks_;
};

}  // namespace asynctp_test
