"""The CLI against bad input: every subcommand, a table of careless and hostile arguments.

Each case runs `mis-bench` in-process and asserts the exit code (2 usage, 1 data, 3 failed
model requests), one error line `mis-bench CMD: error: ...` that names the argument or file,
no traceback (in-process: no "internal error", which is what an unexpected exception prints),
and that every file that existed before is byte-identical afterwards. A few cases run through
`python -m eval_scripts.cli` to show that no traceback reaches a real terminal, Ctrl-C included.
A hypothesis test feeds random argument fragments to every subcommand.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval_scripts.cli import build_parser, main
from mis_bench_dataset import build_dataset, generate_synthetic_release
from mis_icc_metric import read_references, write_predictions

from _leaderboard_helpers import make_results

REPO_ROOT = Path(__file__).resolve().parents[1]
HUGE_BYTES = 65 << 20  # over the 64 MiB JSON limit; written sparse, so it costs no disk


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def port() -> int:
    return _closed_port()


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """Inputs of every kind the cases need, in one folder (read-only for the cases)."""
    w = tmp_path_factory.mktemp("robust")
    release = generate_synthetic_release(w / "release", n_videos=10, seed=3)
    build_dataset(release.release_dir, w / "build", labels=release.ratings_csv, progress=False)
    build_dataset(release.release_dir, w / "unlabelled", progress=False)
    references = read_references(w / "build", split="test")
    write_predictions(
        w / "preds.csv", [{"video_id": v, "dimension": d, "prediction": s} for (v, d), s in references.items()]
    )
    (w / "gold.csv").write_text(
        "video_id,dimension,score\n" + "".join(f"{v},{d},{s}\n" for (v, d), s in sorted(references.items()))
    )
    (w / "results.json").write_text(json.dumps(make_results(references, model="org/m")))
    (w / "subs").mkdir()
    (w / "subs" / "a.json").write_text(json.dumps(make_results(references, model="org/m")))
    (w / "empty.csv").write_bytes(b"")
    (w / "empty.json").write_bytes(b"")
    (w / "header.csv").write_text("video_id,dimension,prediction\n")
    (w / "labels-header.csv").write_text("video_id,rater,dimension,score\n")
    (w / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (w / "binary.csv").write_bytes(b"\xff\xfe\x00" + bytes(range(256)) * 8)
    (w / "binary.json").write_bytes(b"\xff\xfe\x00" + bytes(range(256)) * 8)
    (w / "deep.json").write_text("[" * 50_000 + "]" * 50_000)
    (w / "deep.jsonl").write_text('{"a":' * 50_000 + "1" + "}" * 50_000 + "\n")
    (w / "bigfield.csv").write_text("video_id,dimension,prediction\n" + "x" * 200_000 + ",empathy,3\n")
    (w / "file.txt").write_text("a file the user keeps here\n")
    (w / "dir").mkdir()
    return w


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def changed_files(before: dict[str, bytes], root: Path) -> list[str]:
    return [name for name, data in before.items() if not (root / name).is_file() or (root / name).read_bytes() != data]


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if re.match(r"mis-bench( \S+)?: error: ", line)]


# (argv, expected exit code(s), substrings the error line must hold: the argument or file it is about).
# {w}: the folder of inputs, {o}: a fresh output path, {port}: a closed port on 127.0.0.1.
CLOSED = "--base-url http://127.0.0.1:{port}/v1 --max-retries 0 --timeout 2 --no-progress"
MODEL = "run --backend openai --model m --dataset {w}/build --out {o} " + CLOSED
CASES = [
    # --- top level
    ("", 2, ["mis-bench: error:", "COMMAND"]),
    ("nope", 2, ["invalid choice: 'nope'"]),
    # --- synth
    ("synth {w}/file.txt", 2, ["OUT", "file.txt", "is a file"]),
    ("synth {w}/file.txt/sub", 2, ["OUT", "file.txt/sub", "inside"]),
    ("synth {w}/release", 1, ["release", "not empty"]),
    ("synth {o} --videos 0", 2, ["--videos", "got 0"]),
    ("synth {o} --videos -1", 2, ["--videos", "got -1"]),
    ("synth {o} --videos 1000000000", 2, ["--videos", "1,000,000,000"]),
    ("synth {o} --videos 2.5", 2, ["--videos", "'2.5' is not an integer"]),
    ("synth {o} --seed -1", 2, ["--seed", "got -1"]),
    ("synth {o} --seed nan", 2, ["--seed", "'nan' is not an integer"]),
    # --- build
    ("build", 2, ["nothing to build"]),
    ("build {w}/missing --out {o}", 2, ["release_dir", "no such folder", "missing"]),
    ("build {w}/file.txt --out {o}", 2, ["release_dir", "file.txt", "not a folder"]),
    ("build {w}/release --labels {w}/missing.csv --out {o}", 2, ["--labels", "missing.csv"]),
    ("build {w}/release --labels {w}/dir --out {o}", 2, ["--labels", "dir", "is a folder"]),
    ("build {w}/release --labels {w}/empty.csv --out {o}", 1, ["empty.csv"]),
    ("build {w}/release --labels {w}/labels-header.csv --out {o}", 1, ["labels-header.csv", "no rows"]),
    ("build {w}/release --labels {w}/binary.csv --out {o}", 1, ["binary.csv", "UTF-8"]),
    ("build {w}/release --labels {w}/bigfield.csv --out {o}", 1, ["bigfield.csv"]),
    ("build --transcripts {w}/missing.csv --out {o}", 2, ["--transcripts", "missing.csv"]),
    ("build --transcripts {w}/empty.csv --out {o}", 1, ["empty.csv", "transcript"]),
    ("build --transcripts {w}/binary.csv --out {o}", 1, ["binary.csv", "UTF-8"]),
    ("build {w}/release --out {w}/file.txt", 2, ["--out", "file.txt", "is a file"]),
    ("build {w}/release --out {w}/file.txt/x", 2, ["--out", "file.txt/x", "inside"]),
    ("build {w}/release --out {w}/release", 2, ["--out", "overlaps the input"]),
    ("build {w}/release --out {w}/release/inner", 2, ["--out", "overlaps the input"]),
    ("build {w}/release --labels {w}/release/ratings.csv --out {w}/subs", 1, ["--out", "a.json", "did not write"]),
    ("build {w}/release --out {o} --seed -1", 2, ["--seed", "got -1"]),
    ("build {w}/release --out {o} --max-duration 0", 2, ["--max-duration", "got 0"]),
    ("build {w}/release --out {o} --max-duration -5", 2, ["--max-duration", "got -5"]),
    ("build {w}/release --out {o} --max-duration nan", 2, ["--max-duration", "got nan"]),
    ("build {w}/release --out {o} --max-duration inf", 2, ["--max-duration", "got inf"]),
    ("build {w}/release --out {o} --max-duration 0.001 --strict", 1, ["problem"]),  # every array is too long
    ("build {w}/release --out {o} --split-by nope", 2, ["--split-by", "invalid choice"]),
    # --- stats
    ("stats {w}/missing --out {o}", 2, ["dataset_dir", "no such folder"]),
    ("stats {w}/file.txt --out {o}", 2, ["dataset_dir", "not a folder"]),
    ("stats {w}/release --out {o}", 1, ["release", "not a MIS-Bench build"]),
    ("stats {w}/dir --out {o}", 1, ["dir", "not a MIS-Bench build"]),
    ("stats {w}/build --labels {w}/missing.csv --out {o}", 2, ["--labels", "missing.csv"]),
    ("stats {w}/build --labels {w}/empty.csv --out {o}", 1, ["empty.csv"]),
    ("stats {w}/build --labels {w}/binary.csv --out {o}", 1, ["binary.csv", "UTF-8"]),
    ("stats {w}/build --out {w}/file.txt", 2, ["--out", "file.txt"]),
    ("stats {w}/build --out {w}/build", 2, ["--out", "overlaps the input"]),
    ("stats {w}/build --out {w}/build/scoring", 2, ["--out", "overlaps the input"]),
    ("stats {w}/build --split dev --out {o}", 2, ["--split", "invalid choice: 'dev'"]),
    # --- score
    ("score --predictions {w}/missing.csv --references {w}/build", 2, ["--predictions", "missing.csv"]),
    ("score --predictions {w}/dir --references {w}/build", 2, ["--predictions", "is a folder"]),
    ("score --predictions {w}/empty.csv --references {w}/build", 1, ["empty.csv"]),
    ("score --predictions {w}/header.csv --references {w}/build", 1, ["no prediction"]),
    ("score --predictions {w}/binary.csv --references {w}/build", 1, ["binary.csv", "UTF-8"]),
    ("score --predictions {w}/binary.bin --references {w}/build", 1, ["binary.bin", "unsupported file type"]),
    ("score --predictions {w}/binary.json --references {w}/build", 1, ["binary.json", "UTF-8"]),
    ("score --predictions {w}/bigfield.csv --references {w}/build", 1, ["bigfield.csv", "field"]),
    ("score --predictions {w}/deep.json --references {w}/build", 1, ["deep.json", "nested"]),
    ("score --predictions {w}/deep.jsonl --references {w}/build", 1, ["deep.jsonl", "row 1", "nested"]),
    ("score --predictions {w}/huge.json --references {w}/build", 1, ["huge.json", "limit"]),
    ("score --predictions {w}/preds.csv", 2, ["--references"]),
    ("score --predictions {w}/preds.csv --references {w}/missing", 2, ["--references", "missing"]),
    ("score --predictions {w}/preds.csv --references {w}/empty.csv", 1, ["empty.csv", "not a references file"]),
    ("score --predictions {w}/preds.csv --references {w}/header.csv", 1, ["header.csv", "not a references file"]),
    ("score --predictions {w}/preds.csv --references {w}/binary.csv", 1, ["binary.csv", "UTF-8"]),
    ("score --predictions {w}/preds.csv --references {w}/release", 1, ["release", "scoring"]),
    ("score --predictions {w}/preds.csv --references {w}/unlabelled", 1, ["unlabelled"]),
    ("score --predictions {w}/preds.csv --references {w}/build --bootstrap -1", 2, ["--bootstrap", "got -1"]),
    ("score --predictions {w}/preds.csv --references {w}/build --bootstrap 1e9", 2, ["--bootstrap", "'1e9'"]),
    ("score --predictions {w}/preds.csv --references {w}/build --bootstrap 10000000000", 2, ["--bootstrap", "200,000"]),
    ("score --predictions {w}/preds.csv --references {w}/build --seed -1", 2, ["--seed", "got -1"]),
    ("score --predictions {w}/preds.csv --references {w}/build --confidence 0", 2, ["--confidence", "got 0"]),
    ("score --predictions {w}/preds.csv --references {w}/build --confidence 1", 2, ["--confidence", "got 1"]),
    ("score --predictions {w}/preds.csv --references {w}/build --confidence nan", 2, ["--confidence", "nan"]),
    ("score --predictions {w}/preds.csv --references {w}/build --confidence -inf", 2, ["--confidence", "expected one"]),
    ("score --predictions {w}/preds.csv --references {w}/build --confidence=-inf", 2, ["--confidence", "got -inf"]),
    (
        "score --predictions {w}/preds.csv --references {w}/build --out {w}/preds.csv",
        2,
        ["--out", "would overwrite the input"],
    ),
    (
        "score --predictions {w}/preds.csv --references {w}/gold.csv --out {w}/gold.csv",
        2,
        ["--out", "would overwrite the input"],
    ),
    ("score --predictions {w}/preds.csv --references {w}/build --out {w}/dir", 2, ["--out", "is a folder"]),
    (  # the old spelling of --out FILE: a usage error that says what to write instead
        "score --predictions {w}/preds.csv --references {w}/build --json {w}/new.json",
        2,
        ["unrecognized arguments", "--json is a switch", "--out FILE"],
    ),
    (
        "score --predictions {w}/preds.csv --references {w}/build --out {w}/file.txt",
        1,
        ["--out", "file.txt", "not written by"],
    ),
    ("score --predictions {w}/preds.csv --references {w}/build --out {w}/file.txt/x.json", 2, ["--out", "file.txt"]),
    (
        "score --predictions {w}/preds.csv --references {w}/build --common-videos {w}/missing.txt",
        2,
        ["--common-videos", "missing.txt"],
    ),
    (
        "score --predictions {w}/preds.csv --references {w}/build --common-videos {w}/empty.csv",
        1,
        ["empty.csv", "no video ids"],
    ),
    (
        "score --predictions {w}/preds.csv --references {w}/build --common-videos {w}/binary.bin",
        1,
        ["binary.bin", "UTF-8"],
    ),
    (
        "score --predictions {w}/preds.csv --references {w}/build --common-videos {w}/file.txt",
        1,
        ["file.txt", "row 1", "malformed video id"],
    ),
    # --- compare
    ("compare {w}/missing.csv {w}/preds.csv --references {w}/build", 2, ["argument a", "missing.csv"]),
    ("compare {w}/preds.csv {w}/dir --references {w}/build", 2, ["argument b", "is a folder"]),
    ("compare {w}/preds.csv {w}/empty.csv --references {w}/build", 1, ["empty.csv"]),
    ("compare {w}/preds.csv {w}/deep.json --references {w}/build", 1, ["deep.json", "nested"]),
    (
        "compare {w}/preds.csv {w}/preds.csv --references {w}/build --bootstrap 0",
        2,
        ["--bootstrap", "leaves nothing to report"],
    ),
    (
        "compare {w}/preds.csv {w}/preds.csv --references {w}/build --out {w}/preds.csv",
        2,
        ["--out", "would overwrite the input"],
    ),
    # --- run: the default job
    ("run --dataset {w}/missing --out {o}", 2, ["--dataset", "no such folder"]),
    ("run --dataset {w}/file.txt --out {o}", 2, ["--dataset", "not a folder"]),
    ("run --dataset {w}/release --out {o}", 1, ["--dataset", "features"]),
    ("run --dataset {w}/unlabelled --out {o}", 1, ["no labels"]),
    ("run --dataset {w}/build --out {w}/file.txt", 2, ["--out", "is a file"]),
    ("run --dataset {w}/build --out {w}/build", 2, ["--out", "overlaps the input"]),
    ("run --dataset {w}/build --out {o} --bootstrap -1", 2, ["--bootstrap", "got -1"]),
    ("run --dataset {w}/build --out {o} --bootstrap 1000000000", 2, ["--bootstrap", "200,000"]),
    ("run --dataset {w}/build --out {o} --seed -1", 2, ["--seed", "got -1"]),
    ("run --dataset {w}/build --out {o} --split dev", 2, ["--split", "invalid choice"]),
    # --- run: a model against a closed port
    ("run --backend openai --dataset {w}/build --out {o}", 2, ["--backend and --model"]),
    ("run --model m --dataset {w}/build --out {o}", 2, ["--backend and --model"]),
    ("run --backend nope --model m", 2, ["--backend", "invalid choice"]),
    (MODEL, 3, ["failed"]),  # the circuit breaker stops at the unreachable server: failed model requests
    (MODEL + " --grid --modalities text --prompts direct", 3, []),  # the grid's table has no failure count yet
    (MODEL + " --limit -1", 2, ["--limit", "got -1"]),
    (MODEL + " --limit 0", 2, ["--limit", "got 0"]),
    (MODEL + " --few-shot -3", 2, ["--few-shot", "got -3"]),
    (MODEL + " --concurrency 0", 2, ["--concurrency", "got 0"]),
    (MODEL + " --concurrency 100000", 2, ["--concurrency", "100,000"]),
    (MODEL + " --max-retries -1", 2, ["--max-retries", "got -1"]),
    (MODEL + " --timeout 0", 2, ["--timeout", "got 0"]),
    (MODEL + " --timeout nan", 2, ["--timeout", "got nan"]),
    (MODEL + " --temperature -1", 2, ["--temperature", "got -1"]),
    (MODEL + " --temperature inf", 2, ["--temperature", "got inf"]),
    (MODEL + " --top-p 2", 2, ["--top-p", "got 2"]),
    (MODEL + " --backoff-base -1", 2, ["--backoff-base", "got -1"]),
    (MODEL + " --max-new-tokens 0", 2, ["--max-new-tokens", "got 0"]),
    (MODEL + " --bootstrap -5", 2, ["--bootstrap", "got -5"]),
    (MODEL + " --modalities text,smell --grid", 2, ["--modalities", "smell"]),
    (MODEL + " --backend-modalities smell", 2, ["--backend-modalities", "smell"]),
    (MODEL + " --cache {w}/dir", 2, ["--cache", "is a folder"]),
    (MODEL + " --cache {w}/file.txt/c", 2, ["--cache", "inside"]),
    (MODEL + " --cache {w}/preds.csv", 1, ["preds.csv", "not a response cache"]),
    ("run --backend openai --model m --dataset {w}/build --out {o} --base-url notaurl", 2, ["--base-url", "notaurl"]),
    ("run --backend openai --model m --dataset {w}/missing --out {o} " + CLOSED, 2, ["--dataset", "missing"]),
    ("run --backend openai --model m --dataset {w}/release --out {o} " + CLOSED, 1, ["release", "scoring"]),
    ("run --backend openai --model m --dataset {w}/build --out {w}/file.txt " + CLOSED, 2, ["--out", "is a file"]),
    ("run --backend openai --model m --dataset {w}/build --out {w}/build " + CLOSED, 2, ["--out", "overlaps"]),
    # --- report
    ("report {w}/missing.json --out {o}", 2, ["argument results", "missing.json"]),
    ("report {w}/dir --out {o}", 2, ["dir", "no results.json"]),
    ("report {w}/empty.json --out {o}", 1, ["empty.json", "malformed JSON"]),
    ("report {w}/binary.json --out {o}", 1, ["binary.json", "UTF-8"]),
    ("report {w}/deep.json --out {o}", 1, ["deep.json", "nested"]),
    ("report {w}/huge.json --out {o}", 1, ["huge.json", "limit"]),
    ("report {w}/preds.csv --out {o}", 1, ["preds.csv", "not a valid results file"]),
    ("report {w}/results.json --out {o}", 1, ["results.json", "no scores", "--references"]),
    ("report {w}/results.json --out {w}/file.txt", 2, ["--out", "is a file"]),
    ("report {w}/results.json --out {w}/results.json", 2, ["--out", "is a file"]),
    ("report {w}/results.json --references {w}/missing --out {o}", 2, ["--references", "missing"]),
    ("report {w}/results.json --references {w}/empty.csv --out {o}", 1, ["empty.csv", "references"]),
    ("report {w}/results.json --references {w}/binary.csv --out {o}", 1, ["binary.csv", "UTF-8"]),
    ("report {w}/results.json --references {w}/unlabelled --out {o}", 1, ["unlabelled"]),
    ("report {w}/results.json --references {w}/gold.csv --bootstrap -1 --out {o}", 2, ["--bootstrap", "got -1"]),
    (
        "report {w}/results.json --references {w}/gold.csv --comparison-bootstrap 1000000000 --out {o}",
        2,
        ["--comparison-bootstrap", "200,000"],
    ),
    ("report {w}/results.json --references {w}/gold.csv --seed -1 --out {o}", 2, ["--seed", "got -1"]),
    ("report {w}/results.json --references {w}/gold.csv --reference nobody --out {o}", 2, ["--reference", "nobody"]),
    ("report {w}/results.json --references {w}/gold.csv --scatters some --out {o}", 2, ["--scatters"]),
    # --- submit
    ("submit {w}/missing.json --out {o}", 2, ["argument results", "missing.json"]),
    ("submit {w}/dir --out {o}", 2, ["argument results", "is a folder"]),
    ("submit {w}/empty.json --out {o}", 1, ["empty.json", "malformed JSON"]),
    ("submit {w}/binary.json --out {o}", 1, ["binary.json", "UTF-8"]),
    ("submit {w}/deep.json --out {o}", 1, ["deep.json", "nested"]),
    ("submit {w}/huge.json --out {o}", 1, ["huge.json", "limit"]),
    ("submit {w}/results.json --out {o} --max-mb 0.0001", 1, ["results.json", "limit"]),
    ("submit {w}/results.json --out {o} --max-mb 0", 2, ["--max-mb", "got 0"]),
    ("submit {w}/results.json --out {o} --max-mb -1", 2, ["--max-mb", "got -1"]),
    ("submit {w}/results.json --out {o} --max-mb nan", 2, ["--max-mb", "got nan"]),
    ("submit {w}/results.json --out {o} --max-mb inf", 2, ["--max-mb", "got inf"]),
    ("submit {w}/results.json --out {w}/file.txt", 2, ["--out", "is a file"]),
    ("submit {w}/results.json --out {w}/results.json", 2, ["--out", "is a file"]),
    ("submit {w}/results.json --references {w}/missing --out {o}", 2, ["--references", "no such folder"]),
    ("submit {w}/results.json --references {w}/file.txt --out {o}", 2, ["--references", "not a folder"]),
    ("submit {w}/results.json --references {w}/release --out {o}", 1, ["release", "scoring"]),
    # --- leaderboard
    ("leaderboard {w}/missing --references {w}/gold.csv --out {o}", 2, ["argument submissions", "no such folder"]),
    ("leaderboard {w}/file.txt --references {w}/gold.csv --out {o}", 2, ["argument submissions", "not a folder"]),
    ("leaderboard {w}/subs --out {o}", 2, ["--references"]),
    ("leaderboard {w}/subs --references {w}/missing.csv --out {o}", 2, ["--references", "missing.csv"]),
    ("leaderboard {w}/subs --references {w}/empty.csv --out {o}", 1, ["empty.csv", "references"]),
    ("leaderboard {w}/subs --references {w}/header.csv --out {o}", 1, ["header.csv", "references"]),
    ("leaderboard {w}/subs --references {w}/binary.csv --out {o}", 1, ["binary.csv", "UTF-8"]),
    ("leaderboard {w}/subs --references {w}/deep.json --out {o}", 1, ["deep.json"]),
    ("leaderboard {w}/subs --references {w}/dir --out {o}", 1, ["dir", "scoring"]),
    ("leaderboard {w}/subs --references {w}/unlabelled --out {o}", 1, ["unlabelled"]),
    ("leaderboard {w}/subs --references {w}/gold.csv --bootstrap 50 --out {o}", 2, ["--bootstrap", "got 50"]),
    ("leaderboard {w}/subs --references {w}/gold.csv --seed -1 --out {o}", 2, ["--seed", "got -1"]),
    ("leaderboard {w}/subs --references {w}/gold.csv --max-mb 0 --out {o}", 2, ["--max-mb", "got 0"]),
    ("leaderboard {w}/subs --references {w}/gold.csv --out {w}/file.txt", 2, ["--out", "is a file"]),
    ("leaderboard {w}/subs --references {w}/gold.csv --out {w}/subs", 2, ["--out", "overlaps the input"]),
    ("leaderboard {w}/subs --references {w}/build --out {w}/build/board", 2, ["--out", "overlaps the input"]),
]


def _argv(template: str, work: Path, out: Path, port: int) -> list[str]:
    return template.format(w=work, o=out, port=port).split()


def _make_huge(work: Path, template: str) -> Path | None:
    if "huge.json" not in template:
        return None
    huge = work / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(HUGE_BYTES)  # sparse: no disk used, but it stats as 65 MiB
    return huge


@pytest.mark.parametrize("template, code, names", CASES, ids=[c[0][:80] or "(no command)" for c in CASES])
def test_bad_input_gets_its_exit_code_and_one_line_and_changes_nothing(
    work, port, tmp_path, capsys, template, code, names
):
    huge = _make_huge(work, template)
    try:
        before = snapshot(work)
        returned = main(_argv(template, work, tmp_path / "out", port))
        captured = capsys.readouterr()
        changed = changed_files(before, work)
    finally:
        if huge is not None:
            huge.unlink()
    assert returned in (code if isinstance(code, tuple) else (code,)), captured.err
    assert "Traceback" not in captured.err and "internal error" not in captured.err, captured.err
    if returned == 3:  # failed model requests: the count is in the summary
        assert all(name in captured.out + captured.err for name in names), captured.out
    else:
        lines = error_lines(captured.err)
        command = template.split(" ", 1)[0] if template and not template.startswith("nope") else ""
        assert len(lines) == 1, captured.err
        assert lines[0].startswith(f"mis-bench {command}: error: " if command else "mis-bench: error: "), lines[0]
        missing = [name for name in names if name not in lines[0]]
        assert not missing, f"{missing} not in {lines[0]!r}"
    assert not changed, f"files changed: {changed}"


# ----------------------------------------------------------------------------- through a real process

SUBPROCESS_CASES = [
    ("score --predictions {w}/deep.json --references {w}/build", 1),
    ("build {w}/release --labels {w}/binary.csv --out {o}", 1),
    ("stats {w}/missing --out {o}", 2),
    ("submit {w}/results.json --max-mb -1 --out {o}", 2),
    ("leaderboard {w}/subs --references {w}/unlabelled --out {o}", 1),
    (MODEL, (1, 3)),
]


def _env(cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "MIS_BENCH_CACHE": str(cache),
        "MIS_BENCH_DEBUG": "0",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }


@pytest.mark.parametrize("template, code", SUBPROCESS_CASES, ids=[c[0][:60] for c in SUBPROCESS_CASES])
def test_no_traceback_reaches_the_terminal(work, port, tmp_path, template, code):
    before = snapshot(work)
    done = subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", *_argv(template, work, tmp_path / "out", port)],
        capture_output=True,
        text=True,
        env=_env(tmp_path / "cache"),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode in (code if isinstance(code, tuple) else (code,)), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    # exit 3: rows failed (their summary, no error line) or a run stopped at servers that cannot be reached (one line)
    assert len(error_lines(done.stderr)) in ((0, 1) if done.returncode == 3 else (1,)), done.stderr[-2000:]
    assert not changed_files(before, work)


def test_ctrl_c_during_the_default_job_exits_130_with_one_line(tmp_path):
    """SIGINT while the default job prepares its sample: exit 130, one line saying what is kept and how to
    go on, no traceback, and no half-written sample left behind for the next run to trip over."""
    cache = tmp_path / "cache"
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_scripts.cli", "run", "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        env=_env(cache),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background job may inherit SIG_IGN
    )
    try:
        assert process.stdout.readline().startswith("Preparing the synthetic sample")
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("mis-bench run: error: interrupted (Ctrl-C)"), err[-2000:]
    assert "rerun the same command" in lines[0]
    leftovers = [p.name for p in cache.rglob("*") if p.name.startswith((".release.tmp", ".mis-bench.building"))]
    assert not leftovers


# ----------------------------------------------------------------------------- random argument fragments

NUMBERS = ["0", "1", "3", "-1", "-0", "0.5", "1e309", "-1e309", "nan", "inf", "99999999999999999999", "1e-9"]
GARBAGE = ["", "-", "--", "-x", "--nope", "zzz", "../..", "/", "a,b", "text,smell", "💥", "="]
PATHS = [
    "{w}/file.txt",
    "{w}/dir",
    "{w}/missing",
    "{w}/file.txt/x",
    "{w}/empty.csv",
    "{w}/binary.bin",
    "{w}/deep.json",
    "{w}/preds.csv",
    "{w}/results.json",
    "{w}/header.csv",
    "{w}/release",
    "{w}/release/ratings.csv",
]
# Never drawn: help and debug (not bad input), what picks the model `run` calls (every `run` example asks the
# openai backend at a closed port, on a folder that is not a build, so none calls a model or starts the default
# job), uploads, and synth's full-size videos (slow, not bad input).
NEVER = {
    "-h",
    "--help",
    "--debug",
    "-v",
    "--verbose",
    "--version",
    "--backend",
    "--model",
    "--base-url",
    "--dataset",
    "--push",
    "--push-to-hub",
    "--full-size",
}


PATH_TYPES = {"file", "folder", "any", "file_path", "Path"}  # the argument types of eval_scripts.cli.args
PATH_DESTS = {"out", "json", "cache", "labels", "transcripts", "release_dir", "dataset_dir"}
NUMBER_TYPES = {
    "int",
    "float",
    "positive_int",
    "non_negative_int",
    "positive_float",
    "non_negative_float",
    "probability",
    "unit_interval",
}


def _subcommand_actions() -> dict[str, list]:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return {
        name: [a for a in sub._actions if not set(a.option_strings) & NEVER and a.dest != "help"]
        for name, sub in subparsers.choices.items()
    }


ACTIONS = _subcommand_actions()


@st.composite
def fragments(draw, command: str) -> list[str]:
    """An argument list built from the subcommand's own parser: its positionals and required options mostly
    present, some optional flags, each value a valid choice, a number, a path of some kind or garbage."""

    def value(action) -> str:
        kind = getattr(action.type, "__name__", "")
        if action.choices:
            likely = [str(choice) for choice in action.choices]  # the command line is text
        elif kind in PATH_TYPES or action.dest in PATH_DESTS:
            likely = PATHS
        elif kind in NUMBER_TYPES:
            likely = NUMBERS
        else:
            likely = NUMBERS + PATHS + GARBAGE
        pool = likely if draw(st.integers(0, 3)) else NUMBERS + PATHS + GARBAGE  # mostly the right kind of value
        return draw(st.sampled_from(pool))

    pieces: list[str] = []
    for action in ACTIONS[command]:
        if not action.option_strings:  # a positional: usually given, sometimes twice or not at all
            pieces += [value(action) for _ in range(draw(st.sampled_from([1, 1, 1, 0, 2])))]
        elif action.required or draw(st.integers(0, 3)) == 0:
            flag = draw(st.sampled_from(action.option_strings))
            if action.nargs == 0:
                pieces.append(flag)
            elif draw(st.integers(0, 9)):
                pieces += [flag, value(action)]
            else:
                pieces.append(flag)  # the value forgotten
    if draw(st.integers(0, 4)) == 0:
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(GARBAGE + NUMBERS)))
    return pieces


@pytest.fixture(scope="module")
def fuzz(work, tmp_path_factory) -> Path:
    """The fuzz's own folder of inputs (copies of the small ones; no release, no build), so no example can
    start real work and the table's inputs stay as they are."""
    folder = tmp_path_factory.mktemp("fuzz")
    for name in ("file.txt", "empty.csv", "binary.bin", "deep.json", "preds.csv", "results.json", "header.csv"):
        (folder / name).write_bytes((work / name).read_bytes())
    (folder / "dir").mkdir()
    (folder / "release").mkdir()
    (folder / "release" / "ratings.csv").write_bytes((work / "release" / "ratings.csv").read_bytes())
    return folder


