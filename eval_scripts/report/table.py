"""The paper's Table 3 layout (dimensions as columns, ICC % with CI, best per column
marked) plus the MSE and parse/exclusion-rate tables, in Markdown and HTML."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval_scripts.report.formatting import MISSING, best_rows, ci_pct, num, pct
from mis_bench_dataset.dimensions import DIMENSIONS, HUMAN_CEILING


@dataclass(frozen=True)
class RunView:
    """What a report needs from one results JSON (contract item 4)."""

    label: str
    scores: Mapping[str, Any]
    parse_rates: Mapping[str, float]
    synthetic: bool = False
    predictions: Mapping[tuple[str, str], float | None] = field(default_factory=dict)

    def dim(self, key: str) -> Mapping[str, Any]:
        return (self.scores.get("dimensions") or {}).get(key) or {}

    @property
    def overall(self) -> Mapping[str, Any]:
        return self.scores.get("overall") or {}

    @property
    def mean_icc(self) -> float | None:
        return self.scores.get("mean_icc")


def run_label(results: Mapping[str, Any]) -> str:
    setting = results["setting"]
    label = f"{results['system']['model']} · {setting['modality']}"
    if setting.get("prompt_style") not in (None, "none"):
        label += f" · {setting['prompt_style']}"
    if setting.get("few_shot_k"):
        label += f" · {setting['few_shot_k']}-shot"
    return label


def run_views(results_list: Sequence[Mapping[str, Any]]) -> list[RunView]:
    """RunViews of scored results objects; refuses one without scores (nothing to report)."""
    views = []
    for index, results in enumerate(results_list):
        if not results.get("scores"):
            raise ValueError(
                f"results #{index} ({results.get('system', {}).get('model', '?')}) has no scores: "
                "score it against labels first (`mis-bench score`) or pass --references"
            )
        views.append(
            RunView(
                label=run_label(results),
                scores=results["scores"],
                parse_rates=results.get("parse_rates") or {},
                synthetic=bool(results.get("dataset", {}).get("synthetic", False)),
                predictions={(r["video_id"], r["dimension"]): r["prediction"] for r in results.get("predictions", [])},
            )
        )
    return views


# ----------------------------------------------------------------------------- cell grids


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]
    best: set[tuple[int, int]]  # (row, column) cells to mark
    reference_rows: list[list[str]] = field(default_factory=list)


def _mark_best(columns: list[list[float | None]], *, higher_is_better: bool, offset: int = 1) -> set[tuple[int, int]]:
    # Only a real comparison marks anything: a lone run has no "best".
    marked = set()
    for column, values in enumerate(columns):
        if sum(v is not None for v in values) < 2:
            continue
        marked |= {(row, column + offset) for row in best_rows(values, higher_is_better=higher_is_better)}
    return marked


def icc_table(runs: Sequence[RunView], *, with_ci: bool = True) -> Table:
    """ICC(3,1) in percent: one row per run, the eight dimensions, Overall and Mean."""
    header = ["System"] + [d.abbreviation for d in DIMENSIONS] + ["Overall", "Mean ICC"]
    columns = [[run.dim(d.key).get("icc") for run in runs] for d in DIMENSIONS]
    columns += [[run.overall.get("icc") for run in runs], [run.mean_icc for run in runs]]
    cis = [[run.dim(d.key).get("icc_ci") for run in runs] for d in DIMENSIONS]
    cis += [[run.overall.get("icc_ci") for run in runs], [None for _ in runs]]
    rows = []
    for r, run in enumerate(runs):
        cells = [run.label]
        for values, intervals in zip(columns, cis):
            cell = pct(values[r])
            if with_ci and intervals[r] is not None and cell != MISSING:
                cell += f" {ci_pct(intervals[r])}"
            cells.append(cell)
        rows.append(cells)
    ceiling = ["Human ceiling (Table 2)"] + [
        pct(HUMAN_CEILING[d.key].icc) + (f" {ci_pct((HUMAN_CEILING[d.key].ci_low, HUMAN_CEILING[d.key].ci_high))}" if with_ci else "")
        for d in DIMENSIONS
    ] + [MISSING, pct(sum(HUMAN_CEILING[d.key].icc for d in DIMENSIONS) / len(DIMENSIONS))]
    return Table(header, rows, _mark_best(columns, higher_is_better=True), [ceiling])


def mse_table(runs: Sequence[RunView]) -> Table:
    header = ["System"] + [d.abbreviation for d in DIMENSIONS] + ["Overall"]
    columns = [[run.dim(d.key).get("mse") for run in runs] for d in DIMENSIONS]
    columns.append([run.overall.get("mse") for run in runs])
    rows = [[run.label] + [num(col[r]) for col in columns] for r, run in enumerate(runs)]
    return Table(header, rows, _mark_best(columns, higher_is_better=False))


def rates_table(runs: Sequence[RunView]) -> Table:
    """Parse rate per dimension (share of outputs the parser g read) and the overall exclusion rate."""
    header = ["System"] + [d.abbreviation for d in DIMENSIONS] + ["Excluded (overall)", "n (overall)"]
    rows = []
    for run in runs:
        rows.append(
            [run.label]
            + [pct(run.parse_rates.get(d.key)) + ("%" if run.parse_rates.get(d.key) is not None else "") for d in DIMENSIONS]
            + [pct(run.overall.get("excluded_rate")) + "%", str(run.overall.get("n", MISSING))]
        )
    return Table(header, rows, set())


# ----------------------------------------------------------------------------- rendering


def to_markdown(table: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    out = [line(table.header), line(["---"] + ["---:"] * (len(table.header) - 1))]
    for r, row in enumerate(table.rows):
        out.append(line([f"**{cell}**" if (r, c) in table.best else cell for c, cell in enumerate(row)]))
    for row in table.reference_rows:
        out.append(line([f"_{cell}_" for cell in row]))
    return "\n".join(out)


def to_html(table: Table, *, css_class: str = "results") -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = []
    for r, row in enumerate(table.rows):
        cells = "".join(
            f'<td class="best">{html.escape(cell)}</td>' if (r, c) in table.best else f"<td>{html.escape(cell)}</td>"
            for c, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    for row in table.reference_rows:
        body.append('<tr class="reference">' + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
