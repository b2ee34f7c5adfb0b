"""The embedded default job: `mis-bench run` with no model.

Offline, on a laptop, in about 30 s: the synthetic sample at the benchmark's scale (996
videos, 100 test videos; generated on first use), the `features` baseline in the four
modality settings plus the `mean` floor,
scores with bootstrap CIs, and everything a real run produces under
`./mis-bench-results/`: predictions and results JSON per run, a Markdown and an
HTML report (the paper's Table 3, Figure 2 and Table 4 / Figure 4 views, scatters), and a
leaderboard built from the runs' submissions. With `--dataset DIR` the same job
runs on your own labelled build. The synthetic data is said to be synthetic in
every output.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.formats.results import RunRecord
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.dimensions import MODALITY_SETTINGS as SETTINGS
from mis_bench_dataset.toolkit.defaults import DEFAULT_RESAMPLE
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.progress import step
from mis_bench_dataset.toolkit.text_safety import clean_line as shown
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

logger = logging.getLogger(__name__)

DEFAULT_OUT = Path("mis-bench-results")
DEFAULT_CV_FOLDS = 0  # no cross-validation unless asked (`--cv-folds K`)
DEFAULT_CV_SEEDS = 3  # fold seeds, from the seed on (`--cv-seeds N`)
SYNTHETIC_BANNER = (
    "SYNTHETIC DATA: this default job runs on a generated sample, not on MIS-Bench. The numbers show the "
    "toolkit works end to end; they say nothing about any model. Run a real model with "
    "`mis-bench run --dataset DIR --backend B --model M`."
)


def _dataset(dataset: str | Path | BuiltDataset | None, say) -> tuple[BuiltDataset, bool]:
    """(the built dataset, opened once, is synthetic): the given build, or the embedded synthetic sample."""
    if dataset is not None:
        handle = BuiltDataset.of(dataset, where="--dataset").require("features", where="--dataset")
        return handle, bool(handle.synthetic)
    from mis_bench_dataset import default_sample

    say("Preparing the synthetic sample (generated once, then cached) ...")
    return BuiltDataset.open(default_sample().build_dir), True


def _jobs(train_rows: list[dict]) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """The (baseline, setting) runs the build can feed, and the `features` settings skipped, with why."""
    from eval_scripts.baselines.summaries import feedable_settings

    feedable, skipped = feedable_settings(train_rows)
    return [("features", modality) for modality in SETTINGS if modality in feedable] + [("mean", "text")], skipped


def _cross_validation(
    dataset: BuiltDataset, jobs, folder, *, folds: int, n_seeds: int, draw: tuple[int, int, str], say
) -> dict | None:
    """With `--cv-folds K`: clinician-grouped K-fold CV over every video, `--cv-seeds` fold seeds from `--seed`."""
    if not folds:
        return None
    from eval_scripts.baselines.crossval import cross_validate
    from mis_bench_dataset.toolkit.atomic import write_atomic

    n_bootstrap, seed, resample = draw
    seeds = list(range(seed, seed + n_seeds))
    say(f"Cross-validating over every video: {folds} folds grouped by clinician, fold seeds {seeds} ...")
    doc = cross_validate(dataset, jobs, n_folds=folds, seeds=seeds, n_bootstrap=n_bootstrap, resample=resample)
    predicted = {name: run.pop("out_of_fold") for name, run in doc["runs"].items()}
    runs = _write_out_of_fold_runs(dataset, folder, doc, predicted)
    path = folder.claim("cross_validation.json", "run-cross-validation")
    write_atomic(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")
    return {"path": str(path), "n_folds": folds, "seeds": seeds, "n_videos": doc["n_videos"], "doc": doc, "runs": runs}


CV_RUNS = "cv"  # where `--cv-folds` writes its out-of-fold runs, one per (baseline, setting, fold seed)


def _write_out_of_fold_runs(dataset: BuiltDataset, folder, doc: dict, predicted: dict) -> list[dict]:
    """Each run's out-of-fold predictions of every video, per fold seed, written as a run (predictions.jsonl and
    results.json, split `all`) under cv/: the judge on every video that `score`, `calibrate`, `estimate`, `plan`
    and `trust` read. Scored as any run (the same draw as cross_validation.json's)."""
    from eval_scripts.baselines.crossval import all_feature_rows
    from eval_scripts.formats.results import BASELINE_BACKEND, BASELINE_MODEL_IDS, package_versions
    from eval_scripts.harness.run_writer import write_run
    from mis_bench_dataset.dataset.loading import gold_references
    from mis_bench_dataset.protocol import FewShot, setting_record
    from mis_bench_dataset.splits import ALL_SPLITS
    from mis_bench_dataset.toolkit.text_safety import slug

    references = gold_references(all_feature_rows(dataset))
    record = dataset.record(ALL_SPLITS)
    written = []
    for name, by_seed in predicted.items():
        run = doc["runs"][name]
        baseline, modality = run["baseline"], run["modality"]
        for seed, predictions in by_seed.items():
            records = [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in sorted(predictions.items())]
            system = {
                "model": BASELINE_MODEL_IDS[baseline],
                "backend": BASELINE_BACKEND,
                "decoding": {"cv_folds": doc["n_folds"], "fold_seed": int(seed), "grouping": doc["grouping"]},
                "package_versions": package_versions(extra=("scikit-learn",)),
                "description": f"CPU {baseline} baseline, {doc['n_folds']}-fold cross-validation grouped by clinician"
                f" (fold seed {seed}): each video predicted by the model fitted without its clinician",
            }
            run_dir = f"{CV_RUNS}/{baseline}__{slug(modality.replace('+', '-'))}__seed-{seed}"
            out = write_run(
                folder,
                run_dir,
                record=RunRecord(
                    system=system,
                    setting=setting_record(modality, "none", "features", few_shot=FewShot(k=0)),
                    dataset=record,
                    predictions=records,
                    parse_rates={key: 1.0 for key in DIMENSION_KEYS},
                ),
                references=references,
                resampling=ResamplingOptions(n_bootstrap=doc["n_bootstrap"], seed=int(seed), resample=doc["resample"]),
            )
            written.append({"run": name, "fold_seed": int(seed), "predictions": str(out.predictions_path)})
            written[-1]["results"] = str(out.results_path)
    return written


def _cv_table(cross_validation: dict, synthetic: bool) -> str:
    """Per run, each dimension's ICC % averaged over the fold seeds, and the mean ICC with its range."""
    from mis_bench_dataset.dimensions import DIMENSIONS
    from mis_bench_dataset.toolkit.numbers import pct

    doc = cross_validation["doc"]
    lines = [
        f"ICC(3,1) % of {doc['n_folds']}-fold clinician-grouped cross-validation over all {doc['n_videos']} videos, "
        f"mean over fold seeds {doc['seeds']}" + (" (SYNTHETIC sample)" if synthetic else "") + ":",
        "| System | " + " | ".join(d.abbreviation for d in DIMENSIONS) + " | Mean (range over seeds) |",
        "|---" * (len(DIMENSIONS) + 2) + "|",
    ]
    for name, run in doc["runs"].items():
        spread = run["across_seeds"]
        mean = spread["mean_icc"]
        cells = [pct(spread["dimensions"][d.key]["mean"]) for d in DIMENSIONS]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {pct(mean['mean'])} ({pct(mean['min'])} to {pct(mean['max'])}) |"
        )
    lines.append(f"Details: {shown(cross_validation['path'])}")
    return "\n".join(lines)


