// Bad input to fused_matmul_reduce_scatter through the collective. One
// rank's bad argument fails every rank (that rank with invalid_argument
// naming the argument and rule, the others with mismatch naming the rank)
// before anything is written on any rank; ranks that disagree on what the
// partials need (M, n, dtype, algorithm) all get a mismatch naming the
// field; uneven K-slices are no disagreement. Nothing hangs, and the group
// stays usable.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "support/bad_input_scenario.hpp"
#include "support/collective.hpp"
#include "support/host_tensor.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::HostTensor;
using asynctp_test::Outcome;
using asynctp_test::Seed;

constexpr int kWorld = 4;

// One rank's buffers, sized so a test may bend the views without leaving
// them.
struct RankBuffers {
  std::int64_t rows = 64, n = 24, k = 16;  // M = 64: 16 rows per rank
  DType dtype = DType::bf16;
  HostTensor a, b, out;
  asynctp_test::GuardedTensors guard;

  void allocate(std::mt19937_64& rng) {
    a = HostTensor(dtype, rows + 8, k + 8);
    b = HostTensor(dtype, k + 8, n + 8);
    out = HostTensor(dtype, rows, n + 8);
    a.fill_normal(rng);
    b.fill_normal(rng);
    out.fill_bytes(0xa5);
    guard.clear();
    for (const HostTensor* t : {&a, &b, &out}) guard.keep(*t);
  }
  TensorView a_view() const { return TensorView::row_major(a.view().data, dtype, rows, k); }
  TensorView b_view() const { return TensorView::row_major(b.view().data, dtype, k, n); }
  TensorView out_view() const {
    return TensorView::row_major(out.view().data, dtype, rows / kWorld, n);
  }
};

struct Scenario : asynctp_test::BadInputScenario<RankBuffers> {
  Scenario() : BadInputScenario(kWorld) {}
  std::function<void(int rank, TensorView& a, TensorView& b, TensorView& out, Options& o)> bend;

  std::vector<Outcome> run(cpu::Group& group, std::mt19937_64& rng) {
    return BadInputScenario::run(group, rng, [&](Comm& comm, const RankBuffers& buf, Options& o) {
      TensorView a = buf.a_view(), b = buf.b_view(), out = buf.out_view();
      if (bend) bend(comm.rank(), a, b, out, o);
      return fused_matmul_reduce_scatter(comm, a, b, out, o);
    });
  }
};

void expect_group_still_works(cpu::Group& group, std::mt19937_64& rng) {
  Scenario good;
  asynctp_test::expect_all_ok(good.run(group, rng));
}

TEST(ReduceScatterBadInput, EachKindOfBadArgumentOnOneRankFailsEveryRank) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  using Bend = std::function<void(TensorView&, TensorView&, TensorView&, Options&)>;
  const struct {
    const char* argument;
    const char* phrase;
    Bend bend;
  } cases[] = {
      {"a", "must be divisible by the world size (4)",
       [](auto& a, auto&, auto&, auto&) {
         a = TensorView::row_major(a.data, a.dtype, 66, a.cols);
       }},
      {"b", "rows must equal a's columns",
       [](auto&, auto& b, auto&, auto&) {
         b = TensorView::row_major(b.data, b.dtype, b.rows + 8, b.cols);
       }},
      {"out", "shape must be (M / world_size) x n = 16x24",
       [](auto&, auto&, auto& out, auto&) {
         out = TensorView::row_major(out.data, out.dtype, 15, out.cols);
       }},
      {"out", "dtype must equal a's (bf16), got fp32",
       [](auto&, auto&, auto& out, auto&) { out.dtype = DType::fp32; }},
      {"b", "dtype must equal a's (bf16), got fp16",
       [](auto&, auto& b, auto&, auto&) { b.dtype = DType::fp16; }},
      {"a", "fewer than 2^31 elements",
       [](auto& a, auto&, auto&, auto&) {
         a = TensorView::row_major(a.data, a.dtype, std::int64_t{1} << 20, 1 << 12);
       }},
      {"out", "must not overlap a", [](auto& a, auto&, auto& out, auto&) { out.data = a.data; }},
      {"a", "must not be null", [](auto& a, auto&, auto&, auto&) { a.data = nullptr; }},
      {"options.tile_m", "multiple of 8", [](auto&, auto&, auto&, auto& o) { o.tile_m = 12; }},
  };
  for (const auto& c : cases) {
    for (int bad_rank : {0, kWorld - 1}) {
      for (Algorithm algorithm : {Algorithm::automatic, Algorithm::native, Algorithm::decomposed}) {
        SCOPED_TRACE(std::string(c.argument) + " (" + c.phrase + ") on rank " +
                     std::to_string(bad_rank) + ", " + to_string(algorithm));
        Scenario s;
        for (Options& o : s.options) {
          o.algorithm = algorithm;
          o.tile_m = 16;
        }
        s.bend = [&](int rank, TensorView& a, TensorView& b, TensorView& out, Options& o) {
          if (rank == bad_rank) c.bend(a, b, out, o);
        };
        asynctp_test::expect_rejected_by(s.run(group, rng), bad_rank, c.argument, c.phrase);
        s.expect_everything_untouched();
      }
    }
  }
  expect_group_still_works(group, rng);
}

