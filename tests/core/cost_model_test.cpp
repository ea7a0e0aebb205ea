// The cost model and the planner's use of it, on synthetic tables whose
// answers follow from the model's structure (core/cost_model.hpp): where the
// link dominates an overlapping algorithm wins, where the work is tiny the
// fixed costs decide for decomposed, native only where it can run, every
// candidate predicted; and the table parser's errors name file, line and rule.
#include "core/cost_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <string>

#include "asynctp/error.hpp"
#include "core/cost_table.hpp"
#include "core/planner.hpp"
#include "support/plan_inputs.hpp"
#include "support/printers.hpp"

namespace asynctp::core {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ms3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// cuBLAS at 500 TFLOP/s for 32768 rows, 400 at 2048 and 250 at 256 (small
// per-chunk GEMMs run worse, as cuBLAS's do); the native config's 128x128
// tiles at 500 TFLOP/s over 132 SMs. Fixed costs: decomposed 10 us,
// pipelined 20 us + 5 us per chunk, native 40 us.
const char* kTable = R"(asynctp-cost-table 1
device Test GPU
source synthetic
status calibrated
sms 132
link pcie 50 2
link arrival - 0
reduce 3000
fixed all-gather-matmul native 40 0
fixed all-gather-matmul pipelined 20 5
fixed all-gather-matmul decomposed 10 0
fixed matmul-reduce-scatter native 40 0
fixed matmul-reduce-scatter pipelined 20 5
fixed matmul-reduce-scatter decomposed 10 0
gemm cublas row 2048 8192 8192 0.68719
gemm cublas row 32768 8192 8192 8.79609
gemm cublas row 256 8192 8192 0.13744
gemm cublas col 2048 8192 8192 0.68719
gemm tile128 row 16896 128 8192 0.0708669   # 132 tiles of 128x128: one wave
)";

CostTable table() { return parse_cost_table(kTable, "test-table"); }

NativeConfig config128() { return test_inputs::native_config("tile128", 128, 128, 128, 1.0, 132); }

using test_inputs::forced;
using test_inputs::problem;

BackendCaps caps(const CostTable* t, LinkFacts::Kind link, double gbps) {
  BackendCaps c;
  c.name = "testdev";
  c.native_supported = true;
  c.default_tile_m = 128;
  c.default_tile_n = 128;
  c.sm_count = 132;
  c.native_configs = {config128()};
  c.cost_table = t;
  c.link = {link, gbps};
  return c;
}

TEST(CostModel, LibraryGemmIsExactAtASampleAndBetweenItsNeighbours) {
  const CostTable t = table();
  EXPECT_DOUBLE_EQ(library_gemm_ms(t, Layout::row_major, 2048, 8192, 8192), 0.68719);
  const double mid = library_gemm_ms(t, Layout::row_major, 1024, 8192, 8192);
  // Between 256 rows (250 TFLOP/s) and 2048 rows (400): the time of 1024
  // rows at a rate between the two (flops per ms).
  const double flops = 2.0 * 1024 * 8192 * 8192;
  EXPECT_GT(mid, flops / 4e11);
  EXPECT_LT(mid, flops / 2.5e11);
}

TEST(CostModel, NativeTailIsTheLastChunksTilesAfterItsArrival) {
  // W = 2, m = 1024, n = 2112: 8 x 16.5 -> 8 x 17 = 136 tiles a chunk on 132
  // CTAs. Slow link: chunk 1 lands long after chunk 0's tiles are done, so
  // the call ends one arrival plus its tiles' waves later.
  const CostTable t = table();
  const NativeConfig c = config128();
  const ProblemDesc p = problem(OpKind::all_gather_matmul, 2, 1024, 2112, 8192);
  const LinkCost link{1.0, 0};  // 1 GB/s: 16.8 ms for the 16 MiB chunk
  const Prediction native = predict(p, Algorithm::native, t, link, &c);
  const double tile = native_wave_ms(t, c, Layout::row_major, 2048, 2112, 8192);
  const double arrival = 1024.0 * 8192 * 2 / 1e6;
  // Chunk 1's tiles 136..271 go to CTAs 4..131 and 0..7 (two on CTAs 4..7),
  // which have finished chunk 0 by then: two tile times after the arrival.
  EXPECT_NEAR(native.ms, arrival + 2 * tile + 0.040, 1e-9);
  EXPECT_NEAR(native.fixed_ms, 0.040, 1e-12);
  EXPECT_GT(native.exposed_ms, 0);
}

