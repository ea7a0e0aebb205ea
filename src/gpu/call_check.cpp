#include "gpu/call_check.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "asynctp/error.hpp"
#include "core/schedule.hpp"
#include "core/validate.hpp"
#include "gpu/check.hpp"

namespace asynctp::gpu {

void fail_argument(const std::string& argument, const std::string& rule) {
  throw Error(ErrorCode::invalid_argument, argument + ": " + rule);
}

RunInfo to_run_info(const core::Plan& plan) {
  return {plan.algorithm, plan.tile_m, plan.tile_n, plan.reason};
}

std::vector<int> arrival_order(int world, int rank, const ArrivalHooks& hooks) {
  std::vector<int> order = core::chunk_order(world, rank);
  if (hooks.reorder) {
    std::vector<int> reordered = hooks.reorder(rank, order);
    std::vector<int> sorted = reordered;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> expected = order;
    std::sort(expected.begin(), expected.end());
    if (sorted != expected) {
      fail_argument("options.hooks.reorder",
                    "must return a permutation of the chunk order it is given");
    }
    order = reordered;
  }
  order.erase(std::remove(order.begin(), order.end(), rank), order.end());
  return order;
}

CallSpec call_spec(const CheckedCall& checked, const core::OpCall& call, const Options& options) {
  const int world = checked.problem.world_size;
  const int rank = checked.problem.rank;
  CallSpec spec;
  // What the check decided.
  spec.problem = checked.problem;
  spec.plan = checked.plan;
  spec.pieces = checked.pieces;
  if (checked.kernel) spec.native_kernel = checked.kernel->name;
  // The caller's tensors, stream and bound.
  spec.b = call.b;
  spec.c_out = call.out;
  spec.stream = static_cast<rt::StreamHandle>(options.stream);
  spec.capturing = checked.capturing;
  spec.timeout_ms = checked.resolved.wait_timeout_ms;
  // The order the peers' chunks move in, and the ones a test drops.
  spec.arrival_order = arrival_order(world, rank, options.hooks);
  spec.dropped.assign(static_cast<std::size_t>(world), false);
  for (int c : spec.arrival_order) {
    spec.dropped[static_cast<std::size_t>(c)] = options.hooks.drop && options.hooks.drop(rank, c);
  }
  return spec;
}

namespace {

bool uses_lane0(Algorithm algorithm) { return algorithm != Algorithm::native; }
bool uses_lane1(Algorithm algorithm, NativeTail tail) {
  return algorithm == Algorithm::pipelined ||
         (algorithm == Algorithm::native && tail == NativeTail::library);
}

}  // namespace

bool gemm_ready(RankBackend& backend, Algorithm algorithm, NativeTail tail) {
  const LibraryGemm* lane0 = backend.library_gemm(0);
  const LibraryGemm* lane1 = backend.library_gemm(1);
  if (uses_lane0(algorithm) && !(lane0 && lane0->ready())) return false;
  return !uses_lane1(algorithm, tail) || (lane1 && lane1->ready());
}

void prepare_gemm(RankBackend& backend, Algorithm algorithm, NativeTail tail) {
  if (uses_lane0(algorithm)) library_lane(backend, 0, to_string(algorithm)).prepare();
  if (uses_lane1(algorithm, tail)) library_lane(backend, 1, to_string(algorithm)).prepare();
}

int signal_pieces(std::int64_t rows, std::size_t chunk_bytes, std::int64_t row_granularity) {
  for (int p = kMaxSignalPieces; p > 1; p /= 2) {
    if (rows % (row_granularity * p) == 0 &&
        chunk_bytes / static_cast<std::size_t>(p) >= kMinPieceBytes) {
      return p;
    }
  }
  return 1;
}

int reduce_scatter_pieces(const CallSite& site, const core::ProblemDesc& problem,
                          std::int64_t row_granularity, double native_tflops) {
  if (site.link.kind != core::LinkFacts::Kind::arrival || site.link.gbps <= 0 ||
      native_tflops <= 0 || row_granularity <= 0 || problem.world_size < 2 ||
      problem.m % (2 * row_granularity) != 0) {
    return 1;
  }
  // A chunk's transfer (m n elements at the link's rate) against its GEMM
  // (2 m n k flops at the grid's): m and n cancel.
  const double transfer_s =
      static_cast<double>(element_size(problem.dtype)) / (site.link.gbps * 1e9);
  const double gemm_s = 2.0 * static_cast<double>(problem.k) / (native_tflops * 1e12);
  return transfer_s > gemm_s ? 2 : 1;
}

void check_on_device(const char* name, const TensorView& t, int device) {
  const std::string runtime = rt::kName;
  if (t.device.index != device) {
    fail_argument(name, "must live on " + runtime + " device " + std::to_string(device) +
                            " (this rank's device), got device " + std::to_string(t.device.index));
  }
  rt::MemoryKind kind = rt::MemoryKind::unregistered_host;
  int owner = -1;
  const rt::Status e = rt::pointer_info(t.data, &kind, &owner);
  if (e != rt::kSuccess) {
    rt::clear_last_error();
    fail_argument(name, "is not a pointer " + runtime +
                            " knows (pointer attributes: " + rt::error_name(e) + ")");
  }
  if (kind != rt::MemoryKind::device && kind != rt::MemoryKind::managed) {
    fail_argument(name, "must point to device memory (device allocation or managed); got " +
                            std::string(kind == rt::MemoryKind::pinned_host ? "pinned host"
                                                                            : "unregistered host") +
                            " memory");
  }
  if (owner != device) {
    fail_argument(name, "points to memory of " + runtime + " device " + std::to_string(owner) +
                            ", not this rank's device " + std::to_string(device));
  }
}

bool stream_is_capturing(rt::StreamHandle stream) {
  bool capturing = false;
  check(rt::stream_capturing(stream, &capturing), "stream capture status (options.stream)");
  return capturing;
}

CheckedCall check_call(const CallSite& site, const RankBackend& backend, const core::OpCall& call,
                       const Options& options) {
  const int device = backend.device();
  check(rt::set_device(device), "set device (rank device)");
  CheckedCall out;
  out.resolved = core::resolve_options(options);
  out.problem = core::validate_op(call, site.world_size, site.rank, backend.device_kind());
  const bool reduce_scatter = call.op == core::OpKind::matmul_reduce_scatter;
  if (reduce_scatter && options.hooks.reorder) {
    fail_argument("options.hooks.reorder",
                  std::string("not supported by fused_matmul_reduce_scatter on the ") +
                      backend.name() + " backend (its send order is fixed: core::send_order)");
  }
  for (const auto& [name, tensor] : core::named_tensors(call)) {
    check_on_device(name, tensor, device);
  }

  BackendChoice choice = backend.choose(out.problem, out.resolved);
  choice.caps.no_peer_access = site.no_peer_access;
  choice.caps.link = site.link;
  if (!site.native_blocked.empty()) {
    choice.caps.native_supported = false;
    choice.caps.native_unsupported_reason = site.native_blocked;
  }
  out.plan = core::plan(out.problem, choice.caps, out.resolved);
  if (out.plan.algorithm == Algorithm::native) {
    if (!out.plan.native_config.empty()) {
      out.kernel = NativeKernel{out.plan.native_config, out.plan.tile_m};
    } else if (choice.kernel) {
      out.kernel = choice.kernel;
    } else {
      throw Error(ErrorCode::unsupported, "native: no kernel config can run this problem");
    }
  }
  const std::size_t chunk_bytes =
      static_cast<std::size_t>(out.problem.m * out.problem.k) * element_size(out.problem.dtype);
  out.pieces =
      reduce_scatter
          ? reduce_scatter_pieces(site, out.problem, out.kernel ? out.kernel->m_granularity : 0,
                                  choice.native_tflops)
          : signal_pieces(out.problem.m, chunk_bytes, out.kernel ? out.kernel->m_granularity : 1);
  if (out.kernel) {
    out.plan.reason += " (kernel " + out.kernel->name + ", " + std::to_string(out.pieces) +
                       " signal" + (out.pieces > 1 ? "s" : "") + " per chunk)";
  }
  const std::string backend_name = backend.name();
  if (options.hooks.before_copy) {
    fail_argument(
        "options.hooks.before_copy",
        "not supported by the " + backend_name +
            " backend (a host-side delay would only delay the enqueue); delay arrivals with "
            "Link::arrival and a low link_gbps");
  }
  if (options.hooks.before_compute) {
    fail_argument("options.hooks.before_compute",
                  "not supported by the " + backend_name +
                      " backend (its GEMM is one kernel, which a host-side hook cannot hold)");
  }
  if (options.hooks.drop && reduce_scatter) {
    fail_argument("options.hooks.drop",
                  "not supported by fused_matmul_reduce_scatter on the " + backend_name +
                      " backend (its partials are shipped by copies nothing can drop)");
  }
  if (options.hooks.drop && out.plan.algorithm != Algorithm::native) {
    fail_argument("options.hooks.drop",
                  "the " + backend_name +
                      " backend honours it for native only, whose waits are bounded in the "
                      "kernel; pipelined and decomposed wait on copy events that a dropped chunk "
                      "would never record");
  }
  // A library tail waits on its chunk's copy event, as pipelined does, which
  // a dropped chunk would never record: under a drop hook the kernel keeps
  // every chunk (its waits are bounded).
  if (options.hooks.drop && out.plan.native_tail == NativeTail::library) {
    if (out.resolved.native_tail == NativeTail::library) {
      fail_argument("options.hooks.drop",
                    "not with a forced library tail (native_tail = library): its GEMM waits on "
                    "a copy event that a dropped chunk would never record");
    }
    out.plan.native_tail = NativeTail::kernel;
    out.plan.reason +=
        "; the kernel keeps the last chunk (a drop hook is set, and only the "
        "kernel's waits are bounded)";
  }
  // The local chunk crosses no link: its copy runs ahead of the grid and the
  // kernel reads it without a wait, so there is nothing a drop could stop
  // that a bounded wait would then catch (the CPU backend, whose workers do
  // wait for the local chunk, honours it).
  const int rank = out.problem.rank;
  if (options.hooks.drop && options.hooks.drop(rank, rank)) {
    fail_argument("options.hooks.drop",
                  "the " + backend_name + " backend cannot drop a rank's own chunk (rank " +
                      std::to_string(rank) +
                      "'s chunk crosses no link and the native kernel reads it without waiting)");
  }
  // Nor may the group ask this rank to run another algorithm instead.
  if (options.hooks.drop) out.plan.runnable &= core::algorithm_bit(Algorithm::native);
  out.capturing = stream_is_capturing(static_cast<rt::StreamHandle>(options.stream));
  return out;
}

CheckedCall GpuTransport::check(const core::OpCall& call, const Options& options) const {
  CheckedCall out = check_call(site(), *backend_, call, options);
  check_own_rules(call, out);
  return out;
}

void GpuTransport::time_next_call(int slot) {
  RankResources& res = resources();
  if (slot < 0) {
    res.armed_slots.clear();
  } else {
    res.arm_timed_span(slot);
  }
}

std::optional<double> GpuTransport::timed_call_ms(int slot, bool wait) {
  RankResources& res = resources();
  if (slot < 0 || slot >= static_cast<int>(res.timed.size()) ||
      !res.timed[static_cast<std::size_t>(slot)]->recorded) {
    return std::nullopt;  // no call recorded its span there
  }
  const RankResources::TimedSpan& span = *res.timed[static_cast<std::size_t>(slot)];
  rt::Status done = rt::event_query(span.end.get());
  if (done == rt::kNotReady) {
    if (!wait) return std::nullopt;
    // Every later call of the rank's is ordered after this one.
    synchronize();
    done = rt::event_query(span.end.get());
  }
  gpu::check(done, "event query (a timed call's end)");
  float ms = 0;
  gpu::check(rt::event_elapsed_ms(&ms, span.begin.get(), span.end.get()),
             "event elapsed time (a timed call's begin and end)");
  return ms;
}

}  // namespace asynctp::gpu
