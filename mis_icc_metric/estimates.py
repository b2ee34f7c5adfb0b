"""Mean expert-scale scores from a judge on every video and experts on a few (`mis-bench estimate`).

Per dimension (and per group with `by`, and between groups): the PPI++ estimate (`mis_icc_metric.ppi`), beside the
classical one (the expert labels alone) and the judge-only one (the judge's mean, biased by whatever offset the
judge has: its CI does not know that). Optionally a clinician-clustered variant: the same PPI++ estimator
recomputed in every resample of a `Resampling` (clinicians drawn with replacement, all their videos kept), with
percentile CIs, for when videos of one clinician are not independent draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import numpy as np

from mis_bench_dataset.dimensions import (
    DEFAULT_CONFIDENCE,
    DEFAULT_SEED,
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
    RESEARCH_USE,
)
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.video_ids import GROUP_ORDER
from mis_icc_metric.bootstrap import percentile_ci, resampled_chunks
from mis_icc_metric.groups import group_labels
from mis_icc_metric.ppi import (
    IID_ASSUMPTION,
    MIN_LABELLED,
    Interval,
    classical_difference,
    classical_mean,
    normal_quantile,
    ppi_difference,
    ppi_mean,
    weighted_ppi_means,
)

Key = tuple[str, str]
# `estimate --by`: the groupings with an order of their own (a cohort's time points, the stimuli)
GROUPINGS = GROUP_ORDER
PURPOSE = RESEARCH_USE
BIASED_NOTE = "judge-only: the judge's scores taken as gold; biased by the judge's offset, its CI ignores that"


class _Dimension:
    """One dimension's judged videos: judge score, gold (NaN where unlabelled), group, and its row in `videos`."""

    def __init__(self, key: str, judge: Mapping[Key, float | None], experts: Mapping[Key, float], videos, by):
        self.rows = np.array([i for i, v in enumerate(videos) if judge.get((v, key)) is not None], dtype=np.int64)
        ids = [videos[i] for i in self.rows]
        self.yhat = np.array([judge[(v, key)] for v in ids], dtype=np.float64)
        self.y = np.array([experts.get((v, key), np.nan) for v in ids], dtype=np.float64)
        self.labelled = ~np.isnan(self.y)
        self.group = np.array(["all"] * len(ids) if by is None else group_labels(ids, by), dtype=object)

    def part(self, group: str | None = None):
        mask = np.ones(self.rows.size, bool) if group is None else self.group == group
        lab, unl = mask & self.labelled, mask & ~self.labelled
        return self.y[lab], self.yhat[lab], self.yhat[unl]


def _mean_block(y, yhat, yhat_unlabeled, confidence: float) -> dict:
    every = np.concatenate([yhat, yhat_unlabeled])
    ppi = ppi_mean(y, yhat, yhat_unlabeled, confidence=confidence)
    classical = classical_mean(y, confidence=confidence)
    return _block(ppi, classical, classical_mean(every, confidence=confidence), y.size, yhat_unlabeled.size)


def _block(ppi: Interval, classical: Interval, judge_only: Interval, n: int, big_n: int) -> dict:
    return {
        "n_labelled": n,
        "n_unlabelled": big_n,
        "ppi": ppi.as_dict(),
        "classical": classical.as_dict(),
        "judge_only": {**judge_only.as_dict(), "biased": True},
        # Classical labels that would give the PPI width: n x (classical width / PPI width)^2.
        "effective_labels": n * (classical.width / ppi.width) ** 2 if ppi.width > 0 else None,
    }


def _difference_block(dim: _Dimension, a: str, b: str, confidence: float) -> dict:
    keep = (dim.group == a) | (dim.group == b)
    lab, unl = keep & dim.labelled, keep & ~dim.labelled
    in_b = dim.group == b
    y_a, y_b = dim.y[lab & ~in_b], dim.y[lab & in_b]
    if unl.any():
        ppi = ppi_difference(dim.y[lab], dim.yhat[lab], in_b[lab], dim.yhat[unl], in_b[unl], confidence=confidence)
    else:
        ppi = Interval(**vars(classical_difference(y_a, y_b, confidence=confidence)) | {"lam": 0.0})
    classical = classical_difference(y_a, y_b, confidence=confidence)
    judge_only = classical_difference(dim.yhat[keep & ~in_b], dim.yhat[keep & in_b], confidence=confidence)
    return _block(ppi, classical, judge_only, int(lab.sum()), int(unl.sum()))


