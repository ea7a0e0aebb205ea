// Bad input through the collective. One rank's bad argument must fail every
// rank (the rank itself with invalid_argument naming the argument, the others
// with mismatch saying which rank rejected its arguments) before anything is
// written on any rank; ranks that disagree on what the gather needs (m, k,
// dtype, algorithm) all get a mismatch naming the field. None of it hangs,
// and the group stays usable.
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

// Per-rank buffers whose shapes each test may bend for one rank (the views
// are cut from tensors with room to spare, so bent views stay inside).
struct RankBuffers {
  std::int64_t m = 32, n = 24, k = 16;
  DType dtype = DType::bf16;
  HostTensor a, b, c, g;
  asynctp_test::GuardedTensors guard;

  void allocate(std::mt19937_64& rng) {
    a = HostTensor(dtype, m, k);
    b = HostTensor(dtype, k, n);
    c = HostTensor(dtype, kWorld * (m + 8), n + 8);
    g = HostTensor(dtype, kWorld * (m + 8), k + 8);
    a.fill_normal(rng);
    b.fill_normal(rng);
    c.fill_bytes(0xa5);
    g.fill_bytes(0x5a);
    guard.clear();
    for (const HostTensor* t : {&a, &b, &c, &g}) guard.keep(*t);
  }
  TensorView c_view() const { return TensorView::row_major(c.view().data, dtype, kWorld * m, n); }
  TensorView g_view() const { return TensorView::row_major(g.view().data, dtype, kWorld * m, k); }
};

struct Scenario : asynctp_test::BadInputScenario<RankBuffers> {
  Scenario() : BadInputScenario(kWorld) {}
  // Lets a test bend one rank's call (views or options) after allocation.
  std::function<void(int rank, TensorView& a, TensorView& b, TensorView& c, TensorView& g)> bend;

  std::vector<Outcome> run(cpu::Group& group, std::mt19937_64& rng) {
    return BadInputScenario::run(group, rng, [&](Comm& comm, const RankBuffers& buf, Options& o) {
      TensorView a = buf.a.view(), b = buf.b.view(), c = buf.c_view(), g = buf.g_view();
      if (bend) bend(comm.rank(), a, b, c, g);
      return fused_all_gather_matmul(comm, a, b, c, &g, o);
    });
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// After a rejected call, a good call on the same group must still work.
void expect_group_still_works(cpu::Group& group, std::mt19937_64& rng) {
  Scenario good;
  const auto outcomes = good.run(group, rng);
  asynctp_test::expect_all_ok(outcomes);
}

TEST(BadInput, OneRankWithAWrongOutputShapeFailsEveryRankAndWritesNothing) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  for (Algorithm algorithm :
       {Algorithm::automatic, Algorithm::native, Algorithm::pipelined, Algorithm::decomposed}) {
    SCOPED_TRACE(to_string(algorithm));
    Scenario s;
    for (Options& o : s.options) {
      o.algorithm = algorithm;
      o.tile_m = 16;
    }
    s.bend = [](int rank, TensorView&, TensorView&, TensorView& c, TensorView&) {
      if (rank == 2) c = TensorView::row_major(c.data, c.dtype, c.rows - 1, c.cols);
    };
    const auto outcomes = s.run(group, rng);
    ASSERT_FALSE(outcomes[2].ok);
    EXPECT_EQ(outcomes[2].code, ErrorCode::invalid_argument) << outcomes[2].message;
    EXPECT_TRUE(contains(outcomes[2].message, "c_out: shape must be")) << outcomes[2].message;
    for (int r : {0, 1, 3}) {
      const Outcome& o = outcomes[static_cast<std::size_t>(r)];
      ASSERT_FALSE(o.ok) << "rank " << r << " ran although rank 2 rejected its arguments";
      EXPECT_EQ(o.code, ErrorCode::mismatch) << o.message;
      EXPECT_TRUE(contains(o.message, "rank 2 rejected its arguments")) << o.message;
      EXPECT_TRUE(contains(o.message, "c_out")) << o.message;  // and why
    }
    s.expect_everything_untouched();
  }
  expect_group_still_works(group, rng);
}

TEST(BadInput, EachKindOfBadArgumentOnOneRank) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  using Bend = std::function<void(TensorView&, TensorView&, TensorView&, TensorView&, Options&)>;
  const struct {
    const char* argument;
    const char* phrase;
    Bend bend;
  } cases[] = {
      {"a_shard", "must not be null",
       [](auto& a, auto&, auto&, auto&, auto&) { a.data = nullptr; }},
      {"b", "rows must equal a_shard's columns",
       [](auto&, auto& b, auto&, auto&, auto&) {
         b = TensorView::row_major(b.data, b.dtype, b.rows - 8, b.cols);
       }},
      {"c_out", "dtype must equal",
       [](auto&, auto&, auto& c, auto&, auto&) { c.dtype = DType::fp16; }},
      {"a_gathered_out", "16-byte aligned",
       [](auto&, auto&, auto&, auto& g, auto&) { g.data = static_cast<char*>(g.data) + 2; }},
      {"a_gathered_out", "must not overlap c_out",
       [](auto&, auto&, auto& c, auto& g, auto&) { g.data = c.data; }},
      {"options.wait_timeout_ms", "positive integer",
       [](auto&, auto&, auto&, auto&, auto& o) { o.wait_timeout_ms = -1; }},
      {"options.tile_m", "multiple of 8",
       [](auto&, auto&, auto&, auto&, auto& o) { o.tile_m = 12; }},
  };
  for (const auto& c : cases) {
    for (int bad_rank : {0, kWorld - 1}) {
      SCOPED_TRACE(std::string(c.argument) + " (" + c.phrase + ") on rank " +
                   std::to_string(bad_rank));
      Scenario s;
      s.bend = [&](int rank, TensorView& a, TensorView& b, TensorView& cv, TensorView& g) {
        if (rank == bad_rank) c.bend(a, b, cv, g, s.options[static_cast<std::size_t>(rank)]);
      };
      asynctp_test::expect_rejected_by(s.run(group, rng), bad_rank, c.argument, c.phrase);
      s.expect_everything_untouched();
    }
  }
  expect_group_still_works(group, rng);
}

