"""How big an evaluation must be (`mis-bench plan`), from a pilot run: predictions and gold on a few videos.

Three questions, each answered by resampling the pilot and, beside it, by an analytic approximation:

- `plan_icc`: the videos (and clinicians, at the pilot's videos per clinician) for a judge's ICC(3,1) CI of a
  given half-width. Resampling: m videos (or m clinicians with all their videos) drawn with replacement from the
  pilot, the percentile CI's half-width at each m. Analytic: Bonett (2002), n = 1 + 8 z^2 (1 - rho)^2
  (1 + (k - 1) rho)^2 / (k (k - 1) w^2), w the full CI width, k = 2 (judge and gold).
- `plan_difference`: the videos (clinicians) to detect an ICC difference between two judges at a power and
  level: the paired difference's spread at each m (both judges on the same draw), power = P(|N(delta, sd)| > z sd).
  Analytic: the large-sample ICC variance behind Bonett's formula for each judge, their correlation taken from
  the pilot's paired resamples.
- `plan_labels`: the expert labels a PPI++ estimate of a mean needs for a CI half-width, against the
  experts-only estimate: the PPI++ variance with the pilot's moments at each n (closed form, no resampling).

Resampling at size m extrapolates the pilot: it assumes the pilot's videos (clinicians) are representative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import norm

from mis_bench_dataset.dimensions import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_CONFIDENCE,
    DEFAULT_SEED,
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
)
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric.bootstrap import bootstrap_blocks, percentile_ci, point_blocks
from mis_icc_metric.estimates import PURPOSE  # noqa: F401 - re-exported: the commands say what they are for
from mis_icc_metric.ppi import normal_quantile
from mis_icc_metric.resampling import clinician_clusters, design_effect, make_resampling
from mis_icc_metric.scoring import MIN_ITEMS

Key = tuple[str, str]
# Sizes tried: a geometric grid up to this multiple of the pilot (beyond it the pilot says too little).
MAX_SCALE = 50
GRID_POINTS = 28
MIN_PILOT_VIDEOS = 10


def bonett_sample_size(icc: float, width: float, *, raters: int = 2, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """Bonett (2002, Statistics in Medicine 21:1331-1335), eq. 4: subjects for an ICC CI of full width `width`."""
    if not 0 < width < 2 or raters < 2:
        raise UsageError(f"Bonett's formula needs a width in (0, 2) and at least 2 raters, got {width}, {raters}")
    z = normal_quantile(confidence)
    k, rho = raters, float(np.clip(icc, 0.0, 1.0))
    n = 1 + 8 * z**2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1) * width**2)
    return int(np.ceil(n))


def icc_variance_factor(icc: float, raters: int = 2) -> float:
    """(n - 1) x the large-sample variance of an ICC estimate, the quantity Bonett's formula inverts:
    2 (1 - rho)^2 (1 + (k - 1) rho)^2 / (k (k - 1))."""
    rho, k = float(np.clip(icc, 0.0, 1.0)), raters
    return 2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1))


class SizedDraws:
    """A resampling plan of B resamples of `size` units drawn with replacement from the pilot's C units
    (videos, or clinicians with all their videos): what `bootstrap_blocks` consumes (`shape`, `counts(rows)`),
    drawn chunk by chunk as multinomial counts so a large `size` costs no (B x size) index matrix."""

    def __init__(self, clusters: np.ndarray, n_clusters: int, size: int, n_resamples: int, seed: int | None):
        self.clusters, self.n_clusters, self.size = clusters, n_clusters, size
        self.shape = (n_resamples, clusters.size)
        self._seed = seed

    def counts(self, rows: slice) -> np.ndarray:
        start = rows.start or 0
        rng = np.random.default_rng([self._seed or 0, self.size, start])
        stop = min(rows.stop, self.shape[0]) if rows.stop is not None else self.shape[0]
        drawn = rng.multinomial(self.size, np.full(self.n_clusters, 1 / self.n_clusters), size=stop - start)
        return drawn.astype(np.float64)[:, self.clusters]


def _pilot(predictions: Sequence[Mapping[Key, float | None]], references: Mapping[Key, float]):
    """(videos, keys, ratings (n, D * J, 2) gold and judge j, valid (n, D * J)): every judge on the videos
    all of them scored with gold, per dimension."""
    keys = [k for k in DIMENSION_KEYS if any((v, k) in references for v, _ in predictions[0])]
    videos = sorted(
        {v for v, _ in references if all(any(p.get((v, k)) is not None for k in keys) for p in predictions)}
    )
    if len(videos) < MIN_PILOT_VIDEOS:
        raise DataError(
            f"the pilot has {len(videos)} videos with gold and predictions; planning needs at least {MIN_PILOT_VIDEOS}",
            hint="score a larger pilot (the same video ids in predictions and references)",
        )
    n, d, j = len(videos), len(keys), len(predictions)
    ratings = np.full((n, d * j, 2), np.nan)
    for b, judge in enumerate(predictions):
        for c, key in enumerate(keys):
            for i, video in enumerate(videos):
                gold, value = references.get((video, key)), judge.get((video, key))
                if gold is not None and value is not None:
                    ratings[i, b * d + c] = (gold, value)
    valid = ~np.isnan(ratings).any(axis=2)
    paired = valid.reshape(n, j, d).all(axis=1)  # a video counts for a dimension when every judge scored it
    return videos, keys, ratings, np.tile(paired, (1, j))


def _units(videos: list[str], unit: str) -> tuple[np.ndarray, int, float]:
    """(unit code of each video, number of units, videos per unit) for "video" or "clinician"."""
    if unit == "video":
        return np.arange(len(videos)), len(videos), 1.0
    names, codes = np.unique(np.asarray(clinician_clusters(videos), dtype=object), return_inverse=True)
    return codes, names.size, len(videos) / names.size


def _grid(n_units: int) -> np.ndarray:
    return np.unique(np.geomspace(2, MAX_SCALE * n_units, GRID_POINTS).round().astype(int))


def _replicates(ratings, valid, clusters, n_units, size, n_resamples, seed) -> np.ndarray:
    return bootstrap_blocks(ratings, valid, SizedDraws(clusters, n_units, size, n_resamples, seed))["icc"]


def _smallest(grid: np.ndarray, values: np.ndarray, target: float, *, rising: bool) -> list[int | None]:
    """Per column of `values` (sizes x D): the smallest size from which on every larger grid size meets `target`
    (a value at most `target`, or at least it when `rising`), interpolated between the two grid sizes around it
    on log scales (a spread falls as 1/sqrt(m)); None when the largest grid size does not meet it."""
    out: list[int | None] = []
    for column in values.T:
        ok = column >= target if rising else column <= target
        if not ok[-1]:
            out.append(None)
            continue
        first = int(np.flatnonzero(~ok)[-1] + 1) if (~ok).any() else 0
        if first == 0:
            out.append(int(grid[0]))
            continue
        (m0, m1), (v0, v1) = grid[first - 1 : first + 1], column[first - 1 : first + 1]
        if rising:  # power: interpolate its probit (linear in sqrt(m) under the normal approximation)
            v0, v1, goal = norm.ppf(np.clip([v0, v1, target], 1e-9, 1 - 1e-9))
            at = m0 + (m1 - m0) * (goal - v0) / (v1 - v0) if v1 != v0 else m1
        else:
            at = np.exp(np.log(m0) + np.log(m1 / m0) * np.log(target / v0) / np.log(v1 / v0)) if v1 < v0 else m1
        out.append(int(np.ceil(np.clip(at, m0, m1))))
    return out


def _header(unit: str, n_resamples: int, seed, confidence: float, videos, n_units: int, per_unit: float) -> dict:
    return {
        "resampling": {
            "unit": unit,
            "n_resamples": n_resamples,
            "seed": seed,
            "method": f"m {unit}s drawn with replacement from the pilot's {n_units}"
            + (" (each with all its videos)" if unit == "clinician" else "")
            + f" at each size m on a geometric grid up to {MAX_SCALE}x the pilot (interpolated between sizes);"
            f" percentile {confidence:.0%} CIs",
        },
        "pilot": {
            "n_videos": len(videos),
            "n_units": n_units,
            "videos_per_clinician": per_unit if unit == "clinician" else len(videos) / _units(videos, "clinician")[1],
        },
        "confidence": confidence,
    }


def plan_icc(
    predictions: Mapping[Key, float | None],
    references: Mapping[Key, float],
    *,
    half_width: float,
    unit: str = "clinician",
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int | None = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """Videos (clinicians) for a judge's ICC(3,1) CI of half-width `half_width`, per dimension."""
    if not 0 < half_width < 1:
        raise UsageError(f"the half-width is in ICC units, in (0, 1); got {half_width}")
    videos, keys, ratings, valid = _pilot([predictions], references)
    clusters, n_units, per_unit = _units(videos, unit)
    grid = _grid(n_units)
    widths = np.empty((grid.size, len(keys)))
    for g, size in enumerate(grid):
        bounds = percentile_ci(_replicates(ratings, valid, clusters, n_units, size, n_resamples, seed), confidence)
        widths[g] = (bounds[:, 1] - bounds[:, 0]) / 2
    needed = _smallest(grid, widths, half_width, rising=False)
    icc = point_blocks(ratings, valid)["icc"]
    effect = _design_effect(ratings, valid, videos, n_resamples, seed)
    header = _header(unit, n_resamples, seed, confidence, videos, n_units, per_unit)
    vpc = header["pilot"]["videos_per_clinician"]
    dims = {}
    for c, key in enumerate(keys):
        bonett = bonett_sample_size(icc[c], 2 * half_width, confidence=confidence)
        units = needed[c]
        n_videos = None if units is None else int(np.ceil(units * (per_unit if unit == "clinician" else 1)))
        dims[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "pilot_icc": float(icc[c]),
            "pilot_half_width": float(np.interp(len(videos) if unit == "video" else n_units, grid, widths[:, c])),
            "videos": n_videos,
            "clinicians": None if units is None else (units if unit == "clinician" else int(np.ceil(units / vpc))),
            "bonett_videos": bonett,
            "design_effect": float(effect[c]),
            "bonett_clinicians": int(np.ceil(bonett * effect[c] / vpc)) if np.isfinite(effect[c]) else None,
        }
    return {**header, "half_width": half_width, "dimensions": dims, "note": _NOTE}


