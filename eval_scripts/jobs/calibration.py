"""`mis-bench calibrate`: calibrate a judge's predictions to the expert scale on a build's splits, and apply a
saved calibrator to new predictions (`mis_icc_metric.calibration`, `mis_icc_metric.calibration_checks`).

From one predictions file covering the build's videos (e.g. out-of-fold predictions on every split) and the
build's gold: the map is fitted on `fit_split`, the conformal half-width on `calibration_split`, and every
other split is written calibrated with its interval (`calibrated-{split}.csv`), summarised before and after
(`summary.json`); the calibrator (`calibrator.json`) is what `--apply` reads. `real_calibration_summary`
measures the whole thing on the real text benchmark (the "How far to trust a judge" page).

For research on judges only, not therapist supervision, training, hiring or patient-facing evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mis_bench_dataset.dimensions import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_CALIBRATION_SPLIT,
    DEFAULT_CONFIDENCE,
    DEFAULT_FIT_SPLIT,
    DEFAULT_RESAMPLE,
    DEFAULT_SEED,
)
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric.calibration import DEFAULT_CALIBRATION_METHOD, DEFAULT_COVERAGE

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_FIT_SPLIT",
    "DEFAULT_CALIBRATION_SPLIT",
    "calibrate",
    "apply_calibrator",
    "real_calibration_summary",
]

WRITER = "calibrate"
Key = tuple[str, str]


def _split_predictions(predictions: Mapping[Key, float | None], references: Mapping[Key, float]):
    videos = {video for video, _ in references}
    return {key: value for key, value in predictions.items() if key[0] in videos}


def calibrate(
    predictions: str | Path,
    references: str | Path,
    out: str | Path,
    *,
    method: str = DEFAULT_CALIBRATION_METHOD,
    coverage: float = DEFAULT_COVERAGE,
    fit_split: str = DEFAULT_FIT_SPLIT,
    calibration_split: str = DEFAULT_CALIBRATION_SPLIT,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int | None = DEFAULT_SEED,
    resample: str = DEFAULT_RESAMPLE,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, Any]:
    """Calibrate `predictions` on the build `references`; write the calibrator, the calibrated other splits
    and the summary into `out`; return the summary (with `files`)."""
    from mis_bench_dataset.dataset.handle import BuiltDataset
    from mis_bench_dataset.toolkit.ownership import OutputFolder
    from mis_icc_metric.calibration import fit_calibrator
    from mis_icc_metric.calibration_checks import calibration_summary
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file, read_references

    build = Path(references)
    splits = _checked_splits(build, fit_split, calibration_split)
    folder = OutputFolder(out, command="calibrate", inputs=[predictions, references])
    file = read_prediction_file(predictions)
    predicted = predictions_to_mapping(file.records)
    gold = {split: read_references(build, split) for split in splits}
    by_split = {split: _split_predictions(predicted, gold[split]) for split in splits}
    others = [s for s in splits if s not in (fit_split, calibration_split) and by_split[s]]
    for split in (fit_split, calibration_split):
        if not any(v is not None for v in by_split[split].values()):
            raise DataError(
                f"the predictions name no video of split {split!r} of {build}",
                where=str(predictions),
                hint="predict every split (e.g. out-of-fold predictions) before calibrating",
            )
    provenance = _provenance(predictions, build, fit_split, calibration_split)
    calibrator = fit_calibrator(
        by_split[fit_split],
        gold[fit_split],
        by_split[calibration_split],
        gold[calibration_split],
        method=method,
        coverage=coverage,
        provenance=provenance,
    )
    from mis_icc_metric.predictions_io import write_predictions

    files = {"calibrator": str(calibrator.save(folder.claim("calibrator.json", WRITER)))}
    summaries = {}
    for split in others:
        fitted = {key: value for key, value in by_split[split].items() if key[1] in calibrator.dimensions}
        records = calibrator.apply(fitted, f"split {split!r} of {predictions}")
        files[split] = str(write_predictions(folder.claim(f"calibrated-{split}.csv", WRITER), records))
        summaries[split] = calibration_summary(
            calibrator,
            (by_split[fit_split], gold[fit_split]),
            (fitted, gold[split]),
            n_bootstrap=n_bootstrap,
            seed=seed,
            resample=resample,
            confidence=confidence,
        )
    result = {
        "what": "mis-bench calibrate: a judge calibrated to the expert scale, with split-conformal intervals",
        "intended_use": calibrator.to_json()["intended_use"],
        "synthetic": bool(BuiltDataset.open(build).synthetic),
        "calibrator": calibrator.to_json(),
        "evaluated": summaries,
        "files": files,
    }
    result["notes"] = _notes(predicted, by_split, calibrator.dimensions, others)
    path = folder.claim("summary.json", WRITER)
    files["summary"] = str(path)
    _write_json(path, result)
    return result


def _checked_splits(build: Path, fit_split: str, calibration_split: str) -> list[str]:
    """The build's splits, after checking the fit and calibration splits are two of them."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    if fit_split == calibration_split:
        raise UsageError(
            f"--fit-split and --calibration-split are both {fit_split!r}",
            hint="conformal intervals need a calibration split the map was not fitted on",
        )
    if not build.is_dir():
        raise UsageError(
            f"--references {build} is a file; calibrate needs a build folder (its splits)",
            hint="build one with mis-bench build, or call mis_icc_metric.calibration.fit_calibrator on your own split",
        )
    splits = BuiltDataset.open(build).splits("scoring")
    for flag, split in (("--fit-split", fit_split), ("--calibration-split", calibration_split)):
        if split not in splits:
            raise UsageError(f"{flag} {split!r} is not a split of {build} (it has {', '.join(splits)})")
    return splits