TEST(ReduceScatterBadInput, RanksThatDisagreeAllGetAMismatchNamingTheField) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  const struct {
    const char* what;
    const char* field;
    std::function<void(Scenario&)> setup;
  } cases[] = {
      {"M", "ranks disagree on a rows (M): rank 0 has 64, rank 1 has 48",
       [](Scenario& s) { s.ranks[1].rows = 48; }},
      {"n", "ranks disagree on b columns (n): rank 0 has 24, rank 3 has 16",
       [](Scenario& s) { s.ranks[3].n = 16; }},
      {"dtype", "ranks disagree on dtype: rank 0 has bf16, rank 2 has fp32",
       [](Scenario& s) { s.ranks[2].dtype = DType::fp32; }},
      {"forced algorithm", "ranks disagree on the algorithm",
       [](Scenario& s) {
         for (Options& o : s.options) o.algorithm = Algorithm::pipelined;
         s.options[3].algorithm = Algorithm::decomposed;
       }},
      // Forced algorithms that differ stay an error, with each one's reason
      // (auto on uneven K-slices agrees instead: reduce_scatter_uneven_k_auto_test).
      {"forced native beside forced decomposed",
       "rank 0: forced by options or ASYNCTP_ALGO; rank 2: forced by options or ASYNCTP_ALGO",
       [](Scenario& s) {
         for (Options& o : s.options) {
           o.algorithm = Algorithm::native;
           o.tile_m = 16;
         }
         s.options[2].algorithm = Algorithm::decomposed;
       }},
  };
  for (const auto& d : cases) {
    SCOPED_TRACE(d.what);
    Scenario s;
    d.setup(s);
    asynctp_test::expect_all_failed(s.run(group, rng), ErrorCode::mismatch, d.field);
    s.expect_everything_untouched();
  }
  expect_group_still_works(group, rng);
}

// A rank that calls the other op is a disagreement like any other.
TEST(ReduceScatterBadInput, ARankCallingTheOtherOpIsAMismatch) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  Scenario s;
  for (RankBuffers& r : s.ranks) r.allocate(rng);
  HostTensor c(DType::bf16, kWorld * 16, 24);
  c.fill_bytes(0x3c);
  const auto c0 = c.snapshot();
  const auto outcomes = asynctp_test::run_collective(group, [&](Comm& comm) {
    const int r = comm.rank();
    const RankBuffers& buf = s.ranks[static_cast<std::size_t>(r)];
    if (r == 1) {
      const TensorView shard = TensorView::row_major(buf.a.view().data, DType::bf16, 16, 16);
      return fused_all_gather_matmul(comm, shard, buf.b_view(), c.view(), nullptr, s.options[1]);
    }
    return fused_matmul_reduce_scatter(comm, buf.a_view(), buf.b_view(), buf.out_view(),
                                       s.options[static_cast<std::size_t>(r)]);
  });
  asynctp_test::expect_all_failed(outcomes, ErrorCode::mismatch,
                                  "ranks disagree on the operation: rank 0 has "
                                  "fused_matmul_reduce_scatter, rank 1 has "
                                  "fused_all_gather_matmul");
  s.expect_everything_untouched();
  EXPECT_TRUE(c.equals(c0));
  expect_group_still_works(group, rng);
}

// Uneven K-slices are each rank's own business: with a forced algorithm
// (or slices that plan alike) the call runs.
TEST(ReduceScatterBadInput, UnevenKSlicesAreNoDisagreement) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  Scenario s;
  s.ranks[1].k = 12;
  s.ranks[3].k = 8;
  for (Options& o : s.options) o.algorithm = Algorithm::pipelined;
  asynctp_test::expect_all_ok(s.run(group, rng));
}

}  // namespace
}  // namespace asynctp
