"""Calibrating a judge to the expert scale: a monotone map per dimension, then split-conformal intervals.

A judge's ICC(3,1) ignores its offset and scale; whoever reads its scores on the 1-5 scale (absolute
agreement, MAE, a cut-off) pays for them. The calibration fits, per dimension, a monotone map from the
judge's score to the expert gold on one split (`isotonic`: scikit-learn's ``IsotonicRegression(
out_of_bounds="clip")``; `linear`: least squares, clipped to the scale), then takes the absolute residuals
of the calibrated scores on a second split and gives every video the interval calibrated score +- the
ceil((n + 1) * coverage)-th smallest residual, clipped to [1, 5]: split conformal prediction exactly as
MAPIE's ``SplitConformalRegressor`` (absolute conformity score, prefit) computes it, whose coverage is at
least `coverage` on exchangeable videos (the upper bound coverage + 1/(n + 1) needs untied residuals, which a
gold on a 0.1 grid does not give). Beside it the no-judge yardstick: the fit split's mean gold +- the same
conformal quantile of |gold - mean| on the calibration split, the interval a user gets without any judge.

The fitted maps and quantiles are a `Calibrator`, saved as versioned JSON with where it came from (the build's
fingerprints, the splits and videos it saw, the judge, the synthetic mark: `provenance`), checked field by field
when read back (`calibrator_file`) and applied to new predictions that have no gold. The maps in every
bootstrap resample (the summary's CIs refit them) come from
`fit_maps_weighted`: weighted least squares by matrix products, and for isotonic scipy's pool-adjacent-violators
over many resamples at once (laid end to end, each shifted above the one before); under clinician resampling
`fit_maps_clustered` sums the weights per score from the clinicians' counts (one small product).

For research on judges only, not therapist supervision, training, hiring or patient-facing evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.wording import RESEARCH_USE

from .calibrator_file import (
    CALIBRATION_METHODS,
    DEFAULT_CALIBRATION_METHOD,
    DEFAULT_COVERAGE,
    PROVENANCE_FIELDS,
    check_calibrator_json,
)

__all__ = [
    "CALIBRATOR_FORMAT",
    "CALIBRATOR_VERSION",
    "CALIBRATION_METHODS",
    "DEFAULT_CALIBRATION_METHOD",
    "DEFAULT_COVERAGE",
    "INTENDED_USE",
    "Calibrator",
    "apply_map",
    "calibration_videos_needed",
    "check_scale",
    "conformal_quantile",
    "conformal_rank",
    "fit_calibrator",
    "fit_map",
    "fit_maps_weighted",
    "fit_maps_clustered",
]

CALIBRATOR_FORMAT = "mis-bench-calibrator"
CALIBRATOR_VERSION = 2  # 2: provenance (build, splits, judge, videos, synthetic) and the no-judge yardstick
SCALE: tuple[float, float] = (SCORE_MIN, SCORE_MAX)
INTENDED_USE = RESEARCH_USE
# A weighted variance below this share of the weighted mean square is cancellation noise: no spread.
_FLAT = 1e-12
# Scores closer than this to the first of their run are one score (scikit-learn's ``_make_unique``: float64's
# resolution).
_TIED = float(np.finfo(np.float64).resolution)
# The largest shift `_isotonic_lanes` adds to a row's means to lay rows end to end (bounds its rounding).
_SHIFT_LIMIT = 512.0

Key = tuple[str, str]


# ---------------------------------------------------------------------------------------- conformal


def _conformal_level(coverage: float) -> float:
    """The quantile level MAPIE uses: 1 - alpha with alpha = 1 - coverage computed in decimal (MAPIE's
    `_transform_confidence_level_to_alpha`), so the rank below is MAPIE's to the last bit."""
    if not 0 < coverage < 1:
        raise UsageError(f"coverage must lie strictly between 0 and 1, got {coverage}", hint="e.g. --coverage 0.9")
    return 1 - float(Decimal(1) - Decimal(str(coverage)))


def conformal_rank(n_calibration: int, coverage: float) -> int:
    """Which smallest residual is the conformal quantile: ceil((n + 1) * coverage) (1-based)."""
    return math.ceil(_conformal_level(coverage) * (n_calibration + 1))


