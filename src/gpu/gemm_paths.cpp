#include "gpu/gemm_paths.hpp"

#include <string>

#include "asynctp/error.hpp"
#include "gpu/check.hpp"

namespace asynctp::gpu {
namespace {

void* c_rows(const CallSpec& call, int chunk) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(call.problem.n) * element_size(call.problem.dtype);
  return static_cast<char*>(call.c_out.data) +
         row_bytes * static_cast<std::size_t>(call.problem.m) * static_cast<std::size_t>(chunk);
}

void enqueue_pipelined(const CallSpec& call, RankResources& res, RankBackend& backend) {
  LibraryGemm* lanes[2] = {&library_lane(backend, 0, "pipelined"),
                           &library_lane(backend, 1, "pipelined")};
  const rt::StreamHandle streams[2] = {res.compute.get(), res.lane2.get()};
  const int world = call.problem.world_size;
  // Forked here only: a captured stream that is forked must be joined back.
  wait(res.lane2.get(), res.fork.get(), "stream wait (fork)");
  for (int i = 0; i < world; ++i) {
    const int c = (call.problem.rank + i) % world;
    const int lane = i % 2;
    if (c != call.problem.rank) {
      wait(streams[lane], res.arrived[static_cast<std::size_t>(c)]->get(),
           "stream wait (chunk arrived)");
    }
    lanes[lane]->run(streams[lane], call.gathered_chunk(c), call.problem.m, call.b,
                     c_rows(call, c));
  }
  check(rt::event_record(res.lane2_done.get(), res.lane2.get()), "event record (lane 2 done)");
  wait(res.compute.get(), res.lane2_done.get(), "stream wait (lane 2 done)");
}

void enqueue_decomposed(const CallSpec& call, RankResources& res, RankBackend& backend) {
  LibraryGemm& gemm = library_lane(backend, 0, "decomposed");
  const rt::StreamHandle s = res.compute.get();
  for (int c : call.arrival_order) {
    wait(s, res.arrived[static_cast<std::size_t>(c)]->get(), "stream wait (chunk arrived)");
  }
  gemm.run(s, call.gathered, call.problem.gathered_rows(), call.b, call.c_out.data);
}

}  // namespace

LibraryGemm& library_lane(RankBackend& backend, int lane, const char* path) {
  LibraryGemm* gemm = backend.library_gemm(lane);
  if (!gemm) {
    throw Error(ErrorCode::unsupported,
                std::string(path) + " on " + backend.name() + ": this build has no library GEMM");
  }
  return *gemm;
}

void enqueue_gemm(const CallSpec& call, RankResources& res, RankBackend& backend) {
  switch (call.plan.algorithm) {
    case Algorithm::native:
      backend.launch_native(call, res, static_cast<const std::uint32_t*>(res.flags.get()));
      return;
    case Algorithm::pipelined:
      enqueue_pipelined(call, res, backend);
      return;
    case Algorithm::decomposed:
    case Algorithm::automatic:  // the plan never leaves auto
      enqueue_decomposed(call, res, backend);
      return;
  }
}

}  // namespace asynctp::gpu
