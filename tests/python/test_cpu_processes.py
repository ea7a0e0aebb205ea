"""The PyTorch ops and layers across W = 1..4 processes on the CPU: gloo
groups, the CPU multi-process transport underneath."""

import random

import pytest

from harness import assert_all_passed, run_ranks

SEED = random.SystemRandom().randrange(1 << 30)  # fresh inputs every run


def test_seed_is_printed_for_reproduction():
    print(f"seed {SEED}")


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_both_ops_every_algorithm_against_float64(world_size):
    assert_all_passed(run_ranks(world_size, "ops", SEED))


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_two_layer_mlp_matches_float64_values_and_gradients(world_size):
    assert_all_passed(run_ranks(world_size, "layers", SEED))


def test_compile_fullgraph_forward_and_backward():
    assert_all_passed(run_ranks(2, "compile", SEED, timeout=500))


@pytest.mark.parametrize("world_size,bad_rank", [(2, 1), (3, 0)])
def test_bad_inputs_fail_on_every_rank(world_size, bad_rank):
    assert_all_passed(run_ranks(world_size, "bad_inputs", bad_rank))


def test_killed_rank_makes_the_others_fail_naming_it():
    results = run_ranks(3, "killed_rank", 2, timeout=120,
                        env={"ASYNCTP_WAIT_TIMEOUT_MS": "5000"})
    survivors = [r for r in results if r.rank != 2]
    assert all(r.returncode == 0 for r in survivors), "\n".join(map(repr, results))
    assert results[2].returncode != 0


def test_host_overhead_benchmark_runs():
    # What tests/python/test_cuda.py reports on the device, run briefly here
    # so that it cannot rot where no GPU runs it.
    assert_all_passed(run_ranks(1, "overhead"))
