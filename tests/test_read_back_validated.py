"""Files the toolkit reads back are checked on load, one schema each, and a file that fails is refused in one line
naming the field: a results JSON (scores outside their range, a CI with its ends swapped, an unknown dimension)
and a response-cache line (a field of the wrong type, or a key that is not the hash of what the line records: never
served, named by line and field, its row asked again).

Before, a report showed a hand-edited ICC of 1.7 as 170%, and a cache line edited to another temperature or video
was served as the answer to the request its key named.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts.cli import main
from eval_scripts.formats.submission import find_problems
from eval_scripts.harness.response_cache import (
    HEADER_LINE,
    KEYED_FIELDS,
    ResponseCache,
    cache_key,
    read_cache,
    record_schema_problem,
)
from mis_icc_metric import ResamplingOptions, read_references, score_predictions

from _leaderboard_helpers import make_results
from _run_args import run_args


@pytest.fixture(scope="module")
def scored(synthetic_build) -> dict:
    references = read_references(synthetic_build, split="test")
    predictions = {key: min(5.0, value + 0.25) for key, value in references.items()}
    return make_results(
        predictions,
        scores=score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=50, seed=0)),
    )


def _tamper(obj: dict, path: str, value) -> dict:
    copy = json.loads(json.dumps(obj))
    *parents, last = path.split(".")
    node = copy
    for part in parents:
        node = node[part]
    node[last] = value
    return copy


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("scores.dimensions.empathy.icc", 1.7, "$.scores.dimensions.empathy.icc"),
        ("scores.overall.icc", -1.5, "$.scores.overall.icc"),
        ("scores.mean_icc", "high", "$.scores.mean_icc"),
        ("scores.dimensions.wau.icc_ci", [0.6, 0.2], "$.scores.dimensions.wau.icc_ci"),
        ("scores.dimensions.abc.icc_ci", [0.1], "$.scores.dimensions.abc.icc_ci"),
        ("scores.dimensions.abc.n", -4, "$.scores.dimensions.abc.n"),
        ("scores.dimensions.charisma", {"icc": 0.5}, "$.scores.dimensions"),
    ],
)
def test_a_tampered_results_file_is_refused_in_one_line_naming_the_field(
    scored, path, value, named, tmp_path, capsys
) -> None:
    assert find_problems(scored) == [], "the untampered results pass"
    tampered = tmp_path / "results.json"
    tampered.write_text(json.dumps(_tamper(scored, path, value)))
    code = main(["report", str(tampered), "--out", str(tmp_path / "report")])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1, err
    assert named in lines[0] and "not a valid results file" in lines[0], lines[0]
    assert not (tmp_path / "report").exists()


def _record(**changes) -> dict:
    fields = {
        "backend": "openai",
        "model": "m",
        "setting": {"modality": "text", "prompt_style": "direct"},
        "prompt_hash": "p1",
        "video_id": "AB0101_T1_Jessica",
        "dimension": "empathy",
        "decoding": {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 16, "seed": 0},
    }
    record = {"key": cache_key(**fields), "status": "ok", **fields, "response": "Score: 3", "finish_reason": "stop"}
    record.update(changes)
    return record


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"decoding": {"temperature": 1.5, "top_p": 1.0, "max_new_tokens": 16, "seed": 0}}, "field key"),
        ({"video_id": "AB0102_T1_Jessica"}, "field key"),
        ({"video_id": 7}, "field video_id"),
        ({"setting": "text"}, "field setting"),
        ({"attempts": -1}, "field attempts"),
    ],
)
def test_a_tampered_cache_line_is_never_served_and_named_by_line_and_field(changes, named, tmp_path, caplog) -> None:
    assert record_schema_problem(_record()) is None
    cache = tmp_path / "cache.jsonl"
    good = _record()
    tampered = {**_record(prompt_hash="p2"), **changes}  # another row's line, then edited (its key kept)
    tampered["key"] = cache_key(**{**{k: good[k] for k in KEYED_FIELDS}, "prompt_hash": "p2"})
    cache.write_bytes(HEADER_LINE + json.dumps(good).encode() + b"\n" + json.dumps(tampered).encode() + b"\n")
    index = read_cache(cache)
    assert index.get(good["key"]) is not None and index.get(tampered["key"]) is None
    ((line, why),) = index.stats.unusable
    assert line == 3 and named in why, why
    caplog.clear()
    with caplog.at_level("WARNING"), ResponseCache(cache) as opened:
        assert opened.get(tampered["key"]) is None
    warned = [r.getMessage() for r in caplog.records if "line 3" in r.getMessage()]
    assert len(warned) == 1 and named in warned[0], warned


def test_a_run_over_a_tampered_cache_asks_that_row_again(synthetic_build, tmp_path, caplog, chat_server) -> None:
    out = tmp_path / "out"
    with chat_server() as server:
        assert main(run_args(synthetic_build, out, server.base_url, limit=1)) == 0
        cache = next(out.rglob("responses.cache.jsonl"))
        lines = cache.read_bytes().splitlines(keepends=True)
        record = json.loads(lines[1])
        record["decoding"]["temperature"] = 0.9  # what the line says was asked is no longer what its key names
        record["response"] = "Score: 1.0"
        lines[1] = json.dumps(record).encode() + b"\n"
        cache.write_bytes(b"".join(lines))
        asked = server.requests
        with caplog.at_level("WARNING"):
            assert main(run_args(synthetic_build, out, server.base_url, limit=1)) == 0
        assert server.requests == asked + 1, "the tampered answer is not served: its row is asked again"
    warned = [r.getMessage() for r in caplog.records if "line 2" in r.getMessage()]
    assert warned and "field key" in warned[0], warned


def test_records_written_by_a_run_pass_the_schema(tmp_path: Path, synthetic_build, chat_server) -> None:
    out = tmp_path / "out"
    with chat_server() as server:
        assert main(run_args(synthetic_build, out, server.base_url, limit=2)) == 0
    cache = next(out.rglob("responses.cache.jsonl"))
    records = [json.loads(line) for line in cache.read_bytes().splitlines()[1:]]
    assert records and all(record_schema_problem(r) is None for r in records)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ({"custom_id": "a", "response": {"status_code": "200", "body": {}}}, "field response.status_code"),
        ({"custom_id": "a", "response": {"status_code": 200, "body": []}}, "field response.body"),
        ({"custom_id": "a", "response": "ok"}, "field response"),
    ],
)
def test_a_batch_output_line_outside_its_schema_is_refused_naming_the_field(line, named) -> None:
    from eval_scripts.harness.batch_files import parse_output_line
    from mis_bench_dataset.toolkit.errors import DataError

    with pytest.raises(DataError) as refused:
        parse_output_line(line, "out.jsonl, line 4")
    assert named in refused.value.line() and "line 4" in refused.value.line()


@pytest.mark.parametrize(
    ("body", "named"),
    [({"choices": "x"}, "field choices"), ({"choices": [{"message": "hi"}]}, "choices[0].message"), ([], "body")],
)
def test_a_response_body_of_another_shape_is_a_malformed_answer_naming_the_field(body, named) -> None:
    """The live path and a batch import read a body with one parser: a body of another shape is a failed row (asked
    again), never an internal error (a list of choices given as text was an AttributeError in an import)."""
    from eval_scripts.harness.batch_files import parse_output_line

    line = {"custom_id": "a", "response": {"status_code": 200, "body": body}}
    if not isinstance(body, dict):
        with pytest.raises(Exception, match=named):
            parse_output_line(line, "w")
        return
    outcome = parse_output_line(line, "w")[1].answer
    assert not outcome.ok and outcome.failure == "malformed response" and named in outcome.error