@dataclass
class _Job:
    """What the default job's stages share: the dataset opened once, where it writes, how it scores."""

    dataset: BuiltDataset
    synthetic: bool
    out_dir: Path
    folder: Any  # OutputFolder
    split: str
    n_bootstrap: int
    seed: int
    say: Callable[..., None]
    default_sample: bool = False
    resample: str = DEFAULT_RESAMPLE


def _fit_and_score(job: _Job, train_rows: list[dict], eval_rows: list[dict], jobs) -> list:
    """Each (baseline, setting) fitted on train, scored on the split, its files written under runs/."""
    from eval_scripts.baselines.baseline_run import BaselineBatch, run_baseline

    runs = []
    # every setting reads the same rows: load them once, summarise each video once
    batch = BaselineBatch(train_rows, eval_rows, subdir="runs", summary_cache={})
    for baseline, modality in jobs:
        run = run_baseline(
            job.dataset,
            job.folder,
            baseline=baseline,
            modality=modality,
            split=job.split,
            resampling=ResamplingOptions(n_bootstrap=job.n_bootstrap, seed=job.seed, resample=job.resample),
            batch=batch,
        )
        overall = (run.results["scores"] or {}).get("overall", {}).get("icc")
        job.say(
            f"  {baseline:8s} {modality:17s} overall ICC {'–' if overall is None else f'{100 * overall:5.1f}'}%"
            f"  ({run.seconds:.1f}s)"
        )
        runs.append(run)
    return runs


