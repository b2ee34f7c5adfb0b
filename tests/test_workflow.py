"""The clinician's workflow on the command line (issue 44.6): `run --cv-folds` writes its out-of-fold predictions as
runs, and `score` scores a judge on every video on the videos that have gold, counting what it left aside."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions


@pytest.fixture(scope="module")
def cv_job(synthetic_build, tmp_path_factory):
    out = tmp_path_factory.mktemp("cv-job") / "job"
    args = ["run", "--dataset", str(synthetic_build), "--out", str(out), "--cv-folds", "2", "--cv-seeds", "2"]
    assert main([*args, "--bootstrap", "100", "--json"]) == 0
    return out


@pytest.mark.slow
def test_cv_folds_writes_each_seeds_out_of_fold_predictions_as_a_run(cv_job, synthetic_build):
    from eval_scripts.formats.submission import validate_results
    from mis_bench_dataset import BuiltDataset
    from mis_icc_metric import read_predictions, read_references, score_predictions

    summary = json.loads((cv_job / "summary.json").read_text())
    runs = summary["cross_validation"]["runs"]
    assert {(r["run"], r["fold_seed"]) for r in runs} >= {("features text", 0), ("features text", 1)}
    doc = json.loads((cv_job / "cross_validation.json").read_text())
    assert all("out_of_fold" not in run for run in doc["runs"].values())  # the predictions are runs, not JSON
    gold = read_references(synthetic_build, split="all")
    handle = BuiltDataset.open(synthetic_build)
    for run in runs:
        results = json.loads(Path(run["results"]).read_text())
        validate_results(results, source=run["results"])
        assert results["dataset"]["split"] == "all" and results["dataset"]["synthetic"] is True
        assert results["dataset"]["fingerprint"] == handle.build_fingerprint("all")
        records = read_predictions(run["predictions"])
        predicted = {(r["video_id"], r["dimension"]): r["prediction"] for r in records}
        every_video = {video for video, _ in gold}
        assert {v for v, _ in predicted} == every_video and {d for _, d in predicted} == set(DIMENSION_KEYS)
        # Scored as any run, with the same draw as cross_validation.json: the same numbers.
        by_seed = doc["runs"][run["run"]]["by_seed"][str(run["fold_seed"])]
        assert results["scores"]["mean_icc"] == pytest.approx(by_seed["mean_icc"])
        independent = score_predictions(
            {k: v for k, v in predicted.items() if k in gold}, gold, resampling=ResamplingOptions(n_bootstrap=0)
        )
        assert results["scores"]["mean_icc"] == pytest.approx(independent["mean_icc"])
    # The fold seeds differ: two different partitions, two different prediction sets.
    text = [r for r in runs if r["run"] == "features text"]
    first, second = (read_predictions(r["predictions"]) for r in text[:2])
    assert [r["prediction"] for r in first] != [r["prediction"] for r in second]


@pytest.mark.slow
def test_score_scores_a_judge_on_every_video_on_the_videos_with_gold(cv_job, synthetic_build, capsys, tmp_path):
    from mis_icc_metric import read_predictions, read_references, score_predictions

    run = cv_job / "cv" / "features__text__seed-0" / "predictions.jsonl"
    out = tmp_path / "score.json"
    args = ["score", "--predictions", str(run), "--references", str(synthetic_build), "--split", "test"]
    assert main([*args, "--bootstrap", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    test_gold = read_references(synthetic_build, split="test")
    records = read_predictions(run)
    outside = [r for r in records if (r["video_id"], r["dimension"]) not in test_gold]
    aside = result["left_aside"]
    assert aside["n_pairs"] == len(outside) > 0
    assert aside["n_videos"] == len({r["video_id"] for r in outside})
    assert f"left aside {len(outside):,} predicted pair(s) ({aside['n_videos']:,} video(s)" in printed
    # The score is the score of the pairs with gold alone.
    inside = {(r["video_id"], r["dimension"]): r["prediction"] for r in records if r not in outside}
    assert result["mean_icc"] == pytest.approx(
        score_predictions(inside, test_gold, resampling=ResamplingOptions(n_bootstrap=0))["mean_icc"]
    )
    # Against every split nothing is left aside.
    assert main([*args[:-2], "--split", "all", "--bootstrap", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["left_aside"]["n_pairs"] == 0


def test_a_cross_validation_run_is_labelled_by_its_folds_and_fold_seed():
    """In a report or a leaderboard, an out-of-fold run is never shown as one more configuration of the test split."""
    from eval_scripts.formats.results import options_label

    assert options_label({"decoding": {"cv_folds": 5, "fold_seed": 2, "grouping": "clinician"}}) == [
        "5-fold CV, fold seed 2"
    ]
    assert options_label({"decoding": {"alpha": 1.0}}) == []