def calibration_videos_needed(coverage: float) -> int:
    """The fewest calibration videos for which the conformal quantile exists (rank <= n)."""
    level = _conformal_level(coverage)
    n = max(1, int(level / (1 - level)) - 2)
    while conformal_rank(n, coverage) > n:
        n += 1
    return n


def conformal_quantile(residuals: np.ndarray, coverage: float, *, what: str = "calibration") -> float:
    """The ceil((n + 1) * coverage)-th smallest absolute residual (MAPIE's split-conformal quantile).

    Too few residuals for the level is a DataError saying how many are needed.
    """
    residuals = np.sort(np.asarray(residuals, dtype=np.float64))
    n = residuals.size
    rank = conformal_rank(n, coverage)
    if rank > n:
        raise DataError(
            f"{what} has {n} video(s); coverage {coverage:g} needs at least {calibration_videos_needed(coverage)}",
            hint="use a larger --calibration-split or a lower --coverage",
        )
    return float(residuals[rank - 1])


# ---------------------------------------------------------------------------------------- maps


def fit_map(scores: np.ndarray, gold: np.ndarray, method: str) -> dict[str, Any]:
    """One dimension's monotone map from judge score to gold, as JSON-ready parameters.

    isotonic: scikit-learn's increasing ``IsotonicRegression(out_of_bounds="clip")`` (computed as it does: tied
    scores pooled, `_score_points`, then pool adjacent violators, scipy's), kept as its thresholds (the map
    interpolates linearly between them and is constant beyond); linear: the least squares line (slope 0 when
    the judge gives one value), its output clipped to the scale.
    """
    x = np.asarray(scores, dtype=np.float64)
    y = np.asarray(gold, dtype=np.float64)
    if x.size == 0:
        raise DataError("no (prediction, gold) pairs to fit the calibration on")
    if method == "isotonic":  # scikit-learn's fit without importing it (about half a second of a command)
        from scipy.optimize import isotonic_regression

        points, point_of = _score_points(x)
        weight = np.bincount(point_of, minlength=points.size).astype(np.float64)
        fitted = isotonic_regression(np.bincount(point_of, weights=y, minlength=points.size) / weight, weights=weight).x
        keep = np.ones(points.size, dtype=bool)  # its thresholds: inside a flat stretch only its ends
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
        return {"method": method, "x": points[keep].tolist(), "y": fitted[keep].tolist()}
    if method == "linear":
        slope, intercept = _weighted_line(x[None], y[None], np.ones((1, x.size)))
        return {"method": method, "slope": float(slope[0]), "intercept": float(intercept[0])}
    raise UsageError(f"unknown calibration method {method!r}", hint=f"use one of {', '.join(CALIBRATION_METHODS)}")


def _score_points(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct scores, each item's index among them) as scikit-learn's isotonic fit pools tied scores
    (``_make_unique``): sorted, a score less than `_TIED` above the first of its run joins that run (float noise,
    e.g. 3.3 and 3.3000000000000003), and the run stands at its first score."""
    unique, inverse = np.unique(x, return_inverse=True)
    if unique.size < 2 or np.diff(unique).min() >= _TIED:
        return unique, inverse
    run, start = np.zeros(unique.size, dtype=np.int64), unique[0]
    for j in range(1, unique.size):  # over distinct scores, once a fit; only where two are within float noise
        if unique[j] - start >= _TIED:
            start = unique[j]
            run[j] = run[j - 1] + 1
        else:
            run[j] = run[j - 1]
    first = np.flatnonzero(np.diff(run, prepend=-1))
    return unique[first], run[inverse]


def apply_map(params: Mapping[str, Any], scores: np.ndarray) -> np.ndarray:
    """The calibrated scores of `scores` under one dimension's map (`fit_map`'s parameters)."""
    x = np.asarray(scores, dtype=np.float64)
    if params["method"] == "isotonic":
        knots_x = np.asarray(params["x"], dtype=np.float64)
        knots_y = np.asarray(params["y"], dtype=np.float64)
        return np.interp(np.clip(x, knots_x[0], knots_x[-1]), knots_x, knots_y)
    return np.clip(params["intercept"] + params["slope"] * x, *SCALE)


def _weighted_line(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted least-squares slope and intercept per row of `weights` (B, n); x, y (1, n) or (B, n).

    Centred on the unweighted means first (no cancellation); a row without spread in x gets slope 0.
    """
    cx, cy = x.mean(), y.mean()
    dx, dy = x - cx, y - cy
    total = weights.sum(axis=1)
    safe = np.where(total > 0, total, 1.0)
    mx = (weights * dx).sum(axis=1) / safe
    my = (weights * dy).sum(axis=1) / safe
    sxx = (weights * dx * dx).sum(axis=1) / safe - mx * mx
    sxy = (weights * dx * dy).sum(axis=1) / safe - mx * my
    scale = (weights * dx * dx).sum(axis=1) / safe
    spread = sxx > _FLAT * np.maximum(scale, 1e-300)
    slope = np.where(spread, sxy / np.where(spread, sxx, 1.0), 0.0)
    intercept = cy + my - slope * (cx + mx)
    return slope, intercept


