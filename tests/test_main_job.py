"""The embedded default job: `mis-bench run` with no model, end to end, offline."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mis_bench_dataset.errors import DataError

from eval_scripts.main_job import DEFAULT_OUT, _out_dir, run_default
from eval_scripts.submission import find_problems, load_submission
from eval_scripts.cli import main as cli_main
from mis_icc_metric.predictions_io import read_predictions, read_references


def test_out_folder_defaults_to_mis_bench_results():
    assert _out_dir(argparse.Namespace(out=None)) == DEFAULT_OUT == _out_dir(argparse.Namespace())
    assert _out_dir(argparse.Namespace(out="runs")) == Path("runs")
    assert str(_out_dir(argparse.Namespace(out="elsewhere"))) == "elsewhere"


def test_readme_first_command_runs_the_default_job(tmp_path, monkeypatch, capsys):
    """`mis-bench run` (no model): synthetic sample built, 4 settings + floor, report, leaderboard."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIS_BENCH_CACHE", str(tmp_path / "cache"))
    assert cli_main(["run", "--n-bootstrap", "200"]) == 0
    printed = capsys.readouterr().out
    assert "SYNTHETIC DATA" in printed and "| System | VF |" in printed

    out = tmp_path / "mis-bench-results"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["synthetic"] is True
    assert [(r["baseline"], r["modality"]) for r in summary["runs"]] == [
        ("features", "text"), ("features", "audio+text"), ("features", "video+text"),
        ("features", "audio+video+text"), ("mean", "text"),
    ]
    sample = tmp_path / "cache"
    build = next(sample.glob("default-sample-v*/mis-bench"))
    references = read_references(build, split="test")
    videos = sorted({v for v, _ in references})
    for run in summary["runs"]:
        results = load_submission(tmp_path / run["results"])
        assert find_problems(results, video_ids=videos, split="test") == []
        assert results["dataset"]["synthetic"] is True
        assert len(read_predictions(tmp_path / run["predictions"])) == len(videos) * 8
    by_name = {(r["baseline"], r["modality"]): r for r in summary["runs"]}
    assert by_name[("mean", "text")]["mean_icc"] == pytest.approx(0.0, abs=1e-12)
    # The synthetic sample plants learnable signal: the feature model must find it.
    assert by_name[("features", "audio+video+text")]["overall_icc"] > 0.3

    report = (out / "report.md").read_text()
    assert "SYNTHETIC DATA" in report and "Human ceiling (Table 2)" in report
    html = (out / "report.html").read_text()
    # heatmap, radar, and a scatter of each system's best configuration (features, mean)
    assert html.count("data:image/png;base64,") == 2 + 2
    best = json.loads((out / "report.json").read_text())["best_configuration"]
    assert [e["model"] for e in best] == [results["system"]["model"] for results in
                                          (load_submission(tmp_path / by_name[("features", "text")]["results"]),
                                           load_submission(tmp_path / by_name[("mean", "text")]["results"]))]
    winner = max((r for r in summary["runs"] if r["baseline"] == "features"), key=lambda r: r["overall_icc"])
    assert (best[0]["modality"], best[0]["overall_icc"]) == (winner["modality"], winner["overall_icc"])
    board = json.loads((out / "leaderboard" / "leaderboard.json").read_text())
    assert len(board["entries"]) == 5 and board["rejected"] == []
    assert board["entries"][-1]["model"] == "baseline/train-mean"
    assert "synthetic-notice" in (out / "leaderboard" / "index.html").read_text()


def test_default_job_on_a_given_dataset_with_json(synthetic_build, tmp_path, capsys):
    args = argparse.Namespace(dataset=str(synthetic_build), out=str(tmp_path / "res"), split="validation",
                              n_bootstrap=50, seed=1, json=True)
    assert run_default(args) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # stdout is only the JSON
    assert "SYNTHETIC DATA" in captured.err
    assert summary["split"] == "validation" and summary["dataset"] == str(synthetic_build)
    assert (tmp_path / "res" / "report.html").is_file()
    for run in summary["runs"]:
        assert load_submission(run["results"])["dataset"]["split"] == "validation"


def test_default_job_refuses_a_folder_without_features(tmp_path):
    with pytest.raises(DataError, match="no `features` config"):
        run_default(argparse.Namespace(dataset=str(tmp_path), out=str(tmp_path / "o")))
