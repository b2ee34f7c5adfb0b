"""When an uncertainty may be reported: the one rule every command follows (never confidently wrong).

A CI, a p-value, a rank or a planned size rests on the data behind it. Resampling clinicians from one clinician
draws the same clinician every time, so every resample is the sample and the "CI" has zero width; a paired test
from 2 clinicians has 3 distinct resamples and a p-value that means nothing; a plan from a pilot without spread
promises anything. Below the floors here such a figure is *withheld*, and the output says why (the counts), never
a degenerate number. Resamples whose statistic is undefined (a resample of one video, a constant column) are
counted and reported; past `MAX_UNDEFINED_SHARE` of them the figure is withheld too, since the defined rest is a
biased subset. An interval whose resamples do not vary at all (zero width) is withheld as degenerate.

Every command (`score`, `compare`, `estimate`, `plan`, `calibrate`, `jury`, `run --perturb`, `report`, the trust
page) asks `withhold_reason` (or `guarded_interval`) and prints the reason where the figure would stand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MIN_CI_VIDEOS",
    "MIN_CI_CLUSTERS",
    "MIN_LABELLED_VIDEOS",
    "MAX_UNDEFINED_SHARE",
    "Support",
    "withhold_reason",
    "undefined_share_reason",
    "degenerate_reason",
    "guarded_interval",
    "guarded_bounds",
    "floor_description",
]

# A percentile CI (or a test) from fewer videos than this says little; the point value is still given.
MIN_CI_VIDEOS = 10
# ...and, resampling or testing by clinician, from fewer clinicians than this (2 clinicians: 3 distinct resamples).
MIN_CI_CLUSTERS = 5
# Labelled (expert-rated) videos below which a PPI or classical estimate's CI is withheld.
MIN_LABELLED_VIDEOS = 10
# Past this share of resamples whose statistic is undefined, the percentile CI of the defined rest is withheld.
MAX_UNDEFINED_SHARE = 0.05


@dataclass(frozen=True)
class Support:
    """What an uncertainty rests on: videos (items), clusters (clinicians) and how they were resampled.

    unit: "clinician" or "video" (the resampling unit), or "labelled" for a figure resting on labelled videos
    (PPI, calibration), whose floor is `MIN_LABELLED_VIDEOS`.
    n_clusters: the clinicians behind the figure (None where the ids name none).
    """

    n_videos: int
    n_clusters: int | None = None
    unit: str = "clinician"

    def describe(self) -> dict:
        return {"n_videos": int(self.n_videos), "n_clinicians": self.n_clusters, "unit": self.unit}


def withhold_reason(support: Support, what: str = "a CI") -> str | None:
    """Why `what` (a CI, a p-value, a rank, a planned size) must be withheld for `support`, or None.

    Videos below `MIN_CI_VIDEOS` (or labelled videos below `MIN_LABELLED_VIDEOS`) always withhold; clinicians below
    `MIN_CI_CLUSTERS` withhold a figure that resamples or tests by clinician (unit "clinician"). A figure that
    resamples videos says so in its output (videos taken as independent), so its clinician count is not floored
    here: one clinician's videos resampled are a CI about that clinician's responses."""
    floor = MIN_LABELLED_VIDEOS if support.unit == "labelled" else MIN_CI_VIDEOS
    noun = "labelled video(s)" if support.unit == "labelled" else "video(s)"
    if support.n_videos < floor:
        return f"{support.n_videos} {noun}; {what} needs at least {floor}"
    if support.unit == "clinician" and support.n_clusters is not None and support.n_clusters < MIN_CI_CLUSTERS:
        return f"{support.n_clusters} clinician(s); {what} needs at least {MIN_CI_CLUSTERS}"
    return None


def undefined_share_reason(n_undefined: int, n_resamples: int, what: str = "a CI") -> str | None:
    """Why `what` is withheld when `n_undefined` of `n_resamples` resamples were undefined, or None."""
    if n_resamples <= 0 or n_undefined <= MAX_UNDEFINED_SHARE * n_resamples:
        return None
    return (
        f"{n_undefined} of {n_resamples} resamples undefined ({n_undefined / n_resamples:.0%}); {what} needs at most"
        f" {MAX_UNDEFINED_SHARE:.0%}"
    )


def degenerate_reason(low: float, high: float, what: str = "a CI") -> str | None:
    """Why an interval whose resamples did not vary (zero width, or a NaN bound) is withheld, or None."""
    if math.isnan(low) or math.isnan(high):
        return f"{what} is undefined: no resample gave a value"
    if high - low <= 0.0:
        return f"the resamples do not vary (zero width); {what} would claim a certainty the data cannot give"
    return None


def guarded_interval(
    samples: np.ndarray, support: Support, bounds: Sequence[float], what: str = "a CI", *, counted: bool = False
) -> tuple[list[float] | None, dict]:
    """`bounds` ([low, high] from `samples`, one figure's resamples with NaN for undefined ones) when the rule
    allows it, else None; and the facts to print beside it: {"undefined": k, "n_resamples": B, "withheld": reason}.

    `counted`: a figure counted on the judge's own answers (the share of whole-point answers, the distinct
    answers), which may be the same in every resample as a fact about the judge (one that answers only whole
    points has a share of 1 in each): held to the floors and the undefined share, not to a nonzero width."""
    values = np.asarray(samples, dtype=np.float64).ravel()
    return guarded_bounds(int(np.isnan(values).sum()), values.size, support, bounds, what, counted=counted)


def guarded_bounds(
    n_undefined: int,
    n_resamples: int,
    support: Support,
    bounds: Sequence[float],
    what: str = "a CI",
    *,
    counted: bool = False,
) -> tuple[list[float] | None, dict]:
    """`guarded_interval` of a figure whose undefined resamples are already counted (`n_undefined` of
    `n_resamples`): many figures' counts come from one pass over all their replicates."""
    low, high = (float(bounds[0]), float(bounds[1]))
    reason = (
        withhold_reason(support, what)
        or undefined_share_reason(n_undefined, n_resamples, what)
        or (None if counted and not (math.isnan(low) or math.isnan(high)) else degenerate_reason(low, high, what))
    )
    facts = {"undefined": int(n_undefined), "n_resamples": int(n_resamples), "withheld": reason}
    return (None if reason else [low, high]), facts


def floor_description() -> dict:
    """The rule's numbers, for every output's metadata."""
    return {
        "min_ci_videos": MIN_CI_VIDEOS,
        "min_ci_clinicians": MIN_CI_CLUSTERS,
        "min_labelled_videos": MIN_LABELLED_VIDEOS,
        "max_undefined_share": MAX_UNDEFINED_SHARE,
        "rule": "below these floors a CI, p-value, rank or planned size is withheld with its reason, never shown"
        " degenerate",
    }
