// The randomized stress of both ops, shared by the backends' runners
// (tests/stress: the CPU backend's threads and processes; tests/gpu: the
// loopback backend): how a
// call is drawn (random world size, shapes on and off the tile grid, dtypes,
// B layouts, algorithms, tiles, faults injected through the test hooks), and
// how its outcome is judged against the contract:
//   no fault, delays, reordering: every rank succeeds, every output matches
//     the float64 reference within its tolerance;
//   a dropped chunk: the rank that waits for it fails with Error(timeout)
//     naming the chunk and where it should have come from, within twice the
//     configured timeout; every other rank succeeds with correct outputs;
//   a refusal (one rank's bad argument, or a fault or forced algorithm the
//     backend does not take for this call): a rank with its own reason
//     throws it, every other rank a mismatch naming the first refusing rank,
//     and no rank's outputs are written;
//   a killed rank (the process transport): every surviving rank ends with
//     the documented error naming the dead rank ("rank V (pid P) is gone")
//     within twice the configured timeout, with its outputs untouched when
//     the rank died before the call; where the rank died after its last
//     part in the call, a survivor may instead end as the call would have
//     without the kill (correct, or the refusal's error).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "asynctp/asynctp.hpp"
#include "core/reference.hpp"
#include "support/collective.hpp"
#include "support/seed.hpp"

namespace asynctp_test::stress {

using asynctp::Algorithm;
using asynctp::DType;
using asynctp::Error;
using asynctp::ErrorCode;
using asynctp::Options;
using asynctp::TensorView;

inline std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtoll(text, nullptr, 0) : fallback;
}

enum class Fault { none, delay, reorder, drop, bad_argument, kill };

// Where a killed rank dies: before it calls, in its before_copy or
// before_compute hook at its chunk `fault_chunk` (if the call never reaches
// that hook, right after the call), or at a random time into the call
// (kill_after_us: while it waits, copies or computes, or after the call).
enum class KillPoint { before_call, before_copy, before_compute, timer };

inline const char* to_string(Fault f) {
  switch (f) {
    case Fault::none: return "none";
    case Fault::delay: return "delay";
    case Fault::reorder: return "reorder";
    case Fault::drop: return "drop";
    case Fault::bad_argument: return "bad_argument";
    case Fault::kill: return "kill";
  }
  return "?";
}

inline const char* to_string(KillPoint p) {
  switch (p) {
    case KillPoint::before_call: return "before the call";
    case KillPoint::before_copy: return "before_copy";
    case KillPoint::before_compute: return "before_compute";
    case KillPoint::timer: return "timer";
  }
  return "?";
}

// The fault for the tally: a kill with where it struck.
inline std::string fault_label(const Fault f, const KillPoint p) {
  return f == Fault::kill ? std::string("kill ") + to_string(p) : to_string(f);
}

// One drawn call: everything but the data.
struct Case {
  bool reduce_scatter = false;
  int world = 1;
  std::int64_t m = 1, n = 1;
  std::vector<std::int64_t> k;  // per rank (all-gather: k[0] for every rank)
  DType dtype = DType::bf16;
  bool b_col_major = false;
  bool gathered = true;
  Options options;
  Fault fault = Fault::none;
  int fault_rank = 0;   // drop: the rank whose hook drops; bad_argument: the bad rank;
                        // kill: the rank killed
  int fault_chunk = 0;  // drop: the chunk dropped; kill: the hook's chunk
  KillPoint kill_point = KillPoint::before_call;
  std::int64_t kill_after_us = 0;
  std::string text;
};

