// The reduce-scatter's numerics, bit for bit: every partial is rounded to the
// output dtype once (to cross the link), the owner sums the W rounded
// partials in fp32 and rounds once. Integer inputs make every fp32 step
// exact except those roundings, so the expected output is computed exactly
// here and compared bitwise on every element, for every algorithm. The same
// data shows the check can tell this model from its neighbours: no rounding
// of the partials, or rounding after every addition (a ring that reduces in
// the output dtype), differ on many elements.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/dtype_convert.hpp"
#include "support/collective.hpp"
#include "support/reduce_scatter_problem.hpp"
#include "support/seed.hpp"

namespace asynctp {
namespace {

using asynctp_test::ReduceScatterProblem;
using asynctp_test::RsShape;
using asynctp_test::Seed;

float round_to(DType dtype, float x) {
  return dtype == DType::bf16 ? core::bf16_to_float(core::float_to_bf16(x))
                              : core::fp16_to_float(core::float_to_fp16(x));
}

// Fills a tensor with integers in [-limit, limit], exact in every dtype.
void fill_integers(asynctp_test::HostTensor& t, std::mt19937_64& rng, int limit) {
  std::uniform_int_distribution<int> pick(-limit, limit);
  const TensorView v = t.view();
  for (std::int64_t i = 0; i < v.rows; ++i) {
    for (std::int64_t j = 0; j < v.cols; ++j)
      core::store_from_float(v, i, j, static_cast<float>(pick(rng)));
  }
}

struct Models {
  std::vector<float> ours;       // round(sum_s round(P_s))
  std::vector<float> unrounded;  // round(sum_s P_s)
  std::vector<float> ring;       // round(round(round(P_0) + round(P_1)) + round(P_2)) ...
};

Models models(const ReduceScatterProblem& p, int rank) {
  const RsShape& s = p.shape();
  Models out;
  for (std::int64_t i = 0; i < s.m; ++i) {
    for (std::int64_t j = 0; j < s.n; ++j) {
      float sum_rounded = 0, ring = 0;
      std::int64_t exact = 0;
      for (int src = 0; src < s.world; ++src) {
        std::int64_t partial = 0;  // exact: integer products
        for (std::int64_t q = 0; q < s.k_of(src); ++q) {
          partial += static_cast<std::int64_t>(core::load_as_double(p.a(src), rank * s.m + i, q)) *
                     static_cast<std::int64_t>(core::load_as_double(p.b(src), q, j));
        }
        exact += partial;
        const float rounded = round_to(s.dtype, static_cast<float>(partial));
        sum_rounded += rounded;  // exact in fp32: integers below 2^24
        ring = src == 0 ? rounded : round_to(s.dtype, ring + rounded);
      }
      out.ours.push_back(round_to(s.dtype, sum_rounded));
      out.unrounded.push_back(round_to(s.dtype, static_cast<float>(exact)));
      out.ring.push_back(ring);
    }
  }
  return out;
}

class ReduceScatterRounding : public ::testing::TestWithParam<Algorithm> {};

TEST_P(ReduceScatterRounding, PartialsRoundedOnceSummedInFp32RoundedOnce) {
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  Options options;
  options.algorithm = GetParam();
  options.tile_m = 8;
  options.tile_n = 8;
  options.wait_timeout_ms = 10'000;
  // bf16 keeps 8 significant bits, fp16 11: partials of these integers need
  // rounding, and fp32 holds every partial and every sum exactly (below
  // 2^24). fp16's sums stay far below its largest value, 65504 (about 25
  // standard deviations of these sums).
  for (DType dtype : {DType::bf16, DType::fp16}) {
    SCOPED_TRACE(to_string(dtype));
    if (GetParam() == Algorithm::native && dtype != DType::bf16) continue;  // native is bf16
    const int limit = dtype == DType::bf16 ? 255 : 31;
    RsShape shape = asynctp_test::rs_shape(5, 16, 24, 8, dtype);
    shape.k = {8, 16, 8, 24, 8};
    cpu::Group group({shape.world, 2});
    ReduceScatterProblem problem(shape, rng);
    for (int r = 0; r < shape.world; ++r) {
      fill_integers(problem.a_tensor(r), rng, limit);
      fill_integers(problem.b_tensor(r), rng, limit);
    }
    problem.poison_outputs();
    const auto outcomes = asynctp_test::run_collective(
        group, [&](Comm& comm) { return problem.call(comm, options); });
    asynctp_test::expect_all_ok(outcomes);

    int unrounded_differs = 0, ring_differs = 0;
    for (int r = 0; r < shape.world; ++r) {
      const Models expected = models(problem, r);
      int wrong = 0;
      for (std::int64_t e = 0; e < shape.m * shape.n; ++e) {
        const float got =
            static_cast<float>(core::load_as_double(problem.out(r), e / shape.n, e % shape.n));
        const float want = expected.ours[static_cast<std::size_t>(e)];
        if (std::memcmp(&got, &want, sizeof got) != 0 && ++wrong <= 3) {
          ADD_FAILURE() << "rank " << r << " element " << e << ": got " << got << ", expected "
                        << want;
        }
        unrounded_differs += expected.unrounded[static_cast<std::size_t>(e)] != want;
        ring_differs += expected.ring[static_cast<std::size_t>(e)] != want;
      }
      EXPECT_EQ(wrong, 0) << "rank " << r;
    }
    // The data can tell the models apart (about a third of the elements).
    EXPECT_GT(unrounded_differs, 20);
    EXPECT_GT(ring_differs, 20);
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, ReduceScatterRounding,
                         ::testing::Values(Algorithm::native, Algorithm::pipelined,
                                           Algorithm::decomposed),
                         [](const ::testing::TestParamInfo<Algorithm>& info) {
                           return std::string(to_string(info.param));
                         });

}  // namespace
}  // namespace asynctp
