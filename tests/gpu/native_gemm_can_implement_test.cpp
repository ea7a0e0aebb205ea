// can_implement: the config table, valid arguments accepted, and each rule's
// rejection with a reason that names the rule; launch() and grid_size()
// refuse what can_implement rejects. can_implement asks the device first
// (sm_90), so these tests, like the others, need the GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>

#include "async_input_gemm.hpp"
#include "gpu/gpu_support.hpp"

namespace {

namespace nat = asynctp::cuda::native;
using namespace asynctp_test::gpu;

TEST(NativeGemmConfigs, TableIsConsistent) {
  ASYNCTP_REQUIRE_SM90();
  // Both sides: the all-gather's (the default) and the reduce-scatter's.
  for (const nat::ChunkSync sync : {nat::ChunkSync::acquire_input, nat::ChunkSync::release_output}) {
    const auto& configs = nat::native_gemm_configs(sync);
    ASSERT_FALSE(configs.empty());
    for (const nat::NativeGemmConfig& c : configs) {
      SCOPED_TRACE(c.name);
      ASSERT_NE(nullptr, c.name);
      EXPECT_EQ(&c, nat::find_native_gemm_config(c.name));
      EXPECT_EQ(sync, c.sync);
      EXPECT_EQ(c.tile_m * c.cluster_m, c.m_granularity);
      EXPECT_GE(c.swizzle, 1);
      EXPECT_TRUE(c.has_b_row_major && c.has_b_col_major);
    }
  }
  EXPECT_EQ(nullptr, nat::find_native_gemm_config("no_such_config"));
  const std::uint32_t ok[3] = {0, 0, 0};
  EXPECT_EQ("", nat::native_gemm_error_message(ok, 1000));
}

// Real (small) device buffers so the accepted arguments could run.
class NativeGemmCanImplement : public ::testing::Test {
 protected:
  void SetUp() override {
    ASYNCTP_REQUIRE_SM90();
    CUDA_ASSERT(a_.alloc(kM * kK * 2 + 64));
    CUDA_ASSERT(b_.alloc(kK * kN * 2 + 64));
    CUDA_ASSERT(c_.alloc(kM * kN * 2 + 64));
    CUDA_ASSERT(flags_.alloc(64));
    CUDA_ASSERT(err_.alloc(64));
  }

  // Arguments every config accepts: m_per_chunk 512 is a multiple of every
  // m_granularity of this build (checked).
  nat::NativeGemmArgs valid(const nat::NativeGemmConfig& c, bool bcol) const {
    nat::NativeGemmArgs a;
    a.a = a_.p;
    a.b = b_.p;
    a.b_col_major = bcol;
    a.c = c_.p;
    a.m_per_chunk = kM / kW;
    a.n = kN;
    a.k = kK;
    a.world_size = kW;
    a.pivot = kW - 1;
    a.chunk_flags = flags_.as<std::uint32_t>();
    a.epoch = 3;
    a.timeout_ns = 1'000'000;
    a.error_words = err_.as<std::uint32_t>();
    EXPECT_EQ(0, a.m_per_chunk % c.m_granularity) << c.name;
    return a;
  }