// What a backend's runner draws: the shape grid and the faults its hooks
// take. `fit` may turn a fault the backend cannot inject for this call into
// another (the refusal of a hook is tested where the hook is), or adjust the
// call so that the fault can be injected.
struct CaseLimits {
  bool forced_tiles = true;        // Options::tile_m/tile_n of 8, 16, 32 (CPU native tiles)
  std::int64_t grid_m = 16;        // on-grid m and n: multiples of this (without forced tiles)
  std::int64_t grid = 8;           // on-grid k: multiples of this
  std::int64_t off_grid_max = 50;  // off-grid m and n: 1 .. this
  std::int64_t drop_timeout_ms = 200;
  int min_world = 1, max_world = 8;
  // Whether a rank may be killed (a transport of processes), and the
  // timeout of such calls (a survivor that does not notice the death fails
  // by it, and the judge says so).
  bool kill_rank = false;
  std::int64_t kill_timeout_ms = 1000;
  std::function<Fault(Fault, Case&)> fit = [](Fault f, Case&) { return f; };
};

inline Case draw_case(std::mt19937_64& rng, const CaseLimits& limits) {
  const std::int64_t drop_timeout_ms = limits.drop_timeout_ms;
  Case c;
  c.reduce_scatter = draw(rng, 0, 1) == 1;
  c.world = static_cast<int>(draw(rng, limits.min_world, limits.max_world));
  const DType dtypes[] = {DType::bf16, DType::fp16, DType::fp32};
  c.dtype = dtypes[draw(rng, 0, 2)];
  c.b_col_major = draw(rng, 0, 1) == 1;
  c.gathered = draw(rng, 0, 3) != 0;
  const Algorithm algorithms[] = {Algorithm::automatic, Algorithm::native, Algorithm::pipelined,
                                  Algorithm::decomposed};
  c.options.algorithm = algorithms[draw(rng, 0, 3)];
  const std::int64_t tiles[] = {0, 8, 16, 32};
  const std::int64_t tile_m = limits.forced_tiles ? tiles[draw(rng, 0, 3)] : 0;
  const std::int64_t tile_n = limits.forced_tiles ? tiles[draw(rng, 0, 3)] : 0;
  if (tile_m) c.options.tile_m = tile_m;
  if (tile_n) c.options.tile_n = tile_n;
  // Half the shapes on the tile grid (multiples of the tiles, and n and k of
  // the native kernel's 8), where a forced native runs; half off it, where
  // it is refused (more often on the grid when native is forced, so that
  // most forced-native calls run).
  const bool on_grid = draw(rng, 0, 3) < (c.options.algorithm == Algorithm::native ? 3 : 2);
  const std::int64_t g = limits.grid;
  const auto draw_k = [&] { return on_grid ? g * draw(rng, 1, 6) : draw(rng, 1, 6 * g); };
  if (on_grid) {
    c.m = (tile_m ? tile_m : limits.grid_m) * draw(rng, 1, 3);
    c.n = (tile_n ? tile_n : limits.grid_m) * draw(rng, 1, 3);
  } else {
    c.m = draw(rng, 1, limits.off_grid_max);
    c.n = draw(rng, 1, limits.off_grid_max);
  }
  const std::int64_t k = draw_k();
  for (int r = 0; r < c.world; ++r) {
    // Uneven K-slices for the reduce-scatter now and then.
    c.k.push_back(c.reduce_scatter && draw(rng, 0, 2) == 0 ? draw_k() : k);
  }
  c.options.wait_timeout_ms = 10'000;
  const std::int64_t f = draw(rng, 0, 19);
  c.fault = f < 8 ? Fault::none : f < 11 ? Fault::delay : f < 14 ? Fault::reorder
            : f < 17 ? Fault::drop : Fault::bad_argument;
  // (Drawn only where ranks can be killed, so the other runners draw the
  // same calls as before from a seed.)
  if (limits.kill_rank && c.world > 1 && draw(rng, 0, 2) == 0) c.fault = Fault::kill;
  // A partial is dropped on the way to its owner: a world of one ships none.
  if (c.fault == Fault::drop && c.reduce_scatter && c.world == 1) c.fault = Fault::reorder;
  c.fault = limits.fit(c.fault, c);
  c.fault_rank = static_cast<int>(draw(rng, 0, c.world - 1));
  c.fault_chunk = static_cast<int>(draw(rng, 0, c.world - 1));
  if (c.fault == Fault::drop && c.reduce_scatter && c.fault_chunk == c.fault_rank) {
    c.fault_chunk = (c.fault_rank + 1) % c.world;
  }
  if (c.fault == Fault::kill) {
    c.kill_point = static_cast<KillPoint>(draw(rng, 0, 3));
    c.kill_after_us = draw(rng, 0, 3000);
    c.options.wait_timeout_ms = limits.kill_timeout_ms;
  }
  const std::uint64_t hook_seed = rng();
  switch (c.fault) {
    case Fault::delay:
      // Up to 3 ms before a third of the copies and a third of the GEMM pieces.
      c.options.hooks.before_copy = [hook_seed](int rank, int chunk) {
        const std::uint64_t h = asynctp_test::splitmix64(hook_seed ^ (rank * 131u + chunk));
        if (h % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(h % 3000));
      };
      c.options.hooks.before_compute = [hook_seed](int rank, int chunk) {
        const std::uint64_t h = asynctp_test::splitmix64(~hook_seed ^ (rank * 131u + chunk));
        if (h % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(h % 1000));
      };
      break;
    case Fault::reorder:
      c.options.hooks.reorder = [hook_seed](int rank, const std::vector<int>& order) {
        std::vector<int> out = order;
        std::mt19937_64 local(hook_seed + static_cast<std::uint64_t>(rank));
        std::shuffle(out.begin(), out.end(), local);
        return out;
      };
      break;
    case Fault::drop: {
      const int dr = c.fault_rank, dc = c.fault_chunk;
      c.options.hooks.drop = [dr, dc](int rank, int chunk) { return rank == dr && chunk == dc; };
      c.options.wait_timeout_ms = drop_timeout_ms;
      break;
    }
    case Fault::none:
    case Fault::bad_argument:
    case Fault::kill:  // the runner kills: it alone knows how
      break;
  }
  char text[320];
  std::snprintf(text, sizeof text, "%s W=%d m=%lld n=%lld k0=%lld %s b=%s %s algo=%s tiles=%lldx%lld "
                "fault=%s(rank %d, chunk %d)",
                c.reduce_scatter ? "matmul_reduce_scatter" : "all_gather_matmul", c.world,
                static_cast<long long>(c.m), static_cast<long long>(c.n),
                static_cast<long long>(c.k[0]), asynctp::to_string(c.dtype),
                c.b_col_major ? "col" : "row", c.gathered ? "gathered" : "no-gathered",
                asynctp::to_string(*c.options.algorithm), static_cast<long long>(tile_m),
                static_cast<long long>(tile_n), to_string(c.fault), c.fault_rank, c.fault_chunk);
  c.text = text;
  if (c.fault == Fault::kill) {
    c.text += std::string(" killed ") + to_string(c.kill_point);
    if (c.kill_point == KillPoint::timer) c.text += " after " + std::to_string(c.kill_after_us) + " us";
  }
  return c;
}

