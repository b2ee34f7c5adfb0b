"""Write last, claim on success: every writing command, forced to fail once its inputs are read and its work
done (the toolkit's one writer refuses every output file, as a full disk would), leaves its --out as it was:
every file byte-identical, no new file, no empty folder, and no ownership claim for a file it did not write.

Before the claim was recorded when the output was claimed, so a failed command left `mine.csv` recorded as
its own and a later command replaced the user's file of that name. The ownership manifest now records a file
when the atomic writer has put it in place (`toolkit.ownership`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import build_dataset, generate_synthetic_release
from mis_bench_dataset.toolkit import atomic
from mis_bench_dataset.toolkit.atomic import write_atomic
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.ownership import MANIFEST_NAME, OutputFolder, claim_file, read_manifest
from mis_icc_metric import read_references, write_predictions

from _leaderboard_helpers import make_results
from _run_args import batch_args, run_args

USER_FILE = "notes.txt"


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """Inputs every command reads (read-only for the cases)."""
    w = tmp_path_factory.mktemp("write-last")
    release = generate_synthetic_release(w / "release", n_videos=24, seed=5)
    build_dataset(release.release_dir, w / "build", labels=release.ratings_csv, progress=False)
    references = read_references(w / "build", split="test")
    noise = np.random.default_rng(0).normal(0, 0.6, len(references))
    for name, shift in (("a.csv", 0.0), ("b.csv", 0.3)):
        write_predictions(
            w / name,
            [
                {"video_id": v, "dimension": d, "prediction": float(np.clip(s + e + shift, 1, 5))}
                for ((v, d), s), e in zip(sorted(references.items()), noise, strict=True)
            ],
        )
    every = read_references(w / "build", split="all")
    jitter = np.random.default_rng(1).normal(0, 0.5, len(every))  # a judge with spread: a pilot plan accepts
    write_predictions(
        w / "all.csv",
        [
            {"video_id": v, "dimension": d, "prediction": float(np.clip(s + e, 1, 5))}
            for ((v, d), s), e in zip(sorted(every.items()), jitter, strict=True)
        ],
    )
    (w / "results.json").write_text(json.dumps(make_results(references, model="org/m")))
    (w / "subs").mkdir()
    (w / "subs" / "a.json").write_text(json.dumps(make_results(references, model="org/m")))
    run = w / "run"
    run.mkdir()
    answers = [
        {"video_id": v, "dimension": d, "status": "ok", "response": f"score: {s}", "prediction": s,
         "finish_reason": "stop", "sample": 0}
        for (v, d), s in sorted(references.items())[:6]
    ]  # fmt: skip
    (run / "raw_responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answers))
    (run / "results.json").write_text(json.dumps({"setting": {"prompt_style": "direct"}}))
    cache = w / "cache.jsonl"
    from eval_scripts.harness.response_cache import HEADER_LINE

    cache.write_bytes(HEADER_LINE if isinstance(HEADER_LINE, bytes) else HEADER_LINE.encode())
    return w


def _all(root: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) under `root`."""
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def _fail_every_output(monkeypatch) -> list[Path]:
    """The one writer refuses every file but the manifest, as a full disk would (the manifest's own writes pass,
    so a claim recorded before the write would show)."""
    refused: list[Path] = []
    real = atomic._write_new

    def refuse(path: Path, data: bytes, *, target: Path, sync: bool = True) -> None:
        if Path(target).name == MANIFEST_NAME:
            return real(path, data, target=target, sync=sync)
        refused.append(Path(target))
        raise atomic.no_space_error(target, needed=len(data))

    monkeypatch.setattr(atomic, "_write_new", refuse)
    return refused


