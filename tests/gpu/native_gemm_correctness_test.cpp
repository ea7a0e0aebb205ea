// The native sm_90a async-input GEMM against the float64 reference: every
// config of the build, both B layouts it was built for, 1 to 8 chunks, pivot
// first and last, non-square shapes with partial N tiles, every chunk ready
// before the launch (flags pre-set to the epoch in device memory). C starts
// poisoned, so an element the kernel never writes is caught; a guard region
// after C catches writes past its end.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "async_input_gemm.hpp"
#include "gpu/gpu_support.hpp"
#include "support/seed.hpp"

namespace {

namespace nat = asynctp::cuda::native;
using asynctp_test::Seed;
using namespace asynctp_test::gpu;

constexpr std::uint64_t kTimeoutNs = 5'000'000'000ull;  // reached only by a tile that waits on a flag its test left unset

struct Case {
  std::string config;  // native_gemm_configs() name
  bool b_col_major;
  int world_size;
};

// Built from the config table when the tests are registered; the table is
// host data only (no CUDA call), so this is safe on machines without a GPU.
std::vector<Case> correctness_cases() {
  std::vector<Case> cases;
  for (const nat::NativeGemmConfig& c : nat::native_gemm_configs()) {
    for (bool bcol : {false, true}) {
      if (bcol ? !c.has_b_col_major : !c.has_b_row_major) continue;
      for (int w : {1, 2, 4, 8}) cases.push_back({c.name, bcol, w});
    }
  }
  return cases;
}

// Readable parameter values in listings and failures (found by ADL).
void PrintTo(const Case& c, std::ostream* out) {
  *out << c.config << (c.b_col_major ? " B col" : " B row") << " W " << c.world_size;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return info.param.config + (info.param.b_col_major ? "_bcol" : "_brow") + "_W" +
         std::to_string(info.param.world_size);
}

// The chunk flags in device memory, one per value.
void upload_flags(DeviceBuffer& flags, const std::vector<std::uint32_t>& values) {
  CUDA_ASSERT(flags.alloc(sizeof(std::uint32_t) * values.size()));
  CUDA_ASSERT(cudaMemcpy(flags.p, values.data(), values.size() * sizeof(std::uint32_t),
                         cudaMemcpyHostToDevice));
}

// One launch of accepted arguments on `stream`, waited for (bounded).
void launch_and_wait(const nat::NativeGemmConfig& config, const nat::NativeGemmArgs& args,
                     cudaStream_t stream, const std::string& what) {
  CUDA_ASSERT(nat::launch(config, args, nullptr, stream));
  CUDA_ASSERT(wait_stream_bounded(stream, 30.0, what));
  CUDA_ASSERT(cudaGetLastError());
}

// Runs `config` on the problem with every chunk ready, once per pivot, and
// checks each result against float64.
void run_ready(const nat::NativeGemmConfig& config, const HostProblem& hp,
               const std::vector<int>& pivots, std::uint32_t epoch, int max_sms,
               const std::string& label) {
  DeviceProblem dp;
  ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
  DeviceBuffer flags;
  ASSERT_NO_FATAL_FAILURE(
      upload_flags(flags, std::vector<std::uint32_t>(static_cast<std::size_t>(hp.world_size), epoch)));
  Stream stream;
  CUDA_ASSERT(stream.create());
  bool first = true;
  for (int pivot : pivots) {
    const std::string what = label + " pivot " + std::to_string(pivot) +
                             (max_sms > 0 ? " max_sms " + std::to_string(max_sms) : "");
    SCOPED_TRACE(what);
    if (!first) {
      ASSERT_NO_FATAL_FAILURE(reset_output(hp, dp));
    }
    first = false;
    const nat::NativeGemmArgs args =
        make_args(hp, dp, pivot, flags.as<std::uint32_t>(), epoch, kTimeoutNs, max_sms);
    std::string reason;
    ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
    const int grid = nat::grid_size(config, args);
    EXPECT_GT(grid, 0);
    EXPECT_LE(grid, sm_count());
    if (max_sms > 0) {
      EXPECT_LE(grid, max_sms);
    }
    EXPECT_EQ(0u, nat::workspace_size(config, args));
    ASSERT_NO_FATAL_FAILURE(launch_and_wait(config, args, stream.s, what));
    ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, what + " grid " + std::to_string(grid)));
  }
}

