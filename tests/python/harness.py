"""Runs a scenario of rank_scenarios.py on W processes, one rank each, under
a gloo (or NCCL) process group, as torchrun would: RANK, WORLD_SIZE,
MASTER_ADDR and a free MASTER_PORT in the environment. Every process is
bounded by a timeout and killed past it, so a hang fails the test instead
of stalling the suite."""

import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RankResult:
    def __init__(self, rank, returncode, output):
        self.rank, self.returncode, self.output = rank, returncode, output

    def __repr__(self):
        return f"rank {self.rank}: exit {self.returncode}\n{self.output}"


def run_ranks(world_size, scenario, *args, timeout=240, env=None, backend="gloo"):
    """Starts the ranks, waits for all (bounded), returns their RankResults."""
    port = free_port()
    procs = []
    for rank in range(world_size):
        rank_env = dict(os.environ)
        rank_env.update(
            RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_RANK=str(rank),
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), ASYNCTP_TEST_BACKEND=backend,
            # Each rank's own threads: two cores shared by up to four ranks.
            OMP_NUM_THREADS="1",
        )
        rank_env.update(env or {})
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(HERE, "rank_scenarios.py"), scenario, *map(str, args)],
            env=rank_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ))
    deadline = time.monotonic() + timeout
    results = []
    for rank, proc in enumerate(procs):
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            out, _ = proc.communicate()
            out += f"\n[harness] rank {rank} still running after {timeout} s: killed"
            proc.returncode = "timeout"
        results.append(RankResult(rank, proc.returncode, out))
    return results


def assert_all_passed(results):
    failed = [r for r in results if r.returncode != 0]
    assert not failed, "\n".join(map(repr, results))
