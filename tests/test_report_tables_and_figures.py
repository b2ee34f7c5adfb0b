"""Report tables (Table 3 layout, best per column), figures and the written report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from eval_scripts import ReportOptions, write_report
from eval_scripts.report.formatting import best_rows, ci_pct, pct
from eval_scripts.report.plots import radar_figure, scatter_figure
from eval_scripts.report.table import icc_table, mse_table, rates_table, run_views, to_html, to_markdown
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS, HUMAN_CEILING
from mis_icc_metric import ResamplingOptions

from _leaderboard_helpers import (
    VIDEO_IDS,
    contract_scores,
    make_references,
    make_results,
    noisy_predictions,
)


def _results(model, iccs, overall, mse=0.25, excluded=0.0):
    refs = make_references(VIDEO_IDS[:5])
    return make_results(
        noisy_predictions(refs, 0.3, seed=0),
        model=model,
        scores=contract_scores(iccs, overall=overall, mse=mse, excluded_rate=excluded),
    )


@pytest.fixture()
def two_runs():
    a = {key: 0.10 * (i + 1) / 2 for i, key in enumerate(DIMENSION_KEYS)}  # 0.05 .. 0.40
    b = {key: 0.20 for key in DIMENSION_KEYS}
    return [_results("model-a", a, 0.30, mse=0.30, excluded=0.02), _results("model-b", b, 0.25, mse=0.20)]


def test_formatting_is_percent_with_one_decimal():
    assert pct(0.3456) == "34.6" and pct(-0.06) == "-6.0" and pct(None) == "–" and pct(float("nan")) == "–"
    assert ci_pct([0.1, 0.25]) == "[10.0, 25.0]" and ci_pct(None) == "–"
    assert best_rows([0.1, None, 0.3, 0.3]) == {2, 3}
    assert best_rows([0.1, 0.05], higher_is_better=False) == {1}
    assert best_rows([None, None]) == set()


def test_icc_table_marks_best_per_column(two_runs):
    table = icc_table(run_views(two_runs))
    assert table.header == ["System"] + [d.abbreviation for d in DIMENSIONS] + ["Overall", "Mean ICC"]
    # a: 5, 10, 15, 20, 25, 30, 35, 40; b: 20 everywhere -> b best on the first 3, tie on the 4th, a best after.
    expected_best = {(1, 1), (1, 2), (1, 3), (0, 4), (1, 4), (0, 5), (0, 6), (0, 7), (0, 8), (0, 9), (0, 10)}
    assert table.best == expected_best
    assert table.rows[0][1] == "5.0 [-5.0, 15.0]"
    assert table.rows[0][9] == "30.0 [25.0, 35.0]"
    assert table.rows[0][10] == "22.5"  # mean of 5..40
    ceiling = table.reference_rows[0]
    assert ceiling[1] == "64.0 [61.0, 68.0]"
    assert ceiling[-1] == pct(sum(c.icc for c in HUMAN_CEILING.values()) / 8)


def test_single_run_marks_nothing(two_runs):
    assert icc_table(run_views(two_runs[:1])).best == set()


def test_mse_best_is_lowest_and_rates(two_runs):
    runs = run_views(two_runs)
    assert mse_table(runs).best == {(1, c) for c in range(1, 10)}
    rates = rates_table(runs)
    assert rates.rows[0][-2] == "2.0%"
    assert rates.rows[0][1] == "100.0%"


def test_parse_rates_are_the_metrics_not_the_files_claim():
    """A results file's `parse_rates` field is what its writer claimed; the report shows the rates of the
    scores (recomputed from the predictions with --references), as the leaderboard does."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import score_predictions

    refs = make_references(VIDEO_IDS[:10])
    predictions = noisy_predictions(refs, 0.3, seed=0, none_rate=0.2)
    results = make_results(
        predictions, scores=json_safe(score_predictions(predictions, refs, resampling=ResamplingOptions(n_bootstrap=0)))
    )
    results["parse_rates"] = dict.fromkeys(DIMENSION_KEYS, 1.0)
    row = rates_table(run_views([results])).rows[0]
    for key, cell in zip(DIMENSION_KEYS, row[1:9], strict=True):
        parsed = sum(predictions[(v, key)] is not None for v in VIDEO_IDS[:10]) / 10
        assert cell == f"{100 * parsed:.1f}%"
    assert any(cell != "100.0%" for cell in row[1:9])


