"""The benchmark's scoring rules and the paired comparison, checked against direct
recomputation with the numpy core (itself checked against pingouin)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import DIMENSION_KEYS, HUMAN_CEILING
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, icc3_1, icc3_ci, paired_comparison, score_predictions
from mis_icc_metric.bootstrap import bootstrap_indices
from mis_icc_metric.paired import bootstrap_p_value
from mis_icc_metric.scoring import mappings_from_columns

from _metric_helpers import make_scores


def _grid(predictions, references):
    videos = sorted({v for v, _ in references})
    pred = np.array(
        [[np.nan if predictions[(v, d)] is None else predictions[(v, d)] for d in DIMENSION_KEYS] for v in videos]
    )
    gold = np.array([[references[(v, d)] for d in DIMENSION_KEYS] for v in videos])
    return videos, pred, gold


def test_per_dimension_overall_and_mean_follow_the_paper_rules():
    predictions, references = make_scores(n=80, seed=1, unparsed=0.04)
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))
    videos, pred, gold = _grid(predictions, references)
    parsed = ~np.isnan(pred)
    for j, key in enumerate(DIMENSION_KEYS):
        entry = result["dimensions"][key]
        ok = parsed[:, j]
        matrix = np.stack([pred[ok, j], gold[ok, j]], axis=1)
        assert entry["icc"] == pytest.approx(icc3_1(matrix), abs=1e-12)
        assert entry["mse"] == pytest.approx(np.mean((pred[ok, j] - gold[ok, j]) ** 2), abs=1e-12)
        assert entry["icc_ci_ftest"] == pytest.approx(list(icc3_ci(matrix)), abs=1e-12)
        assert entry["n"] == ok.sum() and entry["n_unparsed"] == (~ok).sum()
        assert entry["parse_rate"] == pytest.approx(ok.mean())
        assert entry["human_ceiling"]["icc"] == HUMAN_CEILING[key].icc
    complete = parsed.all(axis=1)
    overall = np.stack([pred[complete].mean(axis=1), gold[complete].mean(axis=1)], axis=1)
    assert result["overall"]["icc"] == pytest.approx(icc3_1(overall), abs=1e-12)
    assert result["overall"]["n"] == complete.sum()
    assert result["overall"]["excluded_rate"] == pytest.approx(1 - complete.mean())
    assert 0 < result["overall"]["excluded_rate"] < 1
    assert result["mean_icc"] == pytest.approx(np.mean([result["dimensions"][k]["icc"] for k in DIMENSION_KEYS]))
    # Midpoint-imputation sensitivity: unparsed -> 3.0, nothing excluded.
    imputed = np.where(parsed, pred, 3.0)
    sens = result["midpoint_imputation"]
    assert sens["n_imputed"] == (~parsed).sum()
    for j, key in enumerate(DIMENSION_KEYS):
        assert sens["dimensions"][key]["icc"] == pytest.approx(
            icc3_1(np.stack([imputed[:, j], gold[:, j]], 1)), abs=1e-12
        )
    assert sens["overall"]["icc"] == pytest.approx(
        icc3_1(np.stack([imputed.mean(axis=1), gold.mean(axis=1)], axis=1)), abs=1e-12
    )
    assert sens["overall"]["n"] == len(videos)
    assert result["common_set"] is None


def test_bootstrap_cis_use_one_shared_index_matrix_over_videos():
    predictions, references = make_scores(n=50, seed=2)
    result = score_predictions(
        predictions, references, resampling=ResamplingOptions(n_bootstrap=300, seed=11, resample="video")
    )
    videos, pred, gold = _grid(predictions, references)
    indices = bootstrap_indices(len(videos), 300, seed=11)
    parsed = ~np.isnan(pred)
    for j, key in enumerate(DIMENSION_KEYS[:3]):
        reps = []
        for row in indices:
            keep = parsed[row, j]
            reps.append(icc3_1(np.stack([pred[row, j][keep], gold[row, j][keep]], axis=1)))
        assert result["dimensions"][key]["icc_ci"] == pytest.approx(list(np.percentile(reps, [2.5, 97.5])), abs=1e-10)
    complete = parsed.all(axis=1)
    reps = []
    for row in indices:
        keep = complete[row]
        reps.append(icc3_1(np.stack([pred[row][keep].mean(axis=1), gold[row][keep].mean(axis=1)], axis=1)))
    assert result["overall"]["icc_ci"] == pytest.approx(list(np.percentile(reps, [2.5, 97.5])), abs=1e-10)
    again = score_predictions(
        predictions, references, resampling=ResamplingOptions(n_bootstrap=300, seed=11, resample="video")
    )
    assert json.dumps(json_safe(again)) == json.dumps(json_safe(result))
    other = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=300, seed=12))
    assert other["overall"]["icc_ci"] != result["overall"]["icc_ci"]
    assert other["overall"]["icc"] == result["overall"]["icc"]


def test_every_block_s_intervals_come_from_its_own_resampled_items():
    # The dimensions' and overall ICC and MSE replicates are the agreement statistics' own; the midpoint-imputed
    # and common-set blocks are bootstrapped beside them: each interval equals a loop over the same resamples.
    predictions, references = make_scores(n=50, seed=4, unparsed=0.08)
    videos, pred, gold = _grid(predictions, references)
    common = videos[::2]
    options = ResamplingOptions(n_bootstrap=200, seed=3, resample="video")
    result = score_predictions(predictions, references, resampling=options, common_videos=common)
    indices = bootstrap_indices(len(videos), 200, seed=3)
    imputed = np.where(np.isnan(pred), 3.0, pred)
    in_common = np.isin(videos, common)

    def interval(statistic, model, items):
        reps = [statistic(np.stack([model[row][items[row]], gold_of[row][items[row]]], axis=1)) for row in indices]
        return pytest.approx(list(np.percentile(reps, [2.5, 97.5])), abs=1e-10)

    def mse(matrix):
        return float(np.mean((matrix[:, 0] - matrix[:, 1]) ** 2))

    for j, key in enumerate(DIMENSION_KEYS):
        gold_of, parsed = gold[:, j], ~np.isnan(pred[:, j])
        dimension = result["dimensions"][key]
        assert dimension["icc_ci"] == interval(icc3_1, pred[:, j], parsed)
        assert dimension["mse_ci"] == interval(mse, pred[:, j], parsed)
        assert result["midpoint_imputation"]["dimensions"][key]["icc_ci"] == interval(
            icc3_1, imputed[:, j], np.ones(len(videos), bool)
        )
        assert result["common_set"]["dimensions"][key]["icc_ci"] == interval(icc3_1, pred[:, j], parsed & in_common)
    gold_of = gold.mean(axis=1)
    assert result["midpoint_imputation"]["overall"]["icc_ci"] == interval(
        icc3_1, imputed.mean(axis=1), np.ones(len(videos), bool)
    )
    assert result["overall"]["mse_ci"] == interval(mse, pred.mean(axis=1), ~np.isnan(pred).any(axis=1))


def test_common_set_restricts_every_score_to_the_given_videos():
    predictions, references = make_scores(n=60, seed=3)
    videos, pred, gold = _grid(predictions, references)
    common = videos[::2]
    result = score_predictions(
        predictions, references, resampling=ResamplingOptions(n_bootstrap=50), common_videos=common
    )
    sub_pred = {k: v for k, v in predictions.items() if k[0] in common}
    sub_refs = {k: v for k, v in references.items() if k[0] in common}
    direct = score_predictions(sub_pred, sub_refs, resampling=ResamplingOptions(n_bootstrap=0))
    assert result["common_set"]["n_videos"] == len(common)
    assert result["common_set"]["overall"]["icc"] == pytest.approx(direct["overall"]["icc"], abs=1e-12)
    assert result["common_set"]["mean_icc"] == pytest.approx(direct["mean_icc"], abs=1e-12)
    for key in DIMENSION_KEYS:
        assert result["common_set"]["dimensions"][key]["n"] == direct["dimensions"][key]["n"]
    with pytest.raises(ValueError, match="no reference"):
        score_predictions(
            predictions, references, resampling=ResamplingOptions(n_bootstrap=0), common_videos=["XX0000_T1_Luke"]
        )


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.3))
def test_property_each_dimension_equals_the_core_on_its_parsed_items(seed, unparsed):
    predictions, references = make_scores(n=12, seed=seed, unparsed=unparsed)
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))
    videos, pred, gold = _grid(predictions, references)
    for j, key in enumerate(DIMENSION_KEYS):
        ok = ~np.isnan(pred[:, j])
        entry = result["dimensions"][key]
        assert entry["n"] + entry["n_unparsed"] == len(videos)
        if ok.sum() < 3:
            assert np.isnan(entry["icc"]) and "fewer than 3" in entry["note"]
        else:
            expected = icc3_1(np.stack([pred[ok, j], gold[ok, j]], axis=1))
            assert (np.isnan(expected) and np.isnan(entry["icc"])) or entry["icc"] == pytest.approx(expected, abs=1e-12)


def test_degenerate_dimensions_are_reported_not_crashed():
    predictions, references = make_scores(n=48, seed=4, unparsed=0.0)  # 6 clinicians: above the CI floor
    for key in list(predictions):
        if key[1] == "verbal_fluency":
            predictions[key] = 3.0  # constant model output
        if key[1] == "empathy":
            predictions[key] = None  # never parsed
        if key[1] == "abc" and key[0] not in sorted({v for v, _ in references})[:2]:
            predictions[key] = None  # only two parsed
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=200))
    vf = result["dimensions"]["verbal_fluency"]
    assert vf["icc"] == 0.0 and "exactly 0" in vf["note"]
    # every resample gives exactly 0: a zero-width interval is withheld as degenerate (reporting_floor)
    assert vf["icc_ci"] is None and "zero width" in vf["withheld"]["icc_ci"]
    emp = result["dimensions"]["empathy"]
    assert emp["n"] == 0 and emp["parse_rate"] == 0.0 and np.isnan(emp["icc"]) and emp["icc_ci"] is None
    abc = result["dimensions"]["abc"]
    assert abc["n"] == 2 and np.isnan(abc["icc"]) and "fewer than 3" in abc["note"]
    assert result["overall"]["n"] == 0 and result["overall"]["excluded_rate"] == 1.0
    assert np.isnan(result["mean_icc"])
    safe = json_safe(result)
    json.dumps(safe, allow_nan=False)  # strict JSON: NaN became null
    assert safe["dimensions"]["empathy"]["icc"] is None


def test_undefined_when_nothing_varies():
    refs = {(f"AB{i:04d}_T1_Luke", "empathy"): 3.0 for i in range(5)}
    preds = dict.fromkeys(refs, 3.0)
    entry = score_predictions(preds, refs, resampling=ResamplingOptions(n_bootstrap=20))["dimensions"]["empathy"]
    assert np.isnan(entry["icc"]) and "undefined" in entry["note"]


def test_out_of_range_predictions_are_flagged_not_clipped(caplog):
    predictions, references = make_scores(n=20, seed=5, unparsed=0.0)
    key = sorted(predictions)[0]
    predictions[key] = 7.5
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))
    entry = result["dimensions"][key[1]]
    assert entry["n_out_of_range"] == 1
    assert "not clipped" in caplog.text
    videos, pred, gold = _grid(predictions, references)
    j = DIMENSION_KEYS.index(key[1])
    assert entry["icc"] == pytest.approx(icc3_1(np.stack([pred[:, j], gold[:, j]], 1)), abs=1e-12)
    with pytest.raises(ValueError, match="outside"):
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0), out_of_range="error")


@pytest.mark.parametrize(
    "mutate, error, message",
    [
        (
            lambda p, r: r.__setitem__(("AB0001_T1_Luke", "kindness"), 3.0),
            ValueError,
            "unknown dimension key 'kindness'",
        ),
        (lambda p, r: r.__setitem__(next(iter(r)), float("nan")), ValueError, "missing"),
        (lambda p, r: r.__setitem__(next(iter(r)), None), ValueError, "missing"),
        (lambda p, r: r.__setitem__(next(iter(r)), 5.5), ValueError, "outside the score range"),
        (lambda p, r: p.__setitem__(("ZZ9999_T1_Luke", "empathy"), 3.0), ValueError, "no reference"),
        (lambda p, r: p.__setitem__(next(iter(r)), float("inf")), ValueError, "infinite"),
        (lambda p, r: p.__setitem__(next(iter(r)), "3.5"), TypeError, "expected a number"),
        (lambda p, r: r.clear(), ValueError, "references are empty"),
    ],
)
def test_bad_input_gets_a_clear_error(mutate, error, message):
    predictions, references = make_scores(n=10, seed=6, unparsed=0.0)
    mutate(predictions, references)
    with pytest.raises(error, match=message):
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))


def test_missing_error_policy_refuses_a_gold_pair_without_prediction():
    predictions, references = make_scores(n=10, seed=6, unparsed=0.0)
    predictions.pop(next(iter(references)))
    with pytest.raises(ValueError, match="have no prediction"):
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0), missing="error")
    assert (
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))["coverage"][
            "n_asked_pairs"
        ]
        == 79
    )


def test_missing_predictions_can_count_as_unparsed_and_nan_means_unparsed():
    predictions, references = make_scores(n=10, seed=7, unparsed=0.0)
    first, second = sorted(references)[:2]
    del predictions[first]
    predictions[second] = float("nan")
    result = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0), missing="unparsed")
    entry = result["dimensions"][first[1]]
    assert entry["n_missing"] == 1
    assert entry["n_unparsed"] == 1 + (second[1] == first[1])


def test_float32_gold_is_widened_to_its_decimal_value():
    predictions, references = make_scores(n=15, seed=8, unparsed=0.0)
    as_float32 = {k: np.float32(v) for k, v in references.items()}
    a = score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))
    b = score_predictions(predictions, as_float32, resampling=ResamplingOptions(n_bootstrap=0))
    assert json.dumps(json_safe(a)) == json.dumps(json_safe(b))


def test_mappings_from_columns_checks_lengths_duplicates_and_names():
    preds, refs = mappings_from_columns([3.0, None], [3.1, 2.0], ["a", "b"], ["Emp.", "Empathy"])
    assert preds == {("a", "empathy"): 3.0, ("b", "empathy"): None}
    with pytest.raises(ValueError, match="same length"):
        mappings_from_columns([3.0], [3.1, 2.0], ["a", "b"], ["empathy", "empathy"])
    with pytest.raises(ValueError, match="duplicate"):
        mappings_from_columns([3.0, 3.0], [3.1, 2.0], ["a", "a"], ["empathy", "empathy"])
    with pytest.raises(ValueError, match="unknown FIS dimension"):
        mappings_from_columns([3.0], [3.1], ["a"], ["kindness"])


# --- paired comparison ----------------------------------------------------------------


def test_paired_delta_is_the_icc_difference_on_items_both_parsed():
    pred_a, references = make_scores(n=70, seed=9, noise=0.3)
    pred_b, _ = make_scores(n=70, seed=10, noise=1.0)
    result = paired_comparison(pred_a, pred_b, references, resampling=ResamplingOptions(n_bootstrap=400, seed=1))
    videos, a, gold = _grid(pred_a, references)
    _, b, _ = _grid(pred_b, references)
    for j, key in enumerate(DIMENSION_KEYS):
        both = ~np.isnan(a[:, j]) & ~np.isnan(b[:, j])
        icc_a = icc3_1(np.stack([a[both, j], gold[both, j]], 1))
        icc_b = icc3_1(np.stack([b[both, j], gold[both, j]], 1))
        entry = result["dimensions"][key]
        assert entry["delta"] == pytest.approx(icc_a - icc_b, abs=1e-12)
        assert entry["n"] == both.sum()
        assert entry["delta_ci"][0] <= entry["delta"] <= entry["delta_ci"][1]
    # A is far less noisy than B: clearly better overall.
    assert result["overall"]["delta"] > 0 and result["overall"]["p_value"] < 0.05
    assert result["mean_icc"]["delta"] > 0 and result["mean_icc"]["delta_ci"][0] > 0


def test_paired_identical_systems_have_zero_difference_and_p_one():
    predictions, references = make_scores(n=40, seed=12)
    result = paired_comparison(
        predictions, dict(predictions), references, resampling=ResamplingOptions(n_bootstrap=200)
    )
    assert result["overall"]["delta"] == 0.0
    # every resample's difference is 0: the zero-width CI and its p-value are withheld as degenerate
    for entry in (result["overall"], result["dimensions"]["empathy"], result["mean_icc"]):
        assert entry["delta_ci"] is None and entry["p_value"] is None
        assert "zero width" in entry["withheld"]["delta_ci"] and "a p-value" in entry["withheld"]["p_value"]


def test_bootstrap_p_value_is_two_sided_with_plus_one_correction():
    assert bootstrap_p_value(np.ones(99)) == pytest.approx(2 / 100)
    assert bootstrap_p_value(-np.ones(99)) == pytest.approx(2 / 100)
    assert bootstrap_p_value(np.array([-1.0, 1.0, 2.0, 3.0])) == pytest.approx(min(1, 2 * 2 / 5))
    assert np.isnan(bootstrap_p_value(np.array([np.nan])))


# --- intervals of undefined values ---------------------------------------------------------


def test_mean_icc_ci_is_undefined_when_the_mean_is():
    """A dimension without enough parsed items has no ICC, so neither the mean nor its interval exists."""
    predictions, references = make_scores(n=30, seed=4, unparsed=0.0)
    videos = sorted({v for v, _ in references})
    for video in videos[2:]:
        predictions[(video, "empathy")] = None
    result = json_safe(
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=200, seed=1))
    )
    assert result["dimensions"]["empathy"]["icc"] is None
    assert result["mean_icc"] is None and result["mean_icc_ci"] is None
    assert result["midpoint_imputation"]["mean_icc"] is not None  # imputation gives every dimension its items


def test_no_interval_and_no_test_for_an_undefined_icc():
    """No variance at all: the ICC is undefined, so are its interval, the difference's interval and p."""
    predictions, references = make_scores(n=30, seed=5, unparsed=0.0)
    for key in references:
        if key[1] == "empathy":
            references[key] = predictions[key] = 3.0
    entry = json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=100)))[
        "dimensions"
    ]["empathy"]
    assert entry["icc"] is None and entry["icc_ci"] is None and "undefined" in entry["note"]
    other, _ = make_scores(n=30, seed=6, unparsed=0.0)
    other = {key: (3.0 if key[1] == "empathy" else value) for key, value in other.items()}
    paired = json_safe(paired_comparison(predictions, other, references, resampling=ResamplingOptions(n_bootstrap=100)))
    assert paired["dimensions"]["empathy"]["delta"] is None
    assert paired["dimensions"]["empathy"]["delta_ci"] is None and paired["dimensions"]["empathy"]["p_value"] is None
    assert paired["mean_icc"]["delta"] is None and paired["mean_icc"]["delta_ci"] is None
