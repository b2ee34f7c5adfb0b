"""Write a report for one or more scored runs: Markdown + self-contained HTML + PNGs."""

from __future__ import annotations

import base64
import html
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.report.plots import radar_chart, scatter_grid
from eval_scripts.report.table import icc_table, mse_table, rates_table, run_views, to_html, to_markdown
from mis_bench_dataset.errors import UsageError
from mis_bench_dataset.outputs import OutputFolder, as_output_folder, write_atomic

logger = logging.getLogger(__name__)

SYNTHETIC_NOTICE = (
    "SYNTHETIC DATA: these numbers come from the toolkit's generated sample, not from the MIS-Bench "
    "videos or expert ratings. They show the pipeline works; they say nothing about any model's skill."
)
_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.3rem .5rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
td.best{background:#fde2e2;font-weight:600}
tr.reference td{font-style:italic;background:#f3f3f3}
.notice{background:#fff3cd;border:1px solid #e0c060;padding:.8rem;font-weight:600}
img{max-width:100%}
"""


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    radar: Path
    scatters: list[Path]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60] or "run"


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


REPORT_WRITER = "report"


def write_report(
    results_list: Sequence[Mapping[str, Any]],
    out_dir: str | Path | OutputFolder,
    *,
    references: Mapping[tuple[str, str], float | None] | None = None,
    title: str = "MIS-Bench report",
    stem: str = "report",
) -> ReportFiles:
    """Tables, radar and (with `references`) scatters for scored results objects.

    Everything lands in `out_dir` as `{stem}.md`, `{stem}.html` (PNG figures embedded
    as data URIs, so the page travels alone) and the PNG files themselves.
    """
    runs = run_views(results_list)
    if not runs:
        raise UsageError("nothing to report: no results given")
    folder = as_output_folder(out_dir, "report")
    scatter_names = [f"{stem}-scatter-{index + 1}-{_slug(run.label)}.png" for index, run in enumerate(runs)] if references else []
    radar_path, markdown_path, html_path, *scatter_paths = folder.claim_all(
        [f"{stem}-radar.png", f"{stem}.md", f"{stem}.html", *scatter_names], REPORT_WRITER)
    synthetic = any(run.synthetic for run in runs)
    radar = radar_chart(runs, radar_path,
                        title="Per-dimension ICC(3,1)" + (" (SYNTHETIC data)" if synthetic else ""))
    scatters = [scatter_grid(run, references, path) for run, path in zip(runs, scatter_paths)]
    tables = {
        "ICC(3,1) % [95% CI] (best per column marked)": icc_table(runs),
        "MSE (lower is better)": mse_table(runs),
        "Parse rate per dimension and overall exclusion rate": rates_table(runs),
    }

    md = [f"# {title}", ""]
    if synthetic:
        md += [f"> **{SYNTHETIC_NOTICE}**", ""]
    for heading, table in tables.items():
        md += [f"## {heading}", "", to_markdown(table), ""]
    md += [
        "Overall: the eight predicted scores averaged per video against the averaged gold scores; a video "
        "with any unparseable dimension is excluded (paper Table 3 caption). Human ceiling: single-rater "
        "ICC(3,1) among the expert raters (paper Table 2).",
        "",
        "## Figures",
        "",
        f"![radar]({radar.name})",
        "",
    ]
    md += [f"![scatter]({path.name})\n" for path in scatters]
    write_atomic(markdown_path, "\n".join(md))

    page = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
            f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    if synthetic:
        page.append(f"<p class='notice' id='synthetic-notice'>{html.escape(SYNTHETIC_NOTICE)}</p>")
    for heading, table in tables.items():
        page.append(f"<h2>{html.escape(heading)}</h2>{to_html(table)}")
    page.append("<h2>Per-dimension ICC against the human ceiling</h2>")
    page.append(f"<img alt='radar chart of per-dimension ICC' src='{_data_uri(radar)}'>")
    if scatters:
        page.append("<h2>Predicted vs gold</h2>")
        page += [f"<img alt='scatter {html.escape(p.stem)}' src='{_data_uri(p)}'>" for p in scatters]
    page.append("</body></html>")
    write_atomic(html_path, "\n".join(page))
    logger.info("wrote report %s and %s", markdown_path, html_path)
    return ReportFiles(markdown_path, html_path, radar, scatters)
