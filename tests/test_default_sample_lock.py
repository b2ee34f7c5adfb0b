"""Two default jobs started together both succeed: the default sample is made once, under one lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from _fault_helpers import REPO


def test_two_default_jobs_started_together_both_succeed(tmp_path) -> None:
    env = {**os.environ, "MIS_BENCH_CACHE": str(tmp_path / "cache")}
    jobs = [
        subprocess.Popen(
            [sys.executable, "-m", "eval_scripts.cli", "run", "--out", str(tmp_path / f"job{n}"), "--bootstrap", "0"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    outcomes = [(job.wait(timeout=600), job.communicate()[1]) for job in jobs]
    for code, err in outcomes:
        assert code == 0, err[-3000:]
    first, second = (json.loads((tmp_path / f"job{n}" / "summary.json").read_text()) for n in (1, 2))
    assert [r["overall_icc"] for r in first["runs"]] == [r["overall_icc"] for r in second["runs"]]
