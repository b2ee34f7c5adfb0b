"""Grids of panels are built once per process and reused (`mis_bench_dataset.toolkit.figures`): a figure saved on a
reused grid is the same PNG, byte for byte, as on a new one, whatever was drawn on the grid before; a grid is
reused only once it is saved, and only under the rcParams it was built under."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pytest

from eval_scripts.report.agreement_plots import write_agreement_plots
from eval_scripts.report.plots import scatter_figure, scatter_grid
from eval_scripts.report.table import RunView
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS
from mis_bench_dataset.builder.stats import GoldTable, dataset_stats
from mis_bench_dataset.builder.stats_plots import gold_histograms
from mis_bench_dataset.toolkit import figures

KINDS = ("scatter", "bland-altman", "calibration", "histograms")
# Every ordered pair of kinds, each kind after itself too, once: a de Bruijn sequence of the 4 kinds, order 2.
SEQUENCE = [0, 0, 1, 0, 2, 0, 3, 1, 1, 2, 1, 3, 2, 2, 3, 3, 0]


def _case(n: int, seed: int, *, unparsed: str | None = None, stuck: bool = False) -> tuple[RunView, dict]:
    """A run on `n` videos: noisy predictions, or (`stuck`) 1.0 for most; `unparsed` left without predictions."""
    rng = np.random.default_rng(seed)
    references, predictions = {}, {}
    for dim in DIMENSIONS:
        gold = np.round(rng.uniform(1, 5, n), 1)
        noisy = np.round(np.clip(gold + rng.normal(0, 0.6, n), 1, 5), 1)
        model = np.where(rng.random(n) < 0.8, 1.0, gold) if stuck else noisy
        for i in range(n):
            references[(f"SY{i:04d}_T1_Luke", dim.key)] = float(gold[i])
            predictions[(f"SY{i:04d}_T1_Luke", dim.key)] = None if dim.key == unparsed else float(model[i])
    scores = {"dimensions": {dim.key: {"icc": 0.1 * seed - 0.05 * i} for i, dim in enumerate(DIMENSIONS)}}
    label = f"org/model-{seed} · text · direct"
    return RunView(label=label, scores=scores, parse_rates={}, synthetic=True, predictions=predictions), references


CASES = (_case(60, 1), _case(14, 2, unparsed="arrr", stuck=True))


def _save(kind: str, case: int, path) -> bytes:
    run, references = CASES[case]
    if kind == "scatter":
        scatter_grid(run, references, path, suffix=" (SYNTHETIC data)")
    else:
        write_agreement_plots(run, references, {kind: path}, suffix=" (SYNTHETIC data)")
    return path.read_bytes()


@pytest.fixture
def empty_pool(monkeypatch):
    """No grid handed back yet (this process's earlier tests leave theirs)."""
    monkeypatch.setattr(figures, "_FREE", {})


@pytest.mark.slow
def test_report_grids_on_a_reused_grid_are_the_same_pngs(tmp_path, empty_pool):
    fresh = {}
    for kind in KINDS:
        for case in range(len(CASES)):
            figures._FREE.clear()
            fresh[kind, case] = _save(kind, case, tmp_path / f"fresh-{kind}-{case}.png")
    assert len(set(fresh.values())) == len(fresh)  # eight different figures
    figures._FREE.clear()
    for step, index in enumerate(SEQUENCE):
        kind, case = KINDS[index], step % len(CASES)
        reused = bool(figures._FREE)
        assert reused == (step > 0)  # every grid after the first is the one saved before it
        assert _save(kind, case, tmp_path / f"{step}.png") == fresh[kind, case], (step, kind, case)


def _stats(synthetic: bool, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    gold = np.round(np.clip(rng.normal(3.2, 0.8, (n, len(DIMENSION_KEYS))), 1, 5), 1)
    ids = tuple(f"AB{i // 24:04d}_T{i % 3 + 1}_Sean" for i in range(n))
    table = GoldTable(ids, {"split": ("train",) * n, "time_point": ("T1",) * n, "stimulus": ("Sean",) * n}, gold)
    return {"synthetic": synthetic, **dataset_stats(table)}


def test_stats_histograms_on_a_reused_grid_are_the_same_pngs(tmp_path, empty_pool):
    """Real data after synthetic: the synthetic figure's suptitle does not stay behind."""
    docs = [_stats(True, 120, 0), _stats(False, 48, 1)]
    fresh = []
    for i, doc in enumerate(docs):
        figures._FREE.clear()
        fresh.append(gold_histograms(doc, tmp_path / f"fresh{i}.png").read_bytes())
    figures._FREE.clear()
    for i, which in enumerate((0, 1, 0)):
        assert gold_histograms(docs[which], tmp_path / f"{i}.png").read_bytes() == fresh[which], i


def test_a_grid_is_reused_only_once_saved_and_under_its_rcparams(tmp_path, empty_pool):
    run, references = CASES[0]
    kept = scatter_figure(run, references)
    assert scatter_figure(run, references) is not kept  # kept by its caller: never handed out again
    grid, axes = figures.panel_grid(1, 2, figsize=(4.0, 2.0), sharey=True)
    grid.suptitle("title")
    note = grid.text(0.5, 0.5, "a note")
    axes[0, 1].text(0.5, 0.5, "in a panel")
    figures.release(grid)
    assert figures.panel_grid(1, 2, figsize=(4.0, 2.0), sharey=True)[0] is grid
    assert note not in grid.texts and [t.get_text() for t in grid.texts] == [""] and not axes[0, 1].texts
    figures.release(grid)
    assert figures.panel_grid(1, 2, figsize=(4.0, 2.0))[0] is not grid  # another shape
    with mpl.rc_context({"font.size": 7.0}):
        assert figures.panel_grid(1, 2, figsize=(4.0, 2.0), sharey=True)[0] is not grid
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(OSError):  # a grid whose save failed is not handed back (a file where its folder goes)
        scatter_grid(run, references, tmp_path / "a-file" / "scatter.png")
    assert not figures._FREE
    figures.release(mpl.figure.Figure())  # any other figure: nothing to do
    assert not figures._FREE
