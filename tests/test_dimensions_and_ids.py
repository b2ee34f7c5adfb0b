"""The domain constants agree with the paper, and video ids parse in every accepted spelling."""

from __future__ import annotations

import configparser
import fnmatch
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mis_bench_dataset import (
    DIMENSION_KEYS,
    DIMENSIONS,
    GOLD_STATS,
    HUMAN_CEILING,
    RUBRIC,
    STIMULI,
    normalize_video_id,
    parse_video_id,
    resolve_dimension,
)
from mis_bench_dataset.dimensions import RUBRIC_FILE, load_rubric


def test_eight_dimensions_in_paper_order():
    assert DIMENSION_KEYS == (
        "verbal_fluency",
        "hope_and_pe",
        "persuasiveness",
        "emotional_expression",
        "wau",
        "empathy",
        "abc",
        "arrr",
    )
    assert [d.abbreviation for d in DIMENSIONS] == ["VF", "H/PE", "Per.", "Emo.", "WAU", "Emp.", "ABC", "ARRR"]


def test_every_table_covers_every_dimension():
    for table in (RUBRIC, HUMAN_CEILING, GOLD_STATS):
        assert tuple(table) == DIMENSION_KEYS


def test_rubric_has_five_nonempty_levels_and_names_its_dimension():
    for dim in DIMENSIONS:
        rubric = RUBRIC[dim.key]
        assert len(rubric.scores) == 5 and all(s.strip() for s in rubric.scores)
        assert rubric.criterion.startswith(dim.name.replace("Rupture-Repair", "Rupture-Repair"))
        assert rubric.description(3) == rubric.scores[2]
    with pytest.raises(ValueError, match="rubric score"):
        RUBRIC["empathy"].description(6)


REPO = Path(__file__).resolve().parents[1]
PAPER = REPO.parent / "shared" / "mis-bench-paper.txt"


def _paper_table5(text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Table 5 as the paper's text lays it out: a dimension's name on its own line, then `Criterion. ...`
    and `Score 1. ...` to `Score 5. ...`, one line each."""
    lines = text.splitlines()
    start = lines.index("Table 5: Full scoring rubrics for the eight FIS dimensions.")
    names = {dim.name: dim.key for dim in DIMENSIONS}
    table: dict[str, list] = {}
    key = None
    for line in lines[start + 1 :]:
        if line in names:
            key = names[line]
            table[key] = [None, []]
        elif key and line.startswith("Criterion. "):
            table[key][0] = line.removeprefix("Criterion. ")
        elif key and line.startswith("Score "):
            level, _, description = line.removeprefix("Score ").partition(". ")
            assert int(level) == len(table[key][1]) + 1
            table[key][1].append(description)
        if len(table) == len(DIMENSIONS) and len(table[key][1]) == 5:
            break
    return {k: (criterion, tuple(scores)) for k, (criterion, scores) in table.items()}


@pytest.mark.skipif(
    not PAPER.is_file(), reason=f"{PAPER} not present (the paper's text is only laid out for developers)"
)
def test_the_shipped_rubric_is_table_5_of_the_paper_verbatim():
    paper = _paper_table5(PAPER.read_text(encoding="utf-8"))
    assert tuple(paper) == DIMENSION_KEYS
    assert {key: (rubric.criterion, rubric.scores) for key, rubric in RUBRIC.items()} == paper
    assert (
        paper["persuasiveness"][1][1]
        == "The participant is unpersuasive. Unpersuasive responses may be characterized by either"
    )  # the line the paper truncates


def test_the_rubric_is_package_data_read_once():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    patterns = [p.strip() for p in config["options.package_data"]["*"].split(",")]
    assert any(fnmatch.fnmatch(RUBRIC_FILE, pattern) for pattern in patterns)  # shipped in the wheel
    assert (REPO / "mis_bench_dataset" / RUBRIC_FILE).is_file()
    load_rubric.cache_clear()
    for _ in range(3):
        assert [RUBRIC[key].criterion for key in DIMENSION_KEYS] == [
            load_rubric()[key].criterion for key in DIMENSION_KEYS
        ]
    assert load_rubric.cache_info().misses == 1 and load_rubric() is load_rubric()
    with pytest.raises(TypeError):
        load_rubric()["empathy"] = None  # read-only: no caller can change the rubric for the others


def test_table2_ceiling_values():
    # Paper Table 2, percent -> fraction; the CI brackets the estimate.
    assert [round(HUMAN_CEILING[k].icc * 100, 1) for k in DIMENSION_KEYS] == [64, 53, 54, 51, 50, 43, 51, 53]
    for ceiling in HUMAN_CEILING.values():
        assert ceiling.ci_low < ceiling.icc < ceiling.ci_high


def test_table6_statistics_are_on_the_scale():
    for stats in GOLD_STATS.values():
        assert 1.0 <= stats.min < stats.mean < stats.max <= 5.0


@pytest.mark.parametrize("label", ["empathy", "Empathy", "EMP.", "Emp."])
def test_resolve_dimension_accepts_keys_names_and_abbreviations(label):
    assert resolve_dimension(label) == "empathy"


def test_resolve_dimension_names_the_bad_label():
    with pytest.raises(KeyError, match="'kindness'"):
        resolve_dimension("kindness")


@pytest.mark.parametrize(
    "raw",
    [
        "EH0822_T1_Jessica",
        "EH0822_FIS_Time1_Jessica",
        "data/FIS996/EH0822_T1_Jessica",
        "video/openface3/EH0822_T1_Jessica.npz",
    ],
)
def test_video_id_spellings(raw):
    parsed = parse_video_id(raw)
    assert (parsed.clinician, parsed.time_point, parsed.stimulus) == ("EH0822", "T1", "Jessica")
    assert normalize_video_id(raw) == "EH0822_T1_Jessica"


def test_three_letter_clinician_codes_parse():
    assert parse_video_id("AKF0715_T2_John").clinician == "AKF0715"


@pytest.mark.parametrize("raw", ["", "EH0822_T4_Jessica", "EH0822_Jessica", "EH0822_T1_", "T1_Jessica"])
def test_malformed_video_ids_are_named(raw):
    with pytest.raises(ValueError, match="malformed video id"):
        parse_video_id(raw)


@given(
    st.from_regex(r"[A-Z]{2,3}[0-9]{4}", fullmatch=True),
    st.sampled_from(["T1", "T2", "T3"]),
    st.sampled_from(STIMULI),
)
def test_video_id_roundtrip(clinician, time_point, stimulus):
    video_id = f"{clinician}_{time_point}_{stimulus}"
    assert normalize_video_id(video_id) == video_id
    assert normalize_video_id(f"{clinician}_FIS_Time{time_point[1]}_{stimulus}") == video_id
