"""scripts/device/tuner_statistics.py, which replays a grid's logged
measuring calls under several statistics, on a point made up here: a
candidate with one lucky call among widely spread ones, against a steady
one that the forced rows find faster."""

import importlib.util
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "device", "tuner_statistics.py")

spec = importlib.util.spec_from_file_location("tuner_statistics", SCRIPT)
stats = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stats)

CALLS = {
    "native": [1.10, 1.12, 1.09, 1.11, 1.13, 1.10],
    "pipelined": [1.30, 0.84, 1.50, 1.20, 1.60, 1.40],
    "decomposed": [0.95, 0.96, 0.94, 0.97, 0.95, 0.96],
}


def write_point(folder, world=2):
    rows = [{"name": a, "algorithm": a, "available": True, "median_ms": ms, "reason": "forced"}
            for a, ms in (("native", 1.11), ("pipelined", 1.35), ("decomposed", 0.95))]
    rows.append({"name": "auto -> pipelined", "algorithm": "pipelined", "available": True,
                 "median_ms": 1.35, "reason": "measured choice", "measured_choice": True})
    run = {"M": 2048, "N": 1280, "K": 4096, "world_size": world, "link": "arrival",
           "link_gbps": 400, "b_layout": "row", "algorithms": rows}
    path = folder / "grid-point.json"
    path.write_text(json.dumps(run))
    lines = []
    for rank in range(world):
        for algorithm, times in CALLS.items():
            for i, ms in enumerate(times):
                lines.append("host:1:2 [%d] asynctp INFO measured choice: %s call %d took %.4f ms; "
                             "W=%d m=1024 (M=2048) n=1280 k=4096 bf16 b=row"
                             % (rank, algorithm, i + 1, ms, world))
    (folder / "grid-point.json.err").write_text("\n".join(lines) + "\n")
    return str(path)


def test_the_lower_median_sees_through_one_lucky_call(tmp_path):
    p = stats.point(write_point(tmp_path))
    assert p["picks"]["best"] == "pipelined" and not stats.passes(p, "pipelined")
    assert p["picks"]["lower median"] == "decomposed" and stats.passes(p, "decomposed")
    assert stats.lower_median([3, 1, 2, 4]) == 2


def test_summary_counts_each_statistic(tmp_path, capsys):
    write_point(tmp_path)
    stats.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert re.search(r"^best +0 / 1 pass, +0 ranked as the rows$", out, re.M)
    assert re.search(r"^lower median +1 / 1 pass, +1 ranked as the rows$", out, re.M)
    assert "best=p!" in out and "lm=d " in out


def test_ties_go_to_decomposed_only_within_the_margin():
    calls = {"native": {0: [0.99]}, "decomposed": {0: [1.00]}}
    assert stats.pick(calls, min) == "native"
    assert stats.pick(calls, min, 0.02) == "decomposed"  # 1 % ahead: a tie
    calls["native"][0] = [0.97]
    assert stats.pick(calls, min, 0.02) == "native"  # 3 % ahead: kept
