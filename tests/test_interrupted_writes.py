"""Outputs under a full disk, a failed write or a killed process: the earlier run stays whole and unmixed, no
temporary is left, report figures are never half written, and a build's staging folder is removed (SIGTERM)
or cleaned up by the next build (SIGKILL).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_scripts.cli import main
from mis_bench_dataset import generate_synthetic_release
from mis_bench_dataset.toolkit.errors import EXIT_DATA

from _fault_helpers import REPO, _error_lines, _run_args, fake_full_disk, fill_disk, snapshot


def test_a_full_disk_leaves_the_earlier_run_whole_and_unmixed(
    dataset, tmp_path, tiny_disk, capsys, chat_server
) -> None:
    out = tiny_disk(1024) / "out"
    cache = tmp_path / "cache.jsonl"  # on the roomy disk: only the run's files meet the full one
    with chat_server() as server:
        assert main(_run_args(dataset, out, server.base_url, "--cache", str(cache))) == 0
        before = snapshot(out)
        filler = fill_disk(out.parent, leave_bytes=2048)
        capsys.readouterr()
        code = main(_run_args(dataset, out, server.base_url, "--cache", str(cache), "--limit", "4"))
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA
    assert len(lines) == 1 and "no space left" in lines[0] and "bytes" in lines[0], lines
    assert any(name in lines[0] for name in ("predictions.jsonl", "raw_responses.jsonl", "results.json"))
    filler.unlink()
    assert snapshot(out) == before  # every earlier file whole, none from the second run, no temporary left


def test_a_failed_write_leaves_no_temporary_and_the_earlier_results(
    dataset, tmp_path, monkeypatch, capsys, chat_server
):
    out = tmp_path / "out"
    with chat_server() as server:
        assert main(_run_args(dataset, out, server.base_url)) == 0
        before = {k: v for k, v in snapshot(out).items() if not k.endswith("responses.cache.jsonl")}
        fake_full_disk(monkeypatch, budget_bytes=0)
        capsys.readouterr()
        code = main(_run_args(dataset, out, server.base_url, "--limit", "2"))
    monkeypatch.undo()
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA and "no space left" in lines[0]
    after = {k: v for k, v in snapshot(out).items() if not k.endswith("responses.cache.jsonl")}
    assert after == before
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]


def test_report_figures_are_never_half_written(synthetic_build, tmp_path, monkeypatch, capsys) -> None:
    from mis_icc_metric import read_references

    from _leaderboard_helpers import make_results

    results = tmp_path / "results.json"
    results.write_text(json.dumps(make_results(read_references(synthetic_build, split="test"), model="org/m")))
    report = [
        "report",
        str(results),
        "--references",
        str(synthetic_build),
        "--comparison-bootstrap",
        "100",
        "--bootstrap",
        "100",
        "--out",
        str(tmp_path / "rep"),
    ]
    assert main(report) == 0
    before = snapshot(tmp_path / "rep")
    fake_full_disk(monkeypatch, budget_bytes=10_000)  # the first figure fits, the rest does not
    capsys.readouterr()
    code = main([*report, "--title", "another title: other figures"])
    monkeypatch.undo()
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA and "no space left" in lines[0] and "report-" in lines[0]
    assert snapshot(tmp_path / "rep") == before


def _build_command(release: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "eval_scripts.cli", "build", str(release), "--out", str(out)]


def _staging(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f".{out.name}.*"))


def _start_and_wait_for_staging(release: Path, out: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        _build_command(release, out), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while not any(p.is_dir() for p in _staging(out)):
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the build ended before it could be stopped: {process.communicate()[1][-2000:]}")
        time.sleep(0.005)
    while not any(f.is_file() for p in _staging(out) for f in p.rglob("*.parquet.partial")):  # into the shards
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"the build ended before writing a shard: {process.communicate()[1][-2000:]}")
        time.sleep(0.005)
    return process


@pytest.fixture(scope="module")
def long_release(tmp_path_factory) -> Path:
    """A release whose build takes long enough to be stopped halfway (300 videos); read-only."""
    return generate_synthetic_release(
        tmp_path_factory.mktemp("long") / "release", n_videos=300, seed=1, compress=False
    ).release_dir


def test_build_stopped_by_sigterm_removes_its_staging_folder(long_release, tmp_path) -> None:
    release = long_release
    out = tmp_path / "built"
    process = _start_and_wait_for_staging(release, out)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err[-2000:]
    lines = _error_lines(err)
    assert len(lines) == 1 and "terminated" in lines[0]
    assert _staging(out) == [] and not out.exists()


def test_the_next_build_removes_a_killed_builds_staging_folder(long_release, tmp_path) -> None:
    out = tmp_path / "built"
    process = _start_and_wait_for_staging(long_release, out)
    process.kill()  # SIGKILL: no handler runs, the staging folder stays behind
    process.communicate(timeout=60)
    assert _staging(out)
    # The next build into the same folder (here of a small release, so it is quick) removes what was left.
    small = generate_synthetic_release(tmp_path / "small", n_videos=12, seed=1, compress=False).release_dir
    done = subprocess.run(_build_command(small, out), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _staging(out) == []
    assert (out / "README.md").is_file()
