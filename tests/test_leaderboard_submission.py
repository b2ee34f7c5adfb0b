"""Submission schema and validator: every kind of bad input is rejected with its reason."""

from __future__ import annotations

import copy
import json
import math

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts import load_submission, package_submission
from eval_scripts.formats import submission
from eval_scripts.formats.submission import (
    SubmissionError,
    find_problems,
    parse_submission_bytes,
    predictions_mapping,
    validate_results,
)
from mis_bench_dataset import DIMENSION_KEYS

from _leaderboard_helpers import VIDEO_IDS, make_references, make_results, noisy_predictions


@pytest.fixture()
def valid():
    refs = make_references()
    return make_results(noisy_predictions(refs, 0.4, seed=1, none_rate=0.05))


def test_schema_is_a_valid_draft_2020_12_schema_and_names_the_project_dimensions():
    schema = submission.load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"]["enum"] == list(submission.READABLE_SCHEMA_VERSIONS)
    assert submission.READABLE_SCHEMA_VERSIONS == ("1.1",) and submission.SCHEMA_VERSION == "1.1"
    kinds = schema["$defs"]["outcome_counts"]["required"]
    assert kinds == ["answered", "unparsed", "truncated", "failed"]
    dims = schema["properties"]["predictions"]["items"]["properties"]["dimension"]["enum"]
    assert tuple(dims) == DIMENSION_KEYS
    pattern = next(iter(schema["properties"]["parse_rates"]["patternProperties"]))
    assert pattern == "^(" + "|".join(DIMENSION_KEYS) + ")$"


def test_valid_submission_passes_with_full_coverage(valid):
    assert find_problems(valid, video_ids=VIDEO_IDS, split="test") == []
    assert validate_results(valid, video_ids=VIDEO_IDS) is valid
    mapping = predictions_mapping(valid)
    assert len(mapping) == len(VIDEO_IDS) * len(DIMENSION_KEYS)


def _with_outcomes(results: dict) -> dict:
    """Schema 1.1 with an outcomes block counted here by hand: every null prediction a truncated answer."""
    obj = copy.deepcopy(results)
    obj["schema_version"] = "1.1"
    dimensions = {}
    for dim in DIMENSION_KEYS:
        values = [r["prediction"] for r in obj["predictions"] if r["dimension"] == dim]
        dimensions[dim] = {
            "answered": sum(v is not None for v in values),
            "unparsed": 0,
            "truncated": sum(v is None for v in values),
            "failed": 0,
        }
    overall = {kind: sum(counts[kind] for counts in dimensions.values()) for kind in dimensions[DIMENSION_KEYS[0]]}
    obj["outcomes"] = {"overall": overall, "dimensions": dimensions, "failures": {}}
    return obj


def test_a_file_without_and_with_outcomes_both_validate(valid):
    assert valid["schema_version"] == "1.1" and "outcomes" not in valid
    assert find_problems(valid, video_ids=VIDEO_IDS, split="test") == []
    newer = _with_outcomes(valid)
    assert newer["outcomes"]["overall"]["truncated"] > 0
    assert find_problems(newer, video_ids=VIDEO_IDS, split="test") == []


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda o: o.update(schema_version="1.0"), "$.schema_version: unsupported schema version '1.0'"),
        (
            lambda o: o["outcomes"]["dimensions"]["wau"].update(
                answered=o["outcomes"]["dimensions"]["wau"]["answered"] - 1, unparsed=1
            ),
            "$.outcomes.dimensions.wau.answered: ",
        ),
        (lambda o: o["outcomes"]["dimensions"]["abc"].update(failed=3), "$.outcomes.dimensions.abc: counts add up to "),
        (lambda o: o["outcomes"]["overall"].update(failed=1), "$.outcomes.overall: is not the sum"),
        (lambda o: o["outcomes"]["dimensions"].pop("arrr"), "$.outcomes.dimensions: lists "),
        (
            lambda o: o["outcomes"].update(failures={"HTTP 500": {"count": 2, "example": "HTTP 500: boom"}}),
            "$.outcomes.failures: counts add up to 2, but 0 failed",
        ),
        (lambda o: o["outcomes"]["overall"].update(truncated=-1), "$.outcomes.overall.truncated: -1 is less than"),
        (lambda o: o["outcomes"]["overall"].update(cut=0), "Additional properties are not allowed ('cut'"),
    ],
)
def test_outcomes_must_add_up_to_the_predictions(valid, change, reason):
    obj = _with_outcomes(valid)
    change(obj)
    assert reason in _problems(obj)