// A view of the same buffer that breaks the output's shape rule.
inline TensorView broken(TensorView v) {
  const asynctp::Device device = v.device;
  if (v.cols > 1) {
    v = TensorView::row_major(v.data, v.dtype, v.rows, v.cols - 1);
  } else if (v.rows > 1) {
    v = TensorView::row_major(v.data, v.dtype, v.rows - 1, v.cols);
  } else {
    v = TensorView::row_major(v.data, v.dtype, v.rows, v.cols + 1);  // rejected, never written
  }
  v.device = device;
  return v;
}

inline bool untouched(const TensorView& v) {
  const auto cmp = asynctp::core::compare_to_reference(v, std::vector<double>(v.numel(), 0.0));
  return cmp.unwritten == v.numel();
}

struct Tally {
  int calls = 0, ok_calls = 0, expected_timeouts = 0, expected_refusals = 0;
  // Killed-rank calls: survivors failed naming the dead rank (some may have
  // finished as without the kill); or all finished as without the kill.
  int killed_rank_errors = 0, killed_after_last_part = 0;
  int wrong = 0;          // calls with a result or an error the contract does not allow
  int wrong_results = 0;  // of which: an output that does not match the reference
  int hangs = 0;          // calls a rank did not finish (the runner's limit)
  double worst_timeout_ratio = 0;  // failing rank's time / configured timeout
  double worst_dead_rank_ratio = 0;  // the same, for a survivor naming a dead rank
  std::map<std::string, int> by_fault;
};

