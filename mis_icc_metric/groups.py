"""Agreement by subgroup (time point, stimulus, clinician) and at the therapist level.

A judge may agree with the experts at T1 and not at T3, or be biased on one patient stimulus; FIS research
reports therapists (a clinician's mean over the stimuli at a time point) and their change, not single responses.

- **Subgroups** (`subgroup_agreement`): per group and dimension (and overall) ICC(3,1), bias (model minus expert)
  and MAE on the group's scored pairs, with percentile CIs. The groups are subsets of the videos, so each group
  is one more block of the existing block machinery, its valid mask restricted to the group: one shared
  resample draw for every group and dimension, one sparse product per chunk for all of them
  (`block_statistics`). A group with fewer videos (or clinicians) than a CI needs gets its point
  values without a CI and is listed in `without_ci`, never dropped.
- **Equal bias across groups** (`equal_bias_test`): the Wald test that every group's mean difference (model
  minus expert) is the same, from the least-squares fit of the differences on group indicators with a
  cluster-robust (CR1) covariance, the clusters being the clinicians: a clinician's videos are not independent.
  F = W / q on (q, C - 1) degrees of freedom, exactly what statsmodels' `OLS(...).fit(cov_type="cluster")`
  and `wald_test(use_f=True)` give. Grouped by clinician, the groups are the clusters and a cluster-robust
  test is undefined: the classical one-way F test (scipy's `f_oneway`) is used and said so.
- **Therapist level** (`therapist_agreement`): per clinician and time point, the mean predicted and mean expert
  score over the stimuli scored on both (with the number of stimuli, averaged), their ICC(3,1), bias and MAE;
  and per clinician the change from T1 to T3 of both means, and the agreement of the two changes. CIs
  resample clinicians (a clinician's units move together), one draw for both levels.

What these numbers are for: research on judges (how far a model's FIS scores agree with the experts'), not
therapist supervision, training, hiring or patient-facing evaluation (the paper's ethics statement).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.video_ids import GROUP_ORDER, GROUPINGS, parse_video_id
from mis_bench_dataset.wording import RESEARCH_USE

from .bootstrap import block_features, block_means, percentile_ci, resampled_chunks, resampled_cross
from .coverage import DEFAULT_MISSING, evaluated_references
from .reporting_floor import (
    MIN_CI_CLUSTERS,
    MIN_CI_VIDEOS,
    Support,
    degenerate_reason,
    floor_description,
    undefined_share_reason,
    withhold_reason,
)
from .resampling import check_unit, clinician_clusters, clusters_per_block, make_resampling
from .resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

__all__ = [
    "agreement_by",
    "GROUP_STATISTICS",
    "MIN_CI_VIDEOS",
    "MIN_CI_CLUSTERS",
    "PURPOSE",
    "group_labels",
    "grouped_moments",
    "block_point",
    "block_statistics",
    "equal_bias_test",
    "subgroup_agreement",
    "therapist_agreement",
]

GROUP_STATISTICS: tuple[str, ...] = ("icc3_1", "bias", "mae")
# Below this share of non-zero feature cells (blocks that each use few items: one per subgroup) the features are
# summed as a sparse matrix: the product then costs items x features instead of items x blocks x features.
_SPARSE_DENSITY = 0.25
PURPOSE = RESEARCH_USE
BIAS_TEST_METHODS = {
    "cluster": "Wald test of equal mean bias across groups, least squares on group indicators with a "
    "cluster-robust (CR1) covariance over clinicians, F = W / q on (q, clinicians - 1) df",
    "classical": "one-way ANOVA F test of equal mean bias across groups (grouped by clinician: the groups are "
    "the clusters, so a cluster-robust test is undefined; videos within a clinician taken as independent)",
}
_ORDER = GROUP_ORDER


def group_labels(videos: Sequence[str], by: str) -> list[str]:
    """Each video's group: its time point, stimulus or clinician (from the id)."""
    if by not in GROUPINGS:
        raise UsageError(f"unknown grouping {by!r}", hint=f"use one of {', '.join(GROUPINGS)}")
    return [getattr(parse_video_id(v), by) for v in videos]


