#!/usr/bin/env python3
"""Replays the measured choice's calls under several statistics, against the
forced rows of the same runs.

planner-grid.sh -t, run with ASYNCTP_DEBUG=INFO, leaves beside each point's
`asynctp run --json` file (grid-*.json) its log (grid-*.json.err), where the
tuner logs each measuring call's time:

    ... [RANK] asynctp INFO measured choice: ALGORITHM call I took MS ms; PROBLEM

For each point this takes every rank's calls of each candidate, reduces them
per rank by a statistic (best, lower median, median, mean), combines the
ranks as the loopback group does (the mean over ranks), and picks the least.
A statistic's pick passes where the pick's forced row is within 3 % of the
fastest forced row and at most 2 % slower than decomposed (the grid's
verdict, judged at the pick's forced row, so that all statistics are judged
on the same rows).

    tuner_statistics.py OUT_DIR...     a line per statistic, then the misses
"""
import glob
import json
import os
import re
import statistics
import sys

LINE = re.compile(r"\[(\d+)\] asynctp INFO measured choice: (native|pipelined|decomposed) "
                  r"call \d+ took ([0-9.]+) ms; (.*)$")


def lower_median(xs):
    return sorted(xs)[(len(xs) - 1) // 2]


STATISTICS = {
    "best": min,
    "lower median": lower_median,
    "median": statistics.median,
    "mean": statistics.mean,
}


def point(path):
    r = json.load(open(path))
    rows = {a["algorithm"]: a["median_ms"] for a in r["algorithms"]
            if a["available"] and not a["name"].startswith("auto")}
    calls = {}  # algorithm -> rank -> [ms]
    err = path + ".err"
    if not os.path.exists(err) or not rows:
        return None
    for line in open(err):
        m = LINE.search(line)
        if m:
            rank, algorithm, ms = int(m.group(1)), m.group(2), float(m.group(3))
            calls.setdefault(algorithm, {}).setdefault(rank, []).append(ms)
    if len(calls) < 2:
        return None
    name = "%s W=%s %s %sx%sx%s%s" % (
        "ag" if r["op"].startswith("all") else "rs", r["world_size"],
        r.get("link", "-") + ("-%g" % r["link_gbps"] if r.get("link_gbps") else ""),
        r["M"], r["N"], r["K"], ":col" if r["b_layout"] == "col" else "")
    return {"name": name, "rows": rows, "calls": calls}


def pick(p, statistic):
    group = {a: statistics.mean(statistic(ms) for ms in ranks.values())
             for a, ranks in p["calls"].items()}
    return min(group, key=group.get), group


def passes(p, algorithm):
    rows = p["rows"]
    t = rows.get(algorithm)
    return t is not None and t <= 1.03 * min(rows.values()) and t <= 1.02 * rows["decomposed"]


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
    for label, statistic in STATISTICS.items():
        ok = sum(passes(p, pick(p, statistic)[0]) for p in points)
        ranked = sum(pick(p, statistic)[0] == min(p["rows"], key=p["rows"].get) for p in points)
        print("%-13s %3d / %d pass, %3d ranked as the rows" % (label, ok, len(points), ranked))
    print("# points where some statistic misses (rows n/p/d; each statistic's pick)")
    for p in points:
        picks = {label: pick(p, s)[0] for label, s in STATISTICS.items()}
        if all(passes(p, a) for a in picks.values()):
            continue
        rows = "/".join("%.3f" % p["rows"][a] if a in p["rows"] else "-"
                        for a in ("native", "pipelined", "decomposed"))
        spread = "; ".join("%s %.3f-%.3f" % (a[0], min(min(v) for v in r.values()),
                                             max(max(v) for v in r.values()))
                           for a, r in sorted(p["calls"].items()))
        print("%-34s %s  %s  calls: %s" % (p["name"], rows, " ".join(
            "%s=%s%s" % (label.replace(" ", "-"), a[0], "" if passes(p, a) else "!")
            for label, a in picks.items()), spread))


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])
