"""Long steps show progress (mis_bench_dataset.toolkit.progress, the one helper every long step uses): a tqdm bar on
a terminal, removed when the step ends; elsewhere one INFO line per step, which `mis-bench -v` shows and a quiet
run does not. The terminal case runs the real CLI on a pseudo-terminal (the `pty` module), as a user's shell."""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from mis_bench_dataset.toolkit.progress import progress, step

REPO = Path(__file__).resolve().parents[1]


def test_off_a_terminal_each_step_is_one_info_line(caplog):
    with caplog.at_level(logging.INFO, logger="mis_bench_dataset.toolkit.progress"):
        assert list(progress(["a", "b", "c"], desc="reading", unit="file")) == ["a", "b", "c"]
        with step("writing", total=2, unit="part") as done:
            done.update(2)
        with step("publishing"):
            pass
        assert list(progress(range(4), desc="hidden", show=False)) == [0, 1, 2, 3]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert re.fullmatch(r"reading: 3 file in \d+\.\ds", lines[0])
    assert re.fullmatch(r"writing: 2 part in \d+\.\ds", lines[1])
    assert re.fullmatch(r"publishing: done in \d+\.\ds", lines[2])


def _on_a_terminal(args: list[str], cwd: Path, timeout: float = 300) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on one pseudo-terminal; (exit code, everything it showed)."""
    leader, follower = pty.openpty()
    # A terminal 30 rows x 120 columns (a fresh pty is 0 x 0, where a bar has no room to show anything).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env["TERM"] = "xterm"
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_scripts.cli", *args], cwd=cwd, env=env, stdout=follower, stderr=follower
    )
    os.close(follower)
    shown, deadline = bytearray(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal (EIO)
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(leader)
    return process.wait(timeout=60), shown.decode("utf-8", "replace")


def test_a_build_shows_bars_on_a_terminal(synthetic_build, tmp_path):
    """`mis-bench build` (minutes on the real release): on a terminal each step has a bar, gone at the end, then
    the summary. (Piped, no bar and with -v one line a step: tests/test_quiet_output.py.)"""
    release = synthetic_build.parent / "release"
    args = ["build", str(release), "--labels", str(release / "ratings.csv")]
    code, shown = _on_a_terminal([*args, "--out", str(tmp_path / "tty")], cwd=tmp_path)
    assert code == 0, shown[-3000:]
    assert re.search(r"\rbuilding MIS-Bench:\s+\d+%\|.*\| \d+/40 ", shown), shown[-3000:]  # tqdm's bar, in place
    assert re.search(r"\rbuilding MIS-Bench: agreement, statistics, figures, card: 100%\|", shown), shown[-3000:]
    last_bar = shown.rindex("%|")
    assert shown.index("built ", last_bar) > last_bar and "INFO" not in shown  # bars first, removed; no log lines
    assert (tmp_path / "tty" / "README.md").is_file()


@pytest.mark.parametrize("shown", [True, False])
def test_show_false_is_silent_on_a_terminal_too(shown, monkeypatch, capsys):
    monkeypatch.setattr("mis_bench_dataset.toolkit.progress.on_terminal", lambda: True)
    assert sum(progress(range(5), desc="counting", unit="n", show=shown)) == 10
    err = capsys.readouterr().err
    assert ("counting" in err) is shown


def test_cross_validation_counts_every_fold(synthetic_build, caplog):
    """The step that printed nothing for minutes: one unit per fitted fold (settings x seeds x folds)."""
    from eval_scripts import cross_validate

    jobs = [("mean", "text"), ("features", "text")]
    with caplog.at_level(logging.INFO, logger="mis_bench_dataset.toolkit.progress"):
        doc = cross_validate(synthetic_build, jobs, n_folds=3, seeds=(0, 1), n_bootstrap=0)
    assert doc["n_folds"] == 3 and set(doc["runs"]) == {"mean text", "features text"}
    lines = [r.getMessage() for r in caplog.records if r.name == "mis_bench_dataset.toolkit.progress"]
    assert len(lines) == 1 and re.fullmatch(r"cross-validating \(3 folds\): 12 fold in \d+\.\ds", lines[0]), lines
