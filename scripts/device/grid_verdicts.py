#!/usr/bin/env python3
"""The planner grid's verdicts per point, read back from the JSON files that
planner-grid.sh leaves in its output folders (`asynctp run --json`, one per
point). Runs on the device after a grid, or here on the fetched logs.

Per point: the forced rows' medians, auto's algorithm and own median, and two
verdicts (ok when within 3 % of the fastest forced row and at most 2 % slower
than decomposed): auto's own row, and its pick at the forced row of the same
algorithm. Where auto took the measured choice (`--tune`), the times the
tuner chose from (its reason) and whether it ranked the fastest the rows'
way; where it chose by the mean over ranks, whether the slowest rank's times
(also in its reason) would have. With --misses only the points that miss by
their own row are listed.

    grid_verdicts.py [--misses] FOLDER_OR_JSON...
"""

import glob
import json
import os
import re
import sys

WITHIN_BEST = 1.03
WITHIN_DECOMPOSED = 1.02
TUNED_TIME = re.compile(r"(native|pipelined|decomposed) ([0-9.]+) ms")
SLOWEST_RANKS = re.compile(r"the slowest rank's: ([^;]*);")
SLOWEST_TIME = re.compile(r"(native|pipelined|decomposed) ([0-9.]+)")


def ok(ms, forced):
    return ms <= WITHIN_BEST * min(forced.values()) and ms <= WITHIN_DECOMPOSED * forced["decomposed"]


def point(run):
    """The verdicts of one `asynctp run --json` result, or None where it has
    no auto row or no decomposed row."""
    rows = [a for a in run["algorithms"] if a["available"]]
    auto = [a for a in rows if a["name"].startswith("auto")]
    forced = {a["algorithm"]: a["median_ms"] for a in rows if not a["name"].startswith("auto")}
    if not auto or "decomposed" not in forced:
        return None
    auto = auto[0]
    tuned = {name: float(ms) for name, ms in TUNED_TIME.findall(auto["reason"])}
    slowest = SLOWEST_RANKS.search(auto["reason"])
    slowest = {name: float(ms) for name, ms in SLOWEST_TIME.findall(slowest.group(1))} \
        if slowest else {}
    if not auto.get("measured_choice"):
        tuned, slowest = {}, {}
    fastest_row = min(forced, key=forced.get)
    shape = "%sx%sx%s%s" % (run["M"], run["N"], run["K"],
                            ":col" if run.get("b_layout", "row").startswith("col") else "")
    link = run.get("link", "?")
    if run.get("link_gbps"):
        link += "-%g" % run["link_gbps"]
    return {
        "W": run["world_size"],
        "link": link,
        "shape": shape,
        "forced": forced,
        "auto": auto["algorithm"],
        "auto_ms": auto["median_ms"],
        "own_ok": ok(auto["median_ms"], forced),
        "pick_ok": auto["algorithm"] in forced and ok(forced[auto["algorithm"]], forced),
        "tuned": tuned,
        "tuner_agrees": (min(tuned, key=tuned.get) == fastest_row) if tuned else None,
        "slowest_agrees": (min(slowest, key=slowest.get) == fastest_row) if slowest else None,
    }


def json_files(paths):
    for path in paths:
        if os.path.isdir(path):
            yield from sorted(glob.glob(os.path.join(path, "grid-*.json")))
        else:
            yield path


def describe(p):
    rows = " ".join("%s=%.3f" % (a[:3], ms) for a, ms in p["forced"].items())
    best = min(p["forced"].values())
    text = "%-4s W=%d %-13s %-22s %s | auto %-10s %.3f (%.2f of best)" % (
        "ok" if p["own_ok"] else "MISS", p["W"], p["link"], p["shape"], rows, p["auto"],
        p["auto_ms"], p["auto_ms"] / best)
    if p["tuned"]:
        text += " | tuned " + " ".join("%s=%.3f" % (a[:3], ms) for a, ms in p["tuned"].items())
        text += " (ranks as the rows)" if p["tuner_agrees"] else " (ranks otherwise)"
    return text


def main(argv):
    misses_only = "--misses" in argv
    paths = [a for a in argv if a != "--misses"]
    if not paths:
        sys.exit(__doc__)
    points = []
    for path in json_files(paths):
        try:
            with open(path) as f:
                p = point(json.load(f))
        except (OSError, ValueError, KeyError) as e:
            print("# %s: unreadable (%s)" % (path, e))
            continue
        if p is not None:
            points.append(p)
    for p in points:
        if not misses_only or not p["own_ok"]:
            print(describe(p))
    if not points:
        sys.exit("# no point with an auto row")
    n = len(points)
    own = sum(p["own_ok"] for p in points)
    pick = sum(p["pick_ok"] for p in points)
    print("# %d points: auto's own row ok %d (%.0f %%), its pick at the forced row ok %d (%.0f %%)"
          % (n, own, 100.0 * own / n, pick, 100.0 * pick / n))
    tuned = [p for p in points if p["tuner_agrees"] is not None]
    if tuned:
        print("# measured choice at %d points: ranked the fastest as the rows at %d" % (
            len(tuned), sum(p["tuner_agrees"] for p in tuned)))
    both = [p for p in points if p["slowest_agrees"] is not None]
    if both:
        print("# of those, %d chose by the mean over ranks; the slowest rank's times would have "
              "ranked the fastest as the rows at %d" % (
                  len(both), sum(p["slowest_agrees"] for p in both)))


if __name__ == "__main__":
    main(sys.argv[1:])
