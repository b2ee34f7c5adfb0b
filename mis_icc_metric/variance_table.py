"""Every source of variance of a judge's ICC in one table: per dimension, how much the ICC(3,1) spreads with the
videos and the clinicians drawn (the bootstrap, both plans of `resampling`), with the sample drawn from the judge
(`--samples`: each sample's scores scored on their own) and with the prompt's wording (the unperturbed prompt and
its rubric paraphrases, each scored on its own), and a CI that includes them all.

The combined CI adds the prompt and sampling spread to the clinician resampling: replicate b is the unperturbed
arm's ICC on clinician resample b plus the deviation from their mean of one prompt variant's ICC and of one
sample's ICC, each drawn uniformly (seeded) for that replicate; its percentile interval is the CI. Every ICC of
every arm and sample comes from one `bootstrap_blocks` call on one shared plan per unit (no loop over resamples).

What it is for: research on judges (how much of a judge's number is its prompt); not therapist evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.wording import RESEARCH_USE

from .bootstrap import bootstrap_blocks, guarded_ci, point_blocks, quiet_nanmean, quiet_nanvar
from .reporting_floor import floor_description
from .resampling import block_supports, clinician_labels, make_resampling, weakest_support
from .scoring import MIN_ITEMS, Key

__all__ = ["variance_sources"]


def _columns(arms: Sequence[Mapping[Key, object]], references, videos, dims):
    """ratings (videos, arms x dims, 2) and valid: block a * len(dims) + j is arm a's dimension j."""
    row = {v: i for i, v in enumerate(videos)}
    ratings = np.zeros((len(videos), len(arms) * len(dims), 2))
    valid = np.zeros((len(videos), len(arms) * len(dims)), dtype=bool)
    for (video, dim), gold in references.items():
        if video not in row or dim not in dims:
            continue
        j = dims.index(dim)
        for a, arm in enumerate(arms):
            value = arm.get((video, dim))
            if value is not None and not np.isnan(float(value)):
                block = a * len(dims) + j
                ratings[row[video], block] = (float(value), float(gold))
                valid[row[video], block] = True
    return ratings, valid


def _sd(values: np.ndarray) -> np.ndarray:
    """Sample standard deviation over axis 0, NaN values left out; NaN where fewer than two are defined."""
    return np.sqrt(quiet_nanvar(values))


def _cis(resampled: np.ndarray, total: np.ndarray, support, confidence: float) -> dict:
    """The resampling and all-sources CIs of one ICC under the one rule (`reporting_floor`), and why any was
    withheld."""
    withheld = {}
    out = {}
    for key, samples in (("resampling_ci", resampled), ("total_ci", total)):
        out[key], facts = guarded_ci(samples, support, confidence)
        if facts["withheld"]:
            withheld[key] = facts["withheld"]
    return {**out, "withheld": withheld}


def variance_sources(
    prompts: Mapping[str, Mapping[Key, object]],
    references: Mapping[Key, object],
    *,
    samples: Sequence[Mapping[Key, object]] = (),
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int | None = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict:
    """Every source of variance of a judge's ICC(3,1) per dimension: the spread with the videos and with the
    clinicians drawn (both bootstrap plans), with the judge's samples and with the prompt's wording, and a CI that
    adds the prompt and sampling spread to the clinician resampling. `prompts`: the arms by prompt variant, the
    unperturbed one first; `samples`:
    the unperturbed arm's scores of each sample (none, or two and more)."""
    if not prompts:
        raise DataError("no arm to measure")
    names = list(prompts)
    arms = [*prompts.values(), *samples]
    gold = {k: float(v) for k, v in references.items() if v is not None}
    videos = sorted({v for v, _ in gold if any((v, d) in arm for arm in arms for d in DIMENSION_KEYS)})
    dims = [d for d in DIMENSION_KEYS if any(k[1] == d for k in gold)]
    if not videos or not dims:
        raise DataError("no labelled pair in the arms", hint="score the runs against the split they were made on")
    ratings, valid = _columns(arms, gold, videos, dims)
    point = point_blocks(ratings, valid)["icc"].reshape(len(arms), len(dims))
    n_items = valid.reshape(len(videos), len(arms), len(dims)).sum(axis=0)
    point = np.where(n_items >= MIN_ITEMS, point, np.nan)
    main = slice(0, len(dims))
    plans = {unit: make_resampling(videos, n_bootstrap, seed, unit) for unit in ("video", "clinician")}
    boot = {unit: bootstrap_blocks(ratings[:, main], valid[:, main], plan)["icc"] for unit, plan in plans.items()}
    prompt_icc, sample_icc = point[: len(names)], point[len(names) :]
    rng = np.random.default_rng(seed)
    total = boot["clinician"].copy()
    for spread in (prompt_icc, sample_icc):
        if spread.shape[0] >= 2:
            pick = rng.integers(0, spread.shape[0], n_bootstrap)
            total = total + (spread - quiet_nanmean(spread, axis=0))[pick]
    sd = {
        "videos": _sd(boot["video"]),
        "clinicians": _sd(boot["clinician"]),
        "sampling": _sd(sample_icc) if sample_icc.shape[0] else np.full(len(dims), np.nan),
        "prompts": _sd(prompt_icc),
    }
    supports = block_supports(clinician_labels(videos), valid[:, main], "clinician")
    dimensions = {}
    for j, key in enumerate(dims):
        dimensions[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "icc": float(point[0, j]),
            "icc_by_prompt": dict(zip(names, prompt_icc[:, j].tolist(), strict=True)),
            "icc_by_sample": sample_icc[:, j].tolist(),
            **{f"sd_{source}": float(values[j]) for source, values in sd.items()},
            **_cis(boot["clinician"][:, j], total[:, j], supports[j], confidence),
        }
    mean_total = quiet_nanmean(total, axis=1)
    mean_resampled = quiet_nanmean(boot["clinician"], axis=1)
    return {
        "dimensions": dimensions,
        "mean_icc": {
            "icc": float(quiet_nanmean(point[0])),
            "sd_videos": float(_sd(quiet_nanmean(boot["video"], axis=1))),
            "sd_clinicians": float(_sd(mean_resampled)),
            "sd_prompts": float(_sd(quiet_nanmean(prompt_icc, axis=1))),
            "sd_sampling": float(_sd(quiet_nanmean(sample_icc, axis=1))) if len(samples) else float("nan"),
            **_cis(mean_resampled, mean_total, weakest_support(supports, "clinician"), confidence),
        },
        "meta": {
            "prompts": names,
            "n_samples": len(samples),
            "resampling": {unit: plan.describe() for unit, plan in plans.items()},
            "total_ci": "clinician resample b's ICC plus one prompt variant's and one sample's deviation from "
            "their mean, drawn uniformly per resample (seeded); percentile interval",
            "confidence": confidence,
            "reporting_floor": floor_description(),
            "purpose": RESEARCH_USE,
        },
    }
