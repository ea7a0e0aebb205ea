#include "core/planner.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "asynctp/error.hpp"
#include "core/planner_model.hpp"
#include "core/validate.hpp"

namespace asynctp::core {
namespace {

constexpr std::int64_t kNativeDimMultiple = 8;  // 16-byte rows of bf16 for TMA

std::string num(std::int64_t v) { return std::to_string(v); }

// The finest-grained config: its granularity is the rule the planner states
// when no config fits.
const NativeConfig* finest(const std::vector<NativeConfig>& configs) {
  const NativeConfig* best = nullptr;
  for (const NativeConfig& c : configs) {
    if (!best || c.m_granularity < best->m_granularity) best = &c;
  }
  return best;
}

// Predicted throughput of a config, relative: the share of its waves' tile
// slots the problem fills, times its measured per-tile efficiency. One
// partial wave is measured against the processors, not the grid: a problem
// of fewer tiles than processors gets a grid of one CTA per tile, and the
// processors left idle are lost all the same (so of two one-wave configs,
// the one with more tiles wins). Ties go to the earlier config.
double predicted_score(const NativeConfig& c, const ProblemDesc& p, int processors) {
  const double m = double(p.gathered_rows());
  const std::int64_t tiles = (p.gathered_rows() / c.tile_m) * ((p.n + c.tile_n - 1) / c.tile_n);
  const std::int64_t waves = (tiles + c.grid - 1) / c.grid;
  const int slots = waves == 1 ? std::max(c.grid, processors) : c.grid;
  const double wave_eff =
      m * double(p.n) / (double(waves) * slots * double(c.tile_m) * double(c.tile_n));
  return measured(c) ? wave_eff * c.efficiency : wave_eff;
}

// Why overlapping would not pay with `c`: its output tiles would leave more
// than a quarter of the processors idle, or "".
std::string underfilled_reason(const NativeConfig& c, const ProblemDesc& p, int processors) {
  const std::int64_t tiles = (p.gathered_rows() / c.tile_m) * ((p.n + c.tile_n - 1) / c.tile_n);
  if (processors <= 0 || double(tiles) >= kMinNativeSmFill * processors) return "";
  return "the native kernel's " + num(tiles) + " output tiles of " + num(c.tile_m) + "x" +
         num(c.tile_n) + " would keep " + num(tiles) + " of the " + num(processors) +
         " SMs busy, under " + num(int(kMinNativeSmFill * 100)) +
         " %, and per-chunk GEMMs fewer still";
}

// Whether auto may offer `c` for `p` at all: the kernel accepts the shape,
// launches a grid, and the config is offered at this gathered M.
bool offered(const NativeConfig& c, const ProblemDesc& p) {
  if (!c.refusal.empty() || c.grid <= 0) return false;
  return c.max_m <= 0 || p.gathered_rows() <= c.max_m;
}

// Why native's last chunk cannot run as a library GEMM here, or "".
std::string no_library_tail(const ProblemDesc& p, const BackendCaps& caps) {
  if (p.op != OpKind::all_gather_matmul) return "only the all-gather's native kernel has one";
  if (p.world_size < 2) return "one rank's only chunk is the whole GEMM";
  if (!caps.native_library_tail) return "backend " + caps.name + "'s native kernel runs every chunk";
  return caps.library_gemm_unavailable_reason;
}

Plan made(Algorithm algorithm, std::int64_t tile_m, std::int64_t tile_n, std::string reason) {
  Plan plan;
  plan.algorithm = algorithm;
  plan.tile_m = tile_m;
  plan.tile_n = tile_n;
  plan.reason = std::move(reason);
  return plan;
}

struct Derived {
  BackendCaps caps;
  PlanModel model;                       // the cost model the facts allow (their table and link)
  const NativeConfig* config = nullptr;  // the native config planned with
  // Where the cost model chose `config`: its prediction against the
  // runner-up's, for the plan's reason; empty where the rules chose it.
  std::string config_choice;
  // Why auto may not pick native with `config` though it can run: nothing
  // measured says how fast it is (NativeConfig::efficiency); empty otherwise.
  std::string unmeasured_config;
  // Where native's last chunk may run (NativeTail), kernel first, and why
  // not as a library GEMM ("" where it can).
  std::vector<NativeTail> tails;
  std::string no_library_tail;
};

Plan decide(const ProblemDesc& problem, const Derived& derived, const ResolvedOptions& options);

// The native kernel the model predicts with: the planned config, or where
// the backend lists none (any tile runs, as on the CPU) the default tile.
NativeConfig model_config(const Derived& d, std::int64_t tile_m, std::int64_t tile_n) {
  if (d.config) return *d.config;
  NativeConfig c;
  c.name = "native";
  c.m_granularity = tile_m;
  c.tile_m = tile_m;
  c.tile_n = tile_n;
  return c;
}

// Turns the reported facts into the capabilities plan() decides from: the
// transport's peer access, the hardware queues, the native config (chosen
// here) and whether its tiles would fill the processors.
Derived derive(const ProblemDesc& problem, const BackendCaps& facts,
               const ResolvedOptions& options) {
  Derived d{facts, plan_model(facts), nullptr, {}, {}, {NativeTail::kernel}, {}};
  d.no_library_tail = no_library_tail(problem, facts);
  if (options.native_tail == NativeTail::library && d.no_library_tail.empty()) {
    d.tails = {NativeTail::library};
  } else if (options.native_tail == NativeTail::automatic && d.no_library_tail.empty()) {
    d.tails.push_back(NativeTail::library);
  }
  BackendCaps& caps = d.caps;
  if (!facts.no_peer_access.empty()) {
    caps.native_supported = false;
    caps.native_unsupported_reason = facts.no_peer_access;
    caps.no_overlap_reason = facts.no_peer_access;
  }
  if (facts.single_hardware_queue && caps.no_overlap_reason.empty()) {
    caps.no_overlap_reason =
        "CUDA_DEVICE_MAX_CONNECTIONS=1 puts every stream in one hardware queue, so the copies "
        "run before or after the GEMM, never beside it";
  }
  if (!caps.native_supported || facts.native_configs.empty()) return d;

  const std::vector<NativeConfig>& configs = facts.native_configs;
  const NativeConfig* config = nullptr;
  if (options.tile_m || options.tile_n) {
    for (const NativeConfig& c : configs) {
      if (options.tile_m && c.m_granularity != *options.tile_m) continue;
      if (options.tile_n && c.tile_n != *options.tile_n) continue;
      config = &c;
      break;
    }
    if (!config) {
      std::string offered;
      for (const NativeConfig& c : configs) {
        offered += (offered.empty() ? "" : ", ") + num(c.m_granularity) + "x" + num(c.tile_n);
      }
      caps.native_supported = false;
      caps.native_unsupported_reason = "no native kernel config has tile M (granularity) x N = " +
                                       (options.tile_m ? num(*options.tile_m) : "any") + "x" +
                                       (options.tile_n ? num(*options.tile_n) : "any") +
                                       "; built: " + offered;
      return d;
    }
  } else {
    // The rules' pick (wave efficiency), replaced by the cost model's
    // fastest config where the model decides.
    config = choose_native_config(problem, configs, facts.sm_count);
    const PlanModel& model = d.model;
    if (model.decides(problem)) {
      const auto can_run = [&](const NativeConfig& c) {
        return offered(c, problem) &&
               can_predict_native(*model.table, c, problem.b_layout) &&
               !native_blocker(problem, caps, c.m_granularity, c.tile_n);
      };
      ConfigChoice choice =
          fastest_native_config(problem, configs, model, config, can_run, d.tails);
      if (choice.config) {
        config = choice.config;
        d.config_choice = std::move(choice.why);
      }
    }
  }
  const NativeConfig* rule = config ? config : finest(configs);
  caps.default_tile_m = rule->m_granularity;
  caps.default_tile_n = rule->tile_n;
  if (config && problem.dtype == DType::bf16) {
    if (config->refusal.empty()) {
      d.config = config;
      if (!(d.model.decides(problem) ? can_predict_native(*d.model.table, *config, problem.b_layout)
                                     : measured(*config))) {
        d.unmeasured_config =
            "its config " + config->name +
            ", the only one that fits, was never measured: auto picks it only from a "
            "calibrated cost table with its samples (scripts/device/calibrate.sh); force "
            "native to run it";
      }
      if (caps.overlap_unprofitable_reason.empty()) {
        caps.overlap_unprofitable_reason = underfilled_reason(*config, problem, facts.sm_count);
      }
    } else if (problem.m % config->m_granularity == 0 && problem.n % 8 == 0 && problem.k % 8 == 0) {
      // The planner's own rules pass but the kernel still refuses: say so.
      caps.native_supported = false;
      caps.native_unsupported_reason = config->refusal;
    }
  }
  return d;
}

// The words the planner's reasons use for each op; its rules are the same.
struct OpWords {
  std::string chunk_rows;    // what a chunk's rows are, with their count
  const char* too_large;     // the tensor the 32-bit limit is about
  const char* overlapped;    // what pipelined's per-chunk GEMMs overlap
  const char* native_extra;  // what native adds to one rank's GEMM
};

OpWords words(const ProblemDesc& problem) {
  if (problem.op == OpKind::matmul_reduce_scatter) {
    return {"rows per chunk (M/W = " + num(problem.m) + ")",
            "the partial product (M x n) or A needs 2^31 or more elements (32-bit indexing)",
            "the shipping of finished partials", "signals and its reduction pass"};
  }
  return {"m per rank (" + num(problem.m) + ")",
          "the gathered problem needs 2^31 or more elements per tensor (32-bit indexing)",
          "the copies", "local copy and signals"};
}

// Where a native all-gather's last chunk runs: as forced, else the cost
// model's pick where it decides (its native prediction's tail), else in the
// kernel (the rules know no library tail's cost).
void settle_tail(const ProblemDesc& problem, const Derived& d, const ResolvedOptions& options,
                 Plan& result) {
  if (problem.op != OpKind::all_gather_matmul) return;  // no chunk is awaited: nothing to hand over
  NativeTail tail = NativeTail::kernel;
  if (options.native_tail == NativeTail::library) {
    if (!d.no_library_tail.empty()) {
      throw Error(ErrorCode::unsupported,
                  "native_tail: library was forced (options.native_tail or ASYNCTP_NATIVE_TAIL) "
                  "but cannot run: " +
                      d.no_library_tail + "; use auto or kernel");
    }
    tail = NativeTail::library;
  } else if (options.native_tail == NativeTail::automatic && d.model.decides(problem)) {
    if (const Prediction* p = prediction_of(result, Algorithm::native)) tail = p->tail;
  }
  result.native_tail = tail;
  if (tail == NativeTail::library) {
    result.reason += std::string("; the last chunk in schedule order (rank ") +
                     num((problem.rank + problem.world_size - 1) % problem.world_size) +
                     "'s) as a library GEMM" +
                     (options.native_tail == NativeTail::library ? ", forced" : "");
  }
}

}  // namespace

const NativeConfig* choose_native_config(const ProblemDesc& problem,
                                         const std::vector<NativeConfig>& configs, int processors) {
  for (const bool measured_pass : {true, false}) {
    const NativeConfig* best = nullptr;
    double best_score = 0;
    for (const NativeConfig& c : configs) {
      if (measured(c) != measured_pass || !offered(c, problem)) continue;
      const double score = predicted_score(c, problem, processors);
      if (!best || score > best_score + 1e-9) {
        best = &c;
        best_score = score;
      }
    }
    if (best) return best;
  }
  return nullptr;
}

std::optional<std::string> native_blocker(const ProblemDesc& problem, const BackendCaps& caps,
                                          std::int64_t tile_m, std::int64_t tile_n) {
  if (!caps.native_supported) {
    return "backend " + caps.name + " has no native kernel (" + caps.native_unsupported_reason +
           ")";
  }
  if (problem.dtype != DType::bf16) {
    return std::string("native needs bf16, got ") + to_string(problem.dtype);
  }
  const OpWords w = words(problem);
  if (problem.m % tile_m != 0) {
    return w.chunk_rows + " is not a multiple of the native tile M (" + num(tile_m) +
           "), so a tile would straddle two chunks";
  }
  if (problem.n % kNativeDimMultiple != 0) {
    return "n (" + num(problem.n) + ") is not a multiple of " + num(kNativeDimMultiple);
  }
  if (problem.k % kNativeDimMultiple != 0) {
    return "k (" + num(problem.k) + ") is not a multiple of " + num(kNativeDimMultiple);
  }
  std::int64_t elements = 0;
  if (!checked_element_count(problem.gathered_rows(), std::max(problem.n, problem.k), &elements) ||
      elements > kMaxElementsPerTensor) {
    return w.too_large;
  }
  (void)tile_n;  // N tiles may be partial: the epilogue clips them
  return std::nullopt;
}

const Prediction* prediction_of(const Plan& plan, Algorithm algorithm) {
  for (const Prediction& p : plan.predictions) {
    if (p.algorithm == algorithm) return &p;
  }
  return nullptr;
}

Plan plan(const ProblemDesc& problem, const BackendCaps& facts, const ResolvedOptions& options) {
  const Derived derived = derive(problem, facts, options);
  Plan result = decide(problem, derived, options);
  if (options.algorithm != Algorithm::automatic && result.predictions.empty()) {
    // A forced algorithm's prediction, for whoever compares it with a run.
    const PlanModel& model = derived.model;
    const NativeConfig config = model_config(derived, result.tile_m ? result.tile_m : 1,
                                             result.tile_n ? result.tile_n : 1);
    if (model.table && result.algorithm != Algorithm::native) {
      result.predictions.push_back(
          predict(problem, result.algorithm, *model.table, model.link, &config));
    } else if (model.table && can_predict_native(*model.table, config, problem.b_layout)) {
      result.predictions.push_back(predict_native(problem, model, config, derived.tails));
    }
  }
  if (result.algorithm == Algorithm::native && derived.config) {
    result.native_config = derived.config->name;
  }
  if (result.algorithm == Algorithm::native) settle_tail(problem, derived, options, result);
  if (!derived.config_choice.empty() && prediction_of(result, Algorithm::native)) {
    result.reason += "; " + derived.config_choice;
  }
  if (result.algorithm == Algorithm::pipelined && !facts.no_peer_access.empty()) {
    throw Error(ErrorCode::invalid_argument,
                "options.algorithm: pipelined needs this rank to pull its peers' shards, but " +
                    facts.no_peer_access + "; use auto or decomposed");
  }
  result.runnable = algorithm_bit(result.algorithm);
  if (options.algorithm == Algorithm::automatic) {
    // What the group may ask of this rank instead: never more than it chose
    // (native is offered only by ranks that planned it, with their tiles).
    const bool library = facts.library_gemm_unavailable_reason.empty();
    if (library && result.algorithm == Algorithm::native && facts.no_peer_access.empty()) {
      result.runnable |= algorithm_bit(Algorithm::pipelined);
    }
    if (library) result.runnable |= algorithm_bit(Algorithm::decomposed);
  }
  return result;
}

namespace {

template <typename NativePlan>
Plan least_predicted(const ProblemDesc& problem, const Derived& derived, const PlanModel& model,
                     const std::optional<std::string>& blocker, std::int64_t tile_m,
                     std::int64_t tile_n, const NativePlan& native_plan);
template <typename NativePlan>
Plan by_rules(const ProblemDesc& problem, const BackendCaps& caps,
              const std::optional<std::string>& blocker, const std::string& native_fits,
              const NativePlan& native_plan);

// The algorithm from the derived capabilities: forced, or the first that
// holds of no library GEMM, nothing can overlap, one rank; then the least
// predicted time where the cost model applies, else the rules (by_rules).
Plan decide(const ProblemDesc& problem, const Derived& derived, const ResolvedOptions& options) {
  const BackendCaps& caps = derived.caps;
  const std::int64_t tile_m = options.tile_m.value_or(caps.default_tile_m);
  const std::int64_t tile_n = options.tile_n.value_or(caps.default_tile_n);
  const auto blocker = native_blocker(problem, caps, tile_m, tile_n);
  const OpWords w = words(problem);
  const std::string native_fits = "bf16, " + w.chunk_rows + " is a multiple of tile M " +
                                  num(tile_m) +
                                  ", n and k are multiples of 8, within 32-bit limits";

  Plan result;
  const auto native_plan = [&](std::string reason) {
    if (!caps.native_note.empty()) reason += "; " + caps.native_note;
    return made(Algorithm::native, tile_m, tile_n, std::move(reason));
  };
  const std::string& no_library = caps.library_gemm_unavailable_reason;
  if (!no_library.empty() &&
      (options.algorithm == Algorithm::pipelined || options.algorithm == Algorithm::decomposed)) {
    throw Error(ErrorCode::unsupported, std::string("algorithm ") + to_string(options.algorithm) +
                                            " was forced but cannot run: " + no_library +
                                            "; use native or auto");
  }
  switch (options.algorithm) {
    case Algorithm::native:
      if (blocker) {
        throw Error(ErrorCode::unsupported, "algorithm native was forced but cannot run: " +
                                                *blocker + "; use auto, pipelined or decomposed");
      }
      return native_plan("forced by options or ASYNCTP_ALGO");
    case Algorithm::pipelined:
      result = made(Algorithm::pipelined, 0, 0, "forced by options or ASYNCTP_ALGO");
      return result;
    case Algorithm::decomposed:
      result = made(Algorithm::decomposed, 0, 0, "forced by options or ASYNCTP_ALGO");
      return result;
    case Algorithm::automatic:
      break;
  }

  if (!no_library.empty()) {
    if (blocker) {
      throw Error(ErrorCode::unsupported,
                  "no algorithm can run this problem here: native unavailable (" + *blocker +
                      ") and pipelined and decomposed unavailable (" + no_library + ")");
    }
    return native_plan("the only path this build has (pipelined and decomposed: " + no_library +
                       "); " + native_fits);
  }

  // From here on auto decides: an unmeasured config blocks native as a
  // kernel refusal would (the paths above run native only when forced, or
  // when nothing else can run).
  const std::optional<std::string> auto_blocker =
      blocker || derived.unmeasured_config.empty()
          ? blocker
          : std::optional<std::string>("native could run, but " + derived.unmeasured_config);

  if (!caps.no_overlap_reason.empty()) {
    result = made(Algorithm::decomposed, 0, 0,
                  "nothing can overlap here (" + caps.no_overlap_reason +
                      "); native and pipelined "
                      "would only add work");
    return result;
  }
  if (!auto_blocker && problem.world_size == 1) {
    // Native would only add its own work (w.native_extra) to the same GEMM.
    result = made(Algorithm::decomposed, 0, 0,
                  std::string("one rank has nothing to overlap (native could run, but would only "
                              "add its ") +
                      w.native_extra + " to the same GEMM)");
    return result;
  }
  const PlanModel& model = derived.model;
  if (model.decides(problem)) {
    return least_predicted(problem, derived, model, auto_blocker, tile_m, tile_n, native_plan);
  }
  // No calibrated cost model here: the rules decide, and the reason says so.
  result = by_rules(problem, caps, auto_blocker, native_fits, native_plan);
  if (!model.table) {
    result.reason += " [rules, no cost model: " + model.unusable + "]";
  } else {
    // A seeded table's predictions are shown, not followed: the rules were
    // measured on the device, its figures not in one run (cost_table.hpp).
    const NativeConfig native = model_config(derived, tile_m, tile_n);
    // The rules' tail is the kernel's unless forced (settle_tail).
    const std::vector<NativeTail> shown = {derived.tails.size() == 1 ? derived.tails.front()
                                                                     : NativeTail::kernel};
    result.predictions =
        predict_candidates(problem, model, auto_blocker ? nullptr : &native, shown);
    result.reason += " [rules: the cost table " + model.table->origin +
                     " is seeded, not calibrated; it predicts " +
                     list_predictions(result.predictions, nullptr) + "]";
  }
  return result;
}

// Auto where the cost model decides: of the algorithms that can run here,
// the least predicted time, ties (kPredictionTie) going to the less
// ambitious one.
template <typename NativePlan>
Plan least_predicted(const ProblemDesc& problem, const Derived& derived, const PlanModel& model,
                     const std::optional<std::string>& blocker, std::int64_t tile_m,
                     std::int64_t tile_n, const NativePlan& native_plan) {
  const NativeConfig native = model_config(derived, tile_m, tile_n);
  std::vector<Prediction> candidates =
      predict_candidates(problem, model, blocker ? nullptr : &native, derived.tails);
  const Prediction* best = &candidates.front();
  for (const Prediction& c : candidates) {
    if (c.ms < best->ms * (1.0 - kPredictionTie)) best = &c;
  }
  const std::string others = list_predictions(candidates, best);
  std::string reason = "least predicted time: " + describe(*best) + " against " + others +
                       " (cost table " + model.table->origin + ", link " +
                       to_string(derived.caps.link.kind) + " " + format_ms(model.link.gbps) +
                       " GB/s)";
  if (blocker) reason += "; native unavailable (" + *blocker + ")";
  Plan result = best->algorithm == Algorithm::native
                    ? native_plan(std::move(reason))
                    : made(best->algorithm, 0, 0, std::move(reason));
  result.predictions = std::move(candidates);
  return result;
}

// Auto without a cost model: the first rule that holds of overlap does not
// pay, native fits, one rank, pipelined's chunk size, else pipelined.
template <typename NativePlan>
Plan by_rules(const ProblemDesc& problem, const BackendCaps& caps,
              const std::optional<std::string>& blocker, const std::string& native_fits,
              const NativePlan& native_plan) {
  const OpWords w = words(problem);
  if (!caps.overlap_unprofitable_reason.empty()) {
    return made(Algorithm::decomposed, 0, 0,
                "overlap does not pay here (" + caps.overlap_unprofitable_reason + "); one GEMM " +
                    (problem.op == OpKind::matmul_reduce_scatter ? "before the reduce-scatter"
                                                                 : "after the gather") +
                    " is faster");
  }
  if (!blocker) return native_plan(native_fits);
  if (problem.world_size == 1) {
    return made(Algorithm::decomposed, 0, 0,
                "native unavailable (" + *blocker + "); one rank has nothing to overlap");
  }
  if (problem.m < caps.min_pipelined_chunk_rows) {
    return made(Algorithm::decomposed, 0, 0,
                "native unavailable (" + *blocker + "); chunks of " + num(problem.m) +
                    " rows are below " + num(caps.min_pipelined_chunk_rows) +
                    ", too small for per-chunk GEMMs");
  }
  return made(Algorithm::pipelined, 0, 0,
              "native unavailable (" + *blocker + "); per-chunk GEMMs overlap " + w.overlapped);
}

}  // namespace

}  // namespace asynctp::core
