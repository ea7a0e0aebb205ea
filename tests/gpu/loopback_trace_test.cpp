// A traced call (Options::trace) on the CUDA loopback group records the
// device's timeline beside the host's enqueue, per rank:
//
//   LoopbackTrace/DeviceTimeline.HoldsEveryStep
//       W = 4 over Link::pcie, both ops x native, pipelined, decomposed: the
//       device call span on "device stream", starting no earlier than the
//       host's enqueue began; every peer chunk's two copies (copy out, copy
//       in) and its signal; the GEMM spans (native: the kernel; pipelined:
//       one per chunk on the two lanes; decomposed: one); for the
//       reduce-scatter the wait and the reduction; every step inside the
//       call. Native: one first-to-last-tile span per chunk with begin <=
//       end, lanes and start times in the scheduler's order (all-gather:
//       the rank's own chunk first; reduce-scatter: rank + 1 first, its own
//       last). The all-gather's native with a library tail: the kernel's
//       chunks stamped, the last chunk in schedule order a "tail GEMM"
//       span on lane 2 instead. The results are correct, and an untraced
//       call afterwards adds nothing to the trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "asynctp/trace.hpp"
#include "core/schedule.hpp"
#include "gpu/loopback_support.hpp"
#include "gpu/reduce_scatter_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

enum class Op { all_gather, reduce_scatter };

struct Case {
  Op op;
  Algorithm algorithm;
  NativeTail tail = NativeTail::kernel;  // all-gather native only
};

bool library_tail(const Case& c) {
  return c.op == Op::all_gather && c.algorithm == Algorithm::native &&
         c.tail == NativeTail::library;
}

