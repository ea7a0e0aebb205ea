// asynctp_hip_isa_check: holds kernels' ISA to the AMD kernel's rules
// (src/hip/isa_report.hpp) and prints their figures.
//
//   asynctp_hip_isa_check FILE.s...
//
// Each FILE.s is clang's assembly (-S) for one target (its amdhsa.target).
// Prints one summary line per kernel and one FAIL line per violation. Exit
// status: 0 when every kernel is clean, 1 on a violation, 2 when a file
// cannot be read or parsed.
#include <fstream>
#include <iostream>
#include <sstream>

#include "asynctp/error.hpp"
#include "hip/isa_report.hpp"

int main(int argc, char** argv) {
  using namespace asynctp::hip;
  if (argc < 2) {
    std::cerr << "usage: asynctp_hip_isa_check FILE.s...\n";
    return 2;
  }
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::cerr << argv[i] << ": cannot open\n";
      return 2;
    }
    std::ostringstream text;
    text << in.rdbuf();
    isa::IsaFile file;
    try {
      file = isa::parse_isa(text.str());
    } catch (const asynctp::Error& e) {
      std::cerr << argv[i] << ": " << e.what() << "\n";
      return 2;
    }
    for (const isa::KernelIsa& kernel : file.kernels) {
      std::cout << isa::summary(kernel, file.target) << "\n";
      for (const std::string& why : isa::violations(kernel, file.target)) {
        std::cout << "FAIL " << file.target << " " << kernel.name << ": " << why << "\n";
        status = 1;
      }
    }
  }
  std::cout << (status == 0 ? "ISA check passed" : "ISA check FAILED") << "\n";
  return status;
}
