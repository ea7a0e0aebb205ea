#!/usr/bin/env python3
"""Where one traced GPU call's device time goes, step by step.

    call_gaps.py TRACE_JSON

TRACE_JSON is what `asynctp run --trace` wrote on a GPU (one traced call per
algorithm, in the order of its table). For each algorithm, over the ranks
(medians): the call's device span, then every device span inside it as
offset from the call's begin and duration, by lane and name; for native, the
kernel's tiles (first tile begin to last tile end) with the lead before them
and the tail after them, and each chunk's tiles in the order the grid
computes them. The lead and the tail are the per-call cost that is
not the kernel: with a link that costs nothing they are the whole gap
between the call and the GEMM alone.
"""
import collections
import json
import statistics
import sys


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    events = json.load(open(sys.argv[1]))["traceEvents"]
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    per_rank = collections.defaultdict(list)  # rank -> (lane, event), in trace order
    for e in events:
        if e.get("ph") in ("X", "i"):
            per_rank[e["pid"]].append((lanes.get((e["pid"], e["tid"]), ""), e))
    op_names = ("all-gather + matmul", "matmul + reduce-scatter")
    # calls[rank] = [(begin, end, [(lane, event) inside])], in call order.
    calls = {}
    for rank, items in per_rank.items():
        spans = [e for lane, e in items if lane == "device stream" and e["name"] in op_names]
        calls[rank] = [(c["ts"], c["ts"] + c["dur"],
                        [(lane, e) for lane, e in items
                         if lane.startswith("device") and e is not c
                         and c["ts"] <= e["ts"] <= c["ts"] + c["dur"]])
                       for c in spans]
    if not calls:
        print("no device call spans in the trace (was it a GPU run with --trace?)")
        return 1
    count = min(len(v) for v in calls.values())
    for i in range(count):
        # The algorithm from the host's call span of the same index, if any.
        label = f"call {i + 1}"
        host = [e for lane, e in per_rank[0] if e.get("cat") == "call" and "(" in e["name"]]
        if len(host) > i:
            label += " " + host[i]["name"][host[i]["name"].rfind("("):]
        durations, leads, kernels, tails = [], [], [], []
        chunk_spans = collections.defaultdict(lambda: ([], []))  # lane -> first, last offsets
        steps = collections.defaultdict(lambda: ([], []))  # (lane, name) -> offsets, durations
        for rank in sorted(calls):
            begin, end, inside = calls[rank][i]
            durations.append(end - begin)
            tiles = [e for lane, e in inside if lane.startswith("device tiles: ")]
            if tiles:
                first = min(e["ts"] for e in tiles)
                last = max(e["ts"] + e.get("dur", 0) for e in tiles)
                leads.append(first - begin)
                kernels.append(last - first)
                tails.append(end - last)
                # By position in the grid's order (each rank's chunk ids differ).
                for position, e in enumerate(sorted(tiles, key=lambda e: e["ts"])):
                    chunk_spans[position][0].append(e["ts"] - begin)
                    chunk_spans[position][1].append(e["ts"] + e.get("dur", 0) - begin)
            for lane, e in inside:
                if lane.startswith("device tiles: "):
                    continue
                offsets, lengths = steps[(lane, e["name"])]
                offsets.append(e["ts"] - begin)
                lengths.append(e.get("dur", 0))
        print(f"== {label}: device span {median(durations):.1f} us (median of {len(durations)} ranks)")
        if kernels:
            print(f"   native tiles {median(kernels):.1f} us, lead {median(leads):.1f} us, "
                  f"tail {median(tails):.1f} us")
            # The grid's i-th chunk: its first tile's begin and last tile's end.
            for position, (firsts, lasts) in sorted(chunk_spans.items()):
                print(f"   {median(firsts):9.1f} .. {median(lasts):9.1f} us  "
                      f"tiles of the grid's chunk {position + 1} in send order")
        for (lane, name), (offsets, lengths) in sorted(steps.items(),
                                                       key=lambda kv: median(kv[1][0])):
            print(f"   {median(offsets):9.1f} +{median(lengths):8.1f} us  {lane:<18} {name}"
                  f"  (x{len(offsets)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
