// The planner's cost-model side (planner.cpp keeps the rules and the
// decision): whether the backend's cost table can predict here and may
// decide, and what it predicts for the algorithms and the native configs
// that can run. Which of those can run is the rules' business: callers
// pass it in.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/cost_model.hpp"
#include "core/cost_table.hpp"
#include "core/planner.hpp"

namespace asynctp::core {

// The cost model as the facts allow it: the table and the link's figures,
// or why there is none.
struct PlanModel {
  const CostTable* table = nullptr;
  LinkCost link;
  std::string unusable;  // set when the model cannot predict here

  // Whether it decides (auto's algorithm, and the native config under auto
  // or forced native): a calibrated table with a link figure, and more than
  // one rank. A seeded table is only shown (cost_table.hpp).
  bool decides(const ProblemDesc& problem) const;
};

PlanModel plan_model(const BackendCaps& caps);

// Of `configs`, those `can_run` accepts, the one of least predicted time.
// The model runs the persistent grid over the chunks' arrivals, so a config
// of smaller tiles, whose waves fill the GPU worse, wins where the last
// chunk's tiles (each a whole K loop on one SM) are what is left after the
// link: the tail. Within kPredictionTie of the least, the rules' pick
// `rules_pick` stays, as between algorithms: a difference that small is not
// one to leave the measured rule for. `config` is null when none can run.
struct ConfigChoice {
  const NativeConfig* config = nullptr;
  std::string why;  // for the plan's reason
};
ConfigChoice fastest_native_config(const ProblemDesc& problem,
                                   const std::vector<NativeConfig>& configs, const PlanModel& model,
                                   const NativeConfig* rules_pick,
                                   const std::function<bool(const NativeConfig&)>& can_run,
                                   const std::vector<NativeTail>& tails);

// Native with `config`, its last chunk in each of `tails` (kernel first):
// the least predicted, a library tail only where it is faster by more than
// kPredictionTie (the tie goes to the kernel, one launch fewer).
Prediction predict_native(const ProblemDesc& problem, const PlanModel& model,
                          const NativeConfig& config, const std::vector<NativeTail>& tails);

// Decomposed, pipelined and, where `native` is given (nothing blocks it),
// native with that config (predict_native over `tails`), each predicted.
std::vector<Prediction> predict_candidates(const ProblemDesc& problem, const PlanModel& model,
                                           const NativeConfig* native,
                                           const std::vector<NativeTail>& tails);

// "algorithm ms, ..." for every prediction but `skip`.
std::string list_predictions(const std::vector<Prediction>& predictions, const Prediction* skip);

// Milliseconds as the plan's reasons print them.
std::string format_ms(double ms);

}  // namespace asynctp::core
