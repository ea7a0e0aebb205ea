// The text of `asynctp --help`, `asynctp run --help` and `asynctp bench --help`.
#pragma once

#include <string>

namespace asynctp::tool {

std::string main_help();
std::string run_help();
std::string bench_help();

}  // namespace asynctp::tool
