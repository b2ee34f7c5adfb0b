"""What a calibration changes, and how far its intervals can be trusted, on an evaluated split.

Per dimension: ICC(3,1), ICC(A,1) (absolute agreement, Shrout & Fleiss ICC(2,1)), MAE and bias of the judge's
raw scores and of its calibrated scores against the gold, with percentile CIs from one shared resampling
plan (`mis_icc_metric.resampling`, clinicians by default) over the fit and evaluated videos together: in
every resample the map is refitted on that resample's fit videos (`calibration.fit_maps_clustered`), so the
CIs carry the calibration's own uncertainty. A resample that draws no fit video (no map) or fewer than two
evaluated videos is undefined: left out of the percentiles, counted, and past the one rule's share
(`reporting_floor`) the CI is withheld with its reason, as it is below the rule's videos and clinicians.
Then the conformal intervals' empirical coverage and mean width overall, per dimension, by time point, by
stimulus and by clinician (min / median / max, the worst named), beside the no-judge yardstick (the fit split's
mean gold +- its own conformal quantile: whether the judge narrows anything), and a risk-coverage table: the
share of (video, dimension) pairs whose interval is at most a width, and the error among them.

For research on judges only, not therapist supervision, training, hiring or patient-facing evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.video_ids import parse_video_id

from .agreement_statistics import agreement, agreement_weighted
from .bootstrap import one_blas_thread, percentile_ci
from .calibration import INTENDED_USE, SCALE, Calibrator, apply_map, fit_maps_clustered, scored_pairs
from .reporting_floor import Support, floor_description, guarded_interval
from .resampling import make_resampling
from .resampling_options import DEFAULT_RESAMPLING, ResamplingOptions
from .resampling_threads import share_out
from .scoring import MIN_ITEMS

__all__ = ["SUMMARY_STATISTICS", "calibration_summary", "interval_coverage", "risk_coverage"]

# The statistics before and after (agreement keys) and how tables name them.
SUMMARY_STATISTICS: dict[str, str] = {"icc3_1": "ICC(3,1)", "icc2_1": "ICC(A,1)", "mae": "MAE", "bias": "bias"}
# Resamples per chunk. The isotonic refit is a few passes over (chunk x fit videos) and (chunk x distinct scores)
# arrays, so a chunk whose arrays stay in a core's cache is fastest: 500 x 800 fit videos (3 MB a float array) took
# about half the CPU of 5,000 (32 MB arrays, paged in afresh each chunk) on the full benchmark (issue 47).
_CHUNK = {"linear": 1024, "isotonic": 500}
Key = tuple[str, str]
# Clinicians whose coverage falls more than this under the nominal are counted (the "7 of 63 under 80%").
CLINICIAN_SHORTFALL = 0.10
# The clinicians named as the worst covered.
WORST_NAMED = 3
REFIT = (
    "the calibration map is refitted on each resample's fit-split videos and applied to its evaluated videos; "
    "the conformal half-width is the calibration split's"
)


def _pairs(predictions: Mapping[Key, float | None], references: Mapping[Key, float], dim: str):
    """(videos, judge scores, gold) of one dimension's scored pairs (`calibration.scored_pairs`)."""
    keys, x, y = scored_pairs(predictions, references, dim)
    return [k[0] for k in keys], x, y


def interval_coverage(
    records: Sequence[Mapping], references: Mapping[Key, float], clusters: Mapping[str, str] | None = None
) -> list[dict]:
    """One row per calibrated record with gold: video, dimension, time point, stimulus, clinician (`clusters`'
    name for the video, else the id's), covered, width, |error|."""
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
                "clinician": (clusters or {}).get(record["video_id"], video.clinician),
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


def _groups(rows: Sequence[Mapping], field: str) -> dict[str, list[Mapping]]:
    groups: dict[str, list[Mapping]] = {}
    for row in rows:
        groups.setdefault(row[field], []).append(row)
    return dict(sorted(groups.items()))


def _grouped(rows: Sequence[Mapping], field: str) -> dict[str, dict]:
    return {group: _cell(members) for group, members in _groups(rows, field).items()}


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


def _with_ci(point: float, replicates: np.ndarray | None, confidence: float, support: Support) -> dict[str, Any]:
    """{"value", "ci", "withheld"}: the percentile CI of the defined resamples when the one rule allows it, else
    None with the reason (too few videos or clinicians, too many undefined resamples, zero width)."""
    if replicates is None:
        return {"value": float(point), "ci": None, "withheld": None}
    if np.isnan(point):
        return {"value": float(point), "ci": None, "withheld": "the statistic is undefined on the evaluated videos"}
    ci, facts = guarded_interval(replicates, support, percentile_ci(replicates, confidence).tolist())
    return {"value": float(point), "ci": ci, "withheld": facts["withheld"]}


