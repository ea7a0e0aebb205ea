// The help texts: what every flag, algorithm, link and variable means.
#include <string>

#include "args.hpp"

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
    "  auto        whatever the planner picks (native where it can run and pays off).\n"
    "  For matmul-reduce-scatter the chunks flow the other way: each rank's GEMM ships\n"
    "  every finished chunk of its partial product to the chunk's owner, which sums the\n"
    "  W partials (decomposed: the whole GEMM first, then the reduce-scatter).\n";

// What the link models mean (asynctp::loopback::Link), for `run` and `bench`.
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
    "            matmul-reduce-scatter: the peers' partials of a rank's rows are placed\n"
    "            before its call; slot i is ready one transfer after the rank's own\n"
    "            chunk of ring step i. With serialized ranks (bench) the pcie link\n"
    "            does the same and moves each placed partial out to pinned host and\n"
    "            back on the rank's copy engines at that moment (real transfers).\n"
    "  nccl      real GPUs: rank r on GPU r of this machine, one process, one NCCL\n"
    "            communicator (asynctp::nccl::LocalGroup). native and pipelined pull\n"
    "            peer chunks from NCCL symmetric memory with copies; decomposed is\n"
    "            ncclAllGather + cuBLAS. The ranks run at the same time; a call's time\n"
    "            is the slowest rank's. Default for `run` when W > 1 and W GPUs are\n"
    "            present (and no --device is named).\n";

// How the cpu backend runs: threads, or one process per rank under a launcher.
constexpr const char* kCpuHelp =
    "On the cpu backend the W ranks are threads of this process. Under a launcher\n"
    "(torchrun, mpirun, srun) whose world is larger than one, each process is one rank\n"
    "of a process group on this host (the workspace in POSIX shared memory, rank 0's\n"
    "group id handed out over MASTER_ADDR, port ASYNCTP_RENDEZVOUS_PORT or\n"
    "MASTER_PORT + 1); the world size comes from the launcher, the seed (when --seed\n"
    "is not given) from the job, and rank 0 prints the table with its own call times;\n"
    "every rank checks its own output and exits 1 if it is wrong.\n"
    "  torchrun --nproc-per-node 4 --no-python build/tools/asynctp run --backend cpu\n";

// How a GPU backend (cuda, hip) runs and is timed.
constexpr const char* kCudaHelp =
    "On a GPU backend (cuda; hip in a ROCm build) the W ranks are a loopback group: W\n"
    "host threads, each with its own non-blocking stream and device buffers, on one\n"
    "GPU. Calls are asynchronous\n"
    "per rank (they enqueue on the rank's stream and return; the tool then waits with\n"
    "asynctp::synchronize). For timing the ranks are serialized: each rank's device\n"
    "work waits for the previous rank's, so every call runs as if its rank had the GPU\n"
    "alone, and the per-rank time is the mean over ranks of each call's own span, from\n"
    "a GPU event where the rank's work begins to one where it is joined on its stream\n"
    "(LoopbackGroup::last_call_ms). The arrival link places the peer chunks before\n"
    "that span begins: its release times stand for the transfer.\n"
    "With --trace each rank's row also holds the device's timeline of its traced\n"
    "calls (loopback group, NCCL ranks): lanes named by stream (device stream, copy out, copy\n"
    "in, compute, lane 2) with every copy, signal, GEMM and reduction from timed\n"
    "events, and for native on cuda one lane per chunk from its first tile start to\n"
    "its last tile end (the kernel's global timer), put on the host's clock; the\n"
    "\"device clock aligned\" instant says how far off that may be. An untraced\n"
    "call pays a branch per step (and per native tile) for it.\n"
    "Under a launcher (torchrun, mpirun, srun: RANK and WORLD_SIZE or the launcher's\n"
    "own variables set, MASTER_ADDR and MASTER_PORT too) each process is one rank on\n"
    "the GPU LOCAL_RANK names; the world size comes from the launcher, the seed (when\n"
    "--seed is not given) from the job, and rank 0 prints the table with its own\n"
    "figures; every rank checks its own C and exits 1 if it is wrong.\n"
    "  torchrun --nproc-per-node 8 --no-python build/tools/asynctp run -m 8192 --check\n";

// "  --iters N            timed iterations ...", continuation lines under
// the text: the layout of every flag in every help text.
std::string flag_lines(Command command) {
  std::string out = "Flags:\n";
  for (const Flag& flag : flags_of(command)) {
    std::string left =
        flag.alias != nullptr ? std::string(flag.alias) + ", " + flag.name : std::string(flag.name);
    if (flag.metavar != nullptr) left += std::string(" ") + flag.metavar;
    out += "  " + left + std::string(left.size() < 21 ? 21 - left.size() : 1, ' ');
    for (const char* c = flag.help; *c != '\0'; ++c) {
      out += *c == '\n' ? "\n" + std::string(23, ' ') : std::string(1, *c);
    }
    out += "\n";
  }
  return out + "\n";
}

}  // namespace

