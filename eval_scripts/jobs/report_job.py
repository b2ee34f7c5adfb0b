"""`mis-bench report` as one call: results files in, the report folder out (the command only parses and prints).

Why a job: a script or notebook makes the same report the command makes (the results read and checked, rescored
against `references` when given, the raters' labels beside them, one build per report), with the same errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

if TYPE_CHECKING:  # the report's modules load matplotlib: imported when a report is made
    from eval_scripts.report.options import ReportOptions
    from eval_scripts.report.writer import ReportFiles


@dataclass(frozen=True)
class ReportDone:
    """What `report_runs` wrote (`written`: the report's markdown, html, json and figures), from which results
    files (`sources`), whether they were rescored against references, and whether any run is SYNTHETIC."""

    written: ReportFiles
    sources: list[str]
    rescored: bool
    synthetic: bool


def report_runs(
    results: Sequence[str | Path],
    out: str | Path,
    options: ReportOptions,
    *,
    references: str | Path | None = None,
    split: str,
    raters: str | Path | None = None,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
) -> ReportDone:
    """The report of the runs in `results` (results files or run folders) written into the folder `out`, as
    `mis-bench report` writes it. `options`: a `ReportOptions` (its `about` is filled from `references`).
    `references` (a labelled build or labels file): every run rescored on its `split` with `resampling`, paired
    tests between runs; without it the stored scores and CIs are shown. `raters`: per-rater labels (needs
    `references`). Raises `DataError` / `UsageError` before anything is written."""
    from eval_scripts.formats.data_names import results_synthetic
    from eval_scripts.report.about import about_references
    from eval_scripts.report.inputs import (
        load_results,
        one_fingerprint_per_build,
        read_report_references,
        rescore,
        results_files,
    )
    from eval_scripts.report.writer import write_report
    from mis_bench_dataset.toolkit.errors import DataError, UsageError
    from mis_bench_dataset.toolkit.ownership import OutputFolder

    if raters and not references:
        raise UsageError("--raters needs --references (the gold scores)", hint="pass --references LABELS_OR_BUILD")
    files = results_files([str(path) for path in results])
    sources = [str(f) for f in files]
    extra_inputs = [Path(path) for path in (references, raters) if path]
    folder = OutputFolder(out, command="report", inputs=[*files, *extra_inputs])
    results_list = load_results(files)
    rater_labels = _rater_labels(raters)
    gold = None
    if references:
        gold = read_report_references(references, split)
        if not gold:
            raise DataError(
                f"the references have no gold scores for split {split!r}",
                where=str(references),
                hint="give a labelled build or a labels file",
            )
        results_list = one_fingerprint_per_build(results_list, references, split)
        results_list = rescore(results_list, gold, resampling=resampling, sources=sources)
    unscored = [source for source, run in zip(sources, results_list, strict=True) if not run.get("scores")]
    if unscored:
        raise DataError(
            f"{len(unscored)} run(s) have no scores",
            where=", ".join(unscored[:3]),
            hint="pass --references LABELS (a labelled build or a labels file) to score them",
        )
    options = replace(options, about=about_references(references, split))
    written = write_report(results_list, folder, options, references=gold, sources=sources, raters=rater_labels)
    synthetic = any(results_synthetic(run) for run in results_list)
    return ReportDone(written, sources, rescored=gold is not None, synthetic=synthetic)


def _rater_labels(raters: str | Path | None):
    """The per-rater labels file's rows, or None."""
    if not raters:
        return None
    from mis_bench_dataset.release.labels import read_labels

    return read_labels(raters)
