"""The embedded default job: `mis-bench run` with no model, end to end, offline."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from eval_scripts import load_submission
from eval_scripts.cli.run import run_default
from eval_scripts.formats.submission import find_problems
from eval_scripts.jobs.default_job import DEFAULT_OUT, out_folder
from mis_bench_dataset import DIMENSION_KEYS, HUMAN_CEILING
from mis_bench_dataset.toolkit.errors import DataError
from mis_icc_metric import read_predictions, read_references

from _metric_helpers import pingouin_icc3_1

REPO = Path(__file__).resolve().parents[1]


def test_out_folder_defaults_to_mis_bench_results():
    assert out_folder(None) == DEFAULT_OUT == out_folder("")
    assert out_folder("runs") == Path("runs")
    assert str(out_folder("elsewhere")) == "elsewhere"


@pytest.fixture(scope="module")
def default_job_run(readme_default_job):
    """The README's first command, `mis-bench run` (no model), as a new user runs it: in a subprocess, from a fresh
    checkout, with the default options (conftest's `readme_default_job`, run once per test run and replayed by
    the docs pages that start with it): (results folder, stdout, stderr)."""
    done = readme_default_job.done
    assert done.returncode == 0, done.stderr[-3000:]
    return readme_default_job.work / "mis-bench-results", done.stdout, done.stderr


@pytest.fixture(scope="module")
def default_job(default_job_run):
    """The default job's (results folder, stdout)."""
    return default_job_run[:2]


def test_the_default_job_is_quiet_on_stderr(default_job_run):
    """On success at most 3 lines on stderr (warnings a user must act on), no log line without -v
    (tests/test_quiet_output.py runs a default job with -v)."""
    stderr = default_job_run[2]
    assert len(stderr.splitlines()) <= 3 and "INFO" not in stderr, stderr


def test_readme_first_command_runs_the_default_job(default_job, default_sample_cache):
    """`mis-bench run` (no model): synthetic sample built, 4 settings + floor, report, leaderboard."""
    out, printed = default_job
    assert "SYNTHETIC DATA" in printed and "| System | VF |" in printed

    summary = json.loads((out / "summary.json").read_text())
    assert summary["synthetic"] is True
    assert [(r["baseline"], r["modality"]) for r in summary["runs"]] == [
        ("features", "text"),
        ("features", "audio+text"),
        ("features", "video+text"),
        ("features", "audio+video+text"),
        ("mean", "text"),
    ]
    build = next(default_sample_cache.glob("default-sample-v*/mis-bench"))
    references = read_references(build, split="test")
    videos = sorted({v for v, _ in references})
    for run in summary["runs"]:
        results = load_submission(out.parent / run["results"])
        assert find_problems(results, video_ids=videos, split="test") == []
        assert results["dataset"]["synthetic"] is True
        assert len(read_predictions(out.parent / run["predictions"])) == len(videos) * 8
    by_name = {(r["baseline"], r["modality"]): r for r in summary["runs"]}
    assert by_name[("mean", "text")]["mean_icc"] == pytest.approx(0.0, abs=1e-12)
    # The synthetic sample plants learnable signal: the feature model must find it.
    assert by_name[("features", "audio+video+text")]["overall_icc"] > 0.3

    report = (out / "report.md").read_text()
    assert "SYNTHETIC DATA" in report and "Human ceiling (Table 2)" in report
    html = (out / "report.html").read_text()
    # heatmap, radar, and for each system's best configuration (features, mean) a scatter, Bland-Altman,
    # calibration and histograms
    assert html.count("data:image/png;base64,") == 2 + 2 * 4
    best = json.loads((out / "report.json").read_text())["best_configuration"]
    assert [e["model"] for e in best] == [
        results["system"]["model"]
        for results in (
            load_submission(out.parent / by_name[("features", "text")]["results"]),
            load_submission(out.parent / by_name[("mean", "text")]["results"]),
        )
    ]
    winner = max((r for r in summary["runs"] if r["baseline"] == "features"), key=lambda r: r["overall_icc"])
    assert (best[0]["modality"], best[0]["overall_icc"]) == (winner["modality"], winner["overall_icc"])
    board = json.loads((out / "leaderboard" / "leaderboard.json").read_text())
    assert len(board["entries"]) == 4 and board["rejected"] == []
    assert {e["model"] for e in board["entries"]} == {"baseline/features-ridge"}
    # The mean floor is shown beside the ranked systems, never ranked among them.
    assert [(f["model"], f["rank"]) for f in board["floors"]] == [("baseline/train-mean", None)]
    assert "synthetic-notice" in (out / "leaderboard" / "index.html").read_text()


def test_default_job_tests_on_about_100_videos_at_paper_scale(default_job):
    """996 videos split 80/10/10 by video (the paper's rule): 796 train, 100 test; the summary says so."""
    out, printed = default_job
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_train_videos"] == 796 and summary["n_videos"] == 100 and summary["split"] == "test"
    assert "scoring 100 test videos" in printed and "ICC(3,1) % on 100 test videos (SYNTHETIC sample)" in printed


def test_default_job_baselines_land_below_the_human_ceiling(default_job, default_sample_cache):
    """Like real systems (paper Table 3: best 0.39), the best CPU baseline's mean dimension ICC is
    0.2-0.4 and above the Table 2 ceiling on at most two dimensions (ICCs recomputed with pingouin)."""
    out, _ = default_job
    summary = json.loads((out / "summary.json").read_text())
    build = next(default_sample_cache.glob("default-sample-v*/mis-bench"))
    references = read_references(build, split="test")
    mean_iccs = {}
    for run in summary["runs"]:
        if run["baseline"] != "features":
            continue
        predictions = read_predictions(out.parent / run["predictions"])
        results = load_submission(out.parent / run["results"])
        iccs = {}
        for key in DIMENSION_KEYS:
            gold = {v: g for (v, d), g in references.items() if d == key}
            predicted = {p["video_id"]: p["prediction"] for p in predictions if p["dimension"] == key}
            videos = sorted(gold)
            iccs[key], _ = pingouin_icc3_1(np.array([[gold[v], predicted[v]] for v in videos]))
            assert results["scores"]["dimensions"][key]["icc"] == pytest.approx(iccs[key], rel=1e-9, abs=1e-12)
        mean_iccs[run["modality"]] = (sum(iccs.values()) / len(iccs), iccs)
        assert run["mean_icc"] == pytest.approx(mean_iccs[run["modality"]][0], rel=1e-9)
    best, (best_mean, best_iccs) = max(mean_iccs.items(), key=lambda item: item[1][0])
    assert 0.2 <= best_mean <= 0.4, (best, best_mean)
    above = [key for key in DIMENSION_KEYS if best_iccs[key] > HUMAN_CEILING[key].icc]
    assert len(above) <= 2, (best, above)
    assert all(mean > 0.0 for mean, _ in mean_iccs.values())  # every setting learns something


def test_default_job_on_a_given_dataset_with_json(synthetic_build, tmp_path, capsys):
    args = argparse.Namespace(
        dataset=str(synthetic_build), out=str(tmp_path / "res"), split="validation", bootstrap=50, seed=1, json=True
    )
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
