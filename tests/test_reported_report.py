"""Every number `mis-bench report` writes (report.json, report.md, report.html), checked against an
independent computation (tests/_independent.py: ANOVA ICC by hand, a Python loop over the seeded
resamples, np.percentile, counted p-values, ranks by hand) and the printed tables against report.json."""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import math
import re

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS

from _independent import TABLE2_PERCENT, close, expected_scores, paired_expected
from _leaderboard_helpers import VIDEO_IDS, make_references, make_results, noisy_predictions

N_BOOT = 120  # rescoring every run (--bootstrap)
N_COMPARISON = 150  # the comparison's CIs and paired tests (--comparison-bootstrap)
SEED = 5
# (model, modality, prompt style, noise, share unparsed, noise shared by a video's eight dimensions);
# files are read in this order.
RUNS = [
    ("org/alpha", "text", "direct", 0.8, 0.0, 0.0),
    ("org/alpha", "text", "cot", 0.35, 0.05, 0.0),
    # Shared noise barely moves each dimension's ICC but does not average out in the overall score: this
    # configuration has org/beta's higher mean ICC and its lower overall ICC.
    ("org/beta", "text", "direct", 0.1, 0.06, 0.35),
    ("org/beta", "audio+text", "direct", 0.6, 0.0, 0.0),
    ("baseline/gamma", "text", "direct", 1.0, 0.0, 0.0),
    ("org/delta", "video+text", "cot", 0.7, 0.03, 0.0),
    ("org/epsilon", "text", "cot", 0.4, 0.0, 0.0),  # ABC parsed on two videos only: no ABC, overall, mean ICC
    ("org/zeta", "text", "cot", 0.0, 0.0, 0.0),  # the same predictions as org/alpha's best: ties for 1st everywhere
]
TWIN, TWIN_OF = 7, 1
UNDEFINED_SYSTEM = "org/epsilon"


def _predictions(references, index, noise, unparsed, shared):
    predictions = noisy_predictions(references, noise, seed=100 + index, none_rate=unparsed)
    if shared:
        rng = np.random.default_rng(300 + index)
        offset = {video: rng.normal(0, shared) for video in VIDEO_IDS}
        predictions = {
            (v, d): None if p is None else float(np.clip(round(p + offset[v], 1), 1, 5))
            for (v, d), p in predictions.items()
        }
    if RUNS[index][0] == UNDEFINED_SYSTEM:
        predictions.update({(video, "abc"): None for video in VIDEO_IDS[2:]})
    return predictions


SUPERSCRIPT = {"\u00b9": 1, "\u00b2": 2, "\u00b3": 3}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The runs written as results files, the report written by the CLI, and what it printed."""
    root = tmp_path_factory.mktemp("report-numbers")
    references = make_references(VIDEO_IDS)
    gold = root / "gold.csv"
    with gold.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "score"])
        writer.writerows([video, dim, score] for (video, dim), score in sorted(references.items()))
    runs = []
    for i, (model, modality, style, noise, unparsed, shared) in enumerate(RUNS):
        if i == TWIN:
            predictions = runs[TWIN_OF]["predictions"]
        else:
            predictions = _predictions(references, i, noise, unparsed, shared)
        results = make_results(predictions, model=model, modality=modality, prompt_style=style)
        if i == 1:  # a results file whose parse rates are a claim, not what its predictions hold
            results["parse_rates"] = dict.fromkeys(DIMENSION_KEYS, 1.0)
        (root / "runs" / f"r{i}").mkdir(parents=True)
        (root / "runs" / f"r{i}" / "results.json").write_text(json.dumps(results))
        label = f"{model} · {modality} · {style}"
        runs.append(
            {
                "model": model,
                "modality": modality,
                "prompt_style": style,
                "label": label,
                "predictions": predictions,
                "expected": expected_scores(predictions, references, n_bootstrap=N_BOOT, seed=SEED),
            }
        )
    out = root / "out"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(
            [
                "report",
                str(root / "runs"),
                "--references",
                str(gold),
                "--bootstrap",
                str(N_BOOT),
                "--comparison-bootstrap",
                str(N_COMPARISON),
                "--seed",
                str(SEED),
                "--scatters",
                "none",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    return {
        "references": references,
        "runs": runs,
        "out": out,
        "printed": printed.getvalue(),
        "report": json.loads((out / "report.json").read_text()),
        "markdown": (out / "report.md").read_text(),
        "html": (out / "report.html").read_text(),
    }


def _best_per_system(runs):
    """Table 3's rule by hand: the highest overall ICC per system (first given wins a tie)."""
    best = {}
    for run in runs:
        if math.isnan(run["expected"]["overall"]["icc"]):  # an undefined overall ICC never wins
            continue
        current = best.get(run["model"])
        if current is None or run["expected"]["overall"]["icc"] > current["expected"]["overall"]["icc"]:
            best[run["model"]] = run
    return list(best.values())


