"""How big an evaluation must be (`mis-bench plan`), from a pilot run: predictions and gold on a few videos.

Three questions, each answered for a stated study (`StudyDesign`: videos per clinician, the clinicians that
exist, how its CI resamples), never the pilot's own clustering, and as totals and as how many more than the pilot:

- `plan_icc`: the videos and clinicians for a judge's ICC(3,1) CI of a given half-width. The headline resamples
  the pilot: m videos drawn with replacement at each size m, the percentile CI's half-width there, its variance
  times the design effect at the study's videos per clinician, 1 + (m - 1) rho, rho the within-clinician
  correlation of the ICC's per-video (delta-method) terms in the pilot. Beside it: Bonett (2002),
  n = 1 + 8 z^2 (1 - rho)^2 (1 + (k - 1) rho)^2 / (k (k - 1) w^2), w the full CI width, k = 2 (judge and gold),
  times the same design effect. Past the clinicians available the size is withheld and the half-width all of
  them reach is given.
- `plan_difference`: the videos and clinicians to detect an ICC difference between two judges at a power and
  level: the paired difference's spread at each m (both judges on the same draw) times the design effect of the
  paired terms, power = P(|N(delta, sd)| > z sd). Beside it: the large-sample ICC variance behind Bonett's
  formula for each judge, their correlation taken from the pilot's paired resamples.
- `plan_labels`: the expert labels a PPI++ estimate of a mean needs for a CI half-width, against the
  experts-only estimate: the PPI++ variance with the pilot's moments at each n (closed form, no resampling).

The `icc` and `difference` sizes come with the range the pilot allows: the variance they scale recomputed in
clinician resamples of the pilot (`variance_draws`), the central `PLAN_RANGE` of them. A pilot under the reporting floor
(`reporting_floor`: videos, clinicians, labelled videos), a rater without spread, or too few clinicians with
two videos to estimate the clustering gives no size: the reason instead. Resampling at size m extrapolates the
pilot: it assumes the pilot's videos are representative.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri  # the normal CDF and quantile (scipy.stats.norm's, without its import)

from mis_bench_dataset.dimensions import DEFAULT_VIDEOS_PER_CLINICIAN, DIMENSION_BY_KEY, DIMENSION_KEYS, N_CLINICIANS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric.bootstrap import (
    block_features,
    block_means,
    bootstrap_blocks,
    one_blas_thread,
    percentile_ci,
    point_blocks,
    resample_counts,
    statistics_from_sums,
)
from mis_icc_metric.estimates import PURPOSE  # noqa: F401 - re-exported: the commands say what they are for
from mis_icc_metric.ppi import normal_quantile
from mis_icc_metric.reporting_floor import (
    MIN_CI_CLUSTERS,
    MIN_CI_VIDEOS,
    MIN_LABELLED_VIDEOS,
    Support,
    floor_description,
    guarded_interval,
    withhold_reason,
)
from mis_icc_metric.resampling import check_unit, clinician_clusters, make_resampling
from mis_icc_metric.resampling_threads import share_out

Key = tuple[str, str]
# Sizes tried: a geometric grid up to this multiple of the pilot (beyond it the pilot says too little).
MAX_SCALE = 50
GRID_POINTS = 28


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


# A draw of more than this many per unit starts from Poisson counts (one Poisson draw a unit, a few index draws
# to complete it), a smaller one is indices drawn and counted (one draw an index): a Poisson draw by inversion
# (`_poisson_counts`) costs about two counted index draws (`np.add.at`).
_POISSON_PER_UNIT = 2
# Index draws made at a time (bounds the memory of an index matrix).
_DRAW_CELLS = 1 << 21
# Resamples drawn together through every size of a plan's grid.
_SIZED_CHUNK = 1000
# Replicates (resamples x blocks x sizes) a plan holds at once: 64 MiB of float64.
_REPLICATE_CELLS = 1 << 23
# Draws a resample at most a size's increment may have for its features' sums to be gathered: this share of the
# pilot's videos (a gather of a draw's features costs about as much as this many rows of the count product).
_GATHER_SHARE = 32
# Buckets of the guide table `_poisson_counts` starts its search from (a bucket holds few CDF steps).
_GUIDE_BUCKETS = 4096


def _add_draws(rng: np.random.Generator, counts: np.ndarray, size: int) -> np.ndarray | None:
    """Add to each row of `counts` (rows, n units; C-contiguous float64) how often each unit is drawn in `size`
    draws with replacement, uniformly: exactly Multinomial(size, 1 / n) a row, in place.

    Many draws a unit: independent Poisson counts of mean (size - 3 sqrt(size)) / n, which given their total S
    are Multinomial(S, 1 / n), completed by size - S index draws (a row whose S passes `size`, about one in 700,
    is drawn again as a multinomial): Multinomial(size, 1 / n) whatever S, at one Poisson draw a unit.

    Returns the (rows, size) units drawn where they came as one index matrix (`_add_indices`), else None."""
    n_rows, n_units = counts.shape
    if size <= _POISSON_PER_UNIT * n_units:
        return _add_indices(rng, counts, np.full(n_rows, size, dtype=np.int64))
    drawn = _poisson_counts(rng, counts.shape, (size - 3 * np.sqrt(size)) / n_units)
    total = drawn.sum(axis=1)
    over = total > size
    if over.any():
        drawn[over] = rng.multinomial(size, np.full(n_units, 1 / n_units), size=int(over.sum()))
        total[over] = size
    counts += drawn
    _add_indices(rng, counts, (size - total).astype(np.int64))
    return None


def _poisson_counts(rng: np.random.Generator, shape: tuple[int, int], mean: float) -> np.ndarray:
    """Independent Poisson(`mean`) counts (float64) by inversion: a uniform u in [0, 1) becomes the number of
    CDF values at most u (scipy's `pdtr`, to where it reaches 1.0 in float64, so no u falls past the table).
    A guide table of `_GUIDE_BUCKETS` buckets gives each u the count at its bucket's lower edge, which is its
    count unless a CDF step lies between (a few per cent: searched exactly). About a sixth of numpy's
    `Generator.poisson` on the benchmark's means (5 to 15)."""
    from scipy.special import pdtr

    length = int(mean + 40 * np.sqrt(mean) + 40)
    cdf = pdtr(np.arange(length), mean)
    while cdf[-1] < 1.0:  # the table must reach 1.0 (no u in [0, 1) past it)
        length *= 2
        cdf = pdtr(np.arange(length), mean)
    cdf = cdf[: int(np.argmax(cdf >= 1.0)) + 1]
    guide = np.searchsorted(cdf, np.arange(_GUIDE_BUCKETS) / _GUIDE_BUCKETS, side="right")
    u = rng.random(shape).reshape(-1)
    drawn = guide[(u * _GUIDE_BUCKETS).astype(np.intp)]
    past = np.flatnonzero(cdf[drawn] <= u)
    drawn[past] = np.searchsorted(cdf, u[past], side="right")
    return drawn.reshape(shape).astype(np.float64)


def _add_indices(rng: np.random.Generator, counts: np.ndarray, per_row: np.ndarray) -> np.ndarray | None:
    """Add `per_row[r]` uniform draws of a unit to row r of `counts`, in place (indices drawn and counted).

    Returns the (rows, draws) units drawn when every row drew as many, in one index matrix; else None."""
    n_rows, n_units = counts.shape
    flat = counts.reshape(-1)
    offsets = (np.arange(n_rows, dtype=np.intp) * n_units)[:, None]  # intp: what np.add.at indexes with
    most = int(per_row.max()) if per_row.size else 0
    step = max(1, _DRAW_CELLS // max(n_rows, 1))
    units = None
    for done in range(0, most, step):
        width = min(step, most - done)
        units = rng.integers(0, n_units, size=(n_rows, width), dtype=np.intp)
        drawn = units + offsets
        short = per_row < done + width
        drawn = drawn[np.arange(done, done + width)[None] < per_row[:, None]] if short.any() else drawn.ravel()
        if drawn.size < 2 * flat.size:  # up to two a cell: added one by one (numpy 2's fast `add.at`), else counted
            np.add.at(flat, drawn, 1.0)
        else:
            flat += np.bincount(drawn, minlength=flat.size)
    return units if 0 < most <= step and (per_row == most).all() else None


class SizedDraws:
    """A resampling plan of B resamples of `size` units drawn with replacement from the pilot's C units
    (videos, or clinicians with all their videos): what `bootstrap_blocks` consumes (`shape`, `counts(rows)`),
    drawn chunk by chunk as counts (`_add_draws`) so a large `size` costs no (B x size) index matrix."""

    def __init__(self, clusters: np.ndarray, n_clusters: int, size: int, n_resamples: int, seed: int | None):
        self.clusters, self.n_clusters, self.size = clusters, n_clusters, size
        self.shape = (n_resamples, clusters.size)
        self._seed = seed

    def counts(self, rows: slice) -> np.ndarray:
        start = rows.start or 0
        rng = np.random.default_rng([self._seed or 0, self.size, start])
        stop = min(rows.stop, self.shape[0]) if rows.stop is not None else self.shape[0]
        counts = np.zeros((stop - start, self.n_clusters))
        _add_draws(rng, counts, self.size)
        return counts[:, self.clusters]


def _sized_summaries(ratings: np.ndarray, valid: np.ndarray, grid: np.ndarray, draws: tuple[int, int | None], summary):
    """(sizes, ...) `summary` of the (B, D) replicates of each block's ICC(3,1) with m of the pilot's n videos
    drawn with replacement, at each size m of the increasing `grid` (`draws`: B resamples a size and the seed).

    Nested: a resample at size m is its draw at the size before plus m minus that many fresh draws, so at every
    size its counts are exactly Multinomial(m, 1 / n), the draw a separate resample at that size makes (each
    size's percentile CI means what it did); the sizes share their draws (common random numbers, a smoother
    curve), and drawing them costs the largest size rather than the sum of all. The replicates of at most
    `_REPLICATE_CELLS` are held at once: past that the sizes go in groups, each drawing its chunks again from
    their seeds (the same draws, whatever the grouping). As `bootstrap_blocks` computes them, with its features
    built once and each chunk's statistics computed for all its sizes at once (one call, not one a size)."""
    n_resamples, seed = draws
    n, blocks = ratings.shape[:2]
    features, layout = block_features(ratings, valid)
    per_group = max(1, _REPLICATE_CELLS // max(n_resamples * blocks, 1))
    out = []
    with one_blas_thread():
        for first in range(0, len(grid), per_group):
            last = min(first + per_group, len(grid))
            replicates = np.empty((last - first, n_resamples, blocks))

            def one_chunk(start: int, first: int = first, last: int = last, replicates=replicates) -> None:
                stop = min(start + _SIZED_CHUNK, n_resamples)
                rng = np.random.default_rng([seed or 0, start])
                counts, drawn = np.zeros((stop - start, n)), 0
                sums = np.empty((last - first, stop - start, features.shape[1]))
                running = np.zeros(sums.shape[1:])  # the sums while every draw so far is a few indices
                for g in range(last):
                    picked = _add_draws(rng, counts, int(grid[g]) - drawn)
                    drawn = int(grid[g])
                    running = _gathered(running, picked, features)
                    if g >= first and running is not None:
                        sums[g - first] = running
                    elif g >= first:
                        np.matmul(counts, features, out=sums[g - first])
                icc = statistics_from_sums(sums.reshape(-1, features.shape[1]), blocks, layout)["icc"]
                replicates[:, start:stop] = icc.reshape(last - first, stop - start, blocks)

            # Each chunk draws from its own seed and writes its own resamples: shared out over the cores.
            share_out(range(0, n_resamples, _SIZED_CHUNK), one_chunk)
            out += [summary(size_replicates) for size_replicates in replicates]
    return np.array(out)


def _gathered(running: np.ndarray | None, picked: np.ndarray | None, features: np.ndarray) -> np.ndarray | None:
    """`running` (resamples x F sums of the features of every unit drawn so far) plus those of `picked` (the
    units just drawn, resamples x draws), while the draws are few (`_GATHER_SHARE`): summing their features
    costs less than the product of the whole count matrix. None from the first larger draw on (the product)."""
    if running is None or picked is None or picked.shape[1] * _GATHER_SHARE > features.shape[0]:
        return None
    for at in range(0, picked.shape[1], 8):  # over a few draws at a time, each vectorised over the resamples
        running += features[picked[:, at : at + 8]].sum(axis=1)
    return running


@dataclass(frozen=True)
class StudyDesign:
    """The study a plan sizes, stated rather than read off the pilot (a pilot's own videos per clinician is
    rarely the study's: a 10% pilot has about 1.8, the benchmark 12.8).

    videos_per_clinician: the clustering the study's CI will carry (`DEFAULT_VIDEOS_PER_CLINICIAN`).
    clinicians: the clinicians that exist, the pilot's included: a plan never asks for more (`N_CLINICIANS`).
    unit: how the study's CI will resample: "clinician" (each with all its videos), or "video" as if independent.
    """

    videos_per_clinician: float = DEFAULT_VIDEOS_PER_CLINICIAN
    clinicians: int = N_CLINICIANS
    unit: str = DEFAULT_RESAMPLE

    def __post_init__(self) -> None:
        check_unit(self.unit)
        if not self.videos_per_clinician >= 1:
            raise UsageError(
                f"videos per clinician must be at least 1, got {self.videos_per_clinician:g}",
                hint="state the videos each clinician of the planned study contributes",
            )
        if self.clinicians < 1:
            raise UsageError(f"the clinicians available must be at least 1, got {self.clinicians}")

    def check_pilot(self, pilot_clinicians: int) -> None:
        """A UsageError when the pilot alone has more clinicians than the study says exist."""
        if pilot_clinicians > self.clinicians:
            raise UsageError(
                f"the pilot already has {pilot_clinicians} clinicians; --clinicians {self.clinicians} counts fewer",
                hint="give every clinician available, the pilot's included",
            )

    def describe(self) -> dict:
        return {
            "videos_per_clinician": float(self.videos_per_clinician),
            "clinicians_available": int(self.clinicians),
            "resample": self.unit,
        }


def _pilot(predictions: Sequence[Mapping[Key, float | None]], references: Mapping[Key, float]):
    """(videos, keys, ratings (n, D * J, 2) gold and judge j, valid (n, D * J)): every judge on the videos
    all of them scored with gold, per dimension. A pilot under the reporting floor (videos, clinicians) is refused."""
    keys = [k for k in DIMENSION_KEYS if any((v, k) in references for v, _ in predictions[0])]
    videos = sorted(
        {v for v, _ in references if all(any(p.get((v, k)) is not None for k in keys) for p in predictions)}
    )
    n_clinicians = len(set(clinician_clusters(videos))) if videos else 0
    reason = withhold_reason(Support(len(videos), n_clinicians, "clinician"), "a planned size")
    if reason:
        raise DataError(
            f"the pilot: {reason} ({len(videos)} video(s) with gold and predictions, {n_clinicians} clinician(s))",
            hint="score a larger pilot, from several clinicians (the same video ids in predictions and references)",
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


def icc_influence(ratings: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(n, D) each video's influence on each block's ICC(3,1) of two raters, 2 cov / (var_0 + var_1): the delta
    method's per-video terms (their mean square over n is the ICC's variance for independent videos; their
    correlation within a clinician is what clustering adds). 0 for a video a block does not use; NaN columns
    where neither rater varies."""
    count = np.maximum(valid.sum(axis=0), 1)
    centred = np.where(valid[..., None], ratings - block_means(ratings, valid)[None], 0.0)
    dy, dx = centred[..., 0], centred[..., 1]
    var_y, var_x, cov = (dy**2).sum(0) / count, (dx**2).sum(0) / count, (dy * dx).sum(0) / count
    total = np.where(var_y + var_x > 0, var_y + var_x, np.nan)
    icc = 2 * cov / total
    return np.where(valid, (2 * dy * dx - icc * (dy**2 + dx**2)) / total, 0.0)


def clinician_correlation(influence: np.ndarray, valid: np.ndarray, clusters: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per column: (rho, clinicians with two or more of its videos, videos of those clinicians). rho is the mean
    product of two videos' influences within a clinician over their mean square (Kish's intraclass correlation
    of the estimator's terms): at m videos per clinician the ICC's variance is (1 + (m - 1) rho) times the
    independent one. NaN where no clinician has two videos or the influences do not vary."""
    groups = np.zeros((int(clusters.max()) + 1, clusters.size))
    groups[clusters, np.arange(clusters.size)] = 1.0
    sums, squares, counts = groups @ influence, groups @ influence**2, groups @ valid.astype(np.float64)
    pairs = (counts * (counts - 1)).sum(axis=0)
    mean_square = squares.sum(axis=0) / np.maximum(counts.sum(axis=0), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where((pairs > 0) & (mean_square > 0), (sums**2 - squares).sum(axis=0) / pairs / mean_square, np.nan)
    return rho, (counts >= 2).sum(axis=0), np.where(counts >= 2, counts, 0).sum(axis=0).astype(int)


def variance_draws(ratings: np.ndarray, valid: np.ndarray, clusters: np.ndarray, weights: np.ndarray, m: float):
    """(B, D) the ICC's variance per video at m videos per clinician, sigma^2 (1 + (m - 1) rho) (m = 1: sigma^2
    alone), recomputed in each clinician resample of the pilot (`weights`: (B, C) how often each clinician is
    drawn): how far the pilot pins what a plan scales. With 2D blocks of two judges on the same videos
    (`plan_difference`), pass `valid` of the first D only: the variance is then that of their paired difference.
    NaN where a resample leaves it undefined. Computed `_VARIANCE_ROWS` resamples at a time (each resample's
    numbers are its own), so the (resamples x videos) temporaries stay in cache, on one BLAS thread (its products
    are skinny)."""
    rows = range(0, weights.shape[0], _VARIANCE_ROWS)
    with one_blas_thread():
        chunks = [_variance_chunk(ratings, valid, clusters, weights[at : at + _VARIANCE_ROWS], m) for at in rows]
    return np.concatenate([np.full((0, valid.shape[1]), np.nan), *chunks])


# Resamples `variance_draws` computes at a time (128 x 996 videos: 1 MB a temporary). With one BLAS thread this
# took a third of the CPU of all 1,000 at once on BLAS's threads, on 2 loaded cores (0.17 s against 0.55 s).
_VARIANCE_ROWS = 128


def _variance_chunk(ratings: np.ndarray, valid: np.ndarray, clusters: np.ndarray, weights: np.ndarray, m: float):
    """`variance_draws` for the resamples of `weights` (a chunk of its rows)."""
    n_blocks = valid.shape[1]
    out = np.full((weights.shape[0], n_blocks), np.nan)
    for c in range(n_blocks):  # a few dimensions; the resamples are vectorised
        use = valid[:, c]
        group = clusters[use]
        w = np.ascontiguousarray(weights[:, group])  # fancy indexing leaves it column-major: slower passes
        influence = _resampled_influence(ratings[use, c], w)
        if ratings.shape[1] > n_blocks:  # paired: the second judge's block of the same dimension
            influence = influence - _resampled_influence(ratings[use, n_blocks + c], w)
        members = np.zeros((group.size, weights.shape[1]))
        members[np.arange(group.size), group] = 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            sums, squares, sizes = influence @ members, influence**2 @ members, members.sum(axis=0)
            sigma2 = (weights * squares).sum(1) / (weights * sizes).sum(1)
            pairs = (weights * sizes * (sizes - 1)).sum(1)
            rho = (weights * (sums**2 - squares)).sum(1) / pairs / sigma2
        out[:, c] = sigma2 * (design_effect_at(rho, m) if m > 1 else 1.0)
    return out


def _resampled_influence(pairs: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(B, n) `icc_influence` of one block's (n, 2) gold and judge in each resample weighted by `w` (B, n)."""
    total = w.sum(axis=1, keepdims=True)
    dy = pairs[:, 0] - (w @ pairs[:, 0])[:, None] / total  # weighted sums as products: one pass each
    dx = pairs[:, 1] - (w @ pairs[:, 1])[:, None] / total
    both, spread = dy * dx, dy * dy + dx * dx
    with np.errstate(invalid="ignore", divide="ignore"):
        var_sum = np.einsum("ij,ij->i", w, spread)[:, None] / total
        icc = 2 * np.einsum("ij,ij->i", w, both)[:, None] / total / var_sum
        return (2 * both - icc * spread) / var_sum


def design_effect_at(rho: np.ndarray, videos_per_clinician: float) -> np.ndarray:
    """1 + (m - 1) rho, rho clipped to [0, 1]: a pilot's negative estimate does not promise a narrower CI."""
    return 1 + (videos_per_clinician - 1) * np.clip(rho, 0.0, 1.0)


def _grid(n_units: int) -> np.ndarray:
    return np.unique(np.geomspace(2, MAX_SCALE * n_units, GRID_POINTS).round().astype(int))


def _smallest(grid: np.ndarray, values: np.ndarray, target, *, rising: bool) -> list[int | None]:
    """Per column of `values` (sizes x D): the smallest size from which on every larger grid size meets its
    `target` (a scalar or one per column; a value at most the target, or at least it when `rising`), interpolated
    between the two grid sizes around it on log scales (a spread falls as 1/sqrt(m)); None when the largest grid
    size does not meet it."""
    out: list[int | None] = []
    for column, goal in zip(values.T, np.broadcast_to(np.asarray(target, dtype=float), values.shape[1:]), strict=True):
        ok = column >= goal if rising else column <= goal
        if not ok[-1]:
            out.append(None)
            continue
        first = int(np.flatnonzero(~ok)[-1] + 1) if (~ok).any() else 0
        if first == 0:
            out.append(int(grid[0]))
            continue
        (m0, m1), (v0, v1) = grid[first - 1 : first + 1], column[first - 1 : first + 1]
        if rising:  # power: interpolate its probit (linear in sqrt(m) under the normal approximation)
            v0, v1, goal = ndtri(np.clip([v0, v1, goal], 1e-9, 1 - 1e-9))
            at = m0 + (m1 - m0) * (goal - v0) / (v1 - v0) if v1 != v0 else m1
        else:
            at = np.exp(np.log(m0) + np.log(m1 / m0) * np.log(goal / v0) / np.log(v1 / v0)) if v1 < v0 else m1
        out.append(int(np.ceil(np.clip(at, m0, m1))))
    return out


def _settled(spreads: np.ndarray) -> np.ndarray:
    """Per column of `spreads` (sizes x D: half-widths or SDs), what a size can promise: the largest at it or any
    larger size (a resampled curve wobbles), so the size planned and the half-width (power) reachable with every
    clinician read one monotone curve and never contradict each other."""
    return np.maximum.accumulate(spreads[::-1], axis=0)[::-1]


def _reachable_videos(design: StudyDesign) -> int:
    """The most videos the clinicians available give at the stated videos per clinician (whole videos, never
    more clinicians than exist)."""
    return int(np.floor(design.clinicians * design.videos_per_clinician + 1e-9))


def _spread_at(grid: np.ndarray, column: np.ndarray, size: float) -> float:
    """A spread (a half-width, an SD) at `size` from its values on the grid: log-log interpolation, and past the
    grid the last value scaled by 1/sqrt(size)."""
    if size >= grid[-1]:
        return float(column[-1] * np.sqrt(grid[-1] / size))
    return float(np.exp(np.interp(np.log(size), np.log(grid), np.log(np.maximum(column, 1e-300)))))


def _header(design: StudyDesign, n_resamples: int, seed, confidence: float, videos) -> dict:
    clinicians = len(set(clinician_clusters(videos)))
    return {
        "resampling": {
            "unit": "video",
            "n_resamples": n_resamples,
            "seed": seed,
            "method": "m videos drawn with replacement from the pilot's "
            f"{len(videos)} at each size m on a geometric grid up to {MAX_SCALE}x the pilot (interpolated between "
            "sizes; each resample's draw at a size extends its draw at the size before); percentile "
            f"{confidence:.0%} CIs"
            + (
                f"; their variance times the design effect at {design.videos_per_clinician:.1f} videos per "
                "clinician (1 + (m - 1) rho, rho the within-clinician correlation of the ICC's per-video terms in "
                "the pilot)"
                if design.unit == "clinician"
                else "; the study's CI treats videos as independent (no design effect), too narrow where "
                "clinicians differ"
            ),
        },
        "pilot": {
            "n_videos": len(videos),
            "n_clinicians": clinicians,
            "videos_per_clinician": len(videos) / clinicians,
        },
        "design": design.describe(),
        "confidence": confidence,
        "floor": floor_description(),
    }


HEADLINE = {
    "method": "resampling",
    "columns": ["videos", "clinicians"],
    "beside": ["bonett_design_videos", "bonett_clinicians"],
    "why": "the resampled size rests on the pilot's own score distributions, while Bonett's (2002) formula assumes "
    "two exchangeable, normally distributed raters, which a judge that spreads its scores differently from the gold "
    "breaks; both carry the same design effect, so where they part it is that assumption",
}
# Past this ratio between the ends of a plan's range, the output says the pilot pins the size only loosely.
LOOSE_RANGE = 2.0
# Past this ratio between Bonett's size and the headline, the output says the pilot is far from Bonett's model.
BONETT_APART = 1.5


def plan_icc(
    predictions: Mapping[Key, float | None],
    references: Mapping[Key, float],
    *,
    half_width: float,
    design: StudyDesign | None = None,
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int | None = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """Videos and clinicians for a judge's ICC(3,1) CI of half-width `half_width`, per dimension, in the study
    `design` states (videos per clinician, clinicians available, how its CI resamples), and how many more than the
    pilot; withheld with its reason below the reporting floor, for a rater without spread, or past the clinicians
    available (the half-width all of them reach is given instead)."""
    if not 0 < half_width < 1:
        raise UsageError(f"the half-width is in ICC units, in (0, 1); got {half_width}")
    design = design or StudyDesign()
    videos, keys, ratings, valid = _pilot([predictions], references)
    pilot_clusters, n_pilot_clinicians, _ = _units(videos, "clinician")
    design.check_pilot(n_pilot_clinicians)
    grid = _grid(len(videos))
    widths = _settled(_half_widths(ratings, valid, grid, (n_resamples, seed), confidence))
    clustered = design.unit == "clinician"
    influence = icc_influence(ratings, valid)
    rho, with_pairs, pair_videos = clinician_correlation(influence, valid, pilot_clusters)
    effect = design_effect_at(rho, design.videos_per_clinician) if clustered else np.ones(len(keys))
    needed = _smallest(grid, widths, half_width / np.sqrt(np.where(np.isfinite(effect), effect, 1.0)), rising=False)
    icc = point_blocks(ratings, valid)["icc"]
    pilot_reps = bootstrap_blocks(ratings, valid, make_resampling(videos, n_resamples, seed, design.unit))["icc"]
    pilot_bounds = percentile_ci(pilot_reps, confidence)
    header = _header(design, n_resamples, seed, confidence, videos)
    header["range"] = {"level": PLAN_RANGE, "n_resamples": min(n_resamples, RANGE_RESAMPLES), "method": _RANGE}
    spread = _pilot_range_draws(ratings, valid, videos, design, (n_resamples, seed))
    point = np.nanmean(influence**2, axis=0, where=valid) * np.where(np.isfinite(effect), effect, np.nan)
    dims = {}
    for c, key in enumerate(keys):
        facts = _PlanFacts(
            support=Support(int(valid[:, c].sum()), int(len(np.unique(pilot_clusters[valid[:, c]]))), "clinician"),
            spread=float(np.nansum(influence[:, c] ** 2)),
            clustering=(float(rho[c]), int(with_pairs[c]), int(pair_videos[c])),
        )
        entry = _icc_entry(facts, design, header["pilot"], needed[c], float(effect[c]))
        pilot_ci, pilot_facts = guarded_interval(
            pilot_reps[:, c],
            Support(facts.support.n_videos, facts.support.n_clusters, design.unit),
            pilot_bounds[c],
            "the pilot's CI",
        )
        reachable_videos = _reachable_videos(design)
        entry.update(_size_range(spread[:, c] / point[c], facts.support, needed[c], entry, design))
        factors = entry.pop("range_factors")
        usable = entry["design_effect"] is not None
        at_all = _spread_at(grid, widths[:, c], reachable_videos) * float(np.sqrt(effect[c])) if usable else None
        dims[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "pilot_icc": float(icc[c]),
            "pilot_half_width": None if pilot_ci is None else (pilot_ci[1] - pilot_ci[0]) / 2,
            "pilot_half_width_withheld": pilot_facts["withheld"],
            **entry,
            "reachable_videos": reachable_videos if usable else None,
            "reachable_half_width": at_all,
            "reachable_half_width_range": None if factors is None else [at_all * float(np.sqrt(f)) for f in factors],
            **_bonett_beside(
                bonett_sample_size(icc[c], 2 * half_width, confidence=confidence), effect[c], design, usable
            ),
        }
    _refuse_when_nothing_plans(dims)
    return {
        **header,
        "half_width": half_width,
        "headline": HEADLINE,
        "dimensions": dims,
        "warnings": _icc_warnings(dims, design),
        "note": _NOTE,
    }


def _bonett_beside(bonett: int, effect: float, design: StudyDesign, usable: bool) -> dict:
    """Bonett's n for independent videos, times the design effect, and its clinicians; None past the cap, and
    all None where the plan is withheld for its pilot (`usable` False)."""
    if not usable:
        return {"bonett_videos": None, "bonett_design_videos": None, "bonett_clinicians": None}
    videos = int(np.ceil(1 + (bonett - 1) * effect)) if np.isfinite(effect) else None
    clinicians = None if videos is None else int(np.ceil(videos / design.videos_per_clinician))
    if clinicians is not None and clinicians > design.clinicians:  # never past the clinicians available
        videos = clinicians = None
    return {"bonett_videos": bonett, "bonett_design_videos": videos, "bonett_clinicians": clinicians}


# The central share of clinician resamples of the pilot a plan's range spans.
PLAN_RANGE = 0.8
# Clinician resamples of the pilot behind a plan's range (the range is a guide, not a CI: fewer suffice).
RANGE_RESAMPLES = 1000
_RANGE = (
    "the sizes that the ICC's variance at the stated videos per clinician (its delta-method terms and their "
    "within-clinician correlation) would give in the central share of clinician resamples of the pilot: how far "
    "the pilot pins the plan"
)


def _size_range(factors: np.ndarray, support: Support, units: int | None, entry: dict, design: StudyDesign) -> dict:
    """The plan's range over clinician resamples of the pilot: the size scaled by the variance's percentiles over
    its point value, or the reason it is withheld (the reporting rule: floor, undefined resamples)."""
    if entry["design_effect"] is None:
        return {
            "range_factors": None,
            "videos_needed_range": None,
            "clinicians_needed_range": None,
            "range_withheld": None,
        }
    tail = (1 - PLAN_RANGE) / 2
    bounds = np.nanquantile(factors, [tail, 1 - tail]) if np.isfinite(factors).any() else [np.nan, np.nan]
    kept, facts = guarded_interval(factors, support, bounds, "the plan's range")
    if kept is None:
        return {
            "range_factors": None,
            "videos_needed_range": None,
            "clinicians_needed_range": None,
            "range_withheld": facts["withheld"],
        }
    videos = None if units is None else [max(int(np.ceil(units * f)), MIN_CI_VIDEOS) for f in kept]
    return {
        "range_factors": kept,
        "videos_needed_range": videos,
        "clinicians_needed_range": None
        if videos is None
        else [int(np.ceil(v / design.videos_per_clinician)) for v in videos],
        "range_withheld": None,
    }


def _half_widths(ratings, valid, grid: np.ndarray, draws: tuple[int, int | None], confidence: float) -> np.ndarray:
    """(sizes x D) percentile CI half-widths of the ICC with m videos drawn from the pilot at each grid size m
    (`draws`: resamples a size and the seed)."""

    def half_width(replicates: np.ndarray) -> np.ndarray:
        bounds = percentile_ci(replicates, confidence)
        return (bounds[:, 1] - bounds[:, 0]) / 2

    return _sized_summaries(ratings, valid, grid, draws, half_width)


@dataclass(frozen=True)
class _PlanFacts:
    """What one dimension's plan rests on: the pilot's support, the influences' sum of squares (0: no spread)
    and (rho, clinicians with two or more videos, their videos)."""

    support: Support
    spread: float
    clustering: tuple[float, int, int]


def _icc_entry(facts: _PlanFacts, design: StudyDesign, pilot: dict, units: int | None, effect: float) -> dict:
    """One dimension's headline size (videos, clinicians, how many more) or the reason it is withheld."""
    rho, with_pairs, pair_videos = facts.clustering
    entry = {
        "pilot_videos": facts.support.n_videos,
        "pilot_clinicians": facts.support.n_clusters,
        "clinician_correlation": None if np.isnan(rho) else rho,
        "pilot_clinicians_with_pairs": with_pairs,
        "design_effect": None,
        "videos": None,
        "clinicians": None,
        "more_videos": None,
        "more_clinicians": None,
        "withheld": None,
    }
    m = design.videos_per_clinician
    reason = withhold_reason(facts.support, "a planned size")
    if reason is None and not facts.spread > 0:
        reason = "a rater gives every pilot video the same score (no spread): any size would look enough"
    if reason is None and design.unit == "clinician" and m > 1:
        if withhold_reason(Support(pair_videos, with_pairs, "clinician")):
            reason = (
                f"{with_pairs} pilot clinician(s) with two or more videos ({pair_videos} videos); the clustering at "
                f"{m:.1f} videos per clinician needs at least {MIN_CI_CLUSTERS} such clinicians and {MIN_CI_VIDEOS} "
                "videos"
            )
        if reason is None and np.isnan(rho):
            reason = "the pilot's within-clinician correlation is undefined"
    if reason is not None:
        return {**entry, "withheld": reason}
    entry["design_effect"] = effect
    if units is None:
        return {**entry, "withheld": f"more than {MAX_SCALE}x the pilot's videos: the pilot says too little that far"}
    # A study under the reporting floor would have its CI withheld: never plan fewer videos or clinicians.
    units = max(int(units), MIN_CI_VIDEOS)
    clinicians = max(int(np.ceil(units / m)), MIN_CI_CLUSTERS if design.unit == "clinician" else 1)
    if clinicians > design.clinicians:
        return {
            **entry,
            "withheld": f"needs {clinicians} clinicians at {m:.1f} videos each ({units:,} videos); "
            f"{design.clinicians} exist",
        }
    return {
        **entry,
        "videos": int(units),
        "clinicians": clinicians,
        "more_videos": max(0, int(units) - pilot["n_videos"]),
        "more_clinicians": max(0, clinicians - pilot["n_clinicians"]),
    }


def _refuse_when_nothing_plans(dims: dict) -> None:
    """A DataError when every dimension is withheld for its pilot (floor, no spread): nothing to plan from."""
    reasons = [e["withheld"] for e in dims.values()]
    if dims and all(r is not None and not r.startswith(("needs", "more than")) for r in reasons):
        first = next(iter(dims.values()))
        raise DataError(
            f"no dimension can be planned from this pilot ({first['abbreviation']}: {first['withheld']})",
            hint="pilot a judge whose scores vary, with two or more videos of each of several clinicians (or plan at "
            "--videos-per-clinician 1)",
        )


def _icc_warnings(dims: dict, design: StudyDesign) -> list[str]:
    """The plan's caveats in words: past the clinicians available, Bonett far from the headline."""
    warnings = []
    capped = [e for e in dims.values() if e["withheld"] and e["withheld"].startswith("needs")]
    if capped:
        best = ", ".join(
            f"{e['abbreviation']} +/- {e['reachable_half_width']:.3f}"
            if "reachable_half_width" in e
            else f"{e['abbreviation']} power {e['reachable_power'] or 0:.2f}"
            for e in capped
        )
        warnings.append(
            f"{len(capped)} dimension(s) cannot reach the target with the {design.clinicians} clinicians "
            f"available at {design.videos_per_clinician:.1f} videos each; the best reachable: {best}"
        )
    apart = [
        e["abbreviation"]
        for e in dims.values()
        if e["videos"]
        and e.get("bonett_design_videos")
        and max(e["videos"], e["bonett_design_videos"]) > BONETT_APART * min(e["videos"], e["bonett_design_videos"])
    ]
    loose = [
        e["abbreviation"]
        for e in dims.values()
        if e.get("videos_needed_range") and e["videos_needed_range"][1] > LOOSE_RANGE * e["videos_needed_range"][0]
    ]
    if loose:
        warnings.append(
            f"the pilot pins the size only loosely on {', '.join(loose)} (the range's ends differ by more than "
            f"{LOOSE_RANGE:g}x): plan toward its upper end, or pilot more clinicians with two or more videos"
        )
    if apart:
        warnings.append(
            f"Bonett's size and the resampled one differ by more than {BONETT_APART}x on {', '.join(apart)}: the "
            "judge's and the gold's scores are far from Bonett's exchangeable normal raters; use the resampled size"
        )
    return warnings


_NOTE = (
    "the pilot's videos stand for the population's; the planned study has the stated videos per clinician and its "
    "CI the stated resampling; the pilot's videos and clinicians count toward the totals (more: beyond the pilot)"
)


@dataclass(frozen=True)
class DifferenceTarget:
    """What a comparison study must detect: ICC(A) - ICC(B) = `difference` (ICC units) with `power`, by a
    two-sided test at `level`."""

    difference: float
    power: float = 0.8
    level: float = 0.05


def plan_difference(
    predictions_a: Mapping[Key, float | None],
    predictions_b: Mapping[Key, float | None],
    references: Mapping[Key, float],
    target: DifferenceTarget,
    *,
    design: StudyDesign | None = None,
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int | None = DEFAULT_SEED,
) -> dict:
    """Videos and clinicians for a two-sided test at `target.level` to detect ICC(A) - ICC(B) =
    `target.difference` with `target.power`, per dimension, the two judges resampled together (paired), in the
    study `design` states; withheld like `plan_icc`'s sizes (floor, no spread, past the clinicians available)."""
    difference, power, level = target.difference, target.power, target.level
    if not 0 < abs(difference) < 2 or not 0 < power < 1 or not 0 < level < 1:
        raise UsageError("the difference is in ICC units in (0, 2); power and level in (0, 1)")
    design = design or StudyDesign()
    videos, keys, ratings, valid = _pilot([predictions_a, predictions_b], references)
    d = len(keys)
    if np.array_equal(ratings[:, :d], ratings[:, d:], equal_nan=True):
        raise DataError("the two judges give the same score to every pilot video", hint="compare two different judges")
    pilot_clusters, n_pilot_clinicians, _ = _units(videos, "clinician")
    design.check_pilot(n_pilot_clinicians)
    influence = icc_influence(ratings, valid)
    paired = influence[:, :d] - influence[:, d:]
    rho, with_pairs, pair_videos = clinician_correlation(paired, valid[:, :d], pilot_clusters)
    effect = design_effect_at(rho, design.videos_per_clinician) if design.unit == "clinician" else np.ones(d)
    inflate = np.sqrt(np.where(np.isfinite(effect), effect, 1.0))
    grid = _grid(len(videos))
    z = ndtri(1 - level / 2)
    spreads = _settled(_difference_spreads(ratings, valid, grid, (n_resamples, seed)) * inflate)
    needed = _smallest(grid, _power(spreads, difference, z), power, rising=True)
    reachable_videos = _reachable_videos(design)
    spread = _pilot_range_draws(ratings, valid[:, :d], videos, design, (n_resamples, seed))
    point = np.nanmean(paired**2, axis=0, where=valid[:, :d]) * np.where(np.isfinite(effect), effect, np.nan)
    icc = point_blocks(ratings, valid)["icc"]
    pilot_reps = bootstrap_blocks(ratings, valid, make_resampling(videos, n_resamples, seed, "video"))["icc"]
    header = _header(design, n_resamples, seed, 1 - level, videos)
    header["range"] = {"level": PLAN_RANGE, "n_resamples": min(n_resamples, RANGE_RESAMPLES), "method": _RANGE}
    z_power = ndtri(power)
    dims = {}
    for c, key in enumerate(keys):
        r = _replicate_correlation(pilot_reps[:, c], pilot_reps[:, d + c])
        va, vb = icc_variance_factor(icc[c]), icc_variance_factor(icc[d + c])
        facts = _PlanFacts(
            support=Support(int(valid[:, c].sum()), int(len(np.unique(pilot_clusters[valid[:, c]]))), "clinician"),
            spread=float(np.nansum(paired[:, c] ** 2)),
            clustering=(float(rho[c]), int(with_pairs[c]), int(pair_videos[c])),
        )
        entry = _icc_entry(facts, design, header["pilot"], needed[c], float(effect[c]))
        entry.update(_size_range(spread[:, c] / point[c], facts.support, needed[c], entry, design))
        entry.pop("range_factors")
        analytic = 1 + (z + z_power) ** 2 * (va + vb - 2 * r * np.sqrt(va * vb)) / difference**2
        usable = entry["design_effect"] is not None
        at_all = _power(np.array([_spread_at(grid, spreads[:, c], reachable_videos)]), difference, z)[0]
        dims[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "pilot_icc_a": float(icc[c]),
            "pilot_icc_b": float(icc[d + c]),
            "replicate_correlation": r,
            **entry,
            "reachable_videos": reachable_videos if usable else None,
            "reachable_power": float(at_all) if usable and np.isfinite(at_all) else None,
            **{  # the analytic size beside, as Bonett's is beside plan_icc's: analytic_videos, ..._clinicians
                name.replace("bonett", "analytic"): value
                for name, value in _bonett_beside(int(np.ceil(analytic)), effect[c], design, usable).items()
            },
        }
    _refuse_when_nothing_plans(dims)
    return {
        **header,
        "difference": difference,
        "power": power,
        "level": level,
        "headline": {**HEADLINE, "beside": ["analytic_design_videos"]},
        "dimensions": dims,
        "warnings": _icc_warnings(dims, design),
        "note": _NOTE,
    }


def _difference_spreads(ratings, valid, grid: np.ndarray, draws: tuple[int, int | None]) -> np.ndarray:
    """(sizes x D) the SD of the paired ICC difference (first D blocks minus the next D) with m videos drawn
    from the pilot at each grid size m (`draws`: resamples a size and the seed)."""
    d = ratings.shape[1] // 2
    return _sized_summaries(
        ratings, valid, grid, draws, lambda reps: np.nanstd(reps[:, :d] - reps[:, d:], axis=0, ddof=1)
    )


def _pilot_range_draws(ratings, valid, videos: list[str], design: StudyDesign, draws: tuple[int, int | None]):
    """`variance_draws` over min(resamples, `RANGE_RESAMPLES`) clinician resamples of the pilot, at the design's
    videos per clinician (1 where its CI treats videos as independent)."""
    plan = make_resampling(videos, min(draws[0], RANGE_RESAMPLES), draws[1], "clinician")
    m = design.videos_per_clinician if design.unit == "clinician" else 1.0
    return variance_draws(ratings, valid, plan.clusters, resample_counts(plan.draws, plan.n_clusters), m)


def _replicate_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """The correlation of two judges' ICC replicates over the resamples both define (0 where one does not vary)."""
    keep = np.isfinite(a) & np.isfinite(b)
    if keep.sum() <= 2 or not a[keep].std() * b[keep].std() > 0:
        return 0.0
    return float(np.corrcoef(a[keep], b[keep])[0, 1])


def _power(spreads: np.ndarray, difference: float, z: float) -> np.ndarray:
    """P(|N(difference, sd)| > z sd) for each spread sd (NaN where sd is 0: the judges never differ)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(spreads > 0, abs(difference) / spreads, np.nan)
    return ndtr(shift - z) + ndtr(-shift - z)


def plan_labels(
    judge: Mapping[Key, float | None],
    gold: Mapping[Key, float],
    *,
    half_width: float,
    n_judged: int | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """Expert labels for a PPI++ mean's CI of half-width `half_width` (score points) when the judge scores
    `n_judged` videos (default: as many as the pilot's judge did), against the experts-only estimate, and how many
    more than the pilot's; withheld with its reason below `MIN_LABELLED_VIDEOS` labelled pilot videos or where the
    experts' scores do not vary.

    The pilot's labelled videos give var(y), var(yhat), cov(y, yhat); at n labels of n_judged, PPI++'s
    variance is var(y - lambda yhat) / n + lambda^2 var(yhat) / (n_judged - n) with lambda power-tuned at n
    (0 where the judge does not vary: the experts-only estimate).
    """
    if half_width <= 0:
        raise UsageError(f"the half-width is in score points, above 0; got {half_width}")
    z = normal_quantile(confidence)
    dims = {}
    for key in DIMENSION_KEYS:
        pairs = [(gold[k], v) for k, v in judge.items() if k[1] == key and v is not None and k in gold]
        judged = [v for k, v in judge.items() if k[1] == key and v is not None]
        if not pairs:
            continue
        labelled = [k[0] for k, v in judge.items() if k[1] == key and v is not None and k in gold]
        support = Support(len(pairs), _clinician_count(labelled), "labelled")
        entry = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "n_pilot_labelled": len(pairs),
            "n_pilot_clinicians": support.n_clusters,
            "n_judged": int(n_judged or len(judged)),
            "ppi_labels": None,
            "classical_labels": None,
            "more_labels": None,
            "withheld": withhold_reason(support, "a planned label count")
            or withhold_reason(Support(len(pairs), support.n_clusters, "clinician"), "a planned label count"),
        }
        y, yhat = np.array(pairs, dtype=np.float64).T
        if entry["withheld"] is None and not y.var() > 0:
            entry["withheld"] = "the experts give every labelled pilot video the same score: their spread is unknown"
        if entry["withheld"] is None:
            entry.update(_label_counts(y, yhat, np.asarray(judged, dtype=np.float64), entry["n_judged"], half_width, z))
        dims[key] = entry
    floored = [e for e in dims.values() if e["ppi_labels"] is None and e["classical_labels"] is None]
    if len(floored) == len(dims):  # every dimension under the floor (or none scored): nothing to plan from
        first = next(iter(dims.values()), None)
        raise DataError(
            "no dimension can be planned from this pilot"
            + (
                f" ({first['abbreviation']}: {first['withheld']})" if first else ": no video has gold and a judge score"
            ),
            hint=f"label at least {MIN_LABELLED_VIDEOS} pilot videos from at least {MIN_CI_CLUSTERS} clinicians, whose "
            "expert scores vary",
        )
    return {
        "half_width": half_width,
        "confidence": confidence,
        "dimensions": dims,
        "method": "PPI++ variance at each label count with the pilot's moments (lambda tuned per count); labels "
        "drawn at random from the judged videos, videos independent; the pilot's labels count toward the totals",
        "floor": floor_description(),
    }


def _clinician_count(videos: list[str]) -> int | None:
    """The clinicians `videos` come from, or None where their ids name none (then no clinician floor applies)."""
    try:
        return len(set(clinician_clusters(videos)))
    except DataError:
        return None


def _label_counts(y: np.ndarray, yhat: np.ndarray, judged: np.ndarray, total: int, half_width: float, z: float):
    """{"ppi_labels", "classical_labels", "more_labels"} for one dimension from its labelled pairs (y, yhat) and
    the judge's scores on every judged video."""
    var_y, cov = y.var(), np.mean((y - y.mean()) * (yhat - yhat.mean()))
    var_hat = np.var(judged, ddof=1) if judged.size > 1 else 0.0
    n = np.arange(2, total)
    unl = total - n
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var_hat > 0, np.clip(cov / ((1 + n / unl) * max(var_hat, 1e-300)), 0.0, 1.0), 0.0)
    half = z * np.sqrt((var_y - 2 * lam * cov + lam**2 * yhat.var()) / n + lam**2 * var_hat / unl)
    ok = half <= half_width
    ppi = int(n[np.argmax(ok)]) if ok.any() else None
    return {
        "ppi_labels": ppi,
        "classical_labels": int(np.ceil((z * np.sqrt(var_y) / half_width) ** 2)),
        "more_labels": None if ppi is None else max(0, ppi - y.size),
        "withheld": None if ppi is not None else f"more labels than the {total:,} judged videos",
    }


__all__ = [
    "StudyDesign",
    "icc_influence",
    "clinician_correlation",
    "design_effect_at",
    "bonett_sample_size",
    "icc_variance_factor",
    "plan_icc",
    "plan_difference",
    "plan_labels",
    "SizedDraws",
]
