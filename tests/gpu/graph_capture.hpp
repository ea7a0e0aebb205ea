// CUDA graph capture of one call per rank of a loopback group, for the graph
// tests (loopback_graph_test, loopback_reduce_scatter_test,
// loopback_graph_replay_test): each rank captures its call on its own stream
// (loopback ranks are separate captures: they cannot join each other's
// streams), and what happened is kept per rank for the test to judge.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "gpu/loopback_support.hpp"

namespace asynctp_test::loopback {

// One rank's capture: the graph, its executable, and what happened.
struct RankCapture {
  cudaError_t begin = cudaErrorUnknown;
  cudaError_t end = cudaErrorUnknown;
  bool call_ok = false;
  std::string message;  // what the call threw under capture
  asynctp::RunInfo info;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;

  RankCapture() = default;
  RankCapture(const RankCapture&) = delete;
  RankCapture& operator=(const RankCapture&) = delete;
  ~RankCapture() {
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (graph) (void)cudaGraphDestroy(graph);
  }
};
using RankCaptures = std::vector<std::unique_ptr<RankCapture>>;

// Every rank begins a capture in `mode` on its stream, makes call(comm, its
// stream) and ends the capture, on the group's threads (bounded). A failed
// capture is left in the rank's RankCapture; the streams are drained after.
template <class Group>
RankCaptures capture_every_rank(Group& group, const RankStreams& streams,
                                cudaStreamCaptureMode mode, const RankCall& call) {
  RankCaptures caps;
  for (int r = 0; r < group.world_size(); ++r) caps.push_back(std::make_unique<RankCapture>());
  run_group_bounded(
      group,
      [&](asynctp::Comm& comm) {
        RankCapture& cap = *caps[static_cast<std::size_t>(comm.rank())];
        const cudaStream_t s = streams[comm.rank()];
        cap.begin = cudaStreamBeginCapture(s, mode);
        if (cap.begin != cudaSuccess) return;
        try {
          cap.info = call(comm, s);
          cap.call_ok = true;
        } catch (const std::exception& e) {
          cap.message = e.what();
        }
        cap.end = cudaStreamEndCapture(s, &cap.graph);
      },
      "capture");
  (void)cudaGetLastError();  // a failed capture is reported per rank
  streams.drain("after capture");
  return caps;
}

// Launches every rank's instantiated graph on its stream, `times` times over.
inline cudaError_t launch_every_rank(const RankCaptures& caps, const RankStreams& streams,
                                     int times = 1) {
  for (int i = 0; i < times; ++i) {
    for (int r = 0; r < streams.size(); ++r) {
      const cudaError_t e = cudaGraphLaunch(caps[static_cast<std::size_t>(r)]->exec, streams[r]);
      if (e != cudaSuccess) return e;
    }
  }
  return cudaSuccess;
}

// asynctp::synchronize on every rank (on the group's threads) throws nothing:
// what only the device sees (a wait that timed out inside a replay) is clean.
template <class Group>
void expect_synchronize_clean(Group& group, const std::string& what) {
  std::vector<std::string> errors(static_cast<std::size_t>(group.world_size()));
  run_group_bounded(
      group,
      [&](asynctp::Comm& comm) {
        try {
          asynctp::synchronize(comm);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(comm.rank())] = e.what();
        }
      },
      what + ": synchronize");
  for (std::size_t r = 0; r < errors.size(); ++r) {
    EXPECT_EQ("", errors[r]) << what << ": synchronize on rank " << r;
  }
}

}  // namespace asynctp_test::loopback
