"""The calibration core (`mis_icc_metric.calibration`) against its independent references.

scikit-learn's IsotonicRegression / LinearRegression (with sample weights: a bootstrap resample's counts)
for the maps, MAPIE's SplitConformalRegressor (prefit, absolute conformity score) for the bounds, and
hypothesis properties: the map is monotone, every interval holds its calibrated score, and on
exchangeable synthetic data the conformal interval covers at least the nominal share on average.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LinearRegression

from mis_bench_dataset import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric import Calibrator, fit_calibrator
from mis_icc_metric.calibration import (
    apply_map,
    calibration_videos_needed,
    conformal_quantile,
    conformal_rank,
    fit_map,
    fit_maps_clustered,
    fit_maps_weighted,
)

mapie_regression = pytest.importorskip("mapie.regression")


def _judge(rng: np.random.Generator, n: int, *, decimals: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A judge's scores and a gold on the FIS scale (one decimal), related monotonically with noise."""
    x = np.round(rng.uniform(1, 5, n), decimals)
    y = np.clip(np.round(0.6 * x + 1.2 + rng.normal(0, 0.5, n), 1), 1, 5)
    return x, y


def _mapie_bounds(estimator, x_cal, y_cal, x_new, coverage):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # MAPIE cannot tell a prefit IsotonicRegression is fitted
        conformal = mapie_regression.SplitConformalRegressor(estimator, confidence_level=coverage, prefit=True)
        conformal.conformalize(x_cal[:, None], y_cal)
        predicted, intervals = conformal.predict_interval(x_new[:, None])
    return predicted, intervals[:, 0, 0], intervals[:, 1, 0]


@pytest.mark.parametrize("n_cal", [20, 57, 100, 313])
@pytest.mark.parametrize("coverage", [0.8, 0.9, 0.95])
def test_isotonic_map_and_bounds_equal_sklearn_and_mapie(n_cal, coverage):
    rng = np.random.default_rng(n_cal)
    x, y = _judge(rng, 300 + n_cal + 80)
    fit, cal, new = slice(0, 300), slice(300, 300 + n_cal), slice(300 + n_cal, None)
    x_new = np.concatenate([x[new], [0.2, 5.9, x[fit].min(), x[fit].max()]])  # beyond the fit's range too
    reference = IsotonicRegression(out_of_bounds="clip").fit(x[fit], y[fit])
    params = fit_map(x[fit], y[fit], "isotonic")
    np.testing.assert_allclose(apply_map(params, x_new), reference.predict(x_new), rtol=0, atol=1e-12)
    half = conformal_quantile(np.abs(y[cal] - apply_map(params, x[cal])), coverage)
    predicted, low, high = _mapie_bounds(reference, x[cal], y[cal], x_new, coverage)
    calibrated = apply_map(params, x_new)
    np.testing.assert_allclose(calibrated, predicted, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.clip(calibrated - half, 1, 5), np.clip(low, 1, 5), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.clip(calibrated + half, 1, 5), np.clip(high, 1, 5), rtol=0, atol=1e-9)


def test_linear_map_and_bounds_equal_sklearn_and_mapie():
    rng = np.random.default_rng(3)
    x = rng.uniform(2, 4, 400)  # a line that stays inside the scale: MAPIE's bounds are unclipped
    y = np.clip(0.5 * x + 1.5 + rng.normal(0, 0.3, 400), 1, 5)
    reference = LinearRegression().fit(x[:250, None], y[:250])
    params = fit_map(x[:250], y[:250], "linear")
    assert params["slope"] == pytest.approx(reference.coef_[0], abs=1e-12)
    assert params["intercept"] == pytest.approx(reference.intercept_, abs=1e-12)
    half = conformal_quantile(np.abs(y[250:350] - apply_map(params, x[250:350])), 0.9)
    predicted, low, high = _mapie_bounds(reference, x[250:350], y[250:350], x[350:], 0.9)
    calibrated = apply_map(params, x[350:])
    np.testing.assert_allclose(calibrated, predicted, rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.clip(calibrated - half, 1, 5), np.clip(low, 1, 5), rtol=0, atol=1e-9)
    np.testing.assert_allclose(np.clip(calibrated + half, 1, 5), np.clip(high, 1, 5), rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", ["isotonic", "linear"])
@pytest.mark.parametrize("decimals", [1, 3])  # many tied scores, and nearly all distinct
def test_resampled_maps_equal_sklearn_fits_with_the_counts_as_weights(method, decimals):
    rng = np.random.default_rng(decimals)
    x, y = _judge(rng, 300, decimals=decimals)
    counts = rng.multinomial(300, np.full(300, 1 / 300), size=60).astype(float)
    counts[0] = 0.0
    counts[0, :3] = [2.0, 0.0, 1.0]  # a resample with two distinct items only
    distinct = np.unique(x)  # every fitted point and the midpoints of the first gaps (the interpolation's ends)
    at = np.concatenate([rng.uniform(0.5, 5.5, 50), x[:20], distinct, (distinct[:5] + distinct[1:6]) / 2])
    got = fit_maps_weighted(x, y, counts, method, at)
    for row in range(counts.shape[0]):
        if method == "isotonic":
            model = IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=counts[row])
            expected = model.predict(at)
        else:
            keep = counts[row] > 0
            line = LinearRegression().fit(x[keep, None], y[keep], sample_weight=counts[row][keep])
            expected = np.clip(line.predict(at[:, None]), 1, 5)
        np.testing.assert_allclose(got[row], expected, rtol=0, atol=1e-12 if method == "isotonic" else 1e-9)


