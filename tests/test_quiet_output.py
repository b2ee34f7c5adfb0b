"""The real CLI's stderr in a subprocess (as a user's terminal or log sees it): no `datasets` progress bars
("Generating train split", "Map", "Filter") from the toolkit's internal loads, no third-party warnings; the
toolkit's own log lines only. The user's own progress-bar setting is left as it was."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _run_args import run_args

REPO = Path(__file__).resolve().parents[1]
NOISE = re.compile(r"Generating \w+ split|^Map|^Filter|Warning\b|warnings\.warn|it/s\]|examples/s", re.MULTILINE)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("HF_DATASETS_DISABLE_PROGRESS_BARS", None)
    return subprocess.run(
        [sys.executable, "-W", "default", "-m", "eval_scripts.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _noise(stderr: str) -> list[str]:
    lines = stderr.replace("\r", "\n").splitlines()
    return [line for line in lines if NOISE.search(line) or not re.match(r"(INFO|WARNING) [\w.]+: |mis-bench ", line)]


@pytest.mark.slow
def test_verbose_brings_the_info_lines_back(synthetic_build, tmp_path):
    """`-v` brings back the toolkit's INFO lines, one per long step, none naming a temporary folder (quiet by
    default, at most 3 lines on success: tests/test_main_job.py)."""
    args = ["run", "--dataset", str(synthetic_build), "--bootstrap", "100"]
    done = _cli("-v", *args, "--out", str(tmp_path / "job"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "INFO eval_scripts.baselines.baseline_run" in done.stderr  # the toolkit's own lines are there
    assert re.search(
        r"^INFO mis_bench_dataset.toolkit.progress: writing the report, the submissions and the leaderboard: "
        r"done in \d+\.\ds$",
        done.stderr,
        re.M,
    ), done.stderr
    assert "staging" not in done.stderr and "DEBUG" not in done.stderr
    assert _noise(done.stderr) == []


def test_generating_the_default_sample_names_no_temporary_folder(tmp_path, monkeypatch, caplog):
    """The first run's lines name the sample's folders, never the staging folder renamed away after it."""
    import logging

    from mis_bench_dataset.synth import sample

    monkeypatch.setattr(sample, "DEFAULT_SAMPLE_VIDEOS", 12)  # the same code path, a small sample
    with caplog.at_level(logging.DEBUG):
        made = sample.default_sample(tmp_path / "cache")
    toolkit = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")  # not filelock's own debug lines
    messages = [r.getMessage() for r in caplog.records if r.name.split(".")[0] in toolkit]
    assert any(str(made.release_dir) in m for m in messages), messages
    assert not [m for m in messages if ".release.staging" in m], messages


def test_dry_run_stderr_has_no_bars(synthetic_build, tmp_path):
    args = run_args(
        synthetic_build,
        tmp_path / "dry",
        None,
        "--dry-run",
        "--grid",
        model="m",
        api_key_env="MIS_BENCH_UNSET_KEY",
        bootstrap=None,
        no_progress=False,
    )
    done = _cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "dry run of m" in done.stdout
    assert _noise(done.stderr) == []


def test_quiet_loads_restore_the_users_setting(synthetic_build, capfd):
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    from mis_bench_dataset import load_build

    assert not are_progress_bars_disabled()
    with load_build(synthetic_build, "scoring", "test") as rows:
        assert len(rows) and not are_progress_bars_disabled()  # the user's bars are back after the load
    assert "Generating" not in capfd.readouterr().err
    disable_progress_bars()
    try:
        with load_build(synthetic_build, "scoring", "test"):
            pass
        assert are_progress_bars_disabled()  # a user who turned them off keeps them off
    finally:
        enable_progress_bars()


@pytest.mark.parametrize("command", ["stats", "score"])
def test_other_loads_are_quiet(synthetic_build, tmp_path, command):
    if command == "stats":
        args = ["stats", str(synthetic_build), "--out", str(tmp_path / "stats")]
    else:
        from mis_icc_metric import read_references, write_predictions

        refs = read_references(synthetic_build, split="test")
        write_predictions(
            tmp_path / "p.csv", [{"video_id": v, "dimension": d, "prediction": 3.0} for v, d in sorted(refs)]
        )
        args = ["score", "--predictions", str(tmp_path / "p.csv"), "--references", str(synthetic_build)]
    done = _cli(*args, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _noise(done.stderr) == []


def test_a_warning_from_toolkit_code_fails_the_suite():
    """setup.cfg's filterwarnings: a warning attributed to a toolkit module is an error; a third-party
    deprecation is not."""
    import warnings

    for package in ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts"):
        with pytest.raises(FutureWarning, match="renamed"):
            warnings.warn_explicit("`x` was renamed", FutureWarning, f"{package}/m.py", 1, module=f"{package}.m")
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn_explicit("old", DeprecationWarning, "somelib/m.py", 1, module="somelib.m", registry={})
    assert caught == []  # ignored, as before
