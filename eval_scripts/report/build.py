"""Write a report for one or more scored runs: Markdown + self-contained HTML + report.json + PNGs.

The report shows the paper's three views of the runs: Table 3 (each system's best configuration,
top three per column), Figure 2 (every configuration by dimension, a heatmap and its numbers) and
Table 4 / Figure 4 (systems on one split with bootstrap CIs, paired tests against a reference, a
radar against the human ceiling); then MSE, parse rates and predicted-vs-gold scatters.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.report.comparison import PAPER_BOOTSTRAP, Comparison, compare_systems
from eval_scripts.report.formatting import md_escape
from eval_scripts.report.options import SCATTER_CHOICES
from eval_scripts.report.plots import heatmap_chart, radar_chart, scatter_grid
from eval_scripts.report.stability import STABILITY_NOTE, stability, stability_tables
from eval_scripts.report.table import (
    RANK_NAMES,
    RANK_SUPERSCRIPTS,
    RunView,
    Table,
    comparison_table,
    figure2_table,
    mse_table,
    paired_table,
    rates_table,
    run_views,
    table3_table,
    to_html,
    to_markdown,
)
from eval_scripts.report.views import (
    RANK_RULE,
    SELECTION_RULE,
    BestConfiguration,
    best_configurations,
    by_system,
    rank_table,
)
from eval_scripts.submission import slug
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.errors import UsageError
from mis_bench_dataset.outputs import OutputFolder, as_output_folder, write_atomic
from mis_bench_dataset.text_safety import escape_html
from mis_icc_metric.scoring import json_safe

logger = logging.getLogger(__name__)

REPORT_FORMAT_VERSION = "1.0"
SYNTHETIC_NOTICE = (
    "SYNTHETIC DATA: these numbers come from the toolkit's generated sample, not from the MIS-Bench "
    "videos or expert ratings. They show the pipeline works; they say nothing about any model's skill."
)
OVERALL_NOTE = (
    "Overall: the eight predicted scores averaged per video against the averaged gold scores; a video "
    "with any unparseable dimension is excluded (paper Table 3 caption). Human ceiling: single-rater "
    "ICC(3,1) among the expert raters (paper Table 2)."
)
_RANK_COLOURS = {1: "#f4b6b6", 2: "#b9d3f3", 3: "#f8e59a"}  # the paper's red, blue, yellow
_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem auto;padding:0 1rem;max-width:80rem;color:#222}
.table-wrap{max-width:100%;overflow-x:auto;margin:1rem 0}
table{border-collapse:collapse;font-size:.82rem}
th,td{border:1px solid #ccc;padding:.25rem .4rem;text-align:right;white-space:nowrap;vertical-align:top}
th{background:#f0f0f5;white-space:normal;max-width:14rem}
th.label{text-align:left}
td.label{text-align:left;white-space:normal;min-width:9rem;max-width:18rem;overflow-wrap:anywhere}
td .detail{display:block;font-size:.72rem;color:#555}
td.best{font-weight:700}
td sup{font-size:.65rem;margin-left:.1rem}
tr.reference td{font-style:italic;background:#f3f3f3}
.notice{background:#fff3cd;border:1px solid #e0c060;padding:.8rem;font-weight:600}
.legend span{padding:0 .4rem;margin-right:.4rem}
.note{color:#444}
img{max-width:100%;height:auto}
""" + "".join(f"td.rank{rank}{{background:{colour}}}\n" for rank, colour in _RANK_COLOURS.items())


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    json: Path
    radar: Path
    heatmap: Path
    scatters: list[Path]

    @property
    def figures(self) -> list[Path]:
        return [self.heatmap, self.radar, *self.scatters]


@dataclass(frozen=True)
class _Section:
    """One part of the report, rendered the same way to Markdown and HTML."""

    heading: str
    paragraphs: list[str]  # plain text (escaped when rendered)
    tables: list[tuple[str, Table]]  # (caption, table)
    figures: list[tuple[str, Path]]  # (alt text, PNG)
    legend: bool = False


def _slug(text: str) -> str:
    """A lower-case file-name and anchor form of a label (the toolkit's one slug rule, lower-cased)."""
    return slug(text).lower()[:60]


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _table3_section(best: Sequence[BestConfiguration], ranks: list[dict], undefined: list[str]) -> _Section:
    paragraphs = [SELECTION_RULE, RANK_RULE]
    if undefined:
        paragraphs.append(
            "Not in this table (no configuration with a defined overall ICC): " + ", ".join(undefined) + "."
        )
    tables = [("ICC(3,1) % of each system's best configuration", table3_table(best, ranks))] if best else []
    if not best:
        paragraphs.append("No system has a configuration with a defined overall ICC.")
    return _Section("Table 3 view: each system's best configuration", paragraphs, tables, [], legend=bool(best))


