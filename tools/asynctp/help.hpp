// The text of `asynctp --help` and `asynctp run --help`.
#pragma once

#include <string>

namespace asynctp::tool {

std::string main_help();
std::string run_help();

}  // namespace asynctp::tool
