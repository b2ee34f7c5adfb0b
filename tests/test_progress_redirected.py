"""Progress bars only on a terminal: with stderr redirected to a file (a log, CI), the harness run, a report of
three runs and a training draw no bar into it; `mis-bench --progress` draws them anyway. Every bar goes through
the one helper (`mis_bench_dataset.toolkit.progress`): no other module of the toolkit imports tqdm.

(The terminal case, bars drawn and removed: tests/test_progress.py, on a real pseudo-terminal.)"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from _run_args import TEST_KEY_ENV, run_args

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")
HELPER = REPO / "mis_bench_dataset" / "toolkit" / "progress.py"
BAR_MARKS = ("\r", "%|", "it/s]", "s/it]")  # what a tqdm bar writes (carriage returns, its bar and rate)


def _imports_tqdm(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "tqdm" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tqdm":
            return True
    return False


def test_only_the_progress_helper_imports_tqdm():
    sources = [path for package in PACKAGES for path in (REPO / package).rglob("*.py")]
    importers = [path.relative_to(REPO).as_posix() for path in sources if _imports_tqdm(path)]
    assert importers == [HELPER.relative_to(REPO).as_posix()]


def _cli_to_file(args: list[str], log: Path, *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI with stderr redirected to `log` (a real file: not a terminal), stdout captured."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("MIS_BENCH_PROGRESS", None)
    env["MIS_BENCH_TEST_KEY"] = "test-key"
    with open(log, "w", encoding="utf-8") as stderr:
        return subprocess.run(
            [sys.executable, "-m", "eval_scripts.cli", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=timeout,
        )


_run_args = partial(run_args, api_key_env=TEST_KEY_ENV, limit=2, no_progress=False)


def _bars(text: str) -> list[str]:
    return [mark for mark in BAR_MARKS if mark in text]


@pytest.mark.slow
def test_a_run_and_a_report_of_three_runs_draw_no_bar_into_a_file(synthetic_build, tmp_path, chat_server):
    """The harness's bar (one per setting) and the report's ("scoring runs", shown from three runs on) stay off a
    redirected stderr; `--progress` brings the run's bar back into the same kind of file."""
    out = tmp_path / "runs"
    with chat_server() as server:
        for index, model in enumerate(("org/one", "org/two", "org/three")):
            log = tmp_path / f"run{index}.log"
            done = _cli_to_file(_run_args(synthetic_build, out, server.base_url, model=model), log, cwd=tmp_path)
            assert done.returncode == 0, log.read_text()[-2000:]
            assert _bars(log.read_text()) == [], log.read_text()[-2000:]
        forced = tmp_path / "forced.log"
        args = _run_args(synthetic_build, tmp_path / "forced", server.base_url, model="org/forced")
        assert _cli_to_file(["--progress", *args], forced, cwd=tmp_path).returncode == 0
    assert "%|" in forced.read_text() and "answer" in forced.read_text()  # the bar, forced into the file

    log = tmp_path / "report.log"
    report = ["report", str(out), "--references", str(synthetic_build), "--bootstrap", "100", "--out", "report"]
    done = _cli_to_file(report, log, cwd=tmp_path)
    assert done.returncode == 0, log.read_text()[-2000:]
    assert (tmp_path / "report" / "report.md").is_file()
    assert _bars(log.read_text()) == [], log.read_text()[-2000:]


@pytest.mark.slow
def test_training_draws_no_bar_into_a_file(synthetic_build, tmp_path):
    """The Trainer's step bar and `datasets`' map bars ("Tokenizing train dataset") stay off a redirected stderr."""
    from raft_trainer import save_tiny_model

    model = save_tiny_model(tmp_path / "tiny-qwen2")
    log = tmp_path / "train.log"
    args = ["train", "--model", str(model), "--dataset", str(synthetic_build), "--out", str(tmp_path / "trained")]
    done = _cli_to_file([*args, "--max_steps", "2", "--logging_steps", "1", "--no_predict"], log, cwd=tmp_path)
    text = log.read_text()
    assert done.returncode == 0, text[-3000:]
    assert (tmp_path / "trained" / "trainer_state.json").is_file()
    assert _bars(text) == [], text[-3000:]