@settings(max_examples=80, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 12), st.integers(10, 50), st.integers(0, 3)), min_size=1, max_size=25),
    rows=st.lists(st.lists(st.integers(0, 3), min_size=25, max_size=25), min_size=1, max_size=6),
    probes=st.lists(st.floats(0, 6, allow_nan=False), min_size=1, max_size=10),
)
def test_batched_isotonic_equals_sklearn_per_resample_on_small_data(data, rows, probes):
    """Every row of the batched fit (many tied scores, zero weights, a one-point row) is sklearn's fit with that
    row as sample weights, to 1e-12 (the documented bound of `_isotonic_lanes` is 2.3e-13 beyond rounding)."""
    x = np.array([1 + score / 3 for score, _, _ in data])  # few distinct scores: ties pooled
    y = np.array([gold / 10 for _, gold, _ in data])
    weights = np.array([[row[i] for i in range(x.size)] for row in rows], dtype=float)
    weights[:, 0] += weights.sum(axis=1) == 0  # sklearn needs some weight in a row
    at = np.concatenate([np.array(probes), x])
    got = fit_maps_weighted(x, y, weights, "isotonic", at)
    for row, w in enumerate(weights):
        expected = IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w).predict(at)
        np.testing.assert_allclose(got[row], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["isotonic", "linear"])
def test_clustered_refits_equal_sklearn_fits_with_each_clinicians_count_on_its_videos(method):
    """A cluster bootstrap's refits (`fit_maps_clustered`: 12 clinicians, each video weighted by its clinician's
    count, a resample drawing one clinician only and one drawing none of some) equal sklearn's fit with those
    expanded counts as sample weights, to 1e-12 (isotonic) and 1e-9 (linear)."""
    rng = np.random.default_rng(11)
    x, y = _judge(rng, 150, decimals=1)
    clusters = rng.integers(0, 12, x.size)
    counts = rng.multinomial(12, np.full(12, 1 / 12), size=30).astype(float)
    counts[0] = 0.0
    counts[0, clusters[0]] = 2.0  # one clinician drawn twice, nobody else
    at = np.concatenate([rng.uniform(0.5, 5.5, 30), x[:20]])
    got = fit_maps_clustered(x, y, clusters, counts, method, at)
    for row, weights in enumerate(counts[:, clusters]):
        if method == "isotonic":
            expected = IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=weights).predict(at)
        else:
            keep = weights > 0
            line = LinearRegression().fit(x[keep, None], y[keep], sample_weight=weights[keep])
            expected = np.clip(line.predict(at[:, None]), 1, 5)
        np.testing.assert_allclose(got[row], expected, rtol=0, atol=1e-12 if method == "isotonic" else 1e-9)