def _competition_ranks(values):
    """1 = highest; equal values share a rank, the next is skipped; only 1..3 kept (fewer than 2: none)."""
    if sum(v is not None for v in values) < 2:
        return [None] * len(values)
    ranks = []
    for value in values:
        rank = None if value is None else 1 + sum(other is not None and other > value for other in values)
        ranks.append(rank if rank is not None and rank <= 3 else None)
    return ranks


def _columns(entry):
    expected = entry["expected"]
    return {
        **{key: expected["dimensions"][key]["icc"] for key in DIMENSION_KEYS},
        "overall": expected["overall"]["icc"],
        "mean": expected["mean_icc"],
    }


# ----------------------------------------------------------------------------- report.json


def test_report_json_configurations_best_and_ranks(made):
    report, runs = made["report"], made["runs"]
    assert [c["label"] for c in report["configurations"]] == [r["label"] for r in runs]  # systems adjacent already
    for got, run in zip(report["configurations"], runs, strict=True):
        expected = run["expected"]
        assert close(got["overall_icc"], expected["overall"]["icc"]), run["label"]
        assert close(got["mean_icc"], expected["mean_icc"]), run["label"]
        assert close(got["dimensions"], {k: expected["dimensions"][k]["icc"] for k in DIMENSION_KEYS}), run["label"]
    best = _best_per_system(runs)
    assert [(b["model"], b["modality"], b["prompt_style"]) for b in report["best_configuration"]] == [
        (b["model"], b["modality"], b["prompt_style"]) for b in best
    ]
    assert best[0]["prompt_style"] == "cot" and best[1]["modality"] == "audio+text"  # not the first configuration
    beta = [run["expected"] for run in runs if run["model"] == "org/beta"]
    assert beta[0]["mean_icc"] > beta[1]["mean_icc"] and beta[0]["overall"]["icc"] < beta[1]["overall"]["icc"]
    assert UNDEFINED_SYSTEM not in [b["model"] for b in best]
    assert report["table3"]["systems_without_overall_icc"] == [UNDEFINED_SYSTEM]
    for got, run in zip(report["best_configuration"], best, strict=True):
        assert close(got["overall_icc"], run["expected"]["overall"]["icc"])
        assert close(got["dimensions"], {k: run["expected"]["dimensions"][k]["icc"] for k in DIMENSION_KEYS})
    columns = [_columns(run) for run in best]
    for column in (*DIMENSION_KEYS, "overall", "mean"):
        want = _competition_ranks([c[column] for c in columns])
        assert [row["ranks"][column] for row in report["table3"]["rows"]] == want, column
        assert None in want  # five systems: the last two have no mark
    for row, run in zip(report["table3"]["rows"], best, strict=True):
        assert close(row["mean_icc"], run["expected"]["mean_icc"]) and row["label"] == run["label"]
    assert [row["n_configurations"] for row in report["table3"]["rows"]] == [2, 2, 1, 1, 1]
    overall_ranks = [row["ranks"]["overall"] for row in report["table3"]["rows"]]
    assert overall_ranks.count(1) == 2 and 2 not in overall_ranks and 3 in overall_ranks  # a tie skips 2nd


