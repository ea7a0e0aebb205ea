#!/usr/bin/env python3
"""Replays the measured choice's calls under several policies (a statistic,
and how close a candidate may come to decomposed before decomposed is kept),
against the forced rows of the same runs.

planner-grid.sh -t, run with ASYNCTP_DEBUG=INFO, leaves beside each point's
`asynctp run --json` file (grid-*.json) its log (grid-*.json.err), where the
tuner logs each measuring call's time:

    ... [RANK] asynctp INFO measured choice: ALGORITHM call I took MS ms; PROBLEM

For each point this takes every rank's calls of each candidate, reduces them
per rank by a statistic (best, lower median, median, mean), combines the
ranks as the loopback group does (the mean over ranks), and picks the least
(one policy keeps decomposed unless the least beats it by 2 %).
A policy's pick passes where the pick's forced row is within 3 % of the
fastest forced row and at most 2 % slower than decomposed (the grid's
verdict, judged at the pick's forced row, so that all policies are judged
on the same rows).

    tuner_statistics.py OUT_DIR...     a line per policy, then the misses
"""
import glob
import json
import os
import re
import statistics
import sys

# The verdict rule and the run's point are grid_verdicts.py's, beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grid_verdicts  # noqa: E402

LINE = re.compile(r"\[(\d+)\] asynctp INFO measured choice: (native|pipelined|decomposed) "
                  r"call \d+ took ([0-9.]+) ms; (.*)$")


def lower_median(xs):
    return sorted(xs)[(len(xs) - 1) // 2]


# (label, tag in the misses' lines, the statistic per rank, the margin by
# which a candidate must beat decomposed to be kept over it). A margin of
# 2 % costs nothing by the verdict's rule (decomposed within 2 % of the least
# is within 3 % of it) and keeps decomposed where the measuring calls cannot
# tell it from the least.
POLICIES = [
    ("best", "best", min, 0.0),
    ("lower median", "lm", lower_median, 0.0),
    ("median", "median", statistics.median, 0.0),
    ("mean", "mean", statistics.mean, 0.0),
    ("lower median, ties to decomposed (2 %)", "lm-d2", lower_median, 0.02),
]


def point(path):
    """grid_verdicts.point of the run, with its logged measuring calls
    (algorithm -> rank -> [ms]) and each policy's pick; None where the
    run has no verdict or no log of two candidates."""
    p = grid_verdicts.point(json.load(open(path)))
    err = path + ".err"
    if p is None or not os.path.exists(err):
        return None
    calls = {}
    for line in open(err):
        m = LINE.search(line)
        if m:
            rank, algorithm, ms = int(m.group(1)), m.group(2), float(m.group(3))
            calls.setdefault(algorithm, {}).setdefault(rank, []).append(ms)
    if len(calls) < 2:
        return None
    p["calls"] = calls
    p["picks"] = {label: pick(calls, statistic, margin)
                  for label, _, statistic, margin in POLICIES}
    return p


def pick(calls, statistic, margin=0.0):
    """The least group time: each rank's calls reduced by `statistic`, the
    ranks by their mean (the loopback group's rule); decomposed where the
    least does not beat it by `margin`."""
    group = {a: statistics.mean(statistic(ms) for ms in ranks.values())
             for a, ranks in calls.items()}
    least = min(group, key=group.get)
    if "decomposed" in group and group[least] * (1 + margin) >= group["decomposed"]:
        return "decomposed"
    return least


def passes(p, algorithm):
    return algorithm in p["forced"] and grid_verdicts.ok(p["forced"][algorithm], p["forced"])


def main(dirs):
    points = []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "**", "grid-*.json"), recursive=True)):
            p = point(path)
            if p:
                points.append(p)
    if not points:
        sys.exit("no point with logged measuring calls (run planner-grid.sh -t with ASYNCTP_DEBUG=INFO)")
    print("# %d points; verdict at the pick's forced row; ranked = the pick is the fastest row" %
          len(points))
    for label, _, _, _ in POLICIES:
        ok = sum(passes(p, p["picks"][label]) for p in points)
        ranked = sum(p["picks"][label] == min(p["forced"], key=p["forced"].get) for p in points)
        print("%-40s %3d / %d pass, %3d ranked as the rows" % (label, ok, len(points), ranked))
    print("# points where some policy misses (rows n/p/d; each policy's pick by its tag)")
    for p in points:
        if all(passes(p, a) for a in p["picks"].values()):
            continue
        rows = "/".join("%.3f" % p["forced"][a] if a in p["forced"] else "-"
                        for a in ("native", "pipelined", "decomposed"))
        spread = "; ".join("%s %.3f-%.3f" % (a[0], min(min(v) for v in r.values()),
                                             max(max(v) for v in r.values()))
                           for a, r in sorted(p["calls"].items()))
        name = "W=%s %s %s" % (p["W"], p["link"], p["shape"])
        print("%-34s %s  %s  calls: %s" % (name, rows, " ".join(
            "%s=%s%s" % (tag, p["picks"][label][0], "" if passes(p, p["picks"][label]) else "!")
            for label, tag, _, _ in POLICIES), spread))


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])
