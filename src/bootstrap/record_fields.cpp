#include "bootstrap/record_fields.hpp"

#include <unistd.h>

#include <sstream>

namespace asynctp::bootstrap {

std::map<std::string, std::string> parse_record(const std::string& record) {
  std::map<std::string, std::string> out;
  std::istringstream in(record);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace asynctp::bootstrap