def test_scores_within_float_noise_are_one_score_as_in_sklearn():
    """3.3 and 3.3000000000000004 (a score computed two ways) are one score in scikit-learn's fit (``_make_unique``
    pools scores within float64's resolution): the map and the batched refits pool them too."""
    x = np.array([1.0, 3.3, 3.3 + 4.5e-16, 3.3 + 9e-16, 2.0, 4.0, 3.3 + 2e-15, 5.0])
    y = np.array([1.0, 4.0, 2.0, 3.5, 3.0, 3.0, 1.5, 5.0])
    at = np.concatenate([x, [2.5, 3.3 + 3e-16, 4.5]])
    reference = IsotonicRegression(out_of_bounds="clip").fit(x, y)
    params = fit_map(x, y, "isotonic")
    np.testing.assert_array_equal(params["x"], reference.X_thresholds_)
    np.testing.assert_allclose(params["y"], reference.y_thresholds_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(apply_map(params, at), reference.predict(at), rtol=0, atol=1e-12)
    weights = np.array([[1, 1, 1, 1, 1, 1, 1, 1], [0, 2, 1, 0, 1, 3, 1, 1], [1, 0, 3, 1, 0, 0, 2, 0]], dtype=float)
    got = fit_maps_weighted(x, y, weights, "isotonic", at)
    for row, w in enumerate(weights):
        expected = IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w).predict(at)
        np.testing.assert_allclose(got[row], expected, rtol=0, atol=1e-12)


def test_agreement_weighted_with_one_row_of_predictions_equals_that_row_repeated():
    """The calibration's "before" side: the raw scores, shared by every resample, as one block under each row of
    weights, equal to the same scores repeated as a block a row (the form the refitted "after" side takes)."""
    from mis_icc_metric.agreement_statistics import agreement_weighted

    rng = np.random.default_rng(5)
    x, y = _judge(rng, 120)
    weights = rng.multinomial(120, np.full(120, 1 / 120), size=40).astype(float)
    shared = agreement_weighted(x[None], y, weights)
    repeated = agreement_weighted(np.broadcast_to(x, weights.shape), y, weights)
    assert shared.keys() == repeated.keys()
    for key in shared:
        np.testing.assert_allclose(shared[key], repeated[key], rtol=0, atol=1e-12, equal_nan=True)


def test_conformal_rank_and_the_videos_needed():
    assert conformal_rank(99, 0.9) == 90  # ceil(100 * 0.9)
    assert conformal_rank(100, 0.9) == 91  # ceil(90.9)
    assert calibration_videos_needed(0.9) == 9
    assert calibration_videos_needed(0.95) == 19
    for coverage in (0.5, 0.8, 0.9, 0.95, 0.99):
        needed = calibration_videos_needed(coverage)
        assert conformal_rank(needed, coverage) <= needed
        assert conformal_rank(needed - 1, coverage) > needed - 1
    assert conformal_quantile(np.arange(10.0), 0.9) == 9.0  # rank ceil(11 * 0.9) = 10: the largest
    with pytest.raises(DataError, match="needs at least 19"):
        conformal_quantile(np.arange(18.0), 0.95)
    with pytest.raises(UsageError):
        conformal_quantile(np.arange(18.0), 1.0)


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.floats(1, 5, allow_nan=False), min_size=2, max_size=40),
    noise=st.lists(st.floats(-2, 2, allow_nan=False), min_size=40, max_size=40),
    probes=st.lists(st.floats(0, 6, allow_nan=False), min_size=2, max_size=20),
    method=st.sampled_from(["isotonic", "linear"]),
)
def test_the_map_is_monotone_and_intervals_hold_the_calibrated_score(scores, noise, probes, method):
    x = np.array(scores)
    y = np.clip(np.round(x + np.array(noise[: x.size]), 1), 1, 5)
    params = fit_map(x, y, method)
    grid = np.sort(np.array(probes))
    mapped = apply_map(params, grid)
    step = np.diff(mapped)
    assert (step >= -1e-12).all() if method == "isotonic" or params["slope"] >= 0 else (step <= 1e-12).all()
    assert ((mapped >= 1) & (mapped <= 5)).all()
    keys = {(f"C{i:03d}_T1_S1", "empathy"): float(v) for i, v in enumerate(x)}
    gold = {(f"C{i:03d}_T1_S1", "empathy"): float(v) for i, v in enumerate(y)}
    if len(keys) < calibration_videos_needed(0.5):
        return
    calibrator = fit_calibrator(keys, gold, keys, gold, method=method, coverage=0.5)
    assert Calibrator.from_json(calibrator.to_json(), "fitted.json") == calibrator  # what the fit writes is read back
    for record in calibrator.apply(keys):
        assert record["lower"] <= record["prediction"] <= record["upper"]
        assert record["lower"] >= 1 and record["upper"] <= 5