def test_markdown_and_html_render_marks(two_runs):
    table = icc_table(run_views(two_runs))
    md = to_markdown(table)
    assert md.splitlines()[0].startswith("| System | VF | H/PE |")
    assert "**20.0 [10.0, 30.0]**" in md.splitlines()[3]
    assert "_Human ceiling (Table 2)_" in md
    html = to_html(table)
    assert html.count('class="best"') == len(table.best)
    assert '<tr class="reference">' in html


def test_unscored_results_are_refused():
    refs = make_references(VIDEO_IDS[:3])
    with pytest.raises(ValueError, match="has no scores"):
        run_views([make_results(noisy_predictions(refs, 0.3, seed=0), model="m")])


def test_radar_draws_each_run_and_the_human_ceiling(two_runs):
    runs = run_views(two_runs)
    fig = radar_figure(runs)
    ax = fig.axes[0]
    by_label = {line.get_label(): np.asarray(line.get_ydata()) for line in ax.get_lines()}
    ceiling = [100 * HUMAN_CEILING[k].icc for k in DIMENSION_KEYS]  # percent, as every table
    np.testing.assert_allclose(by_label["Human ceiling (Table 2)"], ceiling + ceiling[:1])
    a = [100 * runs[0].dim(k)["icc"] for k in DIMENSION_KEYS]
    np.testing.assert_allclose(by_label[runs[0].label], a + a[:1])
    assert [t.get_text() for t in ax.get_xticklabels()] == [d.abbreviation for d in DIMENSIONS]
    assert ax.get_ylim()[1] >= 70 and "%" in ax.get_title()


def test_scatter_plots_parsed_pairs_per_dimension():
    refs = make_references(VIDEO_IDS[:10])
    preds = noisy_predictions(refs, 0.4, seed=3, none_rate=0.2)
    run = run_views([make_results(preds, scores=contract_scores({k: 0.1 for k in DIMENSION_KEYS}, overall=0.1))])[0]
    fig = scatter_figure(run, refs)
    for ax, key in zip(fig.axes, DIMENSION_KEYS, strict=True):
        expected = sorted((refs[(v, key)], preds[(v, key)]) for v in VIDEO_IDS[:10] if preds[(v, key)] is not None)
        offsets = ax.collections[0].get_offsets() if ax.collections else np.empty((0, 2))
        assert sorted(map(tuple, np.asarray(offsets).tolist())) == expected
        assert ax.get_title().endswith(f"n={len(expected)}")
        # A point at 1.0 or 5.0 (gold 5.0 is common) lies inside the axes, so its marker is drawn whole.
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        assert x0 < 1.0 and x1 > 5.0 and y0 < 1.0 and y1 > 5.0


def test_write_report_writes_md_html_png(tmp_path, two_runs):
    refs = make_references(VIDEO_IDS[:5])
    files = write_report(two_runs, tmp_path, ReportOptions(title="T"), references=refs)
    for png in files.figures:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(files.scatters) == 2 and len(files.agreement_plots) == 2 * 3
    assert files.figures == [files.heatmap, files.radar, *files.scatters, *files.agreement_plots]
    md = files.markdown.read_text()
    assert "SYNTHETIC DATA" in md and "| System | VF |" in md and files.radar.name in md and files.heatmap.name in md
    html = files.html.read_text()
    assert html.count("data:image/png;base64,") == 4 + 6 and "id='synthetic-notice'" in html
    assert json.loads(files.json.read_text())["synthetic"] is True


def test_real_data_report_has_no_synthetic_notice(tmp_path, two_runs):
    for results in two_runs:
        results["dataset"]["synthetic"] = False
    files = write_report(two_runs, tmp_path)
    assert "SYNTHETIC" not in files.markdown.read_text() and files.scatters == []
