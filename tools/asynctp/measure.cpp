#include "measure.hpp"

#include <algorithm>
#include <cstdio>

#include "asynctp/ops.hpp"

namespace asynctp::tool {

RunInfo plan_on_rank0(Backend& backend, const Options& options) {
  const int rank = first_held_rank(backend);
  const RankViews v = backend.views(rank);
  return plan_fused_all_gather_matmul(backend.comm(rank), v.a_shard, v.b, v.c, &v.gathered,
                                      options);
}

RunInfo enqueue_call(Backend& backend, Comm& comm, Options options) {
  const RankViews v = backend.views(comm.rank());
  options.stream = backend.stream(comm.rank());
  return fused_all_gather_matmul(comm, v.a_shard, v.b, v.c, &v.gathered, options);
}

CheckResult checked_call(Backend& backend, const std::vector<RankData>& host,
                         const Options& options, const References& references) {
  backend.poison_outputs();
  backend.run([&](Comm& comm) {
    enqueue_call(backend, comm, options);
    synchronize(comm);
  });
  backend.fetch_outputs();
  return check_outputs(host, references);
}

Timed timed_calls(Backend& backend, const Options& options, int warmup, int iters,
                  Progress& progress, const std::string& label) {
  Timed out;
  const std::vector<double> ms = backend.time_calls(
      warmup + iters,
      [&](Comm& comm, int) {
        const RunInfo info = enqueue_call(backend, comm, options);
        if (comm.rank() == 0) out.rank0 = info;
        return info;
      },
      [&](int i, std::optional<double> last_ms) {
        std::string status = label;
        status += i < warmup
                      ? "warmup " + std::to_string(i + 1) + "/" + std::to_string(warmup)
                      : "iteration " + std::to_string(i - warmup + 1) + "/" + std::to_string(iters);
        if (last_ms) {
          char last[48];
          std::snprintf(last, sizeof last, ", last %.1f ms", *last_ms);
          status += last;
        }
        progress.set(status);
      });
  out.iteration_ms.assign(ms.begin() + warmup, ms.end());
  out.median_ms = median(out.iteration_ms);
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace asynctp::tool
