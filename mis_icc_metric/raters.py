"""The model as one more rater: would it pass as one of the expert raters?

Given per-rater labels (long form ``video_id, rater, dimension, score``; the synthetic release's
``ratings.csv`` has raters R1-R3, any file of that form works), per dimension and on one set of
videos, the *panel*: the scored videos every rater of the file rated on all eight dimensions (the
paper's "fully rated" videos, `Labels.fully_rated_videos`) where the model's prediction parsed:

- the model's ICC(3,1) against each individual rater, next to each pair of raters' ICC(3,1);
- the raters' single-rater ICC(3,1) among themselves (the human ceiling of paper Table 2, computed
  as `mis_bench_dataset.release.labels.human_ceiling` does, on the panel) and, for reference, exactly that
  function's value on all fully rated scored videos;
- leave one rater out: the panel's ICC(3,1) with rater r replaced by the model, and how much it
  drops (negative delta) or rises against the raters alone.

Every ICC here is the F-test interval's ICC(3,1) of `labels.icc3_1_with_ci`, as Table 2 is.

The certification rule of the paper's Appendix B ("training continued until each rater achieved
ICC greater than 0.8 with expert ratings on six consecutive clips") run on the model: per clip
(video), ICC(3,1) of the model's eight dimension scores against the eight gold scores (items = the
dimensions, raters = model and gold); the clips in video-id order (clinician, time point, stimulus:
the order `score` lists videos); a clip with any dimension unparsed, or with an ICC of 0.8 or less
(or undefined), ends a run. Passed: a run of six; reported: the longest run and where it is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from itertools import combinations

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.icc import icc3_1
from mis_bench_dataset.release.labels import Labels, icc3_1_with_ci
from mis_bench_dataset.toolkit.defaults import DEFAULT_CONFIDENCE
from mis_bench_dataset.toolkit.errors import UsageError

from .reporting_floor import Support, degenerate_reason, withhold_reason
from .scoring import MIN_ITEMS, Key, align

logger = logging.getLogger(__name__)

__all__ = ["CERTIFICATION_ICC", "CERTIFICATION_RUN", "certification", "model_as_rater"]

# Appendix B: "ICC greater than 0.8 with expert ratings on six consecutive clips".
CERTIFICATION_ICC = 0.8
CERTIFICATION_RUN = 6
CLIP_ORDER = "video id order (sorted as text: clinician, time point, stimulus)"


def _icc(matrix: np.ndarray, confidence: float) -> dict:
    """{"icc", "ci", "n"} of an (n x k) matrix, ICC and CI None on fewer than MIN_ITEMS videos; the F-test CI
    (videos taken as independent) under the one rule of `reporting_floor`, its reason in "withheld"."""
    n = int(matrix.shape[0])
    if n < MIN_ITEMS:
        return {"icc": None, "ci": None, "n": n}
    icc, low, high = icc3_1_with_ci(matrix, alpha=1 - confidence)
    if math.isnan(icc):
        return {"icc": None, "ci": None, "n": n}
    reason = withhold_reason(Support(n, None, "video")) or degenerate_reason(float(low), float(high))
    return {"icc": icc, "ci": None if reason else [low, high], "n": n, "withheld": reason}


def _ceiling(table2) -> dict:
    """The raters' ICC on this panel (Table 2's computation), its F-test CI under the one rule as `_icc`'s."""
    low, high = float(table2.ci_low), float(table2.ci_high)
    reason = withhold_reason(Support(table2.n_videos, None, "video")) or degenerate_reason(low, high)
    return {"icc": table2.icc, "ci": None if reason else [low, high], "n": table2.n_videos, "withheld": reason}


def _mean(values: list[float | None]) -> float | None:
    return float(np.mean(values)) if values and all(v is not None for v in values) else None


def _panel(labels: Labels, videos: list[str]) -> tuple[list[str], list[str], str | None]:
    """(fully rated scored videos, the raters, a note when the raters are not the same on every one)."""
    scored = set(videos)
    panel = [v for v in labels.fully_rated_videos() if v in scored]
    names = {tuple(sorted(labels.ratings[(v, d)])) for v in panel for d in DIMENSION_KEYS}
    if len(names) > 1:
        return (
            panel,
            [],
            (
                f"the fully rated videos are rated by different rater names ({len(names)} different sets): "
                "the per-rater comparisons need the same raters on every video"
            ),
        )
    return panel, list(names.pop()) if names else [], None


