"""Paired comparison of two systems on the same videos: bootstrap of the ICC difference (resampling clinicians
with all their videos by default, or videos; both systems with the same draws).

Both systems are scored on the items where BOTH parsed (per dimension), and the
overall score on the videos where both parsed every dimension, so the difference
is not confounded by different exclusions. One shared index matrix resamples the
videos for every dimension, the overall score and the mean ICC.

p-value: two-sided bootstrap p = min(1, 2 min(P*(delta <= 0), P*(delta >= 0))),
with the +1 correction ((count + 1) / (B + 1)) so it is never exactly 0.

The CI and the p-value follow the one rule of `reporting_floor`: from fewer videos or clinicians than it asks
(a split of 2 clinicians has 3 distinct clinician resamples), past its share of undefined resamples or from
differences that do not vary, both are withheld (None) with the reason in the entry's `withheld`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
from mis_bench_dataset.toolkit.errors import DataError

from .bootstrap import bootstrap_blocks, percentile_ci, point_blocks, resampling_blas
from .coverage import DEFAULT_MISSING, paired_references
from .reporting_floor import Support, floor_description, guarded_interval
from .resampling import (
    Resampling,
    attach_clustering,
    block_supports,
    clinician_labels,
    clusters_per_block,
    counterpart_icc,
    design_effects,
    make_resampling,
    weakest_support,
)
from .resampling_options import DEFAULT_RESAMPLING, ResamplingOptions
from .scoring import MIN_ITEMS, Key, _overall_block, align

__all__ = ["paired_comparison", "bootstrap_p_value"]


def bootstrap_p_value(deltas: np.ndarray) -> float:
    """Two-sided percentile-bootstrap p-value of H0: delta = 0 (NaN replicates ignored)."""
    deltas = deltas[~np.isnan(deltas)]
    if deltas.size == 0:
        return float("nan")
    below = (np.count_nonzero(deltas <= 0) + 1) / (deltas.size + 1)
    above = (np.count_nonzero(deltas >= 0) + 1) / (deltas.size + 1)
    return float(min(1.0, 2 * min(below, above)))


class _PairedDeltas:
    """One shared bootstrap of both systems' ICCs (A's blocks: dimensions then overall; then B's) and the
    differences A - B, read out per block or for the mean ICC over the dimensions."""

    def __init__(self, a, b, resampling: Resampling, confidence: float, start_counterpart=None) -> None:
        """`start_counterpart`: None, or given the blocks (ratings, valid) starts the design effect's second
        bootstrap (`resampling.counterpart_icc`) beside this one."""
        both = a.parsed & b.parsed
        n, n_dims = both.shape
        overall_a, complete = _overall_block(a.pred, a.gold, both)
        overall_b, _ = _overall_block(b.pred, b.gold, both)
        complete &= a.has_gold.all(axis=1)
        ratings_a = np.concatenate([np.stack([a.pred, a.gold], axis=-1), overall_a[:, None]], axis=1)
        ratings_b = np.concatenate([np.stack([b.pred, b.gold], axis=-1), overall_b[:, None]], axis=1)
        self.valid = np.concatenate([both, complete[:, None]], axis=1)
        ratings = np.concatenate([ratings_a, ratings_b], axis=1)  # blocks: A dims+overall, B dims+overall
        valid2 = np.concatenate([self.valid, self.valid], axis=1)
        self.width, self.confidence = n_dims + 1, confidence
        self.point = point_blocks(ratings, valid2)["icc"]
        self.counterpart = None if start_counterpart is None else start_counterpart((ratings, valid2))
        boot = bootstrap_blocks(ratings, valid2, resampling)["icc"]
        self.deltas = boot[:, : self.width] - boot[:, self.width :]
        self.point_delta = self.point[: self.width] - self.point[self.width :]

    def _tested(self, deltas: np.ndarray, support: Support) -> dict:
        """The CI and p-value of one difference's replicates under the one rule (`reporting_floor`)."""
        bounds = percentile_ci(deltas, self.confidence).tolist()
        ci, facts = guarded_interval(deltas, support, bounds)
        _, p_facts = guarded_interval(deltas, support, bounds, "a p-value")
        withheld = {"delta_ci": facts["withheld"], "p_value": p_facts["withheld"]}
        return {
            "delta_ci": ci,
            "p_value": None if p_facts["withheld"] else bootstrap_p_value(deltas),
            "n_bootstrap_undefined": facts["undefined"],
            "withheld": {key: reason for key, reason in withheld.items() if reason},
        }

    def entry(self, block: int, support: Support) -> dict:
        n_items = int(self.valid[:, block].sum())
        nan = float("nan")
        delta = float(self.point_delta[block]) if n_items >= MIN_ITEMS else nan
        defined = not np.isnan(delta)  # no interval or test for an undefined difference
        untested = {"delta_ci": None, "p_value": nan, "withheld": {}}
        return {
            "icc_a": float(self.point[block]) if n_items >= MIN_ITEMS else nan,
            "icc_b": float(self.point[self.width + block]) if n_items >= MIN_ITEMS else nan,
            "delta": delta,
            **(self._tested(self.deltas[:, block], support) if defined else untested),
            "n": n_items,
        }

    def mean_entry(self, support: Support) -> dict:
        n_dims, width = self.width - 1, self.width
        mean_deltas = self.deltas[:, :n_dims].mean(axis=1)
        usable_dims = all(self.valid[:, j].sum() >= MIN_ITEMS for j in range(n_dims))
        mean_delta = float(self.point_delta[:n_dims].mean()) if usable_dims else float("nan")
        mean_defined = not np.isnan(mean_delta)
        untested = {"delta_ci": None, "p_value": float("nan"), "withheld": {}}
        return {
            "icc_a": float(self.point[:n_dims].mean()) if usable_dims else float("nan"),
            "icc_b": float(self.point[width : width + n_dims].mean()) if usable_dims else float("nan"),
            "delta": mean_delta,
            **(self._tested(mean_deltas, support) if mean_defined else untested),
        }


