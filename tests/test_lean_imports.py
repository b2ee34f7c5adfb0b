"""The statistics commands import neither `datasets`, `transformers` nor `torch`: a build's gold is three Parquet
columns (pyarrow), a judge file is a CSV; each command runs in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from mis_icc_metric import read_references

PROBE = """
import contextlib, io, json, sys
from eval_scripts.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
    code = main(json.loads(sys.argv[1]))
heavy = [m for m in ("datasets", "transformers", "torch") if m in sys.modules]
print(json.dumps({"code": code, "heavy": heavy, "err": err.getvalue()[-500:]}))
"""


@pytest.fixture(scope="module")
def judge(synthetic_build, tmp_path_factory):
    """A judge on every video of the build: the gold plus noise, as a long CSV."""
    gold = read_references(synthetic_build, split="all")
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("judge") / "judge.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "prediction"])
        for (video, dimension), score in sorted(gold.items()):
            writer.writerow([video, dimension, round(float(np.clip(score + rng.normal(0, 0.4), 1, 5)), 2)])
    return path


def _commands(build, judge, out):
    b, j = str(build), str(judge)
    return {
        "score": ["score", "--predictions", j, "--references", b, "--bootstrap", "100"],
        "score --by": ["score", "--predictions", j, "--references", b, "--bootstrap", "100", "--by", "time_point"],
        "compare": ["compare", j, j, "--references", b, "--bootstrap", "100"],
        "estimate": ["estimate", "--predictions", j, "--references", b, "--split", "test"],
        "trust": ["trust", "--predictions", j, "--references", b, "--out", str(out / "trust")],
        "stats": ["stats", b, "--out", str(out / "stats")],
        "plan icc": ["plan", "icc", "--predictions", j, "--references", b, "--split", "all", "--half-width", "0.2"]
        + ["--videos-per-clinician", "1", "--bootstrap", "100"],
        # (40 videos: too few for a calibration split, so the command stops at its data check, after its imports)
        "calibrate": ["calibrate", "--predictions", j, "--references", b, "--out", str(out / "cal")],
    }


@pytest.mark.parametrize(
    "command", ["score", "score --by", "compare", "estimate", "trust", "stats", "plan icc", "calibrate"]
)
def test_a_statistics_command_imports_no_model_or_dataset_framework(command, synthetic_build, judge, tmp_path):
    argv = _commands(synthetic_build, judge, tmp_path)[command]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True, timeout=300, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["code"] == 0 or (command == "calibrate" and "needs at least" in report["err"]), report["err"]
    assert report["heavy"] == [], f"`mis-bench {command}` imported {report['heavy']}"


def test_the_probe_sees_a_heavy_import(synthetic_build, judge, tmp_path):
    """The check can fail: a command that loads the build with `datasets` is caught."""
    argv = _commands(synthetic_build, judge, tmp_path)["score"]
    probe = PROBE.replace("from eval_scripts.cli import main", "from eval_scripts.cli import main; import datasets")
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], capture_output=True, text=True, check=True)
    assert "datasets" in json.loads(done.stdout.strip().splitlines()[-1])["heavy"]