def _dimension(
    key: str, panel: list[str], raters: list[str], labels: Labels, pred: dict[str, float], confidence: float
) -> dict:
    videos = [v for v in panel if v in pred]
    humans = np.array([[labels.ratings[(v, key)][r] for r in raters] for v in videos], dtype=np.float64)
    humans = humans.reshape(len(videos), len(raters))
    model = np.array([pred[v] for v in videos], dtype=np.float64)
    panel_icc = _icc(humans, confidence)
    model_vs = {r: _icc(np.stack([model, humans[:, j]], axis=1), confidence) for j, r in enumerate(raters)}
    pairs = {
        f"{a}-{b}": _icc(humans[:, [raters.index(a), raters.index(b)]], confidence) for a, b in combinations(raters, 2)
    }
    leave_one_out = {}
    for j, rater in enumerate(raters):
        replaced = humans.copy()
        replaced[:, j] = model
        entry = _icc(replaced, confidence)
        both = entry["icc"] is not None and panel_icc["icc"] is not None
        entry["delta"] = entry["icc"] - panel_icc["icc"] if both else None
        leave_one_out[rater] = entry
    return {
        "n": len(videos),
        "raters_icc": panel_icc,
        "model_vs_rater": model_vs,
        "rater_vs_rater": pairs,
        "mean_model_vs_rater": _mean([e["icc"] for e in model_vs.values()]),
        "mean_rater_vs_rater": _mean([e["icc"] for e in pairs.values()]),
        "leave_one_out": leave_one_out,
    }


def certification(
    predictions: Mapping[Key, object],
    references: Mapping[Key, object],
    *,
    threshold: float = CERTIFICATION_ICC,
    run_length: int = CERTIFICATION_RUN,
) -> dict:
    """The Appendix B rule run on the model (see the module docstring): passed, longest run, per clip ICC."""
    data = align(predictions, references, missing="unparsed")
    if len(data.dimensions) < 2:
        raise ValueError("the certification rule needs at least two dimensions per clip (ICC over the dimensions)")
    complete = ~np.isnan(data.pred).any(axis=1) & ~np.isnan(data.gold).any(axis=1)
    clip_icc = np.full(len(data.videos), np.nan)
    if complete.any():
        clip_icc[complete] = icc3_1(np.stack([data.pred[complete], data.gold[complete]], axis=-1))
    passing = np.nan_to_num(clip_icc, nan=-np.inf) > threshold
    best = current = 0
    best_end = certified_at = None
    for index, ok in enumerate(passing.tolist()):  # one pass over the clips (not resamples)
        current = current + 1 if ok else 0
        if current > best:
            best, best_end = current, index
        if current == run_length and certified_at is None:
            certified_at = data.videos[index]
    return {
        "rule": f"ICC(3,1) over the dimensions > {threshold} with the gold scores on {run_length} consecutive clips",
        "order": CLIP_ORDER,
        "threshold": threshold,
        "run_length": run_length,
        "n_clips": len(data.videos),
        "n_complete": int(complete.sum()),
        "n_passing": int(passing.sum()),
        "passed": certified_at is not None,
        "certified_at": certified_at,
        "best_run": best,
        "best_run_clips": None if best_end is None else [data.videos[best_end - best + 1], data.videos[best_end]],
        "clip_icc": {
            video: (None if math.isnan(v) else float(v))
            for video, v in zip(data.videos, clip_icc.tolist(), strict=True)
        },
    }


def _gold_mismatches(labels: Labels, references: Mapping[Key, object]) -> int:
    """(video, dimension) pairs where the labels' aggregated gold is not the references' gold."""
    count = 0
    for (video, key), value in references.items():
        gold = (labels.gold.get(video) or {}).get(key)
        if gold is not None and value is not None and abs(float(value) - gold) > 1e-9:
            count += 1
    return count


def model_as_rater(
    predictions: Mapping[Key, object],
    references: Mapping[Key, object],
    labels: Labels,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """Per dimension the model next to the raters, leave one rater out, and the certification rule."""
    if labels.form != "long":
        raise UsageError(
            "the model-as-rater comparison needs per-rater labels; these are aggregated (wide)",
            where=str(labels.path),
            hint="pass the long CSV video_id,rater,dimension,score (the synthetic release's ratings.csv)",
        )
    data = align(predictions, references, missing="unparsed")
    panel, raters, note = _panel(labels, data.videos)
    ceiling = labels.restricted_to(data.videos).human_ceiling()
    dimensions = {}
    for j, key in enumerate(data.dimensions):
        pred = {v: float(data.pred[i, j]) for i, v in enumerate(data.videos) if not np.isnan(data.pred[i, j])}
        entry = _dimension(key, panel, raters, labels, pred, confidence) if raters else {"n": 0}
        table2 = ceiling.get(key)
        entry["human_ceiling"] = None if table2 is None else _ceiling(table2)
        dimensions[key] = entry
    mismatches = _gold_mismatches(labels, references)
    if mismatches:
        logger.warning(
            "%s: the per-rater labels aggregate to other gold scores than the references for %d pair(s)",
            labels.path,
            mismatches,
        )
    return {
        "raters": raters,
        "labels": str(labels.path),
        "n_videos": len(data.videos),
        "n_panel_videos": len(panel),
        "note": note,
        "gold_mismatches": mismatches,
        "dimensions": dimensions,
        "certification": certification(predictions, references),
        "meta": {
            "metric": "ICC(3,1) with its F-test CI, as paper Table 2",
            "panel": "scored videos rated by every rater on all eight dimensions, where the model's prediction parsed",
            "confidence": confidence,
        },
    }
