// Bad input on the CUDA loopback backend. A bad argument on one rank must fail
// every rank before anything is enqueued (the rank itself with
// invalid_argument naming the argument and the rule, the others with mismatch
// naming the rank and the argument), leave every output poisoned, and leave
// the group usable.
//
//   LoopbackBadInput.OneBadArgumentOnOneRank
//       on rank 0 and on the last rank, with native and with pipelined:
//       a_shard in pageable host memory (claimed to be CUDA memory),
//       b a host tensor (device kind cpu), c_out claiming CUDA device 1,
//       a_shard and a_gathered_out misaligned by 2 bytes, c_out one row short.
//   LoopbackBadInput.RanksThatDisagree
//       one rank forcing another algorithm, one rank with another k: every
//       rank gets a mismatch naming what they disagree on; nothing written.
//   LoopbackBadInput.GroupConfig
//       world_size 0, link_gbps 0 and negative on Link::arrival: Error
//       (invalid_argument) naming the field; a device that does not exist:
//       Error, and unavailable_reason says why.
//   LoopbackBadInput.LastCallSpanWithoutACall
//       LoopbackGroup::last_call_ms before any call, and for a rank outside
//       [0, W): Error(invalid_argument) naming the rank.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gpu/loopback_support.hpp"

namespace asynctp {
namespace {

using asynctp_test::Seed;
using asynctp_test::loopback::LoopbackProblem;
using asynctp_test::loopback::RankResult;
using asynctp_test::loopback::RankStreams;
using cuda::Link;
using cuda::LoopbackGroup;
namespace lb = asynctp_test::loopback;

constexpr int kWorld = 4;

using Bend = std::function<void(int rank, TensorView& a, TensorView& b, TensorView& c,
                                TensorView& g, Options& options)>;

// Every rank calls with its own views/options after `bend`; gathered always.
std::vector<RankResult> run_bent(LoopbackGroup& group, const RankStreams& streams,
                                 const LoopbackProblem& problem, const Options& base,
                                 const Bend& bend, const std::string& what) {
  return lb::run_ranks(
      group, streams,
      [&](Comm& comm, cudaStream_t s) {
        const int r = comm.rank();
        TensorView a = problem.a(r), b = problem.b(r), c = problem.c(r), g = problem.g(r);
        Options options = base;
        options.stream = s;
        bend(r, a, b, c, g, options);
        return fused_all_gather_matmul(comm, a, b, c, &g, options);
      },
      what);
}

void expect_good_call(LoopbackGroup& group, const RankStreams& streams, LoopbackProblem& problem,
                      std::mt19937_64& rng) {
  SCOPED_TRACE("a good call afterwards");
  ASSERT_NO_FATAL_FAILURE(problem.refill(rng));
  ASSERT_NO_FATAL_FAILURE(problem.poison_outputs());
  const Options options = lb::options_for(Algorithm::native);
  const auto results = lb::run_ranks(
      group, streams, [&](Comm& comm, cudaStream_t s) { return problem.call(comm, options, s); },
      "good call");
  lb::expect_all_ok(results, Algorithm::native);
  ASSERT_NO_FATAL_FAILURE(problem.expect_all_correct());
}

TEST(LoopbackBadInput, OneBadArgumentOnOneRank) {
  ASYNCTP_REQUIRE_SM90();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(lb::loopback_shape(kWorld, 256, 264, 128), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  asynctp_test::FusedProblem& host = problem.host();

  using ViewBend =
      std::function<void(TensorView & a, TensorView & b, TensorView & c, TensorView & g)>;
  const struct {
    const char* argument;
    const char* phrase;  // the rule, in the message's words
    ViewBend bend;
  } cases[] = {
      {"a_shard", "memory",
       [&](TensorView& a, TensorView&, TensorView&, TensorView&) {
         // Pageable host memory, claimed to be on the group's GPU.
         a.data = host.a_tensor(0).data();
       }},
      {"b", "cpu", [&](TensorView&, TensorView& b, TensorView&, TensorView&) { b = host.b(0); }},
      {"c_out", "device",
       [](TensorView&, TensorView&, TensorView& c, TensorView&) { c.device.index = 1; }},
      {"a_shard", "16-byte aligned",
       [](TensorView& a, TensorView&, TensorView&, TensorView&) {
         a.data = static_cast<char*>(a.data) + 2;
       }},
      {"a_gathered_out", "16-byte aligned",
       [](TensorView&, TensorView&, TensorView&, TensorView& g) {
         g.data = static_cast<char*>(g.data) + 2;
       }},
      {"c_out", "shape",
       [](TensorView&, TensorView&, TensorView& c, TensorView&) {
         c = TensorView::row_major(c.data, c.dtype, c.rows - 1, c.cols, c.device);
       }},
  };
  for (Algorithm algorithm : {Algorithm::native, Algorithm::pipelined}) {
    for (const auto& bad : cases) {
      for (int bad_rank : {0, kWorld - 1}) {
        const std::string what = std::string(to_string(algorithm)) + ": " + bad.argument + " (" +
                                 bad.phrase + ") on rank " + std::to_string(bad_rank);
        SCOPED_TRACE(what);
        const auto results = run_bent(
            group, streams, problem, lb::options_for(algorithm),
            [&](int rank, TensorView& a, TensorView& b, TensorView& c, TensorView& g, Options&) {
              if (rank == bad_rank) bad.bend(a, b, c, g);
            },
            what);
        const RankResult& rejected = results[static_cast<std::size_t>(bad_rank)];
        ASSERT_FALSE(rejected.call_ok) << "the bad argument was accepted";
        EXPECT_EQ(ErrorCode::invalid_argument, rejected.code) << rejected.message;
        EXPECT_TRUE(lb::contains(rejected.message, std::string(bad.argument) + ":"))
            << rejected.message;
        EXPECT_TRUE(lb::contains(rejected.message, bad.phrase)) << rejected.message;
        for (int r = 0; r < kWorld; ++r) {
          if (r == bad_rank) continue;
          const RankResult& o = results[static_cast<std::size_t>(r)];
          ASSERT_FALSE(o.call_ok) << "rank " << r << " ran although rank " << bad_rank
                                  << " rejected its arguments";
          EXPECT_EQ(ErrorCode::mismatch, o.code) << "rank " << r << ": " << o.message;
          EXPECT_TRUE(lb::contains(o.message, "rank " + std::to_string(bad_rank)))
              << "rank " << r << ": " << o.message;
          EXPECT_TRUE(lb::contains(o.message, bad.argument)) << "rank " << r << ": " << o.message;
        }
        ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched(what));
      }
    }
  }
  ASSERT_NO_FATAL_FAILURE(expect_good_call(group, streams, problem, rng));
}

TEST(LoopbackBadInput, RanksThatDisagree) {
  ASYNCTP_REQUIRE_SM90();
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  LoopbackGroup group(lb::loopback_config(kWorld, Link::pcie));
  RankStreams streams;
  CUDA_ASSERT(streams.create(kWorld));
  LoopbackProblem problem(lb::loopback_shape(kWorld, 256, 264, 128), rng);
  ASSERT_NO_FATAL_FAILURE(problem.prepare());
  const struct {
    const char* what;
    const char* field;  // must appear in every rank's message
    Bend bend;
  } cases[] = {
      {"algorithm", "algorithm",
       [](int rank, TensorView&, TensorView&, TensorView&, TensorView&, Options& o) {
         o.algorithm = rank == 2 ? Algorithm::decomposed : Algorithm::pipelined;
       }},
      {"k", "(k)",
       [](int rank, TensorView& a, TensorView& b, TensorView&, TensorView& g, Options&) {
         if (rank != 1) return;
         // A smaller k, consistent on this rank: valid alone, not together.
         a = TensorView::row_major(a.data, a.dtype, a.rows, a.cols - 8, a.device);
         b = b.is_col_major()
                 ? TensorView::col_major(b.data, b.dtype, b.rows - 8, b.cols, b.device)
                 : TensorView::row_major(b.data, b.dtype, b.rows - 8, b.cols, b.device);
         g = TensorView::row_major(g.data, g.dtype, g.rows, g.cols - 8, g.device);
       }},
  };
  for (const auto& d : cases) {
    SCOPED_TRACE(d.what);
    const auto results =
        run_bent(group, streams, problem, lb::options_for(Algorithm::native), d.bend, d.what);
    for (int r = 0; r < kWorld; ++r) {
      const RankResult& o = results[static_cast<std::size_t>(r)];
      ASSERT_FALSE(o.call_ok) << "rank " << r << " ran although the ranks disagree";
      EXPECT_EQ(ErrorCode::mismatch, o.code) << "rank " << r << ": " << o.message;
      EXPECT_TRUE(lb::contains(o.message, "disagree")) << "rank " << r << ": " << o.message;
      EXPECT_TRUE(lb::contains(o.message, d.field)) << "rank " << r << ": " << o.message;
    }
    ASSERT_NO_FATAL_FAILURE(problem.expect_all_outputs_untouched(d.what));
  }
  ASSERT_NO_FATAL_FAILURE(expect_good_call(group, streams, problem, rng));
}

TEST(LoopbackBadInput, GroupConfig) {
  ASYNCTP_REQUIRE_SM90();
  const auto expect_invalid = [](const cuda::LoopbackConfig& config, const char* field) {
    try {
      LoopbackGroup group(config);
      ADD_FAILURE() << "accepted a config with a bad " << field;
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::invalid_argument, e.code()) << e.what();
      EXPECT_TRUE(lb::contains(e.what(), field)) << e.what();
    }
  };
  expect_invalid(lb::loopback_config(0, Link::pcie), "world_size");
  expect_invalid(lb::loopback_config(-2, Link::pcie), "world_size");
  expect_invalid(lb::loopback_config(2, Link::arrival, 0.0), "link_gbps");
  expect_invalid(lb::loopback_config(2, Link::arrival, -1.0), "link_gbps");