// The library tail: the grid runs the first W - 1 chunks; the last chunk's
// rows are one library GEMM once the chunk has landed and the grid is done,
// plus one chunk GEMM's launch (pipelined's per-chunk fixed cost, 5 us).
TEST(CostModel, ALibraryTailIsTheLastChunksGemmAfterItsArrival) {
  const CostTable t = table();
  const NativeConfig c = config128();
  const ProblemDesc p = problem(OpKind::all_gather_matmul, 2, 1024, 2112, 8192);
  const LinkCost link{1.0, 0};  // chunk 1 lands at 16.8 ms, long after chunk 0's tiles
  const Prediction lib = predict(p, Algorithm::native, t, link, &c, NativeTail::library);
  const double arrival = 1024.0 * 8192 * 2 / 1e6;
  const double last = library_gemm_ms(t, Layout::row_major, 1024, 2112, 8192);
  EXPECT_EQ(lib.tail, NativeTail::library);
  EXPECT_NEAR(lib.ms, arrival + last + 0.045, 1e-9);
  EXPECT_NEAR(lib.fixed_ms, 0.045, 1e-12);
  EXPECT_TRUE(contains(describe(lib), "the last chunk as a library GEMM")) << describe(lib);
  // One chunk (W = 1), a reduce-scatter, or no tail named: nothing to predict.
  EXPECT_THROW(predict(problem(OpKind::all_gather_matmul, 1, 1024, 2112, 8192), Algorithm::native,
                       t, link, &c, NativeTail::library),
               Error);
  EXPECT_THROW(predict(problem(OpKind::matmul_reduce_scatter, 2, 1024, 2112, 8192),
                       Algorithm::native, t, link, &c, NativeTail::library),
               Error);
  EXPECT_THROW(predict(p, Algorithm::native, t, link, &c, NativeTail::automatic), Error);
}

// Where the last chunk's tiles are few (W = 8, m 1024, n 256: 16 tiles of
// 128x128 per chunk on 132 SMs, each a whole K = 8192 loop, 71 us) and the
// grid is idle when it lands (100 GB/s: a chunk every 168 us), the library's
// GEMM of its rows (~12 us) wins: by 15 us over pipelined (its fixed costs)
// and 54 over the kernel's tail. (At 400 GB/s a chunk every 42 us would
// leave the previous chunk's tiles running when the last lands: that tail
// moves, it does not go.) Where the waves decide (compute-bound), the kernel
// keeps it. Forcing either is obeyed; a backend without the capability
// refuses a forced library tail.
TEST(CostModel, AutoHandsTheLastChunkToTheLibraryWhereItsTilesWouldIdleTheGpu) {
  const CostTable t = table();
  const ProblemDesc few = problem(OpKind::all_gather_matmul, 8, 1024, 256, 8192);
  BackendCaps able = caps(&t, LinkFacts::Kind::arrival, 100);
  able.native_library_tail = true;
  const Plan lib = plan(few, able, {});
  EXPECT_EQ(lib.algorithm, Algorithm::native) << lib.reason;
  EXPECT_EQ(lib.native_tail, NativeTail::library) << lib.reason;
  EXPECT_EQ(prediction_of(lib, Algorithm::native)->tail, NativeTail::library);
  EXPECT_TRUE(contains(lib.reason, "the last chunk in schedule order (rank 7's) as a library GEMM"))
      << lib.reason;
  // Without the capability the kernel keeps it, predicted slower.
  const Plan kernel = plan(few, caps(&t, LinkFacts::Kind::arrival, 100), forced(Algorithm::native));
  EXPECT_EQ(kernel.native_tail, NativeTail::kernel) << kernel.reason;
  const Prediction* kernel_native = prediction_of(kernel, Algorithm::native);
  ASSERT_NE(kernel_native, nullptr);
  EXPECT_GT(kernel_native->ms, prediction_of(lib, Algorithm::native)->ms);
  EXPECT_FALSE(contains(kernel.reason, "library GEMM")) << kernel.reason;

  // Compute-bound: the kernel keeps the last chunk.
  BackendCaps fast_link = able;
  fast_link.link.gbps = 400;
  const Plan waves = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192), fast_link, {});
  EXPECT_EQ(waves.algorithm, Algorithm::native) << waves.reason;
  EXPECT_EQ(waves.native_tail, NativeTail::kernel) << waves.reason;

  // Forced either way.
  ResolvedOptions in_kernel = forced(Algorithm::native);
  in_kernel.native_tail = NativeTail::kernel;
  EXPECT_EQ(plan(few, able, in_kernel).native_tail, NativeTail::kernel);
  ResolvedOptions to_library = forced(Algorithm::native);
  to_library.native_tail = NativeTail::library;
  const Plan forced_lib = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192), fast_link,
                               to_library);
  EXPECT_EQ(forced_lib.native_tail, NativeTail::library) << forced_lib.reason;
  EXPECT_TRUE(contains(forced_lib.reason, "as a library GEMM, forced")) << forced_lib.reason;
  try {
    plan(few, caps(&t, LinkFacts::Kind::arrival, 100), to_library);
    ADD_FAILURE() << "a forced library tail planned on a backend without one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_TRUE(contains(e.what(), "native_tail: library was forced")) << e.what();
    EXPECT_TRUE(contains(e.what(), "native kernel runs every chunk")) << e.what();
  }
  // A reduce-scatter has no awaited chunk: the setting does not apply.
  const Plan rs = plan(problem(OpKind::matmul_reduce_scatter, 8, 1024, 8192, 8192), able,
                       to_library);
  EXPECT_EQ(rs.native_tail, NativeTail::kernel) << rs.reason;
  // A seeded table is shown, not followed: the rules keep the kernel's tail.
  CostTable seeded = table();
  seeded.calibrated = false;
  BackendCaps shown = able;
  shown.cost_table = &seeded;
  EXPECT_EQ(plan(few, shown, forced(Algorithm::native)).native_tail, NativeTail::kernel);
}

