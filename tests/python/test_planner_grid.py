"""scripts/device/planner-grid.sh end to end off the device: the CPU build's
CLI stands in for the device's (a wrapper turns --backend cuda into cpu and
drops the link flags), so the script's table, verdict, per-point wall times
and logs, and tuner_statistics.py's replay of those logs, are checked on
every machine rather than only when a GPU is lent."""

import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GRID = ROOT / "scripts" / "device" / "planner-grid.sh"
STATISTICS = ROOT / "scripts" / "device" / "tuner_statistics.py"

WRAPPER = """#!/usr/bin/env bash
args=()
skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case $a in
    cuda) args+=(cpu) ;;
    --link|--link-gbps) skip=1 ;;
    *) args+=("$a") ;;
  esac
done
exec "$REAL_ASYNCTP" "${args[@]}"
"""


def cpu_cli():
    """The CLI built beside the C library the suite runs against."""
    library = os.environ.get("ASYNCTP_LIBRARY")
    if not library:
        pytest.skip("ASYNCTP_LIBRARY is not set: no build to take the CLI from")
    cli = pathlib.Path(library).resolve().parents[2] / "tools" / "asynctp"
    assert cli.exists(), f"no CLI beside {library} (looked for {cli})"
    return cli


def test_a_tuned_slice_gives_table_verdict_wall_times_and_a_replay(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "asynctp").write_text(WRAPPER)
    (fake / "asynctp").chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, REAL_ASYNCTP=str(cpu_cli()), ASYNCTP_GRID_BIN=str(fake),
               OUT=str(out), ASYNCTP_DEBUG="INFO", OMP_NUM_THREADS="1",
               ASYNCTP_GRID_WARMUP="0",  # the GPU's clock warm-up, a long CPU run here
               SHAPES="256Wx256x128 512x128x256:col")
    run = subprocess.run(["bash", str(GRID), "-t", "-w", "2", "-l", "pcie", "1"], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line.startswith("ag   2  pcie")]
    assert [row.split()[3] for row in rows] == ["512x256x128", "512x128x256:col"], run.stdout
    assert all(row.split()[-1] in ("ok", "MISS") for row in rows)
    assert re.search(r"^# verdict: [0-2] of 2 points ok", run.stdout, re.M), run.stdout

    walls = (out / "grid-wall.txt").read_text().splitlines()
    assert len(walls) == 2
    for line, shape in zip(walls, ("512x256x128", "512x128x256:col")):
        match = re.fullmatch(r"all-gather-matmul 2 pcie (\S+) ([0-9.]+) s", line)
        assert match and match.group(1) == shape and float(match.group(2)) > 0, line

    for path in out.glob("grid-*.json"):
        names = {row["name"].split()[0] for row in json.loads(path.read_text())["algorithms"]}
        assert {"native", "pipelined", "decomposed", "auto"} <= names, (path, names)

    replay = subprocess.run(["python3", str(STATISTICS), str(out)], capture_output=True,
                            text=True, timeout=60)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replay.stdout.startswith("# 2 points;"), replay.stdout
    assert re.search(r"^lower median, ties to decomposed \(2 %\) +[0-2] / 2 pass", replay.stdout,
                     re.M), replay.stdout
