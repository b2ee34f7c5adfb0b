"""How far a judge's scores move under a perturbation that should not matter: the statistics of a perturbed
arm against its unperturbed one, on the same (video, dimension) pairs.

Per dimension: the mean score shift (perturbed - unperturbed) with a resampled CI, the paired change in ICC(3,1)
(`paired.paired_comparison`, perturbed as A) with its CI, and the share of pairs whose score moved by at least
`MOVED_THRESHOLD` (0.5 points, half a rubric level) with its CI. One resampling plan (`resampling.make_resampling`,
clinicians by default: a clinician's videos move together) is shared by every statistic and dimension, and every
resample's weighted means come from one matrix product over the plan's counts, no loop over resamples.

Every CI and p-value follows the one rule of `reporting_floor` (three videos of one clinician give no shift CI:
every clinician resample is the sample): withheld ones are None, their reasons in the entry's `withheld`.

What it is for: research on judges (how robust an automatic rater is), not the evaluation of any therapist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.wording import RESEARCH_USE

from .bootstrap import guarded_ci, resampled_sums
from .paired import paired_comparison
from .reporting_floor import floor_description
from .resampling import block_supports, clinician_labels, make_resampling
from .resampling_options import DEFAULT_RESAMPLING, ResamplingOptions
from .scoring import Key, coerce_score

MOVED_THRESHOLD = 0.5
PURPOSE = RESEARCH_USE
_COLUMN = {key: j for j, key in enumerate(DIMENSION_KEYS)}

__all__ = ["MOVED_THRESHOLD", "PURPOSE", "perturbation_shift"]


def _values(mapping: Mapping[Key, object], what: str) -> dict[Key, float]:
    out = {}
    for key, value in mapping.items():
        score = coerce_score(value, what=f"{what} {key}")
        if score is not None and not np.isnan(score):
            out[key] = float(score)
    return out


@dataclass(frozen=True)
class _Shifts:
    """The pairs both arms answered laid out videos x dimensions: shift, whether it moved, whether defined."""

    videos: list[str]
    diff: np.ndarray  # 0 where undefined
    hit: np.ndarray
    valid: np.ndarray
    pairs: list[Key]


def _lay_out(base: Mapping[Key, float], moved: Mapping[Key, float], gold: Mapping[Key, object], threshold) -> _Shifts:
    pairs = sorted(key for key in gold if key in base and key in moved)
    if not pairs:
        raise DataError("no pair answered in both arms", hint="check that both runs cover the same split")
    videos = sorted({v for v, _ in pairs})
    row = {v: i for i, v in enumerate(videos)}
    diff = np.full((len(videos), len(DIMENSION_KEYS)), np.nan)
    for video, dim in pairs:
        diff[row[video], _COLUMN[dim]] = moved[(video, dim)] - base[(video, dim)]
    valid = ~np.isnan(diff)
    diff0 = np.where(valid, diff, 0.0)
    return _Shifts(videos, diff0, (np.abs(diff0) >= threshold - 1e-9) & valid, valid, pairs)


def _replicates(shifts: _Shifts, plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Under each resample: the (B, dims) mean shifts and shares moved, and the (B,) mean shift pooled over every
    pair (the summary's own statistic); one `counts @ features` product per chunk (`resampled_sums`)."""
    dims = shifts.valid.shape[1]
    features = np.column_stack([shifts.valid.astype(np.float64), shifts.diff, shifts.hit.astype(np.float64)])
    sums = resampled_sums(plan, features)
    pairs, shift_sums, hit_sums = sums[:, :dims], sums[:, dims : 2 * dims], sums[:, 2 * dims :]
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = shift_sums.sum(axis=1) / pairs.sum(axis=1)
        return shift_sums / pairs, hit_sums / pairs, pooled


_PAIRED_NAMES = {"delta_ci": "icc_change_ci", "p_value": "icc_change_p"}


def _icc_fields(entry: Mapping, withheld: dict) -> dict:
    """The paired ICC change of one entry; the reasons of its withheld CI and p-value added to `withheld`."""
    withheld.update({_PAIRED_NAMES[key]: reason for key, reason in entry["withheld"].items()})
    return {
        "icc_unperturbed": entry["icc_b"],
        "icc_perturbed": entry["icc_a"],
        "icc_change": entry["delta"],
        "icc_change_ci": entry["delta_ci"],
        "icc_change_p": entry["p_value"],
    }


