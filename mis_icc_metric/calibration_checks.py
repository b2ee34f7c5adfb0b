"""What a calibration changes, and how far its intervals can be trusted, on an evaluated split.

Per dimension: ICC(3,1), ICC(A,1) (absolute agreement, Shrout & Fleiss ICC(2,1)), MAE and bias of the judge's
raw scores and of its calibrated scores against the gold, with percentile CIs from one shared resampling
plan (`mis_icc_metric.resampling`, clinicians by default) over the fit and evaluated videos together: in
every resample the map is refitted on that resample's fit videos (`calibration.fit_maps_weighted`), so the
CIs carry the calibration's own uncertainty. Then the conformal intervals' empirical coverage and mean
width overall, per dimension, by time point and by stimulus, and a risk-coverage table: the share of
(video, dimension) pairs whose interval is at most a width, and the error among them.

For research on judges only, not therapist supervision, training, hiring or patient-facing evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mis_bench_dataset.dimensions import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLE, DIMENSION_KEYS
from mis_bench_dataset.video_ids import parse_video_id

from .agreement_statistics import agreement, agreement_weighted
from .bootstrap import percentile_ci
from .calibration import INTENDED_USE, Calibrator, apply_map, fit_maps_weighted, scored_pairs
from .resampling import make_resampling
from .scoring import MIN_ITEMS

__all__ = ["SUMMARY_STATISTICS", "calibration_summary", "interval_coverage", "risk_coverage"]

# The statistics before and after (agreement keys) and how tables name them.
SUMMARY_STATISTICS: dict[str, str] = {"icc3_1": "ICC(3,1)", "icc2_1": "ICC(A,1)", "mae": "MAE", "bias": "bias"}
# Resamples per chunk. The isotonic refit walks the distinct fit scores once per chunk (a Python step per score,
# each vectorised over the chunk's resamples), so fewer, larger chunks: 5,000 x 800 scores is about 32 MB per array.
_CHUNK = {"linear": 1024, "isotonic": 5000}
Key = tuple[str, str]
REFIT = (
    "the calibration map is refitted on each resample's fit-split videos and applied to its evaluated videos; "
    "the conformal half-width is the calibration split's"
)


def _pairs(predictions: Mapping[Key, float | None], references: Mapping[Key, float], dim: str):
    """(videos, judge scores, gold) of one dimension's scored pairs (`calibration.scored_pairs`)."""
    keys, x, y = scored_pairs(predictions, references, dim)
    return [k[0] for k in keys], x, y


def interval_coverage(records: Sequence[Mapping], references: Mapping[Key, float]) -> list[dict]:
    """One row per calibrated record with gold: video, dimension, time point, stimulus, gold, calibrated
    score, interval, covered, width, |error|."""
    rows = []
    for record in records:
        key = (record["video_id"], record["dimension"])
        if record.get("prediction") is None or key not in references:
            continue
        gold = references[key]
        video = parse_video_id(record["video_id"])
        rows.append(
            {
                "video_id": record["video_id"],
                "dimension": record["dimension"],
                "time_point": video.time_point,
                "stimulus": video.stimulus,
                "covered": bool(record["lower"] <= gold <= record["upper"]),
                "width": float(record["upper"] - record["lower"]),
                "error": abs(float(record["prediction"]) - gold),
            }
        )
    return rows


def _cell(rows: Sequence[Mapping]) -> dict[str, Any]:
    if not rows:
        return {"n": 0, "coverage": None, "mean_width": None, "mae": None}
    return {
        "n": len(rows),
        "coverage": float(np.mean([r["covered"] for r in rows])),
        "mean_width": float(np.mean([r["width"] for r in rows])),
        "mae": float(np.mean([r["error"] for r in rows])),
    }


def _grouped(rows: Sequence[Mapping], field: str) -> dict[str, dict]:
    groups = sorted({r[field] for r in rows})
    return {group: _cell([r for r in rows if r[field] == group]) for group in groups}


def risk_coverage(rows: Sequence[Mapping], widths: Sequence[float] | None = None) -> list[dict]:
    """For each width w: the share of pairs whose interval is at most w wide (those a reader could accept
    without an expert at that tolerance), their number, their MAE and their coverage."""
    all_widths = np.array([r["width"] for r in rows])
    if widths is None:  # the distinct widths rounded up to 0.01 (at most ten: deciles), rows that add pairs
        up = np.unique(np.ceil(all_widths * 100 - 1e-9) / 100)
        if up.size > 10:
            up = np.unique(np.ceil(np.quantile(all_widths, np.linspace(0.1, 1, 10)) * 100 - 1e-9) / 100)
        widths = up.tolist()
    table: list[dict] = []
    for width in widths:
        kept = [r for r, w in zip(rows, all_widths, strict=True) if w <= width + 1e-9]
        if table and len(kept) == table[-1]["n"]:
            continue
        table.append({"max_width": float(width), "share": len(kept) / max(len(rows), 1), **_cell(kept)})
    return table


def _with_ci(point: float, replicates: np.ndarray, confidence: float) -> dict[str, Any]:
    ci = None if np.isnan(point) else percentile_ci(replicates, confidence).tolist()
    return {"value": float(point), "ci": ci}


