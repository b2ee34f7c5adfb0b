"""What lets an outsider read a report: the dimension abbreviations spelt out (a legend in the Markdown
and the HTML, a tooltip on every abbreviated column of every HTML table), the `mean` floor baseline shown
but never ranked among the systems, and user text in the PNG figures without raw control characters."""

from __future__ import annotations

import re

from eval_scripts import ReportOptions, write_report
from eval_scripts.formats.results import BASELINE_MODEL_IDS
from eval_scripts.report.plots import heatmap_figure, radar_figure, scatter_figure
from eval_scripts.report.table import run_views
from eval_scripts.report.views import best_configurations, rank_table
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS

from _leaderboard_helpers import VIDEO_IDS, contract_scores, make_references, make_results, noisy_predictions

HOSTILE = "evil\x1b[31m\u202emodel\x00$x$"


def _results(model, icc, overall, *, backend="transformers"):
    refs = make_references(VIDEO_IDS[:5])
    results = make_results(
        noisy_predictions(refs, 0.3, seed=0),
        model=model,
        scores=contract_scores(dict.fromkeys(DIMENSION_KEYS, icc), overall=overall),
    )
    results["system"]["backend"] = backend
    return results


def _floor():
    return _results(BASELINE_MODEL_IDS["mean"], 0.0, 0.0, backend="baseline")


def test_the_floor_baseline_is_not_ranked_in_the_table3_view():
    runs = run_views([_results("a/strong", 0.4, 0.5), _results("b/weak", 0.2, 0.3), _floor()])
    best, _ = best_configurations(runs)
    ranks = rank_table(best)
    by_model = {entry.run.model: rank for entry, rank in zip(best, ranks, strict=True)}
    assert set(by_model[BASELINE_MODEL_IDS["mean"]].values()) == {None}  # shown, but never 1st/2nd/3rd
    assert by_model["a/strong"]["overall"] == 1 and by_model["b/weak"]["overall"] == 2
    # A system's results that merely borrow the floor's model id are ranked: only the baseline backend is the floor.
    impostor = run_views([_results("a/strong", 0.4, 0.5), _results(BASELINE_MODEL_IDS["mean"], 0.1, 0.1)])
    assert [r["overall"] for r in rank_table(best_configurations(impostor)[0])] == [1, 2]


def test_a_lone_system_beside_the_floor_gets_no_marks(tmp_path):
    """The default job's case: one system and the floor; before, the floor was "2nd" in every column."""
    files = write_report([_results("a/strong", 0.4, 0.5), _floor()], tmp_path, ReportOptions(title="T"))
    md = files.markdown.read_text(encoding="utf-8")
    table3 = md.split("## Table 3 view", 1)[1].split("## ", 1)[0]
    rows = [line for line in table3.splitlines() if line.startswith("|")]
    assert len(rows) == 5 and not re.search("[\u00b9\u00b2\u00b3]", "".join(rows))  # header, rule, 2 rows, ceiling
    assert "floor baseline is shown but not ranked" in md


def test_abbreviations_have_a_legend_and_a_tooltip(tmp_path):
    files = write_report(
        [_results("a/strong", 0.4, 0.5), _results("b/weak", 0.2, 0.3)], tmp_path, ReportOptions(title="T")
    )
    md = files.markdown.read_text(encoding="utf-8")
    page = files.html.read_text(encoding="utf-8")
    for dim in DIMENSIONS:
        assert f"{dim.abbreviation} = {dim.name}".replace("&", "&amp;") in page
        assert f"{dim.abbreviation} = {dim.name}" in md
    headers = re.findall(r"<th( [^>]*)?>(.*?)</th>", page)
    abbreviated = [(attrs, text) for attrs, text in headers if re.sub("<[^>]+>", "", text) in _abbreviations()]
    assert abbreviated, "the report has tables with abbreviated columns"
    for attrs, text in abbreviated:
        name = _abbreviations()[re.sub("<[^>]+>", "", text)]
        assert f'title="{name}"'.replace("&", "&amp;") in attrs, (attrs, text)
    # Dimensions as row labels (the comparison table) are spelt out on hover too.
    bare = "|".join(re.escape(abbreviation) for abbreviation in _abbreviations())
    assert not re.search(rf"<td[^>]*>({bare})</td>", page)
    assert re.search(r'<td class="label"><abbr title="Verbal Fluency">VF</abbr></td>', page)


def _abbreviations() -> dict[str, str]:
    from mis_bench_dataset.toolkit.text_safety import escape_html

    return {escape_html(d.abbreviation): d.name for d in DIMENSIONS}


def test_figure_text_has_no_raw_control_characters():
    refs = make_references(VIDEO_IDS[:5])
    runs = run_views([_results(HOSTILE, 0.3, 0.4), _results("b/weak", 0.2, 0.3)])
    texts = []
    radar = radar_figure(runs)
    texts += [t.get_text() for t in radar.axes[0].get_legend().get_texts()]
    heatmap = heatmap_figure(runs)
    texts += [t.get_text() for t in heatmap.axes[0].get_yticklabels()]
    scatter = scatter_figure(runs[0], refs)
    texts.append(scatter._suptitle.get_text())
    hostile = [t for t in texts if "evil" in t]
    assert len(hostile) == 3
    for text in hostile:
        assert not re.search("[\x00-\x1f\x7f\u202a-\u202e]", text), repr(text)
        assert "\\x1b" in text and "\\u202e" in text and "\\x00" in text and r"\$x\$" in text
