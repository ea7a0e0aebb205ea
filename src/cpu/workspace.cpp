#include "cpu/workspace.hpp"

#include "core/log.hpp"

namespace asynctp::cpu {

void* Workspace::ensure(std::size_t bytes, int rank, const char* what) {
  const std::size_t lines = (bytes + sizeof(CacheLine) - 1) / sizeof(CacheLine);
  if (storage_.size() < lines) {
    storage_.resize(lines);
    core::log(
        core::LogLevel::info, rank,
        std::string(what) + " grown to " + std::to_string(lines * sizeof(CacheLine)) + " bytes");
  }
  return storage_.data();
}

}  // namespace asynctp::cpu
