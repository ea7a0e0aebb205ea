// The measuring steps `asynctp run` and `asynctp bench` share, written once
// against the Backend interface: plan, one checked call, timed calls.
#pragma once

#include <string>
#include <vector>

#include "asynctp/options.hpp"
#include "backend.hpp"
#include "check.hpp"
#include "progress.hpp"

namespace asynctp::tool {

// What a call with `options` would run on rank 0, or on this process's first
// rank under a launcher (validates, runs nothing).
RunInfo plan_on_rank0(Backend& backend, const Options& options);

// Enqueues rank comm.rank()'s call on its tensors and stream; the caller
// waits (asynctp::synchronize).
RunInfo enqueue_call(Backend& backend, Comm& comm, Options options);

// One collective call on poisoned outputs, waited for, brought to the host
// and compared with the float64 references.
CheckResult checked_call(Backend& backend, const std::vector<RankData>& host,
                         const Options& options, const References& references);

struct Timed {
  std::vector<double> iteration_ms;  // the timed iterations, warmup dropped
  double median_ms = 0;
  RunInfo rank0;  // what rank 0's calls ran
};

// `warmup` untimed then `iters` timed collective calls (Backend::time_calls),
// with progress lines prefixed by `label`.
Timed timed_calls(Backend& backend, const Options& options, int warmup, int iters,
                  Progress& progress, const std::string& label);

double median(std::vector<double> values);

}  // namespace asynctp::tool
