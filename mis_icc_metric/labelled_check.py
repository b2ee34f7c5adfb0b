"""Does the expert-labelled set look like a random subset of the judged videos? (PPI's assumption, checked.)

PPI++ (and the experts-only mean) are unbiased only when the labelled videos are a uniformly random subset of
the judged ones (or, with `estimate --strata`, random within each stratum). Experts who rated the videos the
judge scored highest, or only time point 1, break that silently: the CI then covers the wrong mean. The check
compares the labelled with the unlabelled videos on what every video has:

- **the judge's mean score**, per dimension: the standardized mean difference (SMD: labelled minus unlabelled
  mean, over the judge's SD on all videos) and its z under random labelling, whose exact randomization variance
  is S^2 (1/n + 1/m) (S^2 the judge's variance over all N = n + m videos); within strata, the strata's
  differences weighted by their size;
- **the labelled share per time point, stimulus and clinician**: Pearson's statistic of the labelled counts per
  group against the counts a random subset (of the same size, per stratum) would give, its p-value from
  `N_DRAWS` random subsets (multivariate hypergeometric draws of the counts, exact for sparse tables such as
  78 clinicians with one or two labels each). The grouping used as strata is not checked (its shares are the
  design).

A check flags below `CHECK_ALPHA` divided by the number of checks made (Bonferroni), so a random labelled set
trips any of them with probability at most `CHECK_ALPHA` (measured: docs/estimates.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import ndtr  # the normal CDF (scipy.stats.norm.sf(z) = ndtr(-z), without its import)

from mis_bench_dataset.toolkit.defaults import DEFAULT_SEED
from mis_bench_dataset.video_ids import GROUP_ORDER, GROUPINGS, parse_video_id

# The family-wise false-alarm rate of the check: a random labelled set is flagged at most this often.
CHECK_ALPHA = 0.01
# Random labelled subsets drawn for the p-value of each share check (resolution 1 / (N_DRAWS + 1)).
N_DRAWS = 20_000

METHOD = (
    "labelled vs unlabelled videos: per dimension the judge's standardized mean difference (z under random "
    "labelling), per time point, stimulus and clinician the labelled share (Pearson statistic, p-value from "
    f"{N_DRAWS} random subsets of the same size); a check flags at p < {CHECK_ALPHA} / the number of checks "
    f"(Bonferroni: a random labelled set is flagged at most {CHECK_ALPHA:.0%} of the time)"
)


def _judge_difference(yhat: np.ndarray, labelled: np.ndarray, strata: np.ndarray) -> dict:
    """SMD, z and two-sided p of the judge's labelled-minus-unlabelled mean, pooled over strata by size."""
    total, difference, variance = yhat.size, 0.0, 0.0
    for h in np.unique(strata):
        inside = strata == h
        n, m = int((inside & labelled).sum()), int((inside & ~labelled).sum())
        if n == 0 or m == 0:  # a stratum wholly labelled or unlabelled compares nothing
            continue
        weight = (n + m) / total
        difference += weight * (yhat[inside & labelled].mean() - yhat[inside & ~labelled].mean())
        variance += weight**2 * yhat[inside].var(ddof=1) * (1 / n + 1 / m)
    spread = yhat.std(ddof=1) if yhat.size > 1 else 0.0
    if variance <= 0 or spread <= 0:
        return {"smd": None, "z": None, "p": None}
    z = difference / np.sqrt(variance)
    return {"smd": float(difference / spread), "z": float(z), "p": float(2 * ndtr(-abs(z)))}


def _share_check(groups: np.ndarray, labelled: np.ndarray, strata: np.ndarray, rng: np.random.Generator) -> dict:
    """The labelled share per group against random labelling within strata: Pearson statistic, Monte Carlo p."""
    names, codes = np.unique(groups, return_inverse=True)
    observed = np.bincount(codes[labelled], minlength=names.size).astype(np.float64)
    expected = np.zeros(names.size)
    null = np.zeros((N_DRAWS, names.size))
    for h in np.unique(strata):
        inside = strata == h
        sizes = np.bincount(codes[inside], minlength=names.size)
        n = int((inside & labelled).sum())
        expected += n * sizes / inside.sum()
        if 0 < n < inside.sum():
            null += rng.multivariate_hypergeometric(sizes, n, size=N_DRAWS)
    used = expected > 0
    statistic = float(np.sum((observed[used] - expected[used]) ** 2 / expected[used]))
    draws = np.sum((null[:, used] - expected[used]) ** 2 / expected[used], axis=1)
    p = float((1 + np.sum(draws >= statistic - 1e-9)) / (N_DRAWS + 1))
    sizes = np.bincount(codes, minlength=names.size)
    shares = {
        str(name): {
            "n_videos": int(sizes[i]),
            "n_labelled": int(observed[i]),
            "share": float(observed[i] / sizes[i]),
            "expected_share": float(expected[i] / sizes[i]),
        }
        for i, name in enumerate(names)
    }
    worst = max(shares, key=lambda g: abs(shares[g]["share"] - shares[g]["expected_share"]))
    return {"statistic": statistic, "p": p, "groups": shares, "largest_deviation": worst}