_NOTE = (
    "resampling extrapolates the pilot (its videos and clinicians stand for the population); Bonett's n treats "
    "videos as independent, and x design effect / videos per clinician gives clinicians"
)


def _design_effect(ratings, valid, videos, n_resamples, seed) -> np.ndarray:
    reps = [
        bootstrap_blocks(ratings, valid, make_resampling(videos, n_resamples, seed, unit))["icc"]
        for unit in ("clinician", "video")
    ]
    return design_effect(*reps)


def plan_difference(
    predictions_a: Mapping[Key, float | None],
    predictions_b: Mapping[Key, float | None],
    references: Mapping[Key, float],
    *,
    difference: float,
    power: float = 0.8,
    level: float = 0.05,
    unit: str = "clinician",
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int | None = DEFAULT_SEED,
) -> dict:
    """Videos (clinicians) for a two-sided test at `level` to detect ICC(A) - ICC(B) = `difference` with
    `power`, per dimension, the two judges resampled together (paired)."""
    if not 0 < abs(difference) < 2 or not 0 < power < 1 or not 0 < level < 1:
        raise UsageError("the difference is in ICC units in (0, 2); power and level in (0, 1)")
    videos, keys, ratings, valid = _pilot([predictions_a, predictions_b], references)
    d = len(keys)
    if np.array_equal(ratings[:, :d], ratings[:, d:], equal_nan=True):
        raise DataError("the two judges give the same score to every pilot video", hint="compare two different judges")
    clusters, n_units, per_unit = _units(videos, unit)
    grid = _grid(n_units)
    z = norm.ppf(1 - level / 2)
    powers = np.empty((grid.size, d))
    for g, size in enumerate(grid):
        reps = _replicates(ratings, valid, clusters, n_units, size, n_resamples, seed)
        sd = np.nanstd(reps[:, :d] - reps[:, d:], axis=0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):  # sd 0: the judges never differ; power undefined
            shift = np.where(sd > 0, abs(difference) / sd, np.nan)
        powers[g] = norm.cdf(shift - z) + norm.cdf(-shift - z)
    needed = _smallest(grid, powers, power, rising=True)
    icc = point_blocks(ratings, valid)["icc"]
    pilot_reps = bootstrap_blocks(ratings, valid, make_resampling(videos, n_resamples, seed, "video"))["icc"]
    header = _header(unit, n_resamples, seed, 1 - level, videos, n_units, per_unit)
    vpc = header["pilot"]["videos_per_clinician"]
    z_power = norm.ppf(power)
    dims = {}
    for c, key in enumerate(keys):
        a, b = pilot_reps[:, c], pilot_reps[:, d + c]
        keep = np.isfinite(a) & np.isfinite(b)
        r = float(np.corrcoef(a[keep], b[keep])[0, 1]) if keep.sum() > 2 else 0.0
        va, vb = icc_variance_factor(icc[c]), icc_variance_factor(icc[d + c])
        analytic = int(np.ceil(1 + (z + z_power) ** 2 * (va + vb - 2 * r * np.sqrt(va * vb)) / difference**2))
        units = needed[c]
        dims[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "pilot_icc_a": float(icc[c]),
            "pilot_icc_b": float(icc[d + c]),
            "replicate_correlation": r,
            "videos": None if units is None else int(np.ceil(units * (per_unit if unit == "clinician" else 1))),
            "clinicians": None if units is None else (units if unit == "clinician" else int(np.ceil(units / vpc))),
            "analytic_videos": analytic,
        }
    return {**header, "difference": difference, "power": power, "level": level, "dimensions": dims, "note": _NOTE}