TEST(CostModel, TransferBoundPicksAnOverlappingAlgorithm) {
  const CostTable t = table();
  // k = 1024 at 25 GB/s: seven 4 MiB chunks take ~1.2 ms, the GEMM ~0.6.
  const Plan p = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 1024),
                      caps(&t, LinkFacts::Kind::arrival, 25), {});
  ASSERT_EQ(p.predictions.size(), 3u);
  EXPECT_NE(p.algorithm, Algorithm::decomposed) << p.reason;
  const Prediction* chosen = prediction_of(p, p.algorithm);
  ASSERT_NE(chosen, nullptr);
  EXPECT_LT(chosen->ms, prediction_of(p, Algorithm::decomposed)->ms);
  EXPECT_TRUE(contains(p.reason, "least predicted time")) << p.reason;
  EXPECT_TRUE(contains(p.reason, "test-table")) << p.reason;
}

TEST(CostModel, ComputeBoundPicksNative) {
  const CostTable t = table();
  // 16384 x 8192 x 8192 at W = 8 over 400 GB/s: each 32 MiB chunk ~0.08 ms
  // against a ~4.5 ms GEMM; pipelined's 2048-row GEMMs run at 400 TFLOP/s
  // (~5.5 ms), decomposed waits for the gather first.
  const Plan p = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192),
                      caps(&t, LinkFacts::Kind::arrival, 400), {});
  EXPECT_EQ(p.algorithm, Algorithm::native) << p.reason;
  EXPECT_EQ(p.predictions.size(), 3u);
  EXPECT_EQ(prediction_of(p, Algorithm::native)->kernel, "tile128");
}

// A seeded table (put together from earlier runs, not measured in one) is
// shown beside the rules' choice, not followed: the same problem the
// calibrated table sends to an overlapping algorithm goes where the rules
// send it, with every prediction attached and the reason saying why.
TEST(CostModel, ASeededTableIsShownButTheRulesDecide) {
  CostTable seeded = table();
  seeded.calibrated = false;
  const CostTable calibrated = table();
  const ProblemDesc p = problem(OpKind::all_gather_matmul, 8, 2048, 8192, 1024);
  const Plan by_model = plan(p, caps(&calibrated, LinkFacts::Kind::arrival, 25), {});
  const Plan by_rules = plan(p, caps(nullptr, LinkFacts::Kind::arrival, 25), {});
  const Plan shown = plan(p, caps(&seeded, LinkFacts::Kind::arrival, 25), {});
  EXPECT_EQ(shown.algorithm, by_rules.algorithm) << shown.reason;
  EXPECT_EQ(shown.predictions.size(), 3u);
  for (const Prediction& q : by_model.predictions) {
    const Prediction* same = prediction_of(shown, q.algorithm);
    ASSERT_NE(same, nullptr) << to_string(q.algorithm);
    EXPECT_DOUBLE_EQ(same->ms, q.ms);
  }
  EXPECT_TRUE(contains(shown.reason, "is seeded, not calibrated; it predicts")) << shown.reason;
  EXPECT_FALSE(contains(shown.reason, "least predicted time")) << shown.reason;
  const CostTable parsed = parse_cost_table(
      [] {
        std::string text = kTable;
        text.replace(text.find("status calibrated"), 17, "status seeded");
        return text;
      }(),
      "seeded.txt");
  EXPECT_FALSE(parsed.calibrated);
  EXPECT_TRUE(table().calibrated);
}

TEST(CostModel, TinyProblemsPickDecomposed) {
  const CostTable t = table();
  // 128 rows per rank, n = k = 256: microseconds of GEMM and link, so the
  // fixed costs decide.
  const Plan p = plan(problem(OpKind::all_gather_matmul, 4, 128, 256, 256),
                      caps(&t, LinkFacts::Kind::arrival, 400), {});
  EXPECT_EQ(p.algorithm, Algorithm::decomposed) << p.reason;
  for (const Prediction& pr : p.predictions) EXPECT_GT(pr.ms, 0) << to_string(pr.algorithm);
}