  static constexpr int kW = 2;
  static constexpr std::int64_t kM = 1024, kN = 264, kK = 136;
  DeviceBuffer a_, b_, c_, flags_, err_;
};

// Expects `args` rejected with a reason containing each of `needles`, and
// launch()/grid_size() refusing it.
void expect_rejected(const nat::NativeGemmConfig& c, const nat::NativeGemmArgs& args,
                     const std::string& rule, std::initializer_list<std::string> needles) {
  SCOPED_TRACE(rule);
  std::string reason;
  EXPECT_FALSE(nat::can_implement(c, args, &reason));
  EXPECT_FALSE(reason.empty());
  for (const std::string& needle : needles) {
    EXPECT_NE(std::string::npos, reason.find(needle))
        << "reason \"" << reason << "\" does not name \"" << needle << "\"";
  }
  EXPECT_FALSE(nat::can_implement(c, args));  // no reason pointer: same answer
  EXPECT_EQ(cudaErrorInvalidValue, nat::launch(c, args, nullptr, nullptr));
  EXPECT_EQ(0, nat::grid_size(c, args));
  std::printf("  %-32s %-22s -> %s\n", c.name, rule.c_str(), reason.c_str());
}

TEST_F(NativeGemmCanImplement, AcceptsValidArguments) {
  for (const nat::NativeGemmConfig& c : nat::native_gemm_configs()) {
    for (bool bcol : {false, true}) {
      if (bcol ? !c.has_b_col_major : !c.has_b_row_major) continue;
      SCOPED_TRACE(std::string(c.name) + (bcol ? " B col" : " B row"));
      std::string reason;
      const nat::NativeGemmArgs args = valid(c, bcol);
      EXPECT_TRUE(nat::can_implement(c, args, &reason)) << reason;
      EXPECT_GT(nat::grid_size(c, args), 0);
    }
    nat::NativeGemmArgs args = valid(c, !c.has_b_row_major);
    EXPECT_NE(nullptr, nat::choose_native_gemm_config(args));
  }
  CUDA_ASSERT(cudaGetLastError());
}

TEST_F(NativeGemmCanImplement, RejectsEachRule) {
  for (const nat::NativeGemmConfig& c : nat::native_gemm_configs()) {
    const bool bcol = !c.has_b_row_major;
    const nat::NativeGemmArgs ok = valid(c, bcol);
    ASSERT_TRUE(nat::can_implement(c, ok)) << c.name;
    const std::string gran = std::to_string(c.m_granularity);
    auto with = [&](const std::function<void(nat::NativeGemmArgs&)>& change) {
      nat::NativeGemmArgs a = ok;
      change(a);
      return a;
    };
    expect_rejected(c, with([&](auto& a) { a.m_per_chunk = c.m_granularity + c.m_granularity / 2; }),
                    "m_per_chunk % granularity", {"m_per_chunk", "multiple of " + gran});
    expect_rejected(c, with([&](auto& a) { a.m_per_chunk = c.m_granularity / 2; }),
                    "m_per_chunk < granularity", {"m_per_chunk", "multiple of " + gran});
    expect_rejected(c, with([](auto& a) { a.n = kN - 4; }), "n % 8", {"multiples of 8"});
    expect_rejected(c, with([](auto& a) { a.chunks_in_kernel = -1; }), "chunks_in_kernel < 0",
                    {"chunks_in_kernel"});
    expect_rejected(c, with([](auto& a) { a.chunks_in_kernel = a.world_size + 1; }),
                    "chunks_in_kernel > world_size", {"chunks_in_kernel", "world_size"});
    expect_rejected(c, with([](auto& a) { a.k = kK + 2; }), "k % 8", {"multiples of 8"});
    expect_rejected(c, with([&](auto& a) { a.a = static_cast<const char*>(a_.p) + 8; }),
                    "misaligned a", {"16-byte aligned"});
    expect_rejected(c, with([&](auto& a) { a.b = static_cast<const char*>(b_.p) + 2; }),
                    "misaligned b", {"16-byte aligned"});
    expect_rejected(c, with([&](auto& a) { a.c = static_cast<char*>(c_.p) + 4; }),
                    "misaligned c", {"16-byte aligned"});
    expect_rejected(c, with([](auto& a) { a.chunk_flags = nullptr; }), "null flags",
                    {"chunk_flags"});
    expect_rejected(c, with([](auto& a) { a.error_words = nullptr; }), "null error words",
                    {"error_words"});
    expect_rejected(c, with([](auto& a) { a.timeout_ns = 0; }), "zero timeout", {"timeout_ns"});
    expect_rejected(c, with([](auto& a) { a.pivot = kW; }), "pivot == world_size", {"pivot"});
    expect_rejected(c, with([](auto& a) { a.pivot = -1; }), "pivot < 0", {"pivot"});
    expect_rejected(c, with([](auto& a) { a.a = nullptr; }), "null a", {"must not be null"});
    expect_rejected(c, with([&](auto& a) {
                      a.a_local = static_cast<const char*>(a_.p) + 8;
                      a.local_chunks = 1;
                    }),
                    "misaligned a_local", {"a_local", "16-byte aligned"});
    expect_rejected(c, with([&](auto& a) { a.a_local = a_.p; }), "a_local, no local_chunks",
                    {"local_chunks"});
    expect_rejected(c, with([&](auto& a) {  // pivot is the last chunk: a band of 2 overruns
                      a.a_local = a_.p;
                      a.local_chunks = 2;
                    }),
                    "local band past the last chunk", {"local_chunks", "world_size - pivot"});
  }
  CUDA_ASSERT(cudaGetLastError());
}

}  // namespace
