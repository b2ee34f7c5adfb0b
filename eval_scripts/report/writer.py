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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.report.about import About
from eval_scripts.report.agreement import (
    AGREEMENT_NOTE,
    HALO_NOTE,
    agreement_table,
    certification_rule,
    certification_table,
    halo_table,
    raters_table,
)
from eval_scripts.report.agreement_plots import PLOTS, write_agreement_plots
from eval_scripts.report.comparison import Comparison, compare_systems, withheld_notes
from eval_scripts.report.formatting import floor_sentence, md_escape
from eval_scripts.report.options import DEFAULT_TITLE, ReportOptions
from eval_scripts.report.plots import heatmap_chart, radar_chart, scatter_grid
from eval_scripts.report.sensitivity_view import (
    resampling_sentence,
    sensitivity_figure,
    shift_table,
    shift_tables_of,
    variance_table,
)
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
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.release.labels import Labels
from mis_bench_dataset.toolkit.atomic import AtomicFiles
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_bench_dataset.toolkit.ownership import OutputFolder, as_output_folder
from mis_bench_dataset.toolkit.text_safety import escape_html, slug
from mis_bench_dataset.wording import ABBREVIATION_LEGEND, HEADLINE_NUMBERS
from mis_icc_metric.reporting_floor import floor_description

logger = logging.getLogger(__name__)

