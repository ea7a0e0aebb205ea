// The op's problem of a run: its seed, whether its host tensors fit, its
// random inputs and, with --check, its float64 references.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <type_traits>

#include "asynctp/verify.hpp"
#include "commands.hpp"

namespace asynctp::tool {
namespace {

// NCCL's reduce-scatter keeps its running sums in the output dtype: a run
// over it (or a bench that measures it with the same problem) is checked
// against that looser bound.
verify::ProblemShape shape_of(const Args& args) {
  const bool over_nccl =
      std::find(args.links.begin(), args.links.end(), LinkChoice::nccl) != args.links.end();
  return {args.world_size,
          args.m_per_rank(),
          args.n,
          args.k,
          args.dtype,
          args.b_col_major,
          over_nccl ? verify::PartialSum::output_dtype : verify::PartialSum::fp32,
          args.gathered};
}

// fn(std::type_identity<the op's verify problem>): the one place an op's
// type is named, which -Wswitch points to when an op is added.
template <typename Fn>
auto with_problem_type(Op op, Fn&& fn) {
  switch (op) {
    case Op::all_gather_matmul:
      return fn(std::type_identity<verify::AllGatherMatmulProblem>{});
    case Op::matmul_reduce_scatter:
      return fn(std::type_identity<verify::MatmulReduceScatterProblem>{});
  }
  throw std::logic_error("unknown op");
}

}  // namespace

void settle_seed_and_memory(Args& args) {
  if (!args.seed_given) {
    // From the clock: nine digits, easy to retype and exact in every JSON
    // reader (doubles hold integers up to 2^53 only).
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    args.seed = static_cast<std::uint64_t>(
                    std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()) %
                1'000'000'000ull;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return;
  const double physical = static_cast<double>(pages) * static_cast<double>(page_size);
  const auto needed = static_cast<double>(with_problem_type(args.op, [&](auto type) {
    return decltype(type)::type::host_bytes(shape_of(args), args.check);
  }));
  if (needed > physical) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "this run needs %.1f GiB of host memory (inputs and outputs of %d ranks%s), "
                  "more than the machine's %.1f GiB",
                  needed / (1 << 30), args.world_size, args.check ? " and --check references" : "",
                  physical / (1 << 30));
    throw UsageError(std::string("-m/-n/-k/--world-size: ") + buf);
  }
}

std::unique_ptr<Problem> make_problem(const Args& args, Progress& progress) {
  progress.set("[setup] drawing random inputs for " + std::to_string(args.world_size) + " ranks");
  return with_problem_type(args.op, [&](auto type) -> std::unique_ptr<Problem> {
    return std::make_unique<typename decltype(type)::type>(shape_of(args), args.seed);
  });
}

void compute_references(Problem& problem, const Args& args, Progress& progress,
                        const std::function<bool(int)>& wanted) {
  if (!args.check) return;
  progress.set("[check] float64 reference GEMMs for " + std::to_string(args.world_size) + " ranks");
  problem.compute_references(wanted);
}

}  // namespace asynctp::tool
