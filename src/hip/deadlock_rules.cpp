#include "hip/deadlock_rules.hpp"

#include <algorithm>

#include "asynctp/error.hpp"
#include "core/row_pieces.hpp"

namespace asynctp::hip {

std::vector<CopyPiece> copy_pieces(std::size_t rows, std::size_t row_bytes) {
  std::vector<CopyPiece> pieces;
  if (rows == 0 || row_bytes == 0) return pieces;
  const std::size_t rows_per_piece = core::rows_per_piece(row_bytes, kMaxCopyPieceBytes);
  for (std::size_t row = 0; row < rows; row += rows_per_piece) {
    const std::size_t n = std::min(rows_per_piece, rows - row);
    pieces.push_back({row * row_bytes, n * row_bytes});
  }
  return pieces;
}

int hardware_queues(const core::EnvLookup& env) {
  const auto text = env("GPU_MAX_HW_QUEUES");
  if (!text) return kDefaultHardwareQueues;
  const auto value = core::parse_integer(*text);
  if (!value || *value < 1 || *value > 1024) {
    throw Error(ErrorCode::invalid_argument,
                "GPU_MAX_HW_QUEUES: must be a whole number in [1, 1024], got '" + *text + "'");
  }
  return static_cast<int>(*value);
}

std::optional<std::string> queue_blocker(int streams, int queues) {
  if (streams <= queues) return std::nullopt;
  return std::to_string(streams) + " streams would share " + std::to_string(queues) +
         " hardware queue" + (queues == 1 ? "" : "s") +
         " (GPU_MAX_HW_QUEUES): a producer queued behind the persistent GEMM would never start";
}

}  // namespace asynctp::hip