REPORT_FORMAT_VERSION = "1.0"
SYNTHETIC_NOTICE = (
    "SYNTHETIC DATA: these numbers come from the toolkit's generated sample, not from the MIS-Bench "
    "videos or expert ratings. They show the pipeline works; they say nothing about any model's skill."
)
OVERALL_NOTE = (
    f"Mean ICC: {HEADLINE_NUMBERS['mean ICC']}. Overall: the eight predicted scores averaged per video against the "
    "averaged gold scores; a video with any unparseable dimension is excluded (paper Table 3 caption); "
    f"{HEADLINE_NUMBERS['Overall'].split(': ', 1)[1]}. Human ceiling: single-rater ICC(3,1) among the expert raters "
    "(paper Table 2)."
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
td.label+td.label{min-width:4rem}
td .detail{display:block;font-size:.72rem;color:#555}
td .range-end{display:block}
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
    agreement_plots: list[Path] = ()  # Bland-Altman, calibration, histograms of each plotted run

    @property
    def figures(self) -> list[Path]:
        return [self.heatmap, self.radar, *self.scatters, *self.agreement_plots]


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


def _data_uri(path: Path, read: Callable[[Path], bytes]) -> str:
    return "data:image/png;base64," + base64.b64encode(read(path)).decode("ascii")


def _coverage_notes(runs: Sequence[RunView]) -> list[str]:
    """One line per run that did not ask every gold pair (the coverage rule, `mis_icc_metric.coverage`)."""
    notes = []
    for run in runs:
        coverage = run.scores.get("coverage") or {}
        if coverage and coverage.get("n_asked_pairs") != coverage.get("n_gold_pairs"):
            notes.append(f"Coverage of {run.label}: {coverage['sentence']}.")
        note = run.overall.get("note")
        if note and note.startswith("no overall score"):
            notes.append(f"{run.label}: {note}.")
    return notes


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
            f"Systems scored on split {ref.split!r} of {ref.dataset_label()}: the reference and every other "
            "system's best configuration (Table 3 view). Reference: " + ref.label + f" ({comparison.reference_rule})."
        )
        if comparison.rescored and comparison.n_bootstrap:
            paragraphs.append(
                f"95% percentile bootstrap CIs resampling {comparison.resample}s (a clinician with all its videos"
                " together: the clustered CI; or videos as if independent, the paper's protocol) from "
                f"{comparison.n_bootstrap:,} resamples (seed {comparison.seed}); paired tests, the same draws for "
                "both: ICC(system) - ICC(reference) in percentage points on the items "
                "both systems parsed, with its CI and two-sided bootstrap p-value (mis_icc_metric.paired_comparison)."
                + floor_sentence({"reporting_floor": floor_description()})
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
        paragraphs += withheld_notes(comparison)
    for run, reason in comparison.skipped:
        paragraphs.append(f"Not compared: {run.label}: {reason}.")
    paragraphs += [note[0].upper() + note[1:] + "." for note in comparison.notes]
    figures = [("radar chart of the compared systems against the human ceiling", radar)]
    return _Section("Comparison on one split (Table 4 / Figure 4 layout)", paragraphs, tables, figures)


_PLOT_ALT = {
    "bland-altman": "Bland-Altman plots per dimension of {label}: model minus gold against their mean, with the "
    "mean bias (solid line) and the 95% limits of agreement (dashed)",
    "calibration": "calibration plots per dimension of {label}: mean model score per half-point gold bin (+- 1 sd) "
    "against the diagonal of a calibrated model",
    "histograms": "score histograms per dimension of {label}: gold and model scores overlaid, 0.1-point bins",
}


def _agreement_section(
    best: Sequence[BestConfiguration], plots: Sequence[tuple[RunView, Mapping[str, Path]]], suffix: str
) -> _Section:
    """Every statistic beyond ICC(3,1) for each system's best configuration, and the agreement figures."""
    tables = [
        ("Agreement with the gold scores of each system's best configuration", agreement_table([e.run for e in best])),
        ("Halo: mean correlation between dimensions over videos [95% CI]", halo_table([e.run for e in best])),
    ]
    figures = [
        (_PLOT_ALT[kind].format(label=run.label) + suffix, path) for run, paths in plots for kind, path in paths.items()
    ]
    paragraphs = [AGREEMENT_NOTE, HALO_NOTE]
    if not plots:
        paragraphs.append("The agreement figures need the labels (--references).")
    return _Section("Agreement beyond ICC(3,1)", paragraphs, tables, figures)


def _raters_section(rated: Sequence[tuple[RunView, Mapping[str, Any]]], source: str) -> _Section:
    """The model as one more rater, per system's best configuration: tables and the certification rule."""
    paragraphs = [
        f"Per-rater labels: {source}. On the scored videos every rater rated on all eight dimensions (the paper's "
        "fully rated videos) where the model's prediction parsed: the model's ICC(3,1) with each rater next to the "
        "raters' with each other and all together (the human ceiling of Table 2, computed the same way; the last "
        "column is exactly that computation on every fully rated scored video), and leave one rater out: the raters' "
        "ICC with that rater replaced by the model (in brackets, the change in points; negative: agreement drops)."
    ]
    tables = []
    for run, result in rated:
        if result.get("note"):
            paragraphs.append(f"{run.label}: {result['note']}.")
    with_raters = [(run, result) for run, result in rated if result["raters"]]
    if with_raters:
        caption = "The model as one more rater: ICC(3,1) % [95% F-test CI] of each system's best configuration"
        tables.append((caption, raters_table(with_raters)))
    if rated:
        paragraphs.append(certification_rule(rated[0][1]))
        tables.append(
            ("Appendix B certification rule, run on each system's best configuration", certification_table(rated))
        )
    return _Section("The model as one more rater", paragraphs, tables, [])


def _markdown(title: str, synthetic: bool, sections: Sequence[_Section], about: About) -> str:
    md = [f"# {md_escape(title)}", ""]
    if about.warning:
        md += [f"> **{md_escape(about.warning)}**", ""]
    if synthetic:
        md += [f"> **{SYNTHETIC_NOTICE}**", ""]
    md += [part for text in about.paragraphs for part in (md_escape(text), "")]
    md += [ABBREVIATION_LEGEND, ""]  # our own text: no user input in it
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
        md += [f"![{md_escape(alt)}]({path.name})\n" for alt, path in section.figures]
    return "\n".join(md)


def _html(
    title: str, synthetic: bool, sections: Sequence[_Section], read: Callable[[Path], bytes], about: About
) -> str:
    page = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{escape_html(title)}</title><style>{_CSS}</style></head><body><h1>{escape_html(title)}</h1>",
    ]
    if about.warning:
        page.append(f"<p class='notice' id='split-warning'>{escape_html(about.warning)}</p>")
    if synthetic:
        page.append(f"<p class='notice' id='synthetic-notice'>{escape_html(SYNTHETIC_NOTICE)}</p>")
    page += [f"<p class='note about'>{escape_html(text)}</p>" for text in about.paragraphs]
    page.append(f"<p class='legend' id='legend'>{escape_html(ABBREVIATION_LEGEND)}</p>")
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
        page += [f"<img alt='{escape_html(alt)}' src='{_data_uri(path, read)}'>" for alt, path in section.figures]
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
    rated: Sequence[tuple[RunView, Mapping[str, Any]]] = (),
) -> dict[str, Any]:
    """report.json: the three views as data (ICC as raw fractions, null when undefined)."""
    from mis_bench_dataset.toolkit.jsonio import json_safe

    return json_safe(
        {
            "format_version": REPORT_FORMAT_VERSION,
            "title": title,
            "reporting_floor": floor_description(),
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
            "agreement": [
                {
                    **entry.run.identity(),
                    "dimensions": {key: entry.run.dim(key).get("agreement") for key in DIMENSION_KEYS},
                    "overall": entry.run.overall.get("agreement"),
                    "halo": {k: v for k, v in (entry.run.scores.get("halo") or {}).items() if k != "definition"},
                }
                for entry in best
            ],
            "model_as_rater": [{**run.identity(), **result} for run, result in rated],
        }
    )


