"""Every number `mis-bench leaderboard` writes (leaderboard.json, leaderboard.csv, index.html) and
prints, checked against an independent computation (tests/_independent.py: ANOVA ICC by hand, a
Python loop over the seeded resamples, np.percentile, counted p-values, the ranking by hand), published at
three significant digits (`close_published`: within half a unit of the last digit)."""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import re

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS

from _independent import TABLE2_PERCENT, close, close_published, expected_scores, paired_expected
from _leaderboard_helpers import VIDEO_IDS, make_references, make_results, noisy_predictions

N_BOOT = 150
SEED = 9
# file name -> (model, noise, share unparsed); the file order is not the ranking. Ranked entries answer every
# pair (an entry with a parse failure is listed unranked: tests/test_leaderboard_hostile.py).
SUBMISSIONS = {
    "a_mid.json": ("org/mid", 0.55, 0.0),
    "b_weak.json": ("org/weak", 0.9, 0.0),
    "c_strong.json": ("org/strong", 0.3, 0.0),
}
PERCENT = r"-?\d+\.\d"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("leaderboard-numbers")
    references = make_references(VIDEO_IDS, seed=4)
    gold = root / "gold.csv"
    with gold.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "score"])
        writer.writerows([video, dim, score] for (video, dim), score in sorted(references.items()))
    folder = root / "submissions"
    folder.mkdir()
    systems = {}
    for i, (name, (model, noise, unparsed)) in enumerate(SUBMISSIONS.items()):
        systems[name] = noisy_predictions(references, noise, seed=200 + i, none_rate=unparsed)
        (folder / name).write_text(json.dumps(make_results(systems[name], model=model)))
    (folder / "d_broken.json").write_text("{")
    out = root / "out"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert (
            main(
                [
                    "leaderboard",
                    str(folder),
                    "--references",
                    str(gold),
                    "--bootstrap",
                    str(N_BOOT),
                    "--seed",
                    str(SEED),
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
    fully_parsed = [
        set(v for v in VIDEO_IDS if all(p[(v, d)] is not None for d in DIMENSION_KEYS)) for p in systems.values()
    ]
    common = sorted(set.intersection(*fully_parsed))
    expected = {name: expected_scores(p, references, n_bootstrap=N_BOOT, seed=SEED) for name, p in systems.items()}
    order = sorted(expected, key=lambda name: -expected[name]["overall"]["icc"])
    return {
        "references": references,
        "systems": systems,
        "expected": expected,
        "order": order,
        "common": common,
        "out": out,
        "printed": printed.getvalue(),
        "board": json.loads((out / "leaderboard.json").read_text()),
    }


def test_scores_ranks_and_common_set(made):
    board, expected, order = made["board"], made["expected"], made["order"]
    assert order == ["c_strong.json", "a_mid.json", "b_weak.json"]
    assert [e["file"] for e in board["entries"]] == order and [e["rank"] for e in board["entries"]] == [1, 2, 3]
    assert (board["n_videos"], board["n_common_videos"]) == (len(VIDEO_IDS), len(made["common"]))
    assert board["n_common_videos"] == len(VIDEO_IDS)  # every ranked entry answers every video
    assert (board["n_bootstrap"], board["seed"]) == (N_BOOT, SEED)
    for entry in board["entries"]:
        want = expected[entry["file"]]
        scores = entry["scores"]
        for key in DIMENSION_KEYS:
            assert close_published(scores["dimensions"][key], want["dimensions"][key]), (entry["file"], key)
            assert close_published(entry["parse_rates"][key], want["dimensions"][key]["parse_rate"])
        assert close_published(scores["overall"], want["overall"]) and scores["overall"]["excluded_rate"] == 0
        assert close_published(scores["mean_icc"], want["mean_icc"])
        assert close_published(scores["mean_icc_ci"], want["mean_icc_ci"])
    for key, (icc, low, high) in TABLE2_PERCENT.items():
        assert close(board["human_ceiling"][key], {"icc": icc / 100, "icc_ci": [low / 100, high / 100]})
    assert [r["file"] for r in board["rejected"]] == ["d_broken.json"]


def test_p_values_against_the_leader(made):
    board, systems, references = made["board"], made["systems"], made["references"]
    leader = board["entries"][0]
    assert leader["vs_leader"] is None
    for entry in board["entries"][1:]:
        # leader minus entry: positive when the leader is ahead.
        want = paired_expected(
            systems[leader["file"]], systems[entry["file"]], references, n_bootstrap=N_BOOT, seed=SEED
        )
        got = entry["vs_leader"]
        assert close_published(
            got,
            {
                "p_value": want["overall"]["p_value"],
                "delta": want["overall"]["delta"],
                "delta_ci": want["overall"]["delta_ci"],
                "n": want["overall"]["n"],
                "mean_icc_p_value": want["mean_icc"]["p_value"],
                "dimension_p_values": {k: v["p_value"] for k, v in want["dimensions"].items()},
            },
        )
        assert got["delta"] > 0


def test_csv_holds_the_json_numbers(made):
    board = made["board"]
    with (made["out"] / "leaderboard.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(board["entries"])

    def number(text):
        return None if text == "" else float(text)

    for row, entry in zip(rows, board["entries"], strict=True):
        scores, overall = entry["scores"], entry["scores"]["overall"]
        assert int(row["rank"]) == entry["rank"] and row["file"] == entry["file"]
        assert number(row["overall_icc"]) == overall["icc"]
        assert [number(row["overall_ci_low"]), number(row["overall_ci_high"])] == overall["icc_ci"]
        assert number(row["overall_mse"]) == overall["mse"] and number(row["excluded_rate"]) == overall["excluded_rate"]
        assert number(row["mean_icc"]) == scores["mean_icc"]
        assert number(row["p_vs_leader"]) == (entry["vs_leader"] or {}).get("p_value")
        for key in DIMENSION_KEYS:
            block = scores["dimensions"][key]
            assert number(row[f"{key}_icc"]) == block["icc"] and number(row[f"{key}_mse"]) == block["mse"]
            assert [number(row[f"{key}_ci_low"]), number(row[f"{key}_ci_high"])] == block["icc_ci"]
            assert number(row[f"{key}_parse_rate"]) == entry["parse_rates"][key]


def _shows_percent(text, value):
    return bool(re.fullmatch(PERCENT, text)) and abs(float(text) - 100 * value) <= 0.05 + 1e-9


def _shows_ci(low, high, ci):
    return _shows_percent(low, ci[0]) and _shows_percent(high, ci[1])


def _shows_number(text, value, digits):
    return bool(re.fullmatch(rf"\d+\.\d{{{digits}}}", text)) and abs(float(text) - value) <= 0.5 * 10**-digits + 1e-12


def test_page_shows_the_json_numbers(made):
    board = made["board"]
    page = (made["out"] / "index.html").read_text()
    embedded = page.split('id="leaderboard-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded) == board
    for entry in board["entries"]:
        row = re.search(rf'<tr class="entry" data-id="e{entry["rank"]}">(.*?)</tr>', page).group(1)
        cell = r'<td data-key="([^"]+)" data-value="([^"]*)"[^>]*>(.*?)</td>'
        cells = {key: (html.unescape(value), html.unescape(text)) for key, value, text in re.findall(cell, row)}
        scores = entry["scores"]
        assert cells["rank"] == (str(entry["rank"]), str(entry["rank"]))
        shown = {
            "overall": scores["overall"]["icc"],
            "mean_icc": scores["mean_icc"],
            "excluded_rate": scores["overall"]["excluded_rate"],
            **{key: scores["dimensions"][key]["icc"] for key in DIMENSION_KEYS},
        }
        for key, value in shown.items():
            raw, text = cells[key]
            assert float(raw) == value and _shows_percent(text, value), (entry["file"], key)
        raw, text = cells["p_vs_leader"]
        if entry["rank"] == 1:
            assert (raw, text) == ("", "leader")
        else:
            assert float(raw) == entry["vs_leader"]["p_value"]
            assert _shows_number(text, entry["vs_leader"]["p_value"], 4)
        detail = html.unescape(re.search(rf'id="detail-e{entry["rank"]}"[^>]*><td[^>]*>(.*?)</td>', page).group(1))
        overall = scores["overall"]
        match = re.search(
            rf"Overall ICC ({PERCENT})% \[({PERCENT}), ({PERCENT})\], MSE (\d\.\d{{3}}), n=(\d+), "
            rf"excluded ({PERCENT})%",
            detail,
        )
        assert _shows_percent(match.group(1), overall["icc"]) and _shows_ci(*match.group(2, 3), overall["icc_ci"])
        assert _shows_number(match.group(4), overall["mse"], 3) and int(match.group(5)) == overall["n"]
        assert _shows_percent(match.group(6), overall["excluded_rate"])
        for dim in DIMENSIONS:
            block = scores["dimensions"][dim.key]
            match = re.search(
                rf"{re.escape(dim.abbreviation)}: ICC ({PERCENT})% \[({PERCENT}), ({PERCENT})\], "
                rf"MSE (\d\.\d{{3}}), n=(\d+), parsed ({PERCENT})%",
                detail,
            )
            assert _shows_percent(match.group(1), block["icc"]) and _shows_ci(*match.group(2, 3), block["icc_ci"])
            assert _shows_number(match.group(4), block["mse"], 3) and int(match.group(5)) == block["n"]
            assert _shows_percent(match.group(6), entry["parse_rates"][dim.key])
        if entry["rank"] > 1:
            vs = entry["vs_leader"]
            match = re.search(
                rf"leader minus this entry, overall ICC: ({PERCENT}) points "
                rf"\[({PERCENT}), ({PERCENT})\], p = (\d\.\d{{4}}) \(n=(\d+) videos",
                detail,
            )
            assert _shows_percent(match.group(1), vs["delta"]) and _shows_ci(*match.group(2, 3), vs["delta_ci"])
            assert _shows_number(match.group(4), vs["p_value"], 4) and int(match.group(5)) == vs["n"]
            for dim in DIMENSIONS:
                p_text = re.search(
                    rf"{re.escape(dim.abbreviation)} (\d\.\d{{4}})(?:,|$)",
                    detail.split("per-dimension p vs leader: ", 1)[1],
                ).group(1)
                assert _shows_number(p_text, vs["dimension_p_values"][dim.key], 4)
    ceiling = re.search(r'<tr class="ceiling">(.*?)</tr>', page).group(1)
    mean = re.search(r'data-key="mean_icc" data-value="([^"]+)"[^>]*>([^<]+)<', ceiling)
    expected_mean = np.mean([v[0] for v in TABLE2_PERCENT.values()]) / 100
    assert abs(float(mean.group(1)) - expected_mean) <= 1e-12 and _shows_percent(mean.group(2), expected_mean)
    for key, (icc, _, _) in TABLE2_PERCENT.items():
        cell = re.search(rf'data-key="{key}" data-value="([^"]+)"[^>]*>([^<]+)<', ceiling)
        assert float(cell.group(1)) == pytest.approx(icc / 100) and float(cell.group(2)) == icc


def test_printed_lines(made):
    board = made["board"]
    lines = made["printed"].splitlines()
    assert lines[0] == f"3 ranked, 1 rejected -> {made['out'] / 'index.html'}"
    for line, entry in zip(lines[1:4], board["entries"], strict=True):
        match = re.fullmatch(rf"\s+(\d+)\. (\S+) \[text, direct\] overall ICC ({PERCENT})% \[SYNTHETIC\]", line)
        assert match and int(match.group(1)) == entry["rank"] and match.group(2) == entry["model"]
        assert _shows_percent(match.group(3), entry["scores"]["overall"]["icc"])
    assert lines[4].startswith("  rejected d_broken.json: ")
    assert lines[5:] == ["SYNTHETIC data: these numbers say nothing about any model on MIS-Bench."]


def test_agreement_columns_page_and_csv(made):
    """The overall ICC(2,1) and bias columns: the JSON's values equal the libraries' on the overall pairs
    (videos with all eight parsed, per-video means), the page shows them, the CSV holds them."""
    from _independent import grid, overall_pairs, reference_agreement

    board, references = made["board"], made["references"]
    page = (made["out"] / "index.html").read_text()
    with (made["out"] / "leaderboard.csv").open(newline="") as handle:
        rows = {row["file"]: row for row in csv.DictReader(handle)}
    for entry in board["entries"]:
        _, pred, gold = grid(made["systems"][entry["file"]], references, DIMENSION_KEYS)
        complete = ~np.isnan(pred).any(axis=1)
        expected = reference_agreement(*overall_pairs(pred, gold, complete))
        overall = entry["scores"]["overall"]["agreement"]
        for key in ("icc2_1", "krippendorff_alpha", "bias", "loa_low", "loa_high", "sd_ratio"):
            assert close_published(overall[key]["value"], expected[key]), key
            assert float(rows[entry["file"]][f"overall_{key}"]) == overall[key]["value"]
        for key in DIMENSION_KEYS:
            ok = ~np.isnan(pred[:, DIMENSION_KEYS.index(key)])
            column = DIMENSION_KEYS.index(key)
            reference = reference_agreement(pred[ok, column], gold[ok, column])
            block = entry["scores"]["dimensions"][key]["agreement"]
            assert close_published(block["icc2_1"]["value"], reference["icc2_1"])
            assert float(rows[entry["file"]][f"{key}_bias"]) == block["bias"]["value"]
        row = re.search(rf'<tr class="entry" data-id="e{entry["rank"]}">(.*?)</tr>', page).group(1)
        cells = dict(re.findall(r'<td data-key="([^"]+)" data-value="([^"]*)"', row))
        assert float(cells["icc2_1"]) == overall["icc2_1"]["value"]
        assert float(cells["bias"]) == overall["bias"]["value"]
        shown = re.search(r'data-key="bias"[^>]*>([^<]+)<', row).group(1)
        assert shown == f"{overall['bias']['value']:+.2f}"
        detail = html.unescape(re.search(rf'id="detail-e{entry["rank"]}"[^>]*><td[^>]*>(.*?)</td>', page).group(1))
        assert f"bias {overall['bias']['value']:+.2f}, limits of agreement [" in detail
