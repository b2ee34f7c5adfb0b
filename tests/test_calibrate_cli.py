"""`mis-bench calibrate` end to end on the synthetic build, and its summary's CIs against a loop.

The round trip: calibrate writes the calibrator, the calibrated test split (with lower / upper, read back by
`read_prediction_file` and by `mis-bench score` as ordinary predictions) and the summary; `--apply` on the
test split's predictions gives the same calibrated rows. The summary's CIs are checked against a Python loop over
the same clinician resamples that refits scikit-learn's IsotonicRegression with the counts as weights and computes
the agreement statistics on the repeated rows (on a build whose test split is over the reporting floor: 16 videos
of 10 clinicians). Refusals are one line each.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from _calibration_data import judge as _judge
from _calibration_data import make_build
from sklearn.isotonic import IsotonicRegression

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import (
    ResamplingOptions,
    agreement,
    calibration_summary,
    fit_calibrator,
    make_resampling,
    read_prediction_file,
    read_references,
    write_predictions,
)
from mis_icc_metric.bootstrap import percentile_ci
from mis_icc_metric.calibration_checks import SUMMARY_STATISTICS


@pytest.fixture(scope="module")
def wide_build(tmp_path_factory):
    from conftest import shared_once

    return shared_once(tmp_path_factory, "calibration-wide", lambda folder: make_build(folder, "wide")) / "build"


@pytest.fixture(scope="module")
def judged(synthetic_build, tmp_path_factory):
    references = read_references(synthetic_build, "all")
    predictions = _judge(references)
    path = tmp_path_factory.mktemp("judge") / "judge.csv"
    write_predictions(path, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()])
    return path, predictions


def test_calibrate_round_trip(synthetic_build, judged, tmp_path, capsys):
    path, predictions = judged
    out = tmp_path / "cal"
    argv = ["calibrate", "--predictions", str(path), "--references", str(synthetic_build), "--out", str(out)]
    assert main([*argv, "--coverage", "0.75", "--bootstrap", "200", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["synthetic"] is True
    assert "not for therapist supervision" in result["intended_use"]
    summary = result["evaluated"]["test"]
    assert summary["resampling"]["unit"] == "clinician" and summary["resampling"]["n_resamples"] == 200
    assert set(result["files"]) == {"calibrator", "test", "summary"}
    calibrated = read_prediction_file(out / "calibrated-test.csv")
    test_videos = {video for video, _ in read_references(synthetic_build, "test")}
    assert {r["video_id"] for r in calibrated.records} == test_videos
    for record in calibrated.records:
        assert 1 <= record["lower"] <= record["prediction"] <= record["upper"] <= 5
        assert record["raw_prediction"] == predictions[(record["video_id"], record["dimension"])]
    # An older reader's view: the file is ordinary long predictions that score reads.
    assert main(["score", "--predictions", str(out / "calibrated-test.csv"), "--references", str(synthetic_build)]) == 0
    assert re.search(r"^ARRR\s", capsys.readouterr().out, re.M)
    applied, test_only = tmp_path / "applied.csv", tmp_path / "test-judge.csv"
    write_predictions(
        test_only,
        [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items() if v in test_videos],
    )
    apply = ["calibrate", "--apply", str(out / "calibrator.json"), "--predictions", str(test_only)]
    assert main([*apply, "--out", str(applied)]) == 0
    assert "not for therapist supervision" in capsys.readouterr().out
    again = {(r["video_id"], r["dimension"]): r for r in read_prediction_file(applied).records}
    for record in calibrated.records:
        assert again[(record["video_id"], record["dimension"])] == record
    assert main([*argv, "--coverage", "0.75", "--bootstrap", "0"]) == 0  # its own files are replaced
    printed = capsys.readouterr().out
    assert "SYNTHETIC" in printed and "Coverage pooled over dimensions" in printed


def test_summary_cis_equal_a_loop_refitting_sklearn(wide_build):
    gold = {split: read_references(wide_build, split) for split in ("train", "validation", "test")}
    predictions = _judge(read_references(wide_build, "all"))
    part = {split: {k: v for k, v in predictions.items() if k in gold[split]} for split in gold}
    calibrator = fit_calibrator(part["train"], gold["train"], part["validation"], gold["validation"], coverage=0.75)
    n_boot, seed = 60, 3
    summary = calibration_summary(
        calibrator,
        (part["train"], gold["train"]),
        (part["test"], gold["test"]),
        resampling=ResamplingOptions(n_bootstrap=n_boot, seed=seed),
    )
    videos = sorted({v for v, _ in gold["train"]} | {v for v, _ in gold["test"]})
    plan = make_resampling(videos, n_boot, seed, "clinician")
    counts = plan.counts()
    column = {video: i for i, video in enumerate(videos)}
    for dim in DIMENSION_KEYS[:3]:
        fit_keys = sorted(k for k in gold["train"] if k[1] == dim)
        eval_keys = sorted(k for k in gold["test"] if k[1] == dim)
        x_fit = np.array([predictions[k] for k in fit_keys])
        y_fit = np.array([gold["train"][k] for k in fit_keys])
        x_eval = np.array([predictions[k] for k in eval_keys])
        y_eval = np.array([gold["test"][k] for k in eval_keys])
        loop = {side: {stat: [] for stat in SUMMARY_STATISTICS} for side in ("before", "after")}
        for row in counts:
            w_fit = row[[column[k[0]] for k in fit_keys]]
            w_eval = row[[column[k[0]] for k in eval_keys]].astype(int)
            if w_fit.sum() == 0 or w_eval.sum() < 2:  # the summary's rule: undefined on both sides
                for side in loop:
                    for stat in SUMMARY_STATISTICS:
                        loop[side][stat].append(np.nan)
                continue
            model = IsotonicRegression(out_of_bounds="clip").fit(x_fit, y_fit, sample_weight=w_fit)
            repeat = np.repeat(np.arange(len(eval_keys)), w_eval)
            sides = {"before": x_eval[repeat], "after": model.predict(x_eval)[repeat]}
            for side, scores in sides.items():
                stats = agreement(scores, y_eval[repeat])
                for stat in SUMMARY_STATISTICS:
                    loop[side][stat].append(stats[stat])
        entry = summary["dimensions"][dim]
        assert entry["n_clusters"] >= 5 and entry["ci_resamples"]["undefined"] == int(
            np.isnan(loop["after"]["mae"]).sum()
        )
        for side in ("before", "after"):
            for stat in SUMMARY_STATISTICS:
                expected = percentile_ci(np.array(loop[side][stat]), 0.95)
                np.testing.assert_allclose(entry[side][stat]["ci"], expected, rtol=0, atol=1e-9)
        assert entry["after"]["mae"]["value"] == pytest.approx(
            np.mean(np.abs(IsotonicRegression(out_of_bounds="clip").fit(x_fit, y_fit).predict(x_eval) - y_eval))
        )
        # The dimension's interval cell: its own evaluated pairs' coverage, width and error, by hand.
        records = {(r["video_id"], r["dimension"]): r for r in calibrator.apply(part["test"])}
        mine = [(records[k], gold["test"][k]) for k in eval_keys]
        assert entry["coverage"] == pytest.approx(np.mean([r["lower"] <= g <= r["upper"] for r, g in mine]))
        assert entry["mean_width"] == pytest.approx(np.mean([r["upper"] - r["lower"] for r, _ in mine]))
        assert entry["mae"] == pytest.approx(np.mean([abs(r["prediction"] - g) for r, g in mine]))


def test_refusals_are_one_line(synthetic_build, judged, tmp_path, capsys):
    path, _ = judged
    base = ["calibrate", "--predictions", str(path), "--references", str(synthetic_build), "--bootstrap", "0"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 1  # 0.9 on the 4 validation videos
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(r"calibrate: error: .* needs at least 9", err)
    assert main([*base, "--coverage", "0.75", "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    calibrator = json.loads((tmp_path / "b" / "calibrator.json").read_text())
    narrow = {**calibrator, "dimensions": ["empathy"]}
    (tmp_path / "narrow.json").write_text(json.dumps(narrow))
    other_scale = {**calibrator, "scale": [0, 10]}
    (tmp_path / "scale.json").write_text(json.dumps(other_scale))
    for name, pattern in (("narrow.json", "not fitted on"), ("scale.json", "scale")):
        code = main(
            ["calibrate", "--apply", str(tmp_path / name), "--predictions", str(path), "--out", str(tmp_path / "x")]
            + ["--allow-in-sample"]
        )
        err = capsys.readouterr().err.strip()
        assert code == 1 and len(err.splitlines()) == 1 and pattern in err
    assert main([*base, "--fit-split", "validation", "--out", str(tmp_path / "c")]) == 2
    assert "both 'validation'" in capsys.readouterr().err


@pytest.mark.slow
def test_real_data_coverage_on_held_out_clinicians_is_near_nominal(authors_dir, real_transcripts_csv, tmp_path):
    """The issue's done-when on the real text benchmark: the text ridge's out-of-fold predictions, calibrated on
    builds split by clinician (seeds 0, 1, 2: `real_calibration_summary`'s default), cover the held-out test
    clinicians' gold within 3 points of the nominal 90%, pooled over dimensions and splits."""
    from eval_scripts.jobs.calibration import real_calibration_summary
    from mis_bench_dataset.video_ids import parse_video_id

    shared = authors_dir.parents[1]
    assert real_transcripts_csv == shared / "data" / "mis-bench-transcripts.csv"
    result = real_calibration_summary(tmp_path, shared=shared, n_bootstrap=0)
    for seed in ("0", "1", "2"):
        build = tmp_path / f"real-clinician-{seed}"
        clinicians = {
            split: {parse_video_id(v).clinician for v, _ in read_references(build, split)}
            for split in ("train", "test")
        }
        assert not clinicians["train"] & clinicians["test"]  # held-out clinicians
        assert result["runs"][seed]["evaluated"]["test"]["pooled"]["n"] >= 700
    assert result["n_pairs"] >= 2100
    assert abs(result["pooled_coverage"] - result["nominal"]) <= 0.03


def test_what_is_not_used_is_said(synthetic_build, judged, tmp_path, capsys):
    _, predictions = judged
    extra = {**predictions, ("ZZ0001_T1_Bethany", "empathy"): 3.0}
    extra = {k: v for k, v in extra.items() if not (k[1] == "wau" and k[0] in _train_videos(synthetic_build))}
    path = tmp_path / "judge.csv"
    write_predictions(path, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in extra.items()])
    argv = ["calibrate", "--predictions", str(path), "--references", str(synthetic_build), "--bootstrap", "0"]
    assert main([*argv, "--coverage", "0.75", "--out", str(tmp_path / "out"), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("1 prediction(s) name videos of no split" in note for note in notes)
    assert any("['wau']" in note and "not calibrated" in note for note in notes)


def _train_videos(build) -> set[str]:
    return {video for video, _ in read_references(build, "train")}