def _problems(obj, **kw):
    problems = find_problems(obj, video_ids=VIDEO_IDS, split="test", **kw)
    assert problems, "expected a rejection"
    with pytest.raises(SubmissionError) as info:
        validate_results(obj, video_ids=VIDEO_IDS, split="test", source="sub.json")
    assert info.value.reasons == problems and "sub.json" in str(info.value)
    return "\n".join(problems)


def test_wrong_schema_version_is_one_clear_reason(valid):
    valid["schema_version"] = "0.9"
    text = _problems(valid)
    assert "unsupported schema version '0.9'" in text and text.count("\n") == 0
    del valid["schema_version"]
    assert "unsupported schema version None" in _problems(valid)


def test_nan_and_infinity_in_memory_are_rejected(valid):
    valid["predictions"][3]["prediction"] = math.nan
    valid["parse_rates"]["empathy"] = math.inf
    text = _problems(valid)
    assert "$.predictions[3].prediction: NaN or Infinity" in text
    assert "$.parse_rates.empathy: NaN or Infinity" in text


def test_string_where_a_number_belongs(valid):
    valid["predictions"][0]["prediction"] = "3.5"
    assert "$.predictions[0].prediction: '3.5' is not a number in [1.0, 5.0] or null" in _problems(valid)


def test_booleans_are_not_numbers(valid):
    valid["predictions"][0]["prediction"] = True
    assert "$.predictions[0].prediction: True is not a number" in _problems(valid)


@pytest.mark.parametrize("value", [0.9, 5.01, -3, 10])
def test_out_of_range_predictions(valid, value):
    valid["predictions"][2]["prediction"] = value
    assert f"$.predictions[2].prediction: {value!r} is not a number in [1.0, 5.0]" in _problems(valid)


def test_unknown_dimension_and_extra_field(valid):
    valid["predictions"][1]["dimension"] = "charisma"
    valid["predictions"][5]["confidence"] = 0.3
    text = _problems(valid)
    assert "$.predictions[1].dimension: 'charisma' is not one of" in text
    assert "$.predictions[5]: Additional properties are not allowed ('confidence' was unexpected)" in text


def test_missing_required_fields(valid):
    del valid["system"]["model"]
    del valid["created_at"]
    text = _problems(valid)
    assert "$.system: 'model' is a required property" in text
    assert "$ (top level): 'created_at' is a required property" in text


def test_bad_created_at(valid):
    valid["created_at"] = "yesterday"
    assert "$.created_at: 'yesterday' is not" in _problems(valid)


def test_missing_videos_break_coverage(valid):
    dropped = VIDEO_IDS[4]
    valid["predictions"] = [row for row in valid["predictions"] if row["video_id"] != dropped]
    text = _problems(valid)
    assert f"coverage: 8 of {len(VIDEO_IDS) * 8} (video, dimension) pairs" in text
    assert repr(dropped) in text


def test_extra_videos_are_unknown(valid):
    valid["predictions"].append({"video_id": "ZZ9999_T1_Luke", "dimension": "abc", "prediction": 3.0})
    assert "video 'ZZ9999_T1_Luke' is not in the evaluated split" in _problems(valid)


def test_malformed_and_noncanonical_video_ids(valid):
    valid["predictions"][0]["video_id"] = "not-a-video"
    original = valid["predictions"][9]["video_id"]
    clinician, time, stimulus = original.split("_")
    valid["predictions"][9]["video_id"] = f"{clinician}_FIS_Time{time[1]}_{stimulus}"
    text = _problems(valid)
    assert "$.predictions[0].video_id: malformed video id 'not-a-video'" in text
    assert f"is not canonical; write {original!r}" in text


