// The order of a round's measurements in `asynctp run` and `asynctp bench`.
#pragma once

#include <cstddef>

namespace asynctp::tool {

// Which of `count` measurements goes at `turn` of a round. Round 0 (the
// warmups) keeps their order; the timed rounds rotate it by one a round, so
// that each measurement takes every position of the round in turn rather
// than one always going first, and its median mixes the positions alike.
inline std::size_t at_turn(int round, std::size_t turn, std::size_t count) {
  return round == 0 ? turn : (turn + static_cast<std::size_t>(round - 1)) % count;
}

}  // namespace asynctp::tool
