#!/usr/bin/env python3
"""One measured planner-grid point per `asynctp run --json` file, as the line
bench/planner_replay.cpp reads:

    op W link gbps M N K layout native_config native_ms pipelined_ms decomposed_ms

(`-` where a field does not apply or an algorithm did not run). The native
config is the kernel the run's native row used, as its plan's reason names it. The measured times do not depend on which algorithm auto picked, so the
replay can rank the same measurements under another planner or cost table.

    grid_points.py RUN.json...      lines on standard output
"""
import json
import re
import sys


def point(path):
    r = json.load(open(path))
    # The forced algorithms' rows (an auto row, under --tune, runs one of them).
    forced = [a for a in r["algorithms"] if not a.get("name", "").startswith("auto")]
    times = {a["algorithm"]: a["median_ms"] for a in forced if a["available"]}
    # The native row's own plan names its kernel (runs before that field was
    # written: the planner's, when auto picked native).
    native = [a.get("reason") or "" for a in forced if a["algorithm"] == "native"]
    kernel = re.search(r"\(kernel ([A-Za-z0-9_]+)", " ".join(native) + " " +
                       (r["planner"]["reason"] or ""))
    gbps = r.get("link_gbps")
    fields = [
        r["op"], r["world_size"], r.get("link", "-"), "-" if gbps is None else "%g" % gbps,
        r["M"], r["N"], r["K"], r["b_layout"],
        kernel.group(1) if kernel and "native" in times else "-",
    ] + ["%.6f" % times[a] if a in times else "-" for a in ("native", "pipelined", "decomposed")]
    return " ".join(str(f) for f in fields)


if __name__ == "__main__":
    for path in sys.argv[1:]:
        try:
            print(point(path))
        except (ValueError, KeyError) as e:  # a run cut off or failed: no point
            print("grid_points.py: %s skipped (%s)" % (path, e), file=sys.stderr)
