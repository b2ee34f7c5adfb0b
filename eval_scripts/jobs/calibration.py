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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric.calibration import DEFAULT_CALIBRATION_METHOD, DEFAULT_COVERAGE
from mis_icc_metric.calibrator_file import DEFAULT_CALIBRATION_SPLIT, DEFAULT_FIT_SPLIT
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

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


@dataclass(frozen=True)
class CalibrationSplits:
    """Which of a build's splits calibrates: the map is fitted on `fit`, the conformal half-width on
    `calibration`; every other labelled split is evaluated."""

    fit: str = DEFAULT_FIT_SPLIT
    calibration: str = DEFAULT_CALIBRATION_SPLIT


def calibrate(
    predictions: str | Path,
    references: str | Path,
    out: str | Path,
    *,
    method: str = DEFAULT_CALIBRATION_METHOD,
    coverage: float = DEFAULT_COVERAGE,
    splits: CalibrationSplits = CalibrationSplits(),
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
) -> dict[str, Any]:
    """Calibrate `predictions` on the build `references` (`splits`: which split fits, which calibrates); write the
    calibrator, the calibrated other splits and the summary into `out`; return the summary (with `files`).

    Write last: every input is read and checked (the splits, the scale, a file already calibrated, the folder's
    ownership) and everything computed before anything is written; the files are then published together,
    and an earlier run's calibrated split this run does not write is removed (its calibrator is replaced). A
    failure before that leaves `out` (and its manifest) byte for byte as it was."""
    from mis_bench_dataset.toolkit.ownership import OutputFolder
    from mis_icc_metric.calibration import fit_calibrator
    from mis_icc_metric.calibration_checks import calibration_summary

    fit_split, calibration_split = splits.fit, splits.calibration

    build = Path(references)
    splits = _checked_splits(build, fit_split, calibration_split)
    folder = OutputFolder(out, command="calibrate", inputs=[predictions, references])
    predicted, gold, by_split = _read_inputs(predictions, build, splits, (fit_split, calibration_split))
    others = [s for s in splits if s not in (fit_split, calibration_split) and by_split[s]]
    names = ["calibrator.json", *(f"calibrated-{split}.csv" for split in others), "summary.json"]
    folder.claim_all(names, WRITER)  # checked before the work; recorded only once written
    run = _run_record(predictions)
    provenance = _provenance(predictions, build, (fit_split, calibration_split), run)
    calibrator = fit_calibrator(
        by_split[fit_split],
        gold[fit_split],
        by_split[calibration_split],
        gold[calibration_split],
        method=method,
        coverage=coverage,
        provenance=provenance,
    )
    contents = {"calibrator.json": _json_text(calibrator.to_json())}
    summaries = {}
    for split in others:
        fitted = {key: value for key, value in by_split[split].items() if key[1] in calibrator.dimensions}
        records = calibrator.apply(fitted, f"split {split!r} of {predictions}")
        contents[f"calibrated-{split}.csv"] = records
        summaries[split] = calibration_summary(
            calibrator,
            (by_split[fit_split], gold[fit_split]),
            (fitted, gold[split]),
            resampling=resampling,
        )
    files = {"calibrator": str(folder.root / "calibrator.json")}
    files.update({split: str(folder.root / f"calibrated-{split}.csv") for split in others})
    files["summary"] = str(folder.root / "summary.json")
    stale = _stale(folder, splits, others)
    result = {
        "what": "mis-bench calibrate: a judge calibrated to the expert scale, with split-conformal intervals",
        "intended_use": calibrator.to_json()["intended_use"],
        "synthetic": bool(provenance["synthetic"]),
        "calibrator": calibrator.to_json(),
        "evaluated": summaries,
        "files": files,
        "removed": [str(folder.root / name) for name in stale],
        "warnings": _build_warnings(run, provenance["build"]),
    }
    result["notes"] = _notes(predicted, by_split, calibrator.dimensions, others)
    contents["summary.json"] = _json_text(result)
    _publish(folder, contents, stale)
    return result


