// The C ABI as a C caller meets it: only asynctp/c_api.h and the shared
// library. Status codes and last-error messages for bad arguments, the
// NCCL entry points of a build without NCCL, and real calls of both ops on a
// one-rank CPU multi-process communicator against a float64 reference.
#include "asynctp/c_api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

std::string last_error() { return asynctpGetLastError(); }

asynctpMatrix row_major(void* data, int64_t rows, int64_t cols) {
  asynctpMatrix m{};
  m.data = data;
  m.dtype = asynctpFp32;
  m.device_kind = asynctpCpu;
  m.rows = rows;
  m.cols = cols;
  m.row_stride = cols;
  m.col_stride = 1;
  return m;
}

std::vector<float> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> poisoned(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

// Relative Frobenius error of `got` (rows x cols, row-major) against a @ b
// computed in float64; infinite if any element is not finite (unwritten).
double relative_error(const std::vector<float>& got, const std::vector<float>& a,
                      const std::vector<float>& b, int64_t rows, int64_t k, int64_t cols) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p) ref += double(a[i * k + p]) * double(b[p * cols + j]);
      const double g = got[i * cols + j];
      if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
      diff += (g - ref) * (g - ref);
      norm += ref * ref;
    }
  }
  return std::sqrt(diff / norm);
}

// The fp32 output bound the library documents for one GEMM (README:
// relative Frobenius 1e-5 for fp32, accumulation in fp32).
constexpr double kFp32GemmBound = 1e-5;

// One rank's fp32 GEMM inputs (random, seeds `seed` and `seed` + 1) and
// its poisoned output, with their row-major C views.
struct RowMajorGemm {
  RowMajorGemm(int64_t m_in, int64_t k_in, int64_t n_in, unsigned seed)
      : m(m_in),
        k(k_in),
        n(n_in),
        a(random_values(m * k, seed)),
        b(random_values(k * n, seed + 1)),
        c(poisoned(m * n)),
        am(row_major(a.data(), m, k)),
        bm(row_major(b.data(), k, n)),
        cm(row_major(c.data(), m, n)) {}
  RowMajorGemm(const RowMajorGemm&) = delete;  // the views point into the vectors
  RowMajorGemm& operator=(const RowMajorGemm&) = delete;
  double error() const { return relative_error(c, a, b, m, k, n); }

  int64_t m, k, n;
  std::vector<float> a, b, c;
  asynctpMatrix am, bm, cm;
};

class OneRankCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    asynctpCpuUniqueId id;
    ASSERT_EQ(asynctpCpuGetUniqueId(&id), asynctpSuccess) << last_error();
    ASSERT_EQ(asynctpCpuCommInitRank(&comm_, 1, &id, 0, 2, 0), asynctpSuccess) << last_error();
    ASSERT_NE(comm_, nullptr);
  }
  void TearDown() override { EXPECT_EQ(asynctpCommDestroy(comm_), asynctpSuccess); }
  asynctpComm_t comm_ = nullptr;
};

TEST(CApi, NamesEveryResultCode) {
  EXPECT_STREQ(asynctpGetErrorString(asynctpSuccess), "success");
  EXPECT_STREQ(asynctpGetErrorString(asynctpInvalidArgument), "invalid_argument");
  EXPECT_STREQ(asynctpGetErrorString(asynctpUnsupported), "unsupported");
  EXPECT_STREQ(asynctpGetErrorString(asynctpTimeout), "timeout");
  EXPECT_STREQ(asynctpGetErrorString(asynctpMismatch), "mismatch");
  EXPECT_STREQ(asynctpGetErrorString(asynctpBackendError), "backend");
  EXPECT_STREQ(asynctpGetErrorString(asynctpInternalError), "internal");
  EXPECT_EQ(asynctpGetVersion(), ASYNCTP_C_API_VERSION);
}

