// The cpu backend for `asynctp run`: W ranks as threads of this process,
// computing on the host buffers directly.
#pragma once

#include <memory>

#include "backend.hpp"

namespace asynctp::tool {

std::unique_ptr<Backend> make_cpu_backend(const RunArgs& args);

}  // namespace asynctp::tool