TEST(CostModel, EveryCandidateIsPredictedAndPositive) {
  const CostTable t = table();
  for (const OpKind op : {OpKind::all_gather_matmul, OpKind::matmul_reduce_scatter}) {
    for (const double gbps : {10.0, 400.0, 1e6}) {
      const Plan p =
          plan(problem(op, 4, 1024, 4096, 2048), caps(&t, LinkFacts::Kind::arrival, gbps), {});
      ASSERT_EQ(p.predictions.size(), 3u) << op_name(op) << " " << gbps;
      for (const Prediction& pr : p.predictions) {
        EXPECT_GT(pr.ms, 0);
        EXPECT_GT(pr.gemm_ms, 0);
        EXPECT_GE(pr.exposed_ms, -1e-12);
        EXPECT_GE(pr.ms, pr.gemm_ms);
      }
      // The chosen one is the least, up to the tie margin.
      for (const Prediction& pr : p.predictions) {
        EXPECT_LE(prediction_of(p, p.algorithm)->ms, pr.ms / (1.0 - kPredictionTie) + 1e-12);
      }
    }
  }
}

TEST(CostModel, ReduceScatterLinkBoundPicksAnOverlappingAlgorithm) {
  const CostTable t = table();
  const Plan p = plan(problem(OpKind::matmul_reduce_scatter, 8, 1024, 8192, 1024),
                      caps(&t, LinkFacts::Kind::arrival, 50), {});
  EXPECT_NE(p.algorithm, Algorithm::decomposed) << p.reason;
  EXPECT_GT(prediction_of(p, Algorithm::decomposed)->reduce_ms, 0);
}

TEST(CostModel, NativeIsNeverChosenWhereItCannotRun) {
  const CostTable t = table();
  // fp16 and n not a multiple of 8: native blocked, whatever it would cost.
  for (const ProblemDesc& p : {problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192, DType::fp16),
                               problem(OpKind::all_gather_matmul, 8, 2048, 8190, 8192)}) {
    const Plan plan_ = plan(p, caps(&t, LinkFacts::Kind::arrival, 400), {});
    EXPECT_NE(plan_.algorithm, Algorithm::native) << plan_.reason;
    EXPECT_EQ(prediction_of(plan_, Algorithm::native), nullptr);
    EXPECT_EQ(plan_.predictions.size(), 2u);
    EXPECT_TRUE(contains(plan_.reason, "native unavailable")) << plan_.reason;
  }
  // Nothing can overlap: decomposed, by the rule, before any prediction.
  BackendCaps queue = caps(&t, LinkFacts::Kind::arrival, 25);
  queue.single_hardware_queue = true;
  EXPECT_EQ(plan(problem(OpKind::all_gather_matmul, 8, 2048, 1024, 1024), queue, {}).algorithm,
            Algorithm::decomposed);
}

TEST(CostModel, ForcedAlgorithmCarriesItsOwnPrediction) {
  const CostTable t = table();
  const Plan p = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192),
                      caps(&t, LinkFacts::Kind::pcie, 0), forced(Algorithm::pipelined));
  ASSERT_EQ(p.predictions.size(), 1u);
  EXPECT_EQ(p.predictions[0].algorithm, Algorithm::pipelined);
  EXPECT_GT(p.predictions[0].ms, 0);
}

TEST(CostModel, WithoutAModelTheRulesDecideAndSaySo) {
  const CostTable t = table();
  BackendCaps none = caps(nullptr, LinkFacts::Kind::arrival, 400);
  none.no_cost_table = "no table for testdev";
  const Plan p = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192), none, {});
  EXPECT_TRUE(p.predictions.empty());
  EXPECT_TRUE(contains(p.reason, "rules, no cost model: no table for testdev")) << p.reason;
  // A table without the transport's link: the rules, naming the link.
  const Plan nccl = plan(problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192),
                         caps(&t, LinkFacts::Kind::nccl, 0), {});
  EXPECT_TRUE(nccl.predictions.empty());
  EXPECT_TRUE(contains(nccl.reason, "has no 'nccl' link")) << nccl.reason;
  // One rank: decomposed by the rule, with or without a model.
  EXPECT_EQ(plan(problem(OpKind::all_gather_matmul, 1, 2048, 8192, 8192),
                 caps(&t, LinkFacts::Kind::arrival, 400), {})
                .algorithm,
            Algorithm::decomposed);
}

