"""The rules the real data needed, on synthetic files: unrounded wide gold is rounded half up and reported,
known id misspellings are read and noted, bad input names its file and row, the leaking `paper-rows` split
partitions the rows, and the default job on a text-only build runs only what the build can feed."""

from __future__ import annotations

import argparse
import csv
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts.cli import main
from mis_bench_dataset import (
    DIMENSION_KEYS,
    SplitPlan,
    build_dataset,
    generate_synthetic_release,
    parse_video_id,
    read_labels,
)
from mis_bench_dataset.video_ids import misspelling_note

VIDEOS = ("AB0101_T1_Luke", "AB0101_T2_Sean", "CD0202_T3_Jessica", "CD0202_T1_John")


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if re.match(r"mis-bench( \S+)?: error: ", line)]


def _wide(path: Path, rows: list[list], header: list[str] | None = None) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header or ["file_name", *DIMENSION_KEYS, "folder"])
        writer.writerows(rows)
    return path


def _half_up(text: str) -> float:
    value = Fraction(text)
    return float(Fraction((value * 10 + Fraction(1, 2)).__floor__(), 10))


UNROUNDED = ("3.8333333333333335", "3.25", "2.75", "3.0", "4.1666666666666667", "1.0", "4.45", "3.5")


def test_unrounded_means_are_rounded_half_up_and_reported(tmp_path, capsys):
    rows = [[parse_video_id(v).original_name, *UNROUNDED[i:] + UNROUNDED[:i], "Oct2020"] for i, v in enumerate(VIDEOS)]
    labels_path = _wide(tmp_path / "means.csv", rows)
    labels = read_labels(labels_path)
    assert labels.problems == [] and [n.kind for n in labels.notes] == ["ignored_column"]
    expected_rounded = sum(Fraction(t) != Fraction(_half_up(t)) for row in rows for t in row[1:9])
    assert labels.rounding.n_rounded == expected_rounded == 20 and labels.rounding.n_values == 32
    for row, video in zip(rows, VIDEOS, strict=True):
        assert [labels.gold[video][k] for k in DIMENSION_KEYS] == [_half_up(t) for t in row[1:9]]  # 3.25 -> 3.3
    transcripts = tmp_path / "t.csv"
    transcripts.write_text("video,transcript\n" + "".join(f"{v},words {i}\n" for i, v in enumerate(VIDEOS)))
    out = tmp_path / "build"
    assert main(["build", "--transcripts", str(transcripts), "--labels", str(labels_path), "--out", str(out)]) == 0
    assert (
        "20 of 32 gold values (aggregated values in the labels file) were not at one decimal" in capsys.readouterr().out
    )
    report = json.loads((out / "build_report.json").read_text())
    assert report["gold_rounding"]["n_rounded"] == 20 and report["problems"] == []
    assert "20 of the 32 gold values" in (out / "README.md").read_text()
    assert main(["stats", str(out), "--out", str(tmp_path / "stats")]) == 0
    assert "gold rounding (build): 20 of 32 values were not at one decimal" in capsys.readouterr().out


@pytest.mark.parametrize(
    "written, read",
    [
        ("EH0202_FIs_Time3_Luke", "EH0202_T3_Luke"),
        ("EH0202_fis_time3_Luke", "EH0202_T3_Luke"),
        ("AG0914_FIS_TIME1_Jackson", "AG0914_T1_Jackson"),
        ("data/FIS996/AG0914_Fis_Time2_Jackson.mp4", "AG0914_T2_Jackson"),
    ],
)
def test_known_misspellings_are_read_as_the_video_they_name_and_noted(written, read):
    assert parse_video_id(written).video_id == read
    assert misspelling_note(written) == f"{written} -> {read}"


@pytest.mark.parametrize("correct", ["EH0202_FIS_Time3_Luke", "EH0202_T3_Luke", "data/FIS996/EH0202_T3_Luke"])
def test_correct_spellings_carry_no_note(correct):
    assert misspelling_note(correct) is None


@pytest.mark.parametrize(
    "malformed", ["EH0202_FIX_Time3_Luke", "EH0202_FIs_Tme3_Luke", "EH0202_t3_Luke", "EH0202_FIS_Time4_Luke"]
)
def test_other_spellings_are_still_malformed(malformed):
    with pytest.raises(ValueError, match="malformed video id"):
        parse_video_id(malformed)


@settings(max_examples=60, deadline=None)
@given(
    st.from_regex(r"[A-Z]{2}[0-9]{4}", fullmatch=True),
    st.sampled_from(["FIS", "FIs", "fis", "Fis", "fIS"]),
    st.sampled_from(["Time", "time", "TIME", "tIME"]),
    st.integers(1, 3),
    st.sampled_from(["Luke", "Sean", "Bethany"]),
)
def test_misspelling_rule_is_exactly_the_case_of_two_tokens(clinician, fis, word, time, stimulus):
    written = f"{clinician}_{fis}_{word}{time}_{stimulus}"
    assert parse_video_id(written).video_id == f"{clinician}_T{time}_{stimulus}"
    note = misspelling_note(written)
    assert (note is None) == (fis == "FIS" and word == "Time")


