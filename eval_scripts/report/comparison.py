"""The paper's Table 4 / Figure 4 view: systems scored on the same split, side by side.

The compared runs are the reference run plus every other system's best configuration (Table 3's
rule) scored on the reference's dataset (same fingerprint) and split; the others are skipped with
the reason. With labels, each is scored with `mis_icc_metric.score_predictions` (percentile CIs
from `n_bootstrap` resamples, 10,000 as in the paper) and tested against the reference with
`mis_icc_metric.paired_comparison`; without labels the stored scores are shown as they are and no
paired test can run.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eval_scripts.report.inputs import Key, predictions_on, score_run
from eval_scripts.report.table import RunView
from eval_scripts.report.views import BestConfiguration
from mis_bench_dataset.dimensions import PAPER_BOOTSTRAP_RESAMPLES as PAPER_BOOTSTRAP
from mis_bench_dataset.toolkit.defaults import DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.progress import progress
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Comparison:
    """The compared runs (reference first), their scores, and the paired tests against the reference."""

    reference: RunView | None
    reference_rule: str
    runs: list[RunView] = field(default_factory=list)
    scores: list[Mapping[str, Any]] = field(default_factory=list)
    paired: list[dict[str, Any]] = field(default_factory=list)  # one per runs[1:]
    skipped: list[tuple[RunView, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rescored: bool = False
    n_bootstrap: int | None = None
    seed: int | None = None
    resample: str | None = None

    def views(self) -> list[RunView]:
        """The compared runs carrying the comparison's scores (for the radar and the tables)."""
        return [replace(run, scores=scores) for run, scores in zip(self.runs, self.scores, strict=True)]

    def as_json(self) -> dict[str, Any]:
        return {
            "reference": None if self.reference is None else self.reference.identity(),
            "reference_rule": self.reference_rule,
            "dataset": None
            if self.reference is None
            else {"fingerprint": self.reference.fingerprint, "split": self.reference.split},
            "rescored": self.rescored,
            "n_bootstrap": self.n_bootstrap,
            "seed": self.seed,
            "resample": self.resample,
            "systems": [
                {
                    **run.identity(),
                    "dimensions": {
                        k: {"icc": v.get("icc"), "icc_ci": v.get("icc_ci"), "withheld": _withheld(v)}
                        for k, v in (scores.get("dimensions") or {}).items()
                    },
                    "mean_icc": scores.get("mean_icc"),
                    "mean_icc_ci": scores.get("mean_icc_ci"),
                    "overall": {
                        "icc": (scores.get("overall") or {}).get("icc"),
                        "icc_ci": (scores.get("overall") or {}).get("icc_ci"),
                        "withheld": _withheld(scores.get("overall") or {}),
                    },
                    "withheld": _withheld(scores, "mean_icc_ci"),
                }
                for run, scores in zip(self.runs, self.scores, strict=True)
            ],
            "paired": self.paired,
            "skipped": [{**run.identity(), "reason": reason} for run, reason in self.skipped],
            "notes": self.notes,
        }


def _withheld(entry: Mapping[str, Any], key: str = "icc_ci") -> dict[str, str]:
    """The reason the one rule (`mis_icc_metric.reporting_floor`) withheld `entry`'s interval `key`, if it did."""
    reason = (entry.get("withheld") or {}).get(key)
    return {key: reason} if reason else {}


def withheld_notes(comparison: Comparison) -> list[str]:
    """One sentence per reason a CI or p-value of the comparison was withheld, naming the systems and rows."""
    from eval_scripts.report.formatting import withheld_lines
    from mis_bench_dataset.dimensions import DIMENSION_BY_KEY

    reasons = []
    for run, scores in zip(comparison.runs, comparison.scores, strict=True):
        rows = [(DIMENSION_BY_KEY[k].abbreviation, v) for k, v in (scores.get("dimensions") or {}).items()]
        rows += [("Overall", scores.get("overall") or {}), ("Mean", scores)]
        reasons += [
            (f"{run.label} {label}", why) for label, entry in rows for why in (entry.get("withheld") or {}).values()
        ]
    for test in comparison.paired:
        rows = [(DIMENSION_BY_KEY[k].abbreviation, v) for k, v in (test.get("dimensions") or {}).items()]
        rows += [("Overall", test.get("overall") or {}), ("Mean", test.get("mean_icc") or {})]
        name = (test.get("systems") or {}).get("a", "")
        reasons += [(f"{name} {label}", why) for label, entry in rows for why in (entry.get("withheld") or {}).values()]
    return withheld_lines(reasons)


def _same_file(run: RunView, path: Path) -> bool:
    return run.source is not None and Path(run.source).resolve() == path.resolve()