def calibration_summary(
    calibrator: Calibrator,
    fit: tuple[Mapping[Key, float | None], Mapping[Key, float]],
    evaluated: tuple[Mapping[Key, float | None], Mapping[Key, float]],
    *,
    n_bootstrap: int,
    seed: int | None,
    resample: str = DEFAULT_RESAMPLE,
    clusters: Mapping[str, str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """The summary of `calibrator` on the evaluated (predictions, gold), its CIs refitting the map on the fit
    (predictions, gold) in each of `n_bootstrap` resamples (0: no CIs)."""
    fit_predictions, fit_references = fit
    eval_predictions, eval_references = evaluated
    dims = [d for d in DIMENSION_KEYS if d in calibrator.dimensions]
    data = {
        dim: (_pairs(fit_predictions, fit_references, dim), _pairs(eval_predictions, eval_references, dim))
        for dim in dims
    }
    videos = sorted({v for (fv, _, _), (ev, _, _) in data.values() for v in (*fv, *ev)})
    position = {video: i for i, video in enumerate(videos)}
    plan = make_resampling(videos, n_bootstrap, seed, resample, clusters=clusters) if n_bootstrap and videos else None
    records = calibrator.apply(eval_predictions, "the evaluated predictions")
    rows = interval_coverage(records, eval_references)
    dimensions = {}
    for dim, ((fit_videos, x_fit, y_fit), (eval_videos, x_eval, y_eval)) in data.items():
        entry: dict[str, Any] = {
            "n_fit": int(x_fit.size),
            "n_calibration": calibrator.n_calibration[dim],
            "n_evaluated": int(x_eval.size),
            "half_width": calibrator.half_widths[dim],
        }
        if x_eval.size >= MIN_ITEMS:
            calibrated = apply_map(calibrator.maps[dim], x_eval)
            before, after = agreement(x_eval, y_eval), agreement(calibrated, y_eval)
            boot = _replicates(
                plan, calibrator.method, (fit_videos, x_fit, y_fit), (eval_videos, x_eval, y_eval), position
            )
            for label, point, key in (("before", before, "before"), ("after", after, "after")):
                entry[label] = {
                    stat: _with_ci(point[stat], boot[key][stat], confidence)
                    if boot
                    else {"value": point[stat], "ci": None}
                    for stat in SUMMARY_STATISTICS
                }
            entry["change"] = {
                stat: _with_ci(after[stat] - before[stat], boot["after"][stat] - boot["before"][stat], confidence)
                if boot
                else {"value": after[stat] - before[stat], "ci": None}
                for stat in SUMMARY_STATISTICS
            }
            if plan is not None:
                entry["n_clusters"] = plan.clusters_in(
                    np.isin(np.arange(len(videos)), [position[v] for v in eval_videos])
                )
        else:
            entry["note"] = f"{x_eval.size} evaluated pair(s): the statistics need at least {MIN_ITEMS}"
        entry.update({k: v for k, v in _cell([r for r in rows if r["dimension"] == dim]).items() if k != "n"})
        dimensions[dim] = entry
    return {
        "what": "calibration of a judge's scores to the expert gold, and split-conformal intervals",
        "intended_use": INTENDED_USE,
        "method": calibrator.method,
        "coverage_nominal": calibrator.coverage,
        "confidence": confidence,
        "resampling": None if plan is None else {**plan.describe(), "refit": REFIT},
        "statistics": SUMMARY_STATISTICS,
        "dimensions": dimensions,
        "pooled": _cell(rows),
        "by_time_point": _grouped(rows, "time_point"),
        "by_stimulus": _grouped(rows, "stimulus"),
        "risk_coverage": risk_coverage(rows) if rows else [],
    }


def _replicates(
    plan, method: str, fit, evaluated, position: Mapping[str, int]
) -> dict[str, dict[str, np.ndarray]] | None:
    """Each statistic before and after calibration in every resample of `plan`: {"before"|"after": {stat: (B,)}}."""
    if plan is None:
        return None
    fit_videos, x_fit, y_fit = fit
    eval_videos, x_eval, y_eval = evaluated
    fit_columns = np.array([position[v] for v in fit_videos], dtype=np.int64)
    eval_columns = np.array([position[v] for v in eval_videos], dtype=np.int64)
    out = {side: {stat: np.empty(plan.n_resamples) for stat in SUMMARY_STATISTICS} for side in ("before", "after")}
    for start in range(0, plan.n_resamples, _CHUNK[method]):
        rows = slice(start, min(start + _CHUNK[method], plan.n_resamples))
        counts = plan.counts(rows)
        fit_weights, eval_weights = counts[:, fit_columns], counts[:, eval_columns]
        calibrated = fit_maps_weighted(x_fit, y_fit, fit_weights, method, x_eval)
        # A resample that draws no fit video cannot refit the map, one with under 2 evaluated videos has no
        # statistic: undefined on both sides (left out of the percentiles, so before, after and change use
        # the same resamples).
        undefined = (fit_weights.sum(axis=1) == 0) | (eval_weights.sum(axis=1) < 2)
        calibrated[undefined] = x_eval.mean()
        raw = np.broadcast_to(x_eval, calibrated.shape)
        for side, predictions in (("before", raw), ("after", calibrated)):
            stats = agreement_weighted(predictions, y_eval, eval_weights)
            for stat in SUMMARY_STATISTICS:
                out[side][stat][rows] = np.where(undefined, np.nan, stats[stat])
    return out
