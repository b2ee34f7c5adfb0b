"""Resampling that counts clinicians (mis_icc_metric.resampling): the cluster bootstrap of every CI and paired
test equals an independent loop that draws clinicians and concatenates their videos; the video plan is the
earlier index matrix, bit for bit; the design effect is the ratio of the two loops' variances (synthetic data)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import DIMENSION_KEYS, STIMULI
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric import ResamplingOptions, make_resampling, paired_comparison, score_predictions
from mis_icc_metric.bootstrap import bootstrap_indices, resample_counts
from mis_icc_metric.resampling import design_effect

from _independent import anova_icc, clinician_rows, grid
from _metric_helpers import make_scores


def _grid(predictions, references):
    return grid(predictions, references, DIMENSION_KEYS)


def _loop_icc(pred, gold, rows, j):
    """ICC(3,1) of one resample's rows from the two-way ANOVA written out (`_independent.anova_icc`)."""
    keep = ~np.isnan(pred[rows, j])
    return anova_icc(pred[rows, j][keep], gold[rows, j][keep])


def test_clinician_cis_equal_an_independent_cluster_loop():
    predictions, references = make_scores(n=64, seed=3)
    result = score_predictions(
        predictions, references, resampling=ResamplingOptions(n_bootstrap=200, seed=7, resample="clinician")
    )
    videos, pred, gold = _grid(predictions, references)
    plan = make_resampling(videos, 200, 7, "clinician")
    assert plan.n_clusters == 8 and result["meta"]["resampling"]["unit"] == "clinician"
    all_rows = clinician_rows(videos, 200, 7)  # drawn by hand from numpy's generator, not from `plan`
    for j, key in enumerate(DIMENSION_KEYS[:4]):
        reps = [_loop_icc(pred, gold, rows, j) for rows in all_rows]
        assert result["dimensions"][key]["icc_ci"] == pytest.approx(list(np.percentile(reps, [2.5, 97.5])), abs=1e-10)
        assert result["dimensions"][key]["n_clusters"] == 8
        # the design effect: the clinician loop's variance over the video loop's, from the same seed and count
        video_rows = bootstrap_indices(len(videos), 200, 7)
        video_reps = [_loop_icc(pred, gold, rows, j) for rows in video_rows]
        expected = np.var(reps, ddof=1) / np.var(video_reps, ddof=1)
        assert result["dimensions"][key]["design_effect"] == pytest.approx(expected, rel=1e-9)


def test_video_plan_is_the_earlier_index_matrix():
    videos = [f"CL{i // 4}_T1_Luke{i}" for i in range(37)]
    plan = make_resampling(videos, 50, 3, "video")
    np.testing.assert_array_equal(plan.draws, bootstrap_indices(37, 50, 3))
    np.testing.assert_array_equal(plan.counts(), resample_counts(bootstrap_indices(37, 50, 3), 37))
    assert plan.n_clusters == 37


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=9), resamples=st.integers(1, 30), seed=st.integers(0, 99))
def test_cluster_counts_move_a_clinicians_videos_together(sizes, resamples, seed):
    videos = [f"CL{c:02d}_T{1 + i % 3}_{STIMULI[i]}" for c, size in enumerate(sizes) for i in range(size)]
    plan = make_resampling(videos, resamples, seed, "clinician")
    counts = plan.counts()
    assert counts.shape == (resamples, len(videos))
    clusters = plan.clusters
    for c in range(len(sizes)):
        members = counts[:, clusters == c]
        assert (members == members[:, :1]).all()  # one count for all a clinician's videos
    # the clinician counts of one resample sum to the number of clinicians drawn
    per_cluster = np.stack([counts[:, clusters == c][:, 0] for c in range(len(sizes))], axis=1)
    assert (per_cluster.sum(axis=1) == len(sizes)).all()
    # chunks give the same counts as the whole
    np.testing.assert_array_equal(plan.counts(slice(0, resamples // 2)), counts[: resamples // 2])


def test_paired_comparison_resamples_the_same_clinicians_for_both_systems():
    predictions_a, references = make_scores(n=48, seed=5, noise=0.4)
    predictions_b, _ = make_scores(n=48, seed=6, noise=0.9)
    # b's gold differs in make_scores; score both against a's references
    result = paired_comparison(
        predictions_a, predictions_b, references, resampling=ResamplingOptions(n_bootstrap=150, seed=2)
    )
    assert result["meta"]["resampling"]["unit"] == "clinician"
    videos, pred_a, gold = _grid(predictions_a, references)
    _, pred_b, _ = _grid(predictions_b, references)
    for j, key in enumerate(DIMENSION_KEYS[:3]):
        deltas = []
        for rows in clinician_rows(videos, 150, 2):
            both = ~np.isnan(pred_a[rows, j]) & ~np.isnan(pred_b[rows, j])
            sub = rows[both]
            deltas.append(anova_icc(pred_a[sub, j], gold[sub, j]) - anova_icc(pred_b[sub, j], gold[sub, j]))
        assert result["dimensions"][key]["delta_ci"] == pytest.approx(
            list(np.percentile(deltas, [2.5, 97.5])), abs=1e-10
        )
        assert result["dimensions"][key]["n_clusters"] == 6
        assert result["dimensions"][key]["design_effect"] > 0


def test_explicit_clusters_and_ids_without_a_clinician():
    predictions, references = make_scores(n=24, seed=1)
    renamed = {f"v{i}": v for i, v in enumerate(sorted({v for v, _ in references}))}
    back = {v: k for k, v in renamed.items()}
    preds = {(back[v], d): x for (v, d), x in predictions.items()}
    refs = {(back[v], d): x for (v, d), x in references.items()}
    with pytest.raises(DataError, match="names no clinician"):
        score_predictions(preds, refs, resampling=ResamplingOptions(n_bootstrap=20))
    clusters = {alias: video.split("_")[0] for alias, video in renamed.items()}
    given_clusters = score_predictions(
        preds, refs, resampling=ResamplingOptions(n_bootstrap=20, seed=4, clusters=clusters)
    )
    from_ids = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=20, seed=4))
    for key in DIMENSION_KEYS:
        # the same clinicians drawn; the videos' order differs (v10 < v2), so the sums differ in the last bit
        assert given_clusters["dimensions"][key]["icc_ci"] == pytest.approx(
            from_ids["dimensions"][key]["icc_ci"], abs=1e-12
        )
    # by video: no clinician needed, the design effect is simply absent
    by_video = score_predictions(preds, refs, resampling=ResamplingOptions(n_bootstrap=20, resample="video"))
    assert by_video["dimensions"]["empathy"]["design_effect"] is None
    assert by_video["dimensions"]["empathy"]["n_clusters"] is None
    with pytest.raises(UsageError, match="unknown resampling unit"):
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=20, resample="stimulus"))