std::string main_help() {
  return std::string(
             "asynctp: tensor-parallel fused all-gather + matmul and matmul + reduce-scatter\n"
             "\n"
             "Usage:\n"
             "  asynctp run [flags]     measure a fused op (--op) across W ranks\n"
             "  asynctp bench [flags]   single-GPU overlap benchmark (CUDA only): native,\n"
             "                          pipelined and decomposed against one cuBLAS GEMM\n"
             "  asynctp --help          this text\n"
             "  asynctp run --help      every flag of `run`\n"
             "  asynctp bench --help    every flag of `bench`\n"
             "  asynctp --version       the version\n"
             "\n"
             "Every rank r holds A_r (m x k) and its B (k x n); every rank computes\n"
             "C = allgather(A_0..A_{W-1}) @ B ((W*m) x n) and receives the gathered A.\n"
             "With --op matmul-reduce-scatter every rank r holds A_r (M x k) and B_r (k x n)\n"
             "and receives its M/W rows of the sum over r of A_r @ B_r.\n"
             "\n"
             "run flags (see `asynctp run --help` for details):\n"
             "  --op all-gather-matmul|matmul-reduce-scatter  --backend auto|cpu|cuda|hip\n"
             "  --world-size W  -m M  -n N  -k K\n"
             "  --algo all|auto|native|pipelined|decomposed  --dtype bf16|fp16|fp32\n"
             "  --b-layout row|col  --iters N  --warmup N  --check  --json  --trace FILE\n"
             "  --seed S  --timeout-ms T  --no-gathered\n"
             "  cpu backend only:  --workers P\n"
             "  GPU backend only: --link pcie|arrival|nccl  --link-gbps X  --device N\n"
             "                    --clocks\n"
             "\n"
             "bench flags (see `asynctp bench --help` for details):\n"
             "  --op OP  --link pcie|arrival|both|nccl  --link-gbps X  --world-size W\n"
             "  -m M  -n N  -k K\n"
             "  --b-layout row|col  --iters N  --warmup N  --device N  --check  --json\n"
             "  --clocks  --seed S  --timeout-ms T  --no-gathered\n"
             "\n") +
         kAlgoHelp + "\n" + kCudaHelp + "\n" + kLinkHelp + "\n" + kEnvHelp +
         "\n"
         "Exit status: 0 success, 1 a library error, no usable GPU for a CUDA run or a\n"
         "failed --check, 2 bad usage.\n";
}

std::string help_of(Command command) {
  if (command == Command::run) {
    return std::string(
               "Usage: asynctp run [flags]\n"
               "\n"
               "Runs the op (--op) on W ranks, times each algorithm (median over\n"
               "iterations; cpu: of the slowest rank's call; cuda: of the per-rank time, see\n"
               "below) and prints a table, or JSON.\n"
               "\n") +
           flag_lines(command) +
           "The GPU-only flags are errors with --backend cpu, and with --backend auto\n"
           "when it picks cpu; --workers is an error on a GPU backend.\n"
           "\n" +
           kAlgoHelp + "\n" + kCpuHelp + "\n" + kCudaHelp + "\n" + kLinkHelp + "\n" + kEnvHelp +
           "\n"
           "Examples:\n"
           "  asynctp run --world-size 8 -m 8192 -n 2048 -k 2048 --check\n"
           "  asynctp run --op matmul-reduce-scatter -m 8192 -n 8192 -k 1024 --check\n"
           "  asynctp run --backend cuda --link arrival --link-gbps 200 -n 8192 -k 8192 --check\n"
           "\n"
           "Exit status: 0 success, 1 a library error, no usable GPU for --backend cuda|hip\n"
           "or a failed --check, 2 bad usage (including --backend cuda|hip in a binary built\n"
           "without it).\n";
  }
  return std::string(
             "Usage: asynctp bench [flags]\n"
             "\n"
             "The single-GPU overlap benchmark (CUDA backend only; without a usable GPU, or\n"
             "for an op the backend does not run, it exits 1 saying why). For each link\n"
             "model it measures, on W virtual ranks of one GPU with bf16 data, the per-rank\n"
             "time of native, pipelined and decomposed, and T_gemm: one cuBLAS GEMM\n"
             "(cublasGemmEx, fp32 accumulation) of rank 0's whole GEMM (M x N x K). The\n"
             "communication is not timed alone: T_comm = T_decomposed - T_gemm, derived\n"
             "(decomposed: the communication and the GEMM one after the other, no\n"
             "overlap). A link's figures are taken in\n"
             "rounds, one iteration of each algorithm and of the GEMM (W times on a\n"
             "loopback link) per round, so all run at the same clocks (the card slows under\n"
             "sustained load); the order rotates from round to round, so that each takes\n"
             "every position in turn. Per link and algorithm it reports:\n"
             "  time        median per-rank time in ms (over rounds)\n"
             "  TFLOP/s     2*M*N*K / time\n"
             "  speedup     T_decomposed / time\n"
             "  overlap     (T_comm + T_gemm - time) / min(T_comm, T_gemm): 1 = perfect\n"
             "              overlap, 0 = none (undefined when T_comm <= 0)\n"
             "  ideal/time  max(T_comm, T_gemm) / time: 1 = as fast as perfect overlap\n"
             "\n") +
         flag_lines(command) + kCudaHelp + "\n" + kLinkHelp +
         "\n"
         "Example:\n"
         "  asynctp bench --link both -m 8192 -n 8192 -k 8192 --check\n"
         "\n"
         "Exit status: 0 success, 1 no usable GPU, a library error or a failed --check,\n"
         "2 bad usage.\n";
}

}  // namespace asynctp::tool
