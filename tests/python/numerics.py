"""Reference and tolerances of the tests: float64 products and the error
bounds the library documents (README, "Matmul + reduce-scatter").

The all-gather's C is one GEMM per element: a relative Frobenius bound.
The reduce-scatter's out is checked element by element against the rigorous
bound of src/core/reference.hpp (reference_matmul_reduce_scatter,
reduce_scatter_error_bound; verify::check_matmul_reduce_scatter applies it in
C++): the same derivation, computed here in float64 from the inputs."""

import math
from collections import namedtuple

import torch

# e: the bound of one GEMM output of the dtype (fp32 accumulation, one
# rounding to the dtype); u: the dtype's unit roundoff.
GEMM_BOUND = {torch.bfloat16: 4e-3, torch.float16: 5e-4, torch.float32: 1e-5}
UNIT_ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}

FP32_UNIT = 2.0**-24
# fp32 accumulation's unit: 2^-23, not 2^-24, because tensor cores may round
# their fp32 sums toward zero.
ACCUMULATION_UNIT = 2.0**-23
FLOAT64_UNIT = 2.0**-53
# The spacing of each dtype's subnormals: below the normal range a rounding
# errs by up to half of it, whatever the value.
SUBNORMAL_SPACING = {torch.bfloat16: 2.0**-133, torch.float16: 2.0**-24, torch.float32: 2.0**-149}
# An fp32 product below the normal range may be flushed to zero.
ACCUMULATION_UNDERFLOW = 2.0**-126
# Covers the float64 evaluation of the bound's own terms.
EVALUATION_FACTOR = 1.001


def all_gather_matmul_bound(dtype):
    """Each output element is one GEMM's: e."""
    return GEMM_BOUND[dtype]


def chained_reduce_scatter_bound(dtype, world_size):
    """A relative Frobenius figure for a reduce-scatter inside a chain of
    ops (the layers' tests, whose inputs are themselves computed): W partials,
    each rounded to the dtype to cross the link, summed in fp32 and rounded
    once: sqrt(W) e + (W-1) sqrt(W) 2^-24 + u. A single op's output is
    checked elementwise instead (reduce_scatter_error_bound)."""
    e, u = GEMM_BOUND[dtype], UNIT_ROUNDOFF[dtype]
    return math.sqrt(world_size) * e + (world_size - 1) * math.sqrt(world_size) * FP32_UNIT + u


def relative_error(got, reference):
    """||got - ref||_F / ||ref||_F in float64; inf when anything is not finite
    (an element never written)."""
    got = got.double()
    if not torch.isfinite(got).all():
        return math.inf
    return ((got - reference).norm() / reference.norm()).item()


# ---- the reduce-scatter's elementwise bound (src/core/reference.hpp) -----------------


def gamma(n, unit):
    """n v / (1 - n v): the relative error n operations of unit roundoff v
    can pile up (Higham, Accuracy and Stability, 3.1); infinite once n v
    reaches 1."""
    nv = max(n, 0) * unit
    return nv / (1 - nv) if nv < 1 else math.inf


# value: C = sum over s of P_s; magnitude: sum over s of |P_s| + g_s G_s;
# accumulation_error: sum over s of (g_s + gamma(k_s + W, 2^-53)) G_s, with
# P_s = A_s B_s (this rank's rows), G_s = |A_s| |B_s|, g_s = gamma(k_s, 2^-23);
# partials: the P_s themselves (for the tests' negative checks).
ReduceScatterReference = namedtuple(
    "ReduceScatterReference", "value magnitude accumulation_error partials world_size"
)


