"""scripts/device/grid_verdicts.py, which judges the planner grid's points
from their `asynctp run --json` files, on points made up here: both verdicts
(auto's own row, its pick at the forced row), the 3 % and 2 % rules at their
edges, the tuner's times read from its reason, and the summary counts."""

import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "device", "grid_verdicts.py")

spec = importlib.util.spec_from_file_location("grid_verdicts", SCRIPT)
verdicts = importlib.util.module_from_spec(spec)
spec.loader.exec_module(verdicts)


def run_json(native, pipelined, decomposed, auto_algo, auto_ms, tuned=None, col=False,
             slowest=None):
    rows = [
        {"name": "native", "algorithm": "native", "available": True, "median_ms": native,
         "reason": "forced"},
        {"name": "pipelined", "algorithm": "pipelined", "available": True,
         "median_ms": pipelined, "reason": "forced"},
        {"name": "decomposed", "algorithm": "decomposed", "available": True,
         "median_ms": decomposed, "reason": "forced"},
    ]
    reason = "the planner's rules"
    if tuned and slowest:
        reason = ("measured choice: " + ", ".join("%s %.3f ms" % kv for kv in tuned.items())
                  + " (the mean over ranks of each rank's lower median of 6 calls; the slowest rank's: "
                  + ", ".join("%s %.3f" % kv for kv in slowest.items())
                  + "; kept for this problem)")
    elif tuned:
        reason = ("measured choice: " + ", ".join("%s %.3f ms" % kv for kv in tuned.items())
                  + " (the slowest rank's lower median of 6 calls each; kept for this problem)")
    rows.append({"name": "auto -> " + auto_algo, "algorithm": auto_algo, "available": True,
                 "median_ms": auto_ms, "reason": reason, "measured_choice": bool(tuned)})
    return {"M": 8192, "N": 1280, "K": 2048, "world_size": 8, "link": "arrival",
            "link_gbps": 400, "b_layout": "col" if col else "row", "algorithms": rows}


def test_own_row_and_pick_are_judged_apart():
    # auto picked the fastest (native) but its own row came out 5 % slower.
    p = verdicts.point(run_json(1.00, 1.10, 1.20, "native", 1.05))
    assert p["pick_ok"] and not p["own_ok"]
    assert p["shape"] == "8192x1280x2048" and p["link"] == "arrival-400" and p["W"] == 8


def test_the_three_and_two_percent_rules_at_their_edges():
    assert verdicts.point(run_json(1.00, 1.10, 1.20, "pipelined", 1.03))["own_ok"]
    assert not verdicts.point(run_json(1.00, 1.10, 1.20, "pipelined", 1.031))["own_ok"]
    # Within 3 % of the fastest but more than 2 % slower than decomposed.
    assert not verdicts.point(run_json(1.00, 1.10, 1.005, "native", 1.026))["own_ok"]
    assert verdicts.point(run_json(1.00, 1.10, 1.005, "native", 1.025))["own_ok"]


def test_the_tuners_times_come_from_its_reason():
    tuned = {"native": 0.298, "pipelined": 0.296, "decomposed": 0.360}
    p = verdicts.point(run_json(0.271, 0.281, 0.353, "pipelined", 0.281, tuned=tuned, col=True))
    assert p["tuned"] == tuned
    assert p["tuner_agrees"] is False  # it ranked pipelined first, the rows native
    assert p["shape"].endswith(":col")
    assert verdicts.point(run_json(1.0, 1.1, 1.2, "native", 1.0))["tuner_agrees"] is None


def test_summary_over_a_folder(tmp_path, capsys):
    points = [run_json(1.0, 1.1, 1.2, "native", 1.0), run_json(1.0, 1.1, 1.2, "native", 1.2),
              run_json(1.0, 1.1, 1.2, "pipelined", 1.1)]
    for i, r in enumerate(points):
        (tmp_path / ("grid-%d.json" % i)).write_text(json.dumps(r))
    (tmp_path / "grid-broken.json").write_text("{")
    verdicts.main(["--misses", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.count("MISS") == 2 and "unreadable" in out
    assert "3 points: auto's own row ok 1 (33 %), its pick at the forced row ok 2 (67 %)" in out


def test_the_slowest_ranks_times_are_read_apart_from_the_mean():
    mean = {"native": 0.271, "pipelined": 0.280, "decomposed": 0.350}
    slowest = {"native": 0.300, "pipelined": 0.290, "decomposed": 0.360}
    p = verdicts.point(run_json(0.271, 0.281, 0.353, "native", 0.272, tuned=mean,
                                slowest=slowest))
    assert p["tuned"] == mean  # the unit-less slowest times are not taken for the mean's
    assert p["tuner_agrees"] is True
    assert p["slowest_agrees"] is False  # by its slowest rank pipelined came first
    assert verdicts.point(run_json(0.271, 0.281, 0.353, "native", 0.272,
                                   tuned=mean))["slowest_agrees"] is None
