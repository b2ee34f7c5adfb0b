"""Clinician-grouped K-fold cross-validation of the CPU baselines over every video of a build.

A 100-video test split gives wide CIs and depends on which videos it drew. For a steadier figure
every video of the build is predicted once by a baseline fitted on the other folds, the folds
grouped by clinician (no clinician on both sides, so identity cannot leak), and the pooled
out-of-fold predictions are scored with the metric as any run is (per-dimension ICC with
bootstrap CIs over the clinicians, each with all its videos). Repeating with several fold seeds
shows how much the figure moves with the partition. A build whose splits hold rows rather than videos (`paper-rows`) is
refused: its videos appear in several splits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval_scripts.baselines.models import make_baseline
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.progress import step
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)

Key = tuple[str, str]


def all_feature_rows(dataset: str | Path | BuiltDataset) -> list[dict]:
    """`features` rows of every split the build wrote; refuses a build that puts a video in two splits."""
    from eval_scripts.baselines.baseline_run import load_feature_rows

    dataset = BuiltDataset.of(dataset)
    rows = [row for split in dataset.splits("features") for row in load_feature_rows(dataset, split)]
    videos = [str(row["video_id"]) for row in rows]
    if len(set(videos)) != len(videos):
        raise DataError(
            "a video appears in several splits (a paper-rows build): cross-validation needs one row per video",
            where=str(dataset.path),
            hint="cross-validate on a build split by video or clinician",
        )
    return rows


def clinician_folds(rows: Sequence[dict], n_folds: int, seed: int | None) -> np.ndarray:
    """The fold of each row: scikit-learn's GroupKFold over clinicians, shuffled with `seed` (None: GroupKFold's
    own, unshuffled assignment)."""
    from sklearn.model_selection import GroupKFold

    clinicians = np.array([str(row["clinician"]) for row in rows])
    if n_folds < 2 or len(set(clinicians)) < n_folds:
        raise UsageError(
            f"{n_folds}-fold cross-validation needs at least {max(n_folds, 2)} clinicians, "
            f"the build has {len(set(clinicians))}",
            hint="use fewer folds",
        )
    folds = np.empty(len(rows), dtype=int)
    splitter = GroupKFold(n_splits=n_folds, shuffle=seed is not None, random_state=seed)
    for fold, (_, held_out) in enumerate(splitter.split(np.zeros(len(rows)), groups=clinicians)):
        folds[held_out] = fold
    return folds


def out_of_fold_predictions(
    rows: Sequence[dict],
    baseline: str,
    modality: str,
    folds: np.ndarray,
    summary_cache: dict | None = None,
    on_fold: Callable[[], None] | None = None,
) -> dict[Key, float]:
    """Every row predicted by the baseline fitted on the other folds (`on_fold` called after each: progress)."""
    predictions: dict[Key, float] = {}
    for fold in np.unique(folds):
        train = [row for row, f in zip(rows, folds, strict=True) if f != fold]
        held_out = [row for row, f in zip(rows, folds, strict=True) if f == fold]
        predicted = make_baseline(baseline, modality, summary_cache).fit(train).predict(held_out)
        for i, row in enumerate(held_out):
            for key in DIMENSION_KEYS:
                predictions[(str(row["video_id"]), key)] = float(predicted[key][i])
        if on_fold is not None:
            on_fold()
    return predictions


def cross_validate(
    dataset: str | Path | BuiltDataset,
    jobs: Sequence[tuple[str, str]],
    *,
    n_folds: int = 5,
    seeds: Sequence[int] = tuple(range(DEFAULT_SEED, DEFAULT_SEED + 3)),
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    resample: str = DEFAULT_RESAMPLE,
    progress: bool = True,
) -> dict[str, Any]:
    """Per (baseline, setting) and fold seed, the scores of the pooled out-of-fold predictions (and each fold's
    own mean ICC, `fold_mean_icc`), and across seeds the mean (min, max) of each dimension's ICC and of the mean
    ICC. Each run's `out_of_fold` holds, per fold seed, the predictions themselves ((video, dimension) -> score,
    every video of the build): not JSON; `mis-bench run --cv-folds` pops them and writes each as a run."""
    from mis_bench_dataset.dataset.loading import gold_references
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.scoring import score_predictions

    dataset = BuiltDataset.of(dataset)
    rows = all_feature_rows(dataset)
    references = gold_references(rows)
    if not references:
        raise DataError("the build has no gold scores", where=str(dataset.path), hint="build it with --labels")
    cache: dict = {}
    results: dict[str, Any] = {}
    jobs = list(jobs)
    desc = f"cross-validating ({n_folds} folds)"
    with step(desc, total=len(jobs) * len(seeds) * n_folds, unit="fold", show=progress) as done:
        for baseline, modality in jobs:
            by_seed, out_of_fold = {}, {}
            for seed in seeds:
                done.describe(f"{baseline} {modality}, seed {seed}")
                folds = clinician_folds(rows, n_folds, seed)
                predicted = out_of_fold_predictions(rows, baseline, modality, folds, cache, on_fold=done.update)
                scored = {key: value for key, value in predicted.items() if key in references}
                scores = score_predictions(
                    scored,
                    references,
                    resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed, resample=resample),
                )
                by_seed[str(seed)] = json_safe(scores)
                by_seed[str(seed)]["fold_mean_icc"] = _fold_means(scored, references, rows, folds, n_folds)
                out_of_fold[str(seed)] = predicted
            results[f"{baseline} {modality}"] = {
                "baseline": baseline,
                "modality": modality,
                "by_seed": by_seed,
                "across_seeds": _across_seeds(list(by_seed.values())),
                "out_of_fold": out_of_fold,
            }
    return {
        "n_videos": len(rows),
        "n_folds": n_folds,
        "grouping": "clinician (GroupKFold, shuffled by the seed)",
        "seeds": list(seeds),
        "n_bootstrap": n_bootstrap,
        "resample": resample,
        "runs": results,
    }


def _fold_means(scored: dict, references: dict, rows: Sequence[dict], folds: np.ndarray, n_folds: int) -> list:
    """Each fold's own mean ICC (its held-out videos alone, no CI): how much the pooled figure hides."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.scoring import score_predictions

    means = []
    for fold in range(n_folds):
        videos = {str(row["video_id"]) for row, f in zip(rows, folds, strict=True) if f == fold}
        gold = {key: value for key, value in references.items() if key[0] in videos}
        held_out = {key: value for key, value in scored.items() if key[0] in videos}
        means.append(
            json_safe(score_predictions(held_out, gold, resampling=ResamplingOptions(n_bootstrap=0))["mean_icc"])
            if gold
            else None
        )
    return means


def _spread(values: list[float | None]) -> dict[str, float | None]:
    usable = [v for v in values if v is not None]
    if len(usable) != len(values) or not usable:
        return {"mean": None, "min": None, "max": None}
    return {"mean": float(np.mean(usable)), "min": float(min(usable)), "max": float(max(usable))}


def _across_seeds(scores: list[dict]) -> dict[str, Any]:
    return {
        "dimensions": {key: _spread([s["dimensions"][key]["icc"] for s in scores]) for key in DIMENSION_KEYS},
        "mean_icc": _spread([s["mean_icc"] for s in scores]),
        "overall": _spread([s["overall"]["icc"] for s in scores]),
    }