// What a rank says of its own arguments before any communication: nothing,
// or the error its call must throw (invalid_argument, or unsupported for a
// forced algorithm that cannot run on this shape).
struct LocalVerdict {
  std::optional<ErrorCode> code;
  std::string message;
};

template <class Plan>
LocalVerdict local_verdict(Plan plan) {
  LocalVerdict v;
  try {
    plan();
  } catch (const Error& e) {
    v.code = e.code();
    v.message = e.what();
  }
  return v;
}

// How a call ended for the ranks judged, when they kept the contract.
enum class Ending { correct, timeout, refusal };

// Checks the outcomes of the ranks not `excused` against the contract for
// the case's fault (a kill aside: judge_killed's).
template <class Correct, class Untouched>
Ending judge_ranks(const Case& c, const std::vector<LocalVerdict>& verdicts,
                   const std::vector<Outcome>& outcomes, const std::vector<double>& seconds,
                   Tally& tally, std::vector<std::string>& problems, const std::string& out_name,
                   Correct correct, Untouched untouched_outputs, const std::string& drop_phrase,
                   const std::vector<bool>& excused) {
  const auto say = [&](int r, const std::string& what) {
    problems.push_back("rank " + std::to_string(r) + ": " + what + " [" +
                       outcomes[r].message + "]");
  };
  const auto judged = [&](int r) { return excused.empty() || !excused[r]; };
  // Refused (a bad argument, or a forced algorithm that cannot run on this
  // shape): a rank with its own reason throws it, every other rank a
  // mismatch naming the first rank that refused; nothing is written.
  int first_refusal = -1;
  for (int r = 0; r < c.world && first_refusal < 0; ++r) {
    if (verdicts[r].code) first_refusal = r;
  }
  if (c.fault == Fault::bad_argument && first_refusal < 0) {
    problems.push_back("the broken argument of rank " + std::to_string(c.fault_rank) +
                       " passed plan_*");
  }
  if (first_refusal >= 0) {
    for (int r = 0; r < c.world; ++r) {
      if (!judged(r)) continue;
      const Outcome& o = outcomes[r];
      const ErrorCode want = verdicts[r].code.value_or(ErrorCode::mismatch);
      const std::string phrase =
          verdicts[r].code ? (c.fault == Fault::bad_argument && r == c.fault_rank
                                  ? out_name + ": "
                                  : std::string(""))
                           : "rank " + std::to_string(first_refusal) + " rejected its arguments";
      if (o.ok || o.code != want || o.message.find(phrase) == std::string::npos) {
        say(r, "expected " + std::string(asynctp::to_string(want)) + " with '" + phrase + "'");
      }
      if (!untouched_outputs(r)) say(r, "outputs written although the call was refused");
    }
    return Ending::refusal;
  }
  // With a dropped chunk the waiting rank fails: on the all-gather the
  // rank whose copy was dropped, on the reduce-scatter the chunk's owner.
  const int failing = c.fault != Fault::drop ? -1
                      : c.reduce_scatter     ? c.fault_chunk
                                             : c.fault_rank;
  bool wrong_numbers = false;
  for (int r = 0; r < c.world; ++r) {
    if (!judged(r)) continue;
    const Outcome& o = outcomes[r];
    if (r == failing) {
      const std::string head = "rank " + std::to_string(r) + ": chunk " +
                               std::to_string(c.fault_chunk) + " " + drop_phrase;
      if (o.ok || o.code != ErrorCode::timeout || o.message.find(head) == std::string::npos) {
        say(r, "expected a timeout naming '" + head + "'");
      }
      const double timeout_s = static_cast<double>(*c.options.wait_timeout_ms) / 1000.0;
      tally.worst_timeout_ratio = std::max(tally.worst_timeout_ratio, seconds[r] / timeout_s);
      if (seconds[r] > 2.0 * timeout_s) {
        say(r, "timed out after " + std::to_string(seconds[r]) +
                   " s, more than twice the configured timeout");
      }
      continue;
    }
    if (!o.ok) {
      say(r, "failed");
    } else if (!correct(r)) {
      say(r, "wrong result");
      wrong_numbers = true;
    }
  }
  if (wrong_numbers) ++tally.wrong_results;
  return failing >= 0 ? Ending::timeout : Ending::correct;
}