def _check_labelled(dims: dict[str, _Dimension], groups: tuple[str, ...], by: str | None) -> None:
    """Every (group, dimension) has the labelled videos a CI needs; else one error listing all that lack them."""
    short = []
    for key, dim in dims.items():
        for group in groups:
            n = int((dim.labelled & (dim.group == group)).sum())
            if n < MIN_LABELLED:
                where = (
                    DIMENSION_BY_KEY[key].abbreviation
                    if by is None
                    else f"{group}/{DIMENSION_BY_KEY[key].abbreviation}"
                )
                short.append(f"{where}: {n}")
    if short:
        raise DataError(
            f"too few expert-labelled videos for a CI (at least {MIN_LABELLED} per "
            f"{'group and ' if by else ''}dimension): {', '.join(short)}",
            hint="label more of these videos" + (f", or leave out --by {by}" if by else ""),
        )


def estimate_means(
    judge: Mapping[Key, float | None],
    experts: Mapping[Key, float],
    *,
    by: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    resampling=None,
) -> dict:
    """PPI++, classical and judge-only means per dimension (per group and between groups with `by`).

    `judge`: the judge's score of every video it scored (None: unparsed, left out); `experts`: the gold of the
    labelled videos. `resampling`: a `Resampling` over `sorted judged videos` (see `judged_videos`) adds the
    clustered variant.
    """
    if by is not None and by not in GROUPINGS:
        raise UsageError(f"cannot group by {by!r}", hint=f"choose one of {', '.join(GROUPINGS)}")
    videos = judged_videos(judge)
    expert_videos = {v for v, _ in experts}
    overlap = expert_videos & set(videos)
    if not overlap:
        raise DataError(
            f"no expert-labelled video is among the judge's videos ({len(expert_videos)} labelled, "
            f"{len(videos)} judged)",
            hint="give expert labels of videos the judge scored (the same video ids)",
        )
    keys = [k for k in DIMENSION_KEYS if any(d == k for _, d in judge)]
    dims = {k: _Dimension(k, judge, experts, videos, by) for k in keys}
    present = {str(g) for dim in dims.values() for g in dim.group}
    groups = tuple(g for g in (GROUPINGS[by] if by else ("all",)) if g in present)
    _check_labelled(dims, groups, by)
    result: dict = {
        "purpose": PURPOSE,
        "method": "PPI++ (Angelopoulos, Duchi & Zrnic 2023) with a power-tuned lambda, as ppi_py 0.2.3 computes it",
        "assumes": IID_ASSUMPTION,
        "judge_only_note": BIASED_NOTE,
        "confidence": confidence,
        "by": by,
        "n_judged_videos": len(videos),
        "n_expert_videos": len(expert_videos),
        "n_expert_videos_not_judged": len(expert_videos - set(videos)),
        "dimensions": {
            k: {"abbreviation": DIMENSION_BY_KEY[k].abbreviation, **_mean_block(*d.part(), confidence)}
            for k, d in dims.items()
        },
    }
    if by is not None:
        result["groups"] = {g: {k: _mean_block(*d.part(g), confidence) for k, d in dims.items()} for g in groups}
        result["differences"] = {
            f"{b} - {a}": {k: _difference_block(d, a, b, confidence) for k, d in dims.items()}
            for a, b in combinations(groups, 2)
        }
    if resampling is not None:
        result["clustered"] = clustered_estimates(dims, groups, by, resampling, confidence)
    return result


def judged_videos(judge: Mapping[Key, float | None]) -> list[str]:
    """The videos the judge scored (at least one parsed dimension), sorted: the items a `Resampling` draws."""
    return sorted({v for (v, _), value in judge.items() if value is not None})


def clustered_estimates(dims: dict[str, _Dimension], groups, by, resampling, confidence: float) -> dict:
    """The PPI++ means (and differences) in every resample of `resampling`, percentile CIs (vectorised; the
    resample counts are drawn chunk by chunk, `bootstrap.resampled_chunks`, so memory stays bounded)."""
    parts = [(key, None) for key in dims] + ([(key, g) for key in dims for g in groups] if by else [])
    columns = {part: _weighted_columns(dims[part[0]], part[1], resampling.n_items) for part in parts}
    replicates = {part: np.empty(resampling.n_resamples) for part in parts}
    for rows, counts in resampled_chunks(resampling, resampling.n_items):
        for part, (labelled, y, yhat, include) in columns.items():
            replicates[part][rows] = weighted_ppi_means(counts, labelled, y, yhat, include=include)[0]

    def block(values: np.ndarray, estimate: float) -> dict:
        low, high = percentile_ci(values, confidence)
        return {
            "estimate": estimate,
            "ci": [float(low), float(high)],
            "width": float(high - low),
            "n_undefined": int(np.isnan(values).sum()),
        }

    out: dict = {"resampling": resampling.describe(), "dimensions": {}, "groups": {}, "differences": {}}
    for key, dim in dims.items():
        out["dimensions"][key] = block(replicates[(key, None)], ppi_mean(*dim.part()).estimate)
        for g in groups if by else ():
            out["groups"].setdefault(g, {})[key] = block(replicates[(key, g)], ppi_mean(*dim.part(g)).estimate)
        for a, b in combinations(groups, 2) if by else ():
            point = ppi_mean(*dim.part(b)).estimate - ppi_mean(*dim.part(a)).estimate
            difference = replicates[(key, b)] - replicates[(key, a)]
            out["differences"].setdefault(f"{b} - {a}", {})[key] = block(difference, point)
    return out


