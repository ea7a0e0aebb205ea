#include "cpu/inbox.hpp"

#include <new>
#include <string>

#include "asynctp/error.hpp"

namespace asynctp::cpu {
namespace {

std::size_t slot_bytes(const core::ProblemDesc& problem) noexcept {
  return static_cast<std::size_t>(problem.m * problem.n) * element_size(problem.dtype);
}

}  // namespace

std::size_t inbox_bytes(const core::ProblemDesc& problem) noexcept {
  return slot_bytes(problem) * static_cast<std::size_t>(problem.world_size - 1);
}

void Inbox::reserve(const core::ProblemDesc& problem) {
  const std::size_t bytes = inbox_bytes(problem);
  try {
    data_ = slots_.ensure(bytes, problem.rank, "reduce-scatter receive slots");
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::backend, "cpu: cannot allocate " + std::to_string(bytes) +
                                        " bytes of reduce-scatter receive slots");
  }
}

TensorView InboxView::slot(int slot, const core::ProblemDesc& problem) const noexcept {
  auto* base = static_cast<char*>(slots) + slot_bytes(problem) * static_cast<std::size_t>(slot);
  return TensorView::row_major(base, problem.dtype, problem.m, problem.n);
}

}  // namespace asynctp::cpu