// Checks the outcomes against the contract for the case's fault, and
// counts the call when it kept it.
template <class Correct, class Untouched>
void judge(const Case& c, const std::vector<LocalVerdict>& verdicts,
           const std::vector<Outcome>& outcomes, const std::vector<double>& seconds,
           Tally& tally, std::vector<std::string>& problems, const std::string& out_name,
           Correct correct, Untouched untouched_outputs, const std::string& drop_phrase) {
  const Ending ending = judge_ranks(c, verdicts, outcomes, seconds, tally, problems, out_name,
                                    correct, untouched_outputs, drop_phrase, {});
  if (!problems.empty()) return;
  ++(ending == Ending::refusal  ? tally.expected_refusals
     : ending == Ending::timeout ? tally.expected_timeouts
                                 : tally.ok_calls);
}

// The contract of a call whose rank c.fault_rank was killed (`killed`: its
// process ended by SIGKILL). `outcomes` and `seconds` of the dead rank are
// not looked at; `verdicts` are every rank's, the dead one's included (it
// told its own before it died).
template <class Correct, class Untouched>
void judge_killed(const Case& c, const std::vector<LocalVerdict>& verdicts,
                  const std::vector<Outcome>& outcomes, const std::vector<double>& seconds,
                  bool killed, Tally& tally, std::vector<std::string>& problems,
                  const std::string& out_name, Correct correct, Untouched untouched_outputs,
                  const std::string& drop_phrase) {
  const int victim = c.fault_rank;
  const std::string dead = "rank " + std::to_string(victim) + " (pid ";
  const bool before_call = c.kill_point == KillPoint::before_call;
  const double timeout_s = static_cast<double>(*c.options.wait_timeout_ms) / 1000.0;
  if (!killed) problems.push_back("rank " + std::to_string(victim) + " was not killed");
  std::vector<bool> excused(static_cast<std::size_t>(c.world), false);
  excused[static_cast<std::size_t>(victim)] = true;
  int dead_rank_errors = 0;
  for (int r = 0; r < c.world; ++r) {
    if (r == victim) continue;
    const Outcome& o = outcomes[r];
    const auto say = [&](const std::string& what) {
      problems.push_back("rank " + std::to_string(r) + ": " + what + " [" + o.message + "]");
    };
    const bool names_dead = !o.ok && o.code == ErrorCode::backend &&
                            o.message.find(dead) != std::string::npos &&
                            o.message.find(") is gone") != std::string::npos;
    if (names_dead) {
      excused[static_cast<std::size_t>(r)] = true;
      ++dead_rank_errors;
      tally.worst_dead_rank_ratio = std::max(tally.worst_dead_rank_ratio, seconds[r] / timeout_s);
      if (seconds[r] > 2.0 * timeout_s) {
        say("failed after " + std::to_string(seconds[r]) +
            " s, more than twice the configured timeout");
      }
      if (before_call && !untouched_outputs(r)) {
        say("outputs written although the call failed before it began");
      }
    } else if (before_call) {
      say("expected the error naming the dead rank ('" + dead + "...) is gone')");
      excused[static_cast<std::size_t>(r)] = true;
    }
  }
  // The survivors that did not see the death: as without the kill.
  judge_ranks(c, verdicts, outcomes, seconds, tally, problems, out_name, correct,
              untouched_outputs, drop_phrase, excused);
  if (!problems.empty()) return;
  ++(dead_rank_errors > 0 ? tally.killed_rank_errors : tally.killed_after_last_part);
}

