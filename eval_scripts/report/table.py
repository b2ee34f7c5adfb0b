"""Report tables as cell grids, rendered to Markdown and HTML: every run's ICC % with CI (best per
column marked), MSE and parse/exclusion rates, and the paper's views built in `views` and
`comparison`: Table 3 (top three per column), Figure 2's numbers and Table 4 with paired tests.

User text (model names, file names) is escaped in both renderings."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval_scripts.formats.results import is_floor_baseline, options_label
from eval_scripts.report.formatting import (
    MISSING,
    best_rows,
    ci_pct,
    md_escape,
    num,
    p_text,
    pct,
    signed_pct,
    withheld_cell,
)
from eval_scripts.report.inputs import trained_method
from mis_bench_dataset.dimensions import ABBREVIATION_NAMES, DIMENSIONS, HUMAN_CEILING, HUMAN_CEILING_MEAN
from mis_bench_dataset.toolkit.text_safety import escape_html


@dataclass(frozen=True)
class RunView:
    """What a report needs from one results JSON (contract item 4)."""

    label: str
    scores: Mapping[str, Any]
    parse_rates: Mapping[str, float]
    synthetic: bool = False
    predictions: Mapping[tuple[str, str], float | None] = field(default_factory=dict)
    model: str = ""
    modality: str = ""
    prompt_style: str = ""
    few_shot_k: int = 0
    input_source: str = ""
    fingerprint: str = ""
    split: str = ""
    source: str | None = None  # the results file it came from, when known
    outcomes: Mapping[str, Any] | None = None  # schema 1.1 `outcomes` (answered/unparsed/truncated/failed), if any
    floor: bool = False  # the `mean` floor baseline: shown, never ranked among the systems
    dataset_name: str = ""  # the results' dataset name (a build folder's name)
    method: str = ""  # how the model was trained (`mis-bench train`'s setting.json), "" when not known

    def dataset_label(self) -> str:
        """The data by its name, the fingerprint second (`the default synthetic sample (sha256:1823...)`)."""
        from eval_scripts.formats.data_names import dataset_name

        return dataset_name(self.dataset_name, self.fingerprint, self.split, synthetic=self.synthetic)

    def dim(self, key: str) -> Mapping[str, Any]:
        return (self.scores.get("dimensions") or {}).get(key) or {}

    def identity(self) -> dict[str, Any]:
        """Which run this is, as report.json records it."""
        return {
            "label": self.label,
            "model": self.model,
            "modality": self.modality,
            "prompt_style": self.prompt_style,
            "few_shot_k": self.few_shot_k,
            "input_source": self.input_source,
            "source": self.source,
            **({"method": self.method} if self.method else {}),
        }

    @property
    def overall(self) -> Mapping[str, Any]:
        return self.scores.get("overall") or {}

    @property
    def mean_icc(self) -> float | None:
        return self.scores.get("mean_icc")

    @property
    def configuration(self) -> str:
        return configuration_label(self.modality, self.prompt_style, self.few_shot_k)


def configuration_label(modality: str, prompt_style: str | None, few_shot_k: int | None) -> str:
    """`modality · prompt style · k-shot`; unprompted systems (prompt style `none`) show the modality only."""
    label = modality
    if prompt_style not in (None, "", "none"):
        label += f" · {prompt_style}"
    if few_shot_k:
        label += f" · {few_shot_k}-shot"
    return label


def run_label(results: Mapping[str, Any], method: str = "") -> str:
    """`model · [training method ·] modality · prompt style`, then what tells it from another run of that setting
    (`expected readout`, `3 samples`, `max-tokens 2`: `formats.results.options_label`); trained models are named
    with their method, so a comparison of methods reads as one."""
    setting = results["setting"]
    trained = f"{method} · " if method else ""
    label = f"{results['system']['model']} · {trained}" + configuration_label(
        setting["modality"], setting.get("prompt_style"), setting.get("few_shot_k")
    )
    return " · ".join([label, *options_label(results["system"])])


def run_views(results_list: Sequence[Mapping[str, Any]], sources: Sequence[str | None] | None = None) -> list[RunView]:
    """RunViews of scored results objects; refuses one without scores (nothing to report).

    Two runs with the same label (same model and setting from different files) get ` (2)`, ` (3)`
    appended so that every row of a table or figure names one run.
    """
    if sources is not None and len(sources) != len(results_list):
        raise ValueError(f"{len(sources)} sources for {len(results_list)} results")
    views = []
    seen: dict[str, int] = {}
    for index, results in enumerate(results_list):
        if not results.get("scores"):
            raise ValueError(
                f"results #{index} ({results.get('system', {}).get('model', '?')}) has no scores: "
                "score it against labels first (`mis-bench score`) or pass --references"
            )
        method = trained_method(results)
        label = run_label(results, method)
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label += f" ({seen[label]})"
        setting, dataset = results["setting"], results.get("dataset") or {}
        views.append(
            RunView(
                label=label,
                scores=results["scores"],
                # The metric's rates, from the predictions it scored (recomputed with --references, as on the
                # leaderboard); the results file's own `parse_rates` only when its scores lack them.
                parse_rates=results["scores"].get("parse_rates") or results.get("parse_rates") or {},
                synthetic=bool(dataset.get("synthetic", False)),
                predictions={(r["video_id"], r["dimension"]): r["prediction"] for r in results.get("predictions", [])},
                model=str(results["system"]["model"]),
                modality=str(setting["modality"]),
                prompt_style=str(setting.get("prompt_style") or "none"),
                few_shot_k=int(setting.get("few_shot_k") or 0),
                input_source=str(setting.get("input_source") or ""),
                fingerprint=str(dataset.get("fingerprint") or ""),
                split=str(dataset.get("split") or ""),
                source=None if sources is None else sources[index],
                outcomes=results.get("outcomes"),
                floor=is_floor_baseline(results["system"]),
                dataset_name=str(dataset.get("name") or ""),
                method=method,
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
    ranks: dict[tuple[int, int], int] = field(default_factory=dict)  # (row, column) -> 1, 2 or 3
    label_columns: int = 1  # leading columns of user text (escaped, never split)


RANK_NAMES = {1: "1st", 2: "2nd", 3: "3rd"}
RANK_SUPERSCRIPTS = {1: "\u00b9", 2: "\u00b2", 3: "\u00b3"}


def _mark_best(columns: list[list[float | None]], *, higher_is_better: bool, offset: int = 1) -> set[tuple[int, int]]:
    # Only a real comparison marks anything: a lone run has no "best".
    marked = set()
    for column, values in enumerate(columns):
        if sum(v is not None for v in values) < 2:
            continue
        marked |= {(row, column + offset) for row in best_rows(values, higher_is_better=higher_is_better)}
    return marked


def _ceiling_row(with_ci: bool) -> list[str]:
    return ["Human ceiling (Table 2)"] + [
        pct(HUMAN_CEILING[d.key].icc)
        + (f" {ci_pct((HUMAN_CEILING[d.key].ci_low, HUMAN_CEILING[d.key].ci_high))}" if with_ci else "")
        for d in DIMENSIONS
    ]


def _ci_cell(entry: Mapping[str, Any] | None, ci, key: str = "icc_ci") -> str | None:
    """The CI's text beside a value: "[a, b]", "(withheld: ...)" where the one rule withheld it
    (`mis_icc_metric.reporting_floor`, its reason in the entry's `withheld`), or None when there is none."""
    reason = ((entry or {}).get("withheld") or {}).get(key)
    if reason:
        return f"({withheld_cell(reason)})"
    return None if ci is None else ci_pct(ci)


def icc_table(runs: Sequence[RunView], *, with_ci: bool = True) -> Table:
    """ICC(3,1) in percent: one row per run, the eight dimensions, Overall and Mean."""
    header = ["System"] + [d.abbreviation for d in DIMENSIONS] + ["Overall", "Mean ICC"]
    columns = [[run.dim(d.key).get("icc") for run in runs] for d in DIMENSIONS]
    columns += [[run.overall.get("icc") for run in runs], [run.mean_icc for run in runs]]
    cis = [[_ci_cell(run.dim(d.key), run.dim(d.key).get("icc_ci")) for run in runs] for d in DIMENSIONS]
    cis += [[_ci_cell(run.overall, run.overall.get("icc_ci")) for run in runs], [None for _ in runs]]
    rows = []
    for r, run in enumerate(runs):
        cells = [run.label]
        for values, intervals in zip(columns, cis, strict=True):
            cell = pct(values[r])
            if with_ci and intervals[r] is not None and cell != MISSING:
                cell += f" {intervals[r]}"
            cells.append(cell)
        rows.append(cells)
    ceiling = _ceiling_row(with_ci) + [MISSING, pct(HUMAN_CEILING_MEAN)]
    return Table(header, rows, _mark_best(columns, higher_is_better=True), [ceiling])


def figure2_table(runs: Sequence[RunView]) -> Table:
    """Figure 2's numbers: every configuration's ICC with CI, plus each dimension's mean over the
    configurations where it is defined (the averages the paper quotes in section 4.2)."""
    table = icc_table(runs)
    means = []
    for d in DIMENSIONS:
        defined = [float(v) for v in (run.dim(d.key).get("icc") for run in runs) if isinstance(v, (int, float))]
        means.append(f"{pct(sum(defined) / len(defined))} (n={len(defined)})" if defined else MISSING)
    mean_row = ["Mean over configurations"] + means + [MISSING, MISSING]
    return Table(table.header, table.rows, table.best, [mean_row, *table.reference_rows])


def table3_table(best: Sequence[Any], ranks: Sequence[Mapping[str, int | None]]) -> Table:
    """The paper's Table 3: per system its best configuration's ICCs, 1st/2nd/3rd marked per column.

    `best` holds `views.BestConfiguration`s (their `values()` in column order) and `ranks` the
    matching `views.rank_table` rows.
    """
    header = ["System", "Best configuration"] + [d.abbreviation for d in DIMENSIONS] + ["Overall", "Mean ICC"]
    rows, marks = [], {}
    for r, (entry, rank) in enumerate(zip(best, ranks, strict=True)):
        values = entry.values()
        configuration = entry.run.configuration
        if entry.n_configurations > 1:
            configuration += f" (of {entry.n_configurations})"
        rows.append([entry.run.model, configuration] + [pct(value) for value in values.values()])
        for c, column in enumerate(values):
            if rank[column] is not None:
                marks[(r, c + 2)] = rank[column]
    ceiling = ["Human ceiling (Table 2)", MISSING] + _ceiling_row(False)[1:] + [MISSING, pct(HUMAN_CEILING_MEAN)]
    return Table(header, rows, set(), [ceiling], ranks=marks, label_columns=2)


def comparison_table(runs: Sequence[RunView]) -> Table:
    """The paper's Table 4: dimensions as rows, one column per system, ICC % [CI]; best per row in bold."""
    header = ["Dimension"] + [run.label for run in runs]
    lines = [
        (
            d.abbreviation,
            lambda run, key=d.key: (run.dim(key).get("icc"), _ci_cell(run.dim(key), run.dim(key).get("icc_ci"))),
        )
        for d in DIMENSIONS
    ]
    lines.append(
        (
            "Mean over dimensions",
            lambda run: (run.mean_icc, _ci_cell(run.scores, run.scores.get("mean_icc_ci"), "mean_icc_ci")),
        )
    )
    lines.append(("Overall", lambda run: (run.overall.get("icc"), _ci_cell(run.overall, run.overall.get("icc_ci")))))
    rows, best = [], set()
    for r, (name, get) in enumerate(lines):
        values = [get(run) for run in runs]
        cells = [name]
        for icc, ci in values:
            cell = pct(icc)
            if ci is not None and cell != MISSING:
                cell += f" {ci}"
            cells.append(cell)
        rows.append(cells)
        points = [icc for icc, _ in values]
        if sum(v is not None for v in points) >= 2:
            best |= {(r, c + 1) for c in best_rows(points)}
    return Table(header, rows, best, label_columns=1)


def paired_table(paired: Sequence[Mapping[str, Any]]) -> Table:
    """Paired bootstrap tests against the reference: ICC(system) - ICC(reference) in points, CI, p-value."""
    header = ["System vs reference"] + [d.abbreviation for d in DIMENSIONS] + ["Overall", "Mean ICC"]
    rows = []
    for test in paired:
        blocks = [test["dimensions"].get(d.key) or {} for d in DIMENSIONS] + [test["overall"], test["mean_icc"]]
        rows.append(
            [test["systems"]["a"]]
            + [
                f"{signed_pct(block.get('delta'))} {_ci_cell(block, block.get('delta_ci'), 'delta_ci') or MISSING} "
                f"{_p_cell(block)}"
                if block.get("delta") is not None
                else MISSING
                for block in blocks
            ]
        )
    return Table(header, rows, set())


def _p_cell(block: Mapping[str, Any]) -> str:
    """A p-value's text, or "p withheld" where the one rule withheld it (the reason is beside its CI)."""
    return "p withheld" if (block.get("withheld") or {}).get("p_value") else p_text(block.get("p_value"))


def mse_table(runs: Sequence[RunView]) -> Table:
    header = ["System"] + [d.abbreviation for d in DIMENSIONS] + ["Overall"]
    columns = [[run.dim(d.key).get("mse") for run in runs] for d in DIMENSIONS]
    columns.append([run.overall.get("mse") for run in runs])
    rows = [[run.label] + [num(col[r]) for col in columns] for r, run in enumerate(runs)]
    return Table(header, rows, _mark_best(columns, higher_is_better=False))


def rates_table(runs: Sequence[RunView]) -> Table:
    """Parse rate per dimension (share of rows the parser g read a score from), the rows without one by
    cause (an answer it could not read, an answer cut at the token limit, a failed request; counts from
    the results' `outcomes`, shown only by runs that record them) and the overall exclusion rate."""
    header = (
        ["System"]
        + [d.abbreviation for d in DIMENSIONS]
        + ["Unparsed", "Truncated", "Failed", "Excluded (overall)", "n (overall)"]
    )
    rows = []
    for run in runs:
        counts = (run.outcomes or {}).get("overall") or {}
        rows.append(
            [run.label]
            + [
                pct(run.parse_rates.get(d.key)) + ("%" if run.parse_rates.get(d.key) is not None else "")
                for d in DIMENSIONS
            ]
            + [str(counts[kind]) if kind in counts else MISSING for kind in ("unparsed", "truncated", "failed")]
            + [pct(run.overall.get("excluded_rate")) + "%", str(run.overall.get("n", MISSING))]
        )
    return Table(header, rows, set())


# ----------------------------------------------------------------------------- rendering

# "12.3 [4.5, 20.1] p=0.010" -> the value, then its interval and its p-value on smaller lines below.
_VALUE_AND_DETAIL = re.compile(r"^(\S+) (\[[^\]]*\])(?: (.+))?$")
# "-0.89 to +0.93" (a range, e.g. the limits of agreement) -> its two ends on two lines, so the column stays narrow.
_RANGE = re.compile(r"^(\S+) (to \S+)$")


def _md_cell(table: Table, r: int, c: int, cell: str) -> str:
    text = md_escape(cell) if c < table.label_columns else cell.replace("|", "\\|")
    rank = table.ranks.get((r, c))
    if rank is not None:
        text += RANK_SUPERSCRIPTS[rank]
    if (r, c) in table.best or rank == 1:
        text = f"**{text}**"
    return text


def to_markdown(table: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    out = [
        line([md_escape(h) for h in table.header]),
        line(["---"] * table.label_columns + ["---:"] * (len(table.header) - table.label_columns)),
    ]
    for r, row in enumerate(table.rows):
        out.append(line([_md_cell(table, r, c, cell) for c, cell in enumerate(row)]))
    for row in table.reference_rows:
        out.append(line([f"_{md_escape(cell) if c < table.label_columns else cell}_" for c, cell in enumerate(row)]))
    return "\n".join(out)


def _html_cell(cell: str, numeric: bool) -> str:
    match = _VALUE_AND_DETAIL.match(cell) if numeric else None
    if match is None:
        ends = _RANGE.match(cell) if numeric else None
        if ends is not None:
            return f'{escape_html(ends.group(1))}<span class="range-end">{escape_html(ends.group(2))}</span>'
        return escape_html(cell)
    details = "".join(f'<span class="detail">{escape_html(part)}</span>' for part in match.groups()[1:] if part)
    return escape_html(match.group(1)) + details


def to_html(table: Table, *, css_class: str = "results") -> str:
    """The table inside a horizontally scrollable box, so a wide table never runs off the page."""
    head = "".join(
        f'<th class="label">{escape_html(h)}</th>'
        if c < table.label_columns
        else f'<th title="{escape_html(ABBREVIATION_NAMES[h])}"><abbr title="{escape_html(ABBREVIATION_NAMES[h])}">'
        f"{escape_html(h)}</abbr></th>"
        if h in ABBREVIATION_NAMES
        else f"<th>{escape_html(h)}</th>"
        for c, h in enumerate(table.header)
    )
    body = []
    for r, row in enumerate(table.rows):
        cells = []
        for c, cell in enumerate(row):
            classes = []
            if (r, c) in table.best:
                classes.append("best")
            rank = table.ranks.get((r, c))
            if rank is not None:
                classes.append(f"rank{rank}")
            label = c < table.label_columns
            if label:
                classes.append("label")
            attrs = f' class="{" ".join(classes)}"' if classes else ""
            if rank is not None:
                attrs += f' title="{RANK_NAMES[rank]}"'
            content = _html_cell(cell, not label)
            if label and cell in ABBREVIATION_NAMES:  # a dimension as a row label: spelt out on hover
                content = f'<abbr title="{escape_html(ABBREVIATION_NAMES[cell])}">{content}</abbr>'
            if rank is not None:
                content += f"<sup>{rank}</sup>"
            cells.append(f"<td{attrs}>{content}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    for row in table.reference_rows:
        body.append(
            '<tr class="reference">'
            + "".join(
                f'<td class="label">{escape_html(cell)}</td>'
                if c < table.label_columns
                else f"<td>{_html_cell(cell, True)}</td>"
                for c, cell in enumerate(row)
            )
            + "</tr>"
        )
    return (
        f'<div class="table-wrap"><table class="{css_class}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