// The native config by predicted time. Two configs of one grid (132 CTAs,
// clusters of two tile rows, granularity 256): coop 128x256 and pp 128x128,
// each measured at one full wave (132 tiles) at K = 8192 at the TFLOP/s
// given; cuBLAS and the fixed costs as in kTable, but pipelined pays 10 us a
// chunk. The facts' per-tile efficiencies (the rules' chooser) stay fixed,
// so the rules pick coop 128x256 at both shapes below, whatever the table.
std::string config_table(double coop_tflops, double pp_tflops, const char* status = "calibrated",
                         const std::string& extra = "") {
  const auto wave_ms = [](std::int64_t n, double tflops) {
    return std::to_string(2.0 * 16896 * double(n) * 8192 / (tflops * 1e9));
  };
  std::string text = kTable;
  text.replace(text.find("status calibrated"), 17, std::string("status ") + status);
  text.replace(text.find("fixed all-gather-matmul pipelined 20 5"), 38,
               "fixed all-gather-matmul pipelined 20 10");
  return text + "gemm coop_128x256 row 16896 256 8192 " + wave_ms(256, coop_tflops) +
         "\ngemm pp_128x128 row 16896 128 8192 " + wave_ms(128, pp_tflops) + "\n" + extra;
}

NativeConfig fact(const char* name, std::int64_t tile_n, double efficiency) {
  NativeConfig c = config128();
  c.name = name;
  c.m_granularity = 256;
  c.tile_n = tile_n;
  c.efficiency = efficiency;
  return c;
}

BackendCaps two_configs(const CostTable* t, double gbps) {
  BackendCaps c = caps(t, LinkFacts::Kind::arrival, gbps);
  c.native_configs = {fact("coop_128x256", 256, 1.00), fact("pp_128x128", 128, 0.95)};
  return c;
}

// Transfer-bound: W = 8 chunks of 1024 x 8192 (16 MiB) at 100 GB/s, the
// last landing ~1.2 ms in, against ~0.3 ms of GEMM: what is left is the last
// chunk's tiles, 32 of 128x256 or 64 of 128x128, one per CTA.
ProblemDesc transfer_bound() { return problem(OpKind::all_gather_matmul, 8, 1024, 1024, 8192); }
constexpr double kTransferGbps = 100;
// Compute-bound: 16384 x 8192 x 8192 at 400 GB/s: the waves decide.
ProblemDesc compute_bound() { return problem(OpKind::all_gather_matmul, 8, 2048, 8192, 8192); }
constexpr double kComputeGbps = 400;

// The config the plan predicts native with (its kernel), and checks that it
// is the config whose prediction is the plan's.
std::string native_pick(const Plan& p) {
  const Prediction* native = prediction_of(p, Algorithm::native);
  if (native == nullptr) return "(native not predicted)";
  if (p.algorithm == Algorithm::native) {
    EXPECT_EQ(p.native_config, native->kernel) << p.reason;
  }
  return native->kernel;
}

double native_ms(const CostTable& t, const ProblemDesc& p, double gbps, const NativeConfig& c) {
  return predict(p, Algorithm::native, t, LinkCost{gbps, 0}, &c).ms;
}

TEST(ConfigChoice, TheTailPicksSmallerTilesWhereTheLinkIsSlowAndTheWavesElsewhere) {
  const CostTable t = parse_cost_table(config_table(500, 450), "configs.txt");
  const BackendCaps facts = two_configs(&t, kTransferGbps);
  // The rules' chooser scores waves only: coop 128x256 at both shapes.
  EXPECT_EQ(choose_native_config(transfer_bound(), facts.native_configs, 132)->name,
            "coop_128x256");
  EXPECT_EQ(choose_native_config(compute_bound(), facts.native_configs, 132)->name, "coop_128x256");

  const Plan slow = plan(transfer_bound(), facts, {});
  EXPECT_EQ(native_pick(slow), "pp_128x128") << slow.reason;
  // With its tail shortened native beats pipelined (with coop's tiles it
  // does not: ForcedTilesWinOverThePrediction).
  EXPECT_EQ(slow.algorithm, Algorithm::native) << slow.reason;
  const double pp = native_ms(t, transfer_bound(), kTransferGbps, facts.native_configs[1]);
  const double coop = native_ms(t, transfer_bound(), kTransferGbps, facts.native_configs[0]);
  EXPECT_LT(pp, coop * (1 - kPredictionTie));
  // Plan::predictions keeps native's best, and the reason names both.
  EXPECT_DOUBLE_EQ(prediction_of(slow, Algorithm::native)->ms, pp);
  EXPECT_TRUE(contains(slow.reason, "native config pp_128x128 predicted " + ms3(pp) +
                                        " ms against coop_128x256 " + ms3(coop)))
      << slow.reason;
  // Forcing native keeps the model's config.
  const Plan forced_native = plan(transfer_bound(), facts, forced(Algorithm::native));
  EXPECT_EQ(forced_native.native_config, "pp_128x128") << forced_native.reason;
  EXPECT_EQ(forced_native.tile_m, 256);
  EXPECT_EQ(forced_native.tile_n, 128);
  EXPECT_TRUE(contains(forced_native.reason, "native config pp_128x128 predicted"))
      << forced_native.reason;

  const Plan fast = plan(compute_bound(), two_configs(&t, kComputeGbps), {});
  EXPECT_EQ(fast.algorithm, Algorithm::native) << fast.reason;
  EXPECT_EQ(native_pick(fast), "coop_128x256") << fast.reason;
  EXPECT_TRUE(contains(fast.reason, "native config coop_128x256 predicted")) << fast.reason;
  EXPECT_TRUE(contains(fast.reason, "against pp_128x128")) << fast.reason;
}

