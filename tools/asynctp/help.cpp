#include "help.hpp"

#include <string>

namespace asynctp::tool {
namespace {

// Shared by both help texts: a user who reads either learns the knobs that
// change what the library does without recompiling.
constexpr const char* kEnvHelp =
    "Environment (options in code and the flags above override them):\n"
    "  ASYNCTP_ALGO             auto|native|pipelined|decomposed: the algorithm when none is\n"
    "                           forced (default auto = the planner decides). `asynctp run`\n"
    "                           forces each measured algorithm, so it only changes the\n"
    "                           planner line and --algo auto.\n"
    "  ASYNCTP_WAIT_TIMEOUT_MS  positive integer: bound on every cross-rank wait (chunk\n"
    "                           signals, barriers) in ms (default 60000); --timeout-ms wins.\n"
    "  ASYNCTP_TILE_M           multiple of 8, <= 4096: native tile rows (default 256 on cpu);\n"
    "                           m per rank must be a multiple of it for native.\n"
    "  ASYNCTP_TILE_N           multiple of 8, <= 4096: native tile columns (default 256).\n"
    "  ASYNCTP_CPU_WORKERS      positive integer: GEMM workers per rank on the cpu backend\n"
    "                           (default hardware threads / world size, at least 2);\n"
    "                           --workers wins.\n"
    "  ASYNCTP_DEBUG            WARN|INFO|TRACE: library log level on stderr (default WARN;\n"
    "                           INFO logs each call's plan and reason).\n";

constexpr const char* kAlgoHelp =
    "Algorithms:\n"
    "  native      one persistent GEMM consumes the gathered A chunk by chunk as chunks\n"
    "              arrive (local shard first), each chunk gated on its signal; needs bf16,\n"
    "              m per rank a multiple of the tile M (256), n and k multiples of 8.\n"
    "  pipelined   per-chunk copies overlapped with per-chunk GEMMs on two lanes.\n"
    "  decomposed  the all-gather completes, then one GEMM: the baseline of the speedup\n"
    "              column.\n"
    "  auto        whatever the planner picks (native where it can run and pays off).\n";

// What the link models mean (asynctp::cuda::Link), for `run` and `bench`.
constexpr const char* kLinkHelp =
    "Links (how a peer's shard reaches a rank when all W ranks share one GPU; neither\n"
    "takes SMs from the GEMM, since a same-GPU device-to-device copy runs on SMs and\n"
    "can deadlock a full persistent grid):\n"
    "  pcie      real transfers over PCIe: each peer chunk goes device -> pinned host ->\n"
    "            device on the copy engines, the two hops pipelined over two streams.\n"
    "  arrival   a faster link, modelled: the peer chunks are copied into the gathered\n"
    "            buffer before the GEMM starts, and the i-th chunk to arrive has its\n"
    "            signal released no earlier than (i + 1) * chunk bytes / --link-gbps\n"
    "            after the call's clock starts (GB/s = 1e9 bytes/s into each rank).\n"
    "  nccl      real GPUs: rank r on GPU r of this machine, one process, one NCCL\n"
    "            communicator (asynctp::nccl::LocalGroup). native and pipelined pull\n"
    "            peer chunks from NCCL symmetric memory with copies; decomposed is\n"
    "            ncclAllGather + cuBLAS. The ranks run at the same time; a call's time\n"
    "            is the slowest rank's. Default for `run` when W > 1 and W GPUs are\n"
    "            present (and no --device is named).\n";

// How the cuda backend runs and is timed.
constexpr const char* kCudaHelp =
    "On the cuda backend the W ranks are a loopback group: W host threads, each with\n"
    "its own non-blocking stream and device buffers, on one GPU. Calls are asynchronous\n"
    "per rank (they enqueue on the rank's stream and return; the tool then waits with\n"
    "asynctp::synchronize). For timing the ranks are serialized: each rank's device\n"
    "work waits for the previous rank's, so every call runs as if its rank had the GPU\n"
    "alone, and the per-rank time is the span from a CUDA event on rank 0's stream just\n"
    "before its call to one on rank W-1's stream just after its call, divided by W.\n"
    "From the second call on, rank 0's stream holds the device work back until every\n"
    "rank has enqueued its call, so the time is the device's, not the host's.\n";

}  // namespace

std::string main_help() {
  return std::string(
             "asynctp: tensor-parallel fused all-gather + matmul (AsyncTP)\n"
             "\n"
             "Usage:\n"
             "  asynctp run [flags]     measure fused_all_gather_matmul across W ranks\n"
             "  asynctp bench [flags]   single-GPU overlap benchmark (CUDA only): native,\n"
             "                          pipelined and decomposed against one cuBLAS GEMM\n"
             "  asynctp --help          this text\n"
             "  asynctp run --help      every flag of `run`\n"
             "  asynctp bench --help    every flag of `bench`\n"
             "  asynctp --version       the version\n"
             "\n"
             "Every rank r holds A_r (m x k) and its B (k x n); every rank computes\n"
             "C = allgather(A_0..A_{W-1}) @ B ((W*m) x n) and receives the gathered A.\n"
             "\n"
             "run flags (see `asynctp run --help` for details):\n"
             "  --backend auto|cpu|cuda  --world-size W  -m M  -n N  -k K\n"
             "  --algo all|auto|native|pipelined|decomposed  --dtype bf16|fp16|fp32\n"
             "  --b-layout row|col  --iters N  --warmup N  --check  --json  --trace FILE\n"
             "  --seed S  --timeout-ms T\n"
             "  cpu backend only:  --workers P\n"
             "  cuda backend only: --link pcie|arrival|nccl  --link-gbps X  --device N\n"
             "\n"
             "bench flags (see `asynctp bench --help` for details):\n"
             "  --link pcie|arrival|both|nccl  --link-gbps X  --world-size W  -m M  -n N  -k K\n"
             "  --b-layout row|col  --iters N  --warmup N  --device N  --check  --json\n"
             "  --seed S  --timeout-ms T\n"
             "\n") +
         kAlgoHelp + "\n" + kCudaHelp + "\n" + kLinkHelp + "\n" + kEnvHelp +
         "\n"
         "Exit status: 0 success, 1 a library error, no usable GPU for a CUDA run or a\n"
         "failed --check, 2 bad usage.\n";
}

std::string run_help() {
  return std::string(
             "Usage: asynctp run [flags]\n"
             "\n"
             "Runs fused_all_gather_matmul on W ranks, times each algorithm (median over\n"
             "iterations; cpu: of the slowest rank's call; cuda: of the per-rank time, see\n"
             "below) and prints a table, or JSON.\n"
             "\n"
             "Flags:\n"
             "  --backend B          auto|cpu|cuda: where the ranks run (default auto = cuda\n"
             "                       when this binary has the CUDA backend and --device is a\n"
             "                       usable GPU, else cpu; the header and JSON say which ran).\n"
             "                       cpu: W ranks as threads of this process, on host memory.\n"
             "                       cuda: W virtual ranks on one GPU (a loopback group), on\n"
             "                       device memory; an error when not built in or no usable\n"
             "                       GPU is present. native on cuda needs bf16 and sm_90;\n"
             "                       pipelined and decomposed take bf16, fp16 and fp32.\n"
             "  --world-size W       number of ranks (default 8)\n"
             "  -m M                 GLOBAL rows of the gathered A and of C; must be divisible\n"
             "                       by W; each rank's shard has m = M / W rows (default 8192)\n"
             "  -n N                 columns of B and C (default 2048)\n"
             "  -k K                 columns of A, rows of B (default 2048)\n"
             "  --algo A             all|auto|native|pipelined|decomposed (default all = native,\n"
             "                       pipelined and decomposed); a single algorithm is measured\n"
             "                       with decomposed as the baseline; auto runs the planner's\n"
             "                       pick. An algorithm that cannot run this problem shows as\n"
             "                       unavailable; asked for alone, it is an error.\n"
             "  --dtype D            bf16|fp16|fp32 storage of A, B, C (default bf16; fp32\n"
             "                       accumulation always)\n"
             "  --b-layout L         row|col: B row- or column-major (default row)\n"
             "  --iters N            timed iterations per algorithm (default 5)\n"
             "  --warmup N           untimed iterations first (default 1)\n"
             "  --check              before timing, run each algorithm once on poisoned outputs\n"
             "                       and compare every rank's C with a float64 reference\n"
             "                       (every element written, relative Frobenius error within\n"
             "                       the dtype's tolerance) and its gathered A bit for bit\n"
             "                       with the shards (cuda: both copied back to the host);\n"
             "                       failing exits 1\n"
             "  --json               print one JSON object on stdout instead of the table\n"
             "  --trace FILE         after timing, run one more call of each algorithm with\n"
             "                       tracing and write a Chrome trace (Perfetto,\n"
             "                       chrome://tracing) of the spans the backend records (cpu:\n"
             "                       producer and GEMM worker threads; cuda: each rank's\n"
             "                       host-side check and enqueue of the call, not the device\n"
             "                       work, which runs after it returns)\n"
             "  --seed S             seed of the random inputs (default: from the clock; always\n"
             "                       printed so a run can be repeated)\n"
             "  --workers P          cpu backend only: GEMM workers per rank (default 0 =\n"
             "                       automatic)\n"
             "  --timeout-ms T       bound on every cross-rank wait in ms (default:\n"
             "                       ASYNCTP_WAIT_TIMEOUT_MS, else 60000)\n"
             "  --link L             cuda backend only: pcie|arrival|nccl, how peer shards\n"
             "                       reach a rank (default nccl with W > 1 and W GPUs, else\n"
             "                       pcie; see Links below)\n"
             "  --link-gbps X        cuda backend and --link arrival only: the modelled\n"
             "                       link's bandwidth into each rank in GB/s, a number > 0\n"
             "                       (default 400)\n"
             "  --device N           cuda backend only: the CUDA device ordinal (default 0)\n"
             "  -h, --help           this text\n"
             "\n"
             "The cuda-only flags are errors with --backend cpu, and with --backend auto\n"
             "when it picks cpu; --workers is an error on cuda.\n"
             "\n") +
         kAlgoHelp + "\n" + kCudaHelp + "\n" + kLinkHelp + "\n" + kEnvHelp +
         "\n"
         "Examples:\n"
         "  asynctp run --world-size 8 -m 8192 -n 2048 -k 2048 --check\n"
         "  asynctp run --backend cuda --link arrival --link-gbps 200 -n 8192 -k 8192 --check\n"
         "\n"
         "Exit status: 0 success, 1 a library error, no usable GPU for --backend cuda or a\n"
         "failed --check, 2 bad usage (including --backend cuda in a binary built\n"
         "without it).\n";
}

std::string bench_help() {
  return std::string(
             "Usage: asynctp bench [flags]\n"
             "\n"
             "The single-GPU overlap benchmark (CUDA backend only; without a usable GPU it\n"
             "exits 1 saying why). For each link model it measures, on W virtual ranks of\n"
             "one GPU with bf16 data, the per-rank time of native, pipelined and decomposed,\n"
             "and T_gemm: one cuBLAS GEMM (cublasGemmEx, fp32 accumulation) of the whole\n"
             "gathered problem (M x N x K). The all-gather is not timed alone:\n"
             "T_comm = T_decomposed - T_gemm, derived (decomposed is the all-gather\n"
             "followed by the GEMM, with no overlap). Per link and algorithm it reports:\n"
             "  time        median per-rank time in ms\n"
             "  TFLOP/s     2*M*N*K / time\n"
             "  speedup     T_decomposed / time\n"
             "  overlap     (T_comm + T_gemm - time) / min(T_comm, T_gemm): 1 = perfect\n"
             "              overlap, 0 = none (undefined when T_comm <= 0)\n"
             "  ideal/time  max(T_comm, T_gemm) / time: 1 = as fast as perfect overlap\n"
             "\n"
             "Flags:\n"
             "  --link L             pcie|arrival|both|nccl: the links to measure, in turn\n"
             "                       (default both; nccl: W GPUs; see Links below)\n"
             "  --link-gbps X        the arrival link's bandwidth into each rank in GB/s, a\n"
             "                       number > 0 (default 400); needs arrival in --link\n"
             "  --world-size W       number of virtual ranks (default 8)\n"
             "  -m M                 GLOBAL rows of the gathered A and of C; must be divisible\n"
             "                       by W; each rank's shard has M / W rows (default 8192)\n"
             "  -n N                 columns of B and C (default 8192)\n"
             "  -k K                 columns of A, rows of B (default 8192)\n"
             "  --b-layout L         row|col: B row- or column-major (default row)\n"
             "  --iters N            timed iterations per measurement (default 20)\n"
             "  --warmup N           untimed iterations first (default 3)\n"
             "  --device N           the CUDA device ordinal (default 0)\n"
             "  --check              before timing, run each algorithm (and the cuBLAS GEMM)\n"
             "                       once on poisoned outputs and compare with a float64\n"
             "                       reference (relative Frobenius error, every element\n"
             "                       written, gathered A bitwise); failing exits 1\n"
             "  --json               print one JSON object on stdout instead of the table\n"
             "  --seed S             seed of the random inputs (default: from the clock;\n"
             "                       always printed)\n"
             "  --timeout-ms T       bound on every cross-rank wait in ms (default:\n"
             "                       ASYNCTP_WAIT_TIMEOUT_MS, else 60000)\n"
             "  -h, --help           this text\n"
             "\n") +
         kCudaHelp + "\n" + kLinkHelp +
         "\n"
         "Example:\n"
         "  asynctp bench --link both -m 8192 -n 8192 -k 8192 --check\n"
         "\n"
         "Exit status: 0 success, 1 no usable GPU, a library error or a failed --check,\n"
         "2 bad usage.\n";
}

}  // namespace asynctp::tool