def _figure2_section(runs: Sequence[RunView], heatmap: Path) -> _Section:
    return _Section(
        "Figure 2 view: every configuration by dimension",
        [
            "ICC(3,1) in percent of every configuration of every system (rows, grouped by system) on each dimension "
            "(columns); the colour scale diverges at 0. The table gives the same numbers with their 95% CIs, "
            "each dimension's mean over the configurations where it is defined, and the human ceiling."
        ],
        [("ICC(3,1) % [95% CI] of every configuration (best per column in bold)", figure2_table(runs))],
        [("heatmap of ICC by configuration and dimension", heatmap)],
    )


def _comparison_section(comparison: Comparison, radar: Path) -> _Section:
    paragraphs = []
    tables: list[tuple[str, Table]] = []
    if comparison.reference is not None:
        ref = comparison.reference
        paragraphs.append(
            f"Systems scored on split {ref.split!r} of dataset {ref.fingerprint!r}: the reference and every other "
            "system's best configuration (Table 3 view). Reference: " + ref.label + f" ({comparison.reference_rule})."
        )
        if comparison.rescored and comparison.n_bootstrap:
            paragraphs.append(
                f"95% percentile bootstrap CIs over videos from {comparison.n_bootstrap:,} resamples (seed "
                f"{comparison.seed}); paired tests: ICC(system) - ICC(reference) in percentage points on the items "
                "both systems parsed, with its CI and two-sided bootstrap p-value (mis_icc_metric.paired_comparison)."
            )
        tables.append(
            ("ICC(3,1) % [95% CI] per dimension (best per row in bold)", comparison_table(comparison.views()))
        )
        if comparison.paired:
            tables.append(
                (
                    "Paired bootstrap tests against the reference: difference in points [95% CI] p-value",
                    paired_table(comparison.paired),
                )
            )
    for run, reason in comparison.skipped:
        paragraphs.append(f"Not compared: {run.label}: {reason}.")
    paragraphs += [note[0].upper() + note[1:] + "." for note in comparison.notes]
    figures = [("radar chart of the compared systems against the human ceiling", radar)]
    return _Section("Comparison on one split (Table 4 / Figure 4 layout)", paragraphs, tables, figures)


def _markdown(title: str, synthetic: bool, sections: Sequence[_Section]) -> str:
    md = [f"# {md_escape(title)}", ""]
    if synthetic:
        md += [f"> **{SYNTHETIC_NOTICE}**", ""]
    for section in sections:
        md += [f"## {section.heading}", ""]
        md += [part for text in section.paragraphs for part in (md_escape(text), "")]
        if section.legend:
            md += [
                "Marks: "
                + ", ".join(
                    f"{'**' if rank == 1 else ''}x{mark}{'**' if rank == 1 else ''} {RANK_NAMES[rank]}"
                    for rank, mark in RANK_SUPERSCRIPTS.items()
                )
                + " per column.",
                "",
            ]
        for caption, table in section.tables:
            md += [f"**{caption}**", "", to_markdown(table), ""]
        md += [f"![{alt}]({path.name})\n" for alt, path in section.figures]
    return "\n".join(md)


def _html(title: str, synthetic: bool, sections: Sequence[_Section]) -> str:
    page = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{escape_html(title)}</title><style>{_CSS}</style></head><body><h1>{escape_html(title)}</h1>",
    ]
    if synthetic:
        page.append(f"<p class='notice' id='synthetic-notice'>{escape_html(SYNTHETIC_NOTICE)}</p>")
    for section in sections:
        page.append(f"<section id='{_slug(section.heading)}'><h2>{escape_html(section.heading)}</h2>")
        page += [f"<p class='note'>{escape_html(text)}</p>" for text in section.paragraphs]
        if section.legend:
            page.append(
                "<p class='legend'>"
                + "".join(
                    f"<span style='background:{_RANK_COLOURS[rank]}'>{RANK_NAMES[rank]}</span>" for rank in RANK_NAMES
                )
                + "per column</p>"
            )
        for caption, table in section.tables:
            page.append(f"<h3>{escape_html(caption)}</h3>{to_html(table)}")
        page += [f"<img alt='{escape_html(alt)}' src='{_data_uri(path)}'>" for alt, path in section.figures]
        page.append("</section>")
    page.append("</body></html>")
    return "\n".join(page)


def _run_json(run: RunView) -> dict[str, Any]:
    return {
        **run.identity(),
        "dataset": {"fingerprint": run.fingerprint, "split": run.split},
        "overall_icc": run.overall.get("icc"),
        "mean_icc": run.mean_icc,
        "dimensions": {key: run.dim(key).get("icc") for key in DIMENSION_KEYS},
        "outcomes": (run.outcomes or {}).get("overall"),
    }