def fit_maps_weighted(
    scores: np.ndarray, gold: np.ndarray, weights: np.ndarray, method: str, at: np.ndarray
) -> np.ndarray:
    """The map fitted with each row of `weights` (B, n) as item weights (a bootstrap resample's counts),
    evaluated at the scores `at` (m,): (B, m). Equal to scikit-learn's fit with ``sample_weight=row``.

    linear: weighted moments, one product per statistic over all rows. isotonic: `_isotonic_lanes`.
    """
    x = np.asarray(scores, dtype=np.float64)
    y = np.asarray(gold, dtype=np.float64)
    at = np.asarray(at, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if method == "linear":
        slope, intercept = _weighted_line(x[None], y[None], weights)
        return np.clip(intercept[:, None] + slope[:, None] * at[None], *SCALE)
    if method == "isotonic":
        return _isotonic_lanes(x, y, weights, at)
    raise UsageError(f"unknown calibration method {method!r}", hint=f"use one of {', '.join(CALIBRATION_METHODS)}")


def _isotonic_lanes(x: np.ndarray, y: np.ndarray, weights: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Weighted increasing isotonic regression for every row of `weights` at once, evaluated at `at`.

    What scikit-learn does per fit, for all rows together: equal scores pooled (weight and weighted gold
    summed, ``_make_unique``), scores of weight 0 left out, pool adjacent violators over the distinct scores
    in increasing order, linear interpolation between the fitted points and constant beyond the ends
    (``out_of_bounds="clip"``). The pooling is scipy's ``isotonic_regression`` run once over a group of rows
    laid end to end, each row's means shifted above the row before (by the means' range + 1, so no block ever
    spans two rows); its blocks are then averaged from the unshifted sums. Error bound: the shift rounds each
    mean by at most half an ulp of `_SHIFT_LIMIT`, and isotonic regression moves by at most the largest
    perturbation of its input (it is non-expansive in the sup norm), so the fitted values differ from an exact
    fit by at most 2 ulp(`_SHIFT_LIMIT`) = 2.3e-13 beyond float rounding (rows are grouped so that no shift
    exceeds it). No loop over rows: over groups of rows only.
    """
    from scipy import sparse

    unique, point_of = _score_points(x)
    m = unique.size
    # (B, m): each row's weight and weighted gold sum at each distinct score, as products with a sparse indicator.
    items = np.arange(x.size)
    indicator = sparse.csr_matrix((np.ones(x.size), (items, point_of)), shape=(x.size, m))
    gold = sparse.csr_matrix((y, (items, point_of)), shape=(x.size, m))
    w = np.ascontiguousarray(np.asarray(indicator.T @ weights.T).T)
    wy = np.ascontiguousarray(np.asarray(gold.T @ weights.T).T)
    return _isotonic_pooled(unique, w, wy, at)


def _isotonic_pooled(unique: np.ndarray, w: np.ndarray, wy: np.ndarray, at: np.ndarray) -> np.ndarray:
    """`_isotonic_lanes` from each row's weight `w` and weighted gold sum `wy` (B, m) at the distinct scores
    `unique` (m,), evaluated at `at`."""
    from scipy.optimize import isotonic_regression

    m, lanes = unique.size, w.shape[0]
    present = w > 0
    lane, _ = np.nonzero(present)  # row-major: row by row, scores increasing within a row
    w_flat, wy_flat = w[present], wy[present]
    mean = wy_flat / w_flat
    low = float(mean.min()) if mean.size else 0.0
    gap = (float(mean.max()) - low if mean.size else 0.0) + 1.0
    per_group = max(1, int(_SHIFT_LIMIT // gap))
    shifted = (mean - low) + (lane % per_group) * gap
    bounds = np.unique(np.append(np.searchsorted(lane, np.arange(0, lanes, per_group)), lane.size))
    starts = np.concatenate(
        [np.zeros(0, dtype=np.int64)]
        + [isotonic_regression(shifted[a:b], weights=w_flat[a:b]).blocks[:-1] + a for a, b in pairwise(bounds)]
    )
    sizes = np.diff(np.append(starts, lane.size))
    fitted = np.zeros((lanes, m))
    if starts.size:
        fitted[present] = np.repeat(np.add.reduceat(wy_flat, starts) / np.add.reduceat(w_flat, starts), sizes)
    # At `at`: linear between the two distinct scores around it (the map is linear there), constant beyond.
    position = np.clip(np.searchsorted(unique, at, side="right"), 1, m)  # unique[position - 1] <= at
    left, right = position - 1, np.minimum(position, m - 1)
    columns, column_of = np.unique(np.concatenate([left, right]), return_inverse=True)
    # The map at those distinct scores: between the nearest scores with weight on either side, linear.
    index = np.arange(m, dtype=np.int32)
    below = np.maximum.accumulate(np.where(present, index, np.int32(-1)), axis=1)[:, columns]
    above = np.minimum.accumulate(np.where(present, index, np.int32(m))[:, ::-1], axis=1)[:, ::-1][:, columns]
    low_i, high_i = np.where(below >= 0, below, above), np.where(above < m, above, below)
    row_start = (np.arange(lanes, dtype=np.int64) * m)[:, None]
    y_low, y_high = fitted.ravel()[low_i + row_start], fitted.ravel()[high_i + row_start]
    x_low = unique[low_i]
    span = unique[high_i] - x_low
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(span > 0, (unique[columns][None] - x_low) / np.where(span > 0, span, 1.0), 0.0)
    mapped = y_low + t * (y_high - y_low)
    step = unique[right] - unique[left]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(step > 0, np.clip((at - unique[left]) / np.where(step > 0, step, 1.0), 0.0, 1.0), 0.0)
    low_at, high_at = mapped[:, column_of[: at.size]], mapped[:, column_of[at.size :]]
    return low_at + share * (high_at - low_at)


def fit_maps_clustered(
    scores: np.ndarray, gold: np.ndarray, clusters: np.ndarray, cluster_counts: np.ndarray, method: str, at: np.ndarray
) -> np.ndarray:
    """`fit_maps_weighted` where item i's weight in resample b is ``cluster_counts[b, clusters[i]]`` (a cluster
    bootstrap: each clinician drawn with all its videos). For isotonic the weight and weighted gold at each
    distinct score come from one (B x C) by (C x scores) product of per-cluster sums, never the (B x items) weights;
    equal to `fit_maps_weighted` with the expanded weights up to float rounding of those sums."""
    x = np.asarray(scores, dtype=np.float64)
    clusters = np.asarray(clusters, dtype=np.int64)
    cluster_counts = np.asarray(cluster_counts, dtype=np.float64)
    if method != "isotonic" or cluster_counts.shape[1] >= x.size:  # no fewer clusters than items: nothing pooled
        return fit_maps_weighted(x, gold, cluster_counts[:, clusters], method, at)
    unique, point_of = _score_points(x)
    per_cluster = np.zeros((2, cluster_counts.shape[1], unique.size))
    np.add.at(per_cluster[0], (clusters, point_of), 1.0)
    np.add.at(per_cluster[1], (clusters, point_of), np.asarray(gold, dtype=np.float64))
    return _isotonic_pooled(unique, cluster_counts @ per_cluster[0], cluster_counts @ per_cluster[1], np.asarray(at))


# ---------------------------------------------------------------------------------------- calibrator


@dataclass(frozen=True)
class Calibrator:
    """Per dimension a monotone map and a conformal half-width, fitted on one split and calibrated on
    another: everything `apply` needs for new predictions without gold."""

    method: str
    coverage: float
    dimensions: tuple[str, ...]
    maps: dict[str, dict[str, Any]]
    half_widths: dict[str, float]
    n_fit: dict[str, int]
    n_calibration: dict[str, int]
    scale: tuple[float, float] = SCALE
    provenance: dict[str, Any] = field(default_factory=dict)
    # Per dimension the no-judge yardstick: {"center": the fit split's mean gold, "half_width": the conformal
    # quantile of |gold - center| on the calibration split}.
    no_judge: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": CALIBRATOR_FORMAT,
            "version": CALIBRATOR_VERSION,
            "intended_use": INTENDED_USE,
            "method": self.method,
            "coverage": self.coverage,
            "scale": list(self.scale),
            "dimensions": list(self.dimensions),
            "maps": self.maps,
            "half_widths": self.half_widths,
            "n_fit": self.n_fit,
            "n_calibration": self.n_calibration,
            "no_judge": self.no_judge,
            "provenance": self.provenance,
        }

    @classmethod
    def from_json(cls, data: Any, where: str) -> Calibrator:
        """A calibrator from its JSON; another format or version, or a field out of bounds (`calibrator_file`:
        coverage, half-widths, maps, dimensions, provenance), is a DataError of one line naming the field."""
        if not isinstance(data, dict) or data.get("format") != CALIBRATOR_FORMAT:
            raise DataError(f"not a {CALIBRATOR_FORMAT} file", where=where, hint="give a calibrator.json written by it")
        if data.get("version") != CALIBRATOR_VERSION:
            raise DataError(
                f"calibrator version {data.get('version')!r}; this toolkit reads version {CALIBRATOR_VERSION}",
                where=where,
                hint="recalibrate with this toolkit's mis-bench calibrate",
            )
        check_calibrator_json(data, where)
        dims = tuple(data["dimensions"])
        return cls(
            method=data["method"],
            coverage=float(data["coverage"]),
            dimensions=dims,
            maps={d: dict(data["maps"][d]) for d in dims},
            half_widths={d: float(data["half_widths"][d]) for d in dims},
            n_fit={d: int(data["n_fit"][d]) for d in dims},
            n_calibration={d: int(data["n_calibration"][d]) for d in dims},
            scale=(float(data["scale"][0]), float(data["scale"][1])),
            provenance=dict(data["provenance"]),
            no_judge={d: {k: float(data["no_judge"][d][k]) for k in ("center", "half_width")} for d in dims},
        )

    def save(self, path: str | Path) -> Path:
        import json

        from mis_bench_dataset.toolkit.atomic import write_atomic
        from mis_bench_dataset.toolkit.jsonio import json_safe

        return write_atomic(path, json.dumps(json_safe(self.to_json()), indent=2, allow_nan=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Calibrator:
        from mis_bench_dataset.toolkit.jsonio import JSONInputError, read_json

        try:
            data = read_json(path)
        except JSONInputError as exc:
            raise DataError(f"not a readable calibrator: {exc.reason}", where=str(path)) from None
        return cls.from_json(data, str(path))

    def check_applies(self, predictions: Mapping[Key, float | None], where: str) -> None:
        """Refuse predictions on another dimension set or scale than the calibrator's (one DataError line)."""
        if tuple(self.scale) != SCALE:
            raise DataError(
                f"the calibrator is on the scale {list(self.scale)}, the toolkit's is {list(SCALE)}",
                where=where,
                hint="calibrate again on predictions and gold of the FIS scale",
            )
        named = sorted({dim for _, dim in predictions}, key=DIMENSION_KEYS.index)
        extra = [d for d in named if d not in self.dimensions]
        if extra:
            raise DataError(
                f"the predictions name dimension(s) {extra} the calibrator was not fitted on "
                f"(it has {list(self.dimensions)})",
                where=where,
                hint="calibrate on predictions of the same dimensions",
            )
        check_scale(predictions, where, self.scale)

    def apply(self, predictions: Mapping[Key, float | None], where: str = "predictions") -> list[dict]:
        """Long records {video_id, dimension, prediction (calibrated), raw_prediction, lower, upper};
        an unparsed prediction stays None with no interval."""
        self.check_applies(predictions, where)
        records = []
        for (video, dim), value in predictions.items():
            record = {"video_id": video, "dimension": dim, "prediction": None, "raw_prediction": value}
            record.update(lower=None, upper=None)
            if value is not None:
                calibrated = float(apply_map(self.maps[dim], np.array([value]))[0])
                record["prediction"] = calibrated
                record["lower"], record["upper"] = self.interval(dim, calibrated)
            records.append(record)
        return records

    def interval(self, dim: str, calibrated: float) -> tuple[float, float]:
        half = self.half_widths[dim]
        low, high = self.scale
        return float(np.clip(calibrated - half, low, high)), float(np.clip(calibrated + half, low, high))