TEST(ConfigChoice, TheTablesFiguresDecideSwappingThemSwapsThePick) {
  // 128x128 tiles slower than 128x256 ones (200 TFLOP/s): no tail to win.
  const CostTable slow_pp = parse_cost_table(config_table(500, 200), "slow-pp.txt");
  EXPECT_EQ(native_pick(plan(transfer_bound(), two_configs(&slow_pp, kTransferGbps), {})),
            "coop_128x256");
  // The compute-bound shape with the two configs' throughputs swapped.
  const CostTable swapped = parse_cost_table(config_table(450, 500), "swapped.txt");
  const Plan p = plan(compute_bound(), two_configs(&swapped, kComputeGbps), {});
  EXPECT_EQ(p.algorithm, Algorithm::native) << p.reason;
  EXPECT_EQ(native_pick(p), "pp_128x128") << p.reason;
}

TEST(ConfigChoice, WithinTheTieMarginTheRulesPickStays) {
  // pp 128x128 at 259 TFLOP/s: its tile ~4 % shorter than coop's, the call
  // under 1 % shorter.
  const CostTable t = parse_cost_table(config_table(500, 259), "tie.txt");
  const BackendCaps facts = two_configs(&t, kTransferGbps);
  const double pp = native_ms(t, transfer_bound(), kTransferGbps, facts.native_configs[1]);
  const double coop = native_ms(t, transfer_bound(), kTransferGbps, facts.native_configs[0]);
  ASSERT_LT(pp, coop);
  ASSERT_GE(pp, coop * (1 - kPredictionTie));
  const Plan p = plan(transfer_bound(), facts, {});
  EXPECT_EQ(native_pick(p), "coop_128x256") << p.reason;
  EXPECT_TRUE(contains(p.reason, "a tie, kept by wave efficiency")) << p.reason;
}

TEST(ConfigChoice, AConfigThatCannotRunIsNeverChosenThoughPredictedFastest) {
  // A third config, 128x64 at 2000 TFLOP/s: the fastest wherever it runs.
  const CostTable t =
      parse_cost_table(config_table(500, 450, "calibrated",
                                    "gemm fast_128x64 row 16896 64 8192 " +
                                        std::to_string(2.0 * 16896 * 64 * 8192 / 2e12) + "\n"),
                       "three.txt");
  const auto with_fast = [&](void (*limit)(NativeConfig&)) {
    BackendCaps c = two_configs(&t, kTransferGbps);
    c.native_configs.push_back(fact("fast_128x64", 64, 0.5));
    limit(c.native_configs.back());
    return native_pick(plan(transfer_bound(), c, {}));
  };
  EXPECT_EQ(with_fast([](NativeConfig&) {}), "fast_128x64");
  EXPECT_EQ(with_fast([](NativeConfig& c) { c.refusal = "not built for this B layout"; }),
            "pp_128x128");
  EXPECT_EQ(with_fast([](NativeConfig& c) { c.grid = 0; }), "pp_128x128");
  EXPECT_EQ(with_fast([](NativeConfig& c) { c.max_m = 4096; }), "pp_128x128");  // M is 8192
  // m per rank 1024 is not a multiple of 2048 rows: a tile would straddle chunks.
  EXPECT_EQ(with_fast([](NativeConfig& c) { c.m_granularity = 2048; }), "pp_128x128");
  // Where no config can run (fp16), native is unavailable, as without a model.
  ProblemDesc fp16 = transfer_bound();
  fp16.dtype = DType::fp16;
  const Plan none = plan(fp16, two_configs(&t, kTransferGbps), {});
  EXPECT_EQ(prediction_of(none, Algorithm::native), nullptr);
  EXPECT_TRUE(contains(none.reason, "native unavailable")) << none.reason;
}

