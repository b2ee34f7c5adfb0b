"""CPU baselines: summaries computed by hand, CV equal to scikit-learn's GridSearchCV,
no test-label leakage, modality switches, and outputs on the same path as `mis-bench run`."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from eval_scripts import BaselineBatch, run_baseline
from eval_scripts.baselines import FeatureRidgeBaseline, MeanBaseline, summarise
from eval_scripts.baselines.baseline_run import load_feature_rows
from eval_scripts.baselines.summaries import audio_summary, text_summary, video_summary
from eval_scripts.formats.submission import find_problems
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import (
    ResamplingOptions,
    predictions_to_mapping,
    read_predictions,
    read_references,
    score_predictions,
)

# ----------------------------------------------------------------------------- summaries


def test_text_summary_by_hand():
    row = {"transcript": "Um, we we can do this. You feel stuck? I hope so.", "duration_seconds": 4.0}
    words = ["um", "we", "we", "can", "do", "this", "you", "feel", "stuck", "i", "hope", "so"]
    s = text_summary(row)
    assert s["text_log_words"] == pytest.approx(np.log1p(12))
    assert s["text_speech_rate_wps"] == pytest.approx(12 / 4.0)
    assert s["text_words_per_sentence"] == pytest.approx(12 / 3)
    assert s["text_questions_per_sentence"] == pytest.approx(1 / 3)
    assert s["text_filler_share"] == pytest.approx(1 / 12)
    assert s["text_repeat_share"] == pytest.approx(1 / 12)
    assert s["text_we_share"] == pytest.approx(2 / 12)
    assert s["text_type_token_ratio"] == pytest.approx(len(set(words)) / 12)
    assert s["text_mean_word_length"] == pytest.approx(np.mean([len(w) for w in words]))
    assert s["text_hope_share"] == pytest.approx(2 / 12)  # "can", "hope"


def test_text_summary_without_duration_or_words():
    s = text_summary({"transcript": "", "duration_seconds": None})
    assert s["text_speech_rate_wps"] == 0.0 and s["text_has_duration"] == 0.0 and s["text_log_words"] == 0.0
    assert text_summary({"transcript": "a b", "duration_seconds": float("nan")})["text_has_duration"] == 0.0


def _openface(landmarks: np.ndarray, aus: np.ndarray) -> np.ndarray:
    n = len(landmarks)
    return np.concatenate([aus, landmarks.reshape(n, -1), np.zeros((n, 2)), np.ones((n, 2))], axis=1).astype(np.float32)


def test_video_summary_motion_is_scale_free_and_zero_when_still():
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 1, (98, 2))
    aus = rng.uniform(0, 1, (5, 8))
    still = video_summary({"openface": _openface(np.repeat(base[None], 5, axis=0), aus), "has_openface": True})
    assert still[0] == 1.0
    np.testing.assert_allclose(still[1:9], aus.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(still[29:33], 0.0, atol=1e-9)  # landmark and head speed
    moving = np.repeat(base[None], 5, axis=0) + np.arange(5)[:, None, None] * np.array([0.01, 0.0])
    small = video_summary({"openface": _openface(moving, aus), "has_openface": True})
    large = video_summary({"openface": _openface(moving * 640, aus), "has_openface": True})  # pixels
    np.testing.assert_allclose(small[29:33], large[29:33], rtol=1e-4, atol=1e-6)
    assert small[31] > 0  # head moves


def test_audio_pause_share_and_missing_modalities():
    mel = np.full((10, 93), -20.0, dtype=np.float32)
    mel[[2, 3, 7], :80] = -80.0  # three silent frames
    row = {
        "librosa": mel,
        "has_librosa": True,
        "prosody": np.zeros((0, 15)),
        "has_prosody": False,
        "wav2vec": np.zeros((0, 768)),
        "has_wav2vec": False,
    }
    summary = audio_summary(row)
    assert list(summary[:3]) == [1.0, 0.0, 0.0]
    assert summary[3 + 186] == pytest.approx(0.3)  # pause share
    assert not summary[3 + 186 + 3 :].any()  # absent prosody and wav2vec are zeros
    assert video_summary({"openface": np.zeros((0, 208)), "has_openface": False}).sum() == 0


def test_groups_change_the_width_and_bad_group_is_refused(train_rows):
    widths = {
        groups: summarise(train_rows[:2], groups).shape[1]
        for groups in [("text",), ("text", "audio"), ("text", "video")]
    }
    assert widths[("text",)] == 14 and widths[("text", "audio")] > widths[("text", "video")] > 14
    with pytest.raises(ValueError, match="unknown modality group"):
        summarise(train_rows[:1], ("smell",))
    with pytest.raises(ValueError, match="unknown modality setting"):
        FeatureRidgeBaseline("smell+text")


# ----------------------------------------------------------------------------- models


def test_cross_validation_equals_gridsearchcv_grouped_by_clinician(train_rows):
    from sklearn.model_selection import GridSearchCV, GroupKFold

    model = FeatureRidgeBaseline("video+text", alphas=(0.1, 10.0, 1000.0)).fit(train_rows)
    frame = model._frame(train_rows)
    clinicians = [str(r["clinician"]) for r in train_rows]
    for key in DIMENSION_KEYS:
        labels = np.array([float(str(r[key])) for r in train_rows])
        search = GridSearchCV(
            model._pipeline(frame.shape[1] - 1),
            {"ridge__alpha": [0.1, 10.0, 1000.0]},
            cv=GroupKFold(n_splits=min(5, len(set(clinicians)))),
            scoring="neg_mean_squared_error",
        )
        search.fit(frame, labels, groups=clinicians)
        assert model.chosen_alpha[key] == search.best_params_["ridge__alpha"], key
        assert model.cv_mse[key] == pytest.approx(-search.best_score_, rel=1e-9), key


def test_features_learn_the_planted_signal_in_grouped_cv(default_sample_cache):
    """On the default sample's 796 train videos the clinician-grouped CV error is well under the
    label variance (the mean predictor's error), in every dimension; the signal is weak by design."""
    from mis_bench_dataset import default_sample

    rows = load_feature_rows(default_sample(default_sample_cache).build_dir, "train")
    model = FeatureRidgeBaseline("audio+video+text").fit(rows)
    for key in DIMENSION_KEYS:
        variance = np.var([float(r[key]) for r in rows])
        assert model.cv_mse[key] < 0.95 * variance, key


@pytest.mark.parametrize("shape", [(30, 5), (12, 400)])
def test_ridge_path_equals_sklearn_ridge(shape):
    from sklearn.linear_model import Ridge

    from eval_scripts.baselines.models import ridge_path_predictions

    rng = np.random.default_rng(shape[1])
    x, x_test = rng.normal(2.0, 3.0, shape), rng.normal(2.0, 3.0, (7, shape[1]))
    y = rng.normal(3.5, 0.5, (shape[0], 3))
    alphas = [1e-3, 0.5, 10.0, 1e4]
    path = ridge_path_predictions(x, y, x_test, alphas)
    for a, alpha in enumerate(alphas):
        np.testing.assert_allclose(path[a], Ridge(alpha=alpha).fit(x, y).predict(x_test), rtol=1e-7, atol=1e-9)


def test_ridge_coefficients_equal_sklearn_ridge_with_one_alpha_per_target():
    from sklearn.linear_model import Ridge

    from eval_scripts.baselines.models import ridge_coefficients

    rng = np.random.default_rng(3)
    x, x_test = rng.normal(2.0, 3.0, (25, 60)), rng.normal(2.0, 3.0, (6, 60))
    y = rng.normal(3.5, 0.5, (25, 3))
    alphas = [10.0, 0.1, 10.0]
    for labels in (y, np.where(np.arange(25)[:, None] % 4 == np.array([[9, 1, 9]]), np.nan, y)):
        weights, intercepts = ridge_coefficients(x, labels, alphas)
        for j, alpha in enumerate(alphas):
            keep = ~np.isnan(labels[:, j])
            reference = Ridge(alpha=alpha).fit(x[keep], labels[keep, j])
            np.testing.assert_allclose(weights[:, j], reference.coef_, rtol=1e-7, atol=1e-10)
            np.testing.assert_allclose(x_test @ weights[:, j] + intercepts[j], reference.predict(x_test), rtol=1e-8)


def test_cached_transcript_terms_are_tfidf_word_1_2_grams(train_rows):
    from sklearn.feature_extraction.text import TfidfVectorizer

    from eval_scripts.baselines.models import transcript_terms

    analyse = TfidfVectorizer(ngram_range=(1, 2)).build_analyzer()
    for text in [str(r["transcript"]) for r in train_rows[:10]] + ["", "Um, we -- can't?! WE can", "é à 12 x"]:
        assert list(transcript_terms(text)) == analyse(text)


def test_summary_cache_changes_nothing(train_rows, test_rows):
    cache: dict = {}
    for groups in [("text",), ("audio", "text"), ("video", "text"), ("audio", "video", "text")]:
        for rows in (train_rows, test_rows):
            np.testing.assert_array_equal(summarise(rows, groups, cache), summarise(rows, groups))
    assert {group for group, _ in cache} == {"text", "audio", "video"}
    shared = FeatureRidgeBaseline("video+text", summary_cache=cache).fit(train_rows).predict(test_rows)
    alone = FeatureRidgeBaseline("video+text").fit(train_rows).predict(test_rows)
    for key in DIMENSION_KEYS:
        np.testing.assert_array_equal(shared[key], alone[key])


def test_feature_rows_equal_row_by_row_datasets_access(synthetic_build):
    from datasets import load_dataset

    reference = list(load_dataset(str(synthetic_build), "features", split="test").with_format("numpy"))
    rows = load_feature_rows(synthetic_build, "test")
    assert len(rows) == len(reference) > 0
    for row, expected in zip(rows, reference, strict=True):
        assert row.keys() == expected.keys()
        for name, value in expected.items():
            got = np.asarray(row[name])
            assert got.dtype == np.asarray(value).dtype and got.shape == np.shape(value), name
            np.testing.assert_array_equal(got, value)


def test_unlabelled_rows_are_left_out_per_dimension():
    from sklearn.linear_model import Ridge

    from eval_scripts.baselines.models import ridge_path_predictions

    rng = np.random.default_rng(7)
    x, x_test = rng.normal(size=(20, 6)), rng.normal(size=(4, 6))
    y = rng.normal(3.5, 0.5, (20, 2))
    y[[1, 5, 9], 1] = np.nan
    path = ridge_path_predictions(x, y, x_test, [0.3, 30.0])
    labelled = ~np.isnan(y[:, 1])
    for a, alpha in enumerate([0.3, 30.0]):
        np.testing.assert_allclose(path[a, :, 0], Ridge(alpha=alpha).fit(x, y[:, 0]).predict(x_test), rtol=1e-8)
        np.testing.assert_allclose(
            path[a, :, 1], Ridge(alpha=alpha).fit(x[labelled], y[labelled, 1]).predict(x_test), rtol=1e-8
        )


def test_mean_baseline_predicts_train_means(train_rows, test_rows):
    model = MeanBaseline().fit(train_rows)
    predicted = model.predict(test_rows)
    for key in DIMENSION_KEYS:
        expected = sum(float(str(r[key])) for r in train_rows) / len(train_rows)
        assert model.means[key] == pytest.approx(expected, rel=1e-12)
        assert set(predicted[key]) == {model.means[key]}


def test_no_leak_from_evaluated_labels(train_rows, test_rows):
    model = FeatureRidgeBaseline("text").fit(train_rows)
    before = model.predict(test_rows)
    shuffled = copy.deepcopy(test_rows)
    for row in shuffled:
        for key in DIMENSION_KEYS:
            row[key] = 1.0
    after = model.predict(shuffled)
    for key in DIMENSION_KEYS:
        np.testing.assert_array_equal(before[key], after[key])


def test_modality_switch_text_ignores_video(train_rows, test_rows):
    text = FeatureRidgeBaseline("text").fit(train_rows)
    video = FeatureRidgeBaseline("video+text").fit(train_rows)
    altered = copy.deepcopy(test_rows)
    for row in altered:
        row["openface"] = np.asarray(row["openface"]) * 3.0 + 1.0
    for key in DIMENSION_KEYS:
        np.testing.assert_array_equal(text.predict(test_rows)[key], text.predict(altered)[key])
    assert any(not np.allclose(video.predict(test_rows)[k], video.predict(altered)[k]) for k in DIMENSION_KEYS)


def test_predictions_are_on_the_scale(train_rows, test_rows):
    predicted = FeatureRidgeBaseline("audio+text", alphas=(1e-6,)).fit(train_rows).predict(test_rows)
    for values in predicted.values():
        assert values.min() >= 1.0 and values.max() <= 5.0


# ----------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("baseline", ["mean", "features"])
def test_run_writes_what_mis_bench_run_writes(synthetic_build, tmp_path, baseline, train_rows, test_rows):
    run = run_baseline(
        synthetic_build,
        tmp_path,
        baseline=baseline,
        modality="text",
        resampling=ResamplingOptions(n_bootstrap=50),
        batch=BaselineBatch(train_rows=train_rows, eval_rows=test_rows),
    )
    test_ids = sorted(str(r["video_id"]) for r in test_rows)
    assert find_problems(run.results, video_ids=test_ids, split="test") == []
    assert run.results["setting"] == {
        "modality": "text",
        "prompt_style": "none",
        "few_shot_k": 0,
        "input_source": "features",
    }
    assert run.results["dataset"]["synthetic"] is True
    # Scoring the written files through the public readers gives the stored scores.
    predictions = predictions_to_mapping(read_predictions(run.predictions_path))
    references = read_references(synthetic_build, split="test")
    rescored = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=50, seed=0))
    assert rescored["overall"]["icc"] == pytest.approx(run.results["scores"]["overall"]["icc"], nan_ok=True)
    if baseline == "mean":
        for key in DIMENSION_KEYS:
            assert rescored["dimensions"][key]["icc"] == pytest.approx(0.0, abs=1e-12)