def _ordered(groups: dict, by: str) -> dict:
    order = GROUP_ORDER.get(by, ())
    return {g: groups[g] for g in [*[g for g in order if g in groups], *sorted(set(groups) - set(order))]}


def check_labelled_set(
    videos: Sequence[str],
    dimensions: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    *,
    strata: str | None = None,
    seed: int | None = DEFAULT_SEED,
) -> dict:
    """Compare the labelled with the unlabelled videos; `looks_random` is False (and `warning` says why in words)
    when any check flags. `videos`: the judged videos; `dimensions[key] = (rows, yhat, labelled)`: the rows of
    `videos` the judge scored on that dimension, its scores there and which of them an expert labelled (a video
    counts as labelled for the share checks when it is labelled in any dimension). `strata`: the grouping the
    labels were drawn within (`estimate --strata`), or None (one stratum). The share p-values are seeded."""
    ids = [parse_video_id(v) for v in videos]
    labelled_any = np.zeros(len(videos), bool)
    for rows, _, mask in dimensions.values():
        labelled_any[rows[mask]] = True
    stratum = np.array(["all"] * len(videos) if strata is None else [getattr(i, strata) for i in ids], dtype=object)
    judge = {
        key: _judge_difference(np.asarray(yhat, np.float64), np.asarray(mask, bool), stratum[rows])
        for key, (rows, yhat, mask) in dimensions.items()
    }
    rng = np.random.default_rng(seed)
    shares = {
        by: _share_check(np.array([getattr(i, by) for i in ids], dtype=object), labelled_any, stratum, rng)
        for by in GROUPINGS
        if by != strata
    }
    for by, check in shares.items():
        check["groups"] = _ordered(check["groups"], by)
    n_checks = sum(c["p"] is not None for c in judge.values()) + len(shares)
    threshold = CHECK_ALPHA / max(n_checks, 1)
    for check in [*judge.values(), *shares.values()]:
        check["flagged"] = check["p"] is not None and check["p"] < threshold
    warning = _warning(judge, shares, strata)
    defined = {k: c for k, c in judge.items() if c["smd"] is not None}
    largest = max(defined, key=lambda k: abs(defined[k]["smd"]), default=None)
    return {
        "looks_random": warning is None,
        "warning": warning,
        # The judge-score difference of largest size (signed, in the judge's SDs) and its dimension, for a summary.
        "smd": None if largest is None else defined[largest]["smd"],
        "smd_dimension": largest,
        "method": METHOD,
        "strata": strata,
        "alpha": CHECK_ALPHA,
        "per_check_threshold": threshold,
        "n_labelled_videos": int(labelled_any.sum()),
        "n_videos": len(videos),
        "judge_score": judge,
        "shares": shares,
    }


def _p(p: float) -> str:
    """`= 0.003`, or `< 0.0001` at the Monte Carlo floor 1 / (N_DRAWS + 1) (no random subset came as far)."""
    return f"< {1 / N_DRAWS:.0g}" if p <= 1 / (N_DRAWS + 1) + 1e-15 else f"= {p:.2g}"


def _warning(judge: dict, shares: dict, strata: str | None) -> str | None:
    """The flagged checks in words, with what to do; None when none flags."""
    from mis_bench_dataset.dimensions import DIMENSION_BY_KEY

    found = []
    flagged = {k: c for k, c in judge.items() if c["flagged"]}
    if flagged:
        worst = max(flagged, key=lambda k: abs(flagged[k]["smd"]))
        found.append(
            f"the judge's mean score differs on {len(flagged)} dimension(s) (largest: "
            f"{DIMENSION_BY_KEY[worst].abbreviation}, {flagged[worst]['smd']:+.2f} SD on the labelled videos)"
        )
    for by, check in shares.items():
        if check["flagged"]:
            group = check["groups"][check["largest_deviation"]]
            found.append(
                f"the labelled share differs by {by.replace('_', ' ')} ({check['largest_deviation']}: "
                f"{group['share']:.0%} labelled, {group['expected_share']:.0%} expected; p {_p(check['p'])})"
            )
    if not found:
        return None
    clinicians = shares.get("clinician")
    if clinicians and clinicians["flagged"] and all(g["share"] in (0.0, 1.0) for g in clinicians["groups"].values()):
        found.append(
            "the labelled videos are whole clinicians: if those were drawn at random (a cluster sample), the "
            "estimate stays unbiased (the differences above are the clinicians drawn) but only the "
            "clinician-bootstrap CI allows for the design"
        )
    design = f"like a random subset within each {strata.replace('_', ' ')}" if strata else "like a random subset"
    return (
        f"the expert-labelled videos do not look {design} of the judged ones: {'; '.join(found)}. PPI++ and the "
        "experts-only mean assume they are, so their estimates may be biased and their CIs miss. If the labels "
        "were drawn at random within groups at known shares, give the grouping with --strata; otherwise label a "
        "random subset"
    )
