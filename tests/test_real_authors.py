"""The real benchmark from the authors' public files (../shared/data/authors; skipped without it).

Checked against the paper's published tables (Table 4, Table 6) and against independent readings of
the files (the csv module, exact fractions, pingouin), never against numbers this code printed.
"""

from __future__ import annotations

import csv
import json
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS, GOLD_STATS, SplitPlan
from mis_bench_dataset.paper_results import TABLE4

from _metric_helpers import pingouin_icc3_1

FILES = {c.key: c.file for c in TABLE4}


def error_lines(err: str) -> list[str]:
    """The toolkit's one-line errors (datasets' progress bars share stderr)."""
    return [line for line in err.splitlines() if re.match(r"mis-bench( \S+)?: error: ", line)]


def _exact_rounded(text: str) -> Fraction:
    """Half-up rounding to one decimal of the exact decimal written in the file (an independent reading)."""
    value = Fraction(text)
    tenths = (value * 10 + Fraction(1, 2)).__floor__()
    return Fraction(tenths, 10)


def _canonical(name: str) -> str:
    match = re.fullmatch(r"([A-Za-z]+\d+)_FIS_Time([123])_([A-Za-z]+)", name, re.IGNORECASE)
    return f"{match[1]}_T{match[2]}_{match[3]}"


@pytest.fixture(scope="module")
def coding(authors_dir) -> dict[str, dict[str, str]]:
    """coding.csv as written: canonical id -> dimension -> the text of its cell."""
    with open(authors_dir / "coding.csv", newline="", encoding="utf-8-sig") as handle:
        return {_canonical(row["file_name"]): {k: row[k] for k in DIMENSION_KEYS} for row in csv.DictReader(handle)}


def _asked(path: Path) -> dict[tuple[str, str], float]:
    """The filled cells of one of the authors' wide prediction files, read with the csv module."""
    names = {DIMENSION_BY_KEY[k].name: k for k in DIMENSION_KEYS}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return {
            (row["video"].rsplit("/", 1)[-1], names[column]): float(value)
            for row in csv.DictReader(handle)
            for column, value in row.items()
            if column in names and value.strip()
        }


def test_table6_is_exact_from_the_build_and_from_reproduce(real_text_build, authors_dir, tmp_path):
    from eval_scripts import reproduce_table6
    from mis_bench_dataset import compute_stats

    stats = compute_stats(real_text_build)
    for key, paper in GOLD_STATS.items():
        ours = stats["dimensions"][key]
        assert f"{ours['mean']:.3f}" == f"{paper.mean:.3f}" and f"{ours['sd']:.3f}" == f"{paper.std:.3f}", key
        assert (ours["min"], ours["max"], ours["n"]) == (paper.min, paper.max, 996), key
    assert reproduce_table6(authors_dir)["n_equal"] == 32
    assert stats["gold_rounding"]["n_rounded"] == 3910  # counted independently below
    unrounded = reproduce_table6(authors_dir, gold="as-published")
    assert not unrounded["reproduced"]  # the file's own means are not the paper's gold


def test_the_build_reads_coding_csv_as_published(real_text_build, coding, authors_dir):
    from mis_bench_dataset.builder.stats import read_gold
    from mis_bench_dataset.dataset.format import read_build_report

    report = read_build_report(real_text_build)
    assert report["problems"] == [] and report["n_labeled_videos"] == 996
    not_at_one_decimal = sum(Fraction(t) != _exact_rounded(t) for scores in coding.values() for t in scores.values())
    assert report["gold_rounding"]["n_rounded"] == not_at_one_decimal == 3910
    notes = [(n["kind"], n["text"]) for n in report["label_notes"]]
    assert [t for k, t in notes if k == "ignored_column"] == [
        "column 'all_ratings' is not an FIS dimension; ignored",
        "column 'folder' is not an FIS dimension; ignored",
    ]
    misspelled = [t for k, t in notes if k == "id_misspelling"]
    assert len(misspelled) == 8 and all(re.fullmatch(r"EH0202_FIs_Time3_\w+ -> EH0202_T3_\w+", t) for t in misspelled)
    table = read_gold(real_text_build)
    for row, video in enumerate(table.video_ids):
        for j, key in enumerate(DIMENSION_KEYS):
            assert Fraction(repr(float(table.gold[row, j]))) == _exact_rounded(coding[video][key]), (video, key)
    card = (real_text_build / "README.md").read_text(encoding="utf-8")
    assert "commit d2b9b8e, path coding.csv" in card and "commit d7a60ad, path fis_transcript.csv" in card
    assert "3910 of the 7968 gold values" in card and "EH0202_FIs_Time3_Luke -> EH0202_T3_Luke" in card


def test_table4_point_estimates_means_and_cis(authors_dir):
    from eval_scripts import reproduce_table4

    doc = reproduce_table4(authors_dir, n_bootstrap=10_000, seed=0)
    for condition in TABLE4:
        ours = doc["conditions"][condition.key]
        for key, cell in condition.cells.items():
            row = ours["dimensions"][key]
            assert round(100 * row["icc"], 1) == cell.icc, (condition.key, key)
            if cell.ci_low == cell.ci_high:  # the paper's zero-width CI (Raw, Emo.: a constant answer) is withheld
                assert row["icc_ci"] is None and row["both_degenerate"] and "zero width" in row["icc_ci_withheld"]
                continue
            low, high = (100 * b for b in row["icc_ci"])
            assert abs(low - cell.ci_low) <= 1.0 and abs(high - cell.ci_high) <= 1.0, (condition.key, key, low, high)
        assert round(100 * ours["mean_icc"], 1) == condition.mean
    assert doc["reproduced"] and doc["n_bounds_within"] == 46 and doc["n_bounds_degenerate"] == 2