@pytest.mark.parametrize("method", ["isotonic", "linear"])
def test_coverage_guarantee_on_exchangeable_data(method):
    """Over many draws of exchangeable fit / calibration / test videos the mean coverage is at least nominal
    (split conformal's guarantee) and at most nominal + 1 / (n + 1) plus Monte Carlo error."""
    rng = np.random.default_rng(7)
    coverage, n_cal, covered = 0.9, 60, []
    for _ in range(300):
        x, y = _judge(rng, 100 + n_cal + 50)
        params = fit_map(x[:100], y[:100], method)
        half = conformal_quantile(np.abs(y[100 : 100 + n_cal] - apply_map(params, x[100 : 100 + n_cal])), coverage)
        calibrated = apply_map(params, x[100 + n_cal :])
        low, high = np.clip(calibrated - half, 1, 5), np.clip(calibrated + half, 1, 5)
        covered.append(np.mean((y[100 + n_cal :] >= low) & (y[100 + n_cal :] <= high)))
    mean = float(np.mean(covered))
    monte_carlo = 3 * np.std(covered) / np.sqrt(len(covered))
    assert coverage - monte_carlo <= mean <= coverage + 1 / (n_cal + 1) + monte_carlo


def _mapping(rng, videos, dims=DIMENSION_KEYS):
    return {(v, d): float(np.round(rng.uniform(1, 5), 2)) for v in videos for d in dims}


def test_calibrator_round_trip_and_refusals(tmp_path):
    rng = np.random.default_rng(0)
    videos = [f"C{i:03d}_T{1 + i % 3}_S{i % 8 + 1}" for i in range(60)]
    predictions, gold = _mapping(rng, videos), _mapping(rng, videos)
    calibrator = fit_calibrator(predictions, gold, predictions, gold, provenance={"fit_split": "train"})
    path = calibrator.save(tmp_path / "calibrator.json")
    again = Calibrator.load(path)
    assert again == calibrator
    new = _mapping(rng, ["D001_T1_S1", "D002_T3_S4"])
    assert again.apply(new) == calibrator.apply(new)
    only_two = fit_calibrator(
        {k: v for k, v in predictions.items() if k[1] in ("empathy", "wau")}, gold, predictions, gold
    )
    with pytest.raises(DataError, match="not fitted on"):
        only_two.apply(new)
    with pytest.raises(DataError, match="another scale"):
        calibrator.apply({("D001_T1_S1", "empathy"): 7.5})
    data = calibrator.to_json()
    with pytest.raises(DataError, match="scale"):
        Calibrator.from_json({**data, "scale": [0, 10]}, "x.json").apply(new)
    with pytest.raises(DataError, match="version"):
        Calibrator.from_json({**data, "version": 99}, "x.json")
    with pytest.raises(DataError, match="needs at least 9"):
        fit_calibrator(predictions, gold, dict(list(predictions.items())[:64]), gold)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_calibrated_predictions_round_trip_with_their_intervals(tmp_path, suffix):
    from mis_icc_metric import predictions_to_mapping, read_prediction_file, write_predictions

    rng = np.random.default_rng(1)
    videos = [f"CL{i:04d}_T1_Jessica" for i in range(30)]
    predictions, gold = _mapping(rng, videos), _mapping(rng, videos)
    calibrator = fit_calibrator(predictions, gold, predictions, gold)
    records = calibrator.apply({**predictions, ("CL0000_T1_Jessica", "empathy"): None})
    path = write_predictions(tmp_path / f"calibrated{suffix}", records)
    back = read_prediction_file(path)
    assert back.form == "long" and back.records == records  # lower/upper/raw_prediction kept; None stays None
    # What an older reader keeps: the calibrated score per pair.
    assert predictions_to_mapping(back.records) == {(r["video_id"], r["dimension"]): r["prediction"] for r in records}