TEST(ConfigChoice, WithoutACalibratedTableTheRulesPickTheConfig) {
  const CostTable seeded = parse_cost_table(config_table(500, 450, "seeded"), "seeded-configs.txt");
  const BackendCaps facts = two_configs(&seeded, kTransferGbps);
  const std::string rules = choose_native_config(transfer_bound(), facts.native_configs, 132)->name;
  ASSERT_EQ(rules, "coop_128x256");
  // Seeded: the predictions are shown with the rules' config.
  const Plan shown = plan(transfer_bound(), facts, {});
  EXPECT_EQ(native_pick(shown), rules) << shown.reason;
  EXPECT_FALSE(contains(shown.reason, "native config")) << shown.reason;
  // No table at all: the rules plan native with the rules' config.
  const Plan none = plan(transfer_bound(), two_configs(nullptr, kTransferGbps), {});
  EXPECT_EQ(none.algorithm, Algorithm::native) << none.reason;
  EXPECT_EQ(none.native_config, rules);
  EXPECT_EQ(plan(transfer_bound(), facts, forced(Algorithm::native)).native_config, rules);
}

TEST(ConfigChoice, ForcedTilesWinOverThePrediction) {
  const CostTable t = parse_cost_table(config_table(500, 450), "configs.txt");
  ResolvedOptions wide;
  wide.tile_m = 256;
  wide.tile_n = 256;
  const Plan p = plan(transfer_bound(), two_configs(&t, kTransferGbps), wide);
  EXPECT_EQ(native_pick(p), "coop_128x256") << p.reason;
  EXPECT_FALSE(contains(p.reason, "native config")) << p.reason;
  // Native with coop's longer tail is predicted slower than pipelined.
  EXPECT_EQ(p.algorithm, Algorithm::pipelined) << p.reason;
  ResolvedOptions narrow;
  narrow.tile_n = 128;
  EXPECT_EQ(native_pick(plan(compute_bound(), two_configs(&t, kComputeGbps), narrow)),
            "pp_128x128");
}

// A config built but never measured (efficiency 0), the only one whose
// 64-row tiles fit m per rank 64: forcing native runs it; auto picks native
// with it only from a calibrated table with its own samples; and where
// measured configs fit too, the rules keep to those.
TEST(ConfigChoice, AnUnmeasuredConfigIsForcedOrPickedFromItsSamplesOnly) {
  NativeConfig small = test_inputs::native_config("pp_64x128", 64, 64, 128, 0.0, 132);
  const ProblemDesc decode = problem(OpKind::all_gather_matmul, 8, 64, 8192, 8192);
  // As a backend reports them for `p`: the kernel refuses the 256-row configs
  // where m per rank is not a multiple of 256.
  const auto facts_for = [&](const ProblemDesc& p, const CostTable* t) {
    BackendCaps c = two_configs(t, kTransferGbps);
    for (NativeConfig& measured_config : c.native_configs) {
      if (p.m % measured_config.m_granularity) measured_config.refusal = "m_per_chunk";
    }
    c.native_configs.push_back(small);
    return c;
  };
  const auto facts = [&](const CostTable* t) { return facts_for(decode, t); };

  // Rules only (no table): not for auto, yes when forced.
  const Plan rules = plan(decode, facts(nullptr), {});
  EXPECT_NE(rules.algorithm, Algorithm::native) << rules.reason;
  EXPECT_TRUE(contains(rules.reason, "pp_64x128, the only one that fits, was never measured"))
      << rules.reason;
  const Plan forced_rules = plan(decode, facts(nullptr), forced(Algorithm::native));
  EXPECT_EQ(forced_rules.algorithm, Algorithm::native);
  EXPECT_EQ(forced_rules.native_config, "pp_64x128");
  EXPECT_EQ(forced_rules.tile_m, 64);

  // A calibrated table without its samples cannot predict it: still not for
  // auto, and no prediction is made up for it (forced or not).
  const CostTable without = parse_cost_table(config_table(500, 450), "no-samples.txt");
  EXPECT_FALSE(can_predict_native(without, small, Layout::row_major));
  EXPECT_THROW(native_wave_ms(without, small, Layout::row_major, 512, 8192, 8192), Error);
  const Plan blind = plan(decode, facts(&without), {});
  EXPECT_NE(blind.algorithm, Algorithm::native) << blind.reason;
  EXPECT_EQ(prediction_of(blind, Algorithm::native), nullptr) << blind.reason;
  EXPECT_TRUE(contains(blind.reason, "never measured")) << blind.reason;
  const Plan forced_blind = plan(decode, facts(&without), forced(Algorithm::native));
  EXPECT_EQ(forced_blind.native_config, "pp_64x128");
  EXPECT_EQ(prediction_of(forced_blind, Algorithm::native), nullptr);

  // With its samples (one wave of 132 tiles at 1000 TFLOP/s) it is predicted
  // and, that fast, chosen; the other layout still has none.
  const CostTable with = parse_cost_table(
      config_table(500, 450, "calibrated",
                   "gemm pp_64x128 row 8448 128 8192 " +
                       std::to_string(2.0 * 8448 * 128 * 8192 / 1e12) + "\n"),
      "samples.txt");
  EXPECT_TRUE(can_predict_native(with, small, Layout::row_major));
  EXPECT_FALSE(can_predict_native(with, small, Layout::col_major));
  const Plan picked = plan(decode, facts(&with), {});
  EXPECT_EQ(picked.algorithm, Algorithm::native) << picked.reason;
  EXPECT_EQ(native_pick(picked), "pp_64x128") << picked.reason;

  // m per rank 1024: the measured configs fit, and the rules choose among
  // them (the unmeasured one first in the list would not change that).
  BackendCaps wide = facts_for(transfer_bound(), nullptr);
  std::rotate(wide.native_configs.rbegin(), wide.native_configs.rbegin() + 1,
              wide.native_configs.rend());
  ASSERT_EQ(wide.native_configs.front().name, "pp_64x128");
  EXPECT_EQ(choose_native_config(transfer_bound(), wide.native_configs, 132)->name,
            "coop_128x256");
  EXPECT_EQ(plan(transfer_bound(), wide, {}).native_config, "coop_128x256");
}

