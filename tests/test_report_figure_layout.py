"""The report's per-dimension grids have a fixed layout instead of tight_layout: drawn with the widest content a
report gives them (4-digit counts, limits of agreement at the scale's width, the longest headings), every text
the renderer draws lies inside the canvas and overlaps no other text and no other panel; and saving draws each
grid once."""

from __future__ import annotations

import io
import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.transforms import Bbox

from eval_scripts.report.agreement_plots import bland_altman_figure, calibration_figure, histogram_figure
from eval_scripts.report.plots import heatmap_figure, scatter_figure
from eval_scripts.report.table import RunView
from mis_bench_dataset import DIMENSIONS

N_VIDEOS = 1500  # over 1,000 in one 0.1-point bin: 4-digit y tick labels on the histograms
LABEL = "org/a-rather-long-model-name-7b-instruct · audio+video+text · cot · 5-shot"
SUFFIX = " (SYNTHETIC data)"


def _stress_run() -> tuple[RunView, dict]:
    """Gold mostly 5.0 and a model answering 1.0 for most videos: differences of -4 (the Bland-Altman range at
    the scale's width, signed tick labels), four-digit counts, wide headings; one dimension left unparsed."""
    rng = np.random.default_rng(0)
    videos = [f"SY{i:04d}_T1_Luke" for i in range(N_VIDEOS)]
    references, predictions = {}, {}
    for dim in DIMENSIONS:
        gold = np.where(rng.random(N_VIDEOS) < 0.8, 5.0, np.round(rng.uniform(1, 5, N_VIDEOS), 1))
        model = np.where(rng.random(N_VIDEOS) < 0.7, 1.0, np.round(rng.uniform(1, 5, N_VIDEOS), 1))
        for video, g, m in zip(videos, gold, model, strict=True):
            references[(video, dim.key)] = float(g)
            predictions[(video, dim.key)] = None if dim.key == "arrr" else float(m)
    scores = {"dimensions": {dim.key: {"icc": -0.123} for dim in DIMENSIONS}}
    run = RunView(label=LABEL, scores=scores, parse_rates={}, synthetic=True, predictions=predictions)
    return run, references


@pytest.fixture(scope="module")
def stress():
    return _stress_run()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _drawn_texts(fig) -> list[tuple[object, Bbox, str]]:
    """(owning axes or None for the figure's own, extent in pixels, text) of every text the renderer draws:
    visible, non-empty, tick labels only of ticks inside the view."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = [(None, text) for text in fig.texts]
    for ax in fig.axes:
        found += [(ax, text) for text in (ax.title, *ax.texts)]
        legend = ax.get_legend()
        found += [(ax, text) for text in legend.get_texts()] if legend else []
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            slack = 1e-9 * (high - low)
            inside = [t for t in axis.get_major_ticks() if low - slack <= t.get_loc() <= high + slack]
            found += [(ax, label) for tick in inside for label in (tick.label1, tick.label2)]
            found += [(ax, axis.label), (ax, axis.get_offset_text())]
    drawn = [(owner, text) for owner, text in found if text.get_visible() and text.get_text()]
    return [(owner, text.get_window_extent(renderer), text.get_text()) for owner, text in drawn]


def _overlap(a: Bbox, b: Bbox) -> bool:
    """Strictly overlapping (sharing more than an edge)."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5


def _check_legible(fig) -> int:
    texts = _drawn_texts(fig)
    width, height = fig.bbox.width, fig.bbox.height
    for _, box, text in texts:
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, (text, box.extents)
    for (_, a, text_a), (_, b, text_b) in itertools.combinations(texts, 2):
        assert not _overlap(a, b), (text_a, text_b)
    for owner, box, text in texts:
        for ax in fig.axes:
            if ax is not owner:
                assert not _overlap(box, ax.bbox), (text, "over another panel")
    return len(texts)


GRIDS = {
    "scatter": lambda run, refs: scatter_figure(run, refs, suffix=SUFFIX),
    "bland-altman": lambda run, refs: bland_altman_figure(run, refs, title=f"Bland-Altman: {LABEL}{SUFFIX}"),
    "calibration": lambda run, refs: calibration_figure(run, refs, title=f"Calibration: {LABEL}{SUFFIX}"),
    "histograms": lambda run, refs: histogram_figure(run, refs, title=f"Score histograms: {LABEL}{SUFFIX}"),
}


@pytest.mark.parametrize("kind", sorted(GRIDS))
def test_grid_text_fits_the_canvas_and_overlaps_nothing(stress, kind):
    run, references = stress
    fig = GRIDS[kind](run, references)
    # Title, 8 panel titles, x and y labels, and tick labels on the outer panels: all drawn, all checked.
    assert _check_legible(fig) > 8 + 4 + 2 + 4 * 3 + 2 * 3
    assert fig.get_layout_engine() is None  # fixed layout: nothing to run again at save time


def test_histogram_ticks_reach_four_digits(stress):
    """The stress case does stress the left margin: the count axis needs four digits."""
    fig = histogram_figure(*stress, title="t")
    fig.canvas.draw()
    assert max(len(label.get_text()) for label in fig.axes[0].get_yticklabels()) >= 4


def test_heatmap_text_fits_and_saving_draws_each_figure_once(stress):
    run, references = stress
    runs = [run, RunView(label="b/other · text", scores={"dimensions": {}}, parse_rates={}, synthetic=True)]
    heatmap = heatmap_figure(runs, title="ICC(3,1) % by configuration" + SUFFIX)
    _check_legible(heatmap)
    for fig in (heatmap, GRIDS["histograms"](run, references)):
        draws = []
        fig.canvas.mpl_connect("draw_event", draws.append)
        fig.savefig(io.BytesIO(), format="png", dpi=90)
        assert len(draws) == 1
