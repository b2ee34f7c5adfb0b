"""Figures: per-dimension ICC radar with the human ceiling (paper Figure 4), the configuration x
dimension ICC heatmap (paper Figure 2), and predicted-vs-gold scatters per dimension. Matplotlib
with the Agg backend (no display); user text is drawn literally (no mathtext, control and bidi characters as
visible escapes). ICC is shown in percent, as in every table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from eval_scripts.report.table import RunView
from eval_scripts.report.views import configuration_matrix
from mis_bench_dataset.dimensions import DIMENSIONS, HUMAN_CEILING, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.toolkit.atomic import AtomicFiles, save_figure
from mis_bench_dataset.toolkit.figures import panel_grid, release
from mis_bench_dataset.toolkit.text_safety import visible_controls

# Scores sit on the axis limits (gold 5.0 is common): a margin so their markers are drawn whole.
_SCORE_MARGIN = 0.15
# The per-dimension 2 x 4 grids (scatters, agreement figures) have a fixed size and fixed fonts, so their layout
# is fixed too: the margins tight_layout found on the default job's figures, widened to fit 4-digit y tick labels
# (tests/test_report_figure_layout.py checks every text stays inside the canvas and clear of the others).
# tight_layout measured every text once more per figure and left a layout engine that makes savefig draw twice.
GRID_SIZE = (12.0, 6.2)
GRID_LAYOUT = {"left": 0.07, "right": 0.985, "bottom": 0.095, "top": 0.895, "wspace": 0.1, "hspace": 0.2}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def dimension_grid(title: str):
    """A figure of 2 x 4 panels sharing both axes, one per dimension, with its suptitle (`title`, drawn as given:
    pass it through `_literal` first where it holds user text); returns (figure, axes). The grid is one `_save`
    handed back before, emptied, when there is one (`figures.panel_grid`): making its axes was 40% of a grid."""
    fig, axes = panel_grid(2, 4, figsize=GRID_SIZE, sharex=True, sharey=True, gridspec_kw=GRID_LAYOUT)
    fig.suptitle(title, fontsize=10)
    return fig, axes


def panel_title(ax, text: str, fontsize: float) -> None:
    """A grid panel's title, at the top of its axes: placed there (the grids have no tick labels on top) rather than
    searched for at every draw, which measured the panel's ticks once more."""
    ax.set_title(text, fontsize=fontsize, y=1.0)


def _literal(text: str) -> str:
    """Text matplotlib draws as given: controls and bidi marks as visible escapes, `$` not starting mathtext."""
    return visible_controls(text, inline=True).replace("$", r"\$")


def radar_chart(
    runs: Sequence[RunView],
    path: str | Path,
    *,
    title: str = "Per-dimension ICC(3,1) %",
    files: AtomicFiles | None = None,
) -> Path:
    """One polygon per run plus the dashed human single-rater ceiling (Table 2), saved as PNG (staged in `files`)."""
    return _save(radar_figure(runs, title=title), path, dpi=110, tight=True, files=files)


