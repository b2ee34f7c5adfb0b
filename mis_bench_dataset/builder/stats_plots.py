"""The figures of `mis-bench stats`: the correlation heatmap (paper Figure 5) and the gold
histograms (Figure 6), drawn from a `stats.json` document with matplotlib's Agg backend."""

from __future__ import annotations

from pathlib import Path

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.toolkit.atomic import AtomicFiles, save_figure
from mis_bench_dataset.toolkit.figures import agg_figure, panel_grid, release
from mis_bench_dataset.wording import SYNTHETIC_MARK

# PNGs without a timestamp or version: the same statistics give the same bytes.
_PNG_METADATA = {"Software": None}
# The heatmap's texts are fixed (the eight abbreviations, -1.00 to 1.00, a one-line title narrower than the figure),
# so its layout is too: the margins tight_layout finds for it, to the last digit (the same PNG as tight_layout's,
# whatever the title says). tight_layout measured every text once more: a fifth of the heatmap's time.
# tests/test_dataset_stats.py checks every text stays inside the canvas and clear of the others.
_HEATMAP_LAYOUT = {
    "left": 0.10112847222222224,
    "right": 0.9475677083333333,
    "bottom": 0.09875448330771107,
    "top": 0.9540123456790123,
}


def _title(stats: dict, title: str) -> str:
    """A figure's title, marked when the statistics are of synthetic data (`stats["synthetic"]`)."""
    return f"{SYNTHETIC_MARK} data: {title}" if stats.get("synthetic") else title


def _save(fig, path: Path, files: AtomicFiles | None = None, title: str | None = None) -> Path:
    """Save atomically (staged in `files` when given); the title also in the PNG's text metadata. A grid is then
    handed back for the next one (`figures.release`)."""
    metadata = {**_PNG_METADATA, **({"Title": title} if title else {})}
    if files is not None:
        files.save_figure(fig, path, format="png", dpi=100, metadata=metadata)
    else:
        save_figure(fig, path, format="png", dpi=100, metadata=metadata)
    release(fig)
    return path


def heatmap_figure(stats: dict):
    """(figure, title) of Pearson r between the eight dimensions, annotated; blank where undefined."""
    import numpy as np

    labels = [DIMENSION_BY_KEY[k].abbreviation for k in DIMENSION_KEYS]
    matrix = np.array(
        [
            [np.nan if stats["correlation"][a][b] is None else stats["correlation"][a][b] for b in DIMENSION_KEYS]
            for a in DIMENSION_KEYS
        ]
    )
    fig = agg_figure(figsize=(6.4, 5.4))
    ax = fig.subplots()
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-1.0, vmax=1.0)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            if not np.isnan(matrix[i, j]):
                ax.text(
                    j,
                    i,
                    f"{matrix[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if abs(matrix[i, j]) > 0.6 else "black",
                )
    fig.colorbar(image, ax=ax, label="Pearson r")
    title = _title(stats, f"Gold-score correlation ({stats['n_complete_videos']} videos with all eight scores)")
    ax.set_title(title, fontsize=10)
    fig.subplots_adjust(**_HEATMAP_LAYOUT)
    return fig, title


def correlation_heatmap(stats: dict, path: str | Path, files: AtomicFiles | None = None) -> Path:
    """Paper Figure 5: the heatmap of `heatmap_figure`, saved to `path` (staged in `files` when given)."""
    fig, title = heatmap_figure(stats)
    return _save(fig, Path(path), files, title)


def histograms_figure(stats: dict):
    """(figure, title) of one bar chart per dimension at 0.1 resolution, with its n, mean and sd."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    bins = np.asarray(stats["histograms"]["bins"])
    edges = np.append(bins - 0.05, bins[-1] + 0.05)  # each 0.1 bin centred on its score
    # Reused where a build in this process wrote one before.
    fig, axes = panel_grid(2, 4, figsize=(12, 5.2), sharex=True, tick_params={"labelsize": 8})
    for ax, key in zip(axes.flat, DIMENSION_KEYS, strict=True):
        summary = stats["dimensions"][key]
        # One filled step outline per panel (np.histogram's counts, already in stats): one artist, not 41 bars.
        ax.stairs(stats["histograms"]["counts"][key], edges, fill=True, color="#4477aa")
        # Whole counts, as many as fit ("auto", as on every other axis; 10 bins put 9-11 ticks on a 2-inch axis, each
        # a tick and a label to make and draw: a fifth of the figure's time) at round steps (0, 100, 200 or 0, 50, ...).
        ax.yaxis.set_major_locator(MaxNLocator(nbins="auto", steps=[1, 2, 5, 10], integer=True))
        detail = f"n={summary['n']}"
        if summary["mean"] is not None:
            detail += f", mean {summary['mean']:.2f}"
        if summary["sd"] is not None:
            detail += f", sd {summary['sd']:.2f}"
        # y given: no automatic title placement (it measures the tick labels once more; nothing is above the axes)
        ax.set_title(f"{DIMENSION_BY_KEY[key].abbreviation} ({detail})", fontsize=9, y=1.0)
        ax.set_xlim(0.9, 5.1)
    for ax in axes[-1]:
        ax.set_xlabel("gold score", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("videos", fontsize=8)
    title = _title(stats, "Gold-score histograms")
    if stats.get("synthetic"):
        fig.suptitle(title, fontsize=10, fontweight="bold")
    # Fixed margins: tight_layout would draw the figure twice.
    top = 0.89 if stats.get("synthetic") else 0.94
    fig.subplots_adjust(left=0.05, right=0.99, top=top, bottom=0.09, wspace=0.22, hspace=0.28)
    return fig, title


def gold_histograms(stats: dict, path: str | Path, files: AtomicFiles | None = None) -> Path:
    """Paper Figure 6: the histograms of `histograms_figure`, saved to `path` (staged in `files` when given)."""
    fig, title = histograms_figure(stats)
    return _save(fig, Path(path), files, title)


def write_figures(stats: dict, folder: str | Path, files: AtomicFiles | None = None) -> dict[str, Path]:
    """Both figures into `folder`, under the names `stats["figures"]` gives (staged in `files` when given)."""
    folder = Path(folder)
    return {
        "correlation": correlation_heatmap(stats, folder / stats["figures"]["correlation"], files),
        "histograms": gold_histograms(stats, folder / stats["figures"]["histograms"], files),
    }