std::string shape_label(const nat::NativeGemmConfig& config, const HostProblem& hp) {
  char buf[192];
  std::snprintf(buf, sizeof buf, "%s B %s W %d m_per_chunk %lld n %lld k %lld", config.name,
                hp.b_col_major ? "col" : "row", hp.world_size,
                static_cast<long long>(hp.m_per_chunk), static_cast<long long>(hp.n),
                static_cast<long long>(hp.k));
  return buf;
}

class NativeGemmCorrectness : public ::testing::TestWithParam<Case> {};

TEST_P(NativeGemmCorrectness, MatchesFloat64) {
  ASYNCTP_REQUIRE_SM90();
  const Case& cs = GetParam();
  const nat::NativeGemmConfig* config = nat::find_native_gemm_config(cs.config);
  ASSERT_NE(nullptr, config) << cs.config;
  const Seed seed;
  SCOPED_TRACE(seed.note());
  auto rng = seed.rng();
  // Twice the granularity for few chunks (several tile rows per chunk), the
  // granularity itself for many (chunk boundaries every cluster row).
  const std::int64_t mpc = config->m_granularity * (cs.world_size <= 2 ? 2 : 1);
  const std::int64_t n = random_multiple_of_8(rng, 264, 640);
  const std::int64_t k = random_multiple_of_8(rng, 136, 520);
  const std::uint32_t epoch = random_epoch(rng);
  const HostProblem hp(cs.world_size, mpc, n, k, cs.b_col_major, rng);
  std::set<int> pivots = {0, cs.world_size - 1};
  run_ready(*config, hp, {pivots.begin(), pivots.end()}, epoch, 0, shape_label(*config, hp));
}

INSTANTIATE_TEST_SUITE_P(AllConfigs, NativeGemmCorrectness,
                         ::testing::ValuesIn(correctness_cases()), case_name);

// More output tiles than SMs: the persistent CTAs each walk several tiles,
// across chunk boundaries. Each config, B layouts alternating.
TEST(NativeGemmLarge, MoreTilesThanSms) {
  ASYNCTP_REQUIRE_SM90();
  const int sms = sm_count();
  ASSERT_GT(sms, 0);
  int index = 0;
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    bool bcol = (index++ % 2) == 1;
    if (bcol ? !config.has_b_col_major : !config.has_b_row_major) bcol = !bcol;
    const Seed seed(config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    const int w = 8;
    const std::int64_t mpc = config.m_granularity;
    const std::int64_t tile_rows = w * mpc / config.tile_m;
    // At least two tiles per SM, the last N tile partial.
    const std::int64_t n_tiles = (2 * sms + tile_rows - 1) / tile_rows + 1;
    const std::int64_t n = (n_tiles - 1) * config.tile_n + 8 * (1 + int(rng() % 8));
    const std::int64_t k = random_multiple_of_8(rng, 136, 264);
    const HostProblem hp(w, mpc, n, k, bcol, rng);
    const std::int64_t tiles = tile_rows * ((n + config.tile_n - 1) / config.tile_n);
    ASSERT_GT(tiles, 2 * sms);
    std::printf("  %s: %lld tiles on %d SMs\n", config.name, static_cast<long long>(tiles), sms);
    const int pivot = static_cast<int>(rng() % w);
    ASSERT_NO_FATAL_FAILURE(
        run_ready(config, hp, {pivot}, random_epoch(rng), 0, shape_label(config, hp)));
  }
}

