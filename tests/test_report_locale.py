"""A report into a non-ASCII path under the C locale: UTF-8 files, no escaped surrogates, the path named."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from _fault_helpers import REPO


@pytest.mark.slow
def test_report_into_a_non_ascii_path_under_the_c_locale(synthetic_build, tmp_path) -> None:
    from mis_icc_metric import read_references

    from _leaderboard_helpers import make_results

    runs = tmp_path / "dé"
    runs.mkdir()
    results = make_results(read_references(synthetic_build, split="test"), model="org/modèle")
    (runs / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "répört"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", PYTHONUTF8="0")
    command = [sys.executable, "-m", "eval_scripts.cli", "report", str(runs), "--references", str(synthetic_build)]
    command += ["--comparison-bootstrap", "100", "--bootstrap", "100", "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    for path in out.iterdir():
        if path.suffix in (".md", ".html", ".json"):
            text = path.read_bytes().decode("utf-8")
            assert "\\udc" not in text and "\ufffd" not in text
    assert str(runs / "results.json") in (out / "report.json").read_text(encoding="utf-8")
    assert "modèle" in (out / "report.md").read_text(encoding="utf-8")