def test_refuses_to_evaluate_on_train(synthetic_build, tmp_path):
    with pytest.raises(ValueError, match="fitted on the train split"):
        run_baseline(synthetic_build, tmp_path, split="train")


def test_summaries_on_the_real_public_subset(subset10_dir, tmp_path_factory):
    """Real-size arrays (thousands of frames, pixel landmarks, missing wav2vec) give finite summaries."""
    from mis_bench_dataset import build_dataset

    out = tmp_path_factory.mktemp("real") / "mis-bench"
    build_dataset(subset10_dir, out, progress=False)
    rows = [row for split in ("train", "validation", "test") for row in load_feature_rows(out, split)]
    matrix = summarise(rows, ("audio", "video", "text"))
    assert matrix.shape[0] == 10 and np.isfinite(matrix).all()
    has_wav2vec = np.array([bool(r["has_wav2vec"]) for r in rows])
    assert 0 < has_wav2vec.sum() < 10  # the release ships only some wav2vec files
    wav2vec_block = matrix[:, 14 + 3 + 186 + 3 + 15 : 14 + 3 + 186 + 3 + 15 + 1536]
    assert not wav2vec_block[~has_wav2vec].any() and wav2vec_block[has_wav2vec].any()
    landmark_speed = matrix[:, -6]  # video block: ..., speeds (4), confidence (2)
    assert (landmark_speed > 0).all() and (landmark_speed < 1).all()  # face-size units, not pixels
