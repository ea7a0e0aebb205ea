"""The PyTorch ops on CUDA through the NCCL transport, one process per GPU:
every algorithm forced against float64 beside torch.mm, a CUDA graph replayed
100 times, torch.compile, and the host time per call (report in
$ASYNCTP_PYTHON_REPORT when set). Skipped without a GPU or without the NCCL
backend in the library."""

import os
import random
import sys

import pytest
import torch

from harness import assert_all_passed, run_ranks


def _why_skip():
    if not torch.cuda.is_available():
        return "no CUDA device"
    from asynctp import _capi

    if not _capi.has_nccl():
        return "the asynctp library was built without the NCCL backend"
    return None


@pytest.mark.skipif(_why_skip() is not None, reason=str(_why_skip()))
def test_cuda_ops_graphs_compile_and_host_overhead():
    results = run_ranks(1, "cuda", random.SystemRandom().randrange(1 << 30),
                        os.environ.get("ASYNCTP_PYTHON_REPORT", ""), timeout=600, backend="nccl")
    for r in results:
        print(r.output)
    assert_all_passed(results)


if __name__ == "__main__":  # without pytest (the device machine may lack it)
    why = _why_skip()
    if why:
        print(f"skipped: {why}")
        sys.exit(0)
    test_cuda_ops_graphs_compile_and_host_overhead()
    print("1 passed, 0 failed")