def _about(job: _Job):
    """What the report says it was run on: the default sample, or the build with its gold source and split."""
    from eval_scripts.report.about import describe_build

    return describe_build(
        job.dataset.report,
        job.dataset.path.name,
        synthetic=job.synthetic,
        split=job.split,
        default_sample=job.default_sample,
    )


def _publish(job: _Job, runs: list, references: dict, cross_validation: dict | None) -> tuple[Any, Any]:
    """The report of the runs (with the cross-validation, when run), their submissions and the leaderboard."""
    from eval_scripts.formats.submission import package_submission
    from eval_scripts.leaderboard import BoardReferences, build_leaderboard, write_leaderboard
    from eval_scripts.report import ReportOptions, write_report

    about = _about(job)
    title = f"MIS-Bench CPU baselines on {about.name}"
    cv = None
    if cross_validation:
        test_split = {f"{r.name} {r.modality}": (r.results["scores"] or {}).get("mean_icc") for r in runs}
        cv = {"doc": cross_validation["doc"], "test_split": test_split}
    options = ReportOptions(
        title=title, comparison_bootstrap=job.n_bootstrap, seed=job.seed, resample=job.resample, about=about
    )
    report = write_report(
        [r.results for r in runs],
        job.folder,
        options,
        references=references,
        sources=[str(r.results_path) for r in runs],
        cross_validation=cv,
    )
    submissions = job.out_dir / "submissions"
    for run in runs:
        package_submission(run.results_path, submissions, replace_previous=True, command="run")
    board = build_leaderboard(
        submissions,
        # the build's fingerprints and flag, as `mis-bench leaderboard` and the Space read them
        BoardReferences(references, job.dataset.fingerprints(job.split), job.dataset.synthetic),
        split=job.split,
        resampling=ResamplingOptions(n_bootstrap=job.n_bootstrap, seed=job.seed, resample=job.resample),
    )
    leaderboard = write_leaderboard(
        board,
        job.out_dir / "leaderboard",
        command="run",
        title="MIS-Bench leaderboard (SYNTHETIC sample)" if job.synthetic else "MIS-Bench leaderboard",
    )
    return report, leaderboard


