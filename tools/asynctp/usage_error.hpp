// Bad command-line input: main prints it with a pointer to --help and exits 2.
#pragma once

#include <stdexcept>

namespace asynctp::tool {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace asynctp::tool
