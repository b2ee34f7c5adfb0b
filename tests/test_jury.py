"""`mis-bench jury`: mean and median equal the hand computation; stacked weights equal scipy.optimize.nnls on the
fit split and never move when the scored split's gold changes (cross-fitted: a fold's weights never move when its
own gold changes); the jury is scored, submittable and named as a combination; bad juries are one line."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import nnls

from eval_scripts.baselines.baseline_run import load_feature_rows, run_baseline
from eval_scripts.cli import main
from eval_scripts.leaderboard.juries import combine_members, read_member
from mis_bench_dataset.dataset.loading import gold_references
from mis_bench_dataset.dimensions import DIMENSION_KEYS


@pytest.fixture(scope="module")
def member_runs(synthetic_build, tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Three baselines on the test and validation splits of the synthetic build: split -> name -> run folder."""
    out = tmp_path_factory.mktemp("members")
    runs: dict[str, dict[str, Path]] = {}
    for split in ("test", "validation"):
        for baseline, modality in (("features", "text"), ("features", "audio+text"), ("mean", "text")):
            run = run_baseline(
                synthetic_build, out / split, baseline=baseline, modality=modality, split=split, n_bootstrap=0
            )
            runs.setdefault(split, {})[f"{baseline}-{modality}"] = run.results_path.parent
    return runs