def test_report_json_comparison_and_paired_tests(made):
    comparison, runs, references = made["report"]["comparison"], made["runs"], made["references"]
    best = _best_per_system(runs)
    assert comparison["reference"]["label"] == best[0]["label"]
    assert (comparison["n_bootstrap"], comparison["seed"], comparison["rescored"]) == (N_COMPARISON, SEED, True)
    assert [s["label"] for s in comparison["systems"]] == [b["label"] for b in best]
    for system, run in zip(comparison["systems"], best, strict=True):
        want = expected_scores(run["predictions"], references, n_bootstrap=N_COMPARISON, seed=SEED)
        for key in DIMENSION_KEYS:
            assert close(
                system["dimensions"][key],
                {"icc": want["dimensions"][key]["icc"], "icc_ci": want["dimensions"][key]["icc_ci"]},
            ), key
        assert close(system["mean_icc"], want["mean_icc"]) and close(system["mean_icc_ci"], want["mean_icc_ci"])
        assert close(system["overall"], {"icc": want["overall"]["icc"], "icc_ci": want["overall"]["icc_ci"]})
    assert len(comparison["paired"]) == len(best) - 1
    for test, run in zip(comparison["paired"], best[1:], strict=True):
        # ICC(system) - ICC(reference): negative when the system is below the reference.
        want = paired_expected(
            run["predictions"], best[0]["predictions"], references, n_bootstrap=N_COMPARISON, seed=SEED
        )
        assert test["systems"] == {"a": run["label"], "b": best[0]["label"]}
        blocks = [*test["dimensions"].values(), test["overall"], test["mean_icc"]]
        if all(block["delta"] == 0.0 for block in blocks):  # the twin of the reference: every difference is 0,
            for block in blocks:  # a zero-width CI and its p-value are withheld (mis_icc_metric.reporting_floor)
                assert (
                    block["delta_ci"] is None
                    and block["p_value"] is None
                    and "zero width" in block["withheld"]["delta_ci"]
                )
            continue
        assert close(test["dimensions"], want["dimensions"]), run["label"]
        assert close(test["overall"], want["overall"]) and close(test["mean_icc"], want["mean_icc"]), run["label"]
    deltas = [test["overall"]["delta"] for test in comparison["paired"]]
    assert deltas[-1] == 0.0 and all(delta < 0 for delta in deltas[:-1])  # the twin of the reference ties it
    assert comparison["paired"][-1]["overall"]["withheld"]["p_value"]


def test_report_cli_prints_the_counts(made):
    line = made["printed"].splitlines()[0]
    match = re.fullmatch(r"Report of (\d+) run\(s\): (\S+) \(and report.md, report.json, (\d+) figure\(s\)\)", line)
    assert match and int(match.group(1)) == len(RUNS) and int(match.group(3)) == 2
    assert match.group(2) == str(made["out"] / "report.html")


# ----------------------------------------------------------------------------- report.md and report.html

PERCENT = r"-?\d+\.\d"
MISSING = "\u2013"  # what every table shows for an undefined number


def _shows_percent(text, value):
    """One decimal of the value in percent, rounded to nearest."""
    return bool(re.fullmatch(PERCENT, text)) and abs(float(text) - 100 * value) <= 0.05 + 1e-9


def _shows_ci(text, ci):
    match = re.fullmatch(rf"\[({PERCENT}), ({PERCENT})\]", text)
    return bool(match) and _shows_percent(match.group(1), ci[0]) and _shows_percent(match.group(2), ci[1])


def _split_md(line):
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _md_tables(markdown):
    """caption -> rows of cells (header first), for each `**caption**` followed by a table."""
    tables, lines = {}, markdown.splitlines()
    for i, line in enumerate(lines):
        match = re.fullmatch(r"\*\*(.+)\*\*", line)
        if match and i + 2 < len(lines) and lines[i + 2].startswith("| "):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("| "):
                    break
                if not row.startswith("| ---"):
                    rows.append(_split_md(row))
            tables[match.group(1)] = rows
    return tables


def _cell(text):
    """(value text, bold, rank) of a Markdown number cell: `**12.3¹**` -> ("12.3", True, 1)."""
    bold = text.startswith("**") and text.endswith("**")
    text = text.strip("*").strip("_")
    rank = SUPERSCRIPT.get(text[-1:]) if text else None
    return (text[:-1] if rank else text), bold, rank


def _value_and_ci(text):
    value, _, ci = text.partition(" ")
    return value, ci