def _provenance(predictions: str | Path, build: Path, fit_split: str, calibration_split: str) -> dict[str, Any]:
    from mis_bench_dataset.release.provenance import sha256_of

    return {
        "predictions": str(predictions),
        "predictions_sha256": sha256_of(predictions),
        "references": str(build),
        "fit_split": fit_split,
        "calibration_split": calibration_split,
        "toolkit_version": _version(),
    }


def _notes(predicted: Mapping, by_split: Mapping[str, Mapping], dimensions, others: list[str]) -> list[str]:
    """What was not used, said rather than dropped silently."""
    notes = []
    in_build = sum(len(part) for part in by_split.values())
    if len(predicted) > in_build:
        notes.append(f"{len(predicted) - in_build} prediction(s) name videos of no split of the build: not used")
    named = {dim for _, dim in predicted}
    unfitted = sorted(named - set(dimensions))
    if unfitted:
        notes.append(f"dimension(s) {unfitted} have no parsed prediction with gold in the fit split: not calibrated")
    if not others:
        notes.append("no other split has predictions: nothing was evaluated (only the calibrator was written)")
    return notes


def _write_json(path: Path, payload: dict) -> None:
    import json

    from mis_bench_dataset.toolkit.atomic import write_atomic
    from mis_bench_dataset.toolkit.jsonio import json_safe

    write_atomic(path, json.dumps(json_safe(payload), indent=2, allow_nan=False) + "\n")


def apply_calibrator(calibrator: str | Path, predictions: str | Path, out: str | Path) -> dict[str, Any]:
    """Apply a saved calibrator to new predictions (no gold needed); write them calibrated with intervals."""
    from mis_bench_dataset.toolkit.ownership import claim_file
    from mis_icc_metric.calibration import Calibrator
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_predictions, write_predictions

    loaded = Calibrator.load(calibrator)
    target = claim_file(out, command="calibrate", writer=WRITER, arg="--out", inputs=[calibrator, predictions])
    if target.suffix.lower() not in (".csv", ".jsonl"):
        raise UsageError(f"--out {target}: write calibrated predictions to a .csv or .jsonl file")
    records = loaded.apply(predictions_to_mapping(read_predictions(predictions)), str(predictions))
    write_predictions(target, records)
    return {
        "what": "predictions calibrated with a saved calibrator (intervals at its coverage)",
        "intended_use": loaded.to_json()["intended_use"],
        "calibrator": str(calibrator),
        "method": loaded.method,
        "coverage": loaded.coverage,
        "n_predictions": len(records),
        "n_calibrated": sum(r["prediction"] is not None for r in records),
        "file": str(target),
    }


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("mis-bench")
    except metadata.PackageNotFoundError:
        return "unknown"


def real_calibration_summary(
    work: str | Path,
    *,
    shared: str | Path = "../shared",
    seeds: tuple[int, ...] = (0, 1, 2),
    method: str = DEFAULT_CALIBRATION_METHOD,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    n_folds: int = 5,
) -> dict[str, Any]:
    """The calibration on the real text benchmark, for the "How far to trust a judge" page.

    For each seed: the real build split by clinician (`--split-by clinician --seed S`), the text ridge's
    out-of-fold predictions on all 996 videos (5 folds grouped by clinician, `baselines.crossval`), then
    `calibrate` (fit on train, conformal on validation, evaluated on test: held-out clinicians, clinician
    resampling). Returns each seed's summary and the pooled coverage over seeds and dimensions.
    """
    from eval_scripts.baselines.crossval import all_feature_rows, clinician_folds, out_of_fold_predictions
    from mis_bench_dataset import build_dataset
    from mis_icc_metric.predictions_io import write_predictions

    work, shared = Path(work), Path(shared)
    runs = {}
    for seed in seeds:
        build = work / f"real-clinician-{seed}"
        if not build.is_dir():
            build_dataset(
                None,
                build,
                transcripts=shared / "data" / "mis-bench-transcripts.csv",
                labels=shared / "data" / "authors" / "coding.csv",
                split_by="clinician",
                seed=seed,
                progress=False,
            )
        rows = all_feature_rows(build)
        predicted = out_of_fold_predictions(rows, "features", "text", clinician_folds(rows, n_folds, seed))
        path = work / f"ridge-oof-{seed}.csv"
        write_predictions(path, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predicted.items()])
        runs[str(seed)] = calibrate(
            path, build, work / f"calibrate-{seed}", method=method, n_bootstrap=n_bootstrap, seed=seed
        )
    pooled = [(s["pooled"]["coverage"], s["pooled"]["n"]) for r in runs.values() for s in r["evaluated"].values()]
    total = sum(n for _, n in pooled)
    return {
        "runs": runs,
        "pooled_coverage": sum(c * n for c, n in pooled) / total if total else None,
        "n_pairs": total,
        "nominal": runs[str(seeds[0])]["calibrator"]["coverage"] if runs else None,
    }
