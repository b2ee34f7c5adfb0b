"""Matplotlib figures on the Agg canvas without pyplot, and grids of panels built once per process and reused.

Making a grid's axes (their spines, axes, and the tick objects matplotlib creates for every tick of every axis,
16 axes in a 2 x 4 grid) was about 40% of the CPU time of drawing and saving one. A grid handed back with
`release` once it is saved is emptied (its data, legends, titles, labels, limits and colour cycle reset as
`Axes.clear` leaves them, the axes and their ticks kept) and handed out again by the next `panel_grid` call of
the same shape under the same rcParams; tests/test_figure_reuse.py checks that a figure drawn on a reused grid
saves to the same PNG bytes as on a new one, whatever was drawn on it before. A grid's builder sets what it
relies on each time (titles, labels, limits, locators), as on a new grid. A grid that is not handed back (a
caller who keeps the figure) is never reused.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()
_FREE: dict[tuple, Any] = {}  # shape -> an emptied grid of that shape (one at most)


def agg_figure(**kwargs):
    """A figure on matplotlib's Agg canvas, without pyplot: no global figure list to close, and less to import
    (pyplot also loads its backend and state machinery). The PNG bytes are the same as pyplot's."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kwargs)
    FigureCanvasAgg(fig)
    return fig


def panel_grid(
    nrows: int,
    ncols: int,
    *,
    figsize: tuple[float, float],
    sharex: bool = False,
    sharey: bool = False,
    gridspec_kw: dict | None = None,
    tick_params: dict | None = None,
):
    """(figure, axes array) of `nrows` x `ncols` panels: a reused grid of this shape when one was handed back
    (`release`) under the same rcParams, else a new one. `tick_params` (`Axes.tick_params` of every panel) is
    part of the shape: given here, it is applied once, when the grid is made (on a drawn grid it would touch
    each of its ticks again)."""
    import matplotlib as mpl

    shape = (
        nrows,
        ncols,
        tuple(figsize),
        sharex,
        sharey,
        *(tuple(sorted((kw or {}).items())) for kw in (gridspec_kw, tick_params)),
    )
    rc = mpl.rcParams.copy()  # (copy, not dict(): reading "backend" would resolve it and import pyplot)
    with _LOCK:
        fig = _FREE.pop(shape, None)
    if fig is None or fig._panel_grid[1] != rc:
        fig = agg_figure(figsize=figsize)
        axes = fig.subplots(nrows, ncols, sharex=sharex, sharey=sharey, gridspec_kw=gridspec_kw, squeeze=False)
        for ax in axes.flat if tick_params else ():
            ax.tick_params(**tick_params)
        fig._panel_grid = (shape, rc, axes)  # its shape and the rcParams it was built under: reused only under these
    return fig, fig._panel_grid[2]


def release(fig) -> None:
    """Hand back a figure once it is saved: a grid of `panel_grid` is emptied and kept for the next grid of its
    shape (one per shape); any other figure is left as it is."""
    shape = getattr(fig, "_panel_grid", (None,))[0]
    if shape is None:
        return
    try:
        _empty(fig)
    except Exception:  # a grid that cannot be emptied is dropped, never reused half-cleared
        return
    with _LOCK:
        _FREE[shape] = fig


def _empty(fig) -> None:
    """What `Axes.clear` resets, except the axes and their ticks: data artists, containers, legends, titles,
    axis labels, data and view limits (0-1, autoscaled), the colour cycle; the figure's texts removed (its
    suptitle emptied)."""
    for ax in fig.axes:
        for artist in (*ax.lines, *ax.collections, *ax.patches, *ax.texts, *ax.images, *ax.artists, *ax.tables):
            artist.remove()
        ax.containers.clear()
        if ax.get_legend() is not None:
            ax.get_legend().remove()
        ax.relim()
        ax.set_prop_cycle(None)
        ax.set_title("")
        ax.set_xlabel("")
        ax.set_ylabel("")
    for ax in fig.axes:  # after every panel is empty: shared limits are set for the whole group
        ax.set_xlim(0.0, 1.0, auto=True)
        ax.set_ylim(0.0, 1.0, auto=True)
    suptitle = getattr(fig, "_suptitle", None)  # stays the figure's: suptitle() writes into it again
    for text in list(fig.texts):
        if text is suptitle:
            text.set_text("")
        else:
            text.remove()
    for legend in list(fig.legends):
        legend.remove()
