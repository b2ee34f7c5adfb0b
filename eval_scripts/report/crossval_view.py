"""The report's cross-validation section (`mis-bench run --cv-folds K`): per baseline and fold seed the
ICC of the pooled out-of-fold predictions, across seeds the mean and range, beside the test-split numbers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eval_scripts.report.formatting import MISSING, ci_pct, pct, withheld_cell
from eval_scripts.report.table import Table
from mis_bench_dataset.dimensions import DIMENSIONS
from mis_bench_dataset.wording import HEADLINE_NUMBERS


def crossval_paragraph(doc: Mapping[str, Any]) -> str:
    return (
        f"{doc['n_folds']}-fold cross-validation over all {doc['n_videos']} videos, folds grouped by "
        f"{doc['grouping']}, fold seeds {', '.join(str(s) for s in doc['seeds'])}: each video is predicted once per "
        "seed by the baseline fitted on the other folds, and those pooled out-of-fold predictions are scored like "
        f"any run ({doc['n_bootstrap']:,} bootstrap resamples of clinicians, each with all its videos); each fold's "
        "own mean ICC (its held-out "
        "videos alone) follows. The test-split column is the run above, fitted on the train split. Which to cite, "
        f"{HEADLINE_NUMBERS['mean over fold seeds']}; a seed's figure is one draw of it, the test split's a figure "
        "on one split's videos."
    )


def _spread(spread: Mapping[str, Any]) -> str:
    if spread.get("mean") is None:
        return MISSING
    return f"{pct(spread['mean'])} ({pct(spread['min'])} to {pct(spread['max'])})"


def _ci(scores: Mapping[str, Any]) -> str:
    """A seed's mean-ICC CI, or the reason it is withheld (`mis_icc_metric.reporting_floor`) where it would stand."""
    reason = (scores.get("withheld") or {}).get("mean_icc_ci")
    return f"({withheld_cell(reason)})" if reason else ci_pct(scores.get("mean_icc_ci"))


def _folds(scores: Mapping[str, Any]) -> str:
    folds = scores.get("fold_mean_icc")
    return "; folds " + " / ".join(pct(v) for v in folds) if folds else ""


def crossval_table(doc: Mapping[str, Any], test_split: Mapping[str, float | None]) -> Table:
    """A row per baseline: test-split mean ICC, each seed's mean ICC [CI] of the pooled folds and each fold's
    own, the mean (range) over seeds, and each dimension's mean (range) over seeds."""
    seeds = [str(s) for s in doc["seeds"]]
    header = ["Baseline", "test split mean ICC %", *(f"seed {s}: mean ICC % [95% CI]; per fold" for s in seeds)]
    header += ["mean ICC % over seeds (range)", *(f"{d.abbreviation} (range)" for d in DIMENSIONS)]
    rows = []
    for name, run in doc["runs"].items():
        by_seed = [run["by_seed"][s] for s in seeds]
        cells = [name, pct(test_split.get(name))]
        cells += [f"{pct(s['mean_icc'])} {_ci(s)}{_folds(s)}" for s in by_seed]
        cells.append(_spread(run["across_seeds"]["mean_icc"]))
        cells += [_spread(run["across_seeds"]["dimensions"][d.key]) for d in DIMENSIONS]
        rows.append(cells)
    return Table(header, rows, set(), label_columns=1)
