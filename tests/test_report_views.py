"""The paper's views in `mis-bench report`: Table 3 (best configuration per system, top three per
column), Figure 2 (configuration x dimension heatmap) and Table 4 / Figure 4 (comparison on one
split with CIs and paired tests), in report.json, Markdown and HTML."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from eval_scripts import ReportOptions, write_report
from eval_scripts.cli import main as cli_main
from eval_scripts.report.comparison import compare_systems
from eval_scripts.report.plots import heatmap_figure
from eval_scripts.report.table import run_views, table3_table, to_html, to_markdown
from eval_scripts.report.views import best_configurations, rank_table, top_ranks
from mis_bench_dataset import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import UsageError
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, paired_comparison, score_predictions

from _independent import anova_icc as _icc3_1
from _independent import pingouin_icc
from _leaderboard_helpers import VIDEO_IDS, contract_scores, make_references, make_results, noisy_predictions

CONFIGURATIONS = [("text", "direct"), ("text", "cot"), ("audio+video+text", "direct"), ("video+text", "cot")]
# Noise per configuration: each system's cleanest configuration sits at a different position.
SYSTEMS = {"org/alpha": (0.9, 0.3, 0.6, 0.5), "org/beta": (0.8, 0.7, 0.5, 0.25), "baseline/gamma": (0.4, 1.0, 1.2, 0.9)}


def test_hand_icc_agrees_with_pingouin():
    rng = np.random.default_rng(3)
    gold = rng.normal(3.5, 0.5, 40)
    pred = gold + rng.normal(0.2, 0.4, 40)
    assert _icc3_1(pred, gold) == pytest.approx(pingouin_icc(pred, gold))


def _expected_iccs(predictions, references):
    """Overall ICC (per-video mean of the 8 predictions vs mean of the 8 gold scores, videos with any
    unparsed dimension dropped) and per-dimension ICCs, computed independently of the metric."""
    videos = sorted({v for v, _ in references})
    complete = [v for v in videos if all(predictions[(v, d)] is not None for d in DIMENSION_KEYS)]
    overall = _icc3_1(
        np.array([np.mean([predictions[(v, d)] for d in DIMENSION_KEYS]) for v in complete]),
        np.array([np.mean([references[(v, d)] for d in DIMENSION_KEYS]) for v in complete]),
    )
    dims = {}
    for d in DIMENSION_KEYS:
        parsed = [v for v in videos if predictions[(v, d)] is not None]
        dims[d] = _icc3_1(
            np.array([predictions[(v, d)] for v in parsed]), np.array([references[(v, d)] for v in parsed])
        )
    return overall, dims


@pytest.fixture(scope="module")
def expected_best(grid):
    return _expected_best(*grid)


@pytest.fixture(scope="module")
def grid():
    """(references, [(model, modality, prompt_style, predictions)]) for 3 systems x 4 configurations."""
    references = make_references(VIDEO_IDS)
    runs = []
    for s, (model, noises) in enumerate(SYSTEMS.items()):
        for c, ((modality, style), noise) in enumerate(zip(CONFIGURATIONS, noises, strict=True)):
            runs.append((model, modality, style, noisy_predictions(references, noise, seed=10 * s + c, none_rate=0.03)))
    # org/delta: noise shared by a video's eight dimensions barely moves each dimension's ICC but does not
    # average out in the overall score, so its best overall configuration is not its best mean-ICC one.
    rng = np.random.default_rng(99)
    shared = {video: rng.normal(0, 0.45) for video in VIDEO_IDS}
    correlated = {(v, d): float(np.clip(round(g + shared[v], 1), 1, 5)) for (v, d), g in references.items()}
    runs.append(("org/delta", "text", "direct", correlated))
    runs.append(("org/delta", "audio+text", "direct", noisy_predictions(references, 0.55, seed=98)))
    return references, runs


def _expected_best(references, runs):
    expected = {}
    for model, modality, style, predictions in runs:
        overall, dims = _expected_iccs(predictions, references)
        if model not in expected or overall > expected[model]["overall_icc"]:
            expected[model] = {
                "model": model,
                "modality": modality,
                "prompt_style": style,
                "overall_icc": overall,
                "dimensions": dims,
            }
    return list(expected.values())


def _check_best(actual, expected):
    assert [e["model"] for e in actual] == [e["model"] for e in expected]
    for got, want in zip(actual, expected, strict=True):
        assert set(got) == {"model", "modality", "prompt_style", "overall_icc", "dimensions"}
        assert (got["modality"], got["prompt_style"]) == (want["modality"], want["prompt_style"])
        assert got["overall_icc"] == pytest.approx(want["overall_icc"], rel=1e-9, abs=1e-12)
        assert got["dimensions"] == pytest.approx(want["dimensions"], rel=1e-9, abs=1e-12)


def test_best_configuration_follows_the_table3_rule_via_the_cli(tmp_path, grid, expected_best, capsys):
    references, runs = grid
    gold = tmp_path / "gold.csv"
    with gold.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "score"])
        writer.writerows([video, dim, score] for (video, dim), score in sorted(references.items()))
    for i, (model, modality, style, predictions) in enumerate(runs):
        (tmp_path / "runs" / f"r{i:02d}").mkdir(parents=True)
        (tmp_path / "runs" / f"r{i:02d}" / "results.json").write_text(
            json.dumps(make_results(predictions, model=model, modality=modality, prompt_style=style))
        )
    out = tmp_path / "rep"
    assert (
        cli_main(
            [
                "report",
                str(tmp_path / "runs"),
                "--references",
                str(gold),
                "--bootstrap",
                "0",
                "--comparison-bootstrap",
                "100",
                "--scatters",
                "none",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    report = json.loads((out / "report.json").read_text())
    assert summary["json"] == str(out / "report.json") and len(summary["figures"]) == 2
    expected = expected_best
    # The grid is built so that the winners are not simply the first configuration of each system.
    assert {(e["modality"], e["prompt_style"]) for e in expected} != {CONFIGURATIONS[0]}
    delta = [_expected_iccs(p, references) for m, _, _, p in runs if m == "org/delta"]
    assert delta[0][0] < delta[1][0] and np.mean(list(delta[0][1].values())) > np.mean(list(delta[1][1].values()))
    _check_best(report["best_configuration"], expected)
    assert len(report["configurations"]) == len(runs)
    assert report["comparison"]["reference"]["model"] == "org/alpha"
    assert "first system given" in report["comparison"]["reference_rule"]


def test_tie_rule_and_undefined_overall_never_wins():
    refs = make_references(VIDEO_IDS[:5])
    predictions = noisy_predictions(refs, 0.3, seed=0)

    def run(model, modality, overall, dims):
        return make_results(
            predictions,
            model=model,
            modality=modality,
            scores=contract_scores({k: dims for k in DIMENSION_KEYS}, overall=overall),
        )

    results = [
        run("tie", "text", 0.4, 0.10),
        run("tie", "audio+text", 0.4, 0.20),
        run("tie", "video+text", 0.4, 0.20),
        run("undef", "text", None, 0.9),
        run("undef", "audio+text", -0.2, 0.0),
        run("none", "text", None, 0.5),
    ]
    best, undefined = best_configurations(run_views(results))
    # Equal overall: the higher mean ICC wins; equal again: the run given first.
    assert [(b.run.model, b.run.modality) for b in best] == [("tie", "audio+text"), ("undef", "audio+text")]
    assert [b.n_configurations for b in best] == [3, 2]
    assert undefined == ["none"]


def test_top_ranks_with_ties_and_undefined_values():
    assert top_ranks([0.5, 0.5, 0.3, 0.2, None]) == [1, 1, 3, None, None]
    assert top_ranks([0.1, 0.4, 0.4, 0.4, 0.9]) == [None, 2, 2, 2, 1]
    assert top_ranks([0.3, 0.2, 0.1, -0.5]) == [1, 2, 3, None]
    assert top_ranks([0.3, None]) == [None, None]
    assert top_ranks([float("nan"), 0.2, 0.1]) == [None, 1, 2]


def test_table3_marks_first_second_third_per_column():
    refs = make_references(VIDEO_IDS[:5])
    predictions = noisy_predictions(refs, 0.3, seed=0)
    iccs = {"a": 0.30, "b": 0.30, "c": 0.10, "d": 0.05}
    results = [
        make_results(
            predictions,
            model=m,
            scores=contract_scores(
                {k: (v if k != "abc" else (0.5 if m == "d" else None)) for k in DIMENSION_KEYS}, overall=v
            ),
        )
        for m, v in iccs.items()
    ]
    best, _ = best_configurations(run_views(results))
    ranks = rank_table(best)
    assert [r["verbal_fluency"] for r in ranks] == [1, 1, 3, None]
    assert [r["abc"] for r in ranks] == [None, None, None, None]  # one defined value: nothing to rank
    table = table3_table(best, ranks)
    md = to_markdown(table)
    assert md.splitlines()[2].count("**30.0¹**") == 10 - 1  # 8 dims + overall + mean, minus the undefined ABC
    assert "10.0³" in md.splitlines()[4] and "5.0" in md.splitlines()[5] and "5.0³" not in md
    html = to_html(table)
    assert html.count('class="rank1"') == 2 * 9 and html.count('class="rank3"') == 9
    assert html.count('class="rank2"') == 0  # 1, 1, 3: the tie skips 2nd


def test_comparison_matches_score_predictions_and_paired_comparison(tmp_path, grid, expected_best):
    references, runs = grid
    results = [
        make_results(
            p,
            model=m,
            modality=mod,
            prompt_style=s,
            scores=json_safe(score_predictions(p, references, resampling=ResamplingOptions(n_bootstrap=0))),
        )
        for m, mod, s, p in runs
    ]
    files = write_report(
        results,
        tmp_path,
        ReportOptions(reference="org/beta", comparison_bootstrap=300, seed=7, scatters="none"),
        references=references,
    )
    comparison = json.loads(files.json.read_text())["comparison"]
    expected = {e["model"]: e for e in expected_best}
    compared = [s["model"] for s in comparison["systems"]]
    assert compared == ["org/beta", "org/alpha", "baseline/gamma", "org/delta"]  # the reference first
    by_key = {(m, mod, s): p for m, mod, s, p in runs}
    chosen = {s["model"]: by_key[(s["model"], s["modality"], s["prompt_style"])] for s in comparison["systems"]}
    for system in comparison["systems"]:
        assert (system["modality"], system["prompt_style"]) == (
            expected[system["model"]]["modality"],
            expected[system["model"]]["prompt_style"],
        )
        want = json_safe(
            score_predictions(
                chosen[system["model"]], references, resampling=ResamplingOptions(n_bootstrap=300, seed=7)
            )
        )
        for key in DIMENSION_KEYS:
            assert system["dimensions"][key] == {
                "icc": want["dimensions"][key]["icc"],
                "icc_ci": want["dimensions"][key]["icc_ci"],
                "withheld": {k: v for k, v in want["dimensions"][key]["withheld"].items() if k == "icc_ci"},
            }
        assert system["mean_icc_ci"] == want["mean_icc_ci"] and system["overall"]["icc_ci"] == want["overall"]["icc_ci"]
    assert len(comparison["paired"]) == 3
    for test, model in zip(comparison["paired"], ["org/alpha", "baseline/gamma", "org/delta"], strict=True):
        want = json_safe(
            paired_comparison(
                chosen[model],
                chosen["org/beta"],
                references,
                resampling=ResamplingOptions(n_bootstrap=300, seed=7),
                names=(test["systems"]["a"], test["systems"]["b"]),
            )
        )
        assert test == want
        assert test["systems"]["a"].startswith(model) and test["systems"]["b"].startswith("org/beta")
    md = files.markdown.read_text()
    p_value = comparison["paired"][0]["dimensions"]["hope_and_pe"]["p_value"]
    assert (f"p={p_value:.3f}" if p_value >= 0.001 else "p<0.001") in md
    assert "300 resamples (seed 7)" in md


def test_comparison_skips_other_splits_and_needs_labels_for_tests(grid):
    references, runs = grid
    results = []
    first_of_each = runs[: len(SYSTEMS) * len(CONFIGURATIONS) : len(CONFIGURATIONS)]  # alpha, beta, gamma
    for (model, modality, style, predictions), split, fingerprint in zip(
        first_of_each, ["test", "validation", "test"], ["abc123", "abc123", "other"], strict=True
    ):
        obj = make_results(
            predictions,
            model=model,
            modality=modality,
            prompt_style=style,
            split=split,
            scores=json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=50))),
        )
        obj["dataset"]["fingerprint"] = fingerprint
        results.append(obj)
    views = run_views(results)
    best, _ = best_configurations(views)
    comparison = compare_systems(views, best, references=None)
    assert [run.model for run in comparison.runs] == ["org/alpha"]
    reasons = [reason for _, reason in comparison.skipped]
    assert "split 'validation'" in reasons[0] and "(SYNTHETIC, other)" in reasons[1]  # named, the fingerprint second
    assert comparison.paired == [] and "--references" in comparison.notes[0] and "50 resamples" in comparison.notes[0]
    with pytest.raises(UsageError, match="neither a results file nor a system"):
        compare_systems(views, best, reference="org/nobody")


def test_reference_by_results_file(tmp_path, grid):
    references, runs = grid
    results, sources = [], []
    for i, (model, modality, style, predictions) in enumerate(runs[:8]):
        path = tmp_path / f"r{i}.json"
        path.write_text("{}")
        sources.append(str(path))
        results.append(
            make_results(
                predictions,
                model=model,
                modality=modality,
                prompt_style=style,
                scores=json_safe(
                    score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0))
                ),
            )
        )
    views = run_views(results, sources)
    best, _ = best_configurations(views)
    comparison = compare_systems(views, best, references=references, reference=sources[5], n_bootstrap=20)
    assert comparison.reference.source == sources[5] and comparison.runs[0].source == sources[5]
    assert [run.model for run in comparison.runs] == ["org/beta", "org/alpha"]
    stray = tmp_path / "stray.json"
    stray.write_text("{}")
    with pytest.raises(UsageError, match="not among the results"):
        compare_systems(views, best, reference=str(stray))


def test_heatmap_holds_every_configuration_in_percent_centred_at_zero():
    refs = make_references(VIDEO_IDS[:5])
    predictions = noisy_predictions(refs, 0.3, seed=0)
    a = {k: 0.1 * i - 0.2 for i, k in enumerate(DIMENSION_KEYS)}
    b = dict(a, abc=None)
    runs = run_views(
        [
            make_results(predictions, model="m", scores=contract_scores(a, overall=0.1)),
            make_results(predictions, model="n$x$", modality="audio+text", scores=contract_scores(b, overall=0.2)),
        ]
    )
    fig = heatmap_figure(runs)
    ax = fig.axes[0]
    image = ax.images[0]
    expected = np.array(
        [[100 * a[k] for k in DIMENSION_KEYS], [np.nan if b[k] is None else 100 * b[k] for k in DIMENSION_KEYS]]
    )
    np.testing.assert_allclose(np.ma.filled(image.get_array(), np.nan), expected)
    assert image.norm.vcenter == 0 and image.norm(0.0) == pytest.approx(0.5)
    texts = [t.get_text() for t in ax.texts]
    assert texts[:8] == [f"{100 * a[k]:.1f}" for k in DIMENSION_KEYS] and texts[8 + 6] == "–"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m · text · direct", r"n\$x\$ · audio+text · direct"]


def _md_row_cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line.strip())) - 2


def test_three_views_in_markdown_and_html_with_user_text_escaped(tmp_path, grid):
    references, runs = grid
    names = {
        "org/alpha": "<script>x</script>",
        "org/beta": "a|b",
        "baseline/gamma": "*bold* [l](http://e)",
        "org/delta": "_u_ `c`",
    }
    results = [
        make_results(
            p,
            model=names[m],
            modality=mod,
            prompt_style=s,
            scores=json_safe(score_predictions(p, references, resampling=ResamplingOptions(n_bootstrap=0))),
        )
        for m, mod, s, p in runs
    ]
    files = write_report(
        results, tmp_path, ReportOptions(comparison_bootstrap=50, title="Report <b>of</b> a|b"), references=references
    )
    md, page = files.markdown.read_text(), files.html.read_text()
    for heading in ("Table 3 view", "Figure 2 view", "Table 4 / Figure 4 layout"):
        assert heading in md and heading in page
    assert "report-heatmap.png" in md and "report-radar.png" in md
    # heatmap, radar, and per best configuration its scatter, Bland-Altman, calibration and histograms
    assert page.count("data:image/png;base64,") == 2 + 4 * len(names)
    assert "<script>x" not in md and "<script>x" not in page and "<b>of" not in page and "<b>of" not in md
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "&lt;script&gt;x&lt;/script&gt;" in md
    assert "[l](http" not in md and r"\*bold\* \[l\](http://e)" in md  # no emphasis, no live link
    lines = md.splitlines()
    width = None
    for line, following in zip(lines, lines[1:] + [""], strict=True):
        if not line.startswith("| "):
            width = None
            continue
        if width is None:
            assert following.startswith("| ---")
            width = _md_row_cells(line)
        assert _md_row_cells(line) == width, line
    assert '<div class="table-wrap">' in page and "overflow-x:auto" in page
    report = json.loads(files.json.read_text())
    assert {e["model"] for e in report["best_configuration"]} == set(names.values())


def test_report_runs_from_python_writes_what_the_command_writes(tmp_path, grid):
    """`eval_scripts.report_runs` is the command's one call: the same report.json from the same inputs."""
    from eval_scripts import ReportDone, report_runs

    references, runs = grid
    gold = tmp_path / "gold.csv"
    with gold.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "score"])
        writer.writerows([video, dim, score] for (video, dim), score in sorted(references.items()))
    for i, (model, modality, style, predictions) in enumerate(runs[:4]):
        (tmp_path / "runs" / f"r{i:02d}").mkdir(parents=True)
        (tmp_path / "runs" / f"r{i:02d}" / "results.json").write_text(
            json.dumps(make_results(predictions, model=model, modality=modality, prompt_style=style))
        )
    flags = ["--references", str(gold), "--bootstrap", "0", "--comparison-bootstrap", "100", "--scatters", "none"]
    assert cli_main(["report", str(tmp_path / "runs"), *flags, "--out", str(tmp_path / "cli"), "--json"]) == 0
    options = ReportOptions(comparison_bootstrap=100, scatters="none", seed=0)
    done = report_runs(
        [tmp_path / "runs"],
        tmp_path / "py",
        options,
        references=gold,
        split="test",
        resampling=ResamplingOptions(n_bootstrap=0, seed=0),
    )
    assert isinstance(done, ReportDone) and done.rescored and len(done.sources) == 4
    from_cli = json.loads((tmp_path / "cli" / "report.json").read_text())
    from_python = json.loads(done.written.json.read_text())
    assert from_python == from_cli
    with pytest.raises(UsageError, match="--raters needs --references"):
        report_runs([tmp_path / "runs"], tmp_path / "py2", options, split="test", raters=gold)
