"""The faults of issue 17 ("trust under faults, round two"), each reproduced as it was reported.

Each test is one numbered case of the issue (case 3, the parser's spec, lives with the parser's
tests). They were written first and failed on the code before the fix; the classes behind them
(every output atomic, every cache proven and validated, every answer sanitised, deadlines, one
lock for the default sample, exact release names, fingerprints, UTF-8 whatever the locale) are
tested more widely in `test_atomic_outputs.py`, `test_cache_proof.py` and `test_deadlines.py`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import build_dataset, generate_synthetic_release
from mis_bench_dataset.rules.errors import EXIT_DATA, EXIT_REQUESTS, EXIT_USAGE

from _fault_helpers import fake_full_disk, fill_disk, snapshot
from _harness_helpers import ChatServer, TricklingServer, chat_completion, prompt_text

REPO = Path(__file__).resolve().parents[1]


def _run_args(dataset: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "run",
        "--backend",
        "openai",
        "--model",
        "fake-model",
        "--base-url",
        base_url,
        "--api-key-env",
        "MIS_BENCH_TEST_KEY",
        "--dataset",
        str(dataset),
        "--limit",
        "1",
        "--out",
        str(out),
        "--bootstrap",
        "0",
        "--no-progress",
        "--max-retries",
        "1",
        "--backoff-base",
        "0.001",
        "--backoff-max",
        "0.002",
        *extra,
    ]


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err and "internal error" not in err, err
    return [line for line in err.splitlines() if line.startswith("mis-bench")]


def _strict_lines(path: Path) -> list[dict]:
    """Every line of a JSONL file, parsed strictly (no NaN, valid UTF-8)."""

    def refuse(token):
        raise ValueError(f"non-JSON token {token}")

    lines = path.read_bytes().decode("utf-8").split("\n")[:-1]  # JSON lines end in \n only (not U+0085)
    return [json.loads(line, parse_constant=refuse) for line in lines]


@pytest.fixture
def dataset(synthetic_build, tmp_path) -> Path:
    """A private copy of the synthetic build (some cases point a file inside it)."""
    return Path(shutil.copytree(synthetic_build, tmp_path / "bld"))


# ----------------------------------------------------------------------------- case 1: --cache on a non-cache


def test_case_1_a_file_that_is_not_a_cache_is_refused_unchanged(dataset, tmp_path, capsys) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"meeting": "Tuesday", "keep": True}))  # no final newline, as json.dump writes
    before = notes.read_bytes()
    with ChatServer() as server:
        code = main(_run_args(dataset, tmp_path / "out", server.base_url, "--cache", str(notes)))
        assert server.requests == 0
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA
    assert len(lines) == 1 and "notes.json" in lines[0] and "not a response cache" in lines[0]
    assert notes.read_bytes() == before


def test_case_1_a_cache_inside_the_dataset_is_refused_and_the_build_still_reads(dataset, tmp_path, capsys) -> None:
    from mis_bench_dataset import BuiltDataset

    shard = next((dataset / "scoring").glob("test-*.parquet"))
    before = snapshot(dataset)
    with ChatServer() as server:
        code = main(_run_args(dataset, tmp_path / "out", server.base_url, "--cache", str(shard)))
        assert server.requests == 0
    lines = _error_lines(capsys.readouterr().err)
    assert code == EXIT_USAGE
    assert len(lines) == 1 and "--cache" in lines[0] and "inside the dataset" in lines[0]
    assert snapshot(dataset) == before
    assert BuiltDataset.of(dataset).rows("test")


# ----------------------------------------------------------------------------- case 2: outputs under a full disk


def test_case_2_a_full_disk_leaves_the_earlier_run_whole_and_unmixed(dataset, tmp_path, tiny_disk, capsys) -> None:
    out = tiny_disk(1024) / "out"
    cache = tmp_path / "cache.jsonl"  # on the roomy disk: only the run's files meet the full one
    with ChatServer() as server:
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


def test_case_2_a_failed_write_leaves_no_temporary_and_the_earlier_results(dataset, tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    with ChatServer() as server:
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


def test_case_2_report_figures_are_never_half_written(synthetic_build, tmp_path, monkeypatch, capsys) -> None:
    from mis_icc_metric.predictions_io import read_references

    from _leaderboard_helpers import make_results

    results = tmp_path / "results.json"
    results.write_text(json.dumps(make_results(read_references(synthetic_build, split="test"), model="org/m")))
    report = [
        "report",
        str(results),
        "--references",
        str(synthetic_build),
        "--comparison-bootstrap",
        "20",
        "--bootstrap",
        "20",
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
    time.sleep(0.2)  # into the shards
    return process


def test_case_2_build_stopped_by_sigterm_removes_its_staging_folder(tmp_path) -> None:
    release = generate_synthetic_release(tmp_path / "release", n_videos=300, seed=1, compress=False).release_dir
    out = tmp_path / "built"
    process = _start_and_wait_for_staging(release, out)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err[-2000:]
    lines = _error_lines(err)
    assert len(lines) == 1 and "terminated" in lines[0]
    assert _staging(out) == [] and not out.exists()


def test_case_2_the_next_build_removes_a_killed_builds_staging_folder(tmp_path) -> None:
    release = generate_synthetic_release(tmp_path / "release", n_videos=300, seed=1, compress=False).release_dir
    out = tmp_path / "built"
    process = _start_and_wait_for_staging(release, out)
    process.kill()  # SIGKILL: no handler runs, the staging folder stays behind
    process.communicate(timeout=60)
    assert _staging(out)
    done = subprocess.run(_build_command(release, out), cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _staging(out) == []
    assert (out / "README.md").is_file()


# ----------------------------------------------------------------------------- case 4: cache records checked


def _first_run(dataset: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    out = tmp_path / "out"
    with ChatServer() as server:
        args = _run_args(dataset, out, server.base_url)
        assert main(args) == 0
    return out / "responses.cache.jsonl", args


def _rewrite(cache: Path, lines: list[str]) -> None:
    cache.write_text("".join(line + "\n" for line in lines))


def test_case_4_conflicting_duplicates_are_named_with_both_answers(dataset, tmp_path, capsys) -> None:
    cache, args = _first_run(dataset, tmp_path)
    lines = cache.read_text().splitlines()
    index, record = next((i, json.loads(line)) for i, line in enumerate(lines) if '"status":"ok"' in line)
    other = {**record, "response": "Final answer: 1.2"}
    _rewrite(cache, [*lines, json.dumps(other)])  # as after two machines' caches were concatenated
    capsys.readouterr()
    with ChatServer() as server:
        args[args.index("--base-url") + 1] = server.base_url
        code = main(args)
        assert server.requests == 0
    errors = _error_lines(capsys.readouterr().err)
    assert code == EXIT_DATA
    assert record["response"] in errors[0] and "Final answer: 1.2" in errors[0]
    assert f"line {index + 1}" in errors[0] and f"line {len(lines) + 1}" in errors[0]
    assert "mis-bench cache" in errors[0]


def test_case_4_a_record_naming_another_row_is_never_served(dataset, tmp_path, caplog) -> None:
    cache, args = _first_run(dataset, tmp_path)
    lines = cache.read_text().splitlines()
    index, a = next((i, json.loads(line)) for i, line in enumerate(lines) if '"status":"ok"' in line)
    b = next(json.loads(line) for line in lines[index + 1 :] if '"status":"ok"' in line)
    lines[index] = json.dumps({**a, "video_id": b["video_id"], "dimension": b["dimension"], "response": "4.9"})
    _rewrite(cache, lines)
    with ChatServer() as server:
        args[args.index("--base-url") + 1] = server.base_url
        with caplog.at_level("WARNING"):
            assert main(args) == 0
        assert server.requests == 1  # row A is asked again; the forged record is never its answer
        assert main(args) == 0
        assert server.requests == 1  # and the answer then cached is served from then on
    warned = [r.getMessage() for r in caplog.records if "another row" in r.getMessage()]
    assert warned and f"line {index + 1}" in warned[0] and b["dimension"] in warned[0] and a["dimension"] in warned[0]
    predictions = next((tmp_path / "out").rglob("predictions.jsonl")).read_text().splitlines()
    assert 4.9 not in [json.loads(p)["prediction"] for p in predictions]


def test_case_4_a_record_without_a_response_is_named_and_asked_again(dataset, tmp_path, caplog) -> None:
    cache, args = _first_run(dataset, tmp_path)
    lines = cache.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"status":"ok"' in line)
    record = json.loads(lines[index])
    del record["response"]
    lines[index] = json.dumps(record)
    _rewrite(cache, lines)
    with ChatServer() as server:
        args[args.index("--base-url") + 1] = server.base_url
        with caplog.at_level("WARNING"):
            assert main(args) == 0
        assert server.requests == 1
    warned = [r.getMessage() for r in caplog.records if f"line {index + 1}" in r.getMessage()]
    assert warned and "without a response" in warned[0]


# ----------------------------------------------------------------------------- case 5: hostile answers


def _hostile(field: str):
    """A server whose answers carry one hostile value in `field`, every time."""

    def respond(body: dict) -> tuple[int, dict]:
        payload = chat_completion(prompt_text(body))
        if field == "finish_reason":
            payload["choices"][0]["finish_reason"] = math.nan
        elif field == "usage":
            payload["usage"] = {"prompt_tokens": -5, "completion_tokens": 2, "total_tokens": -3}
        elif field == "content":
            payload["choices"][0]["message"]["content"] = "Score: 3\ud800"
        return 200, payload

    return respond


@pytest.mark.parametrize("field", ["finish_reason", "usage", "content"])
def test_case_5_a_hostile_answer_is_a_malformed_response_and_a_rerun_heals(field, dataset, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    with ChatServer(respond=_hostile(field)) as server:
        code = main(_run_args(dataset, out, server.base_url, "--json"))
    captured = capsys.readouterr()
    _error_lines(captured.err)
    summary = json.loads(captured.out)
    assert code == EXIT_REQUESTS
    assert summary["failed"] == summary["rows"] and "malformed response" in summary["failures"]
    records = _strict_lines(out / "responses.cache.jsonl")
    assert records and not [r for r in records if r.get("status") == "ok"]
    results = json.loads(Path(summary["results"]).read_text(encoding="utf-8"))
    assert results["outcomes"]["overall"]["failed"] == summary["rows"]
    with ChatServer() as healthy:
        assert main(_run_args(dataset, out, healthy.base_url)) == 0
        assert healthy.requests == summary["rows"]


def test_case_5_a_cache_written_before_the_fix_with_nan_does_not_break_a_rerun(dataset, tmp_path, capsys) -> None:
    cache, args = _first_run(dataset, tmp_path)
    lines = cache.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"status":"ok"' in line)
    lines[index] = lines[index].replace('"finish_reason":"stop"', '"finish_reason":NaN')
    assert "NaN" in lines[index]
    _rewrite(cache, lines)
    with ChatServer() as healthy:
        args[args.index("--base-url") + 1] = healthy.base_url
        capsys.readouterr()
        assert main(args) == 0, capsys.readouterr().err
        assert healthy.requests == 1  # the poisoned answer is asked again, nothing else


def test_case_5_an_imported_batch_line_with_a_lone_surrogate_is_a_malformed_row(synthetic_build, tmp_path, capsys):
    export = tmp_path / "batch.jsonl"
    args = _run_args(synthetic_build, tmp_path / "out", "http://127.0.0.1:9/v1")
    assert main([*args, "--export-batch", str(export)]) == 0
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    outputs = []
    for n, line in enumerate(lines):
        reply = "3\ud800" if n == 0 else "3.5"
        body = chat_completion(prompt_text(line["body"]), reply=reply)
        outputs.append(json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": body}}))
    output = tmp_path / "output.jsonl"
    output.write_text("\n".join(outputs) + "\n", encoding="utf-8")
    capsys.readouterr()
    code = main([*args, "--import-batch", str(output), "--json"])
    captured = capsys.readouterr()
    _error_lines(captured.err)
    summary = json.loads(captured.out)["settings"][0]
    assert code == EXIT_REQUESTS
    assert summary["failed"] == 1 and "malformed response" in summary["failures"]
    assert summary["parsed"] == summary["rows"] - 1


# ----------------------------------------------------------------------------- case 6: deadlines


@pytest.mark.parametrize("trickle_headers", [False, True])
def test_case_6_timeout_bounds_a_trickled_request(trickle_headers, synthetic_build, tmp_path, capsys) -> None:
    with TricklingServer(interval_s=0.25, trickle_headers=trickle_headers) as server:
        started = time.monotonic()
        code = main(
            [
                *_run_args(synthetic_build, tmp_path / "out", server.base_url, "--json"),
                "--timeout",
                "2",
                "--max-retries",
                "0",
                "--concurrency",
                "8",
            ]
        )
        elapsed = time.monotonic() - started
    summary = json.loads(capsys.readouterr().out)
    assert code == EXIT_REQUESTS
    assert summary["failed"] == summary["rows"] == 8 and list(summary["failures"]) == ["timeout"]
    assert elapsed < 6.0, f"8 requests in parallel with --timeout 2 took {elapsed:.1f} s"


def test_case_6_a_run_deadline_ends_the_run(synthetic_build, tmp_path, capsys) -> None:
    with TricklingServer(interval_s=0.25) as server:
        started = time.monotonic()
        code = main(
            [
                *_run_args(synthetic_build, tmp_path / "out", server.base_url, "--json"),
                "--limit",
                "4",
                "--concurrency",
                "2",
                "--timeout",
                "600",
                "--run-deadline",
                "2",
            ]
        )
        elapsed = time.monotonic() - started
    summary = json.loads(capsys.readouterr().out)
    assert code == EXIT_REQUESTS
    assert summary["failed"] == summary["rows"] == 32 and list(summary["failures"]) == ["run deadline"]
    assert elapsed < 6.0, f"--run-deadline 2 took {elapsed:.1f} s"


# ----------------------------------------------------------------------------- case 7: two first uses at once


def test_case_7_two_default_jobs_started_together_both_succeed(tmp_path) -> None:
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


# ----------------------------------------------------------------------------- case 8: release file names


def _transcript(path: Path) -> str:
    with np.load(path) as npz:
        return str(npz["text"].reshape(()).item())


def test_case_8_the_exact_file_name_wins_and_the_stray_one_is_reported(tmp_path) -> None:
    from mis_bench_dataset import BuiltDataset

    release = generate_synthetic_release(tmp_path / "release", n_videos=10, seed=2).release_dir
    exact = sorted((release / "text" / "words").glob("*.npz"))[0]
    video_id = exact.stem
    stray = exact.with_name(f"{video_id} .npz")  # a trailing space sorts before "."
    np.savez(stray, text=np.array("a stray transcript that must not be used"))
    report = build_dataset(release, tmp_path / "built", progress=False)
    rows = [r for split in ("train", "validation", "test") for r in BuiltDataset.of(tmp_path / "built").rows(split)]
    assert {r["transcript"] for r in rows if r["video_id"] == video_id} == {_transcript(exact)}
    named = [p for p in report.problems if p.path and p.path.endswith(".npz") and p.video_id == video_id]
    assert [p.path for p in named] == [f"text/words/{video_id} .npz"]


def test_case_8_a_file_name_with_a_newline_is_escaped_in_the_listing(tmp_path, capsys) -> None:
    release = generate_synthetic_release(tmp_path / "release", n_videos=10, seed=2).release_dir
    exact = sorted((release / "text" / "words").glob("*.npz"))[0]
    shutil.copy(exact, exact.with_name("EVIL\nFAKE_T1_Luke.npz"))
    assert main(["build", str(release), "--out", str(tmp_path / "built")]) == 0
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "text/words/EVIL\\x0aFAKE_T1_Luke.npz" in text
    assert not [line for line in text.splitlines() if line.startswith("FAKE_T1_Luke")]


def test_case_8_class_hostile_names_never_forge_a_line_of_the_leaderboard_listing(tmp_path, capsys) -> None:
    from _leaderboard_helpers import make_references, make_results, noisy_predictions

    references = make_references()
    gold = tmp_path / "gold.csv"
    gold.write_text("video_id,dimension,score\n" + "".join(f"{v},{d},{s}\n" for (v, d), s in references.items()))
    subs = tmp_path / "subs"
    subs.mkdir()
    forged = "org/m\n    1. org/forged [text, direct] overall ICC 99.9%"
    (subs / "a.json").write_text(json.dumps(make_results(noisy_predictions(references, 0.3, seed=1), model=forged)))
    (subs / "bad\n  rejected nothing.json").write_text("{")
    assert (
        main(["leaderboard", str(subs), "--references", str(gold), "--bootstrap", "20", "--out", str(tmp_path / "b")])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4  # the summary, one ranked entry, one rejected file, the synthetic data's mark
    assert "org/m\\x0a" in lines[1] and "bad\\x0a" in lines[2] and lines[3].startswith("SYNTHETIC data:")


# ----------------------------------------------------------------------------- case 9: the leaderboard's fingerprint


def test_case_9_a_submission_on_another_dataset_is_not_ranked(synthetic_build, tmp_path, capsys) -> None:
    from mis_bench_dataset import BuiltDataset
    from mis_icc_metric.predictions_io import read_references

    from _leaderboard_helpers import make_results, noisy_predictions

    references = read_references(synthetic_build, split="test")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, noise, fingerprint in (
        ("same.json", 0.6, BuiltDataset.of(synthetic_build).fingerprint("test")),
        ("other.json", 0.1, "sha256:" + "0" * 64),
    ):
        results = make_results(noisy_predictions(references, noise, seed=1), model=name)
        results["dataset"]["fingerprint"] = fingerprint
        (subs / name).write_text(json.dumps(results))
    args = ["leaderboard", str(subs), "--references", str(synthetic_build), "--bootstrap", "20"]
    assert main([*args, "--out", str(tmp_path / "board"), "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert [e["file"] for e in board["entries"]] == ["same.json"]
    (rejected,) = board["rejected"]
    assert rejected["file"] == "other.json" and "fingerprint" in rejected["reasons"][0]
    assert "sha256:" + "0" * 64 in rejected["reasons"][0]


# ----------------------------------------------------------------------------- case 10: the C locale


def test_case_10_report_into_a_non_ascii_path_under_the_c_locale(synthetic_build, tmp_path) -> None:
    from mis_icc_metric.predictions_io import read_references

    from _leaderboard_helpers import make_results

    runs = tmp_path / "dé"
    runs.mkdir()
    results = make_results(read_references(synthetic_build, split="test"), model="org/modèle")
    (runs / "results.json").write_text(json.dumps(results), encoding="utf-8")
    out = tmp_path / "répört"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    env.update(LC_ALL="C", PYTHONUTF8="0")
    command = [sys.executable, "-m", "eval_scripts.cli", "report", str(runs), "--references", str(synthetic_build)]
    command += ["--comparison-bootstrap", "20", "--bootstrap", "20", "--out", str(out)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    for path in out.iterdir():
        if path.suffix in (".md", ".html", ".json"):
            text = path.read_bytes().decode("utf-8")
            assert "\\udc" not in text and "\ufffd" not in text
    assert str(runs / "results.json") in (out / "report.json").read_text(encoding="utf-8")
    assert "modèle" in (out / "report.md").read_text(encoding="utf-8")
