"""Labels: per-rater -> gold (mean, one decimal, half up), wide CSVs (incl. the original
`file_name` form), every bad row named, and the human ICC(3,1) ceiling against pingouin."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import (
    DIMENSION_KEYS,
    BuildChecks,
    BuildError,
    build_dataset,
    generate_synthetic_release,
    read_labels,
)
from mis_bench_dataset.release.labels import aggregate, icc3_1_with_ci, write_gold_wide
from mis_bench_dataset.toolkit.numbers import round_half_up

from _metric_helpers import pingouin_icc3_1


def _write(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_aggregate_is_the_mean_rounded_half_up_to_one_decimal():
    assert aggregate([3, 4, 4]) == 3.7  # 3.666..
    assert aggregate([3, 3, 4]) == 3.3  # 3.333..
    assert aggregate([3, 4]) == 3.5
    assert aggregate([3.2, 3.3]) == 3.3  # 3.25 -> 3.3 (half up), binary float would give 3.2
    assert aggregate([2.7, 2.6, 2.6]) == 2.6  # 2.6333..
    assert round_half_up(2.45) == 2.5 and round_half_up(2.449) == 2.4


@given(st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_aggregate_matches_exact_fraction_arithmetic(ratings):
    from fractions import Fraction

    mean = Fraction(sum(ratings), len(ratings))
    tenths = (mean * 10 + Fraction(1, 2)).__floor__()
    assert aggregate(ratings) == float(Fraction(tenths, 10))
    assert 1.0 <= aggregate(ratings) <= 5.0


def test_long_csv_gold_and_names(tmp_path):
    rows = [
        ["AB1234_T1_Luke", "R1", "verbal_fluency", 3],
        ["AB1234_T1_Luke", "R2", "VF", 4],  # abbreviation
        ["AB1234_T1_Luke", "R3", "Verbal Fluency", 4],  # display name
        ["AB1234_FIS_Time1_Luke", "R1", "empathy", 2],  # original id spelling
        ["AB1234_T1_Luke", "R2", "empathy", 5],
    ]
    labels = read_labels(_write(tmp_path / "r.csv", ["video_id", "rater", "dimension", "score"], rows))
    assert labels.form == "long" and labels.problems == []
    assert labels.gold["AB1234_T1_Luke"]["verbal_fluency"] == 3.7
    assert labels.gold["AB1234_T1_Luke"]["empathy"] == 3.5
    assert labels.gold["AB1234_T1_Luke"]["abc"] is None


def test_long_csv_problems_are_named_by_row(tmp_path):
    rows = [
        ["AB1234_T1_Luke", "R1", "verbal_fluency", 3],
        ["AB1234_T1_Luke", "R1", "verbal_fluency", 4],  # duplicate
        ["AB1234_T1_Luke", "R2", "charisma", 3],  # unknown dimension
        ["AB1234_T1_Luke", "R2", "abc", 6],  # out of range
        ["AB1234_T1_Luke", "R2", "wau", "four"],  # unparseable
        ["not a video", "R2", "wau", 3],  # malformed id
    ]
    labels = read_labels(_write(tmp_path / "r.csv", ["video_id", "rater", "dimension", "score"], rows))
    got = [(p.kind, p.row) for p in labels.problems]
    assert got == [
        ("label_duplicate", 3),
        ("label_unknown_dimension", 4),
        ("label_out_of_range", 5),
        ("label_unparseable", 6),
        ("malformed_id", 7),
    ]
    assert all(str(tmp_path / "r.csv") in str(p) for p in labels.problems)
    assert labels.gold["AB1234_T1_Luke"]["verbal_fluency"] == 3.0  # first rating kept


def test_wide_csv_with_original_file_names(tmp_path):
    gold = {
        "AG0914_T1_Jackson": dict.fromkeys(DIMENSION_KEYS, 3.3),
        "CB0326_T3_Jackson": dict.fromkeys(DIMENSION_KEYS, 4.0),
    }
    gold["CB0326_T3_Jackson"]["arrr"] = None
    path = write_gold_wide(tmp_path / "labels.csv", gold, original_names=True)
    assert "AG0914_FIS_Time1_Jackson" in path.read_text()
    labels = read_labels(path)
    assert labels.form == "wide" and labels.problems == []
    assert labels.gold == gold


def test_wide_csv_header_problems(tmp_path):
    path = _write(tmp_path / "w.csv", ["video_id", "verbal_fluency", "charm"], [["AB1234_T1_Luke", 3.1, 2]])
    labels = read_labels(path)
    # A column that is not a dimension is ignored with a note; the dimensions it lacks are a problem.
    assert {p.kind for p in labels.problems} == {"label_bad_header"}
    assert [(n.kind, n.row) for n in labels.notes] == [("ignored_column", 1)] and "'charm'" in labels.notes[0].text
    with pytest.raises(BuildError, match="id column"):
        read_labels(_write(tmp_path / "x.csv", ["who", "score"], [["a", 1]]))


def test_label_problems_fail_the_build_unless_allowed(tmp_path):
    release = generate_synthetic_release(tmp_path / "rel", n_videos=6, seed=1)
    lines = release.ratings_csv.read_text().splitlines()
    lines.append("ZZ9999_T1_Sean,R1,empathy,3")
    lines.append(f"{release.video_ids[0]},R9,empathy,7")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(BuildError) as info:
        build_dataset(release.release_dir, tmp_path / "out", labels=bad, progress=False)
    assert {p.kind for p in info.value.problems} == {"label_unknown_video", "label_out_of_range"}
    assert "ZZ9999_T1_Sean" in info.value.listing()
    assert not (tmp_path / "out").exists()
    report = build_dataset(
        release.release_dir, tmp_path / "out", labels=bad, checks=BuildChecks(allow_label_problems=True), progress=False
    )
    assert report.problem_counts() == {"label_out_of_range": 1, "label_unknown_video": 1}


@settings(max_examples=25, deadline=None)
@given(st.integers(3, 30), st.integers(2, 4), st.integers(0, 10_000))
def test_icc_matches_pingouin(n, k, seed):
    rng = np.random.default_rng(seed)
    matrix = rng.integers(1, 6, (n, 1)) + rng.integers(-1, 2, (n, k)).astype(float)
    if np.ptp(matrix - matrix.mean(axis=1, keepdims=True)) == 0:
        return  # no residual variance: ICC undefined for both
    icc, low, high = icc3_1_with_ci(matrix)
    ref, (ref_low, ref_high) = pingouin_icc3_1(matrix)
    if np.isnan(
        ref
    ):  # no spread between targets and none left (hypothesis found n=3, k=2, seed=335): undefined for both
        assert np.isnan(icc)
        return
    assert icc == pytest.approx(ref, abs=1e-9)
    if np.isnan(ref_low):  # MS_err = 0 (raters differ by a constant): pingouin divides by 0, the core documents [1, 1]
        assert icc == 1.0 and low == high == 1.0
        return
    # pingouin rounds CI to 2 dp
    assert low == pytest.approx(ref_low, abs=0.006) and high == pytest.approx(ref_high, abs=0.006)


def test_human_ceiling_uses_fully_rated_videos_and_matches_pingouin(tmp_path):
    release = generate_synthetic_release(tmp_path / "rel", n_videos=30, seed=2)
    labels = read_labels(release.ratings_csv)
    frame = pd.read_csv(release.ratings_csv)
    counts = frame.groupby("video_id").size()
    fully = sorted(counts[counts == 24].index)
    assert labels.fully_rated_videos() == fully and 0 < len(fully) < 30
    ceiling = labels.human_ceiling()
    for dim in DIMENSION_KEYS:
        matrix = (
            frame[(frame.dimension == dim) & frame.video_id.isin(fully)]
            .pivot(index="video_id", columns="rater", values="score")
            .to_numpy()
        )
        ref, _ = pingouin_icc3_1(matrix)
        assert ceiling[dim].icc == pytest.approx(ref, abs=1e-9)
        assert ceiling[dim].n_videos == len(fully) and ceiling[dim].n_raters == 3


_ids = st.builds(
    lambda c, t, s: f"AB{c:04d}_T{t}_{s}",
    st.integers(0, 9999),
    st.integers(1, 3),
    st.sampled_from(("Luke", "Sean", "Jessica")),
)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.tuples(_ids, st.sampled_from(("R1", "R2", "R3")), st.sampled_from(DIMENSION_KEYS)),
        st.integers(1, 5),
        min_size=1,
        max_size=40,
    )
)
def test_long_csv_round_trip_gives_the_paper_aggregate(tmp_path_factory, ratings):
    from mis_bench_dataset.release.labels import write_ratings_long

    path = write_ratings_long(
        tmp_path_factory.mktemp("long") / "r.csv", [(v, r, d, float(s)) for (v, r, d), s in ratings.items()]
    )
    labels = read_labels(path)
    assert labels.problems == []
    by_cell: dict = {}
    for (video, _, dim), score in ratings.items():
        by_cell.setdefault((video, dim), []).append(score)
    for (video, dim), scores in by_cell.items():
        assert labels.gold[video][dim] == aggregate(scores)
    assert sum(v is not None for g in labels.gold.values() for v in g.values()) == len(by_cell)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        _ids, st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")), min_size=1, max_size=10
    )
)
def test_transcripts_csv_round_trips_any_text(tmp_path_factory, transcripts):
    from mis_bench_dataset.release.transcripts import read_transcripts_csv, write_transcripts_csv

    path = write_transcripts_csv(tmp_path_factory.mktemp("tr") / "t.csv", transcripts)
    read, problems = read_transcripts_csv(path)
    assert problems == [] and read == transcripts


def test_unreadable_csv_files_are_named(tmp_path):
    from mis_bench_dataset.release.transcripts import read_transcripts_csv

    latin = tmp_path / "labels.csv"
    latin.write_bytes("video_id,rater,dimension,score\nAB1234_T1_Luke,Ren\xe9,empathy,3\n".encode("latin-1"))
    with pytest.raises(BuildError, match="labels.csv"):
        read_labels(latin)
    latin_transcripts = tmp_path / "transcripts.csv"
    latin_transcripts.write_bytes("video,transcript\nAB1234_T1_Luke,caf\xe9\n".encode("latin-1"))
    with pytest.raises(BuildError, match="transcripts.csv"):
        read_transcripts_csv(latin_transcripts)
    with pytest.raises(BuildError, match="needs columns"):
        read_transcripts_csv(_write(tmp_path / "t2.csv", ["id", "text"], [["a", "b"]]))


@pytest.mark.parametrize(
    "header", ["video_id,rater,dimension,score\n", "video_id,VF,H/PE,Per.,Emo.,WAU,Emp.,ABC,ARRR\n"]
)
def test_a_header_without_rows_is_refused_not_built_as_no_problems(tmp_path, header):
    from mis_bench_dataset import read_labels

    path = tmp_path / "labels.csv"
    path.write_text(header)
    with pytest.raises(BuildError, match="header but no rows") as info:
        read_labels(path)
    assert str(path) in str(info.value)
