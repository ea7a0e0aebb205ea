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

}  // namespace

std::string main_help() {
  return std::string(
             "asynctp: tensor-parallel fused all-gather + matmul (AsyncTP)\n"
             "\n"
             "Usage:\n"
             "  asynctp run [flags]     measure fused_all_gather_matmul across W ranks\n"
             "  asynctp --help          this text\n"
             "  asynctp run --help      every flag of `run`\n"
             "  asynctp --version       the version\n"
             "\n"
             "Every rank r holds A_r (m x k) and its B (k x n); every rank computes\n"
             "C = allgather(A_0..A_{W-1}) @ B ((W*m) x n) and receives the gathered A.\n"
             "\n"
             "run flags (see `asynctp run --help` for details):\n"
             "  --backend auto|cpu  --world-size W  -m M  -n N  -k K\n"
             "  --algo all|auto|native|pipelined|decomposed  --dtype bf16|fp16|fp32\n"
             "  --b-layout row|col  --iters N  --warmup N  --check  --json  --trace FILE\n"
             "  --seed S  --workers P  --timeout-ms T\n"
             "\n") +
         kAlgoHelp + "\n" + kEnvHelp +
         "\n"
         "Exit status: 0 success, 1 a library error or a failed --check, 2 bad usage.\n";
}

std::string run_help() {
  return std::string(
             "Usage: asynctp run [flags]\n"
             "\n"
             "Runs fused_all_gather_matmul on W ranks, times each algorithm (median over\n"
             "iterations of the slowest rank's call) and prints a table, or JSON.\n"
             "\n"
             "Flags:\n"
             "  --backend auto|cpu   where the ranks run; auto = the best backend built in\n"
             "                       (default auto; cpu: W ranks as threads of this process)\n"
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
             "  --check              compare every rank's C with a float64 reference (relative\n"
             "                       Frobenius error within the dtype's tolerance) and its\n"
             "                       gathered A bit for bit with the shards; failing exits 1\n"
             "  --json               print one JSON object on stdout instead of the table\n"
             "  --trace FILE         after timing, run one more call of each algorithm with\n"
             "                       tracing and write a Chrome trace (Perfetto, "
             "chrome://tracing)\n"
             "  --seed S             seed of the random inputs (default: from the clock; always\n"
             "                       printed so a run can be repeated)\n"
             "  --workers P          GEMM workers per rank (default 0 = automatic)\n"
             "  --timeout-ms T       bound on every cross-rank wait in ms (default:\n"
             "                       ASYNCTP_WAIT_TIMEOUT_MS, else 60000)\n"
             "  -h, --help           this text\n"
             "\n") +
         kAlgoHelp + "\n" + kEnvHelp +
         "\n"
         "Example:\n"
         "  asynctp run --world-size 8 -m 8192 -n 2048 -k 2048 --check\n"
         "\n"
         "Exit status: 0 success, 1 a library error or a failed --check, 2 bad usage.\n";
}

}  // namespace asynctp::tool