// The all-gather's contract on the host copies of its outputs (`problem`, a
// FusedProblem): c_out within tolerance of the float64 reference, the
// gathered A bitwise the shards (or, not requested, untouched); on a refusal
// neither output written.
template <class FusedProblem>
bool all_gather_correct(const Case& c, FusedProblem& problem, int r) {
  const auto cmp = asynctp::core::compare_to_reference(problem.c(r), problem.reference(r));
  if (!cmp.ok(asynctp::core::error_tolerance(c.dtype))) return false;
  for (int s = 0; s < c.world; ++s) {
    if (c.gathered ? !asynctp::core::bitwise_equal_rows(problem.g(r), s * c.m, problem.a(s))
                   : !untouched(problem.g(r))) {
      return false;
    }
  }
  return true;
}

template <class FusedProblem>
bool all_gather_untouched(FusedProblem& problem, int r) {
  return untouched(problem.c(r)) && untouched(problem.g(r));
}

// What the error of a dropped chunk says after "chunk C ".
inline std::string drop_phrase(const Case& c) {
  return c.reduce_scatter
             ? "(the partial of rank " + std::to_string(c.fault_rank) + ") never arrived"
             : "(the A shard of rank " + std::to_string(c.fault_chunk) + ") never arrived";
}

template <class FusedProblem>
void judge_all_gather(const Case& c, const std::vector<LocalVerdict>& verdicts,
                      const std::vector<Outcome>& outcomes, const std::vector<double>& seconds,
                      Tally& tally, std::vector<std::string>& problems, FusedProblem& problem) {
  judge(c, verdicts, outcomes, seconds, tally, problems, "c_out",
        [&](int r) { return all_gather_correct(c, problem, r); },
        [&](int r) { return all_gather_untouched(problem, r); }, drop_phrase(c));
}

// Counts the call as wrong and reports what went wrong, if anything did.
inline void report_problems(const Case& c, Tally& tally, const std::vector<std::string>& problems) {
  if (problems.empty()) return;
  ++tally.wrong;
  std::string all;
  for (const auto& p : problems) all += "\n  " + p;
  ADD_FAILURE() << "call " << tally.calls << ": " << c.text << all;
}

// Runs `calls` drawn calls through run_one(case, rng, tally) and prints the
// tally; fails the test on any call the contract does not allow.
inline void run_stress(const char* backend, const CaseLimits& limits, std::int64_t calls,
                       std::uint64_t seed,
                       const std::function<void(const Case&, std::mt19937_64&, Tally&)>& run_one) {
  std::mt19937_64 rng(seed);
  Tally tally;
  const auto begin = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < calls && tally.wrong < 10; ++i) {
    const Case c = draw_case(rng, limits);
    run_one(c, rng, tally);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::string faults;
  for (const auto& [name, count] : tally.by_fault) {
    faults += " " + name + "=" + std::to_string(count);
  }
  std::printf("stress (%s): seed 0x%llx, %d calls in %.1f s: %d correct, %d expected timeouts, "
              "%d expected refusals, %d killed-rank errors, %d killed after their last part; "
              "worst failing rank %.2fx the timeout (dropped chunk), %.3fx (dead rank); "
              "%d contract failures (%d wrong results, %d hangs); faults:%s\n",
              backend, static_cast<unsigned long long>(seed), tally.calls, seconds,
              tally.ok_calls, tally.expected_timeouts, tally.expected_refusals,
              tally.killed_rank_errors, tally.killed_after_last_part, tally.worst_timeout_ratio,
              tally.worst_dead_rank_ratio, tally.wrong, tally.wrong_results, tally.hangs, faults.c_str());
  EXPECT_EQ(tally.wrong, 0);
  EXPECT_EQ(tally.calls, calls) << "stopped after 10 wrong calls";
}

}  // namespace asynctp_test::stress
