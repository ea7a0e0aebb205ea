#include "cpu/inbox.hpp"

#include <new>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::cpu {
namespace {

std::size_t slot_bytes(const core::ProblemDesc& problem) {
  return static_cast<std::size_t>(problem.m * problem.n) * element_size(problem.dtype);
}

}  // namespace

void Inbox::reserve(const core::ProblemDesc& problem) {
  const std::size_t bytes = slot_bytes(problem) * static_cast<std::size_t>(problem.world_size - 1);
  try {
    data_ = slots_.ensure(bytes, problem.rank, "reduce-scatter receive slots");
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::backend, "cpu: cannot allocate " + std::to_string(bytes) +
                                        " bytes of reduce-scatter receive slots");
  }
}

TensorView Inbox::slot(int slot, const core::ProblemDesc& problem) const noexcept {
  auto* base = static_cast<char*>(data_) + slot_bytes(problem) * static_cast<std::size_t>(slot);
  return TensorView::row_major(base, problem.dtype, problem.m, problem.n);
}

}  // namespace asynctp::cpu