def no_judge_cell(yardstick: Mapping[str, float], gold: np.ndarray) -> dict[str, Any]:
    """The no-judge interval (center +- half-width, clipped to the scale; one interval for every video) on the
    evaluated gold: its width and coverage, what a judge's intervals must beat to be worth having."""
    low = max(SCALE[0], yardstick["center"] - yardstick["half_width"])
    high = min(SCALE[1], yardstick["center"] + yardstick["half_width"])
    covered = float(np.mean((gold >= low) & (gold <= high))) if gold.size else None
    return {**yardstick, "width": high - low, "coverage": covered}


def by_clinician(rows: Sequence[Mapping], nominal: float) -> dict[str, Any]:
    """Coverage per clinician (pooled over dimensions): min, median and max over clinicians, how many fall more
    than `CLINICIAN_SHORTFALL` under `nominal`, and the `WORST_NAMED` worst (lowest coverage, then most pairs)."""
    cells = {name: _cell(group) for name, group in _groups(rows, "clinician").items()}
    if not cells:
        return {"n_clinicians": 0, "min": None, "median": None, "max": None, "worst": [], "clinicians": {}}
    coverage = np.array([cell["coverage"] for cell in cells.values()])
    threshold = nominal - CLINICIAN_SHORTFALL
    ranked = sorted(cells, key=lambda name: (cells[name]["coverage"], -cells[name]["n"], name))
    return {
        "n_clinicians": len(cells),
        "min": float(coverage.min()),
        "median": float(np.median(coverage)),
        "max": float(coverage.max()),
        "below": {"threshold": threshold, "n": int((coverage < threshold).sum())},
        "worst": [
            {"clinician": name, "coverage": cells[name]["coverage"], "n": cells[name]["n"]}
            for name in ranked[:WORST_NAMED]
        ],
        "clinicians": {name: {"coverage": cell["coverage"], "n": cell["n"]} for name, cell in sorted(cells.items())},
    }


def calibration_summary(
    calibrator: Calibrator,
    fit: tuple[Mapping[Key, float | None], Mapping[Key, float]],
    evaluated: tuple[Mapping[Key, float | None], Mapping[Key, float]],
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
) -> dict[str, Any]:
    """The summary of `calibrator` on the evaluated (predictions, gold), its CIs refitting the map on the fit
    (predictions, gold) in each of `n_bootstrap` resamples (0: no CIs)."""
    n_bootstrap, seed, resample, confidence, clusters = resampling.values()
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
    rows = interval_coverage(records, eval_references, clusters)
    dimensions = {dim: _dimension_entry(calibrator, dim, data[dim], (plan, position, confidence)) for dim in dims}
    for dim, entry in dimensions.items():
        entry.update({k: v for k, v in _cell([r for r in rows if r["dimension"] == dim]).items() if k != "n"})
        if dim in calibrator.no_judge:
            entry["no_judge"] = no_judge_cell(calibrator.no_judge[dim], data[dim][1][2])
            entry["judge_narrower"] = (
                None if entry["mean_width"] is None else entry["mean_width"] < entry["no_judge"]["width"]
            )
    return {
        "what": "calibration of a judge's scores to the expert gold, and split-conformal intervals",
        "intended_use": INTENDED_USE,
        "method": calibrator.method,
        "coverage_nominal": calibrator.coverage,
        "confidence": confidence,
        "resampling": None if plan is None else {**plan.describe(), "refit": REFIT},
        "reporting_floor": floor_description(),
        "statistics": SUMMARY_STATISTICS,
        "dimensions": dimensions,
        "pooled": _cell(rows),
        "no_judge": _pooled_yardstick(dimensions),
        "by_time_point": _grouped(rows, "time_point"),
        "by_stimulus": _grouped(rows, "stimulus"),
        "by_clinician": by_clinician(rows, calibrator.coverage),
        "risk_coverage": risk_coverage(rows) if rows else [],
    }


def _pooled_yardstick(dimensions: Mapping[str, Mapping]) -> dict[str, Any]:
    """The no-judge interval pooled over dimensions (weighted by evaluated pairs) beside the judge's, and the
    dimensions where the judge's intervals are not narrower than no judge's."""
    cells = [(e["no_judge"], e["n_evaluated"]) for e in dimensions.values() if "no_judge" in e and e["n_evaluated"]]
    n = sum(count for _, count in cells)
    return {
        "n": n,
        "mean_width": sum(c["width"] * count for c, count in cells) / n if n else None,
        "coverage": sum(c["coverage"] * count for c, count in cells) / n if n else None,
        "judge_not_narrower": [d for d, e in dimensions.items() if e.get("judge_narrower") is False],
    }