def test_duplicate_predictions(valid):
    valid["predictions"].append(copy.deepcopy(valid["predictions"][7]))
    row = valid["predictions"][7]
    assert f"duplicate prediction for ({row['video_id']!r}, {row['dimension']!r})" in _problems(valid)


def test_wrong_split(valid):
    valid["dataset"]["split"] = "validation"
    assert "$.dataset.split: this leaderboard scores split 'test', got 'validation'" in _problems(valid)


def test_non_object_top_level():
    assert find_problems([1, 2]) == ["$ (top level): expected a JSON object, got list"]


def test_without_video_ids_only_shape_is_checked(valid):
    valid["predictions"] = valid["predictions"][:5]
    assert find_problems(valid) == []


def test_many_problems_are_summarised_not_flooded(valid):
    for row in valid["predictions"][:40]:
        row["video_id"] = "bad"
    problems = find_problems(valid)
    assert len([p for p in problems if "malformed video id 'bad'" in p]) == 10
    assert "... and 30 more malformed video ids" in problems


# ----------------------------------------------------------------------------- file loading


def test_malformed_json_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"schema_version": "1.1",', encoding="utf-8")
    with pytest.raises(SubmissionError, match=r"malformed JSON at line 1 column 26.*bad\.json"):
        load_submission(path)


def test_nan_literal_in_file_is_rejected(tmp_path, valid):
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(valid).replace('"prediction": 3.', '"prediction": NaN, "x": 3.', 1))
    with pytest.raises(SubmissionError, match="NaN is not valid JSON"):
        load_submission(path)


def test_duplicate_json_keys_are_rejected():
    with pytest.raises(SubmissionError, match="duplicate JSON object key.*'prediction'"):
        parse_submission_bytes(b'{"prediction": 3.0, "prediction": 4.0}')


def test_oversized_file_is_rejected_before_reading(tmp_path, valid):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(valid))
    with pytest.raises(SubmissionError, match="over the 100-byte limit"):
        load_submission(path, max_bytes=100)


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin.json"
    path.write_bytes(b'{"model": "caf\xe9"}')
    with pytest.raises(SubmissionError, match="not UTF-8"):
        load_submission(path)


def test_missing_file(tmp_path):
    with pytest.raises(SubmissionError, match="cannot read"):
        load_submission(tmp_path / "absent.json")


# ----------------------------------------------------------------------------- packaging


def test_package_is_canonical_and_content_addressed(tmp_path, valid):
    source = tmp_path / "results.json"
    source.write_text(json.dumps(valid, indent=4))
    first = package_submission(source, tmp_path / "out")
    assert first.name.startswith("test-model__text__direct__") and first.suffix == ".json"
    assert json.loads(first.read_text()) == valid
    # Same content, different key order and whitespace -> same file name.
    source.write_text(json.dumps(dict(reversed(list(valid.items())))))
    assert package_submission(source, tmp_path / "out2").name == first.name


def test_package_replaces_an_earlier_entry_of_the_same_system_only_when_asked(tmp_path, valid):
    source = tmp_path / "results.json"
    source.write_text(json.dumps(valid))
    first = package_submission(source, tmp_path / "out")
    rerun = dict(valid, created_at="2030-01-01T00:00:00+00:00")
    source.write_text(json.dumps(rerun))
    kept = package_submission(source, tmp_path / "out")
    assert _visible(tmp_path / "out") == sorted([first.name, kept.name])
    # A file the user put there under a matching name is never removed.
    users = tmp_path / "out" / (first.name.rsplit("__", 1)[0] + "__my-own-copy.json")
    users.write_text("{}")
    rerun["created_at"] = "2031-01-01T00:00:00+00:00"
    source.write_text(json.dumps(rerun))
    latest = package_submission(source, tmp_path / "out", replace_previous=True)
    assert _visible(tmp_path / "out") == sorted([latest.name, users.name])


def _visible(folder):
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))