REPORT_WRITER = "report"


def write_report(
    results_list: Sequence[Mapping[str, Any]],
    out_dir: str | Path | OutputFolder,
    options: ReportOptions | None = None,
    *,
    references: Mapping[tuple[str, str], float] | None = None,
    sources: Sequence[str] | None = None,
    raters: Labels | None = None,
    cross_validation: Mapping[str, Any] | None = None,
) -> ReportFiles:
    """The report of scored results objects (the paper's views: Table 3, Figure 2, Table 4 / Figure 4 side by
    side with a reference, agreement tables and figures), drawn as `options` say
    (`report.options.ReportOptions`: title, file stem, the comparison's reference and resampling, scatters,
    subgroups, what the runs were run on; default: `ReportOptions()`).

    Everything lands in `out_dir` as `{stem}.md`, `{stem}.html` (PNG figures embedded as data URIs,
    so the page travels alone), `{stem}.json` and the PNG files themselves. `references` (gold
    scores) enable the scatters, the comparison's rescoring with `options.comparison_bootstrap` resamples
    and its paired tests, the agreement figures (Bland-Altman, calibration, histograms) of the scattered runs
    and the subgroups of `options.by`; `sources` are the files the results came from. `raters` (per-rater
    `Labels`, needs `references`) adds the model-as-one-more-rater section for each system's best configuration.
    `cross_validation` ({"doc": `baselines.crossval.cross_validate`'s, "test_split": {run name: mean ICC}}) adds
    its section beside the test-split numbers.
    """
    options = options or ReportOptions()
    stem, scatters, draw = options.stem, options.scatters, options.draw
    runs = by_system(run_views(results_list, sources))
    _check_request(runs, raters, references, options.by)
    about = options.about or _about_of(runs)
    title = f"{options.title}: {about.name}" if options.title == DEFAULT_TITLE else options.title
    folder = as_output_folder(out_dir, "report")
    synthetic = any(run.synthetic for run in runs)
    suffix = " (SYNTHETIC data)" if synthetic else ""

    best, undefined = best_configurations(runs)
    ranks = rank_table(best)
    scattered = {"all": runs, "best": [entry.run for entry in best], "none": []}[scatters] if references else []
    fixed, scatter_paths, plot_paths = _claim(folder, stem, scattered)  # all checked before anything is written
    heatmap_path, radar_path, markdown_path, html_path, json_path = fixed
    comparison = compare_systems(runs, best, references=references, reference=options.reference, **draw)
    rated = _rate(best, references, raters) if raters is not None else []
    stable = stability(runs)  # the judge's agreement with itself (the runs' readouts.json)
    perturbed, sensitivity_paths = _perturbed(runs, folder, stem)
    grouped = _subgroups(best, references, options.by, draw)
    with AtomicFiles() as files:  # the report's files appear together, each whole, or none changes
        heatmap = heatmap_chart(runs, heatmap_path, title="ICC(3,1) % by configuration" + suffix, files=files)
        radar_runs = comparison.views() or [entry.run for entry in best] or runs
        radar = radar_chart(radar_runs, radar_path, title="Per-dimension ICC(3,1) %" + suffix, files=files)
        scatter_files = [
            scatter_grid(run, references, path, files=files, suffix=suffix)
            for run, path in zip(scattered, scatter_paths, strict=True)
        ]
        plots = _agreement_plots(scattered, references, plot_paths, suffix, files)
        sections = [
            _table3_section(best, ranks, undefined),
            _figure2_section(runs, heatmap),
            _comparison_section(comparison, radar),
            *_closing_sections(runs, best, plots, suffix, rated=rated, raters=raters, stable=stable),
            *_scatter_sections(scatter_files, scatters),
        ]
        sections += [_subgroups_section(grouped)] if grouped else []
        if cross_validation:
            sections.insert(3, _crossval_section(cross_validation))
        sections += _sensitivity_sections(perturbed, sensitivity_paths, files)
        files.write(markdown_path, _markdown(title, synthetic, sections, about))
        files.write(html_path, _html(title, synthetic, sections, files.read, about))
        data = report_data(runs, best, ranks, undefined, comparison, title=title, rated=rated)
        data.update(_data_extras(stable, perturbed, about, cross_validation, grouped))
        files.write(json_path, json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    logger.info("wrote report %s, %s and %s", markdown_path, html_path, json_path)
    agreement_files = [path for _, paths in plots for path in paths.values()]
    _remove_stale_figures(folder, stem, [*scatter_paths, *plot_paths, *sensitivity_paths])
    return ReportFiles(markdown_path, html_path, json_path, radar, heatmap, scatter_files, agreement_files)


def _about_of(runs: Sequence[RunView]) -> About:
    """The runs' datasets by name and fingerprint, when the caller gave no `About`."""
    labels = sorted({f"{run.dataset_label()}, split {run.split!r}" for run in runs})
    names = sorted({run.dataset_name or run.dataset_label() for run in runs})
    return About(", ".join(names), ["Data: " + "; ".join(labels) + "."])


def _crossval_section(cross_validation: Mapping[str, Any]) -> _Section:
    from eval_scripts.report.crossval_view import crossval_paragraph, crossval_table

    doc = cross_validation["doc"]
    return _Section(
        "Cross-validation over every video",
        [crossval_paragraph(doc)],
        [("Mean ICC(3,1) % per fold seed and over seeds", crossval_table(doc, cross_validation["test_split"]))],
        [],
    )


def _subgroups(best, references, by: Sequence[str], draw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`report.subgroups.subgroup_results` of each system's best configuration (none without `by`); `draw`:
    the comparison's resamples, seed and resampling unit."""
    if not by:
        return []
    from eval_scripts.report.subgroups import subgroup_results

    return subgroup_results([entry.run for entry in best], references, by, **draw)


def _subgroups_section(grouped: Sequence[Mapping[str, Any]]) -> _Section:
    from eval_scripts.report.subgroups import report_parts

    paragraphs, tables = report_parts(grouped)
    return _Section("Agreement by subgroup and at the therapist level", paragraphs, tables, [])


def _check_request(runs, raters, references, by: Sequence[str] = ()) -> None:
    if not runs:
        raise UsageError("nothing to report: no results given")
    if raters is not None and references is None:
        raise UsageError("the model-as-rater section needs the gold scores too", hint="pass --references as well")
    if by and references is None:
        raise UsageError("agreement by subgroup needs the gold scores", hint="pass --references as well")


def _closing_sections(runs, best, plots, suffix, *, rated, raters, stable) -> list:
    """The sections after the comparison, before the scatters: errors, agreement, model as a rater, stability."""
    return [
        _errors_section(runs),
        _agreement_section(best, plots, suffix),
        *([_raters_section(rated, str(raters.path))] if raters is not None else []),
        *_stability_sections(stable),
    ]


def _claim(folder: OutputFolder, stem: str, scattered: Sequence[RunView]) -> tuple[list[Path], list[Path], list[Path]]:
    """Every file the report writes, claimed at once: the five fixed ones (heatmap, radar, md, html, json),
    the scatters and the agreement figures (PLOTS order per run)."""
    scatter_names = [f"{stem}-scatter-{i + 1}-{_slug(run.label)}.png" for i, run in enumerate(scattered)]
    plot_names = [f"{stem}-{kind}-{i + 1}-{_slug(run.label)}.png" for i, run in enumerate(scattered) for kind in PLOTS]
    fixed = [f"{stem}-heatmap.png", f"{stem}-radar.png", f"{stem}.md", f"{stem}.html", f"{stem}.json"]
    paths = folder.claim_all([*fixed, *scatter_names, *plot_names], REPORT_WRITER)
    return paths[:5], paths[5 : 5 + len(scatter_names)], paths[5 + len(scatter_names) :]


def _remove_stale_figures(folder: OutputFolder, stem: str, written: Sequence[Path]) -> None:
    """A rerun with fewer runs (or no perturbations) leaves none of the earlier report's per-run figures beside the
    new report: those this writer made under the same stem and did not make now are removed."""
    import glob

    base = glob.escape(stem)
    kinds = ["scatter", "sensitivity", *PLOTS]
    removed = folder.remove_stale(REPORT_WRITER, [f"{base}-{kind}-*.png" for kind in kinds], written)
    if removed:
        logger.info("removed %d figure(s) of an earlier report that this one does not have", len(removed))


def _errors_section(runs: Sequence[RunView]) -> _Section:
    return _Section(
        "Errors and parse rates",
        [OVERALL_NOTE, *_coverage_notes(runs)],
        [
            ("MSE (lower is better)", mse_table(runs)),
            (
                "Parse rate per dimension, rows without a score by cause (unparsed, truncated at the "
                "token limit, failed request) and overall exclusion rate",
                rates_table(runs),
            ),
        ],
        [],
    )


def _data_extras(stable, perturbed, about: About, cross_validation, grouped) -> dict[str, Any]:
    """The report JSON's parts beyond the views: stability, perturbations, about, cross-validation, subgroups."""
    return {
        "stability": json_safe(stable),
        "perturbations": [{"run": run.label, **doc} for run, doc in perturbed],
        "about": {"name": about.name, "paragraphs": about.paragraphs, "warning": about.warning},
        "cross_validation": json_safe(cross_validation["doc"]) if cross_validation else None,
        "subgroups": grouped,
    }


def _perturbed(runs, folder: OutputFolder, stem: str) -> tuple[list, list[Path]]:
    """The runs' `mis-bench run --perturb` shift tables, when they exist, and their figures' paths, claimed."""
    perturbed = shift_tables_of(runs)
    names = [f"{stem}-sensitivity-{i + 1}-{_slug(run.label)}.png" for i, (run, _) in enumerate(perturbed)]
    return perturbed, folder.claim_all(names, REPORT_WRITER)


def _sensitivity_sections(perturbed, paths: Sequence[Path], files: AtomicFiles) -> list[_Section]:
    """A run under perturbations (its shift tables, the sensitivity figure) and every source of variance."""
    sections = []
    for (run, doc), path in zip(perturbed, paths, strict=True):
        tables = doc["perturbations"]
        figure = sensitivity_figure(tables, path, title=f"{run.label} under perturbations", files=files)
        parts = [("Mean over the dimensions, per perturbation", shift_table(tables))]
        if doc.get("variance"):
            parts.append(("Every source of variance of the ICC (percentage points)", variance_table(doc["variance"])))
        sections.append(
            _Section(
                f"Under perturbations: {run.label}",
                [resampling_sentence(tables)],
                parts,
                [("sensitivity: mean shift and ICC change, perturbation x dimension", figure)],
            )
        )
    return sections


def _stability_sections(stable: Mapping[str, Any]) -> list[_Section]:
    """The judge-stability section, when a run has readouts or two runs are of one model and setting."""
    if not (stable["runs"] or stable["pairs"]):
        return []
    return [_Section("Judge stability", [STABILITY_NOTE], stability_tables(stable), [])]


def _scatter_sections(scatter_files: Sequence[Path], scatters: str) -> list[_Section]:
    if not scatter_files:
        return []
    what = "each system's best configuration" if scatters == "best" else "every configuration"
    return [
        _Section(
            "Predicted vs gold",
            [f"Parsed predictions against the gold scores of {what}."],
            [],
            [(f"scatter {p.stem}", p) for p in scatter_files],
        )
    ]


def _agreement_plots(
    runs: Sequence[RunView],
    references: Mapping[tuple[str, str], float],
    paths: Sequence[Path],
    suffix: str,
    files: AtomicFiles,
) -> list[tuple[RunView, dict[str, Path]]]:
    """Each run's Bland-Altman, calibration and histogram figures, into its claimed paths (PLOTS order),
    staged in the report's `files`."""
    kinds = list(PLOTS)
    per_run = [dict(zip(kinds, paths[i * len(kinds) : (i + 1) * len(kinds)], strict=True)) for i in range(len(runs))]
    return [
        (run, write_agreement_plots(run, references, mine, suffix=suffix, files=files))
        for run, mine in zip(runs, per_run, strict=True)
    ]


def _rate(
    best: Sequence[BestConfiguration], references: Mapping[tuple[str, str], float], raters: Labels
) -> list[tuple[RunView, dict[str, Any]]]:
    """`mis_icc_metric.raters.model_as_rater` of each system's best configuration (strict-JSON safe)."""
    from eval_scripts.report.inputs import predictions_on
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.raters import model_as_rater

    rated = []
    for entry in best:
        try:
            result = model_as_rater(predictions_on(entry.run.predictions, references), references, raters)
        except ValueError as err:
            raise DataError(
                f"cannot compare with the raters: {err}", where=entry.run.source or entry.run.label
            ) from None
        rated.append((entry.run, json_safe(result)))
    return rated