def _weighted_columns(dim: _Dimension, group: str | None, n_items: int):
    """(labelled, y, yhat, include) over every video of the plan: 0 outside this dimension's (group's) videos."""
    keep = np.ones(dim.rows.size, bool) if group is None else dim.group == group
    rows = dim.rows[keep]
    labelled, include = np.zeros(n_items, bool), np.zeros(n_items, bool)
    y, yhat = np.zeros(n_items), np.zeros(n_items)
    include[rows], labelled[rows], y[rows], yhat[rows] = True, dim.labelled[keep], dim.y[keep], dim.yhat[keep]
    return labelled, y, yhat, include


def ppi_coverage_simulation(
    judge: Mapping[Key, float | None],
    gold: Mapping[Key, float],
    *,
    share: float = 0.1,
    n_draws: int = 500,
    seed: int | None = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """How far PPI++ can be trusted on a fully labelled set: reveal the gold of a random `share` of the videos
    (`n_draws` times), estimate each dimension's mean gold, and count how often the CI covers the mean gold of
    all the videos; with the experts-only CI's coverage and width beside it, and the judge-only mean's.

    Vectorised over draws (`weighted_ppi_means` on 0/1 masks). Seeded; the draws are shared by the dimensions.
    """

    if not 0 < share < 1:
        raise UsageError(f"share must be in (0, 1), got {share}")
    z = normal_quantile(confidence)
    videos = sorted({v for (v, d), value in judge.items() if value is not None and (v, d) in gold})
    rng = np.random.default_rng(seed)
    keys = rng.random((n_draws, len(videos)))  # one random order of the videos per draw
    per_dim: dict = {}
    for key in (k for k in DIMENSION_KEYS if any((v, k) in gold for v in videos)):
        rows = np.array([i for i, v in enumerate(videos) if judge.get((v, key)) is not None and (v, key) in gold])
        y = np.array([gold[(videos[i], key)] for i in rows])
        yhat = np.array([judge[(videos[i], key)] for i in rows])
        k = max(MIN_LABELLED, int(round(share * rows.size)))
        masks = np.zeros((n_draws, rows.size))
        # The k videos with the smallest random keys: where dimensions share videos they share the draw.
        picked = np.argsort(keys[:, rows], axis=1)[:, :k]
        np.put_along_axis(masks, picked, 1.0, axis=1)
        estimate, se, lam = weighted_ppi_means(np.ones_like(masks), masks > 0, y, yhat)
        n = masks.sum(1)
        mean_y = masks @ y / n
        sd_y = np.sqrt(np.maximum(masks @ y**2 / n - mean_y**2, 0.0))
        classical_half = z * sd_y / np.sqrt(n)
        truth = float(y.mean())
        per_dim[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "n_videos": int(rows.size),
            "n_labelled": k,
            "truth": truth,
            "ppi_coverage": float(np.mean(np.abs(estimate - truth) <= z * se)),
            "classical_coverage": float(np.mean(np.abs(mean_y - truth) <= classical_half)),
            "ppi_width": float(np.mean(2 * z * se)),
            "classical_width": float(np.mean(2 * classical_half)),
            "mean_lambda": float(np.mean(lam)),
            "judge_only_bias": float(yhat.mean() - truth),
        }
        per_dim[key]["width_ratio"] = per_dim[key]["ppi_width"] / per_dim[key]["classical_width"]
    values = list(per_dim.values())
    return {
        "purpose": PURPOSE,
        "method": f"reveal the gold of a random {share:.0%} of the videos, {n_draws} draws (seed {seed}); the "
        f"target is each dimension's mean gold over all of them; {confidence:.0%} CIs",
        "dimensions": per_dim,
        "pooled": {
            name: float(np.mean([v[name] for v in values]))
            for name in ("ppi_coverage", "classical_coverage", "ppi_width", "classical_width", "width_ratio")
        },
    }
