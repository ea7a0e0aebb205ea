// gtest printers for asynctp's enums, so failures and parameterized test
// names read "timeout" or "native" instead of "4-byte object <01-00 00-00>".
// In namespace asynctp so gtest finds them by argument-dependent lookup.
#pragma once

#include <ostream>

#include "asynctp/error.hpp"
#include "asynctp/options.hpp"
#include "asynctp/tensor.hpp"

namespace asynctp {

inline void PrintTo(Algorithm value, std::ostream* out) { *out << to_string(value); }
inline void PrintTo(DType value, std::ostream* out) { *out << to_string(value); }
inline void PrintTo(DeviceKind value, std::ostream* out) { *out << to_string(value); }
inline void PrintTo(ErrorCode value, std::ostream* out) { *out << to_string(value); }

}  // namespace asynctp