// A grid limited to 16 CTAs (max_sms): correct, and the grid respects it.
TEST(NativeGemmLarge, MaxSmsLimited) {
  ASYNCTP_REQUIRE_SM90();
  int index = 0;
  for (const nat::NativeGemmConfig& config : nat::native_gemm_configs()) {
    bool bcol = (index++ % 2) == 0;
    if (bcol ? !config.has_b_col_major : !config.has_b_row_major) bcol = !bcol;
    const Seed seed(config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    const int w = 4;
    const std::int64_t mpc = config.m_granularity;
    const std::int64_t n = 6 * config.tile_n + 8 * (1 + int(rng() % 8));
    const std::int64_t k = random_multiple_of_8(rng, 136, 264);
    const HostProblem hp(w, mpc, n, k, bcol, rng);
    ASSERT_NO_FATAL_FAILURE(run_ready(config, hp, {0, w - 1}, random_epoch(rng), 16,
                                      shape_label(config, hp)));
  }
}

// chunks_in_kernel: the kernel runs the first chunks in schedule order (from
// the pivot) and leaves the rest to the caller (the library tail). The
// left-out chunks' flags are never set, so a wait on them would time out
// (0.5 s) and show in the error words; their rows must stay poisoned, and
// every row the kernel runs must be right.
TEST(NativeGemmPartial, LeavesTheLastChunksToTheCaller) {
  ASYNCTP_REQUIRE_SM90();
  const int w = 4;
  for (const nat::NativeGemmConfig& config :
       nat::native_gemm_configs(nat::ChunkSync::acquire_input)) {
    const bool bcol = !config.has_b_row_major;
    const Seed seed(config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    const HostProblem hp(w, config.m_granularity, random_multiple_of_8(rng, 264, 640),
                         random_multiple_of_8(rng, 136, 264), bcol, rng);
    const std::uint32_t epoch = random_epoch(rng);
    for (int in_kernel : {1, w - 1}) {
      const int pivot = static_cast<int>(rng() % w);
      const std::string what = shape_label(config, hp) + " pivot " + std::to_string(pivot) +
                               " chunks_in_kernel " + std::to_string(in_kernel);
      SCOPED_TRACE(what);
      DeviceProblem dp;
      ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
      std::vector<std::uint32_t> flag_values(static_cast<std::size_t>(w), epoch - 1);
      std::vector<bool> in(static_cast<std::size_t>(w), false);
      for (int i = 0; i < in_kernel; ++i) {
        flag_values[static_cast<std::size_t>((pivot + i) % w)] = epoch;
        in[static_cast<std::size_t>((pivot + i) % w)] = true;
      }
      DeviceBuffer flags;
      ASSERT_NO_FATAL_FAILURE(upload_flags(flags, flag_values));
      nat::NativeGemmArgs args = make_args(hp, dp, pivot, flags.as<std::uint32_t>(), epoch,
                                           500'000'000ull);
      args.chunks_in_kernel = in_kernel;
      std::string reason;
      ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
      Stream stream;
      CUDA_ASSERT(stream.create());
      ASSERT_NO_FATAL_FAILURE(launch_and_wait(config, args, stream.s, what));

      asynctp_test::HostTensor c(asynctp::DType::bf16, hp.m(), hp.n);
      CUDA_ASSERT(cudaMemcpy(c.data(), dp.c.p, hp.c_bytes(), cudaMemcpyDeviceToHost));
      std::uint32_t err[3] = {1, 1, 1};
      CUDA_ASSERT(cudaMemcpy(err, dp.err.p, sizeof err, cudaMemcpyDeviceToHost));
      EXPECT_EQ(0u, err[0]) << "the kernel waited on a chunk left to the caller: "
                            << nat::native_gemm_error_message(err, 500'000'000ull);
      const double tol = asynctp::core::error_tolerance(asynctp::DType::bf16);
      const std::int64_t chunk_elements = hp.m_per_chunk * hp.n;
      for (int chunk = 0; chunk < w; ++chunk) {
        asynctp::TensorView rows = c.view();
        rows.data = static_cast<std::uint16_t*>(rows.data) + chunk * chunk_elements;
        rows.rows = hp.m_per_chunk;
        const auto from = hp.reference.begin() + chunk * chunk_elements;
        const std::vector<double> expected(from, from + chunk_elements);
        const auto cmp = asynctp::core::compare_to_reference(rows, expected);
        if (in[static_cast<std::size_t>(chunk)]) {
          EXPECT_EQ(0, cmp.unwritten) << "chunk " << chunk << ": rows the kernel left unwritten";
          EXPECT_LE(cmp.relative_frobenius_error, tol) << "chunk " << chunk;
        } else {
          EXPECT_EQ(chunk_elements, cmp.unwritten) << "chunk " << chunk
                                                   << " was left to the caller but written";
        }
      }
    }
  }
}

// a_local: the pivot's chunks read from a buffer of their own. Their rows in
// A are NaN, so a tile that still read them there would put NaN in C; every
// other row comes from A as before. Their flags hold the previous epoch: the
// band is an input, complete at launch, so a tile of it that waited on its
// flag would time out (error words). Every config, W 1, 2 and 4, the local
// band one chunk or two (the rank's chunk as signal pieces), pivot first and
// last; one band with a pivot whose band ends at the last chunk.
TEST(NativeGemmLocalRows, ReadsThePivotChunksFromTheirOwnBuffer) {
  ASYNCTP_REQUIRE_SM90();
  for (const nat::NativeGemmConfig& config :
       nat::native_gemm_configs(nat::ChunkSync::acquire_input)) {
    const bool bcol = !config.has_b_row_major;
    const Seed seed(config.name);
    SCOPED_TRACE(seed.note());
    auto rng = seed.rng();
    for (int w : {1, 2, 4}) {
      const HostProblem hp(w, config.m_granularity, random_multiple_of_8(rng, 264, 520),
                           random_multiple_of_8(rng, 136, 264), bcol, rng);
      const std::uint32_t epoch = random_epoch(rng);
      for (int local_chunks : {1, 2}) {
        if (local_chunks > w) continue;
        for (int pivot : {0, w - local_chunks}) {
          const std::string what = shape_label(config, hp) + " pivot " + std::to_string(pivot) +
                                   " local_chunks " + std::to_string(local_chunks);
          SCOPED_TRACE(what);
          DeviceProblem dp;
          ASSERT_NO_FATAL_FAILURE(upload(hp, dp));
          const std::size_t band = hp.chunk_bytes() * static_cast<std::size_t>(local_chunks);
          const std::size_t offset = hp.chunk_bytes() * static_cast<std::size_t>(pivot);
          DeviceBuffer local;
          CUDA_ASSERT(local.alloc(band));
          CUDA_ASSERT(cudaMemcpy(local.p, static_cast<const char*>(hp.a.data()) + offset, band,
                                 cudaMemcpyHostToDevice));
          CUDA_ASSERT(cudaMemset(static_cast<char*>(dp.a.p) + offset, 0xFF, band));  // NaN
          std::vector<std::uint32_t> flag_values(static_cast<std::size_t>(w), epoch);
          for (int i = 0; i < local_chunks; ++i) {
            flag_values[static_cast<std::size_t>(pivot + i)] = epoch - 1;
          }
          DeviceBuffer flags;
          ASSERT_NO_FATAL_FAILURE(upload_flags(flags, flag_values));
          nat::NativeGemmArgs args =
              make_args(hp, dp, pivot, flags.as<std::uint32_t>(), epoch, kTimeoutNs);
          args.a_local = local.p;
          args.local_chunks = local_chunks;
          std::string reason;
          ASSERT_TRUE(nat::can_implement(config, args, &reason)) << reason;
          Stream stream;
          CUDA_ASSERT(stream.create());
          ASSERT_NO_FATAL_FAILURE(launch_and_wait(config, args, stream.s, what));
          ASSERT_NO_FATAL_FAILURE(expect_correct(hp, dp, what));
        }
      }
    }
  }
}

}  // namespace
