// Runs a collective with one rank per child process, as the CPU process
// transport is used: the test forks W children, each makes its communicator
// with make_process_comm and runs `body`; what each rank reports comes back
// through a pipe, and so do the notes it sends while it runs (each on its
// way at once: a rank killed later has still told what it sent before).
// Checks a child makes with gtest's EXPECT_* are printed by
// the child and fail it (exit status 1). A run never hangs the test: after
// `limit_s` every child still running is killed and the test fails.
//
// The children are forked from the test process itself (no exec): the test
// binary's process has no thread of its own when it forks, and each child
// makes its own communicator, threads and all, after the fork.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/collective.hpp"

namespace asynctp_test {

struct RankReport {
  int rank = 0;
  bool exited = false;  // exited rather than killed by a signal
  int exit_code = -1;
  int signal = 0;         // the signal that ended it, if one did
  bool reported = false;  // the child sent its outcome
  Outcome outcome;        // what body returned, or the error it (or the setup) threw
  std::vector<std::string> notes;  // what the body sent with `note`, in order
  double seconds = 0;     // from the fork to the child's end, as the parent saw it
};

using RankBody = std::function<Outcome(asynctp::Comm& comm)>;
// Sends one note to the parent now.
using Note = std::function<void(const std::string& text)>;
using NotingRankBody = std::function<Outcome(asynctp::Comm& comm, const Note& note)>;

// Runs `body` on W = world child processes. Returns one report per rank.
std::vector<RankReport> run_process_ranks(int world, const asynctp::cpu::UniqueId& id,
                                          const RankBody& body,
                                          const asynctp::cpu::ProcessOptions& options = {},
                                          double limit_s = 30.0);

// Same, with a body that sends notes while it runs.
std::vector<RankReport> run_process_ranks(int world, const asynctp::cpu::UniqueId& id,
                                          const NotingRankBody& body,
                                          const asynctp::cpu::ProcessOptions& options = {},
                                          double limit_s = 30.0);

// Same, with a fresh id.
std::vector<RankReport> run_process_ranks(int world, const RankBody& body,
                                          const asynctp::cpu::ProcessOptions& options = {},
                                          double limit_s = 30.0);

// Every rank exited 0 (its checks passed) and reported success.
void expect_all_ranks_ok(const std::vector<RankReport>& reports);

// Entries of /dev/shm that belong to the group `id` names.
std::vector<std::string> leftover_segments(const asynctp::cpu::UniqueId& id);

}  // namespace asynctp_test
