"""Agreement by subgroup and at the therapist level (`mis_icc_metric.groups`) against independent references:
pingouin's ICC on each group's subset and on the therapist means, statsmodels' cluster-robust Wald test, scipy's
one-way ANOVA, loops over resamples, hand computations; hypothesis properties (groups partition the items, a
permutation of the rows changes nothing). Synthetic scores, not real data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _independent import pingouin_icc
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS
from mis_icc_metric.bootstrap import bootstrap_indices
from mis_icc_metric.groups import equal_bias_test, grouped_moments


def clustered_scores(n_clinicians: int = 24, seed: int = 0, unparsed: float = 0.05):
    """(predictions, references) of clinicians with a few videos each at several time points and stimuli; the
    model is biased by time point and by clinician, so groups differ (synthetic)."""
    rng = np.random.default_rng(seed)
    predictions, references = {}, {}
    for c in range(n_clinicians):
        clinician_effect = rng.normal(0, 0.3)
        for t, time in enumerate(TIME_POINTS):
            if rng.random() < 0.2:
                continue
            for stimulus in rng.choice(STIMULI, size=int(rng.integers(1, 5)), replace=False):
                video = f"CL{1000 + c}_{time}_{stimulus}"
                for key in DIMENSION_KEYS:
                    gold = float(np.round(np.clip(rng.normal(3.5, 0.5), 1, 5), 1))
                    guess = gold + 0.2 * t + clinician_effect + rng.normal(0, 0.5)
                    references[(video, key)] = gold
                    parsed = rng.random() >= unparsed
                    predictions[(video, key)] = float(np.round(np.clip(guess, 1, 5), 1)) if parsed else None
    return predictions, references


def _arrays(n: int = 40, blocks: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.normal(3.5, 0.5, (n, blocks))
    pred = gold + rng.normal(0.2, 0.4, (n, blocks))
    ratings = np.stack([pred, gold], axis=-1)
    valid = rng.random((n, blocks)) > 0.1
    codes = rng.integers(0, 3, n)
    return ratings, valid, codes


def test_each_group_is_pingouins_icc_and_the_hand_bias_and_mae_of_its_subset():
    ratings, valid, codes = _arrays()
    point, _ = grouped_moments(ratings, valid, codes, 3)
    for g in range(3):
        for b in range(ratings.shape[1]):
            rows = valid[:, b] & (codes == g)
            pred, gold = ratings[rows, b, 0], ratings[rows, b, 1]
            assert point["icc3_1"][g, b] == pytest.approx(pingouin_icc(pred, gold), abs=1e-12)
            assert point["bias"][g, b] == pytest.approx(np.mean(pred - gold), abs=1e-12)
            assert point["mae"][g, b] == pytest.approx(np.mean(np.abs(pred - gold)), abs=1e-12)


def test_each_resample_of_each_group_is_the_statistic_of_the_resampled_rows():
    """The vectorised replicates equal a Python loop over the resamples: the rows each index row draws (a video
    drawn twice is two items), restricted to the group, scored by pingouin and by hand."""
    ratings, valid, codes = _arrays(n=30)
    indices = bootstrap_indices(30, 12, seed=3)
    _, boot = grouped_moments(ratings, valid, codes, 3, indices)
    for r in range(indices.shape[0]):
        drawn = indices[r].astype(int)
        for g in range(3):
            for b in range(ratings.shape[1]):
                rows = drawn[valid[drawn, b] & (codes[drawn] == g)]
                pred, gold = ratings[rows, b, 0], ratings[rows, b, 1]
                if len(rows) >= 2 and np.ptp(pred) > 0 and np.ptp(gold) > 0:
                    assert boot["icc3_1"][r, g, b] == pytest.approx(pingouin_icc(pred, gold), abs=1e-9)
                if len(rows):
                    assert boot["bias"][r, g, b] == pytest.approx(np.mean(pred - gold), abs=1e-12)
                    assert boot["mae"][r, g, b] == pytest.approx(np.mean(np.abs(pred - gold)), abs=1e-12)
                else:
                    assert math.isnan(boot["bias"][r, g, b])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_groups=st.integers(1, 6))
def test_groups_partition_the_items_and_a_permutation_of_rows_changes_nothing(seed, n_groups):
    ratings, valid, _ = _arrays(n=25, seed=seed)
    codes = np.random.default_rng(seed + 1).integers(0, n_groups, 25)
    point, _ = grouped_moments(ratings, valid, codes, n_groups)
    n = np.array([[np.sum(valid[:, b] & (codes == g)) for b in range(2)] for g in range(n_groups)])
    # The groups partition the items: the n-weighted mean of the group biases is the pooled bias.
    pooled = np.array([np.mean(ratings[valid[:, b], b, 0] - ratings[valid[:, b], b, 1]) for b in range(2)])
    weighted = np.nansum(np.where(n > 0, point["bias"] * n, 0.0), axis=0) / n.sum(axis=0)
    np.testing.assert_allclose(weighted, pooled, atol=1e-12)
    order = np.random.default_rng(seed + 2).permutation(25)
    permuted, _ = grouped_moments(ratings[order], valid[order], codes[order], n_groups)
    for key in ("icc3_1", "bias", "mae"):
        np.testing.assert_allclose(permuted[key], point[key], atol=1e-12, equal_nan=True)


def test_the_equal_bias_test_is_statsmodels_cluster_robust_wald_test():
    import statsmodels.api as sm

    rng = np.random.default_rng(1)
    n = 300
    groups, clusters = rng.integers(0, 4, n), rng.integers(0, 40, n)
    differences = rng.normal(size=n) + 0.3 * (groups == 1) + rng.normal(size=40)[clusters]
    ours = equal_bias_test(differences, groups, clusters)
    fit = sm.OLS(differences, np.eye(4)[groups]).fit(cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
    contrast = np.hstack([-np.ones((3, 1)), np.eye(3)])
    wald = fit.wald_test(contrast, use_f=True, scalar=True)
    assert ours["statistic"] == pytest.approx(float(wald.fvalue), rel=1e-9)
    assert ours["p_value"] == pytest.approx(float(wald.pvalue), rel=1e-9)
    assert ours["df"] == [int(wald.df_num), int(wald.df_denom)] == [3, 39]
    np.testing.assert_allclose(ours["means"], fit.params, atol=1e-12)


def test_the_classical_equal_bias_test_is_scipys_one_way_anova():
    from scipy import stats

    rng = np.random.default_rng(2)
    groups = rng.integers(0, 5, 80)
    differences = rng.normal(size=80) + 0.5 * (groups == 2)
    ours = equal_bias_test(differences, groups, None)
    reference = stats.f_oneway(*[differences[groups == g] for g in range(5)])
    assert ours["statistic"] == pytest.approx(reference.statistic, rel=1e-12)
    assert ours["p_value"] == pytest.approx(reference.pvalue, rel=1e-9)


def test_one_group_gets_no_test_and_says_why():
    result = equal_bias_test(np.arange(5.0), np.zeros(5, int), np.arange(5))
    assert result["p_value"] is None and "fewer than two groups" in result["note"]