def _read_inputs(predictions: str | Path, build: Path, splits: list[str], seen: tuple[str, str]):
    """(every prediction, the gold per split, the predictions per split) after the checks: not a calibrated file,
    on the scale, and covering the fit and calibration splits (`seen`)."""
    from mis_icc_metric.calibration import check_scale
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file, read_references

    file = read_prediction_file(predictions)
    _refuse_calibrated(file, predictions)
    predicted = predictions_to_mapping(file.records)
    check_scale(predicted, str(predictions))
    gold = {split: read_references(build, split) for split in splits}
    by_split = {split: _split_predictions(predicted, gold[split]) for split in splits}
    for split in seen:
        if not any(v is not None for v in by_split[split].values()):
            raise DataError(
                f"the predictions name no video of split {split!r} of {build}",
                where=str(predictions),
                hint="predict every split (e.g. out-of-fold predictions) before calibrating",
            )
    return predicted, gold, by_split


def _refuse_calibrated(file, predictions: str | Path) -> None:
    """A file `calibrate` wrote (calibrated scores with their intervals) is not a judge's predictions: calibrating
    it again would stack a second map and a second interval on the first."""
    from mis_icc_metric.predictions_io import INTERVAL_COLUMNS

    if any(column in record for record in file.records for column in INTERVAL_COLUMNS):
        raise DataError(
            f"the predictions are already calibrated (they carry {', '.join(INTERVAL_COLUMNS)})",
            where=str(predictions),
            hint="give the judge's own predictions, not a file mis-bench calibrate wrote",
        )


def _stale(folder, splits: list[str], others: list[str]) -> list[str]:
    """An earlier run's calibrated splits this run does not write: left beside the new calibrator they would
    mix two runs, so they are removed once the new files are in place."""
    return [
        f"calibrated-{split}.csv"
        for split in splits
        if split not in others and folder.owned(f"calibrated-{split}.csv", WRITER)
    ]


def _publish(folder, contents: Mapping[str, str | list[dict]], stale: list[str]) -> None:
    """Write the files together (text as it is, records as predictions; the manifest records each once it is in
    place, `toolkit.ownership`), then remove the earlier run's files this run does not write (`stale`)."""
    import glob

    from mis_bench_dataset.toolkit.atomic import AtomicFiles
    from mis_icc_metric.predictions_io import write_predictions

    targets = folder.claim_all(list(contents), WRITER)
    with AtomicFiles() as staged:
        for target, content in zip(targets, contents.values(), strict=True):
            if isinstance(content, str):
                staged.write(target, content)
            else:
                write_predictions(target, content, files=staged)
    if stale:
        folder.remove_stale(WRITER, [glob.escape(name) for name in stale], keep=list(contents))


def _json_text(payload: Mapping[str, Any]) -> str:
    import json

    from mis_bench_dataset.toolkit.jsonio import json_safe

    return json.dumps(json_safe(payload), indent=2, allow_nan=False) + "\n"


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


def _run_record(predictions: str | Path) -> dict[str, Any] | None:
    """The results JSON the predictions come with (the file itself, or a run's `results.json` beside its
    `predictions.jsonl`): its system, setting and dataset blocks; None when there is none (a plain CSV)."""
    from eval_scripts.formats.results import RESULTS_NAME
    from eval_scripts.harness.run_writer import PREDICTIONS_NAME
    from mis_bench_dataset.toolkit.jsonio import JSONInputError, read_json

    path = Path(predictions)
    source = path if path.suffix.lower() == ".json" else path.with_name(RESULTS_NAME)
    if source != path and path.name != PREDICTIONS_NAME:
        return None
    try:
        data = read_json(source) if source.is_file() else None
    except JSONInputError:
        return None
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in ("system", "setting", "dataset")):
        return None
    return {"source": str(source), **{k: data[k] for k in ("system", "setting", "dataset")}}


