"""Every output made from synthetic data says so, and none made from other data does: the terminal summary, the
top-level `"synthetic"` of every JSON, the PNG titles (visible and in the PNG's Title text), the HTML/Markdown
captions, the leaderboard rows, the training outputs. One rule decides (the build report's `synthetic`, carried
in the results' dataset block); `unmarked_build` is a build whose report says `synthetic: false`, and the
authors' real files (where ../shared exists) are the real thing."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from PIL import Image

from eval_scripts.cli import main
from eval_scripts.formats.data_names import DEFAULT_SAMPLE_NAME, dataset_name
from mis_bench_dataset.wording import SYNTHETIC_MARK

from _run_args import batch_args, run_args


@pytest.fixture(params=["synthetic", "plain"])
def build(request, synthetic_build, unmarked_build) -> tuple[Path, bool]:
    return (synthetic_build, True) if request.param == "synthetic" else (unmarked_build, False)


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _predictions(build: Path, path: Path, shift: float = 0.3) -> Path:
    from mis_icc_metric import read_references, write_predictions

    refs = read_references(build, split="test")
    rows = [
        {"video_id": v, "dimension": d, "prediction": min(5.0, round(g + shift * (hash(v) % 3 - 1), 1))}
        for (v, d), g in sorted(refs.items())
    ]
    write_predictions(path, rows)
    return path


def _png_titles(folder: Path) -> dict[str, str]:
    return {png.name: Image.open(png).text.get("Title", "") for png in sorted(folder.glob("*.png"))}


def _marked(text: str) -> bool:
    return SYNTHETIC_MARK in text


def test_score_and_compare(build, tmp_path, capsys):
    folder, synthetic = build
    a = _predictions(folder, tmp_path / "a.csv", 0.3)
    b = _predictions(folder, tmp_path / "b.csv", 0.8)
    common = ["--references", folder, "--bootstrap", "100"]
    code, out, _ = _cli(capsys, "score", "--predictions", a, *common, "--out", tmp_path / "a.json")
    assert code == 0 and _marked(out) is synthetic
    assert str(folder) in out.splitlines()[0]  # the data by its name (the build's path)
    assert json.loads((tmp_path / "a.json").read_text())["synthetic"] is synthetic
    code, out, err = _cli(capsys, "score", "--predictions", a, *common, "--json")
    assert code == 0 and json.loads(out)["synthetic"] is synthetic and "wrote" not in out
    code, out, _ = _cli(capsys, "compare", a, b, *common)
    assert code == 0 and _marked(out) is synthetic and str(folder) in out.splitlines()[0]
    code, out, _ = _cli(capsys, "compare", a, b, *common, "--json")
    assert code == 0 and json.loads(out)["synthetic"] is synthetic


def test_run_openai_dry_run_and_batch(build, tmp_path, capsys, chat_server):
    folder, synthetic = build
    with chat_server() as server:
        args = run_args(folder, tmp_path / "runs", server.base_url, limit=2)
        code, out, _ = _cli(capsys, *args)
        assert code == 0 and _marked(out) is synthetic
        code, out, _ = _cli(capsys, *args, "--json")
        summary = json.loads(out)
        assert code == 0 and summary["synthetic"] is synthetic
        assert json.loads(Path(summary["results"]).read_text())["dataset"]["synthetic"] is synthetic
        raw = Path(summary["results"]).with_name("raw_responses.jsonl")
        code, out, _ = _cli(capsys, "parse", raw)
        assert code == 0 and _marked(out) is synthetic
        code, out, _ = _cli(capsys, "parse", raw, "--json")
        assert code == 0 and json.loads(out)["synthetic"] is synthetic
        code, out, _ = _cli(capsys, *args, "--grid", "--modalities", "text")
        assert code == 0 and _marked(out) is synthetic
    code, out, _ = _cli(capsys, *args, "--dry-run")
    assert code == 0 and _marked(out) is synthetic
    code, out, _ = _cli(capsys, *args, "--dry-run", "--json")
    assert code == 0 and json.loads(out)["synthetic"] is synthetic
    export = batch_args("export", tmp_path / "batch.jsonl", folder, tmp_path / "runs", server.base_url, limit=2)
    code, out, _ = _cli(capsys, *export, "--prompt", "cot", "--json")
    assert code == 0 and json.loads(out)["synthetic"] is synthetic


def test_default_job_leaderboard_submit_and_report(build, tmp_path, capsys):
    folder, synthetic = build
    job = tmp_path / "job"
    code, out, _ = _cli(capsys, "run", "--dataset", folder, "--out", job, "--bootstrap", "100")
    assert code == 0 and _marked(out) is synthetic
    assert json.loads((job / "summary.json").read_text())["synthetic"] is synthetic

    board_args = ["leaderboard", job / "submissions", "--references", folder, "--bootstrap", "100"]
    code, out, _ = _cli(capsys, *board_args, "--out", tmp_path / "board")
    assert code == 0 and _marked(out) is synthetic
    ranked = [line for line in out.splitlines() if line.lstrip()[:2].rstrip(".").isdigit()]
    assert ranked and all((f"[{SYNTHETIC_MARK}]" in line) is synthetic for line in ranked)  # every row marked
    assert json.loads((tmp_path / "board" / "leaderboard.json").read_text())["synthetic"] is synthetic

    (results, *_) = sorted((job / "runs").rglob("results.json"))
    code, out, _ = _cli(capsys, "submit", results, "--out", tmp_path / "subs", "--json")
    assert code == 0 and json.loads(out)["synthetic"] is synthetic

    report = tmp_path / "report"
    args = ["report", job / "runs", "--references", folder, "--bootstrap", "0", "--comparison-bootstrap", "100"]
    # The report command without the per-system figures (seconds each); the default job's report above has them.
    code, out, _ = _cli(capsys, *args, "--scatters", "none", "--out", tmp_path / "report-json", "--json")
    assert code == 0 and json.loads(out)["synthetic"] is synthetic
    code, out, _ = _cli(capsys, *args, "--scatters", "none", "--out", report)
    assert code == 0 and _marked(out) is synthetic
    titles = {**_png_titles(job), **{f"report/{name}": title for name, title in _png_titles(report).items()}}
    assert any(name.startswith("report-scatter") for name in titles) and "report/report-radar.png" in titles
    assert all(title and _marked(title) is synthetic for title in titles.values()), titles
    markdown = (report / "report.md").read_text()
    assert _marked(markdown) is synthetic and _marked((report / "report.html").read_text()) is synthetic
    assert json.loads((report / "report.json").read_text())["synthetic"] is synthetic
    caption = next(line for line in markdown.splitlines() if line.startswith("Systems scored on split"))
    assert repr(folder.name) in caption and "sha256:" in caption  # the name first, the fingerprint second
    assert caption.index(repr(folder.name)) < caption.index("sha256:")


def test_stats(build, tmp_path, capsys):
    folder, synthetic = build
    code, out, _ = _cli(capsys, "stats", folder, "--out", tmp_path / "stats")
    assert code == 0 and _marked(out) is synthetic
    assert json.loads((tmp_path / "stats" / "stats.json").read_text())["synthetic"] is synthetic
    titles = _png_titles(tmp_path / "stats")
    assert set(titles) == {"correlation.png", "histograms.png"}
    assert all(title and _marked(title) is synthetic for title in titles.values()), titles
    built = _png_titles(folder / "stats")  # the build's own statistics, for its card
    assert len(built) == 2 and all(_marked(title) is synthetic for title in built.values()), built
    assert json.loads((folder / "stats" / "stats.json").read_text())["synthetic"] is synthetic


def test_training_outputs(build, tmp_path, capsys):
    from raft_trainer import save_tiny_model
    from raft_trainer.train import main as train_main

    folder, synthetic = build
    model = save_tiny_model(tmp_path / "tiny")
    out = tmp_path / "train"
    args = ["--model_name_or_path", model, "--dataset_dir", folder, "--output_dir", out, "--no_train"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert train_main([str(a) for a in [*args, "--max_length", "2048"]]) == 0
    # third-party deprecations raised from TRL's and PEFT's own code are not shown (quiet output)
    assert not [w for w in caught if "checkpointing` is deprecated" in str(w.message)]
    assert json.loads((out / "setting.json").read_text())["synthetic"] is synthetic
    assert json.loads((out / "scores_test.json").read_text())["synthetic"] is synthetic
    assert _marked(capsys.readouterr().out) is synthetic


def test_the_authors_real_files_are_not_marked(real_text_build, tmp_path, capsys):
    code, out, _ = _cli(capsys, "stats", real_text_build, "--split", "test", "--out", tmp_path / "stats", "--json")
    assert code == 0 and json.loads(out)["synthetic"] is False
    assert not any(_marked(title) for title in _png_titles(tmp_path / "stats").values())
    preds = _predictions(real_text_build, tmp_path / "p.csv")
    code, out, _ = _cli(capsys, "score", "--predictions", preds, "--references", real_text_build, "--bootstrap", "0")
    assert code == 0 and not _marked(out)


def test_data_is_named_by_its_name_the_fingerprint_second(default_sample_cache, monkeypatch):
    from mis_bench_dataset import BuiltDataset

    monkeypatch.setenv("MIS_BENCH_CACHE", str(default_sample_cache))
    build = next(default_sample_cache.glob("default-sample-v*/mis-bench"))
    fingerprint = BuiltDataset.open(build).fingerprint("test", ("scoring", "features"))
    label = dataset_name("mis-bench", fingerprint, "test", synthetic=True)
    assert label == f"{DEFAULT_SAMPLE_NAME} ({fingerprint[:19]}...)"
    assert dataset_name("my-build", fingerprint[:-4] + "0000", "test", synthetic=True).startswith(
        f"'my-build' ({SYNTHETIC_MARK}, sha256:"
    )
    assert dataset_name("my-build", "sha256:abc", "test") == "'my-build' (sha256:abc)"