# argv templates; {w}: the inputs, {o}: the case's folder (where --out points).
COMMANDS = {
    "score": "score --predictions {w}/a.csv --references {w}/build --bootstrap 100 --out {o}/score.json",
    "compare": "compare {w}/a.csv {w}/b.csv --references {w}/build --bootstrap 100 --out {o}/compare.json",
    "estimate": "estimate --predictions {w}/a.csv --references {w}/build --bootstrap 100 --out {o}/estimate.json",
    "plan": "plan icc --predictions {w}/all.csv --references {w}/build --half-width 0.2 --split all --bootstrap 100 "
    "--videos-per-clinician 1"
    " --out {o}/plan.json",
    "parse": "parse {w}/run/raw_responses.jsonl --out {o}/mine.csv",
    "report": "report {w}/results.json --references {w}/build --bootstrap 100 --out {o}/report",
    "leaderboard": "leaderboard {w}/subs --references {w}/build --bootstrap 100 --out {o}/board",
    "submit": "submit {w}/results.json --out {o}/subs",
    "stats": "stats {w}/build --out {o}/stats",
    "build": "build {w}/release --labels {w}/release/ratings.csv --out {o}/build",
    "synth": "synth {o}/synth --videos 2",
    "cache merge": "cache merge {w}/cache.jsonl {w}/cache.jsonl --out {o}/merged.jsonl",
    "run (default job)": "run --dataset {w}/build --bootstrap 100 --out {o}/job",
    "run --perturb (ridge)": "run --dataset {w}/build --perturb no-fillers --bootstrap 100 --out {o}/perturbed",
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_failing_at_its_write_leaves_out_as_it_was_and_claims_nothing(
    name, work, tmp_path, monkeypatch, capsys
) -> None:
    case = tmp_path / "case"
    case.mkdir()
    (case / USER_FILE).write_text("the user's own file\n")
    before = _all(case)
    refused = _fail_every_output(monkeypatch)
    code = main(COMMANDS[name].format(w=work, o=case).split())
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert code == 1, err
    assert refused, err
    lines = [line for line in err.splitlines() if line.startswith("mis-bench")]
    assert len(lines) == 1 and "no space left" in lines[0] and "internal error" not in err, err
    assert _all(case) == before, (err, _all(case).keys())  # byte-identical: no file, no folder, no manifest


def _chat_run(work: Path, out: Path, url: str, *extra: str) -> list[str]:
    return run_args(work / "build", out, url, *extra, limit=2, retries=0, backoff_base=0)


def test_a_model_run_failing_at_its_write_records_only_what_exists(work, tmp_path, monkeypatch, chat_server):
    """A run's response cache is written as the answers come (they are paid for): it is recorded; the run's
    results, never written, are not."""
    out = tmp_path / "out"
    out.mkdir()
    (out / USER_FILE).write_text("mine\n")
    with chat_server() as server:
        real = atomic._write_new

        def refuse(path, data, *, target, sync=True):
            if Path(target).name in (MANIFEST_NAME, "responses.cache.jsonl"):
                return real(path, data, target=target, sync=sync)
            raise atomic.no_space_error(target, needed=len(data))

        monkeypatch.setattr(atomic, "_write_new", refuse)
        assert main(_chat_run(work, out, server.base_url)) == 1
        monkeypatch.undo()
    owned = read_manifest(out)
    assert owned and all((out / rel).is_file() for rel in owned), owned
    assert not [p for p in out.rglob("results.json")]
    assert (out / USER_FILE).read_text() == "mine\n"


def test_batch_export_and_import_failing_claim_nothing(work, tmp_path, monkeypatch, chat_server, capsys):
    from _batch_helpers import simulate_provider

    case = tmp_path / "case"
    case.mkdir()
    (case / USER_FILE).write_text("mine\n")
    before = _all(case)
    export = batch_args("export", case / "in.jsonl", work / "build", tmp_path / "runs", limit=2)
    _fail_every_output(monkeypatch)
    assert main(export) == 1
    monkeypatch.undo()
    assert _all(case) == before and not (tmp_path / "runs").exists()
    # exported for real, answered, then an import that cannot write: the run folder gets nothing
    assert main(export) == 0
    simulate_provider([case / "in.jsonl"], tmp_path / "answers.jsonl")
    runs_before = _all(tmp_path / "runs") if (tmp_path / "runs").exists() else {}
    _fail_every_output(monkeypatch)
    code = main(batch_args("import", tmp_path / "answers.jsonl", work / "build", tmp_path / "runs", limit=2))
    monkeypatch.undo()
    assert code == 1, capsys.readouterr().err
    after = _all(tmp_path / "runs") if (tmp_path / "runs").exists() else {}
    assert after == runs_before
    capsys.readouterr()


def test_a_failed_commands_claim_never_lets_a_later_command_replace_the_users_file(work, tmp_path, monkeypatch):
    """The reported sequence: a failed `parse --out mine.csv`, then the user's own mine.csv, then a command
    that may write mine.csv only if it wrote it: refused, the user's file kept."""
    argv = ["parse", str(work / "run" / "raw_responses.jsonl"), "--out", str(tmp_path / "mine.csv")]
    _fail_every_output(monkeypatch)
    assert main(argv) == 1
    monkeypatch.undo()
    (tmp_path / "mine.csv").write_text("the user's\n")
    assert main(argv) == 1
    assert (tmp_path / "mine.csv").read_text() == "the user's\n"


def test_a_claim_records_only_once_the_file_is_written(tmp_path) -> None:
    folder = OutputFolder(tmp_path / "out", command="report")
    a, b = folder.claim_all(["a.json", "sub/b.json"], "report")
    assert not (tmp_path / "out").exists(), "a claim creates nothing"
    with pytest.raises(RuntimeError), atomic.AtomicFiles() as files:
        files.write(a, "a")
        raise RuntimeError("the computation fails after the first file is staged")
    assert not (tmp_path / "out").exists(), "the folders made for a failed write are removed again"
    write_atomic(b, "b")
    assert read_manifest(tmp_path / "out") == {"sub/b.json": "report"}
    folder.publish("report", {"a.json": "A", "c.json": "C"})
    assert read_manifest(tmp_path / "out") == {"a.json": "report", "c.json": "report", "sub/b.json": "report"}
    assert (tmp_path / "out" / "c.json").read_text() == "C"
    (tmp_path / "out" / "appended.jsonl").write_text("x\n")
    assert folder.record(["appended.jsonl", "never-written.json"], "report") == ["appended.jsonl"]
    assert "never-written.json" not in read_manifest(tmp_path / "out")


def test_an_output_that_is_an_input_names_the_file_typed(tmp_path, monkeypatch) -> None:
    (tmp_path / "mine.csv").write_text("x\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as info:
        claim_file("mine.csv", command="score", writer="score-json", arg="--out", inputs=["mine.csv"])
    assert info.value.line().startswith("--out mine.csv would overwrite the input"), info.value.line()
    with pytest.raises(DataError):
        claim_file("mine.csv", command="score", writer="score-json", arg="--out")


def test_a_rerun_into_its_own_folder_failing_keeps_the_earlier_files(work, tmp_path, monkeypatch) -> None:
    out = tmp_path / "report"
    argv = f"report {work}/results.json --references {work}/build --bootstrap 100 --out {out}".split()
    assert main(argv) == 0
    before = _all(out)
    _fail_every_output(monkeypatch)
    assert main([*argv, "--title", "another"]) == 1
    monkeypatch.undo()
    assert _all(out) == before
    shutil.rmtree(out)


def test_a_rerun_with_fewer_runs_removes_the_earlier_reports_extra_figures(work, tmp_path) -> None:
    """A report of two systems, then of one into the same folder: the second system's figures, which the new report
    does not show, are removed (only files the report wrote; a user's file of that form is kept)."""
    second = tmp_path / "second.json"
    second.write_text((work / "results.json").read_text().replace('"org/m"', '"org/other"'))
    out = tmp_path / "report"
    base = ["report", "--references", str(work / "build"), "--bootstrap", "100", "--scatters", "all", "--out", str(out)]
    assert main([*base[:1], str(work / "results.json"), str(second), *base[1:]]) == 0
    first_figures = {p.name for p in out.glob("report-scatter-*.png")}
    assert len(first_figures) == 2
    (out / "report-scatter-9-mine.png").write_bytes(b"the user's")
    assert main([*base[:1], str(work / "results.json"), *base[1:]]) == 0
    figures = {p.name for p in out.glob("report-scatter-*.png")}
    assert figures == {next(iter(sorted(first_figures))), "report-scatter-9-mine.png"}, figures
    owned = read_manifest(out)
    assert all((out / rel).is_file() for rel in owned), "the manifest names only files that exist"
    assert (out / "report-scatter-9-mine.png").read_bytes() == b"the user's"


def test_a_claim_dropped_when_its_command_ends_is_never_recorded(tmp_path) -> None:
    """The CLI forgets a command's unwritten claims when it ends: a later write of that path by anything else in
    the same process (a library call, another command) records nothing for the failed command."""
    from mis_bench_dataset.toolkit.ownership import drop_pending_claims

    folder = OutputFolder(tmp_path / "out", command="score")
    target = folder.claim("score.json", "score-json")
    drop_pending_claims()
    write_atomic(target, "someone else's file")
    assert read_manifest(tmp_path / "out") == {}


def test_batch_export_refuses_a_users_file_before_any_work(work, tmp_path, monkeypatch, capsys) -> None:
    import eval_scripts.harness.offline_runs as offline_runs

    def never(*args, **kwargs):
        raise AssertionError("the requests were prepared before the output was checked")

    monkeypatch.setattr(offline_runs, "prepare_settings", never)
    (tmp_path / "in.jsonl").write_text("the user's\n")
    code = main(batch_args("export", tmp_path / "in.jsonl", work / "build", tmp_path / "runs", limit=2))
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "was not written by" in err[0], err
    assert (tmp_path / "in.jsonl").read_text() == "the user's\n"