def choose_reference(
    runs: Sequence[RunView], best: Sequence[BestConfiguration], reference: str | None
) -> tuple[RunView, str]:
    """The reference run and how it was chosen: a results file given, a system's best configuration,
    or by default the best configuration of the first system given."""
    if reference is None:
        if not best:
            raise DataError(
                "no system has a defined overall ICC, so none can be the reference",
                hint="name one with --reference FILE",
            )
        return best[0].run, f"default: the best configuration of the first system given ({best[0].run.model})"
    path = Path(reference)
    if path.is_file():
        match = [run for run in runs if _same_file(run, path)]
        if not match:
            raise UsageError(
                "the reference file is not among the results reported",
                where=reference,
                hint="give it among the RESULTS too",
            )
        return match[0], f"--reference {reference}"
    for entry in best:
        if entry.run.model == reference:
            return entry.run, f"--reference {reference}: its best configuration"
    known = sorted({run.model for run in runs})
    if reference in known:
        raise DataError(
            f"system {reference!r} has no configuration with a defined overall ICC",
            hint="name one of its results files with --reference FILE",
        )
    raise UsageError(
        f"--reference {reference!r} is neither a results file nor a system", hint="systems: " + ", ".join(known)
    )


def _comparable(ref: RunView, others: Sequence[RunView]) -> tuple[list[RunView], list[tuple[RunView, str]]]:
    """(the reference and the systems scored on its split of its dataset, the others with why they are left out)."""
    compared, skipped = [], []
    for run in [ref, *others]:
        if (run.fingerprint, run.split) == (ref.fingerprint, ref.split):
            compared.append(run)
        else:
            skipped.append(
                (
                    run,
                    f"scored on split {run.split!r} of {run.dataset_label()}; the reference on "
                    f"split {ref.split!r} of {ref.dataset_label()}",
                )
            )
    return compared, skipped


def _stored_comparison(ref, rule, compared, skipped, notes: list[str], n_bootstrap: int) -> Comparison:
    """Without labels: the scores as the results stored them, and no paired tests."""
    stored = {(run.scores.get("meta") or {}).get("n_bootstrap") for run in compared}
    counts = ", ".join("unknown" if n is None else f"{n:,}" for n in sorted(stored, key=lambda n: (n is None, n)))
    notes.append(
        f"CIs as stored in the results ({counts} resamples); no paired tests: both need the labels "
        f"(pass --references DATASET_DIR_OR_LABELS to rescore with {n_bootstrap:,} resamples and test)"
    )
    return Comparison(
        ref,
        rule,
        compared,
        [run.scores for run in compared],
        [],
        skipped,
        notes,
        rescored=False,
        n_bootstrap=stored.pop() if len(stored) == 1 else None,
        seed=None,
    )


def _paired_tests(ref, others, references, plan: tuple[int, int, str], quiet: bool) -> list[dict[str, Any]]:
    """Each system against the reference: a paired bootstrap of the ICC differences on the same videos."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import paired_comparison

    n_bootstrap, seed, resample = plan
    reference_predictions = predictions_on(ref.predictions, references)
    paired = []
    for run in progress(others, desc="comparison: paired tests", unit="system", show=not quiet):
        try:
            comparison = paired_comparison(
                predictions_on(run.predictions, references),
                reference_predictions,
                references,
                resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed, resample=resample),
                names=(run.label, ref.label),
            )
        except ValueError as err:
            raise DataError(f"cannot compare with the reference: {err}", where=run.source or run.label) from None
        paired.append(json_safe(comparison))
    return paired


def compare_systems(
    runs: Sequence[RunView],
    best: Sequence[BestConfiguration],
    *,
    references: Mapping[Key, float] | None = None,
    reference: str | None = None,
    n_bootstrap: int = PAPER_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    resample: str = DEFAULT_RESAMPLE,
) -> Comparison:
    """The Table 4 / Figure 4 comparison (see the module docstring)."""
    if n_bootstrap < 0:
        raise UsageError(f"the number of bootstrap resamples must be >= 0, got {n_bootstrap}")
    if reference is None and not best:
        return Comparison(
            None,
            "none",
            notes=[
                "no comparison: no system has a defined overall ICC to pick a "
                "reference by (name one with --reference FILE)"
            ],
        )
    ref, rule = choose_reference(runs, best, reference)
    compared, skipped = _comparable(ref, [entry.run for entry in best if entry.run.model != ref.model])
    notes: list[str] = []
    if references is None:
        return _stored_comparison(ref, rule, compared, skipped, notes, n_bootstrap)
    scores = [
        score_run(
            run.predictions,
            references,
            resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed, resample=resample),
            source=run.source or run.label,
        )
        for run in progress(compared, desc="comparison: scoring", unit="system", show=len(compared) >= 3)
    ]
    paired: list[dict[str, Any]] = []
    if n_bootstrap == 0:
        notes.append("no CIs and no paired tests: the number of bootstrap resamples is 0")
    else:
        paired = _paired_tests(ref, compared[1:], references, (n_bootstrap, seed, resample), len(compared) < 4)
    if len(compared) < 2:
        notes.append(f"only one system on split {ref.split!r} of {ref.dataset_label()}: nothing to test against")
    return Comparison(
        ref,
        rule,
        compared,
        scores,
        paired,
        skipped,
        notes,
        rescored=True,
        n_bootstrap=n_bootstrap,
        seed=seed,
        resample=resample,
    )