void expect_parse_error(const std::string& text, const std::string& part) {
  try {
    (void)parse_cost_table(text, "bad.txt");
    ADD_FAILURE() << "parsed: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_TRUE(contains(e.what(), "bad.txt")) << e.what();
    EXPECT_TRUE(contains(e.what(), part)) << e.what();
  }
}

std::string without(const std::string& text, const std::string& line) {
  std::string out = text;
  out.erase(out.find(line), line.size());
  return out;
}

TEST(CostTable, ParseErrorsNameTheFileLineAndRule) {
  const std::string good = kTable;
  expect_parse_error("", "the first line must be 'asynctp-cost-table 1'");
  expect_parse_error("asynctp-cost-table 2\n", "format version 2");
  expect_parse_error(good + "gemm cublas row 0 8 8 1\n",
                     "line 20: gemm M must be a positive integer");
  expect_parse_error(good + "gemm cublas diag 8 8 8 1\n",
                     "line 20: gemm: B layout must be row or col");
  expect_parse_error(good + "gemm cublas row 8 8 8 -1\n", "gemm ms must be a positive number");
  expect_parse_error(good + "gemm cublas row 8 8 8\n", "expected 'gemm <kernel>");
  expect_parse_error(good + "speed 3\n", "unknown key 'speed'");
  expect_parse_error(good + "status guessed\n", "status must be 'calibrated' or 'seeded'");
  expect_parse_error(without(good, "status calibrated\n"), "no 'status' line");
  expect_parse_error(good + "link nvlink 5 0\n", "link must be pcie, arrival or nccl");
  expect_parse_error(good + "fixed all-gather-matmul fast 1 0\n", "algorithm must be native");
  expect_parse_error(without(good, "fixed matmul-reduce-scatter pipelined 20 5\n"),
                     "no 'fixed matmul-reduce-scatter pipelined' line");
  expect_parse_error(without(good, "gemm cublas col 2048 8192 8192 0.68719\n"),
                     "no 'gemm cublas col' line");
  expect_parse_error(without(good, "link pcie 50 2\n"), "no 'link pcie' line");
}

TEST(CostTable, TheEmbeddedTablesParseAndNameTheirDevice) {
  const std::vector<CostTable>& tables = builtin_cost_tables();
  ASSERT_FALSE(tables.empty());
  for (const CostTable& t : tables) {
    EXPECT_FALSE(t.device.empty());
    EXPECT_GT(t.sms, 0);
    EXPECT_TRUE(contains(t.origin, "data/cost/")) << t.origin;
  }
  const auto no_env = [](const char*) { return std::optional<std::string>(); };
  const CostTable* h200 = cost_table_for("NVIDIA H200", no_env);
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->sms, 132);
  EXPECT_EQ(cost_table_for("Some Other GPU", no_env), nullptr);
}

TEST(CostTable, TheEnvironmentNamesAFileThatReplacesTheEmbeddedOnes) {
  const std::string path = ::testing::TempDir() + "asynctp_cost_table_test.txt";
  std::ofstream(path) << kTable;
  const auto env = [&](const char* name) {
    return std::string(name) == "ASYNCTP_COST_TABLE" ? std::optional<std::string>(path)
                                                     : std::nullopt;
  };
  const CostTable* t = cost_table_for("NVIDIA H200", env);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->device, "Test GPU");
  std::remove(path.c_str());

  const auto missing = [](const char*) {
    return std::optional<std::string>("/nonexistent/asynctp-table.txt");
  };
  try {
    (void)cost_table_for("NVIDIA H200", missing);
    ADD_FAILURE() << "a missing table file was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "ASYNCTP_COST_TABLE")) << e.what();
    EXPECT_TRUE(contains(e.what(), "/nonexistent/asynctp-table.txt")) << e.what();
  }
}

}  // namespace
}  // namespace asynctp::core