def _codes(labels: Sequence[str], by: str | None = None) -> tuple[np.ndarray, list[str]]:
    """Integer codes 0..G-1 and the group names, in the scale's order (T1, T2, T3; stimuli A-Z; clinicians A-Z)."""
    present = set(labels)
    names = [g for g in _ORDER.get(by or "", ()) if g in present] + sorted(present - set(_ORDER.get(by or "", ())))
    index = {name: i for i, name in enumerate(names)}
    return np.array([index[label] for label in labels], dtype=np.int64), names


class _BlockFeatures:
    """Per-item features of many blocks for the three statistics reported here: `bootstrap.block_features`
    (count, centred columns, their products, squared difference) and |model - expert|. Only ICC(3,1), bias and
    MAE are computed per resample: the full agreement set would cost six times as much for 700 blocks."""

    def __init__(self, ratings: np.ndarray, valid: np.ndarray) -> None:
        n, self.n_blocks, _ = ratings.shape
        base, self.layout = block_features(ratings, valid)
        self.means = block_means(ratings, valid)  # (blocks, 2): the centring, to recover the bias
        safe = np.where(valid[..., None], ratings, 0.0)
        absolute = np.where(valid, np.abs(safe[..., 0] - safe[..., 1]), 0.0)
        blocks = np.concatenate([base.reshape(n, self.n_blocks, self.layout.width), absolute[..., None]], axis=-1)
        self.width = self.layout.width + 1
        self.features = blocks.reshape(n, self.n_blocks * self.width)

    def statistics(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """{"icc3_1", "bias", "mae"} of each (resample, block) from summed features (R, blocks * width)."""
        from mis_bench_dataset.icc import icc3_from_cross_products

        blocks = sums.reshape(sums.shape[0], self.n_blocks, self.width)
        n_eff, linear, cross = resampled_cross(blocks[..., : self.layout.width], self.layout)
        safe_n = np.where(n_eff > 0, n_eff, 1.0)
        centred_means = linear / safe_n[..., None]
        bias = self.means[None, :, 0] - self.means[None, :, 1] + centred_means[..., 0] - centred_means[..., 1]
        return {
            "icc3_1": np.where(n_eff >= 2, icc3_from_cross_products(cross), np.nan),
            "bias": np.where(n_eff > 0, bias, np.nan),
            "mae": np.where(n_eff > 0, blocks[..., -1] / safe_n, np.nan),
        }


def block_point(ratings: np.ndarray, valid: np.ndarray) -> dict[str, np.ndarray]:
    """ICC(3,1), bias and MAE of each block of `ratings` (n, D, 2) on its valid items: {key: (D,)}."""
    features = _BlockFeatures(np.asarray(ratings, dtype=np.float64), np.asarray(valid, dtype=bool))
    return {k: v[0] for k, v in features.statistics(features.features.sum(axis=0, keepdims=True)).items()}


def block_statistics(ratings: np.ndarray, valid: np.ndarray, chunks, n_resamples: int) -> dict[str, np.ndarray]:
    """ICC(3,1), bias and MAE of each block in each resample: {key: (B, D)}.

    chunks: (rows, counts) pairs as `bootstrap.resampled_chunks` yields them. Many blocks that each use a few
    items (one per subgroup and dimension) are summed through a sparse feature matrix: one product per chunk
    for all of them, no loop over blocks or resamples.
    """
    from scipy import sparse

    features = _BlockFeatures(np.asarray(ratings, dtype=np.float64), np.asarray(valid, dtype=bool))
    dense = features.features
    transposed = sparse.csr_matrix(dense.T) if np.count_nonzero(dense) < _SPARSE_DENSITY * dense.size else None
    out = {key: np.empty((n_resamples, features.n_blocks)) for key in GROUP_STATISTICS}
    for rows, counts in chunks:
        sums = counts @ dense if transposed is None else (transposed @ np.ascontiguousarray(counts.T)).T
        for key, value in features.statistics(np.ascontiguousarray(sums)).items():
            out[key][rows] = value
        del counts  # before the next chunk is drawn
    return out


def _n_resamples(resampling) -> int:
    return int(getattr(resampling, "n_resamples", None) or np.asarray(resampling).shape[0])


def grouped_moments(
    ratings: np.ndarray, valid: np.ndarray, codes: np.ndarray, n_groups: int, resampling=None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """Every block of `ratings` (n, D, 2) restricted to each group: point {key: (G, D)} and, with a resampling
    (an index matrix or a `Resampling`), replicates {key: (B, G, D)} from one shared draw."""
    n, n_blocks, _ = ratings.shape
    member = codes[:, None] == np.arange(n_groups)[None, :]  # (n, G)
    group_valid = (member[:, :, None] & valid[:, None, :]).reshape(n, n_groups * n_blocks)
    group_ratings = np.broadcast_to(ratings[:, None], (n, n_groups, n_blocks, 2)).reshape(n, n_groups * n_blocks, 2)
    point = {k: v.reshape(n_groups, n_blocks) for k, v in block_point(group_ratings, group_valid).items()}
    if resampling is None:
        return point, None
    boot = block_statistics(group_ratings, group_valid, resampled_chunks(resampling, n), _n_resamples(resampling))
    return point, {k: v.reshape(-1, n_groups, n_blocks) for k, v in boot.items()}


# ------------------------------------------------------------------------------------------ equal bias


def equal_bias_test(
    differences: np.ndarray, groups: np.ndarray, clusters: np.ndarray | None
) -> dict[str, float | int | str | None]:
    """Test of equal mean `differences` (model minus expert) across `groups` (integer codes).

    clusters: each item's cluster (clinician) for the cluster-robust Wald test (CR1, F on (q, C - 1) df, as
    statsmodels computes it), or None for the classical one-way ANOVA F test.
    """
    from scipy import stats

    d = np.asarray(differences, dtype=np.float64)
    _, g = np.unique(groups, return_inverse=True)
    n, k = d.size, int(g.max()) + 1 if d.size else 0
    method = "classical" if clusters is None else "cluster"
    out: dict = {"method": method, "n": n, "n_groups": k, "statistic": None, "df": None, "p_value": None}
    if k < 2 or n <= k:
        out["note"] = "fewer than two groups, or no residual degrees of freedom: no test"
        return out
    counts = np.bincount(g, minlength=k).astype(np.float64)
    means = np.bincount(g, weights=d, minlength=k) / counts
    residuals = d - means[g]
    q = k - 1
    if clusters is None:
        between = float((counts * (means - d.mean()) ** 2).sum()) / q
        within = float((residuals**2).sum()) / (n - k)
        f_value = between / within if within > 0 else math.inf
        df = (q, n - k)
    else:
        _, c = np.unique(clusters, return_inverse=True)
        n_clusters = int(c.max()) + 1
        out["n_clusters"] = n_clusters
        if n_clusters < 2:
            out["note"] = "one cluster: no cluster-robust test"
            return out
        scores = np.zeros((n_clusters, k))
        np.add.at(scores, (c, g), residuals)  # per cluster: the sum of x_i e_i over its items
        correction = n_clusters / (n_clusters - 1) * (n - 1) / (n - k)
        cov = correction * (scores.T @ scores) / np.outer(counts, counts)
        contrast = np.hstack([-np.ones((q, 1)), np.eye(q)])  # every group against the first
        diff = contrast @ means
        middle = contrast @ cov @ contrast.T
        f_value = float(diff @ np.linalg.pinv(middle) @ diff) / q
        df = (q, n_clusters - 1)
    out.update(statistic=f_value, df=list(df), p_value=float(stats.f.sf(f_value, *df)), means=means.tolist())
    # The one rule (`reporting_floor`): a cluster-robust test from fewer clinicians than the floor (2 clinicians:
    # F on (q, 1) df) is withheld with its reason, as is any test from fewer videos.
    support = Support(n, out.get("n_clusters"), "clinician" if clusters is not None else "video")
    reason = withhold_reason(support, "a p-value")
    if reason:
        out.update(p_value=None, withheld=reason)
    return out


# ------------------------------------------------------------------------------------------ shared parts


def _aligned(predictions: Mapping, references: Mapping, missing: str):
    """The scoring rules' grid, and the blocks `score` scores: each dimension's parsed pairs, then the overall
    per-video mean over the videos with all eight parsed: (data, ratings (n, D+1, 2), valid (n, D+1), names)."""
    from .scoring import _overall_block, align

    references, align_missing, _ = evaluated_references(predictions, references, missing)
    data = align(predictions, references, missing=align_missing)
    overall, complete = _overall_block(data.pred, data.gold, data.parsed)
    complete &= data.has_gold.all(axis=1)
    ratings = np.concatenate([np.stack([data.pred, data.gold], axis=-1), overall[:, None]], axis=1)
    valid = np.concatenate([data.parsed, complete[:, None]], axis=1)
    return data, ratings, valid, [*data.dimensions, "overall"]


def _resampling(ids: Sequence[str], n_bootstrap: int, seed: int | None, unit: str, clusters: Sequence[str]):
    if n_bootstrap < 0:
        raise DataError(f"n_bootstrap must be >= 0, got {n_bootstrap}")
    return make_resampling(list(ids), n_bootstrap, seed, unit, clusters=list(clusters)) if n_bootstrap else None


def _ci_table(boot: dict[str, np.ndarray] | None, confidence: float) -> dict[str, tuple] | None:
    """{key: ((..., 2) percentile CIs, the replicates)} of every replicate array (resamples on axis 0)."""
    if boot is None:
        return None
    return {key: (percentile_ci(boot[key], confidence, axis=0), boot[key]) for key in GROUP_STATISTICS}


def _stat_entry(point: dict, cis: dict | None, where: tuple, n: int, with_ci: bool) -> dict:
    """{"n", "icc", "icc_ci", "bias", "bias_ci", "mae", "mae_ci", "withheld"} of one cell; ICC undefined on < 3
    items. A cell the floor leaves a CI (`with_ci`) still has it withheld past the share of undefined resamples
    or at zero width (`reporting_floor`), the reason in "withheld"."""
    from .scoring import MIN_ITEMS

    entry: dict = {"n": n}
    withheld: dict[str, str] = {}
    for key in GROUP_STATISTICS:
        value = float(point[key][where]) if n else float("nan")
        if key == "icc3_1" and n < MIN_ITEMS:
            value = float("nan")
        name = "icc" if key == "icc3_1" else key
        entry[name] = value
        entry[f"{name}_ci"] = None
        if with_ci and cis is not None and not math.isnan(value):
            bounds, replicates = cis[key]
            samples = replicates[(slice(None), *where)]
            reason = undefined_share_reason(int(np.isnan(samples).sum()), samples.size) or degenerate_reason(
                *bounds[where].tolist()
            )
            if reason:
                withheld[f"{name}_ci"] = reason
            else:
                entry[f"{name}_ci"] = bounds[where].tolist()
    entry["withheld"] = withheld
    return entry


# ------------------------------------------------------------------------------------------ subgroups


def _ci_reason(n: int, n_clusters: int, unit: str) -> str | None:
    """Why a group's cell gets no CI (too few videos or clinicians: the one rule of `reporting_floor`), or None."""
    return withhold_reason(Support(n, n_clusters, unit))


def subgroup_agreement(
    predictions: Mapping,
    references: Mapping,
    *,
    by: str,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    missing: str = DEFAULT_MISSING,
) -> dict:
    """ICC(3,1), bias and MAE per group (`by`: time_point, stimulus or clinician) and dimension, and overall, on
    the pairs `score_predictions` scores, with CIs from one shared draw, and a test of equal bias across groups.

    resample: "clinician" (the toolkit's default) or "video". Grouped by clinician, a clinician draw keeps or
    drops a whole group, so its CIs resample the videos (said in `resampling_note`).
    """
    n_bootstrap, seed, resample, confidence, clusters = resampling.values()
    unit = check_unit(resample)
    data, ratings, valid, blocks = _aligned(predictions, references, missing)
    codes, names = _codes(group_labels(data.videos, by), by)
    clinicians = clinician_clusters(data.videos, clusters)
    clinician_codes = np.unique(clinicians, return_inverse=True)[1]
    note = None
    if by == "clinician" and unit == "clinician":
        unit, note = (
            "video",
            "grouped by clinician: a clinician draw keeps or drops a whole group, so the CIs resample videos",
        )
    draw = _resampling(data.videos, n_bootstrap, seed, unit, clinicians)
    point, boot = grouped_moments(ratings, valid, codes, len(names), draw)
    cis = _ci_table(boot, confidence)
    member = codes[:, None] == np.arange(len(names))
    n_items = (member[:, :, None] & valid[:, None, :]).sum(axis=0)  # (G, blocks)
    results: dict = {}
    without_ci = []
    for b, block in enumerate(blocks):
        cells = {}
        for g, name in enumerate(names):
            rows = member[:, g] & valid[:, b]
            n_clusters = len(np.unique(clinician_codes[rows]))
            reason = _ci_reason(int(n_items[g, b]), n_clusters, unit)
            if reason and draw is not None and n_items[g, b]:  # an empty cell has no values to show either
                without_ci.append({"group": name, "block": block, "n": int(n_items[g, b]), "reason": reason})
            cells[name] = {
                **_stat_entry(point, cis, (g, b), int(n_items[g, b]), reason is None),
                "n_clusters": n_clusters,
            }
            cells[name]["no_ci_reason"] = reason if draw is not None else None
        diff = ratings[valid[:, b], b, 0] - ratings[valid[:, b], b, 1]
        test = equal_bias_test(diff, codes[valid[:, b]], None if by == "clinician" else clinician_codes[valid[:, b]])
        results[block] = {"groups": cells, "equal_bias": test}
    return {
        "by": by,
        "groups": names,
        "n_videos": {name: int(member[:, g].sum()) for g, name in enumerate(names)},
        "n_clinicians": {name: len(np.unique(clinician_codes[member[:, g]])) for g, name in enumerate(names)},
        "dimensions": {block: results[block] for block in blocks[:-1]},
        "overall": results["overall"],
        "without_ci": without_ci,
        "meta": _meta(draw, confidence, note, "clinician" if by != "clinician" else None),
    }


def _meta(draw, confidence: float, note: str | None, test_clusters: str | None) -> dict:
    return {
        "resampling": draw.describe() if draw is not None else None,
        "resampling_note": note,
        "confidence": confidence,
        "ci_method": "percentile over the shared resamples; each group a block with its valid mask restricted to it",
        "equal_bias_method": BIAS_TEST_METHODS["cluster" if test_clusters else "classical"],
        "min_ci_videos": MIN_CI_VIDEOS,
        "min_ci_clusters": MIN_CI_CLUSTERS,
        "reporting_floor": floor_description(),
        "bias": "model minus expert",
        "purpose": PURPOSE,
    }


# ------------------------------------------------------------------------------------------ therapist level

CHANGE_FROM, CHANGE_TO = "T1", "T3"


def _unit_means(ratings: np.ndarray, valid: np.ndarray, units: np.ndarray, n_units: int):
    """Per unit (clinician x time point) and block: the mean (model, expert) over its valid videos, the count."""
    one_hot = np.zeros((n_units, len(units)))
    one_hot[units, np.arange(len(units))] = 1.0
    safe = np.where(valid[..., None], ratings, 0.0)
    counts = one_hot @ valid.astype(np.float64)  # (U, blocks)
    sums = np.einsum("un,nbk->ubk", one_hot, safe)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts[..., None] > 0, sums / np.maximum(counts, 1.0)[..., None], np.nan)
    return means, counts


def _level_entries(ratings, valid, point, cis, blocks, extra, clinicians: np.ndarray) -> dict:
    """Per block the level's {"n", "icc", "bias", "mae" (+ CIs)} and the block's `extra(b)` fields; a CI only
    from enough units and enough clinicians behind them (`clinicians`: each row's), as for the subgroups."""
    out = {}
    for b, (block, n_clusters) in enumerate(zip(blocks, clusters_per_block(clinicians, valid), strict=True)):
        n = int(valid[:, b].sum())
        with_ci = _ci_reason(n, n_clusters, "clinician") is None
        out[block] = {**_stat_entry(point, cis, (b,), n, with_ci), **extra(b)}
    return out


def _clinician_chunks(chunks, first_unit: np.ndarray):
    """A clinician draw's counts over units -> over clinicians: every unit of a clinician carries its count."""
    for rows, counts in chunks:
        yield rows, np.ascontiguousarray(counts[:, first_unit])


def therapist_agreement(
    predictions: Mapping,
    references: Mapping,
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    missing: str = DEFAULT_MISSING,
) -> dict:
    """Agreement of therapist means (a clinician's mean over the stimuli at a time point, model and expert on the
    same pairs) and of each clinician's change from T1 to T3, with CIs from one clinician draw for both."""
    n_bootstrap, seed, _, confidence, clusters = resampling.values()  # always by clinician (the docstring)
    data, ratings, valid, blocks = _aligned(predictions, references, missing)
    clinicians = clinician_clusters(data.videos, clusters)
    times = [parse_video_id(v).time_point for v in data.videos]
    unit_labels = [f"{c}_{t}" for c, t in zip(clinicians, times, strict=True)]
    units, unit_names = _codes(unit_labels)
    means, counts = _unit_means(ratings, valid, units, len(unit_names))
    unit_valid = counts > 0
    unit_clinician = [name.rsplit("_", 1)[0] for name in unit_names]
    unit_time = [name.rsplit("_", 1)[1] for name in unit_names]
    draw = _resampling(unit_names, n_bootstrap, seed, "clinician", unit_clinician)
    point = block_point(means, unit_valid)
    boot = (
        None
        if draw is None
        else block_statistics(means, unit_valid, resampled_chunks(draw, len(unit_names)), _n_resamples(draw))
    )

    names = sorted(set(unit_clinician))
    first_unit = np.array([unit_clinician.index(c) for c in names])
    position = {(c, t): u for u, (c, t) in enumerate(zip(unit_clinician, unit_time, strict=True))}
    start = np.array([position.get((c, CHANGE_FROM), -1) for c in names])
    end = np.array([position.get((c, CHANGE_TO), -1) for c in names])
    both = (start >= 0) & (end >= 0)
    change = np.where(both[:, None, None], means[end] - means[start], np.nan)
    change_valid = both[:, None] & unit_valid[start] & unit_valid[end]
    change_point = block_point(change, change_valid)
    change_boot = None
    if draw is not None:
        chunks = _clinician_chunks(resampled_chunks(draw, len(unit_names)), first_unit)
        change_boot = block_statistics(change, change_valid, chunks, _n_resamples(draw))

    def mean_count(b: int) -> dict:
        used = unit_valid[:, b]
        return {"mean_videos_per_unit": float(counts[used, b].mean()) if used.any() else float("nan")}

    def clinicians_of(b: int) -> dict:
        return {"n_clinicians": int(change_valid[:, b].sum())}

    unit_clinicians, clinician_names = np.asarray(unit_clinician, dtype=object), np.asarray(names, dtype=object)
    therapists = _level_entries(
        means, unit_valid, point, _ci_table(boot, confidence), blocks, mean_count, unit_clinicians
    )
    changes = _level_entries(
        change, change_valid, change_point, _ci_table(change_boot, confidence), blocks, clinicians_of, clinician_names
    )
    return {
        "therapists": {"dimensions": {b: therapists[b] for b in blocks[:-1]}, "overall": therapists["overall"]},
        "change": {"dimensions": {b: changes[b] for b in blocks[:-1]}, "overall": changes["overall"]},
        "n_units": len(unit_names),
        "n_clinicians": len(names),
        "n_clinicians_with_change": int(both.sum()),
        "change_from": CHANGE_FROM,
        "change_to": CHANGE_TO,
        "meta": {
            **_meta(draw, confidence, None, None),
            "unit": "therapist: a clinician at a time point, the mean over the stimuli scored on both sides",
            "change": f"per clinician the {CHANGE_TO} mean minus the {CHANGE_FROM} mean, model and expert",
            "equal_bias_method": None,
        },
    }


def agreement_by(
    predictions: Mapping,
    references: Mapping,
    by: str,
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    missing: str = DEFAULT_MISSING,
) -> dict:
    """`therapist_agreement` for "therapist" (clinicians, always: a therapist's units move together; the
    `resample` option is not used), else `subgroup_agreement` by `by`: the one dispatch of `score --by`, reports and
    the trust page."""
    from mis_bench_dataset.video_ids import THERAPIST_LEVEL

    if by == THERAPIST_LEVEL:
        return therapist_agreement(predictions, references, resampling=resampling, missing=missing)
    return subgroup_agreement(predictions, references, by=by, resampling=resampling, missing=missing)