def test_table3_view(made):
    rows = _md_tables(made["markdown"])["ICC(3,1) % of each system's best configuration"]
    best = _best_per_system(made["runs"])
    header, body, ceiling = rows[0], rows[1:-1], rows[-1]
    assert header == ["System", "Best configuration", *(d.abbreviation for d in DIMENSIONS), "Overall", "Mean ICC"]
    ranks = {
        column: _competition_ranks([_columns(run)[column] for run in best])
        for column in (*DIMENSION_KEYS, "overall", "mean")
    }
    for r, (row, run) in enumerate(zip(body, best, strict=True)):
        assert html.unescape(row[0].replace("\\", "")) == run["model"]
        for c, column in enumerate((*DIMENSION_KEYS, "overall", "mean")):
            value, bold, rank = _cell(row[2 + c])
            assert _shows_percent(value, _columns(run)[column]), (run["label"], column)
            assert rank == ranks[column][r] and bold == (rank == 1), (run["label"], column)
    assert _cell(ceiling[0])[0] == "Human ceiling (Table 2)"
    for dim, cell in zip(DIMENSIONS, ceiling[2:10], strict=True):
        assert float(_cell(cell)[0]) == TABLE2_PERCENT[dim.key][0]
    assert _shows_percent(_cell(ceiling[-1])[0], np.mean([v[0] for v in TABLE2_PERCENT.values()]) / 100)


def test_figure2_view(made):
    rows = _md_tables(made["markdown"])["ICC(3,1) % [95% CI] of every configuration (best per column in bold)"]
    runs = made["runs"]
    body, mean_row, ceiling = rows[1:-2], rows[-2], rows[-1]
    assert len(body) == len(runs)
    columns = [[run["expected"]["dimensions"][k] for run in runs] for k in DIMENSION_KEYS]
    columns.append([run["expected"]["overall"] for run in runs])
    for r, (row, run) in enumerate(zip(body, runs, strict=True)):
        assert html.unescape(row[0].replace("\\", "")) == run["label"]
        for c, column in enumerate(columns):
            text, bold, _ = _cell(row[1 + c])
            if math.isnan(column[r]["icc"]):
                assert text == MISSING and not bold, (run["label"], c)
                continue
            value, ci = _value_and_ci(text)
            assert _shows_percent(value, column[r]["icc"]) and _shows_ci(ci, column[r]["icc_ci"]), (run["label"], c)
            assert bold == (column[r]["icc"] == np.nanmax([e["icc"] for e in column])), (run["label"], c)
        text, bold, _ = _cell(row[-1])
        mean = run["expected"]["mean_icc"]
        assert text == MISSING if math.isnan(mean) else _shows_percent(text, mean)
        assert bold == (mean == np.nanmax([x["expected"]["mean_icc"] for x in runs]))
    assert any(math.isnan(run["expected"]["dimensions"]["abc"]["icc"]) for run in runs)
    for key, cell in zip(DIMENSION_KEYS, mean_row[1:9], strict=True):
        match = re.fullmatch(rf"({PERCENT}) \(n=(\d+)\)", _cell(cell)[0])
        defined = [
            run["expected"]["dimensions"][key]["icc"]
            for run in runs
            if not math.isnan(run["expected"]["dimensions"][key]["icc"])
        ]
        assert match and int(match.group(2)) == len(defined)
        assert _shows_percent(match.group(1), np.mean(defined))
    for dim, cell in zip(DIMENSIONS, ceiling[1:9], strict=True):
        icc, low, high = TABLE2_PERCENT[dim.key]
        assert _cell(cell)[0] == f"{icc:.1f} [{low:.1f}, {high:.1f}]"