def test_package_refuses_invalid(tmp_path, valid):
    valid["predictions"][0]["prediction"] = 7
    source = tmp_path / "results.json"
    source.write_text(json.dumps(valid))
    with pytest.raises(SubmissionError, match="results.json"):
        package_submission(source, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_package_size_is_checked_before_anything_is_written(tmp_path, valid):
    """The canonical package (indented) is larger than a compact file: checked against the limit first."""
    source = tmp_path / "results.json"
    source.write_text(json.dumps(valid, separators=(",", ":")))
    limit = source.stat().st_size + 10
    with pytest.raises(SubmissionError, match="the canonical package would be .* MB, over the"):
        package_submission(source, tmp_path / "out", max_bytes=limit)
    assert not (tmp_path / "out").exists()
    assert package_submission(source, tmp_path / "out", max_bytes=limit * 4).stat().st_size > limit


def test_a_package_that_cannot_be_written_leaves_nothing(tmp_path, valid, monkeypatch):
    import errno

    from mis_bench_dataset.toolkit.ownership import read_manifest

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    source = tmp_path / "results.json"
    source.write_text(json.dumps(valid))
    monkeypatch.setattr(submission, "write_atomic", full)
    with pytest.raises(OSError, match="No space"):
        package_submission(source, tmp_path / "new")
    assert not (tmp_path / "new").exists()
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "mine.txt").write_text("the user's")
    with pytest.raises(OSError, match="No space"):
        package_submission(source, tmp_path / "old")
    assert [p.name for p in (tmp_path / "old").iterdir()] == ["mine.txt"] and read_manifest(tmp_path / "old") == {}


def test_push_opens_a_pull_request_not_a_commit_to_main(tmp_path):
    calls = []

    class FakeApi:
        def upload_file(self, **kwargs):
            calls.append(kwargs)
            return type("CommitInfo", (), {"pr_url": "https://hub/pr/3", "commit_url": "https://hub/commit/x"})()

    package = tmp_path / "m__text__direct__abc.json"
    package.write_text("{}")
    assert submission.push_submission(package, "org/requests", api=FakeApi()) == "https://hub/pr/3"
    assert calls[0]["create_pr"] is True and calls[0]["path_in_repo"] == "requests/m__text__direct__abc.json"


# ----------------------------------------------------------------------------- fuzzing

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    field=st.sampled_from(["system", "setting", "dataset", "predictions", "scores", "parse_rates", "created_at"]),
    value=json_values,
)
def test_fuzz_any_field_value_gives_reasons_or_passes_never_crashes(field, value):
    refs = make_references(VIDEO_IDS[:3])
    obj = make_results(noisy_predictions(refs, 0.3, seed=0))
    obj[field] = value
    problems = find_problems(obj, video_ids=VIDEO_IDS[:3])
    assert all(isinstance(p, str) and p for p in problems)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=200))
def test_fuzz_arbitrary_bytes_parse_or_raise_submission_error(data):
    try:
        parsed = parse_submission_bytes(data)
    except SubmissionError as err:
        assert err.reasons
    else:
        assert isinstance(find_problems(parsed), list)


def test_the_quick_check_is_the_schemas_own_verdict(valid):
    """`_valid_quickly` splits the predictions into per-value jsonschema checks: a valid file passes it, and the
    per-value reading of the schema still sees what jsonschema sees on the whole file."""
    assert submission._valid_quickly(valid) and submission._schema_problems(valid) == []
    assert submission._item_validators() is not None  # the shipped schema takes the quick path


@settings(max_examples=200, deadline=None)
@given(
    key=st.sampled_from(["video_id", "dimension", "prediction", "raw_response", "extra"]),
    value=json_values | st.floats(0.5, 5.5) | st.sampled_from([1, 5, 5.0, True, 0, "", "x" * 201, None]),
    drop=st.booleans(),
)
def test_fuzz_quick_check_never_passes_what_jsonschema_rejects(key, value, drop):
    refs = make_references(VIDEO_IDS[:3])
    obj = make_results(noisy_predictions(refs, 0.3, seed=0))
    item = obj["predictions"][1]
    if drop and key in item:
        del item[key]
    else:
        item[key] = value
    whole = submission._validator().is_valid(obj)
    assert submission._valid_quickly(obj) == whole
    assert (submission._schema_problems(obj) == []) == whole