def test_a_misspelled_duplicate_of_a_video_still_stops_the_build_with_its_row(tmp_path, capsys):
    scores = ["3.0"] * 8
    labels_path = _wide(
        tmp_path / "dup.csv",
        [
            ["EH0202_FIS_Time3_Luke", *scores, "x"],
            ["AB0101_FIS_Time1_Luke", *scores, "x"],
            ["EH0202_FIs_Time3_Luke", *scores, "x"],
        ],
    )
    transcripts = tmp_path / "t.csv"
    transcripts.write_text("video,transcript\nEH0202_T3_Luke,a\nAB0101_T1_Luke,b\nCD0101_T1_Luke,c\n")
    code = main(
        ["build", "--transcripts", str(transcripts), "--labels", str(labels_path), "--out", str(tmp_path / "o")]
    )
    (line,) = _error_lines(capsys.readouterr().err)
    assert code == 1 and str(labels_path) in line and "row 4" in line and "labelled twice (first at row 2)" in line


def test_a_non_numeric_cell_names_file_row_and_column(tmp_path, capsys):
    gold = tmp_path / "gold.csv"
    gold.write_text("video_id,dimension,score\n" + "".join(f"{v},{k},3.0\n" for v in VIDEOS for k in DIMENSION_KEYS))
    wide = tmp_path / "pred.csv"
    wide.write_text("video,Empathy,WAU\n" + f"data/FIS996/{VIDEOS[0]},3.5,\n" + f"data/FIS996/{VIDEOS[1]},,four\n")
    assert main(["score", "--predictions", str(wide), "--references", str(gold), "--bootstrap", "0"]) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    assert f"{wide}, row 3, column 'WAU'" in line and "'four' is not a number" in line
    labels = _wide(tmp_path / "labels.csv", [[parse_video_id(VIDEOS[0]).original_name, "three", *["3.0"] * 7, "x"]])
    assert main(["score", "--predictions", str(wide), "--references", str(labels), "--bootstrap", "0"]) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    assert str(labels) in line and "row 2" in line and "'three' is not a number" in line


def test_a_prediction_for_a_video_absent_from_the_references_is_left_aside_and_counted(tmp_path, capsys):
    """A judge on more videos than have gold is scored on those with gold; the rest is counted in text and JSON.
    A file with no pair that has gold (the wrong references) is still an error naming the file and row."""
    gold = tmp_path / "gold.csv"
    gold.write_text(
        "video_id,dimension,score\n" + "".join(f"{v},{k},3.0\n" for v in VIDEOS[:3] for k in DIMENSION_KEYS)
    )
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"video_id": v, "dimension": "empathy", "prediction": 3.1}) + "\n" for v in VIDEOS)
    )
    args = ["score", "--predictions", str(predictions), "--references", str(gold), "--bootstrap", "0"]
    assert main([*args, "--json"]) == 0
    captured = capsys.readouterr()
    aside = json.loads(captured.out)["left_aside"]
    n_outside = len(VIDEOS) - 3
    assert aside["n_pairs"] == n_outside and aside["n_videos"] == n_outside and aside["examples"][0] == VIDEOS[3]
    assert f"left aside {n_outside} predicted pair(s) ({n_outside} video(s)" in captured.err
    only_outside = tmp_path / "outside.jsonl"
    only_outside.write_text(
        "".join(json.dumps({"video_id": v, "dimension": "empathy", "prediction": 3.1}) + "\n" for v in VIDEOS[3:])
    )
    assert main(["score", "--predictions", str(only_outside), "--references", str(gold), "--bootstrap", "0"]) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    assert f"{only_outside}, row 1: video '{VIDEOS[3]}' is not in the references" in line


@pytest.fixture(scope="module")
def synthetic_release(tmp_path_factory):
    return generate_synthetic_release(tmp_path_factory.mktemp("rows") / "release", n_videos=60, seed=3)