def test_comparison_and_paired_tables(made):
    tables = _md_tables(made["markdown"])
    comparison = made["report"]["comparison"]
    rows = tables["ICC(3,1) % [95% CI] per dimension (best per row in bold)"]
    systems = comparison["systems"]
    assert [html.unescape(cell.replace("\\", "")) for cell in rows[0][1:]] == [s["label"] for s in systems]
    lines = [
        (d.abbreviation, [(s["dimensions"][d.key]["icc"], s["dimensions"][d.key]["icc_ci"]) for s in systems])
        for d in DIMENSIONS
    ]
    lines.append(("Mean over dimensions", [(s["mean_icc"], s["mean_icc_ci"]) for s in systems]))
    lines.append(("Overall", [(s["overall"]["icc"], s["overall"]["icc_ci"]) for s in systems]))
    assert [row[0] for row in rows[1:]] == [name for name, _ in lines]
    for row, (name, values) in zip(rows[1:], lines, strict=True):
        top = max(icc for icc, _ in values)
        for cell, (icc, ci) in zip(row[1:], values, strict=True):
            text, bold, _ = _cell(cell)
            value, shown_ci = _value_and_ci(text)
            assert _shows_percent(value, icc) and _shows_ci(shown_ci, ci) and bold == (icc == top), name
    rows = tables["Paired bootstrap tests against the reference: difference in points [95% CI] p-value"]
    assert len(rows) - 1 == len(comparison["paired"])
    for row, test in zip(rows[1:], comparison["paired"], strict=True):
        blocks = [test["dimensions"][k] for k in DIMENSION_KEYS] + [test["overall"], test["mean_icc"]]
        for cell, block in zip(row[1:], blocks, strict=True):
            if block["withheld"]:  # the rule's reason stands where the CI and the p-value would
                assert cell == f"+0.0 (withheld: {block['withheld']['delta_ci'].split(';')[0]}) p withheld", cell
                continue
            match = re.fullmatch(r"([+-]\d+\.\d) (\[[^\]]+\]) (p<0\.001|p=\d\.\d{3})", cell)
            assert match, cell
            assert _shows_percent(match.group(1).lstrip("+"), block["delta"])
            assert match.group(1)[0] == ("-" if block["delta"] < 0 else "+")
            assert _shows_ci(match.group(2), block["delta_ci"])
            p_text = match.group(3)
            if p_text == "p<0.001":
                assert block["p_value"] < 0.001
            else:
                assert abs(float(p_text[2:]) - block["p_value"]) <= 0.0005 + 1e-12 and block["p_value"] >= 0.0005


def test_mse_and_rate_tables(made):
    tables = _md_tables(made["markdown"])
    runs = made["runs"]
    rows = tables["MSE (lower is better)"]
    columns = [[run["expected"]["dimensions"][k]["mse"] for run in runs] for k in DIMENSION_KEYS]
    columns.append([run["expected"]["overall"]["mse"] for run in runs])
    for r, row in enumerate(rows[1:]):
        for c, column in enumerate(columns):
            text, bold, _ = _cell(row[1 + c])
            assert re.fullmatch(r"\d+\.\d{3}", text) and abs(float(text) - column[r]) <= 0.0005 + 1e-12
            assert bold == (column[r] == min(column))
    (rows,) = [table for caption, table in tables.items() if caption.startswith("Parse rate per dimension")]
    assert rows[0][-5:] == ["Unparsed", "Truncated", "Failed", "Excluded (overall)", "n (overall)"]
    for row, run in zip(rows[1:], runs, strict=True):
        expected = run["expected"]
        for cell, key in zip(row[1:9], DIMENSION_KEYS, strict=True):
            assert cell.endswith("%") and _shows_percent(cell[:-1], expected["dimensions"][key]["parse_rate"]), cell
        assert row[12].endswith("%") and _shows_percent(row[12][:-1], expected["overall"]["excluded_rate"])
        assert int(row[13]) == expected["overall"]["n"]
    claimed = rows[2]  # the run whose results file claims 100% parsed: the report shows what it holds
    assert any(float(cell[:-1]) < 100 for cell in claimed[1:9])


def _html_tables(page):
    tables = []
    for table in re.findall(r"<table.*?</table>", page, re.S):
        rows = []
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S):
            cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
            rows.append([html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<sup>.*?</sup>", "", c))) for c in cells])
        tables.append(rows)
    return tables


def _plain(text):
    return re.sub(r"\s+", "", text)


def test_html_tables_show_the_markdown_numbers(made):
    md_tables = list(_md_tables(made["markdown"]).values())
    html_tables = _html_tables(made["html"])
    assert len(md_tables) == len(html_tables) == 8  # the six of the paper's views, the agreement and halo tables
    for md_rows, html_rows in zip(md_tables, html_tables, strict=True):
        assert len(md_rows) == len(html_rows)
        for md_row, html_row in zip(md_rows, html_rows, strict=True):
            md_cells = [_plain(html.unescape(_cell(c)[0].replace("\\", ""))) for c in md_row]
            assert md_cells == [_plain(c) for c in html_row]