def report_data(
    runs: Sequence[RunView],
    best: Sequence[BestConfiguration],
    ranks: Sequence[Mapping[str, int | None]],
    undefined: Sequence[str],
    comparison: Comparison,
    *,
    title: str,
) -> dict[str, Any]:
    """report.json: the three views as data (ICC as raw fractions, null when undefined)."""
    from mis_icc_metric.scoring import json_safe

    return json_safe(
        {
            "format_version": REPORT_FORMAT_VERSION,
            "title": title,
            "synthetic": any(run.synthetic for run in runs),
            "best_configuration": [entry.as_json() for entry in best],
            "table3": {
                "rule": SELECTION_RULE,
                "rank_rule": RANK_RULE,
                "rows": [
                    {
                        "label": entry.run.label,
                        "source": entry.run.source,
                        "few_shot_k": entry.run.few_shot_k,
                        "n_configurations": entry.n_configurations,
                        "mean_icc": entry.values()["mean"],
                        "ranks": dict(rank),
                    }
                    for entry, rank in zip(best, ranks, strict=True)
                ],
                "systems_without_overall_icc": list(undefined),
            },
            "configurations": [_run_json(run) for run in runs],
            "comparison": comparison.as_json(),
        }
    )


REPORT_WRITER = "report"


def write_report(
    results_list: Sequence[Mapping[str, Any]],
    out_dir: str | Path | OutputFolder,
    *,
    references: Mapping[tuple[str, str], float] | None = None,
    title: str = "MIS-Bench report",
    stem: str = "report",
    sources: Sequence[str] | None = None,
    reference: str | None = None,
    comparison_bootstrap: int = PAPER_BOOTSTRAP,
    seed: int = 0,
    scatters: str = "best",
) -> ReportFiles:
    """The report of scored results objects (see the module docstring).

    Everything lands in `out_dir` as `{stem}.md`, `{stem}.html` (PNG figures embedded as data URIs,
    so the page travels alone), `{stem}.json` and the PNG files themselves. `references` (gold
    scores) enable the scatters, the comparison's rescoring with `comparison_bootstrap` resamples
    and its paired tests; `reference` names the comparison's reference system or results file
    (`sources` are the files the results came from). `scatters`: predicted-vs-gold figures for each
    system's "best" configuration, "all" runs or "none" (they need `references`).
    """
    runs = by_system(run_views(results_list, sources))
    if not runs:
        raise UsageError("nothing to report: no results given")
    if scatters not in SCATTER_CHOICES:
        raise UsageError(f"--scatters must be one of {', '.join(SCATTER_CHOICES)}, got {scatters!r}")
    folder = as_output_folder(out_dir, "report")
    synthetic = any(run.synthetic for run in runs)
    suffix = " (SYNTHETIC data)" if synthetic else ""

    best, undefined = best_configurations(runs)
    ranks = rank_table(best)
    scattered = {"all": runs, "best": [entry.run for entry in best], "none": []}[scatters] if references else []
    scatter_names = [f"{stem}-scatter-{index + 1}-{_slug(run.label)}.png" for index, run in enumerate(scattered)]
    heatmap_path, radar_path, markdown_path, html_path, json_path, *scatter_paths = folder.claim_all(
        [f"{stem}-heatmap.png", f"{stem}-radar.png", f"{stem}.md", f"{stem}.html", f"{stem}.json", *scatter_names],
        REPORT_WRITER,
    )  # all checked before anything is written
    comparison = compare_systems(
        runs, best, references=references, reference=reference, n_bootstrap=comparison_bootstrap, seed=seed
    )
    heatmap = heatmap_chart(runs, heatmap_path, title="ICC(3,1) % by configuration" + suffix)
    radar = radar_chart(
        comparison.views() or [entry.run for entry in best] or runs, radar_path, title="Per-dimension ICC(3,1)" + suffix
    )
    scatter_files = [scatter_grid(run, references, path) for run, path in zip(scattered, scatter_paths, strict=True)]

    sections = [
        _table3_section(best, ranks, undefined),
        _figure2_section(runs, heatmap),
        _comparison_section(comparison, radar),
        _Section(
            "Errors and parse rates",
            [OVERALL_NOTE],
            [
                ("MSE (lower is better)", mse_table(runs)),
                (
                    "Parse rate per dimension, rows without a score by cause (unparsed, truncated at the "
                    "token limit, failed request) and overall exclusion rate",
                    rates_table(runs),
                ),
            ],
            [],
        ),
    ]
    stable = stability(runs)
    if stable["runs"] or stable["pairs"]:
        sections.append(_Section("Judge stability", [STABILITY_NOTE], stability_tables(stable), []))
    if scatter_files:
        what = "each system's best configuration" if scatters == "best" else "every configuration"
        sections.append(
            _Section(
                "Predicted vs gold",
                [f"Parsed predictions against the gold scores of {what}."],
                [],
                [(f"scatter {p.stem}", p) for p in scatter_files],
            )
        )

    write_atomic(markdown_path, _markdown(title, synthetic, sections))
    write_atomic(html_path, _html(title, synthetic, sections))
    data = {**report_data(runs, best, ranks, undefined, comparison, title=title), "stability": json_safe(stable)}
    write_atomic(json_path, json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    logger.info("wrote report %s, %s and %s", markdown_path, html_path, json_path)
    return ReportFiles(markdown_path, html_path, json_path, radar, heatmap, scatter_files)