def _summary(job: _Job, runs, skipped, cross_validation, published, *, n_videos: int, n_train: int) -> dict:
    """summary.json: what ran, where its files are (`published`: the report's and the leaderboard's, as `_publish`
    returns them), and the headline numbers."""
    report, leaderboard = published
    return {
        "synthetic": job.synthetic,
        "dataset": str(job.dataset.path),
        "split": job.split,
        "n_videos": n_videos,
        "n_train_videos": n_train,
        "n_bootstrap": job.n_bootstrap,
        "runs": [
            {
                "baseline": r.name,
                "modality": r.modality,
                "results": str(r.results_path),
                "predictions": str(r.predictions_path),
                "overall_icc": (r.results["scores"] or {}).get("overall", {}).get("icc"),
                "mean_icc": (r.results["scores"] or {}).get("mean_icc"),
            }
            for r in runs
        ],
        "skipped": [{"baseline": "features", "modality": m, "reason": why} for m, why in skipped.items()],
        "cross_validation": None
        if cross_validation is None
        else {
            **{k: v for k, v in cross_validation.items() if k != "doc"},
            "mean_icc": {n: r["across_seeds"]["mean_icc"] for n, r in cross_validation["doc"]["runs"].items()},
        },
        "report": {"markdown": str(report.markdown), "html": str(report.html), "json": str(report.json)},
        "leaderboard": {"html": str(leaderboard.html), "json": str(leaderboard.json), "csv": str(leaderboard.csv)},
    }


def _say_summary(job: _Job, summary: dict, runs, cross_validation, report, leaderboard) -> None:
    """The terminal summary: the ICC table, the cross-validation table, where the files are."""
    from eval_scripts.report.table import icc_table, run_views, to_markdown

    say, synthetic = job.say, job.synthetic
    say()
    say(f"ICC(3,1) % on {summary['n_videos']} {job.split} videos" + (" (SYNTHETIC sample)" if synthetic else "") + ":")
    say(to_markdown(icc_table(run_views([r.results for r in runs]), with_ci=False)))
    say()
    if cross_validation:
        say()
        say(_cv_table(cross_validation, synthetic))
    say(f"Report:      {shown(report.html)}  (and {report.markdown.name}, {report.json.name})")
    say(f"Leaderboard: {shown(leaderboard.html)}")
    say(f"Runs:        {shown(job.out_dir / 'runs')}/  (predictions.jsonl + results.json per run)")
    if cross_validation:
        say(
            f"CV runs:     {shown(job.out_dir / CV_RUNS)}/  (out-of-fold predictions of every video, a run per fold "
            "seed)"
        )
    say(f"Done in {summary['seconds']}s.")
    if synthetic:
        say(
            "Reminder: SYNTHETIC data. For the real text benchmark, `mis-bench fetch` gets the authors' public "
            "files (docs/reproducing.md); then `mis-bench run --dataset` on their build."
        )


def out_folder(out: str | Path | None) -> Path:
    """Where the job writes: `out` when given, else `./mis-bench-results`."""
    return Path(out) if out else DEFAULT_OUT


def interrupted_note(out_dir: Path) -> str:
    """What a stopped job keeps, for the one line Ctrl-C prints."""
    return (
        f"what was written so far is kept under {out_dir} (and a finished synthetic sample in the "
        "cache); rerun the same command to run the job again"
    )


# The job's keywords by the names a command line gives them (`mis-bench run` with no model).
OPTION_NAMES = {
    "split": "split",
    "n_bootstrap": "bootstrap",
    "resample": "resample",
    "seed": "seed",
    "cv_folds": "cv_folds",
    "cv_seeds": "cv_seeds",
}


def run_with_options(
    options: Mapping[str, Any], *, say: Callable[[str], None] | None = None, closing_lines: bool = True
) -> dict[str, Any]:
    """The job with a command line's options (`dataset`, `out` and `OPTION_NAMES`' names; None or absent: not
    given): what the command line does not say, the job's own defaults (the same as RunConfig's: one definition
    each)."""
    given = {name: value for name, value in options.items() if value is not None}
    job = {keyword: given[name] for keyword, name in OPTION_NAMES.items() if name in given}
    resampling = ResamplingOptions(**{k: job.pop(k) for k in ("n_bootstrap", "seed", "resample") if k in job})
    cv = CrossValidationPlan(**{k: job.pop(f"cv_{k}") for k in ("folds", "seeds") if f"cv_{k}" in job})
    return run_default_job(
        given.get("dataset"),
        out_folder(given.get("out")),
        **job,
        resampling=resampling,
        cv=cv,
        say=say,
        closing_lines=closing_lines,
    )