ANCHORS = {
    # a model at a closed port, on a folder that is not a build: fails before any request
    "run": "run --backend openai --model m --dataset {w}/dir --base-url http://127.0.0.1:{port}/v1 --max-retries 0 "
    "--timeout 1 --no-progress",
    "fetch": "fetch --base-url http://127.0.0.1:{port} --timeout 1",  # the file host at a closed port: no download
    "synth": "synth --videos 1",  # OUT from the fragments; at most a small release, in a folder not there yet
}


@pytest.mark.parametrize("command", sorted(ACTIONS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_argument_fragments_never_crash(fuzz, port, capsys, command, data):
    pieces = data.draw(fragments(command))
    anchor = ANCHORS.get(command, command).format(w=fuzz, port=port).split()
    argv = anchor + [piece.format(w=fuzz, port=port) for piece in pieces]
    if command in ("build", "stats", "report", "submit", "leaderboard", "run"):
        argv += ["--out", str(fuzz / "out" / command)]  # writers write below a folder of their own (last --out wins)
    before = snapshot(fuzz)
    with contextlib.chdir(fuzz):  # a relative path in the fragments ("1", "=") lands in the fuzz folder
        code = main(argv)
    captured = capsys.readouterr()
    assert code in (0, 1, 2, 3), (argv, captured.err)
    assert "Traceback" not in captured.err and "internal error" not in captured.err, (argv, captured.err)
    assert not [name for name in changed_files(before, fuzz) if not name.endswith(".mis-bench-outputs.json")], argv