def _dimension_entry(calibrator: Calibrator, dim: str, data, resampling) -> dict[str, Any]:
    """One dimension's counts, statistics before / after / change with their guarded CIs, and the CI facts."""
    (fit_videos, x_fit, y_fit), (eval_videos, x_eval, y_eval) = data
    plan, position, confidence = resampling
    entry: dict[str, Any] = {
        "n_fit": int(x_fit.size),
        "n_calibration": calibrator.n_calibration[dim],
        "n_evaluated": int(x_eval.size),
        "half_width": calibrator.half_widths[dim],
    }
    if x_eval.size < MIN_ITEMS:
        entry["note"] = f"{x_eval.size} evaluated pair(s): the statistics need at least {MIN_ITEMS}"
        return entry
    calibrated = apply_map(calibrator.maps[dim], x_eval)
    before, after = agreement(x_eval, y_eval), agreement(calibrated, y_eval)
    boot, n_undefined = _replicates(plan, calibrator.method, data[0], data[1], position)
    support = Support(int(x_eval.size), None, "video")
    if plan is not None:
        in_eval = np.isin(np.arange(plan.n_items), [position[v] for v in eval_videos])
        entry["n_clusters"] = plan.clusters_in(in_eval)
        support = Support(int(x_eval.size), entry["n_clusters"], plan.unit)
        entry["ci_resamples"] = {"n_resamples": plan.n_resamples, "undefined": n_undefined}
    for label, point in (("before", before), ("after", after)):
        entry[label] = {
            stat: _with_ci(point[stat], None if boot is None else boot[label][stat], confidence, support)
            for stat in SUMMARY_STATISTICS
        }
    entry["change"] = {
        stat: _with_ci(
            after[stat] - before[stat],
            None if boot is None else boot["after"][stat] - boot["before"][stat],
            confidence,
            support,
        )
        for stat in SUMMARY_STATISTICS
    }
    return entry


def _replicates(plan, method: str, fit, evaluated, position: Mapping[str, int]) -> tuple[dict | None, int]:
    """Each statistic before and after calibration in every resample of `plan` ({"before"|"after": {stat: (B,)}},
    NaN where undefined) and how many resamples were undefined: those that draw no fit video (no map to refit:
    the docs' rule, such resamples are left out) or fewer than two evaluated videos (no statistic)."""
    if plan is None:
        return None, 0
    fit_videos, x_fit, y_fit = fit
    eval_videos, x_eval, y_eval = evaluated
    fit_columns = np.array([position[v] for v in fit_videos], dtype=np.int64)
    eval_columns = np.array([position[v] for v in eval_videos], dtype=np.int64)
    out = {side: {stat: np.empty(plan.n_resamples) for stat in SUMMARY_STATISTICS} for side in ("before", "after")}
    starts = range(0, plan.n_resamples, _CHUNK[method])
    undefined_in = np.zeros(len(starts), dtype=np.int64)  # per chunk: each chunk writes its own
    fit_units, eval_units = plan.clusters[fit_columns], plan.clusters[eval_columns]
    fit_per_unit = np.bincount(fit_units, minlength=plan.n_clusters).astype(np.float64)

    def one_chunk(start: int) -> None:
        rows = slice(start, min(start + _CHUNK[method], plan.n_resamples))
        counts = plan.cluster_counts(rows)  # (chunk, units): an item's weight is its unit's count
        eval_weights = counts[:, eval_units]
        # Undefined on both sides (so before, after and change use the same resamples); their lanes are refitted
        # with every fit video once, a stand-in whose values are discarded, since a lane without weight has no map.
        undefined = (counts @ fit_per_unit == 0) | (eval_weights.sum(axis=1) < 2)
        undefined_in[start // _CHUNK[method]] = int(undefined.sum())
        fit_counts = np.where(undefined[:, None], 1.0, counts)
        calibrated = fit_maps_clustered(x_fit, y_fit, fit_units, fit_counts, method, x_eval)
        for side, predictions in (("before", x_eval[None]), ("after", calibrated)):
            stats = agreement_weighted(predictions, y_eval, eval_weights)
            for stat in SUMMARY_STATISTICS:
                out[side][stat][rows] = np.where(undefined, np.nan, stats[stat])

    with one_blas_thread():  # each chunk refits from its own resamples: shared out over the cores
        share_out(starts, one_chunk)
    n_undefined = int(undefined_in.sum())
    return out, n_undefined