  int count = 0;
  CUDA_ASSERT(cudaGetDeviceCount(&count));
  const int missing = count + 100;
  EXPECT_NE("", cuda::unavailable_reason(missing));
  cuda::LoopbackConfig config = lb::loopback_config(2, Link::pcie);
  config.device = missing;
  try {
    LoopbackGroup group(config);
    ADD_FAILURE() << "made a group on CUDA device " << missing << " of " << count;
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::backend || e.code() == ErrorCode::invalid_argument)
        << e.what();
    EXPECT_TRUE(lb::contains(e.what(), "device")) << e.what();
  }
}

TEST(LoopbackBadInput, LastCallSpanWithoutACall) {
  ASYNCTP_REQUIRE_SM90();
  LoopbackGroup group(lb::loopback_config(2, Link::pcie));
  const auto expect_refused = [&](int rank, const char* says) {
    try {
      const double ms = group.last_call_ms(rank);
      ADD_FAILURE() << "rank " << rank << ": returned " << ms << " ms without a finished call";
    } catch (const Error& e) {
      EXPECT_EQ(ErrorCode::invalid_argument, e.code()) << e.what();
      EXPECT_TRUE(lb::contains(e.what(), says)) << e.what();
    }
  };
  expect_refused(0, "rank 0 has no uncaptured call");
  expect_refused(1, "rank 1 has no uncaptured call");
  expect_refused(2, "rank: must lie in [0, 2)");
  expect_refused(-1, "rank: must lie in [0, 2)");
}

}  // namespace
}  // namespace asynctp