def plan_labels(
    judge: Mapping[Key, float | None],
    gold: Mapping[Key, float],
    *,
    half_width: float,
    n_judged: int | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """Expert labels for a PPI++ mean's CI of half-width `half_width` (score points) when the judge scores
    `n_judged` videos (default: as many as the pilot's judge did), against the experts-only estimate.

    The pilot's labelled videos give var(y), var(yhat), cov(y, yhat); at n labels of n_judged, PPI++'s
    variance is var(y - lambda yhat) / n + lambda^2 var(yhat) / (n_judged - n) with lambda power-tuned at n.
    """
    if half_width <= 0:
        raise UsageError(f"the half-width is in score points, above 0; got {half_width}")
    z = normal_quantile(confidence)
    dims = {}
    for key in DIMENSION_KEYS:
        pairs = [(gold[k], v) for k, v in judge.items() if k[1] == key and v is not None and k in gold]
        judged = [v for k, v in judge.items() if k[1] == key and v is not None]
        if len(pairs) < MIN_ITEMS:
            continue
        y, yhat = np.array(pairs).T
        total = n_judged or len(judged)
        var_y, var_hat, cov = y.var(), np.var(judged, ddof=1), np.mean((y - y.mean()) * (yhat - yhat.mean()))
        n = np.arange(2, total)
        unl = total - n
        lam = np.clip(cov / ((1 + n / unl) * var_hat), 0.0, 1.0)
        half = z * np.sqrt((var_y - 2 * lam * cov + lam**2 * yhat.var()) / n + lam**2 * var_hat / unl)
        ok = half <= half_width
        classical = int(np.ceil((z * np.sqrt(var_y) / half_width) ** 2))
        dims[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "n_pilot_labelled": int(y.size),
            "n_judged": int(total),
            "ppi_labels": int(n[np.argmax(ok)]) if ok.any() else None,
            "classical_labels": classical,
        }
    if not dims:
        raise DataError(
            f"no dimension has {MIN_ITEMS} videos with both gold and a judge score", hint="label a pilot first"
        )
    return {
        "half_width": half_width,
        "confidence": confidence,
        "dimensions": dims,
        "method": "PPI++ variance at each label count with the pilot's moments (lambda tuned per count)",
    }


__all__ = [
    "bonett_sample_size",
    "icc_variance_factor",
    "plan_icc",
    "plan_difference",
    "plan_labels",
    "SizedDraws",
]