TEST(CApi, NullPointersAreNamedAndClearedOnSuccess) {
  int rank = -1;
  EXPECT_EQ(asynctpCommRank(nullptr, &rank), asynctpInvalidArgument);
  EXPECT_NE(last_error().find("comm: is NULL"), std::string::npos) << last_error();
  EXPECT_EQ(rank, -1);
  EXPECT_EQ(asynctpCpuGetUniqueId(nullptr), asynctpInvalidArgument);
  EXPECT_NE(last_error().find("unique_id: must not be NULL"), std::string::npos) << last_error();
  asynctpComm_t comm = reinterpret_cast<asynctpComm_t>(&rank);  // must be overwritten
  EXPECT_EQ(asynctpCpuCommInitRank(&comm, 1, nullptr, 0, 0, 0), asynctpInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(last_error().find("unique_id"), std::string::npos) << last_error();
  EXPECT_EQ(asynctpSynchronize(nullptr), asynctpInvalidArgument);
  EXPECT_EQ(asynctpCommDestroy(nullptr), asynctpSuccess);
  EXPECT_EQ(last_error(), "");
}

TEST(CApi, RejectsRanksOutsideTheWorld) {
  asynctpCpuUniqueId id;
  ASSERT_EQ(asynctpCpuGetUniqueId(&id), asynctpSuccess) << last_error();
  asynctpComm_t comm = nullptr;
  EXPECT_EQ(asynctpCpuCommInitRank(&comm, 2, &id, 2, 0, 0), asynctpInvalidArgument);
  EXPECT_NE(last_error().find("rank: must be in [0, world_size = 2), got 2"), std::string::npos)
      << last_error();
  EXPECT_EQ(asynctpCpuCommInitRank(&comm, 0, &id, 0, 0, 0), asynctpInvalidArgument);
  EXPECT_NE(last_error().find("world_size: must be at least 1"), std::string::npos)
      << last_error();
  EXPECT_EQ(comm, nullptr);
}

TEST(CApi, NcclEntryPointsSayWhenTheBuildHasNoNccl) {
  if (asynctpHasNccl()) GTEST_SKIP() << "this build has the NCCL backend";
  asynctpNcclUniqueId id{};
  EXPECT_EQ(asynctpNcclGetUniqueId(&id), asynctpUnsupported);
  EXPECT_NE(last_error().find("built without the NCCL backend"), std::string::npos)
      << last_error();
  asynctpComm_t comm = nullptr;
  EXPECT_EQ(asynctpNcclCommInitRank(&comm, 1, &id, 0, 0), asynctpUnsupported);
  int dummy = 0;
  EXPECT_EQ(asynctpCommFromNccl(&comm, &dummy), asynctpUnsupported);
  EXPECT_EQ(comm, nullptr);
}

TEST_F(OneRankCpu, Queries) {
  int rank = -1, world = -1, kind = -1;
  const char* name = nullptr;
  ASSERT_EQ(asynctpCommRank(comm_, &rank), asynctpSuccess);
  ASSERT_EQ(asynctpCommWorldSize(comm_, &world), asynctpSuccess);
  ASSERT_EQ(asynctpCommBackend(comm_, &kind, &name), asynctpSuccess);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(world, 1);
  EXPECT_EQ(kind, asynctpCpu);
  ASSERT_NE(name, nullptr);
  EXPECT_NE(std::string(name), "");
  EXPECT_EQ(asynctpSynchronize(comm_), asynctpSuccess);
}

// bf16 by rounding a float's bits to nearest even (inputs here are finite).
uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

// The native path runs bf16 only; pipelined and decomposed take fp32 too.
TEST_F(OneRankCpu, AllGatherMatmulEveryAlgorithmMatchesFloat64) {
  const int64_t m = 24, k = 40, n = 16;
  struct Case {
    int algorithm;
    int dtype;
    double bound;  // README: one GEMM output, bf16 4e-3, fp32 1e-5
  };
  for (const Case& cs : {Case{asynctpAlgorithmNative, asynctpBf16, 4e-3},
                         Case{asynctpAlgorithmPipelined, asynctpFp32, kFp32GemmBound},
                         Case{asynctpAlgorithmDecomposed, asynctpFp32, kFp32GemmBound},
                         Case{asynctpAlgorithmPipelined, asynctpBf16, 4e-3}}) {
    auto a = random_values(m * k, 1), b = random_values(k * n, 2);
    auto c = poisoned(m * n), gathered = poisoned(m * k);
    const bool bf16 = cs.dtype == asynctpBf16;
    // bf16 storage: the values the reference sees are the rounded ones.
    std::vector<uint16_t> a16(m * k), b16(k * n), c16(m * n, 0x7fc1), g16(m * k, 0x7fc1);
    if (bf16) {
      for (std::size_t i = 0; i < a.size(); ++i) a[i] = from_bf16(a16[i] = to_bf16(a[i]));
      for (std::size_t i = 0; i < b.size(); ++i) b[i] = from_bf16(b16[i] = to_bf16(b[i]));
    }
    auto a_in = a, b_in = b;
    asynctpMatrix am = row_major(bf16 ? static_cast<void*>(a16.data()) : a_in.data(), m, k),
                  bm = row_major(bf16 ? static_cast<void*>(b16.data()) : b_in.data(), k, n),
                  cm = row_major(bf16 ? static_cast<void*>(c16.data()) : c.data(), m, n),
                  gm = row_major(bf16 ? static_cast<void*>(g16.data()) : gathered.data(), m, k);
    for (asynctpMatrix* x : {&am, &bm, &cm, &gm}) x->dtype = cs.dtype;
    asynctpOptions options{};
    options.algorithm = cs.algorithm;
    options.tile_m = 8;  // native tiles must not straddle chunks: m is a multiple
    options.tile_n = 8;
    asynctpRunInfo info{};
    ASSERT_EQ(asynctpFusedAllGatherMatmul(comm_, &am, &bm, &cm, &gm, &options, &info),
              asynctpSuccess)
        << last_error();
    EXPECT_EQ(info.algorithm, cs.algorithm);
    EXPECT_GT(std::string(info.reason).size(), 0u);
    if (bf16) {
      for (std::size_t i = 0; i < c.size(); ++i) c[i] = from_bf16(c16[i]);
      for (std::size_t i = 0; i < gathered.size(); ++i) gathered[i] = from_bf16(g16[i]);
    }
    EXPECT_LE(relative_error(c, a, b, m, k, n), cs.bound) << "algorithm " << cs.algorithm;
    EXPECT_EQ(gathered, a);  // a copy, bit for bit
  }
}

TEST_F(OneRankCpu, MatmulReduceScatterMatchesFloat64WithColumnMajorB) {
  const int64_t m = 32, k = 24, n = 20;
  const auto a = random_values(m * k, 3), b = random_values(k * n, 4);
  std::vector<float> b_col(k * n);  // the same B stored column-major
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) b_col[j * k + p] = b[p * n + j];
  auto out = poisoned(m * n);
  auto a_copy = a;
  asynctpMatrix am = row_major(a_copy.data(), m, k), om = row_major(out.data(), m, n);
  asynctpMatrix bm = row_major(b_col.data(), k, n);
  bm.row_stride = 1;
  bm.col_stride = k;
  asynctpRunInfo info{};
  ASSERT_EQ(asynctpFusedMatmulReduceScatter(comm_, &am, &bm, &om, nullptr, &info), asynctpSuccess)
      << last_error();
  // One rank: one partial, rounded once (the bound of one GEMM and a rounding).
  EXPECT_LE(relative_error(out, a, b, m, k, n), kFp32GemmBound + std::ldexp(1.0, -24));
}

