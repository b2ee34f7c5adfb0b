"""Predictions / references reading and writing (interface contract item 2)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.release import labels as labels_module
from mis_bench_dataset.release.labels import table_form, write_gold_wide, write_ratings_long
from mis_bench_dataset.toolkit.errors import UsageError
from mis_bench_dataset.video_ids import ID_COLUMNS
from mis_icc_metric import (
    PredictionsFormatError,
    predictions_io,
    predictions_to_mapping,
    read_predictions,
    read_references,
    write_predictions,
)

from _metric_helpers import make_scores, write_scoring_dataset

RECORDS = [
    {"video_id": "EH0822_T1_Jessica", "dimension": "empathy", "prediction": 3.7, "raw_response": "Score: 3.7"},
    {"video_id": "EH0822_T1_Jessica", "dimension": "abc", "prediction": None, "raw_response": "I cannot tell"},
    {
        "video_id": "CB0326_T3_Jackson",
        "dimension": "empathy",
        "prediction": 0.1 + 0.2,
        "raw_response": 'a, "quoted"\nline',
    },
]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_long_form_round_trip_keeps_none_raw_response_and_exact_floats(tmp_path, suffix):
    path = write_predictions(tmp_path / f"preds{suffix}", RECORDS)
    assert read_predictions(path) == RECORDS


@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)), min_size=1, max_size=8))
def test_property_round_trip_is_lossless(tmp_path_factory, values):
    records = [{"video_id": f"AB{i:04d}_T2_Luke", "dimension": "wau", "prediction": v} for i, v in enumerate(values)]
    directory = tmp_path_factory.mktemp("rt")
    for suffix in (".csv", ".jsonl"):
        assert read_predictions(write_predictions(directory / f"p{suffix}", records)) == records


def test_write_rejects_bad_records(tmp_path):
    with pytest.raises(ValueError, match="duplicate"):
        write_predictions(tmp_path / "p.csv", [RECORDS[0], RECORDS[0]])
    with pytest.raises(ValueError, match="lacks field"):
        write_predictions(tmp_path / "p.csv", [{"video_id": "x", "dimension": "empathy"}])
    with pytest.raises(ValueError, match="unknown FIS dimension"):
        write_predictions(tmp_path / "p.csv", [{"video_id": "x", "dimension": "kindness", "prediction": 3.0}])
    with pytest.raises(ValueError, match="unsupported"):
        write_predictions(tmp_path / "p.txt", RECORDS)


def test_wide_original_result_file_form(tmp_path):
    names = [DIMENSION_BY_KEY[k].name for k in DIMENSION_KEYS]
    lines = ["video," + ",".join(f'"{n}"' if "," in n else n for n in names)]
    lines.append("data/FIS996/CB0326_T3_Jackson," + ",".join(["3.5"] * 7 + [""]))
    lines.append("data/FIS996/AG0914_T1_Luke," + ",".join(["nan", "4"] + ["2.5"] * 6))
    path = tmp_path / "results.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    mapping = predictions_to_mapping(read_predictions(path))
    assert len(mapping) == 15  # the blank cell names no pair: not asked (the authors' files fill asked pairs only)
    assert mapping[("CB0326_T3_Jackson", "verbal_fluency")] == 3.5
    assert ("CB0326_T3_Jackson", "arrr") not in mapping
    assert mapping[("AG0914_T1_Luke", "verbal_fluency")] is None  # an explicit null token: asked, unparsed
    assert mapping[("AG0914_T1_Luke", "hope_and_pe")] == 4.0


def test_results_json_and_wide_jsonl(tmp_path):
    results = tmp_path / "run.json"
    results.write_text(json.dumps({"schema_version": "1.1", "predictions": RECORDS}), encoding="utf-8")
    assert read_predictions(results) == RECORDS
    wide = tmp_path / "wide.jsonl"
    wide.write_text(json.dumps({"video_id": "EH0822_FIS_Time1_Jessica", "Emp.": 4.1, "WAU": None}) + "\n")
    assert predictions_to_mapping(read_predictions(wide)) == {
        ("EH0822_T1_Jessica", "empathy"): 4.1,
        ("EH0822_T1_Jessica", "wau"): None,
    }


@pytest.mark.parametrize(
    "content, message",
    [
        (
            "video_id,dimension,prediction\nEH0822_T1_Jessica,empathy,three\n",
            r"row 2, column 'prediction'.*not a number",
        ),
        (
            "video_id,dimension,prediction\nEH0822_T1_Jessica,empathy,3\nEH0822_T1_Jessica,Emp.,4\n",
            r"row 3: duplicate .*first given at row 2",
        ),
        ("video_id,dimension,prediction\nEH0822_T1_Jessica,kindness,3\n", r"row 2, column 'dimension'.*unknown FIS"),
        ("video_id,dimension,prediction\nnot-an-id,empathy,3\n", r"row 2, column 'video_id'.*malformed video id"),
        ("video_id,dimension,prediction\nEH0822_T1_Jessica,empathy,inf\n", "infinite"),
        ("foo,bar\n1,2\n", "need long columns"),
        ("video,kindness\nEH0822_T1_Jessica,3\n", "no dimension columns"),
    ],
)
def test_bad_prediction_files_name_file_row_and_column(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(PredictionsFormatError, match=message) as info:
        read_predictions(path)
    assert str(path) in str(info.value)


def test_bad_jsonl_line_and_unknown_suffix(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"video_id": "EH0822_T1_Jessica", "dimension": "wau", "prediction": 3}\n{oops\n')
    with pytest.raises(PredictionsFormatError, match="row 2: invalid JSON"):
        read_predictions(path)
    other = tmp_path / "p.parquet"
    other.write_bytes(b"x")
    with pytest.raises(PredictionsFormatError, match="unsupported file type"):
        read_predictions(other)
    with pytest.raises(FileNotFoundError):
        read_predictions(tmp_path / "absent.csv")


def test_references_from_per_rater_wide_and_long_gold(tmp_path):
    rows = [
        ("EH0822_T1_Jessica", f"R{r}", dim, score) for dim in DIMENSION_KEYS for r, score in ((1, 3), (2, 4), (3, 4))
    ]
    rows += [("CB0326_T3_Jackson", "R1", "empathy", 2.0), ("CB0326_T3_Jackson", "R2", "empathy", 2.5)]
    refs = read_references(write_ratings_long(tmp_path / "ratings.csv", rows))
    assert refs[("EH0822_T1_Jessica", "empathy")] == 3.7  # mean 3.667 -> one decimal
    assert refs[("CB0326_T3_Jackson", "empathy")] == 2.3  # 2.25 rounds half up
    assert ("CB0326_T3_Jackson", "abc") not in refs
    gold = {"EH0822_T1_Jessica": dict.fromkeys(DIMENSION_KEYS, 3.5)}
    gold["EH0822_T1_Jessica"]["arrr"] = None
    wide = read_references(write_gold_wide(tmp_path / "gold.csv", gold, original_names=True))
    assert len(wide) == 7 and wide[("EH0822_T1_Jessica", "wau")] == 3.5
    long = tmp_path / "gold_long.csv"
    long.write_text("video_id,dimension,score\nEH0822_T1_Jessica,Emp.,3.2\nEH0822_T1_Jessica,ABC,\n")
    assert read_references(long) == {("EH0822_T1_Jessica", "empathy"): 3.2}


def test_bad_references_are_errors(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("video_id,rater,dimension,score\nEH0822_T1_Jessica,R1,empathy,9\n", encoding="utf-8")
    with pytest.raises(PredictionsFormatError, match=r"score 9.0 outside \[1.0, 5.0\].*references \(expert\) file"):
        read_references(path)
    # The first bad row ends the reading: what follows it (here bytes that are not UTF-8) is never read.
    rows = "".join(f"EH0822_T1_Jessica,R{rater},empathy,{3 if rater else 9}\n" for rater in range(8))
    rows += "".join(f"EH0822_T1_Jessica,R{rater},abc,3\n" for rater in range(10, 5000))  # past the decoder's buffer
    path.write_bytes(b"video_id,rater,dimension,score\nEH0822_T1_Jessica,R9,wau,3\n" + rows.encode() + b"\xff\xfe")
    with pytest.raises(PredictionsFormatError, match=r"score 9.0 outside .*ratings.csv, row 3\)$"):
        read_references(path)
    unknown = tmp_path / "x.csv"
    unknown.write_text("a,b\n1,2\n")
    with pytest.raises(PredictionsFormatError, match="not a references file"):
        read_references(unknown)


def test_references_from_a_dataset_folder_widen_float32(tmp_path):
    _, references = make_scores(n=6, seed=0)
    directory = write_scoring_dataset(tmp_path / "ds", references)
    assert read_references(directory, split="test") == references
    with pytest.raises(UsageError, match="split 'validation' is not in this build"):  # as every command says it
        read_references(directory, split="validation")


def test_references_from_the_synthetic_build(synthetic_build):
    import datasets

    refs = read_references(synthetic_build, split="test")
    rows = datasets.load_dataset(str(synthetic_build), "scoring", split="test")
    labelled = [r for r in rows if r["score"] is not None]
    assert len(refs) == len(labelled) > 0
    for row in labelled[:20]:
        assert refs[(row["video_id"], row["dimension"])] == pytest.approx(row["score"], abs=1e-6)
        assert refs[(row["video_id"], row["dimension"])] == round(refs[(row["video_id"], row["dimension"])], 1)


def test_two_builds_in_same_named_folders_are_not_confused(tmp_path):
    """datasets caches a local folder by its name + card; read_references must not return stale rows."""
    _, first = make_scores(n=3, seed=1)
    _, second = make_scores(n=5, seed=2)
    assert read_references(write_scoring_dataset(tmp_path / "a" / "build", first)) == first
    assert read_references(write_scoring_dataset(tmp_path / "b" / "build", second)) == second


_HEADER_WORDS = [
    "video_id",
    "video",
    "file_name",
    "sample_id",
    "rater",
    "dimension",
    "score",
    "gold",
    "prediction",
    "x",
]


@given(header=st.lists(st.sampled_from(_HEADER_WORDS), unique=True))
def test_the_one_long_wide_rule_read_by_hand(header):
    """`table_form` against the rule written out: long by its marker or columns (and a value column when asked),
    else wide on the first id column of ID_COLUMNS, else neither."""
    first_id = next((c for c in ID_COLUMNS if c in header), None)
    otherwise = ("wide", first_id) if first_id else (None, None)
    labels_long = "rater" in header
    assert table_form(header, ("video_id", "rater", "dimension", "score"), marker="rater") == (
        ("long", None) if labels_long else otherwise
    )
    predictions_long = {"video_id", "dimension", "prediction"} <= set(header)
    assert table_form(header, ("video_id", "dimension", "prediction")) == (
        ("long", None) if predictions_long else otherwise
    )
    gold_long = {"video_id", "dimension"} <= set(header) and bool({"score", "gold"} & set(header))
    assert table_form(header, ("video_id", "dimension"), value_columns=("score", "reference", "gold")) == (
        ("long", None) if gold_long else otherwise
    )


def test_labels_predictions_and_references_all_dispatch_through_it(tmp_path, monkeypatch):
    asked = []

    def spy(header, long_columns, **kwargs):
        asked.append(tuple(long_columns))
        return table_form(header, long_columns, **kwargs)

    monkeypatch.setattr(labels_module, "table_form", spy)
    monkeypatch.setattr(predictions_io, "table_form", spy)
    long = tmp_path / "gold_long.csv"
    long.write_text("video_id,dimension,score\nEH0822_T1_Jessica,Emp.,3.2\n")
    assert read_references(long) == {("EH0822_T1_Jessica", "empathy"): 3.2}
    assert asked == [("video_id", "rater", "dimension", "score"), ("video_id", "dimension")]
    asked.clear()
    rows = [("EH0822_T1_Jessica", "R1", dim, 3.0) for dim in DIMENSION_KEYS]
    read_references(write_ratings_long(tmp_path / "ratings.csv", rows))
    assert asked == [("video_id", "rater", "dimension", "score")] * 2  # references, then the labels reader
    asked.clear()
    write_predictions(tmp_path / "p.csv", [{"video_id": "EH0822_T1_Jessica", "dimension": "empathy", "prediction": 3}])
    read_predictions(tmp_path / "p.csv")
    assert asked == [("video_id", "dimension", "prediction")]


def test_predictions_without_gold_name_the_first_and_count_the_others(tmp_path):
    from mis_icc_metric import read_prediction_file
    from mis_icc_metric.predictions_io import check_predicted_pairs

    videos = ["EH0822_T1_Jessica", "CB0326_T3_Jackson", "AB0101_T1_Luke", "CD0202_T1_John"]
    path = write_predictions(
        tmp_path / "p.csv", [{"video_id": v, "dimension": "empathy", "prediction": 3.0} for v in videos]
    )
    references = {(videos[0], "empathy"): 3.0}
    with pytest.raises(PredictionsFormatError) as info:
        check_predicted_pairs(read_prediction_file(path), references, where="gold.csv")
    message = str(info.value)
    assert "row 3" in message and repr(videos[1]) in message  # the first without gold, by its file row
    assert "(and 2 more prediction(s) without gold)" in message