def test_design_effect_ignores_undefined_replicates():
    clustered = np.array([[1.0, np.nan], [3.0, 2.0], [np.nan, 4.0], [5.0, np.nan]])
    independent = np.array([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0], [np.nan, 1.0]])
    effect = design_effect(clustered, independent)
    assert effect[0] == pytest.approx(np.var([1.0, 3.0, 5.0], ddof=1) / np.var([1.0, 2.0, 3.0], ddof=1))
    assert np.isnan(effect[1])  # no spread under video resampling: undefined, not infinite


def test_evaluate_module_takes_clusters():
    import evaluate

    import mis_icc_metric

    metric = evaluate.load(mis_icc_metric.metric_path())
    predictions, references = make_scores(n=24, seed=9, unparsed=0.0)
    keys = sorted(references)
    aliases = {v: f"id{i}" for i, v in enumerate(sorted({v for v, _ in keys}))}
    out = metric.compute(
        predictions=[predictions[k] for k in keys],
        references=[references[k] for k in keys],
        video_ids=[aliases[v] for v, _ in keys],
        dimensions=[d for _, d in keys],
        clusters=[v.split("_")[0] for v, _ in keys],
        n_bootstrap=30,
        seed=1,
    )
    direct = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=30, seed=1))
    assert out["meta"]["resampling"]["unit"] == "clinician"
    assert out["dimensions"]["abc"]["icc_ci"] == pytest.approx(direct["dimensions"]["abc"]["icc_ci"], abs=1e-12)
    with pytest.raises(DataError, match="a video belongs to one clinician"):
        metric.compute(
            predictions=[3.0, 3.5],
            references=[3.0, 3.2],
            video_ids=["a", "a"],
            dimensions=["empathy", "abc"],
            clusters=["x", "y"],
            n_bootstrap=5,
        )


def test_the_resample_limit_is_inclusive():
    """MAX_BOOTSTRAP resamples are allowed (the documented limit), one more is a usage error naming it."""
    from mis_bench_dataset.toolkit.defaults import MAX_BOOTSTRAP
    from mis_bench_dataset.toolkit.errors import UsageError
    from mis_icc_metric.bootstrap import bootstrap_indices

    assert bootstrap_indices(1, MAX_BOOTSTRAP, 0).shape == (MAX_BOOTSTRAP, 1)
    with pytest.raises(UsageError, match=f"{MAX_BOOTSTRAP:,}"):
        bootstrap_indices(1, MAX_BOOTSTRAP + 1, 0)