def _judge(run: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Which judge made the predictions: model, backend, setting, readout and answer-changing options (None when
    the predictions do not say)."""
    from eval_scripts.formats.results import options_label

    if run is None:
        return None
    system, decoding = run["system"], run["system"].get("decoding") or {}
    return {
        "model": system.get("model"),
        "backend": system.get("backend"),
        "setting": dict(run["setting"]),
        "readout": decoding.get("score_from", "text"),
        "options": options_label(system),
    }


def _build_record(build: Path) -> dict[str, Any]:
    """The build by name and its fingerprints per split (every alias a run on that split may record)."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    handle = BuiltDataset.open(build)
    return {
        "name": handle.name,
        "fingerprints": {split: sorted(handle.fingerprints(split)) for split in handle.splits("scoring")},
        "synthetic": handle.synthetic,
    }


def _provenance(
    predictions: str | Path, build: Path, splits: tuple[str, str], run: Mapping[str, Any] | None
) -> dict[str, Any]:
    from eval_scripts.formats.data_names import results_synthetic
    from mis_bench_dataset.release.provenance import sha256_of

    record = _build_record(build)
    return {
        "predictions": str(predictions),
        "predictions_sha256": sha256_of(predictions),
        "references": str(build),
        "build": record,
        "fit_split": splits[0],
        "calibration_split": splits[1],
        "judge": _judge(run),
        "synthetic": bool(record["synthetic"] or (run is not None and results_synthetic(run))),
        "toolkit_version": _version(),
    }


def _on_build(run: Mapping[str, Any] | None, build: Mapping[str, Any] | None) -> bool | None:
    """Whether the predictions' run names one of the build's fingerprints (None: one side does not say)."""
    fingerprint = None if run is None else run["dataset"].get("fingerprint")
    if not fingerprint or not build:
        return None
    return any(fingerprint in aliases for aliases in build["fingerprints"].values())


def _build_warnings(run: Mapping[str, Any] | None, build: Mapping[str, Any]) -> list[str]:
    if _on_build(run, build) is False:
        return [
            f"the predictions' run ({run['source']}) was made on another build (fingerprint "
            f"{run['dataset'].get('fingerprint')}) than {build['name']}: its scores are calibrated against gold they "
            "were not made for"
        ]
    return []


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


def apply_calibrator(
    calibrator: str | Path, predictions: str | Path, out: str | Path, *, allow_in_sample: bool = False
) -> dict[str, Any]:
    """Apply a saved calibrator to new predictions (no gold needed); write them calibrated with intervals.

    Checked first, written last: the calibrator (field by field), a file already calibrated (refused), the
    dimensions and scale, the videos it was fitted or calibrated on (refused unless `allow_in_sample`: their
    intervals hold no guarantee), and whether the predictions' run is on the calibrator's build and by its
    judge (a warning each when not, a note when the predictions do not say). The result is SYNTHETIC when the
    calibrator or the predictions are."""
    from eval_scripts.formats.data_names import results_synthetic
    from mis_bench_dataset.toolkit.ownership import OutputFolder
    from mis_icc_metric.calibration import Calibrator
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file

    loaded = Calibrator.load(calibrator)
    target = Path(out).expanduser()
    if target.is_dir():
        raise UsageError(f"--out {target} is a folder", where="mis-bench calibrate", hint="give a .csv or .jsonl file")
    if target.suffix.lower() not in (".csv", ".jsonl"):
        raise UsageError(f"--out {target}: write calibrated predictions to a .csv or .jsonl file")
    folder = OutputFolder(target.parent, command="calibrate", inputs=[calibrator, predictions])
    folder.claim(target.name, WRITER)  # checked before the work; recorded only once written
    file = read_prediction_file(predictions)
    _refuse_calibrated(file, predictions)
    mapping = predictions_to_mapping(file.records)
    loaded.check_applies(mapping, str(predictions))
    in_sample = _in_sample(loaded, mapping, predictions, allow_in_sample)
    records = loaded.apply(mapping, str(predictions))
    run = _run_record(predictions)
    warnings, notes = _apply_checks(loaded, run)
    if in_sample:
        notes.append(
            f"{in_sample} video(s) are ones the calibrator was fitted or calibrated on (--allow-in-sample): "
            "their intervals carry no coverage guarantee"
        )
    _publish(folder, {target.name: records}, [])
    synthetic = bool(loaded.provenance.get("synthetic")) or bool(run is not None and results_synthetic(run))
    return {
        "what": "predictions calibrated with a saved calibrator (intervals at its coverage)",
        "intended_use": loaded.to_json()["intended_use"],
        "synthetic": synthetic,
        "calibrator": str(calibrator),
        "method": loaded.method,
        "coverage": loaded.coverage,
        "n_predictions": len(records),
        "n_calibrated": sum(r["prediction"] is not None for r in records),
        "n_in_sample_videos": in_sample,
        "half_widths": dict(loaded.half_widths),
        "no_judge_half_widths": {dim: cell["half_width"] for dim, cell in loaded.no_judge.items()},
        "warnings": warnings,
        "notes": notes,
        "file": str(target),
    }


def _in_sample(loaded, mapping: Mapping[Key, Any], predictions: str | Path, allowed: bool) -> int:
    """How many of the predictions' videos the calibrator was fitted or calibrated on; refused unless allowed."""
    seen = loaded.provenance["videos"]
    videos = {video for video, _ in mapping}
    fit, cal = videos & set(seen["fit"]), videos & set(seen["calibration"])
    if (fit or cal) and not allowed:
        example = sorted(fit | cal)[0]
        raise DataError(
            f"{len(fit)} video(s) of the predictions are ones the calibrator was fitted on and {len(cal)} ones it "
            f"was calibrated on (e.g. {example}): their intervals would claim a coverage they do not have",
            where=str(predictions),
            hint="apply it to other videos (e.g. the test split), or pass --allow-in-sample to calibrate them anyway",
        )
    return len(fit | cal)


def _apply_checks(loaded, run: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """Warnings (another build, another judge) and notes (what cannot be checked) for `--apply`."""
    provenance = loaded.provenance
    warnings, notes = [], []
    on_build = _on_build(run, provenance["build"])
    if on_build is False:
        warnings.append(
            f"the predictions were made on another build (fingerprint {run['dataset'].get('fingerprint')}) than the "
            f"calibrator's ({provenance['build'].get('name')}): its intervals may not hold their coverage there"
        )
    elif on_build is None:
        notes.append("the predictions or the calibrator do not name their build: not checked it is the same")
    judge, fitted = _judge(run), provenance["judge"]
    if judge is not None and fitted is not None and judge != fitted:
        changed = sorted(key for key in {*judge, *fitted} if judge.get(key) != fitted.get(key))
        warnings.append(
            f"the predictions come from another judge than the calibrator's ({', '.join(changed)} differ: "
            f"{_judge_name(judge)} vs {_judge_name(fitted)}): the map and intervals were fitted for the other"
        )
    elif judge is None or fitted is None:
        notes.append("the predictions or the calibrator do not name their judge: not checked it is the same")
    return warnings, notes


def _judge_name(judge: Mapping[str, Any]) -> str:
    setting = judge.get("setting") or {}
    parts = [str(judge.get("model")), str(setting.get("modality")), str(setting.get("prompt_style"))]
    return " ".join([*parts, f"{judge.get('readout')} readout", *judge.get("options", [])])


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
    from mis_bench_dataset import SplitPlan, build_dataset
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
                split=SplitPlan(split_by="clinician", seed=seed),
                progress=False,
            )
        rows = all_feature_rows(build)
        predicted = out_of_fold_predictions(rows, "features", "text", clinician_folds(rows, n_folds, seed))
        path = work / f"ridge-oof-{seed}.csv"
        write_predictions(path, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predicted.items()])
        runs[str(seed)] = calibrate(
            path,
            build,
            work / f"calibrate-{seed}",
            method=method,
            resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed),
        )
    pooled = [(s["pooled"]["coverage"], s["pooled"]["n"]) for r in runs.values() for s in r["evaluated"].values()]
    total = sum(n for _, n in pooled)
    return {
        "runs": runs,
        "pooled_coverage": sum(c * n for c, n in pooled) / total if total else None,
        "n_pairs": total,
        "nominal": runs[str(seeds[0])]["calibrator"]["coverage"] if runs else None,
    }
