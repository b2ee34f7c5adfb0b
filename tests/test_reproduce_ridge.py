"""The text ridge beside Table 4 (`mis-bench reproduce table4`, eval_scripts.jobs.ridge_column and
eval_scripts.baselines.on_the_fly), on the authors'
public files in ../shared (skipped without them).

The fairness argument is tested as the stronger statement it rests on: dimension d's prediction is a function of
the transcripts and dimension d's training gold only, so changing the training gold of every OTHER dimension (which
includes every training pair of a test video's other dimensions, the row-level split's leak) leaves every dimension-d
prediction bit-identical, while the other dimensions' predictions do change (the perturbation reached the fit).
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS

N_SUBSET = 240  # real videos for the quick tests: a few seconds a fit instead of the full 996


def _canonical(name: str) -> str:
    match = re.fullmatch(r"([A-Za-z]+\d+)_FIS_Time([123])_([A-Za-z]+)", name, re.IGNORECASE)
    return f"{match[1]}_T{match[2]}_{match[3]}"


@pytest.fixture(scope="module")
def subset_files(authors_dir, real_transcripts_csv, tmp_path_factory):
    """The first N_SUBSET videos of the real transcripts, and their rows of coding.csv, as two CSVs."""
    folder = tmp_path_factory.mktemp("ridge_subset")
    with open(real_transcripts_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))[:N_SUBSET]
    keep = {row["video"] for row in rows}
    with open(folder / "fis_transcript.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["video", "transcript"])
        writer.writeheader()
        writer.writerows(rows)
    with open(authors_dir / "coding.csv", newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        coding = [row for row in reader if _canonical(row["file_name"]) in keep]
        fields = reader.fieldnames
    with open(folder / "coding.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(coding)
    assert len(coding) == N_SUBSET
    return folder


@pytest.fixture(scope="module")
def subset_build(subset_files, tmp_path_factory):
    """The subset built as `mis-bench build --split-by paper-rows` builds it."""
    out = tmp_path_factory.mktemp("ridge_build") / "paper-rows"
    args = ["build", "--transcripts", str(subset_files / "fis_transcript.csv"), "--split-by", "paper-rows"]
    assert main([*args, "--labels", str(subset_files / "coding.csv"), "--out", str(out)]) == 0
    return out


def _reflected(rows: list[dict], keep: str) -> list[dict]:
    """Train rows with every dimension's gold but `keep`'s reflected on the scale (g -> 6 - g)."""
    other = [k for k in DIMENSION_KEYS if k != keep]
    return [{**row, **{k: 6.0 - float(row[k]) for k in other if row[k] is not None}} for row in rows]


def test_a_dimension_prediction_sees_only_its_own_dimension_gold(subset_build):
    from eval_scripts.baselines.baseline_run import load_feature_rows
    from eval_scripts.baselines.on_the_fly import ridge_predictions

    train, test = load_feature_rows(subset_build, "train"), load_feature_rows(subset_build, "test")
    test_videos = {row["video_id"] for row in test}
    # The leak is there: test videos have other dimensions' gold in the training rows.
    leaked = [r for r in train if r["video_id"] in test_videos and any(r[k] is not None for k in DIMENSION_KEYS)]
    assert len(leaked) > 20
    # Test rows predict every dimension of their video, so each dimension has test pairs to compare.
    test = [{**row, **dict.fromkeys(DIMENSION_KEYS, 3.0)} for row in test]
    original = ridge_predictions(train, test)
    for keep in ("emotional_expression", "abc"):
        changed = ridge_predictions(_reflected(train, keep), test)
        assert changed.keys() == original.keys()
        same = [changed[p] == original[p] for p in original if p[1] == keep]
        assert len(same) == len(test_videos) and all(same)  # bit-identical, not approximately equal
        others = np.array([changed[p] - original[p] for p in original if p[1] != keep])
        assert np.abs(others).max() > 0.05  # the perturbation did reach the other dimensions' models


def test_the_column_is_the_ridge_mis_bench_run_fits_on_the_paper_rows_build(subset_files, subset_build, tmp_path):
    """The ridge the reproduction fits from coding.csv + transcripts is `mis-bench run --dataset`'s features ridge."""
    from eval_scripts.baselines.on_the_fly import paper_rows_predictions
    from eval_scripts.jobs.ridge_column import ridge_column
    from mis_bench_dataset import read_labels

    labels = read_labels(subset_files / "coding.csv")
    predictions = paper_rows_predictions(labels, subset_files / "fis_transcript.csv")
    references = {(v, k): s for v, scores in labels.gold.items() for k, s in scores.items() if s is not None}
    column = ridge_column(predictions, references, predictions, n_bootstrap=20, seed=0)
    assert column["vs_mis_raft"]["mean"]["delta"] == 0.0  # against itself
    out = tmp_path / "run"
    assert main(["run", "--dataset", str(subset_build), "--out", str(out), "--bootstrap", "100"]) == 0
    results = json.loads((out / "runs" / "features__text" / "results.json").read_text())
    run_predictions = {(p["video_id"], p["dimension"]): p["prediction"] for p in results["predictions"]}
    assert {p: run_predictions[p] for p in predictions} == predictions
    assert column["mean_icc"] == results["scores"]["mean_icc"]
    assert all(column["dimensions"][k]["icc"] == results["scores"]["dimensions"][k]["icc"] for k in DIMENSION_KEYS)