def reduce_scatter_reference(As, Bs, rank, scatter_dim=0):
    """Rank `rank`'s out of fused_matmul_reduce_scatter(As[s], Bs[s]) summed
    over the W = len(As) ranks, in float64, with the terms of its error bound:
    reference.cpp's reference_matmul_reduce_scatter, for A of any rank >= 2
    scattered along `scatter_dim` (the last dimension: B's columns are
    scattered). Inputs are read exactly."""
    world = len(As)
    value = magnitude = accumulation_error = 0
    partials = []
    for A, B in zip(As, Bs):
        if scatter_dim % A.dim() == A.dim() - 1:
            a, b = A.double(), B.double().chunk(world, dim=1)[rank]
        else:
            a, b = A.double().chunk(world, dim=scatter_dim)[rank], B.double()
        k = a.shape[-1]
        p = a @ b
        g = a.abs() @ b.abs()
        accumulation = gamma(k, ACCUMULATION_UNIT)
        underflow = k * ACCUMULATION_UNDERFLOW
        value = value + p
        magnitude = magnitude + p.abs() + accumulation * g + underflow
        accumulation_error = (
            accumulation_error + (accumulation + gamma(k + world, FLOAT64_UNIT)) * g + underflow
        )
        partials.append(p)
    return ReduceScatterReference(value, magnitude, accumulation_error, partials, world)


def reduce_scatter_error_bound(reference, dtype, partial_sum="fp32", average=False):
    """reference.cpp's reduce_scatter_error_bound: elementwise, for any
    correct run, |out - reference.value| <= bound. partial_sum: "fp32" (the
    partials summed in fp32, rounded once) or "output_dtype" (NCCL's ring:
    each step's running sum stored in the dtype). The derivation is in
    src/core/reference.hpp: accumulation (E_acc), the partials' rounding to
    the dtype (u S), their summation (gamma(W - 1, v) (1 + u) S), the final
    rounding (u (|C| + e)), a subnormal spacing h per rounding to the dtype
    (underflow); 1.001 for the float64 evaluation.

    average ("avg"): the rounded sum is then divided by W in fp32 and rounded
    to the dtype: the reference is value / W and the bound becomes
    (bound + w (|C| + bound)) / W with w = u + 2^-24 + u 2^-24 (both
    roundings, and one more h), an upper bound for fp32 too."""
    u = UNIT_ROUNDOFF[dtype]
    h = SUBNORMAL_SPACING[dtype]
    world = reference.world_size
    step = FP32_UNIT if partial_sum == "fp32" else u + FP32_UNIT + u * FP32_UNIT
    summation = gamma(world - 1, step) * (1 + u)
    partials_underflow = h * (world if partial_sum == "fp32" else 2 * world - 1)
    before_rounding = (
        reference.accumulation_error + (u + summation) * reference.magnitude + partials_underflow
    )
    bound = EVALUATION_FACTOR * (before_rounding + u * (reference.value.abs() + before_rounding) + h)
    if average:
        division = u + FP32_UNIT + u * FP32_UNIT
        bound = (bound + division * (reference.value.abs() + bound) + h) / world
    return bound


def beyond_bound(got, expected, bound):
    """'' when every element of `got` is finite and within `bound` of
    `expected` (float64 tensors of one shape); else what failed, with the
    worst element (as verify::check_matmul_reduce_scatter reports it)."""
    got = got.double()
    if got.shape != expected.shape:
        return f"shape {tuple(got.shape)}, expected {tuple(expected.shape)}"
    finite = torch.isfinite(got)
    if not finite.all():
        return f"{int((~finite).sum())} elements not finite (never written?)"
    error = (got - expected).abs()
    beyond = error > bound
    if not beyond.any():
        return ""
    ratio = torch.where(beyond, error / bound, torch.zeros_like(error))
    worst = int(ratio.argmax())
    return (
        f"{int(beyond.sum())} elements beyond their error bound (worst: "
        f"{error.flatten()[worst].item():.3g} > {bound.flatten()[worst].item():.3g}; rel. error "
        f"{relative_error(got, expected):.3g}, the bound's "
        f"{(bound.norm() / expected.norm()).item():.3g})"
    )