def _add_clustering(diff: _PairedDeltas, resampling: Resampling, labels, entries: list[dict]) -> None:
    """Each entry (the dimensions, then overall) gets its clinicians and the design effect of its difference
    (None where the video ids name no clinician or the difference is undefined)."""
    effects: list[float | None] = [None] * len(entries)
    if diff.counterpart is not None:
        boot = diff.counterpart.result()
        effects = design_effects(resampling, diff.deltas, boot[:, : diff.width] - boot[:, diff.width :])
    attach_clustering(entries, clusters_per_block(labels, diff.valid), effects, "delta_ci")


@resampling_blas(1)  # it always resamples
def paired_comparison(
    predictions_a: Mapping[Key, object],
    predictions_b: Mapping[Key, object],
    references: Mapping[Key, object],
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    missing: str = DEFAULT_MISSING,
    names: tuple[str, str] = ("A", "B"),
) -> dict:
    """ICC(A) - ICC(B) per dimension, overall and for the mean ICC, with CI and p-value.

    missing: the coverage rule (`coverage.paired_references`): by default the pairs either system
    asked, compared where both parsed; the overall only over videos with all eight asked by both.
    resample: "clinician" (default) or "video" (`resampling`); both systems are resampled with the same
    draws, so the difference keeps its pairing. Each entry reports its clinicians and the design effect of
    the difference.
    """
    n_bootstrap, seed, resample, confidence, clusters = resampling.values()
    if n_bootstrap < 1:
        raise DataError(f"paired comparison needs n_bootstrap >= 1, got {n_bootstrap}")
    references, align_missing, cover_a, cover_b = paired_references(predictions_a, predictions_b, references, missing)
    a = align(predictions_a, references, missing=align_missing)
    b = align(predictions_b, references, missing=align_missing)
    if a.videos != b.videos or a.dimensions != b.dimensions:
        raise DataError("systems A and B must be aligned to the same references")
    resampling = make_resampling(a.videos, n_bootstrap, seed, resample, clusters=clusters)
    labels = clinician_labels(a.videos, clusters)
    start = None if labels is None else partial(counterpart_icc, resampling, a.videos, clusters)
    diff = _PairedDeltas(a, b, resampling, confidence, start)
    n, n_dims = diff.valid.shape[0], diff.width - 1
    supports = block_supports(labels, diff.valid, resample)
    dimensions = {}
    for j, key in enumerate(a.dimensions):
        dim = DIMENSION_BY_KEY[key]
        dimensions[key] = {"name": dim.name, "abbreviation": dim.abbreviation, **diff.entry(j, supports[j])}
    mean_icc = diff.mean_entry(weakest_support(supports[:n_dims], resample))
    overall = diff.entry(n_dims, supports[n_dims])
    _add_clustering(diff, resampling, labels, [*dimensions.values(), overall])
    if not overall["n"]:
        overall["note"] = (
            "no overall score: no video has all eight dimensions parsed by both systems"
            f" (A: {cover_a.sentence()}; B: {cover_b.sentence()})"
        )
    return {
        "systems": {"a": names[0], "b": names[1]},
        "dimensions": dimensions,
        "overall": overall,
        "coverage": {"a": cover_a.to_dict(), "b": cover_b.to_dict()},
        "mean_icc": mean_icc,
        "meta": {
            "metric": "ICC(3,1) difference (A - B), items parsed by both systems",
            "ci_method": "paired " + resampling.describe()["method"],
            "resampling": resampling.describe(),
            "p_value": "two-sided bootstrap, (count + 1) / (B + 1)",
            "reporting_floor": floor_description(),
            "confidence": confidence,
            "n_bootstrap": n_bootstrap,
            "seed": seed,
            "n_videos": n,
            "missing": missing,
        },
    }
