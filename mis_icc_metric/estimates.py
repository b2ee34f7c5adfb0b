"""Mean expert-scale scores from a judge on every video and experts on a few (`mis-bench estimate`).

Per dimension (and per group with `by`, and between groups): the PPI++ estimate (`mis_icc_metric.ppi`), beside the
classical one (the expert labels alone) and the judge-only one (the judge's mean, biased by whatever offset the
judge has: its CI does not know that). Optionally a clinician-clustered variant: the same PPI++ estimator
recomputed in every resample of a `Resampling` (clinicians drawn with replacement, all their videos kept), with
percentile CIs, for when videos of one clinician are not independent draws.

Never confidently wrong: every CI follows `reporting_floor` (withheld with its reason below the labelled videos or
clinicians it needs, past the share of undefined resamples, at zero width); each row's `cite` names the one CI to
cite; `labelled_check` (`mis_icc_metric.labelled_check`) says whether the labelled videos look like a random subset,
and `strata` (a known design: random within time points, stimuli or clinicians) gives stratified PPI++.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.toolkit.defaults import DEFAULT_CONFIDENCE, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.video_ids import GROUP_ORDER
from mis_bench_dataset.video_ids import GROUPINGS as ID_GROUPINGS
from mis_bench_dataset.wording import RESEARCH_USE
from mis_icc_metric.bootstrap import percentile_ci, resampled_chunks
from mis_icc_metric.groups import group_labels
from mis_icc_metric.labelled_check import check_labelled_set
from mis_icc_metric.ppi import (
    IID_ASSUMPTION,
    MIN_LABELLED,
    Interval,
    classical_difference,
    classical_mean,
    normal_quantile,
    ppi_difference,
    ppi_mean,
    stratified_ppi_mean,
    weighted_ppi_means,
)
from mis_icc_metric.reporting_floor import (
    Support,
    degenerate_reason,
    floor_description,
    guarded_interval,
    withhold_reason,
)

Key = tuple[str, str]
# `estimate --by`: the groupings with an order of their own (a cohort's time points, the stimuli)
GROUPINGS = GROUP_ORDER
PURPOSE = RESEARCH_USE
# `estimate --strata`: what the expert labels may have been drawn within (a stratum per time point, stimulus or
# clinician), at a known share per stratum.
STRATA: tuple[str, ...] = ID_GROUPINGS
METHOD = "PPI++ (Angelopoulos, Duchi & Zrnic 2023) with a power-tuned lambda, as ppi_py 0.2.3 computes it"
STRATIFIED_METHOD = (
    "stratified PPI++ by {strata}: PPI++ (power-tuned, as ppi_py 0.2.3 computes it) within each stratum, weighted "
    "by the stratum's share of the judged videos; the experts-only mean weighted the same way"
)
STRATIFIED_ASSUMPTION = (
    "the CLT interval of stratified PPI++: videos independent, the expert-labelled ones a uniformly random subset "
    "of the judged ones within each {strata} (the share labelled may differ between strata)"
)
CITE_WHY = {
    "clinician_bootstrap": "cite the PPI++ estimate with its clinician-bootstrap CI: it resamples clinicians, "
    "whose videos are not independent; the CLT CI beside it (ppi_py's) takes videos as independent, for "
    "comparison",
    "ppi_clt": "cite the PPI++ estimate with its CLT CI (ppi_py's); it takes videos as independent (a clinician "
    "bootstrap, --resample clinician, gives the CI to cite where a clinician's videos resemble each other)",
}
BIASED_NOTE = "judge-only: the judge's scores taken as gold; biased by the judge's offset, its CI ignores that"


class _Dimension:
    """One dimension's judged videos: judge score, gold (NaN where unlabelled), group, stratum and clinician, and
    its row in `videos`."""

    def __init__(self, key: str, judge: Mapping[Key, float | None], experts: Mapping[Key, float], videos, design):
        by, strata = design
        self.key = key
        self.rows = np.array([i for i, v in enumerate(videos) if judge.get((v, key)) is not None], dtype=np.int64)
        ids = [videos[i] for i in self.rows]
        self.yhat = np.array([judge[(v, key)] for v in ids], dtype=np.float64)
        self.y = np.array([experts.get((v, key), np.nan) for v in ids], dtype=np.float64)
        self.labelled = ~np.isnan(self.y)
        self.group = np.array(["all"] * len(ids) if by is None else group_labels(ids, by), dtype=object)
        self.stratum = np.array(["all"] * len(ids) if strata is None else group_labels(ids, strata), dtype=object)
        self.stratified = strata is not None
        self.clinician = np.array(group_labels(ids, "clinician"), dtype=object)

    def mask(self, group: str | None = None) -> np.ndarray:
        return np.ones(self.rows.size, bool) if group is None else self.group == group

    def part(self, group: str | None = None):
        mask = self.mask(group)
        lab, unl = mask & self.labelled, mask & ~self.labelled
        return self.y[lab], self.yhat[lab], self.yhat[unl]

    def strata(self, group: str | None = None):
        mask = self.mask(group)
        return self.stratum[mask & self.labelled], self.stratum[mask & ~self.labelled]

    def n_labelled(self, group: str | None = None) -> int:
        return int((self.mask(group) & self.labelled).sum())

    def labelled_clinicians(self, group: str | None = None) -> int:
        return int(np.unique(self.clinician[self.mask(group) & self.labelled]).size)

    def ppi(self, group: str | None = None, confidence: float = DEFAULT_CONFIDENCE, lam: float | None = None):
        """The (stratified, with `--strata`) PPI++ mean of the group; `lam=0.0`: the experts-only mean."""
        if self.stratified:
            return stratified_ppi_mean(*self.part(group), *self.strata(group), confidence=confidence, lam=lam)
        if lam == 0.0:
            return classical_mean(self.part(group)[0], confidence=confidence)
        return ppi_mean(*self.part(group), confidence=confidence)


def _guarded(interval: Interval, support: Support, what: str = "a CI") -> dict:
    """`interval.as_dict()` with its CI withheld (None, and the reason) below the floor or at zero width."""
    out = interval.as_dict()
    reason = withhold_reason(support, what) or degenerate_reason(interval.low, interval.high, what)
    if reason:
        out["ci"], out["width"] = None, None
    return {**out, "withheld": reason}


def _mean_block(dim: _Dimension, group: str | None, confidence: float) -> dict:
    y, yhat, yhat_unlabeled = dim.part(group)
    every = np.concatenate([yhat, yhat_unlabeled])
    ppi, classical = dim.ppi(group, confidence), dim.ppi(group, confidence, lam=0.0)
    judge_only = classical_mean(every, confidence=confidence)
    return _block(ppi, classical, judge_only, (y.size, yhat_unlabeled.size, every.size), "a CI")


def _block(ppi: Interval, classical: Interval, judge_only: Interval, counts: tuple[int, int, int], what: str) -> dict:
    """The three estimates of one row, each CI under the floor rule. `counts`: (labelled, unlabelled, judged)
    videos; PPI++ and experts-only rest on the labelled ones, judge-only on the judged ones (for a difference:
    the fewer of one group)."""
    n, big_n, judged = counts
    labelled = Support(n, unit="labelled")
    block = {
        "n_labelled": n,
        "n_unlabelled": big_n,
        "ppi": _guarded(ppi, labelled, what),
        "classical": _guarded(classical, labelled, what),
        "judge_only": {**_guarded(judge_only, Support(judged, unit="video"), what), "biased": True},
    }
    # Classical labels that would give the PPI width: n x (classical width / PPI width)^2.
    widths = block["ppi"]["width"], block["classical"]["width"]
    block["effective_labels"] = n * (widths[1] / widths[0]) ** 2 if None not in widths and widths[0] > 0 else None
    return block


def _stratified_difference(dim: _Dimension, a: str, b: str, confidence: float, lam: float | None) -> Interval:
    """mean(b) - mean(a) of two stratified means (disjoint videos: independent), SEs added in quadrature."""
    first, second = dim.ppi(a, confidence, lam), dim.ppi(b, confidence, lam)
    se = np.hypot(first.width, second.width) / (2 * normal_quantile(confidence))
    half = normal_quantile(confidence) * se
    n_a, n_b = int(dim.mask(a).sum()), int(dim.mask(b).sum())
    mixed = (n_a * first.lam + n_b * second.lam) / (n_a + n_b) if first.lam is not None else None
    point = second.estimate - first.estimate
    return Interval(point, point - half, point + half, mixed)


def _difference_block(dim: _Dimension, a: str, b: str, confidence: float) -> dict:
    keep = (dim.group == a) | (dim.group == b)
    lab, unl = keep & dim.labelled, keep & ~dim.labelled
    in_b = dim.group == b
    y_a, y_b = dim.y[lab & ~in_b], dim.y[lab & in_b]
    if dim.stratified:
        ppi = _stratified_difference(dim, a, b, confidence, None)
        classical = _stratified_difference(dim, a, b, confidence, 0.0)
    else:
        if unl.any():
            ppi = ppi_difference(dim.y[lab], dim.yhat[lab], in_b[lab], dim.yhat[unl], in_b[unl], confidence=confidence)
        else:
            ppi = Interval(**vars(classical_difference(y_a, y_b, confidence=confidence)) | {"lam": 0.0})
        classical = classical_difference(y_a, y_b, confidence=confidence)
    judge_only = classical_difference(dim.yhat[keep & ~in_b], dim.yhat[keep & in_b], confidence=confidence)
    judged = min(int((keep & ~in_b).sum()), int((keep & in_b).sum()))
    counts = (min(y_a.size, y_b.size), int(unl.sum()), judged)
    block = _block(ppi, classical, judge_only, counts, "a CI of a difference")
    block["n_labelled"] = int(lab.sum())  # the row's count; the floor read the fewer of one group
    return block


_LISTED = 24  # the shortages an error line names before "and k more" (one per clinician stratum can be 78)


def _check_labelled(dims: dict[str, _Dimension], groups: tuple[str, ...], by: str | None, missed: dict) -> None:
    """Every (group, dimension) (and stratum, with `--strata`) has the labelled videos an estimate needs; else one
    error listing all that lack them. `missed[key]`: labelled videos the judge left unscored on that dimension
    (then the judge, not the experts, is short, and the message says so)."""
    short, stratified = [], any(d.stratified for d in dims.values())
    for key, dim in dims.items():
        abbreviation = DIMENSION_BY_KEY[key].abbreviation
        before = len(short)
        for group in groups:
            mask = dim.group == group
            for stratum in np.unique(dim.stratum[mask]):
                n = int((dim.labelled & mask & (dim.stratum == stratum)).sum())
                if n < MIN_LABELLED:
                    parts = [*([group] if by else []), abbreviation, *([f"stratum {stratum}"] if stratified else [])]
                    short.append(f"{'/'.join(parts)}: {n}")
        if len(short) > before and missed.get(key):
            short[-1] += f" (the judge left {missed[key]} labelled video(s) unscored on {abbreviation})"
    if short:
        per = ("group, " if by else "") + ("stratum and " if stratified else "")
        hint = "have the judge score the labelled videos it left unscored, or " if any(missed.values()) else ""
        raise DataError(
            f"too few expert-labelled videos for an estimate (at least {MIN_LABELLED} per {per}dimension): "
            f"{', '.join(short[:_LISTED])}" + (f" and {len(short) - _LISTED} more" if len(short) > _LISTED else ""),
            hint=hint
            + "label more of these videos"
            + (", or use a coarser --strata" if stratified else "")
            + (f", or leave out --by {by}" if by else ""),
        )


def _judged_keys(judge: Mapping[Key, float | None], experts: Mapping[Key, float]) -> tuple[list[str], list[str]]:
    """The dimensions the judge scored (some video parsed), and those the experts labelled that it never scored."""
    scored = {d for (_, d), value in judge.items() if value is not None}
    labelled = {d for _, d in experts}
    keys = [k for k in DIMENSION_KEYS if k in scored]
    return keys, [k for k in DIMENSION_KEYS if k in labelled and k not in scored]


def estimate_means(
    judge: Mapping[Key, float | None],
    experts: Mapping[Key, float],
    *,
    by: str | None = None,
    strata: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    resampling=None,
    seed: int | None = DEFAULT_SEED,
) -> dict:
    """PPI++, classical and judge-only means per dimension (per group and between groups with `by`).

    `judge`: the judge's score of every video it scored (None: unparsed, left out); `experts`: the gold of the
    labelled videos. `strata`: the grouping the expert labels were drawn within at known shares (stratified
    PPI++, `ppi.stratified_ppi_mean`), or None (a uniformly random subset). `resampling`: a `Resampling` over
    `sorted judged videos` (see `judged_videos`) adds the clustered variant. Every CI follows the floor rule
    (`reporting_floor`); each row's `cite` names the one to cite; `labelled_check` says whether the labelled
    videos look random (`seed`: its Monte Carlo p-values).
    """
    for name, value, choices in (("group", by, GROUPINGS), ("stratify", strata, STRATA)):
        if value is not None and value not in choices:
            raise UsageError(f"cannot {name} by {value!r}", hint=f"choose one of {', '.join(choices)}")
    videos = judged_videos(judge)
    expert_videos = {v for v, _ in experts}
    overlap = expert_videos & set(videos)
    if not overlap:
        raise DataError(
            f"no expert-labelled video is among the judge's videos ({len(expert_videos)} labelled, "
            f"{len(videos)} judged)",
            hint="give expert labels of videos the judge scored (the same video ids)",
        )
    keys, not_judged = _judged_keys(judge, experts)
    dims = {k: _Dimension(k, judge, experts, videos, (by, strata)) for k in keys}
    present = {str(g) for dim in dims.values() for g in dim.group}
    groups = tuple(g for g in (GROUPINGS[by] if by else ("all",)) if g in present)
    missed = {
        k: sum(1 for v in videos if (v, k) in experts and judge.get((v, k)) is None) for k in dims
    }  # labelled videos the judge scored on other dimensions but not this one
    _check_labelled(dims, groups, by, missed)
    result: dict = {
        "purpose": PURPOSE,
        "method": METHOD if strata is None else STRATIFIED_METHOD.format(strata=strata),
        "assumes": IID_ASSUMPTION if strata is None else STRATIFIED_ASSUMPTION.format(strata=strata),
        "judge_only_note": BIASED_NOTE,
        "confidence": confidence,
        "by": by,
        "strata": strata,
        "n_judged_videos": len(videos),
        "n_expert_videos": len(expert_videos),
        "n_expert_videos_not_judged": len(expert_videos - set(videos)),
        "dimensions_not_judged": not_judged,
        "floor": floor_description(),
        "labelled_check": check_labelled_set(
            videos, {k: (d.rows, d.yhat, d.labelled) for k, d in dims.items()}, strata=strata, seed=seed
        ),
        "dimensions": {
            k: {"abbreviation": DIMENSION_BY_KEY[k].abbreviation, **_mean_block(d, None, confidence)}
            for k, d in dims.items()
        },
    }
    if by is not None:
        result["groups"] = {g: {k: _mean_block(d, g, confidence) for k, d in dims.items()} for g in groups}
        result["differences"] = {
            f"{b} - {a}": {k: _difference_block(d, a, b, confidence) for k, d in dims.items()}
            for a, b in combinations(groups, 2)
        }
    if resampling is not None:
        result["clustered"] = clustered_estimates(dims, groups, by, resampling, confidence)
    _attach_cite(result)
    return result


def _attach_cite(result: dict) -> None:
    """Each row's `cite`: the estimate and CI to cite (the clinician-bootstrap one where clinicians were
    resampled, else the CLT one), and `result["cite"]` saying which and why."""
    clustered = result.get("clustered")
    source = "clinician_bootstrap" if clustered and clustered["resampling"]["unit"] == "clinician" else "ppi_clt"
    result["cite"] = {"source": source, "why": CITE_WHY[source]}
    tables = [("dimensions", result["dimensions"], clustered and clustered["dimensions"])]
    for section in ("groups", "differences"):
        for name, blocks in (result.get(section) or {}).items():
            tables.append((section, blocks, clustered and clustered[section][name]))
    for _, blocks, cl in tables:
        for key, block in blocks.items():
            chosen = cl[key] if source == "clinician_bootstrap" else block["ppi"]
            block["cite"] = {
                "estimate": chosen["estimate"],
                "ci": chosen["ci"],
                "withheld": chosen["withheld"],
                "source": source,
            }


def judged_videos(judge: Mapping[Key, float | None]) -> list[str]:
    """The videos the judge scored (at least one parsed dimension), sorted: the items a `Resampling` draws."""
    return sorted({v for (v, _), value in judge.items() if value is not None})


def _replicates(dim: _Dimension, group: str | None, counts: np.ndarray, columns) -> np.ndarray:
    """The (stratified) PPI++ mean of one part in every resample (B,): per stratum `weighted_ppi_means`, weighted
    by the stratum's resampled size; NaN where a drawn stratum has no estimate."""
    labelled, y, yhat, include, strata = columns
    if strata is None:
        return weighted_ppi_means(counts, labelled, y, yhat, include=include)[0]
    total, estimate = np.zeros(counts.shape[0]), np.zeros(counts.shape[0])
    for h in np.unique(strata[include]):
        inside = include & (strata == h)
        size = counts @ inside
        part = weighted_ppi_means(counts, labelled, y, yhat, include=inside)[0]
        total += size
        estimate += np.where(size > 0, size * part, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return estimate / total


def clustered_estimates(dims: dict[str, _Dimension], groups, by, resampling, confidence: float) -> dict:
    """The PPI++ means (and differences) in every resample of `resampling`, percentile CIs (vectorised; the
    resample counts are drawn chunk by chunk, `bootstrap.resampled_chunks`, so memory stays bounded). Each CI
    follows the floor rule: withheld below the labelled videos or (resampling clinicians) the clinicians with a
    label, past the share of undefined resamples, or at zero width; the undefined resamples are counted."""
    parts = [(key, None) for key in dims] + ([(key, g) for key in dims for g in groups] if by else [])
    columns = {part: _weighted_columns(dims[part[0]], part[1], resampling.n_items) for part in parts}
    replicates = {part: np.empty(resampling.n_resamples) for part in parts}
    for rows, counts in resampled_chunks(resampling, resampling.n_items):
        for part, cols in columns.items():
            replicates[part][rows] = _replicates(dims[part[0]], part[1], counts, cols)

    def block(values: np.ndarray, estimate: float, n_labelled: int, n_clinicians: int) -> dict:
        low, high = percentile_ci(values, confidence)
        support = Support(n_labelled, n_clinicians, unit=resampling.unit)
        reason = withhold_reason(Support(n_labelled, unit="labelled"))
        bounds, facts = guarded_interval(values, support, [low, high])
        reason = reason or facts["withheld"]
        return {
            "estimate": estimate,
            "ci": None if reason else bounds,
            "width": None if reason else float(high - low),
            "n_undefined": facts["undefined"],
            "n_resamples": facts["n_resamples"],
            "withheld": reason,
        }

    out: dict = {"resampling": resampling.describe(), "dimensions": {}, "groups": {}, "differences": {}}
    for key, dim in dims.items():
        point = {g: dim.ppi(g).estimate for g in (None, *(groups if by else ()))}
        out["dimensions"][key] = block(
            replicates[(key, None)], point[None], dim.n_labelled(), dim.labelled_clinicians()
        )
        for g in groups if by else ():
            out["groups"].setdefault(g, {})[key] = block(
                replicates[(key, g)], point[g], dim.n_labelled(g), dim.labelled_clinicians(g)
            )
        for a, b in combinations(groups, 2) if by else ():
            difference = replicates[(key, b)] - replicates[(key, a)]
            out["differences"].setdefault(f"{b} - {a}", {})[key] = block(
                difference,
                point[b] - point[a],
                min(dim.n_labelled(a), dim.n_labelled(b)),
                min(dim.labelled_clinicians(a), dim.labelled_clinicians(b)),
            )
    return out


def _weighted_columns(dim: _Dimension, group: str | None, n_items: int):
    """(labelled, y, yhat, include, strata) over every video of the plan: 0 outside this dimension's (group's)
    videos; strata None without `--strata`."""
    keep = np.ones(dim.rows.size, bool) if group is None else dim.group == group
    rows = dim.rows[keep]
    labelled, include = np.zeros(n_items, bool), np.zeros(n_items, bool)
    y, yhat = np.zeros(n_items), np.zeros(n_items)
    include[rows], labelled[rows], y[rows], yhat[rows] = True, dim.labelled[keep], dim.y[keep], dim.yhat[keep]
    strata = None
    if dim.stratified:
        strata = np.full(n_items, "", dtype=object)
        strata[rows] = dim.stratum[keep]
    return labelled, y, yhat, include, strata


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