def _jury(args: list[str], capsys) -> dict:
    assert main(["jury", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", ["mean", "median"])
def test_mean_and_median_equal_the_hand_computation(member_runs, synthetic_build, tmp_path, capsys, method) -> None:
    members = list(member_runs["test"].values())
    record = _jury([*map(str, members), "--method", method, "--references", str(synthetic_build), "--bootstrap",
                    "50", "--out", str(tmp_path)], capsys)  # fmt: skip
    results = json.loads(Path(record["results"]).read_text())
    got = {(p["video_id"], p["dimension"]): p["prediction"] for p in results["predictions"]}
    each = [json.loads((m / "results.json").read_text())["predictions"] for m in members]
    by_pair = [{(p["video_id"], p["dimension"]): p["prediction"] for p in preds} for preds in each]
    combine = statistics.mean if method == "mean" else statistics.median
    assert got.keys() == by_pair[0].keys()
    for key, value in got.items():
        assert value == pytest.approx(combine([m[key] for m in by_pair]), abs=1e-12)
    assert results["system"]["model"].startswith(f"jury({method}): ") and results["system"]["backend"] == "jury"
    assert "a combination of its members" in results["system"]["description"]
    assert results["scores"]["meta"]["resampling"]["unit"] == "clinician"
    versus = record["versus_best_member"]
    assert versus["best_member"] in results["system"]["model"]
    assert versus["meta"]["resampling"]["unit"] == "clinician"


def test_stacked_weights_are_nnls_on_the_fit_split(member_runs, synthetic_build, tmp_path, capsys) -> None:
    names = list(member_runs["test"])
    record = _jury([*(str(member_runs["test"][n]) for n in names), "--method", "stacked", "--references",
                    str(synthetic_build), "--fit", *(str(member_runs["validation"][n]) for n in names),
                    "--bootstrap", "50", "--out", str(tmp_path)], capsys)  # fmt: skip
    gold = gold_references(load_feature_rows(synthetic_build, "validation"))
    fit = [json.loads((member_runs["validation"][n] / "results.json").read_text())["predictions"] for n in names]
    fit = [{(p["video_id"], p["dimension"]): p["prediction"] for p in preds} for preds in fit]
    for dim in DIMENSION_KEYS:
        keys = sorted(k for k in gold if k[1] == dim)
        a = np.array([[m[k] for m in fit] for k in keys])
        expected = nnls(a, np.array([gold[k] for k in keys]))[0]
        assert record["fit"]["weights"][dim] == pytest.approx(expected.tolist(), abs=1e-12)
    results = json.loads(Path(record["results"]).read_text())
    test = [json.loads((member_runs["test"][n] / "results.json").read_text())["predictions"] for n in names]
    test = [{(p["video_id"], p["dimension"]): p["prediction"] for p in preds} for preds in test]
    for p in results["predictions"][:20]:
        key = (p["video_id"], p["dimension"])
        w = record["fit"]["weights"][p["dimension"]]
        assert p["prediction"] == pytest.approx(sum(wi * m[key] for wi, m in zip(w, test, strict=True)))


def test_the_scored_gold_never_moves_the_weights(member_runs, synthetic_build) -> None:
    names = list(member_runs["test"])
    members = [read_member(member_runs["test"][n]) for n in names]
    fit = [read_member(member_runs["validation"][n]) for n in names]
    fit_gold = gold_references(load_feature_rows(synthetic_build, "validation"))
    gold = gold_references(load_feature_rows(synthetic_build, "test"))
    changed = {k: 6.0 - v for k, v in gold.items()}  # every scored gold value changed
    one = combine_members(members, "stacked", gold, fit=fit, fit_references=fit_gold)
    two = combine_members(members, "stacked", changed, fit=fit, fit_references=fit_gold)
    assert one.record["fit"]["weights"] == two.record["fit"]["weights"]
    assert one.predictions == two.predictions


def test_cross_fitted_weights_never_see_their_folds_gold(member_runs, synthetic_build) -> None:
    members = [read_member(member_runs["test"][name]) for name in ("features-text", "mean-text")]  # 4 test videos
    gold = gold_references(load_feature_rows(synthetic_build, "test"))
    one = combine_members(members, "stacked", gold, folds=2)
    fold_of = {}
    from eval_scripts.baselines.stacking import clinician_folds

    keys = sorted(gold)
    for key, fold in zip(keys, clinician_folds(keys, 2), strict=True):
        fold_of[key] = int(fold)
    changed = {k: (6.0 - v if fold_of[k] == 0 else v) for k, v in gold.items()}  # fold 0's gold changed
    two = combine_members(members, "stacked", changed, folds=2)
    assert one.record["fit"]["folds"][0]["weights"] == two.record["fit"]["folds"][0]["weights"]
    assert {k: v for k, v in one.predictions.items() if fold_of[k] == 0} == {
        k: v for k, v in two.predictions.items() if fold_of[k] == 0
    }
    assert one.record["fit"]["folds"][1]["weights"] != two.record["fit"]["folds"][1]["weights"]


def test_a_pair_a_member_lacks_is_left_unanswered_never_dropped(member_runs, tmp_path) -> None:
    first, second = (read_member(p) for p in list(member_runs["test"].values())[:2])
    lacking = next(iter(second.predictions))
    second.predictions[lacking] = None
    jury = combine_members([first, second], "mean", {})
    assert lacking in jury.predictions and jury.predictions[lacking] is None
    available = combine_members([first, second], "mean", {}, missing="available")
    assert available.predictions[lacking] == first.predictions[lacking]


def test_a_jury_is_submittable(member_runs, synthetic_build, tmp_path, capsys) -> None:
    members = [str(p) for p in member_runs["test"].values()]
    record = _jury([*members, "--method", "median", "--references", str(synthetic_build), "--bootstrap", "20",
                    "--out", str(tmp_path / "j")], capsys)  # fmt: skip
    assert main(["submit", record["results"], "--out", str(tmp_path / "sub")]) == 0


def test_bad_juries_are_one_line(member_runs, tmp_path, capsys) -> None:
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    test, validation = member_runs["test"], member_runs["validation"]
    release = generate_synthetic_release(tmp_path / "release", n_videos=20, seed=1)
    build_dataset(release.release_dir, tmp_path / "other-build", labels=release.ratings_csv, progress=False)
    other = run_baseline(tmp_path / "other-build", tmp_path / "other", baseline="mean", modality="text", n_bootstrap=0)
    cases = {
        "a jury needs at least two members, got 1": [str(test["mean-text"])],
        "runs on different splits in one jury (test and validation)": [
            str(test["mean-text"]),
            str(validation["features-text"]),
        ],
        "runs on different builds in one jury": [str(test["mean-text"]), str(other.results_path)],
    }
    for message, runs in cases.items():
        assert main(["jury", *runs, "--method", "mean", "--out", str(tmp_path / "j")]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line]
        assert len(lines) == 1 and lines[0].startswith(f"mis-bench jury: error: {message}")