# What `mis-bench run --dataset` printed for the features ridge on the full paper-rows build (issue 27), in percent.
RUN_ON_PAPER_ROWS = {
    "verbal_fluency": 25.6,
    "hope_and_pe": 62.3,
    "persuasiveness": 36.0,
    "emotional_expression": 16.8,
    "wau": 42.2,
    "empathy": 41.2,
    "abc": 58.6,
    "arrr": 47.0,
}


@pytest.mark.slow
def test_reproduce_table4_prints_the_ridge_column(authors_dir, real_transcripts_csv, reproduced_table4, capsys):
    args = ["reproduce", "table4", "--from", str(authors_dir), "--transcripts", str(real_transcripts_csv)]
    doc = reproduced_table4  # `args` with --bootstrap 200 --json, run once per test run
    ridge = doc["ridge"]
    assert ridge["coverage"]["n_asked_pairs"] == 797 and ridge["same_pairs_as_mis_raft"]
    assert {k: round(100 * ridge["dimensions"][k]["icc"], 1) for k in DIMENSION_KEYS} == RUN_ON_PAPER_ROWS
    assert round(100 * ridge["mean_icc"], 1) == 41.2
    low, high = ridge["mean_icc_ci"]
    assert low < ridge["mean_icc"] < high
    versus = ridge["vs_mis_raft"]["mean"]
    assert versus["delta"] == pytest.approx(ridge["mean_icc"] - doc["conditions"]["mis_raft"]["mean_icc"], abs=1e-12)
    assert 0 < versus["p_value"] <= 1 and versus["delta_ci"][0] < versus["delta"] < versus["delta_ci"][1]
    assert ridge["transcripts"]["published"] and "fair" in ridge["fairness"]
    # The text form: a fourth column beside the three systems, and the fairness sentence.
    from eval_scripts.jobs.reproduction import format_table4

    text = format_table4(doc)
    header = next(line for line in text.splitlines() if line.startswith("dim") and "Text ridge" in line)
    assert header.split()[1:5] == ["Raw", "Fine-tuning", "MIS-RAFT", "Text"]
    mean_row = [line for line in text.splitlines() if line.startswith("Mean")][-1].split()
    assert mean_row[1:5] == ["13.8", "2.7", "31.1", "41.2"] and "Why the comparison is fair" in text
    assert main([*args, "--bootstrap", "100", "--no-ridge"]) == 0
    assert "No text ridge column." in capsys.readouterr().out
