"""Agreement figures of one run, per dimension, where a reader would rather look than read a table:

- Bland-Altman (Bland & Altman 1986): model minus gold against their mean, with the mean bias and
  the 95% limits of agreement (bias +- 1.96 sd) drawn;
- calibration: the mean model score per gold bin (half-point bins) against the bin's mean gold
  score, with the diagonal a calibrated model would follow;
- the two score histograms overlaid (gold and model, 0.1-point bins: one per one-decimal score),
  which shows a model that answers only a few values.

Every figure uses exactly the pairs the ICC uses (parsed predictions with a gold score); bias and
limits come from `mis_icc_metric.agreement_statistics.agreement` on those pairs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from eval_scripts.report.plots import _literal, _save, dimension_grid, panel_title
from eval_scripts.report.table import RunView
from mis_bench_dataset.dimensions import DIMENSIONS, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.toolkit.atomic import AtomicFiles

__all__ = [
    "CALIBRATION_BIN",
    "bland_altman_figure",
    "calibration_bins",
    "calibration_figure",
    "histogram_figure",
    "pairs_of",
    "write_agreement_plots",
]

CALIBRATION_BIN = 0.5  # gold bins [1, 1.5), [1.5, 2), ..., [4.5, 5]
_HISTOGRAM_EDGES = np.round(np.arange(SCORE_MIN - 0.05, SCORE_MAX + 0.1, 0.1), 2)  # one bin per one-decimal score


def pairs_of(run: RunView, references: Mapping[tuple[str, str], float | None], key: str) -> np.ndarray:
    """(n, 2) array of (prediction, gold) for one dimension: the parsed predictions with a gold score."""
    pairs = [
        (run.predictions[(video, dim)], gold)
        for (video, dim), gold in sorted(references.items())
        if dim == key and gold is not None and run.predictions.get((video, dim)) is not None
    ]
    return np.asarray(pairs, dtype=np.float64).reshape(len(pairs), 2)


def calibration_bins(pred: np.ndarray, gold: np.ndarray, width: float = CALIBRATION_BIN) -> list[dict]:
    """Per non-empty gold bin: {"low", "high", "gold_mean", "model_mean", "model_sd", "n"}; the last bin
    is closed so a gold score of 5.0 falls in [4.5, 5]."""
    edges = np.arange(SCORE_MIN, SCORE_MAX + width / 2, width)
    index = np.clip(np.searchsorted(edges, gold, side="right") - 1, 0, len(edges) - 2)
    bins = []
    for b in range(len(edges) - 1):
        inside = index == b
        if inside.any():
            model = pred[inside]
            bins.append(
                {
                    "low": float(edges[b]),
                    "high": float(edges[b + 1]),
                    "gold_mean": float(gold[inside].mean()),
                    "model_mean": float(model.mean()),
                    "model_sd": float(model.std(ddof=1)) if model.size > 1 else 0.0,
                    "n": int(inside.sum()),
                }
            )
    return bins


def bland_altman_figure(run: RunView, references: Mapping[tuple[str, str], float | None], *, title: str):
    """Per dimension: difference (model - gold) against the mean of the two, bias and limits of agreement."""
    from mis_icc_metric.agreement_statistics import agreement

    fig, axes = dimension_grid(_literal(title))
    reach = 1.0  # the y range, symmetric about 0: at least one point, at most the scale's width
    for ax, dim in zip(axes.ravel(), DIMENSIONS, strict=True):
        pairs = pairs_of(run, references, dim.key)
        ax.axhline(0.0, color="grey", linewidth=0.6)
        heading = f"{dim.abbreviation}  n={len(pairs)}"
        if len(pairs):
            difference = pairs[:, 0] - pairs[:, 1]
            ax.scatter(pairs.mean(axis=1), difference, s=9, alpha=0.5)
            reach = max(reach, float(np.abs(difference).max()))
        if len(pairs) >= 2:
            stats = agreement(pairs[:, 0], pairs[:, 1])
            ax.axhline(stats["bias"], color="C3", linewidth=1.2, label="bias")
            for limit in ("loa_low", "loa_high"):
                ax.axhline(stats[limit], color="C3", linestyle="--", linewidth=1.0)
                reach = max(reach, abs(stats[limit]))
            heading += f"  bias {stats['bias']:+.2f} [{stats['loa_low']:+.2f}, {stats['loa_high']:+.2f}]"
        panel_title(ax, heading, 8)
        ax.set_xlim(SCORE_MIN, SCORE_MAX)
    reach = min(1.1 * reach, SCORE_MAX - SCORE_MIN)
    axes[0, 0].set_ylim(-reach, reach)  # shared by every panel
    for ax in axes[1]:
        ax.set_xlabel("mean of model and gold")
    for ax in axes[:, 0]:
        ax.set_ylabel("model - gold")
    return fig


def calibration_figure(run: RunView, references: Mapping[tuple[str, str], float | None], *, title: str):
    """Per dimension: mean model score (+- 1 sd) per half-point gold bin, against the diagonal."""
    fig, axes = dimension_grid(_literal(title))
    for ax, dim in zip(axes.ravel(), DIMENSIONS, strict=True):
        pairs = pairs_of(run, references, dim.key)
        ax.plot([SCORE_MIN, SCORE_MAX], [SCORE_MIN, SCORE_MAX], color="grey", linewidth=0.8, label="calibrated")
        bins = calibration_bins(pairs[:, 0], pairs[:, 1]) if len(pairs) else []
        if bins:
            x = [b["gold_mean"] for b in bins]
            y = [b["model_mean"] for b in bins]
            ax.errorbar(x, y, yerr=[b["model_sd"] for b in bins], fmt="o-", markersize=4, linewidth=1, capsize=2)
        panel_title(ax, f"{dim.abbreviation}  n={len(pairs)}", 9)
        ax.set_xlim(SCORE_MIN, SCORE_MAX)
        ax.set_ylim(SCORE_MIN, SCORE_MAX)
    for ax in axes[1]:
        ax.set_xlabel(f"gold (mean of each {CALIBRATION_BIN}-point bin)")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean model score")
    return fig


def histogram_figure(run: RunView, references: Mapping[tuple[str, str], float | None], *, title: str):
    """Per dimension: gold and model score histograms overlaid (same pairs, same 0.1-point bins)."""
    fig, axes = dimension_grid(_literal(title))
    for ax, dim in zip(axes.ravel(), DIMENSIONS, strict=True):
        pairs = pairs_of(run, references, dim.key)
        if len(pairs):  # one filled outline per histogram: ax.hist drew a patch per bin, 656 per figure
            for column, label, color in ((1, "gold", "C0"), (0, "model", "C1")):
                counts, _ = np.histogram(pairs[:, column], bins=_HISTOGRAM_EDGES)
                ax.stairs(counts, _HISTOGRAM_EDGES, fill=True, alpha=0.5, label=label, color=color)
        distinct = len(np.unique(pairs[:, 0])) if len(pairs) else 0
        panel_title(ax, f"{dim.abbreviation}  n={len(pairs)}  model values: {distinct}", 9)
        ax.set_xlim(SCORE_MIN - 0.1, SCORE_MAX + 0.1)
    axes[0, 0].legend(fontsize=8, frameon=False)
    for ax in axes[1]:
        ax.set_xlabel("score")
    for ax in axes[:, 0]:
        ax.set_ylabel("videos")
    return fig


PLOTS = {
    "bland-altman": (bland_altman_figure, "Bland-Altman"),
    "calibration": (calibration_figure, "Calibration"),
    "histograms": (histogram_figure, "Score histograms"),
}


def write_agreement_plots(
    run: RunView,
    references: Mapping[tuple[str, str], float | None],
    paths: Mapping[str, Path],
    *,
    suffix: str = "",
    files: AtomicFiles | None = None,
) -> dict[str, Path]:
    """The three figures of one run into `paths` (kind -> PNG path, kinds of PLOTS), titled with the run
    (staged in `files` when given, so they appear with the rest of the report)."""
    written = {}
    for kind, path in paths.items():
        make, name = PLOTS[kind]
        written[kind] = _save(make(run, references, title=f"{name}: {run.label}{suffix}"), path, dpi=90, files=files)
    return written
