#!/usr/bin/env python3
"""A cost table fitted to the calls of one host (no device needed).

The table's GEMM samples come from a sustained sweep (calibrate.sh), whose
clocks differ from those of a call run in a burst, and its fixed costs are
what a call takes beyond its GEMMs, link and reduction: launches, events,
waits and joins, which depend on the host as much as on the GPU.
scripts/device/call-costs.sh measures both on the host at hand:
  - tiny calls (a GEMM of a few microseconds, a free link) at W = 2, 4, 8:
    per op and algorithm, the least-squares line over W of the measured
    call less the model's prediction without fixed costs is
    `fixed <op> <algorithm> <us per call> <us per chunk>` (a negative
    coefficient is written as 0 and reported);
  - GEMM-bound calls (predicted at 0.25 ms and more without fixed costs):
    the median over them of (measured - fixed) / predicted scales every
    `gemm` line of the table (burst against sustained clocks).
The fixed costs are fitted again once the GEMMs are scaled. The model's
predictions come from bench/planner_replay.cpp (ASYNCTP_REPLAY_RESIDUALS:
each prediction less its fixed cost), so this script has no model of its own.

    fit_call_costs.py REPLAY TABLE CALL_COSTS OUT_TABLE
      REPLAY      the asynctp_planner_replay binary (build/bench/)
      TABLE       the cost table to fit (its links and reduction are kept)
      CALL_COSTS  call-costs.sh's call-costs.txt (grid_points.py lines)
      OUT_TABLE   where the fitted table goes
"""
import os
import statistics
import subprocess
import sys
import tempfile

ALGORITHMS = ("native", "pipelined", "decomposed")
GEMM_BOUND_MS = 0.25  # predicted without fixed costs: a call the GEMM dominates


def least_squares(points):
    """(intercept, slope) of the line through (x, y) points; slope 0 for one x."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def with_lines(lines, scale, fixed):
    """The table's lines with each gemm time times `scale` and the fixed lines
    from `fixed` ({(op, algorithm): (per call, per chunk)})."""
    out = []
    for line in lines:
        w = line.split()
        if w and w[0] == "gemm":
            w[-1] = "%.5f" % (float(w[-1]) * scale)
            line = " ".join(w)
        elif w and w[0] == "fixed":
            line = "fixed %s %s %.1f %.2f" % (w[1], w[2], *fixed.get((w[1], w[2]), (0.0, 0.0)))
        out.append(line)
    return out


def residuals(replay, lines, call_costs):
    """[(op, algorithm, W, measured ms, predicted ms less fixed)] of every call."""
    with tempfile.TemporaryDirectory() as tmp:
        table = os.path.join(tmp, "table.txt")
        path = os.path.join(tmp, "residuals.txt")
        open(table, "w").write("\n".join(lines) + "\n")
        subprocess.run([replay, table, call_costs], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, ASYNCTP_REPLAY_RESIDUALS=path))
        rows = [r.split() for r in open(path).read().split("\n") if r.strip()]
    return [(w[1], w[0], int(w[2]), float(w[10 + ALGORITHMS.index(w[0])]), float(w[13]))
            for w in rows]


def fit_fixed(rows, notes):
    points = {}
    for op, algorithm, world, measured, predicted in rows:
        if predicted < GEMM_BOUND_MS:
            points.setdefault((op, algorithm), []).append((world, (measured - predicted) * 1000))
    fixed = {}
    for key, pts in sorted(points.items()):
        per_call, per_chunk = least_squares(pts)
        if per_call < 0 or per_chunk < 0:
            notes.append("%s %s: %.1f + %.2f W us, negative part written as 0" %
                         (*key, per_call, per_chunk))
        fixed[key] = (max(per_call, 0.0), max(per_chunk, 0.0))
    return fixed


def main(replay, table, call_costs, out_table):
    # The table's own notes on its fixed lines and GEMMs no longer hold.
    lines = [l for l in open(table).read().splitlines()
             if not l.startswith(("# fixed", "# gemm"))]
    unscaled = residuals(replay, with_lines(lines, 1.0, {}), call_costs)
    fixed = fit_fixed(unscaled, [])
    ratios = [(measured - (fixed[(op, a)][0] + fixed[(op, a)][1] * world) / 1000) / predicted
              for op, a, world, measured, predicted in unscaled
              if predicted >= GEMM_BOUND_MS and (op, a) in fixed]
    scale = statistics.median(ratios) if ratios else 1.0
    notes = []
    fixed = fit_fixed(residuals(replay, with_lines(lines, scale, {}), call_costs), notes)
    out = with_lines(lines, scale, fixed)
    first_gemm = next(i for i, l in enumerate(out) if l.startswith("gemm "))
    out.insert(first_gemm, "# gemm: the sweep's times x %.4f, the median over %d GEMM-bound calls of "
               "this host (fit_call_costs.py over %s)" % (scale, len(ratios),
                                                         os.path.basename(call_costs)))
    first_fixed = next(i for i, l in enumerate(out) if l.startswith("fixed "))
    out.insert(first_fixed, "# fixed: fit_call_costs.py over %s (least squares over W of the "
               "measured tiny calls less the model's prediction without fixed costs)" %
               os.path.basename(call_costs))
    open(out_table, "w").write("\n".join(out) + "\n")
    print("gemm scale %.4f (%d calls: %s)" % (scale, len(ratios), " ".join("%.3f" % r for r in ratios)))
    for (op, a), (c, p) in sorted(fixed.items()):
        print("fixed %s %s %.1f + %.2f per chunk" % (op, a, c, p))
    for n in notes:
        print("# " + n)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