std::string describe(const Case& c) {
  return std::string(c.op == Op::all_gather ? "all_gather_" : "reduce_scatter_") +
         to_string(c.algorithm) + (library_tail(c) ? "_library_tail" : "");
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (Op op : {Op::all_gather, Op::reduce_scatter}) {
    for (Algorithm a : {Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
      all.push_back({op, a});
    }
  }
  all.push_back({Op::all_gather, Algorithm::native, NativeTail::library});
  return all;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// "name c" or "name c piece j" (a chunk moved in signal pieces).
bool names_chunk(const std::string& name, const std::string& what, int chunk) {
  const std::string base = what + " " + std::to_string(chunk);
  return name == base || starts_with(name, base + " piece ");
}

class RankEvents {
 public:
  RankEvents(const std::vector<Trace::Event>& all, int rank) {
    for (const Trace::Event& e : all) {
      if (e.rank == rank) events_.push_back(e);
    }
  }
  // Events on `lane` named `what c` (or its pieces).
  std::vector<Trace::Event> chunk(const std::string& lane, const std::string& what, int c,
                                  bool instant) const {
    std::vector<Trace::Event> out;
    for (const Trace::Event& e : events_) {
      if (e.lane == lane && names_chunk(e.name, what, c) && (e.duration_us < 0) == instant) {
        out.push_back(e);
      }
    }
    return out;
  }
  std::vector<Trace::Event> on_lane_prefix(const std::string& prefix) const {
    std::vector<Trace::Event> out;
    for (const Trace::Event& e : events_) {
      if (starts_with(e.lane, prefix)) out.push_back(e);
    }
    return out;
  }
  const Trace::Event* named(const std::string& lane, const std::string& name) const {
    for (const Trace::Event& e : events_) {
      if (e.lane == lane && e.name == name) return &e;
    }
    return nullptr;
  }
  const Trace::Event* starting(const std::string& lane, const std::string& prefix) const {
    for (const Trace::Event& e : events_) {
      if (e.lane == lane && starts_with(e.name, prefix)) return &e;
    }
    return nullptr;
  }

 private:
  std::vector<Trace::Event> events_;
};

// The kernel's chunk order: all-gather from the rank's own chunk, wrapping;
// reduce-scatter the send order (rank + 1 first, its own last).
std::vector<int> scheduler_order(Op op, int world, int rank) {
  return op == Op::all_gather ? core::chunk_order(world, rank) : core::send_order(world, rank);
}

void expect_inside(const Trace::Event& e, const Trace::Event& call) {
  // Both ends come from the same event clock: exact up to rounding.
  EXPECT_GE(e.begin_us, call.begin_us - 1e-3) << e.name;
  EXPECT_LE(e.begin_us + std::max(0.0, e.duration_us), call.begin_us + call.duration_us + 1e-3)
      << e.name;
}

void check_rank(const Case& c, const std::vector<Trace::Event>& all, int world, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  const RankEvents ev(all, rank);
  const std::string op_name =
      c.op == Op::all_gather ? "all-gather + matmul" : "matmul + reduce-scatter";
  const Trace::Event* call = ev.named("device stream", op_name);
  ASSERT_NE(call, nullptr) << "no device call span";
  EXPECT_GT(call->duration_us, 0);
  const Trace::Event* host = ev.starting("host enqueue", "check, agree and enqueue");
  ASSERT_NE(host, nullptr);
  // The device's first mark was recorded during the enqueue: the alignment
  // never puts it earlier than the host time it was recorded at.
  EXPECT_GE(call->begin_us, host->begin_us);
  const Trace::Event* aligned = ev.named("device stream", "device clock aligned");
  ASSERT_NE(aligned, nullptr);
  const auto at = aligned->args_json.find("\"error_bound_us\": ");
  ASSERT_NE(at, std::string::npos) << aligned->args_json;
  const double bound = std::strtod(aligned->args_json.c_str() + at + 18, nullptr);
  EXPECT_GE(bound, 0);
  std::printf("  %s rank %d: device clock alignment error bound %.1f us\n", describe(c).c_str(),
              rank, bound);

  // The link: every peer chunk (all-gather) or partial (reduce-scatter).
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    SCOPED_TRACE("peer chunk " + std::to_string(peer));
    const bool ag = c.op == Op::all_gather;
    const auto out = ev.chunk(
        "device copy out", ag ? "to pinned host: chunk" : "to pinned host: partial", peer, false);
    const auto in = ev.chunk("device copy in",
                             ag ? "to gathered: chunk" : "to owner's slot: partial", peer, false);
    const auto signal =
        ev.chunk("device copy in", ag ? "signal chunk" : "signal partial", peer, true);
    ASSERT_FALSE(out.empty());
    ASSERT_EQ(out.size(), in.size());
    ASSERT_EQ(out.size(), signal.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      EXPECT_GE(out[i].duration_us, 0);
      EXPECT_GE(in[i].begin_us, out[i].begin_us + out[i].duration_us - 1e-3)
          << "a piece reached the gathered buffer before it was staged";
      EXPECT_GE(signal[i].begin_us, in[i].begin_us + in[i].duration_us - 1e-3)
          << "a signal before its copy ended";
      expect_inside(out[i], *call);
      expect_inside(in[i], *call);
      expect_inside(signal[i], *call);
    }
  }

  // The GEMMs.
  switch (c.algorithm) {
    case Algorithm::native: {
      const Trace::Event* kernel = ev.starting("device compute", "native GEMM ");
      ASSERT_NE(kernel, nullptr);
      expect_inside(*kernel, *call);
      const std::vector<Trace::Event> chunks = ev.on_lane_prefix("device tiles: chunk ");
      // A library tail takes the last chunk in schedule order: never stamped.
      const int in_kernel = library_tail(c) ? world - 1 : world;
      ASSERT_EQ(chunks.size(), static_cast<std::size_t>(in_kernel))
          << "one span per chunk the kernel runs";
      const std::vector<int> order = scheduler_order(c.op, world, rank);
      if (library_tail(c)) {
        const int last = order.back();
        const auto tail = ev.chunk("device lane 2", "tail GEMM chunk", last, false);
        ASSERT_EQ(tail.size(), 1u) << "the library tail's GEMM of chunk " << last;
        expect_inside(tail[0], *call);
      }
      double previous_start = -1e300;
      for (int i = 0; i < in_kernel; ++i) {
        const Trace::Event& e = chunks[static_cast<std::size_t>(i)];
        const int expected = order[static_cast<std::size_t>(i)];
        EXPECT_EQ(e.name, "chunk " + std::to_string(expected) + " tiles");
        EXPECT_GE(e.duration_us, 0) << "first tile start after last tile end";
        EXPECT_GE(e.begin_us, previous_start) << e.name << " started before an earlier chunk";
        previous_start = e.begin_us;
        // Anchored at the kernel's begin mark: inside the kernel's span.
        EXPECT_GE(e.begin_us, kernel->begin_us - 1e-3);
        EXPECT_LE(e.begin_us + e.duration_us, kernel->begin_us + kernel->duration_us + 1e-3);
      }
      break;
    }
    case Algorithm::pipelined:
      for (int chunk = 0; chunk < world; ++chunk) {
        const auto a = ev.chunk("device compute", "GEMM chunk", chunk, false);
        const auto b = ev.chunk("device lane 2", "GEMM chunk", chunk, false);
        ASSERT_EQ(a.size() + b.size(), 1u) << "chunk " << chunk;
        expect_inside(a.empty() ? b[0] : a[0], *call);
      }
      break;
    default: {
      const Trace::Event* gemm = ev.starting("device compute", "GEMM of the ");
      ASSERT_NE(gemm, nullptr);
      expect_inside(*gemm, *call);
    }
  }
  if (c.op == Op::reduce_scatter) {
    // The wait for the first slot, then the one pass, then (from two slots
    // on, as at W = 4) the reduction as the slots land; one of the two does
    // the work.
    const Trace::Event* reduce = ev.named("device compute", "reduce the partials");
    ASSERT_NE(reduce, nullptr);
    expect_inside(*reduce, *call);
    const Trace::Event* wait = ev.named("device compute", "wait for the peers' partials");
    ASSERT_NE(wait, nullptr);
    EXPECT_LE(wait->begin_us + wait->duration_us, reduce->begin_us + 1e-3);
    const Trace::Event* landed = ev.named("device compute", "reduce the partials as they land");
    ASSERT_NE(landed, nullptr);
    expect_inside(*landed, *call);
    EXPECT_LE(reduce->begin_us + reduce->duration_us, landed->begin_us + 1e-3);
  }
}

class LoopbackTrace : public ::testing::TestWithParam<Case> {};

TEST_P(LoopbackTrace, HoldsEveryStep) {
  ASYNCTP_REQUIRE_SM90();
  const Case& c = GetParam();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  constexpr int kWorld = 4;
  // Enough tiles per chunk (8 x 32 of 128 x 256) to fill the grid, each a
  // long K loop (about 18 us at 2048), so that a chunk's first tile, a wave
  // after the previous chunk's, starts after it even without a gate (the
  // reduce-scatter) and with the CTAs' launch staggered.
  constexpr std::int64_t kM = 1024, kN = 8192, kK = 2048;
  lb::print_case(seed, describe(c));

  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  Trace trace;
  Options options = lb::options_for(c.algorithm);
  if (c.op == Op::all_gather && c.algorithm == Algorithm::native) options.native_tail = c.tail;
  Options untraced = options;
  options.trace = &trace;

  std::function<RunInfo(Comm&, cudaStream_t, const Options&)> call;
  std::function<void()> expect_correct;
  std::unique_ptr<lb::LoopbackProblem> ag;
  std::unique_ptr<asynctp_test::gpu::DeviceRsProblem> rs;
  if (c.op == Op::all_gather) {
    ag = std::make_unique<lb::LoopbackProblem>(asynctp_test::make_shape(kWorld, kM, kN, kK), rng);
    ASSERT_NO_FATAL_FAILURE(ag->prepare());
    call = [&](Comm& comm, cudaStream_t s, const Options& o) { return ag->call(comm, o, s); };
    expect_correct = [&] { ag->expect_all_correct(); };
  } else {
    rs = std::make_unique<asynctp_test::gpu::DeviceRsProblem>(
        asynctp_test::rs_shape(kWorld, kM, kN, kK), rng);
    ASSERT_NO_FATAL_FAILURE(rs->prepare());
    call = [&](Comm& comm, cudaStream_t s, const Options& o) { return rs->call(comm, o, s); };
    expect_correct = [&] { rs->expect_all_correct(); };
  }

  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return call(comm, s, options); },
      describe(c) + " traced");
  lb::expect_all_ok(results, c.algorithm);
  ASSERT_NO_FATAL_FAILURE(expect_correct());
  const std::vector<Trace::Event> events = trace.events();
  for (int r = 0; r < kWorld; ++r) ASSERT_NO_FATAL_FAILURE(check_rank(c, events, kWorld, r));

  // Untraced: nothing more in the trace.
  lb::expect_all_ok(
      lb::run_ranks(
          group, streams, [&](Comm& comm, cudaStream_t s) { return call(comm, s, untraced); },
          describe(c) + " untraced"),
      c.algorithm);
  EXPECT_EQ(trace.events().size(), events.size());
}

INSTANTIATE_TEST_SUITE_P(DeviceTimeline, LoopbackTrace, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return describe(info.param);
                         });

}  // namespace
}  // namespace asynctp