@dataclass(frozen=True)
class CrossValidationPlan:
    """The default job's cross-validation over every video: `folds` clinician-grouped folds (0: none, the
    default), repeated over `seeds` fold seeds from the job's seed on."""

    folds: int = DEFAULT_CV_FOLDS
    seeds: int = DEFAULT_CV_SEEDS


def run_default_job(
    dataset: str | Path | BuiltDataset | None = None,
    out: str | Path = DEFAULT_OUT,
    *,
    split: str = "test",
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    cv: CrossValidationPlan = CrossValidationPlan(),
    say: Callable[[str], None] | None = None,
    closing_lines: bool = True,
) -> dict[str, Any]:
    """The default job on `dataset` (default: the synthetic sample) into `out`; returns its summary.

    `resampling`: the CIs of every score; `cv`: the cross-validation, if any (`CrossValidationPlan`). `say` shows
    one line to the user (the CLI's printer); without it the lines are logged. `closing_lines`: end with the
    summary's lines (the paths, how to get the real benchmark); off when the caller prints the summary itself
    (`mis-bench run --json`).
    """
    n_bootstrap, seed, resample = resampling.n_bootstrap, resampling.seed, resampling.resample
    cv_folds, cv_seeds = cv.folds, cv.seeds
    from eval_scripts.baselines.baseline_run import load_feature_rows
    from mis_bench_dataset.dataset.loading import gold_references
    from mis_bench_dataset.toolkit.atomic import write_atomic
    from mis_bench_dataset.toolkit.ownership import OutputFolder, check_not_overlapping

    started = time.monotonic()
    say = say or (lambda text="": logger.info("%s", text))  # the summary's blank lines too
    out_dir = Path(out)
    handle, synthetic = _dataset(dataset, say)
    check_not_overlapping(out_dir, [handle.path], command="run")
    job = _Job(handle, synthetic, out_dir, OutputFolder(out_dir, command="run"), split, n_bootstrap, seed, say)
    job.resample = resample
    job.default_sample = dataset is None
    if synthetic:
        say(SYNTHETIC_BANNER)
    train_rows = load_feature_rows(handle, "train")
    eval_rows = load_feature_rows(handle, split)
    references = gold_references(eval_rows)
    if not references:
        raise DataError(
            f"split {split!r} has no labels to score against",
            where=str(handle.path),
            hint="build the dataset with --labels, or pass --split with a labelled split",
        )
    n_videos = len({video for video, _ in references})
    say(
        f"Fitting on {len(train_rows)} train videos; scoring {n_videos} {split} videos x {len(DIMENSION_KEYS)} "
        f"dimensions ({n_bootstrap} bootstrap resamples for the CIs)"
    )
    jobs, skipped = _jobs(train_rows)
    for setting, why in skipped.items():
        say(f"  skipping features {setting}: {why}")
    runs = _fit_and_score(job, train_rows, eval_rows, jobs)
    cross_validation = _cross_validation(
        handle, jobs, job.folder, folds=cv_folds, n_seeds=cv_seeds, draw=(n_bootstrap, seed, resample), say=say
    )
    with step("writing the report, the submissions and the leaderboard"):  # the report's figures: seconds
        report, leaderboard = _publish(job, runs, references, cross_validation)
    summary = _summary(
        job, runs, skipped, cross_validation, (report, leaderboard), n_videos=n_videos, n_train=len(train_rows)
    )
    summary["seconds"] = round(time.monotonic() - started, 1)
    write_atomic(job.folder.claim("summary.json", "run-summary"), json.dumps(summary, indent=1) + "\n")
    if closing_lines:
        _say_summary(job, summary, runs, cross_validation, report, leaderboard)
    return summary