def test_table4_icc_equals_pingouin_on_the_asked_pairs(authors_dir, coding):
    """The point estimates, recomputed from the filled cells and the rounded gold by pingouin."""
    from eval_scripts import reproduce_table4

    doc = reproduce_table4(authors_dir, n_bootstrap=1)
    for condition in TABLE4:
        asked = _asked(authors_dir / condition.file)
        for key in DIMENSION_KEYS:
            pairs = sorted((v, p) for (v, d), p in asked.items() if d == key)
            matrix = np.array([[p, float(_exact_rounded(coding[v][key]))] for v, p in pairs])
            reference, _ = pingouin_icc3_1(matrix)
            assert doc["conditions"][condition.key]["dimensions"][key]["icc"] == pytest.approx(reference, abs=1e-9)
            assert doc["conditions"][condition.key]["dimensions"][key]["n"] == len(pairs)


def test_paper_rows_regenerates_the_797_test_pairs(authors_dir, real_transcripts_csv, tmp_path):
    from mis_bench_dataset import BuiltDataset, build_dataset

    report = build_dataset(
        None,
        tmp_path / "paper-rows",
        labels=authors_dir / "coding.csv",
        transcripts=real_transcripts_csv,
        split=SplitPlan(split_by="paper-rows"),
        progress=False,
    )
    assert report.seed == 42 and report.split_rows == {"train": 6374, "validation": 797, "test": 797}
    test = {(r["video_id"], r["dimension"]) for r in BuiltDataset.of(tmp_path / "paper-rows").rows("test")}
    train = {(r["video_id"], r["dimension"]) for r in BuiltDataset.of(tmp_path / "paper-rows").rows("train")}
    assert set(_asked(authors_dir / "raw_inference.csv")) == test
    assert set(_asked(authors_dir / "finetune_raft.csv")) == test
    assert set(_asked(authors_dir / "finetune.csv")) < test  # one asked pair's answer is empty
    test_videos = {v for v, _ in test}
    assert len(test_videos) == 589 and all(any((v, k) in train for k in DIMENSION_KEYS) for v in test_videos)
    card = (tmp_path / "paper-rows" / "README.md").read_text(encoding="utf-8")
    assert "LEAKING SPLIT (paper-rows)" in card and "LEAKING SPLIT" in json.dumps(report.to_dict())


@pytest.mark.parametrize("condition", list(FILES))
def test_the_authors_prediction_files_score_unmodified(real_text_build, authors_dir, tmp_path, capsys, condition):
    out = tmp_path / "scores.json"
    path = authors_dir / FILES[condition]
    args = ["score", "--predictions", str(path), "--references", str(real_text_build), "--split", "all"]
    assert main([*args, "--bootstrap", "200", "--out", str(out)]) == 0
    scores = json.loads(out.read_text())
    asked = _asked(path)
    assert scores["coverage"]["n_asked_pairs"] == len(asked) and scores["coverage"]["n_gold_pairs"] == 7968
    assert all(rate == 1.0 for rate in scores["parse_rates"].values())  # over the asked pairs
    assert scores["overall"]["icc"] is None and "no video has all eight dimensions asked" in scores["overall"]["note"]
    assert scores["midpoint_imputation"]["n_imputed"] == 0
    printed = capsys.readouterr().out
    assert f"{len(asked):,} of 7,968 gold pairs predicted" in printed and "excluded 100.0%" not in printed
    # Against the video-level test split, the pairs outside it are left aside and counted (a judge on every
    # video, experts on a few), never silently: the count is printed and in the JSON.
    out = tmp_path / "test-split.json"
    args = ["score", "--predictions", str(path), "--references", str(real_text_build), "--bootstrap", "0"]
    assert main([*args, "--out", str(out)]) == 0
    aside = json.loads(out.read_text())["left_aside"]
    from mis_icc_metric import read_references

    test_gold = read_references(real_text_build, split="test")
    outside = [key for key in _asked(path) if key not in test_gold]
    assert aside["n_pairs"] == len(outside) > 0 and "split 'test'" in aside["why"]
    assert f"left aside {len(outside):,} predicted pair(s)" in capsys.readouterr().out


def test_reproduce_command_prints_the_paper_beside_ours(authors_dir, capsys):
    assert main(["reproduce", "table6", "--from", str(authors_dir), "--check"]) == 0
    assert "32 of 32 numbers equal the paper's: reproduced exactly." in capsys.readouterr().out
    assert main(["reproduce", "table4", "--from", str(authors_dir), "--bootstrap", "2000", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_equal"] == 24 and doc["n_means_equal"] == 3
    assert all(c["file"]["published"] for c in doc["conditions"].values())
    assert main(["reproduce", "table6", "--from", str(authors_dir), "--gold", "as-published", "--check"]) == 1
    assert "is not reproduced" in capsys.readouterr().err
