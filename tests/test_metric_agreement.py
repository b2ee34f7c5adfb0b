"""The agreement statistics against their reference implementations: every Shrout-Fleiss form against
pingouin.intraclass_corr (value, F, df, p, CI) and the published Shrout & Fleiss (1979) Table 4,
Krippendorff's alpha against the `krippendorff` package, r and rho against scipy, the Bland-Altman
limits by hand; bootstrap replicates against a loop over resamples; degenerate cases; invariances."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pingouin
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mis_bench_dataset.icc import ICC_FORMS
from mis_icc_metric import (
    ResamplingOptions,
    agreement,
    icc3_1,
    icc_forms,
    icc_table,
    krippendorff_alpha,
    score_predictions,
)
from mis_icc_metric.agreement_statistics import STATISTIC_KEYS, agreement_blocks, agreement_replicates
from mis_icc_metric.bootstrap import bootstrap_indices

from _independent import percentile_interval, reference_agreement
from _metric_helpers import make_scores

SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float
)
PINGOUIN_TYPE = dict(
    zip(ICC_FORMS, ["ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)"], strict=True)
)


def pingouin_table(matrix: np.ndarray) -> dict[str, dict]:
    n, k = matrix.shape
    long = pd.DataFrame({"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "y": matrix.ravel()})
    old = pingouin.options.copy()
    pingouin.options["round.column.CI95"] = None
    try:
        # a zero denominator (a matrix hypothesis can draw) is pingouin's inf/NaN, which `_close` reads as undefined
        with np.errstate(divide="ignore", invalid="ignore"):
            table = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="y").set_index("Type")
    finally:
        pingouin.options.clear()
        pingouin.options.update(old)
    return {key: table.loc[name].to_dict() for key, name in PINGOUIN_TYPE.items()}


def same(ours: float, reference: float, tol: float = 1e-10) -> bool:
    """Equal to `tol`; our NaN (undefined) stands for pingouin's NaN or +-inf (a zero denominator), or for its
    +-1e12 and beyond: a denominator zero but for rounding (e.g. ICC(2,k) of [[1, 1], [1, 2], [2, 1]], where
    MSR + (MSC - MSE) / n is exactly 0 and pingouin divides by rounding error)."""
    if math.isnan(ours):
        return not math.isfinite(reference) or abs(reference) > 1e12
    return abs(ours - reference) <= tol * max(1.0, abs(reference))


def datasets() -> list[np.ndarray]:
    """Many matrices: continuous, on the one-decimal grid (ties), integer ratings (heavy ties),
    negative ICC (raters disagreeing systematically), offsets between raters, k = 2 to 5."""
    rng = np.random.default_rng(2024)
    out = [SHROUT_FLEISS]
    for index in range(24):
        n, k = int(rng.integers(3, 50)), int(rng.integers(2, 6))
        true = rng.normal(3, 1, (n, 1))
        matrix = true + rng.normal(0, rng.uniform(0.2, 2.0), (n, k)) + rng.normal(0, 0.7, (1, k))
        if index % 3 == 1:
            matrix = np.round(np.clip(matrix, 1, 5), 1)
        elif index % 3 == 2:
            matrix = np.round(np.clip(matrix, 1, 5))
        out.append(matrix)
    anti = rng.normal(3, 1, 20)
    out.append(np.stack([anti, 6 - anti + rng.normal(0, 0.3, 20)], axis=1))  # negative ICC
    out.append(np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0], [2.0, 2.5]]))  # ICC near -1, ties
    return out


@pytest.mark.parametrize("index", range(len(datasets())))
def test_every_form_equals_pingouin(index):
    matrix = datasets()[index]
    if np.ptp(matrix, axis=0).max() == 0:
        pytest.skip("every column constant")
    ours = icc_table(matrix)
    expected = pingouin_table(matrix)
    forms = icc_forms(matrix)
    for key in ICC_FORMS:
        row, ref = ours[key], expected[key]
        assert forms[key] == row.icc or (math.isnan(forms[key]) and math.isnan(row.icc))
        if math.isnan(row.icc) and key == "icc2_k" and ref["ICC"] > 1:
            # Documented: a negative denominator (strongly negative ICC), where pingouin prints a value above 1.
            assert icc_forms(matrix)["icc3_1"] < -0.5
            continue
        assert same(row.icc, ref["ICC"]), (key, row.icc, ref["ICC"])
        assert same(row.f, ref["F"]), key
        assert (row.df1, row.df2) == (ref["df1"], ref["df2"])
        assert same(row.pval, ref["pval"]), key
        for ours_bound, ref_bound in zip(row.ci, ref["CI95"], strict=True):
            assert same(ours_bound, ref_bound, 1e-9), (key, row.ci, ref["CI95"])
    negative = datasets()[-2]
    assert icc_forms(negative)["icc3_1"] < -0.5 and icc_forms(negative)["icc2_1"] < 0


def test_shrout_fleiss_table4_as_published_and_as_psych_prints_it():
    # Shrout & Fleiss (1979) Table 4, the example R psych::ICC reproduces: ICC1 .17, ICC2 .29, ICC3 .71,
    # ICC1k .44, ICC2k .62, ICC3k .91.
    published = {"icc1_1": 0.17, "icc2_1": 0.29, "icc3_1": 0.71, "icc1_k": 0.44, "icc2_k": 0.62, "icc3_k": 0.91}
    forms = icc_forms(SHROUT_FLEISS)
    assert {key: round(value, 2) for key, value in forms.items()} == published


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(3, 25), st.integers(2, 4)),
        elements=st.floats(1.0, 5.0, allow_nan=False).map(lambda v: round(v, 1)),
    )
)
@example(np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 1.0]]))  # ICC(2,k)'s denominator exactly 0 (hypothesis found them)
@example(np.array([[1.0, 1.0], [3.0, 1.0], [1.0, 3.0]]))  # the same, rounding to +2e-17: was -1.2e16, now NaN
def test_property_forms_match_pingouin_on_grid_scores(matrix):
    assume(np.ptp(matrix, axis=0).max() > 0)
    forms = icc_forms(matrix)
    expected = pingouin_table(matrix)
    for key in ICC_FORMS:
        if key == "icc3_1" and (np.ptp(matrix, axis=0) > 0).sum() == 1:
            assert forms[key] == 0.0  # one rater varies: exactly 0 (pingouin gets there up to rounding)
            continue
        if math.isnan(forms[key]) and expected[key]["ICC"] > 1:
            assert key == "icc2_k"  # the documented negative-denominator case
            continue
        assert same(forms[key], expected[key]["ICC"], 1e-9), key


def test_a_denominator_zero_but_for_rounding_is_undefined_not_huge():
    """ICC(2,k) = (MSR - MSE) / (MSR + (MSC - MSE) / n) with the denominator exactly 0 by hand (MSR 2/3, MSC 0,
    MSE 2: 2/3 + (0 - 2) / 3 = 0): undefined, where floating point would divide by about 2e-17."""
    matrix = np.array([[1.0, 1.0], [3.0, 1.0], [1.0, 3.0]])
    forms = icc_forms(matrix)
    assert math.isnan(forms["icc2_k"])
    assert all(math.isfinite(forms[key]) and abs(forms[key]) <= 1 for key in ("icc1_1", "icc2_1", "icc3_1"))


def test_batched_forms_equal_one_by_one():
    batch = np.random.default_rng(1).normal(size=(3, 4, 20, 3))
    forms = icc_forms(batch)
    for key in ICC_FORMS:
        assert forms[key].shape == (3, 4)
        assert forms[key][2, 1] == pytest.approx(icc_forms(batch[2, 1])[key], abs=1e-14)


# --- Krippendorff's alpha, correlations, limits of agreement -----------------------------------------


@pytest.mark.parametrize("index", range(len(datasets())))
def test_krippendorff_alpha_equals_the_package(index):
    import krippendorff

    matrix = datasets()[index]
    expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    assert krippendorff_alpha(matrix) == pytest.approx(expected, abs=1e-10)


def test_alpha_of_identical_values_is_undefined_like_the_package_refuses_it():
    import krippendorff

    with pytest.raises(ValueError, match="more than one value"):
        krippendorff.alpha(reliability_data=np.full((2, 5), 3.0), level_of_measurement="interval")
    assert math.isnan(krippendorff_alpha(np.full((5, 2), 3.0)))


@pytest.mark.parametrize("seed", range(8))
def test_every_statistic_equals_its_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 80))
    gold = np.round(np.clip(rng.normal(3.4, 0.6, n), 1, 5), 1)
    pred = gold + rng.normal(rng.uniform(-1, 1), rng.uniform(0.1, 1.2), n)
    if seed % 2:
        pred = np.round(np.clip(pred, 1, 5) * 2) / 2  # half points: many ties, some integers
    ours = agreement(pred, gold)
    expected = reference_agreement(pred, gold)
    assert set(ours) == set(STATISTIC_KEYS) == set(expected)
    for key in STATISTIC_KEYS:
        assert same(ours[key], expected[key], 1e-10), (key, ours[key], expected[key])


def test_limits_of_agreement_by_hand():
    # Differences model - expert: 1, -1, 2, 0. Mean 0.5; deviations 0.5, -1.5, 1.5, -0.5; SS 5; sd sqrt(5/3).
    gold = [2.0, 3.0, 1.0, 4.0]
    pred = [3.0, 2.0, 3.0, 4.0]
    stats = agreement(pred, gold)
    sd = math.sqrt(5 / 3)
    assert stats["bias"] == pytest.approx(0.5, abs=1e-15)
    assert stats["sd_diff"] == pytest.approx(sd, abs=1e-15)
    assert stats["loa_low"] == pytest.approx(0.5 - 1.96 * sd, abs=1e-14)
    assert stats["loa_high"] == pytest.approx(0.5 + 1.96 * sd, abs=1e-14)
    assert stats["mae"] == 1.0 and stats["mse"] == 1.5
    assert stats["integer_share"] == 1.0 and stats["n_distinct"] == 3.0
    assert stats["sd_ratio"] == pytest.approx(math.sqrt((2 / 3) / (5 / 3)), abs=1e-15)  # var(pred) 2/3, var(gold) 5/3


# --- degenerate cases ---------------------------------------------------------------------------------


def test_constant_model():
    gold = np.array([1.2, 4.5, 2.2, 3.3, 2.9])
    pred = np.full(5, 3.0)
    stats = agreement(pred, gold)
    assert stats["icc3_1"] == 0.0 and stats["icc3_k"] == 0.0
    expected = reference_agreement(pred, gold)
    for key in ("icc1_1", "icc2_1", "icc1_k", "icc2_k", "krippendorff_alpha"):
        assert stats[key] == pytest.approx(expected[key], abs=1e-12), key
    assert math.isnan(stats["pearson"]) and math.isnan(stats["spearman"])
    assert stats["sd_ratio"] == 0.0 and stats["n_distinct"] == 1.0 and stats["integer_share"] == 1.0
    assert stats["bias"] == pytest.approx(3.0 - gold.mean(), abs=1e-15)
    everything_constant = agreement(np.full(4, 3.0), np.full(4, 3.0))
    for key in (*ICC_FORMS, "krippendorff_alpha", "pearson", "spearman", "sd_ratio"):
        assert math.isnan(everything_constant[key]), key
    assert everything_constant["bias"] == 0.0 and everything_constant["sd_diff"] == 0.0


def test_ties_everywhere_spearman_uses_mid_ranks():
    from scipy import stats

    gold = np.array([1, 1, 2, 2, 3, 3, 3, 4], float)
    pred = np.array([2, 1, 2, 2, 3, 4, 3, 4], float)
    assert agreement(pred, gold)["spearman"] == pytest.approx(stats.spearmanr(pred, gold)[0], abs=1e-14)


def test_one_undefined_dimension_leaves_the_others_alone():
    predictions, references = make_scores(n=40, seed=3, unparsed=0.0)
    keys = sorted(predictions)
    empathy = [key for key in keys if key[1] == "empathy"]
    for key in empathy[2:]:
        predictions[key] = None  # two usable items: below the three the ICC needs
    scores = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=200, seed=0))
    block = scores["dimensions"]["empathy"]["agreement"]
    for key in STATISTIC_KEYS:
        needs_variance = key not in ("mae", "mse", "bias", "integer_share", "n_distinct")
        if needs_variance:
            assert math.isnan(block[key]["value"]) and block[key]["ci"] is None, key
        else:  # defined on two videos, but a CI from two videos is withheld (reporting_floor)
            assert not math.isnan(block[key]["value"]) and block[key]["ci"] is None, key
            assert "2 video(s)" in block[key]["withheld"], key
    other = scores["dimensions"]["wau"]["agreement"]
    assert all(not math.isnan(other[key]["value"]) for key in STATISTIC_KEYS)


# --- invariances ----------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, st.integers(4, 30), elements=st.floats(1.0, 5.0).map(lambda v: round(v, 1))),
    arrays(np.float64, 30, elements=st.floats(-1.0, 1.0)),
    st.floats(0.1, 2.0),
)
def test_property_a_constant_shift_leaves_icc31_and_lowers_icc21(gold, noise, shift):
    assume(np.ptp(gold) > 0)
    pred = gold + noise[: gold.size]
    pred = pred - pred.mean() + gold.mean()  # no bias to start from
    assume(icc3_1(np.stack([pred, gold], axis=1)) > 0.05)
    before, after = agreement(pred, gold), agreement(pred + shift, gold)
    assert after["icc3_1"] == pytest.approx(before["icc3_1"], abs=1e-9)
    assert after["icc3_k"] == pytest.approx(before["icc3_k"], abs=1e-9)
    assert after["pearson"] == pytest.approx(before["pearson"], abs=1e-9)
    assert after["icc2_1"] < before["icc2_1"] - 1e-12
    assert after["icc1_1"] < before["icc1_1"] - 1e-12
    assert after["krippendorff_alpha"] < before["krippendorff_alpha"] - 1e-12
    assert after["bias"] == pytest.approx(before["bias"] + shift, abs=1e-9)
    assert after["sd_diff"] == pytest.approx(before["sd_diff"], abs=1e-9)
    assert after["mse"] > before["mse"]


# --- the bootstrap --------------------------------------------------------------------------------------


def test_replicates_equal_the_references_on_each_resample_duplicates_kept():
    rng = np.random.default_rng(11)
    n = 40
    gold = np.round(rng.uniform(1, 5, (n, 3)), 1)
    pred = np.round(np.clip(gold + rng.normal(0.3, 0.8, (n, 3)), 1, 5) * 2) / 2
    pred[:, 2] = gold[:, 2] + rng.normal(0, 0.5, n)  # continuous predictions: no ties
    ratings = np.stack([pred, gold], axis=-1)
    valid = rng.random((n, 3)) > 0.15
    indices = bootstrap_indices(n, 60, seed=2)
    boot = agreement_replicates(ratings, valid, indices)
    for b in range(0, 60, 7):
        for d in range(3):
            rows = indices[b][valid[indices[b], d]]
            expected = reference_agreement(pred[rows, d], gold[rows, d])
            for key in STATISTIC_KEYS:
                assert same(float(boot[key][b, d]), expected[key], 1e-9), (key, b, d)


def test_score_json_carries_every_statistic_with_the_looped_percentile_interval():
    predictions, references = make_scores(n=30, seed=5, unparsed=0.05)
    scores = score_predictions(
        predictions, references, resampling=ResamplingOptions(n_bootstrap=80, seed=4, resample="video")
    )
    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    from _independent import grid

    videos, pred, gold = grid(predictions, references, DIMENSION_KEYS)
    indices = bootstrap_indices(len(videos), 80, 4)
    for j, key in enumerate(DIMENSION_KEYS[:3]):
        entry = scores["dimensions"][key]
        block = entry["agreement"]
        assert block["icc3_1"]["value"] == pytest.approx(entry["icc"], abs=1e-12)
        assert block["mse"]["value"] == pytest.approx(entry["mse"], abs=1e-12)
        assert block["icc3_1"]["ci"] == pytest.approx(entry["icc_ci"], abs=1e-12)
        ok = ~np.isnan(pred[:, j])
        expected = reference_agreement(pred[ok, j], gold[ok, j])
        loops = [reference_agreement(pred[row[ok[row]], j], gold[row[ok[row]], j]) for row in indices]
        for stat in ("icc2_1", "krippendorff_alpha", "spearman", "bias", "loa_high", "sd_ratio", "n_distinct"):
            assert block[stat]["value"] == pytest.approx(expected[stat], abs=1e-10), stat
            interval = percentile_interval([loop[stat] for loop in loops])
            assert block[stat]["ci"] == pytest.approx(interval, abs=1e-9), stat
    overall = scores["overall"]["agreement"]
    assert overall["icc3_1"]["value"] == pytest.approx(scores["overall"]["icc"], abs=1e-12)
    assert set(overall) == set(STATISTIC_KEYS)


def test_blocks_without_bootstrap_have_no_intervals():
    ratings = np.random.default_rng(0).normal(3, 1, (10, 2, 2))
    entries = agreement_blocks(ratings, np.ones((10, 2), bool), None)
    assert len(entries) == 2 and all(stat["ci"] is None for entry in entries for stat in entry.values())


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="equal-length"):
        agreement([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        agreement([1.0, float("nan")], [1.0, 2.0])
    with pytest.raises(ValueError, match="blocks"):
        agreement_blocks(np.zeros((4, 2, 3)), np.ones((4, 2), bool), None)


def test_one_item_has_its_distances_and_no_item_has_nothing():
    """Fewer than `min_items` items leave the variance statistics undefined; one item still has its distance
    (MAE, MSE by hand), and a block with none has no value at all."""
    ratings = np.array([[[3.0, 2.0], [4.5, 3.0], [1.0, 1.0]], [[2.0, 2.5], [9.9, 9.9], [1.0, 1.0]]])
    valid = np.array([[True, True, False], [True, False, False]])  # blocks of 2, 1 and 0 items
    entries = agreement_blocks(ratings, valid, None, min_items=3)
    assert entries[0]["mae"]["value"] == pytest.approx((1.0 + 0.5) / 2)
    assert entries[1]["mae"]["value"] == pytest.approx(1.5) and entries[1]["mse"]["value"] == pytest.approx(2.25)
    assert math.isnan(entries[0]["icc3_1"]["value"]) and math.isnan(entries[1]["icc3_1"]["value"])
    assert all(math.isnan(stat["value"]) for stat in entries[2].values())