// options.tune: under auto, the first calls of a problem measure each
// algorithm (their reasons say so), and off means the planner's choice.
TEST_F(OneRankCpu, TuneOptionMeasuresUnderAuto) {
  RowMajorGemm g(32, 16, 16, /*seed=*/9);
  asynctpOptions options{};
  options.algorithm = asynctpAlgorithmAuto;
  options.tile_m = 8;
  options.tile_n = 8;
  options.tune = asynctpTuneOff;
  asynctpRunInfo info{};
  ASSERT_EQ(asynctpFusedAllGatherMatmul(comm_, &g.am, &g.bm, &g.cm, nullptr, &options, &info),
            asynctpSuccess)
      << last_error();
  EXPECT_EQ(std::string(info.reason).find("measured choice"), std::string::npos) << info.reason;
  options.tune = asynctpTuneOn;
  ASSERT_EQ(asynctpFusedAllGatherMatmul(comm_, &g.am, &g.bm, &g.cm, nullptr, &options, &info),
            asynctpSuccess)
      << last_error();
  EXPECT_EQ(std::string(info.reason).rfind("measured choice: measuring ", 0), 0u) << info.reason;
  EXPECT_LE(g.error(), kFp32GemmBound);
}

TEST_F(OneRankCpu, PlanQueriesSayWhatWouldRunAndWriteNothing) {
  RowMajorGemm g(8, 8, 8, /*seed=*/5);
  asynctpOptions options{};
  options.algorithm = asynctpAlgorithmPipelined;
  asynctpRunInfo info{};
  ASSERT_EQ(asynctpPlanFusedAllGatherMatmul(comm_, &g.am, &g.bm, &g.cm, nullptr, &options, &info),
            asynctpSuccess)
      << last_error();
  EXPECT_EQ(info.algorithm, asynctpAlgorithmPipelined);
  EXPECT_GT(std::string(info.reason).size(), 0u);
  options.algorithm = asynctpAlgorithmDefault;
  ASSERT_EQ(asynctpPlanFusedMatmulReduceScatter(comm_, &g.am, &g.bm, &g.cm, &options, &info),
            asynctpSuccess)
      << last_error();
  EXPECT_GE(info.algorithm, asynctpAlgorithmNative);
  EXPECT_LE(info.algorithm, asynctpAlgorithmDecomposed);
  EXPECT_EQ(asynctpPlanFusedAllGatherMatmul(comm_, &g.am, &g.bm, &g.cm, nullptr, nullptr, nullptr),
            asynctpInvalidArgument);
  EXPECT_NE(last_error().find("info: must not be NULL"), std::string::npos) << last_error();
  for (float x : g.c) ASSERT_TRUE(std::isnan(x));
}