def test_risk_coverage_rows_are_the_width_deciles_rounded_up_to_a_hundredth():
    """Many distinct widths: one row per decile of the widths, rounded up to 0.01 (by hand with `math.ceil`), each
    with the share, count, coverage and MAE of the pairs at most that wide; few widths: one row per width."""
    import math

    from mis_icc_metric.calibration_checks import risk_coverage

    rng = np.random.default_rng(4)
    rows = [
        {"width": float(w), "covered": bool(c), "error": float(e)}
        for w, c, e in zip(rng.uniform(0.2, 1.8, 97), rng.random(97) < 0.9, rng.uniform(0, 1, 97), strict=True)
    ]
    widths = np.array([r["width"] for r in rows])
    deciles = sorted({math.ceil(round(q * 100, 9)) / 100 for q in np.quantile(widths, np.linspace(0.1, 1, 10))})
    table = risk_coverage(rows)
    assert [row["max_width"] for row in table] == deciles
    for row in table:
        kept = [r for r in rows if r["width"] <= row["max_width"] + 1e-9]
        assert row["n"] == len(kept) and row["share"] == len(kept) / 97
        assert row["mae"] == pytest.approx(np.mean([r["error"] for r in kept]))
        assert row["coverage"] == pytest.approx(np.mean([r["covered"] for r in kept]))
    few = [{"width": w, "covered": True, "error": 0.1} for w in (0.301, 0.5, 0.5)]
    assert [row["max_width"] for row in risk_coverage(few)] == [0.31, 0.5]


def test_with_tied_residuals_coverage_can_exceed_the_untied_upper_bound():
    """The docs promise the lower bound only. With the gold on a 0.1 grid the residuals of a calibrated score that
    sits on the grid tie (|gold - 3.0| takes a few values), every tie at the conformal quantile is covered, and over
    many draws the mean coverage lies well above coverage + 1 / (n + 1), the bound for untied residuals, while it
    still holds the nominal."""
    rng = np.random.default_rng(11)
    coverage, n_cal, covered = 0.8, 40, []
    for _ in range(300):
        tenths = np.rint(rng.normal(30, 3, n_cal + 200))  # the gold in tenths of a point, around 3.0
        residuals = np.abs(tenths - 30) / 10  # exact ties: the same tenth is the same float
        half = conformal_quantile(residuals[:n_cal], coverage)
        covered.append(np.mean(residuals[n_cal:] <= half))
    mean = float(np.mean(covered))
    monte_carlo = 3 * np.std(covered) / np.sqrt(len(covered))
    assert mean >= coverage - monte_carlo
    assert mean > coverage + 1 / (n_cal + 1) + monte_carlo


def test_a_calibrator_read_back_is_checked_field_by_field():
    """Each tampering is refused with one line naming the field (issue 45's cases first); the sound file loads."""
    rng = np.random.default_rng(5)
    videos = [f"C{i:03d}_T{1 + i % 3}_S{i % 8 + 1}" for i in range(60)]
    predictions, gold = _mapping(rng, videos), _mapping(rng, videos)
    data = fit_calibrator(predictions, gold, predictions, gold).to_json()
    assert Calibrator.from_json(data, "ok.json").provenance["videos"]["fit"] == sorted(videos)
    linear = fit_calibrator(predictions, gold, predictions, gold, method="linear").to_json()
    cases = {
        "'coverage'": {**data, "coverage": 1.7},
        "'coverage' is True": {**data, "coverage": True},
        "'half_widths.empathy'": {**data, "half_widths": {**data["half_widths"], "empathy": -0.2}},
        "'half_widths.wau' is inf": {**data, "half_widths": {**data["half_widths"], "wau": float("inf")}},
        "'maps.abc.y'": {
            **data,
            "maps": {**data["maps"], "abc": {**data["maps"]["abc"], "x": [1.0, 5.0], "y": [10.0, 40.5]}},
        },
        "'maps.abc'": {**data, "maps": {**data["maps"], "abc": linear["maps"]["abc"]}},
        "'maps.arrr.slope'": {**linear, "maps": {**linear["maps"], "arrr": {"method": "linear", "slope": "x"}}},
        "'dimensions'": {**data, "dimensions": ["empathy", "empathy"]},
        "'n_fit.empathy'": {**data, "n_fit": {**data["n_fit"], "empathy": 0}},
        "'no_judge.empathy.center'": {
            **data,
            "no_judge": {**data["no_judge"], "empathy": {"center": 30.0, "half_width": 1}},
        },
        "'provenance.build'": {**data, "provenance": {k: v for k, v in data["provenance"].items() if k != "build"}},
        "'provenance.videos.fit'": {**data, "provenance": {**data["provenance"], "videos": {"calibration": []}}},
        "'scale'": {**data, "scale": [0, 100]},
    }
    for field, tampered in cases.items():
        with pytest.raises(DataError) as refused:
            Calibrator.from_json(tampered, "edited.json")
        message = str(refused.value)
        assert f"calibrator field {field}" in message and "\n" not in message, message
