"""A judge under perturbations, as tables and a figure: the shift tables of `mis_icc_metric.sensitivity` in
Markdown (one row per perturbation and dimension, and the mean over dimensions) and the sensitivity figure
(mean score shift and ICC change, perturbation x dimension)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_scripts.report.formatting import floor_sentence, withheld_cell, withheld_lines
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, pct, signed

TABLE_HEAD = (
    "| perturbation | dim | n | mean shift [95% CI] | mean \\|shift\\| | moved >= 0.5 | ICC % before | "
    "ICC change % [95% CI] |",
    "|---|---|---|---|---|---|---|---|",
)


def _ci(ci, digits: int = 3) -> str:
    if not ci or any(v is None for v in ci):
        return MISSING
    return f"[{signed(ci[0], digits)}, {signed(ci[1], digits)}]"


# The intervals the shift table shows (the share moved and the p-value are in the JSON only).
_SHOWN = ("mean_shift_ci", "icc_change_ci")


def _or_withheld(entry: Mapping[str, Any], key: str, shown: str) -> str:
    """`shown` (a CI's text), or "withheld: ..." where the one rule (`mis_icc_metric.reporting_floor`) withheld it."""
    reason = (entry.get("withheld") or {}).get(key)
    return withheld_cell(reason) if reason else shown


def _mean_shift(entry: Mapping[str, Any]) -> str:
    return f"{signed(entry['mean_shift'], 3)} {_or_withheld(entry, 'mean_shift_ci', _ci(entry['mean_shift_ci']))}"


def _icc_change(entry: Mapping[str, Any]) -> str:
    change = signed(None if entry["icc_change"] is None else 100 * entry["icc_change"], 1)
    return f"{change} {_or_withheld(entry, 'icc_change_ci', ci_pct(entry['icc_change_ci']))}"


def _row(name: str, label: str, entry: Mapping[str, Any]) -> str:
    return (
        f"| {name} | {label} | {entry['n']} | {_mean_shift(entry)} | "
        f"{entry['mean_abs_shift']:.3f} | {pct(entry['share_moved'])}% | {pct(entry['icc_unperturbed'])} | "
        f"{_icc_change(entry)} |"
    )


def shift_table_lines(tables: Mapping[str, Mapping[str, Any]], *, dimensions: bool = True) -> list[str]:
    """The Markdown table of every perturbation: its dimensions (when asked) and the mean over them; then, after a
    blank line, why any CI or p-value was withheld (`mis_icc_metric.reporting_floor`)."""
    lines = list(TABLE_HEAD)
    reasons = []
    for name, table in tables.items():
        rows = [(DIMENSION_BY_KEY[key].abbreviation, table["dimensions"].get(key)) for key in DIMENSION_KEYS]
        rows = [(label, entry) for label, entry in rows if dimensions and entry is not None]
        rows.append(("**mean**" if dimensions else "mean", table["mean"]))
        for label, entry in rows:
            lines.append(_row(name, label, entry))
            withheld = entry.get("withheld") or {}
            reasons += [(f"{name} {label.strip('*')}", withheld[key]) for key in _SHOWN if withheld.get(key)]
    shown = withheld_lines(reasons)
    return lines + (["", *shown] if shown else [])


def _sd_pct(value) -> str:
    return MISSING if value is None or value != value else f"{100 * value:.1f}"


def variance_table_lines(table: Mapping[str, Any]) -> list[str]:
    """Every source of variance of the ICC (`mis_icc_metric.variance_table`), percentage points."""
    lines = [
        "| dim | ICC % | SD videos | SD clinicians | SD sampling | SD prompts | CI, resampling | CI, all sources |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [(entry["abbreviation"], entry) for entry in table["dimensions"].values()]
    for label, entry in [*rows, ("**mean**", table["mean_icc"])]:
        sds = [_sd_pct(entry[f"sd_{source}"]) for source in ("videos", "clinicians", "sampling", "prompts")]
        lines.append(
            f"| {label} | {pct(entry['icc'])} | " + " | ".join(sds) + " | "
            f"{_or_withheld(entry, 'resampling_ci', ci_pct(entry['resampling_ci']))} | "
            f"{_or_withheld(entry, 'total_ci', ci_pct(entry['total_ci']))} |"
        )
    meta = table["meta"]
    samples = f"{meta['n_samples']} samples" if meta["n_samples"] else "one sample (no --samples)"
    lines += [
        "",
        f"Prompts: {', '.join(meta['prompts'])}; {samples}. SDs in ICC percentage points. The last CI adds "
        f"the prompt and sampling spread to the clinician resampling ({meta['total_ci']}).",
    ]
    return lines


def resampling_sentence(tables: Mapping[str, Mapping[str, Any]]) -> str:
    """How the CIs were made and what the numbers are for, from the first table's meta."""
    meta = next(iter(tables.values()))["meta"]
    plan = meta["resampling"]
    return (
        f"Shift: perturbed - unperturbed score on the pairs both arms answered; moved: |shift| >= 0.5. "
        f"CIs: {plan['method']}, {plan['n_resamples']:,} resamples, seed {plan['seed']} "
        f"({plan['n_clusters']} {plan['unit']}s).{floor_sentence(meta)} For {meta['purpose']}."
    )


def sensitivity_figure(tables: Mapping[str, Mapping[str, Any]], path: str | Path, *, title: str, files) -> Path:
    """Two heat maps, perturbation x dimension: the mean score shift and the ICC change (percentage points),
    staged in `files` (an `AtomicFiles`)."""
    import numpy as np

    from mis_bench_dataset.toolkit.figures import agg_figure

    names = list(tables)
    shift = np.full((len(names), len(DIMENSION_KEYS)), np.nan)
    change = np.full_like(shift, np.nan)
    for i, name in enumerate(names):
        for j, key in enumerate(DIMENSION_KEYS):
            entry = tables[name]["dimensions"].get(key)
            if entry:
                shift[i, j] = entry["mean_shift"]
                change[i, j] = np.nan if entry["icc_change"] is None else 100 * entry["icc_change"]
    fig = agg_figure(figsize=(11, 1.2 + 0.45 * len(names) * 2 + 1.2), layout="constrained")
    axes = fig.subplots(2, 1)
    labels = [DIMENSION_BY_KEY[k].abbreviation for k in DIMENSION_KEYS]
    for ax, values, what, fmt in (
        (axes[0], shift, "mean score shift (perturbed - unperturbed)", "{:+.2f}"),
        (axes[1], change, "ICC(3,1) change, percentage points", "{:+.1f}"),
    ):
        bound = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0
        image = ax.imshow(values, cmap="RdBu_r", vmin=-bound or -1, vmax=bound or 1, aspect="auto")
        ax.set_xticks(range(len(labels)), labels)
        ax.set_yticks(range(len(names)), names)
        ax.set_title(what, fontsize=10)
        for (i, j), value in np.ndenumerate(values):
            if np.isfinite(value):  # white on the darkest cells, where black would not read
                colour = "white" if abs(value) > 0.6 * (bound or 1) else "black"
                ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=8, color=colour)
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(title, fontsize=11)
    return files.save_figure(fig, Path(path), dpi=110)


def shift_tables_of(runs) -> list[tuple[Any, dict[str, Any]]]:
    """(run, its `mis-bench run --perturb` document) for every run whose shift tables sit in the `perturbations/`
    folder of the run's --out (found by the unperturbed run they name; none when the runs have no source)."""
    from mis_bench_dataset.toolkit.jsonio import read_json

    found = []
    for run in runs:
        if not run.source:
            continue
        folder = Path(run.source).resolve().parent
        for out in list(folder.parents)[:3]:
            for path in sorted((out / "perturbations").glob("*/shifts.json")):
                doc = read_json(path)
                if Path(str(doc.get("unperturbed_run", ""))).resolve() == folder:
                    found.append((run, doc))
    return found


def shift_table(tables: Mapping[str, Mapping[str, Any]]):
    """The mean-over-dimensions row of every perturbation, as a report `Table`."""
    from eval_scripts.report.table import Table

    header = ["Perturbation", "Mean shift [95% CI]", "Mean |shift|", "Moved >= 0.5", "ICC % before",
              "ICC change % [95% CI]"]  # fmt: skip
    rows = []
    for name, table in tables.items():
        mean = table["mean"]
        rows.append(
            [
                name,
                _mean_shift(mean),
                f"{mean['mean_abs_shift']:.3f}",
                f"{pct(mean['share_moved'])}%",
                pct(mean["icc_unperturbed"]),
                _icc_change(mean),
            ]
        )
    return Table(header, rows, set())


def variance_table(table: Mapping[str, Any]):
    """`variance_table_lines` as a report `Table`."""
    from eval_scripts.report.table import Table

    lines = variance_table_lines(table)
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[:1] + lines[2:-2]]
    return Table(cells[0], cells[1:], set())