def check_scale(predictions: Mapping[Key, float | None], where: str, scale: tuple[float, float] = SCALE) -> None:
    """Refuse predictions outside the scale (a judge on 0-100, a 1-10 scale) in one DataError line: the check
    `--apply` runs, and the fit runs before anything is fitted or written."""
    values = np.array([v for v in predictions.values() if v is not None], dtype=np.float64)
    outside = values[(values < scale[0]) | (values > scale[1])]
    if outside.size:
        raise DataError(
            f"{outside.size} prediction(s) lie outside the calibrator's scale {list(scale)} "
            f"(e.g. {outside[0]:g}): another scale",
            where=where,
            hint="give predictions on the 1-5 FIS scale",
        )


def scored_pairs(predictions: Mapping[Key, float | None], references: Mapping[Key, float], dim: str):
    """(the keys, judge scores, gold) of one dimension's pairs with both, in key order."""
    keys = sorted(k for k, v in predictions.items() if k[1] == dim and v is not None and k in references)
    x = np.array([predictions[k] for k in keys], dtype=np.float64)
    y = np.array([references[k] for k in keys], dtype=np.float64)
    return keys, x, y


def fit_calibrator(
    fit_predictions: Mapping[Key, float | None],
    fit_references: Mapping[Key, float],
    calibration_predictions: Mapping[Key, float | None],
    calibration_references: Mapping[Key, float],
    *,
    method: str = DEFAULT_CALIBRATION_METHOD,
    coverage: float = DEFAULT_COVERAGE,
    provenance: Mapping[str, Any] | None = None,
) -> Calibrator:
    """Fit each dimension's map on the fit pairs (a parsed prediction with gold) and its conformal
    half-width on the calibration pairs; a dimension without fit pairs is left out (logged by the caller).

    Predictions off the 1-5 scale are refused first (`check_scale`). Beside each map the no-judge yardstick
    (the fit pairs' mean gold, and the conformal quantile of |gold - mean| on the calibration pairs). The
    provenance records the videos seen (fit, calibration) over what `provenance` gives (the build, the
    splits, the judge, the synthetic mark: None where the caller does not say)."""
    _conformal_level(coverage)
    if method not in CALIBRATION_METHODS:
        raise UsageError(f"unknown calibration method {method!r}", hint=f"use one of {', '.join(CALIBRATION_METHODS)}")
    check_scale(fit_predictions, "the fit predictions")
    check_scale(calibration_predictions, "the calibration predictions")
    maps, half_widths, n_fit, n_cal, no_judge = {}, {}, {}, {}, {}
    seen: dict[str, set[str]] = {"fit": set(), "calibration": set()}
    for dim in DIMENSION_KEYS:
        keys, x, y = scored_pairs(fit_predictions, fit_references, dim)
        if not x.size:
            continue
        maps[dim] = fit_map(x, y, method)
        cal_keys, xc, yc = scored_pairs(calibration_predictions, calibration_references, dim)
        what = f"the calibration split for {dim}"
        half_widths[dim] = conformal_quantile(np.abs(yc - apply_map(maps[dim], xc)), coverage, what=what)
        center = float(y.mean())
        no_judge[dim] = {"center": center, "half_width": conformal_quantile(np.abs(yc - center), coverage, what=what)}
        n_fit[dim], n_cal[dim] = int(x.size), int(xc.size)
        seen["fit"].update(video for video, _ in keys)
        seen["calibration"].update(video for video, _ in cal_keys)
    if not maps:
        raise DataError("no dimension has a parsed prediction with gold in the fit split")
    recorded = {**dict.fromkeys(PROVENANCE_FIELDS), **(provenance or {})}
    recorded["videos"] = {part: sorted(videos) for part, videos in seen.items()}
    return Calibrator(
        method=method,
        coverage=coverage,
        dimensions=tuple(maps),
        maps=maps,
        half_widths=half_widths,
        n_fit=n_fit,
        n_calibration=n_cal,
        provenance=recorded,
        no_judge=no_judge,
    )