// Ranks whose calls are each valid but disagree with one another.
struct Disagreement {
  const char* what;
  const char* field;  // must appear in every rank's message
  std::function<void(Scenario&)> setup;
};

TEST(BadInput, RanksThatDisagreeAllGetAMismatchNamingTheField) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  cpu::Group group({kWorld, 2});
  const Disagreement cases[] = {
      {"m", "ranks disagree on a_shard rows (m): rank 0 has 32, rank 1 has 40",
       [](Scenario& s) { s.ranks[1].m = 40; }},
      {"k", "ranks disagree on a_shard columns (k): rank 0 has 16, rank 3 has 24",
       [](Scenario& s) { s.ranks[3].k = 24; }},
      {"dtype", "ranks disagree on dtype: rank 0 has bf16, rank 2 has fp16",
       [](Scenario& s) { s.ranks[2].dtype = DType::fp16; }},
      {"dtype fp32", "ranks disagree on dtype: rank 0 has bf16, rank 1 has fp32",
       [](Scenario& s) { s.ranks[1].dtype = DType::fp32; }},
      {"forced algorithm", "ranks disagree on the algorithm",
       [](Scenario& s) {
         for (Options& o : s.options) o.algorithm = Algorithm::pipelined;
         s.options[3].algorithm = Algorithm::decomposed;
       }},
      {"native tile", "ranks disagree on the algorithm: rank 0 has native (tile 16x",
       [](Scenario& s) {
         for (Options& o : s.options) {
           o.algorithm = Algorithm::native;
           o.tile_m = 16;
         }
         s.options[1].tile_m = 32;
       }},
  };
  for (const Disagreement& d : cases) {
    SCOPED_TRACE(d.what);
    Scenario s;
    d.setup(s);
    asynctp_test::expect_all_failed(s.run(group, rng), ErrorCode::mismatch, d.field);
    s.expect_everything_untouched();
  }
  expect_group_still_works(group, rng);
}

TEST(BadInput, GroupConfigAndCommRank) {
  const auto expect_invalid = [](auto make, const char* phrase) {
    try {
      make();
      ADD_FAILURE() << "accepted; expected " << phrase;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
      EXPECT_TRUE(contains(e.what(), phrase)) << e.what();
    }
  };
  expect_invalid([] { cpu::Group g({0, 2}); }, "world_size: must lie in [1, 1024], got 0");
  expect_invalid([] { cpu::Group g({-3, 2}); }, "world_size: must lie in [1, 1024], got -3");
  expect_invalid([] { cpu::Group g({1025, 2}); }, "world_size");
  expect_invalid([] { cpu::Group g({2, -1}); }, "gemm_workers_per_rank: must lie in [0, 256]");
  expect_invalid([] { cpu::Group g({2, 257}); }, "gemm_workers_per_rank");
  cpu::Group group({3, 2});
  expect_invalid([&] { group.comm(-1); }, "rank: must lie in [0, 3), got -1");
  expect_invalid([&] { group.comm(3); }, "rank: must lie in [0, 3), got 3");
  EXPECT_EQ(group.comm(2).rank(), 2);
}

}  // namespace
}  // namespace asynctp
