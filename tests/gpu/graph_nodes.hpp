// A captured graph's nodes by type, for the graph tests. Asked of the
// driver (cuGraphNodeGetType, through the runtime's entry-point lookup, as
// src/cuda/stream_memops.cpp reaches the stream memory operations): the
// runtime's cudaGraphNodeGetType has no enum for the batch mem-op nodes
// that the signal writes capture to and answers them with cudaErrorUnknown,
// which compute-sanitizer rightly reports as a failed API call.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

namespace asynctp_test::gpu {

struct GraphNodeCounts {
  int total = 0, kernels = 0, memcpys = 0, memsets = 0, mem_ops = 0, others = 0;
  bool ok = false;  // every node's type was read
};

inline GraphNodeCounts count_graph_nodes(cudaGraph_t graph) {
  using NodeGetType = CUresult(CUDAAPI*)(CUgraphNode, CUgraphNodeType*);
  GraphNodeCounts counts;
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuGraphNodeGetType", &entry, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || entry == nullptr) {
    (void)cudaGetLastError();
    return counts;
  }
  NodeGetType node_type = nullptr;
  std::memcpy(&node_type, &entry, sizeof node_type);
  std::size_t n = 0;
  if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return counts;
  std::vector<cudaGraphNode_t> nodes(n);
  if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return counts;
  counts.total = static_cast<int>(n);
  for (cudaGraphNode_t node : nodes) {
    CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
    if (node_type(reinterpret_cast<CUgraphNode>(node), &t) != CUDA_SUCCESS) return counts;
    switch (t) {
      case CU_GRAPH_NODE_TYPE_KERNEL: ++counts.kernels; break;
      case CU_GRAPH_NODE_TYPE_MEMCPY: ++counts.memcpys; break;
      case CU_GRAPH_NODE_TYPE_MEMSET: ++counts.memsets; break;
      case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: ++counts.mem_ops; break;
      default: ++counts.others; break;
    }
  }
  counts.ok = true;
  return counts;
}

}  // namespace asynctp_test::gpu
