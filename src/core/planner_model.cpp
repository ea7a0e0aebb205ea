#include "core/planner_model.hpp"

#include <cstdio>
#include <optional>

#include "asynctp/error.hpp"

namespace asynctp::core {

bool PlanModel::decides(const ProblemDesc& problem) const {
  return table && table->calibrated && problem.world_size > 1;
}

PlanModel plan_model(const BackendCaps& caps) {
  PlanModel model;
  if (!caps.cost_table) {
    model.unusable =
        caps.no_cost_table.empty() ? "the backend reports no cost table" : caps.no_cost_table;
    return model;
  }
  std::string why;
  const std::optional<LinkCost> link = resolve_link(*caps.cost_table, caps.link, &why);
  if (!link) {
    model.unusable = why;
    return model;
  }
  model.table = caps.cost_table;
  model.link = *link;
  return model;
}

ConfigChoice fastest_native_config(const ProblemDesc& problem,
                                   const std::vector<NativeConfig>& configs, const PlanModel& model,
                                   const NativeConfig* rules_pick,
                                   const std::function<bool(const NativeConfig&)>& can_run,
                                   const std::vector<NativeTail>& tails) {
  struct Candidate {
    const NativeConfig* config;
    double ms;
  };
  std::vector<Candidate> candidates;
  for (const NativeConfig& c : configs) {
    if (!can_run(c)) continue;
    candidates.push_back(
        {&c, predict_native(problem, model, c, tails).ms});
  }
  if (candidates.empty()) return {};
  const Candidate* least = &candidates.front();
  for (const Candidate& c : candidates) {
    if (c.ms < least->ms) least = &c;
  }
  const Candidate* chosen = least;
  for (const Candidate& c : candidates) {
    if (c.config == rules_pick && least->ms >= c.ms * (1.0 - kPredictionTie)) chosen = &c;
  }
  const Candidate* runner_up = nullptr;
  for (const Candidate& c : candidates) {
    if (&c != chosen && (!runner_up || c.ms < runner_up->ms)) runner_up = &c;
  }
  ConfigChoice out{chosen->config, "native config " + chosen->config->name + " predicted " +
                                       format_ms(chosen->ms) + " ms"};
  if (!runner_up) {
    out.why += ", the only config that can run this shape";
  } else if (chosen != least) {
    out.why += ", within " + std::to_string(static_cast<int>(kPredictionTie * 100)) + " % of " +
               runner_up->config->name + "'s " + format_ms(runner_up->ms) +
               " ms: a tie, kept by wave efficiency";
  } else {
    out.why += " against " + runner_up->config->name + " " + format_ms(runner_up->ms) +
               " ms, the next fastest config (the last chunk's tail included)";
  }
  return out;
}

Prediction predict_native(const ProblemDesc& problem, const PlanModel& model,
                          const NativeConfig& config, const std::vector<NativeTail>& tails) {
  std::optional<Prediction> best;
  for (NativeTail tail : tails) {
    Prediction p = predict(problem, Algorithm::native, *model.table, model.link, &config, tail);
    if (!best || p.ms < best->ms * (1.0 - kPredictionTie)) best = std::move(p);
  }
  if (!best) {
    throw Error(ErrorCode::invalid_argument, "cost model: native needs a tail to predict");
  }
  return *best;
}

std::vector<Prediction> predict_candidates(const ProblemDesc& problem, const PlanModel& model,
                                           const NativeConfig* native,
                                           const std::vector<NativeTail>& tails) {
  std::vector<Prediction> candidates;
  candidates.push_back(predict(problem, Algorithm::decomposed, *model.table, model.link, nullptr));
  candidates.push_back(predict(problem, Algorithm::pipelined, *model.table, model.link, nullptr));
  if (native) candidates.push_back(predict_native(problem, model, *native, tails));
  return candidates;
}

std::string list_predictions(const std::vector<Prediction>& predictions, const Prediction* skip) {
  std::string out;
  for (const Prediction& c : predictions) {
    if (&c == skip) continue;
    out += std::string(out.empty() ? "" : ", ") + to_string(c.algorithm) + " " + format_ms(c.ms);
  }
  return out;
}

std::string format_ms(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

}  // namespace asynctp::core