// Arguments that break a rule fail with the rule named and nothing written;
// the communicator stays usable.
TEST_F(OneRankCpu, BadArgumentsAreNamedAndWriteNothing) {
  RowMajorGemm g(8, 8, 8, /*seed=*/7);
  const asynctpMatrix &am = g.am, &bm = g.bm, &cm = g.cm;
  struct Case {
    std::string expect;
    asynctpResult_t code;
  };
  auto expect_failure = [&](const asynctpMatrix* a_arg, const asynctpMatrix* b_arg,
                            const asynctpOptions* options, const Case& want) {
    EXPECT_EQ(asynctpFusedAllGatherMatmul(comm_, a_arg, b_arg, &cm, nullptr, options, nullptr),
              want.code);
    EXPECT_NE(last_error().find(want.expect), std::string::npos)
        << "wanted '" << want.expect << "' in: " << last_error();
    for (float x : g.c) ASSERT_TRUE(std::isnan(x)) << "an output was written";
  };
  expect_failure(nullptr, &bm, nullptr, {"a_shard: must not be NULL", asynctpInvalidArgument});
  asynctpMatrix bad = am;
  bad.dtype = 7;
  expect_failure(&bad, &bm, nullptr, {"a_shard.dtype: must be asynctpBf16", asynctpInvalidArgument});
  bad = bm;
  bad.device_kind = 9;
  expect_failure(&am, &bad, nullptr, {"b.device_kind", asynctpInvalidArgument});
  asynctpOptions options{};
  options.algorithm = 12;
  expect_failure(&am, &bm, &options, {"options.algorithm", asynctpInvalidArgument});
  options.algorithm = asynctpAlgorithmDefault;
  options.tune = 3;
  expect_failure(&am, &bm, &options, {"options.tune", asynctpInvalidArgument});
  options.tune = asynctpTuneDefault;
  options.wait_timeout_ms = -5;
  expect_failure(&am, &bm, &options, {"options.wait_timeout_ms", asynctpInvalidArgument});
  // Rules the library itself checks: B's rows must be A's columns, one dtype.
  bad = bm;
  bad.rows = g.k - 1;
  expect_failure(&am, &bad, nullptr, {"b", asynctpInvalidArgument});
  bad = bm;
  bad.dtype = asynctpBf16;
  expect_failure(&am, &bad, nullptr, {"dtype", asynctpInvalidArgument});
  bad = am;
  bad.device_kind = asynctpCuda;
  EXPECT_NE(asynctpFusedAllGatherMatmul(comm_, &bad, &bm, &cm, nullptr, nullptr, nullptr),
            asynctpSuccess);
  for (float x : g.c) ASSERT_TRUE(std::isnan(x));

  // Still usable.
  ASSERT_EQ(asynctpFusedAllGatherMatmul(comm_, &am, &bm, &cm, nullptr, nullptr, nullptr),
            asynctpSuccess)
      << last_error();
  EXPECT_LE(g.error(), kFp32GemmBound);
}

TEST_F(OneRankCpu, RejectedCallLeavesTheCommunicatorUsable) {
  EXPECT_EQ(asynctpCommRejectCall(comm_, nullptr), asynctpInvalidArgument);
  ASSERT_EQ(asynctpCommRejectCall(comm_, "A_shard: must be on the CPU"), asynctpSuccess)
      << last_error();
  RowMajorGemm g(4, 4, 4, /*seed=*/9);
  ASSERT_EQ(asynctpFusedAllGatherMatmul(comm_, &g.am, &g.bm, &g.cm, nullptr, nullptr, nullptr),
            asynctpSuccess)
      << last_error();
  EXPECT_LE(g.error(), kFp32GemmBound);
}

}  // namespace
