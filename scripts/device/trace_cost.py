#!/usr/bin/env python3
"""What `asynctp run --trace` shows and costs on the GPU, from one run's files.

    trace_cost.py RUN_JSON TRACE_JSON

RUN_JSON is `asynctp run --json`'s output (untraced timed calls), TRACE_JSON
the trace the same run wrote (one traced call per algorithm). Prints, per
algorithm: the untraced median per call, the traced call's device span
(mean over ranks of the "device stream" call span), their ratio (the
tracing's cost, one traced call against the median: a rough figure; repeat
the run for a spread), and what the trace holds per rank (device spans,
signals, native chunk spans). Exits 1 when a rank lacks its device call span
or, for native, a span per chunk with begin <= end.
"""
import collections
import json
import sys


def main():
    run = json.load(open(sys.argv[1]))
    events = json.load(open(sys.argv[2]))["traceEvents"]
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    world = run["world_size"]
    op_name = {"all-gather-matmul": "all-gather + matmul",
               "matmul-reduce-scatter": "matmul + reduce-scatter"}[run.get("op", "all-gather-matmul")]
    calls = collections.defaultdict(list)   # rank -> device call spans, in call order
    per_rank = collections.defaultdict(collections.Counter)
    tiles = collections.defaultdict(list)   # rank -> chunk spans, in trace order
    for e in events:
        if e.get("ph") not in ("X", "i"):
            continue
        lane = lanes.get((e["pid"], e["tid"]), "")
        if lane == "device stream" and e["name"] == op_name:
            calls[e["pid"]].append(e["dur"])
        if lane.startswith("device tiles: "):
            tiles[e["pid"]].append(e)
        if lane.startswith("device"):
            per_rank[e["pid"]][e["cat"]] += 1
    ok = True
    rows = [r for r in run["algorithms"] if r["available"]]
    print(f"# {op_name}, W={world}: untraced median vs the traced call's device span")
    print(f"{'algorithm':<12}{'untraced ms':>12}{'traced ms':>11}{'ratio':>8}")
    for i, row in enumerate(rows):
        spans = [calls[r][i] for r in range(world) if len(calls[r]) > i]
        if len(spans) != world:
            print(f"{row['algorithm']}: {len(spans)} of {world} ranks have a device call span")
            ok = False
            continue
        traced_ms = sum(spans) / len(spans) / 1000.0
        print(f"{row['algorithm']:<12}{row['median_ms']:>12.4f}{traced_ms:>11.4f}"
              f"{traced_ms / row['median_ms']:>8.3f}")
    for r in range(world):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(per_rank[r].items()))
        print(f"rank {r}: device events by category: {counts}")
    if any(row["algorithm"] == "native" for row in rows):
        for r in range(world):
            spans = tiles[r]
            if len(spans) < world or any(s["dur"] < 0 for s in spans):
                print(f"rank {r}: {len(spans)} native chunk spans (want {world}, begin <= end)")
                ok = False
            else:
                order = " ".join(s["name"].split()[1] for s in spans[:world])
                print(f"rank {r}: native chunks in scheduler order: {order}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