def test_paper_rows_partitions_the_rows_and_warns(synthetic_release, tmp_path):
    from mis_bench_dataset import BuiltDataset, compute_stats
    from mis_bench_dataset.builder.stats import read_gold

    out = tmp_path / "paper-rows"
    report = build_dataset(
        synthetic_release.release_dir,
        out,
        labels=synthetic_release.ratings_csv,
        split=SplitPlan(split_by="paper-rows"),
        progress=False,
    )
    n = len(synthetic_release.video_ids) * 8
    assert report.seed == 42 and sum(report.split_rows.values()) == n
    assert report.split_rows["test"] == report.split_rows["validation"] == (n - int(n * 0.8)) // 2  # 0.2 then 0.5
    where: dict = {}
    for split in ("train", "validation", "test"):
        for row in BuiltDataset.of(out).rows(split):
            assert (row["video_id"], row["dimension"]) not in where
            where[(row["video_id"], row["dimension"])] = split
        for row in BuiltDataset.of(out).rows(split, "features"):  # each copy carries the gold of that split's rows only
            for key in DIMENSION_KEYS:
                if row[key] is not None:
                    assert where.get((row["video_id"], key)) == split
    assert len(where) == n
    assert "LEAKING SPLIT (paper-rows)" in (out / "README.md").read_text() and report.split_warning
    stats = compute_stats(out)  # a video in several splits is one video again
    assert stats["n_videos"] == 60 and stats["n_complete_videos"] == len(read_gold(out).merged_by_video().video_ids)
    default = build_dataset(synthetic_release.release_dir, tmp_path / "default", progress=False)
    assert default.split_by == "video" and default.split_warning is None and default.seed == 0


def test_paper_rows_is_selected_by_name_on_the_command_line(synthetic_release, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["build", str(synthetic_release.release_dir), "--split-scheme", "paper-rows", "--out", str(out)]) == 0
    assert "WARNING: LEAKING SPLIT (paper-rows)" in capsys.readouterr().out
    assert json.loads((out / "build_report.json").read_text())["split_by"] == "paper-rows"


@pytest.fixture(scope="module")
def text_only_build(synthetic_release, tmp_path_factory):
    """The synthetic videos' transcripts and ratings as a text-only build (no audio or video features)."""
    from mis_bench_dataset import BuiltDataset
    from mis_bench_dataset.release.transcripts import write_transcripts_csv

    work = tmp_path_factory.mktemp("text_only")
    full = build_dataset(synthetic_release.release_dir, work / "full", progress=False)
    transcripts = {
        row["video_id"]: row["transcript"]
        for split in ("train", "validation", "test")
        for row in BuiltDataset.of(full.out_dir).rows(split, "features")
    }
    csv_path = write_transcripts_csv(work / "transcripts.csv", transcripts)
    build_dataset(None, work / "text", labels=synthetic_release.ratings_csv, transcripts=csv_path, progress=False)
    return work / "text"


def test_default_job_on_a_text_only_build_runs_what_it_can_feed(text_only_build, tmp_path, capsys):
    from eval_scripts.cli.run import run_default

    args = argparse.Namespace(
        dataset=str(text_only_build), out=str(tmp_path / "job"), bootstrap=50, seed=0, cv_folds=3, cv_seeds=2
    )
    assert run_default(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads((tmp_path / "job" / "summary.json").read_text())
    assert [(r["baseline"], r["modality"]) for r in summary["runs"]] == [("features", "text"), ("mean", "text")]
    assert {s["modality"] for s in summary["skipped"]} == {"audio+text", "video+text", "audio+video+text"}
    assert "skipping features video+text: the build has no video features (openface absent" in printed
    cv = json.loads(Path(summary["cross_validation"]["path"]).read_text())
    assert cv["n_videos"] == 60 and cv["seeds"] == [0, 1] and set(cv["runs"]) == {"features text", "mean text"}
    assert "3-fold clinician-grouped cross-validation over all 60 videos" in printed


def test_cross_validation_folds_keep_clinicians_apart_and_refit_per_fold(text_only_build):
    from eval_scripts.baselines.crossval import all_feature_rows, clinician_folds, out_of_fold_predictions
    from eval_scripts.baselines.models import make_baseline

    rows = all_feature_rows(text_only_build)
    folds = clinician_folds(rows, 3, seed=1)
    by_clinician: dict = {}
    for row, fold in zip(rows, folds, strict=True):
        by_clinician.setdefault(row["clinician"], set()).add(int(fold))
    assert all(len(f) == 1 for f in by_clinician.values()) and set(folds.tolist()) == {0, 1, 2}
    predicted = out_of_fold_predictions(rows, "features", "text", folds)
    held_out = [row for row, f in zip(rows, folds, strict=True) if f == 2]
    refit = make_baseline("features", "text").fit([row for row, f in zip(rows, folds, strict=True) if f != 2])
    expected = refit.predict(held_out)
    for i, row in enumerate(held_out):
        for key in DIMENSION_KEYS:
            assert predicted[(row["video_id"], key)] == pytest.approx(float(expected[key][i]), abs=1e-12)


def test_reproduce_names_the_missing_file_and_how_to_get_it(tmp_path, capsys):
    assert main(["reproduce", "table4", "--from", str(tmp_path)]) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    assert "no coding.csv in the folder" in line and str(tmp_path) in line
    assert "git show d2b9b8e:coding.csv > coding.csv" in line