def _ci(samples: np.ndarray, support, confidence: float, withheld: dict, key: str) -> list[float] | None:
    """The guarded CI of one figure's replicates (`bootstrap.guarded_ci`); its reason, if any, in `withheld`."""
    bounds, facts = guarded_ci(samples, support, confidence)
    if facts["withheld"]:
        withheld[key] = facts["withheld"]
    return bounds


def perturbation_shift(
    unperturbed: Mapping[Key, object],
    perturbed: Mapping[Key, object],
    references: Mapping[Key, object],
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    threshold: float = MOVED_THRESHOLD,
) -> dict:
    """The shift table of one perturbation, per dimension and for the mean over dimensions: the mean score shift
    (perturbed - unperturbed), the paired change in ICC(3,1) and the share of pairs moved by at least 0.5 points,
    each with a CI from one resampling plan (clinicians by default). For research on judges' robustness.

    Pairs: the gold pairs both arms answered (a pair one arm failed is left out of the shift and of the ICC
    change, which `paired_comparison` computes on the same pairs)."""
    n_bootstrap, seed, resample, confidence, clusters = resampling.values()
    if n_bootstrap < 1:
        raise DataError(f"the shift table needs n_bootstrap >= 1, got {n_bootstrap}")
    base, moved = _values(unperturbed, "unperturbed"), _values(perturbed, "perturbed")
    shifts = _lay_out(base, moved, references, threshold)
    plan = make_resampling(shifts.videos, n_bootstrap, seed, resample, clusters=clusters)
    shift_reps, moved_reps, pooled_reps = _replicates(shifts, plan)
    pairs = shifts.pairs
    paired = paired_comparison(
        {k: moved[k] for k in pairs},
        {k: base[k] for k in pairs},
        {k: references[k] for k in pairs},
        resampling=resampling,
        names=("perturbed", "unperturbed"),
    )
    supports = block_supports(clinician_labels(shifts.videos, clusters), shifts.valid, resample)
    dimensions = {}
    for key, j in _COLUMN.items():
        n = int(shifts.valid[:, j].sum())
        if n:
            withheld: dict[str, str] = {}
            dimensions[key] = {
                "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
                "n": n,
                "mean_shift": float(shifts.diff[:, j].sum() / n),
                "mean_shift_ci": _ci(shift_reps[:, j], supports[j], confidence, withheld, "mean_shift_ci"),
                "mean_abs_shift": float(np.abs(shifts.diff[:, j]).sum() / n),
                "share_moved": float(shifts.hit[:, j].sum() / n),
                "share_moved_ci": _ci(moved_reps[:, j], supports[j], confidence, withheld, "share_moved_ci"),
                # resamples that drew no pair of this dimension: no shift, left out of the CIs (and counted)
                "n_bootstrap_undefined": int(np.isnan(shift_reps[:, j]).sum()),
                **_icc_fields(paired["dimensions"][key], withheld),
                "withheld": withheld,
            }
    used = [_COLUMN[k] for k in dimensions]
    n_all = int(shifts.valid[:, used].sum())
    # the pooled mean shift rests on every video with a pair: its support is the videos and clinicians of any
    pooled = block_supports(clinician_labels(shifts.videos, clusters), shifts.valid.any(axis=1)[:, None], resample)
    withheld = {}
    summary = {
        "n": n_all,
        "mean_shift": float(shifts.diff[:, used].sum() / n_all),
        "mean_shift_ci": _ci(pooled_reps, pooled[0], confidence, withheld, "mean_shift_ci"),
        "mean_abs_shift": float(np.abs(shifts.diff[:, used]).sum() / n_all),
        "share_moved": float(shifts.hit[:, used].sum() / n_all),
        **_icc_fields(paired["mean_icc"], withheld),
        "withheld": withheld,
    }
    return {"dimensions": dimensions, "mean": summary, "meta": _meta(threshold, plan, confidence)}


def _meta(threshold: float, plan, confidence: float) -> dict:
    return {
        "shift": "perturbed - unperturbed score, pairs both arms answered",
        "moved": f"|shift| >= {threshold:g}",
        "icc_change": "ICC(3,1) perturbed - unperturbed, paired (the same resamples for both arms)",
        "mean_over_dimensions": "mean shift over every pair of every dimension; its CI from the same pooled mean "
        "in each resample",
        "resampling": plan.describe(),
        "confidence": confidence,
        "reporting_floor": floor_description(),
        "purpose": PURPOSE,
    }
