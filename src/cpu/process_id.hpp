// A process group's unique id (asynctp::cpu::UniqueId) and the names of the
// shared-memory segments it stands for: a control segment, and one data
// segment per workspace generation (the workspace grows by making a larger
// one, asynctp/cpu.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "asynctp/cpu.hpp"

namespace asynctp::cpu {

// A fresh id: a token unique to this host (pid and random bits).
UniqueId new_unique_id();

struct SegmentNames {
  std::string token;  // the id's token; part of every name (tests look for it)
  std::string control() const { return "/asynctp." + token + ".ctl"; }
  std::string data(std::uint32_t generation) const {
    return "/asynctp." + token + ".d" + std::to_string(generation);
  }
};

// The token of a segment whose file name (no leading '/') is one that
// SegmentNames makes; "" for any other name.
std::string segment_token(const std::string& file_name);

// The names `id` stands for. Throws Error(invalid_argument) naming `id` when
// its bytes were not made by make_unique_id.
SegmentNames segment_names(const UniqueId& id);

// The id whose token is `token` (what a rendezvous carries); throws as
// segment_names does when the token is malformed.
UniqueId unique_id_from_token(const std::string& token);

}  // namespace asynctp::cpu
