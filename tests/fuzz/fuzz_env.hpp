// An environment made from fuzzer bytes: each entry is one byte choosing a
// variable from `names` (the ones the code under test reads), then its value
// up to the next newline. Unchosen variables are unset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace asynctp_fuzz {

class FuzzEnv {
 public:
  FuzzEnv(const std::uint8_t* data, std::size_t size, const std::vector<std::string>& names) {
    std::size_t i = 0;
    while (i < size && !names.empty()) {
      const std::string& name = names[data[i++] % names.size()];
      std::string value;
      while (i < size && data[i] != '\n') value.push_back(static_cast<char>(data[i++]));
      ++i;  // the newline
      values_[name] = value;
    }
  }

  asynctp::core::EnvLookup lookup() const {
    return [this](const char* name) -> std::optional<std::string> {
      const auto it = values_.find(name);
      if (it == values_.end()) return std::nullopt;
      return it->second;
    };
  }

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace asynctp_fuzz