def radar_figure(runs: Sequence[RunView], *, title: str = "Per-dimension ICC(3,1) %"):
    """ICC in percent on the radius; the dimension labels sit outside the outermost ring."""
    plt = _pyplot()
    angles = np.linspace(0, 2 * np.pi, len(DIMENSIONS), endpoint=False)
    closed = np.append(angles, angles[0])
    fig = plt.figure(figsize=(6.4, 6.4))
    ax = fig.add_subplot(projection="polar")
    ceiling = [100.0 * HUMAN_CEILING[d.key].icc for d in DIMENSIONS]
    ax.plot(closed, ceiling + ceiling[:1], "k--", linewidth=1.5, label="Human ceiling (Table 2)")
    values_seen = list(ceiling)
    for run in runs:
        values = [run.dim(d.key).get("icc") for d in DIMENSIONS]
        values = [np.nan if v is None else 100.0 * float(v) for v in values]
        values_seen += [v for v in values if np.isfinite(v)]
        if run.floor:  # ICC 0 everywhere: a dotted ring, visible because the radius starts below 0
            ax.plot(closed, values + values[:1], ":", color="0.35", linewidth=2, label=_literal(run.label) + " (floor)")
            continue
        ax.plot(closed, values + values[:1], linewidth=1.5, label=_literal(run.label))
        ax.fill(closed, np.nan_to_num(values + values[:1]), alpha=0.08)
    low = min(0.0, np.floor(min(values_seen) / 10) * 10)
    if any(run.floor for run in runs):
        low = min(low, -10.0)  # at radius 0 the floor's polygon would collapse into the centre
    ax.set_ylim(low, max(70.0, np.ceil(max(values_seen) / 10) * 10))
    ax.set_xticks(angles, [d.abbreviation for d in DIMENSIONS])
    ax.tick_params(axis="x", pad=12)  # clear of the ceiling line and the outer ring
    ax.set_rlabel_position(180 / len(DIMENSIONS))  # ring labels between two dimension axes
    ax.tick_params(axis="y", labelsize=7)
    ax.yaxis.set_major_formatter("{x:.0f}%")
    for label in ax.get_yticklabels():  # readable where a polygon or the ceiling line crosses them
        label.set_bbox({"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.6})
    ax.set_title(title, pad=18)
    # Below the dimension labels, never over the plot; saved with a tight box around title, labels and legend.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=8, ncol=1, frameon=False)
    return fig


def scatter_grid(
    run: RunView,
    references: Mapping[tuple[str, str], float | None],
    path: str | Path,
    *,
    files: AtomicFiles | None = None,
    suffix: str = "",
) -> Path:
    """Predicted vs gold per dimension (parsed predictions only), with the identity line and ICC; the title is
    the run's label and `suffix` (the report's " (SYNTHETIC data)")."""
    return _save(scatter_figure(run, references, suffix=suffix), path, dpi=90, files=files)


def scatter_figure(run: RunView, references: Mapping[tuple[str, str], float | None], *, suffix: str = ""):
    fig, axes = dimension_grid(_literal(run.label) + suffix)
    for ax, dim in zip(axes.ravel(), DIMENSIONS, strict=True):
        pairs = [
            (gold, run.predictions.get((video, key)))
            for (video, key), gold in references.items()
            if key == dim.key and gold is not None and run.predictions.get((video, key)) is not None
        ]
        if pairs:
            gold, pred = np.asarray(pairs, dtype=float).T
            ax.scatter(gold, pred, s=10, alpha=0.6)
        ax.plot([SCORE_MIN, SCORE_MAX], [SCORE_MIN, SCORE_MAX], color="grey", linewidth=0.8)
        icc = run.dim(dim.key).get("icc")
        panel_title(ax, f"{dim.abbreviation}  ICC {'–' if icc is None else f'{100 * icc:.1f}'}  n={len(pairs)}", 9)
        ax.set_xlim(SCORE_MIN - _SCORE_MARGIN, SCORE_MAX + _SCORE_MARGIN)
        ax.set_ylim(SCORE_MIN - _SCORE_MARGIN, SCORE_MAX + _SCORE_MARGIN)
    for ax in axes[1]:
        ax.set_xlabel("gold")
    for ax in axes[:, 0]:
        ax.set_ylabel("predicted")
    return fig


def heatmap_chart(
    runs: Sequence[RunView],
    path: str | Path,
    *,
    title: str = "ICC(3,1) % by configuration",
    files: AtomicFiles | None = None,
) -> Path:
    """Every run (rows) by dimension (columns), saved as PNG."""
    return _save(heatmap_figure(runs, title=title), path, dpi=110, files=files)


def heatmap_figure(runs: Sequence[RunView], *, title: str = "ICC(3,1) % by configuration"):
    """ICC in percent, annotated, on a diverging colormap centred at 0 (grey and "–" where undefined)."""
    from matplotlib.colors import CenteredNorm

    plt = _pyplot()
    values = 100.0 * configuration_matrix(runs)
    finite = values[np.isfinite(values)]
    half_range = max(10.0, float(np.abs(finite).max())) if finite.size else 10.0
    cmap = plt.get_cmap("RdBu").with_extremes(bad="#dddddd")
    fig, ax = plt.subplots(figsize=(9.0, 1.6 + 0.36 * len(runs)))
    image = ax.imshow(
        np.ma.masked_invalid(values), cmap=cmap, norm=CenteredNorm(vcenter=0.0, halfrange=half_range), aspect="auto"
    )
    for (row, column), value in np.ndenumerate(values):
        text = "–" if not np.isfinite(value) else f"{value:.1f}"
        dark = np.isfinite(value) and abs(value) > 0.6 * half_range
        ax.text(column, row, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(DIMENSIONS)), [d.abbreviation for d in DIMENSIONS])
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(runs)), [_literal(run.label) for run in runs], fontsize=8)
    fig.colorbar(image, ax=ax, label="ICC(3,1) %", fraction=0.04, pad=0.02)
    ax.set_title(title, pad=22, fontsize=10)
    fig.tight_layout()  # measured: the run labels on the left are the user's and as long as they are
    fig.set_layout_engine(None)  # laid out once; the placeholder tight_layout leaves would make savefig draw twice
    return fig


def figure_title(fig) -> str:
    """The figure's visible title: its suptitle, else its first axes' title."""
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        return suptitle.get_text()
    return next((ax.get_title() for ax in fig.axes if ax.get_title()), "")


def _save(fig, path: str | Path, *, dpi: int, tight: bool = False, files: AtomicFiles | None = None) -> Path:
    """Save atomically (staged in `files` when given: it appears with the rest of the report); the figure's
    title is also the PNG's Title text (a reader or a check sees SYNTHETIC without looking at the pixels)."""
    path = Path(path)
    options = {"dpi": dpi, **({"bbox_inches": "tight", "pad_inches": 0.2} if tight else {})}
    title = figure_title(fig)
    if title:
        options["metadata"] = {"Title": title}
    saved = False
    try:
        if files is not None:
            files.save_figure(fig, path, **options)
        else:
            save_figure(fig, path, **options)
        saved = True
    finally:
        if saved:  # a grid is emptied for the next one (one whose save failed is not reused)
            release(fig)
        _pyplot().close(fig)
    return path
