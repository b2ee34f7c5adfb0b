"""Response caches proven before any change, every record checked before it is served, every new answer
sanitised before it is cached, and `mis-bench cache check|merge` for several machines' caches."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts import Backend, Completion, DecodingConfig, Prompt, check_cache, merge_caches
from eval_scripts.answers.answer_status import answer_problem
from eval_scripts.cli import main
from eval_scripts.harness.cached_backend import CachingBackend
from eval_scripts.harness.response_cache import (
    HEADER_LINE,
    CacheError,
    ResponseCache,
    cache_key,
    iter_records,
    read_cache,
)
from mis_bench_dataset.toolkit.errors import EXIT_DATA, EXIT_USAGE, UsageError

from _run_args import TEST_KEY_ENV, run_args


def _key(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _answer(name: str, response: str = "3.5", **extra) -> dict:
    return {
        "key": _key(name),
        "status": "ok",
        "video_id": f"V{name}",
        "dimension": "empathy",
        "prompt_hash": f"p{name}",
        "response": response,
        "finish_reason": "stop",
        **extra,
    }


def _write(path: Path, records: list[dict], header: bool = True) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_bytes((HEADER_LINE if header else b"") + text.encode())
    return path


def _serve(cache, name: str) -> dict | None:
    return cache.answer_for(_key(name), video_id=f"V{name}", dimension="empathy", prompt_hash=f"p{name}")


# ----------------------------------------------------------------------------- proof


NOT_CACHES = {
    "notes.json": b'{"meeting": "Tuesday"}',  # no final newline: the old loader cut it as a "torn line"
    "results.json": b'{\n "schema_version": "1.1"\n}\n',
    "predictions.jsonl": b'{"video_id": "A", "dimension": "empathy", "prediction": 3.5}\n',
    "raw_responses.jsonl": b'{"video_id": "A", "status": "ok", "response": "3.5"}\n',
    "shard.parquet": b"PAR1\x15\x04\x15\x10\x15\x14L\x15\x02\x15\x00\x12\x00\x00\x08\x1c\n",
    "notes.txt": b"remember the milk\nand the bread",
    "binary.bin": bytes(range(256)),
    "list.json": b"[1, 2, 3]\n",
}


@pytest.mark.parametrize("name", sorted(NOT_CACHES))
def test_a_file_that_is_not_a_cache_is_refused_byte_for_byte_unchanged(name, tmp_path) -> None:
    path = tmp_path / name
    path.write_bytes(NOT_CACHES[name])
    with pytest.raises(CacheError, match="is not a response cache"):
        ResponseCache(path).open()
    with pytest.raises(CacheError, match="is not a response cache"):
        read_cache(path)
    assert path.read_bytes() == NOT_CACHES[name]


def test_a_new_or_empty_file_becomes_a_cache_with_its_header(tmp_path) -> None:
    for path in (tmp_path / "new.jsonl", tmp_path / "empty.jsonl"):
        if path.name == "empty.jsonl":
            path.write_bytes(b"")
        with ResponseCache(path) as cache:
            cache.append(_answer("a"))
        assert path.read_bytes().startswith(HEADER_LINE)
        assert [r["key"] for r in iter_records(path)] == [_key("a")]


def test_a_cache_written_before_headers_is_still_a_cache(tmp_path) -> None:
    path = _write(tmp_path / "old.jsonl", [_answer("a"), _answer("b")], header=False)
    with ResponseCache(path) as cache:
        assert _serve(cache, "a")["response"] == "3.5" and len(cache) == 2


def test_only_a_proven_cache_gets_its_torn_tail_repaired(tmp_path) -> None:
    cache_file = _write(tmp_path / "c.jsonl", [_answer("a")])
    with open(cache_file, "ab") as handle:
        handle.write(b'{"key": "torn", "sta')
    with ResponseCache(cache_file) as cache:
        assert cache.stats.torn_tail_bytes == len(b'{"key": "torn", "sta')
    assert cache_file.read_bytes().endswith(b"\n")
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"line one\nline two without an end")
    with pytest.raises(CacheError):
        ResponseCache(notes).open()
    assert notes.read_bytes() == b"line one\nline two without an end"


def test_a_cache_inside_the_dataset_or_on_an_input_is_refused_even_when_new(tmp_path) -> None:
    dataset = tmp_path / "bld"
    (dataset / "scoring").mkdir(parents=True)
    imported = tmp_path / "output.jsonl"
    imported.write_text("{}\n")
    for path in (dataset / "responses.jsonl", dataset / "scoring" / "new.jsonl", imported):
        with pytest.raises(UsageError, match="--cache"):
            ResponseCache(path, protected=[dataset, imported]).open()
    assert sorted(p.name for p in dataset.rglob("*")) == ["scoring"] and imported.read_text() == "{}\n"


def test_a_cache_is_never_replaced_by_a_second_first_open(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    with ResponseCache(path) as cache:
        cache.append(_answer("a"))
    with ResponseCache(path) as cache:  # the header is written once, never again
        assert len(cache) == 1
    assert path.read_bytes().count(HEADER_LINE) == 1


# ----------------------------------------------------------------------------- records checked


def test_records_with_more_fields_and_any_decoding_are_served(tmp_path) -> None:
    """Records another version writes (an expected score, digit mass, a sample index; other decoding keys)."""
    decoding = {"temperature": 0.7, "scoring_mode": "expected", "sample_index": 3, "new_knob": [1, 2]}
    key = cache_key(
        backend="openai",
        model="m",
        setting={"modality": "text"},
        prompt_hash="pa",
        video_id="Va",
        dimension="empathy",
        decoding=decoding,
    )
    record = {
        **_answer("a"),
        "key": key,
        "decoding": decoding,
        "expected_score": 3.42,
        "digit_mass": 0.97,
        "sample_index": 3,
        "logprobs": {"3": -0.1},
    }
    with ResponseCache(_write(tmp_path / "c.jsonl", [record])) as cache:
        served = cache.answer_for(key, video_id="Va", dimension="empathy", prompt_hash="pa")
    assert served["expected_score"] == 3.42 and served["sample_index"] == 3


def test_identical_duplicates_are_one_answer_and_different_ones_a_named_conflict(tmp_path) -> None:
    path = _write(tmp_path / "c.jsonl", [_answer("a"), _answer("a", attempts=2), _answer("b"), _answer("b", "4.0")])
    with ResponseCache(path) as cache:
        assert _serve(cache, "a")["response"] == "3.5" and cache.stats.duplicates == 1
        with pytest.raises(CacheError) as info:
            _serve(cache, "b")
    message = info.value.line()
    assert "'3.5' (line 4)" in message and "'4.0' (line 5)" in message and "mis-bench cache merge" in message


@pytest.mark.parametrize(
    "change, why",
    [
        ({"finish_reason": math.nan}, "finish_reason"),
        ({"usage": {"prompt_tokens": -1}}, "usage.prompt_tokens"),
        ({"usage": {"completion_tokens": 10**12}}, "usage.completion_tokens"),
        ({"usage": {"total_tokens": 2.5}}, "usage.total_tokens"),
        ({"response": "3\ud800"}, "surrogate"),
        ({"response": None}, "no response text"),
        ({"response": 3.5}, "not text"),
        ({"latency_s": math.inf}, "non-finite"),
    ],
)
def test_an_answer_that_could_break_a_run_is_never_served(change, why, tmp_path, caplog) -> None:
    record = {**_answer("a"), **change}
    path = tmp_path / "c.jsonl"
    path.write_bytes(HEADER_LINE + json.dumps(record).encode() + b"\n")  # NaN, \ud800 as an older version wrote them
    with caplog.at_level("WARNING"), ResponseCache(path) as cache:
        assert _serve(cache, "a") is None
        assert cache.stats.unusable and why in cache.stats.unusable[0][1]
    assert any("line 2" in r.getMessage() and "asked again" in r.getMessage() for r in caplog.records)


class _Scripted(Backend):
    """A backend answering each prompt with what `answers` holds for it (text, finish_reason, usage)."""

    name = "scripted"

    def __init__(self, answers):
        super().__init__("m")
        self.answers = answers

    def complete(self, prompts, decoding):
        for index, prompt in enumerate(prompts):
            text, finish_reason, usage = self.answers[prompt.video_id]
            yield Completion(index, text, True, finish_reason=finish_reason, usage=usage)


def _prompts(n: int) -> list[Prompt]:
    return [Prompt(f"V{i}", "empathy", f"text {i}") for i in range(n)]


hostile_text = st.text(st.one_of(st.characters(), st.sampled_from(["\ud800", "\udfff", "\udcc3"])), max_size=30)
hostile_finish = st.one_of(st.none(), st.text(max_size=5), st.floats(), st.integers(), st.just(["x"]))
hostile_count = st.one_of(st.integers(-(10**12), 10**12), st.floats(), st.booleans(), st.text(max_size=3))
hostile_usage = st.one_of(st.none(), st.dictionaries(st.sampled_from(["prompt_tokens", "total_tokens"]), hostile_count))


@settings(max_examples=60, deadline=None)
@given(answers=st.lists(st.tuples(hostile_text, hostile_finish, hostile_usage), min_size=1, max_size=6))
def test_whatever_a_backend_answers_the_cache_stays_strict_and_a_rerun_works(answers, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("hostile") / "c.jsonl"
    prompts = _prompts(len(answers))
    backend = _Scripted({p.video_id: answer for p, answer in zip(prompts, answers, strict=True)})
    decoding = DecodingConfig()
    with ResponseCache(path) as cache:
        outcomes = list(CachingBackend(backend, cache, {"modality": "text"}).complete(prompts, decoding))
    for outcome in outcomes:
        text, finish_reason, usage = answers[outcome.index]
        assert outcome.ok == (answer_problem(text, finish_reason, usage) is None)
        assert outcome.ok or outcome.failure == "malformed response"

    def refuse(token):
        raise ValueError(token)

    for line in (
        path.read_bytes().decode("utf-8").split("\n")[:-1]
    ):  # strict JSON, valid UTF-8 (answers may hold U+0085)
        json.loads(line, parse_constant=refuse)
    with ResponseCache(path) as cache:  # a rerun serves exactly the good answers, and nothing breaks
        caching = CachingBackend(backend, cache, {"modality": "text"})
        assert sorted(caching.pending(prompts, decoding)) == sorted(o.index for o in outcomes if not o.ok)


# ----------------------------------------------------------------------------- check and merge


def test_merge_keeps_agreeing_answers_once_and_conflicts_apart(tmp_path) -> None:
    one = _write(tmp_path / "machine1.jsonl", [_answer("a"), _answer("b"), {**_answer("c"), "status": "failed"}])
    two = _write(tmp_path / "machine2.jsonl", [_answer("a"), _answer("b", "2.0"), _answer("c"), _answer("d")])
    before = (one.read_bytes(), two.read_bytes())
    report = merge_caches([one, two], tmp_path / "merged.jsonl")
    assert (one.read_bytes(), two.read_bytes()) == before
    assert report.conflicting_keys == 1 and report.conflict_records == 2 and report.duplicates == 1
    with ResponseCache(tmp_path / "merged.jsonl") as cache:
        assert _serve(cache, "a")["response"] == "3.5" and _serve(cache, "c") and _serve(cache, "d")
        assert _serve(cache, "b") is None  # neither answer: the next run asks again
    apart = check_cache(report.conflicts_path)
    assert [sorted(a["response"] for a in c["answers"]) for c in apart.conflicts] == [["2.0", "3.5"]]
    assert check_cache(tmp_path / "merged.jsonl").ok


def test_merge_drops_answers_an_older_version_cached_with_nan(tmp_path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(_answer("a", finish_reason=math.nan)) + "\n" + json.dumps(_answer("b")) + "\n")
    report = merge_caches([path], tmp_path / "clean.jsonl")
    assert report.unusable_dropped == 1 and report.answers_out == 1
    assert "NaN" not in (tmp_path / "clean.jsonl").read_text()


def test_the_cache_command_checks_merges_and_refuses_its_inputs(tmp_path, capsys) -> None:
    one = _write(tmp_path / "m1.jsonl", [_answer("a"), _answer("b")])
    two = _write(tmp_path / "m2.jsonl", [_answer("b", "4.0")])
    assert main(["cache", "check", str(one)]) == 0
    assert "2 answers" in capsys.readouterr().out
    merged = tmp_path / "merged.jsonl"
    assert main(["cache", "merge", str(one), str(two), "--out", str(merged), "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["conflicting_keys"] == 1 and outcome["conflicts_path"] == str(merged) + ".conflicts.jsonl"
    assert main(["cache", "check", outcome["conflicts_path"]]) == EXIT_DATA
    capsys.readouterr()
    assert main(["cache", "merge", str(one), str(two), "--out", str(one)]) == EXIT_USAGE
    assert "would overwrite the input" in capsys.readouterr().err
    notes = tmp_path / "notes.json"
    notes.write_text("{}")
    assert main(["cache", "check", str(notes)]) == EXIT_DATA
    assert "not a response cache" in capsys.readouterr().err


def test_two_machines_caches_merged_serve_a_run_without_calls(synthetic_build, tmp_path, chat_server) -> None:
    common = {"model": "m", "api_key_env": TEST_KEY_ENV}
    with chat_server() as server:
        for machine, limit in (("m1", 1), ("m2", 2)):
            assert main(run_args(synthetic_build, tmp_path / machine, server.base_url, limit=limit, **common)) == 0
        merged = tmp_path / "merged.jsonl"
        caches = [str(tmp_path / m / "responses.cache.jsonl") for m in ("m1", "m2")]
        assert main(["cache", "merge", *caches, "--out", str(merged)]) == 0
        asked = server.requests
        rerun = run_args(synthetic_build, tmp_path / "m3", server.base_url, limit=2, **common)
        assert main([*rerun, "--cache", str(merged)]) == 0
        assert server.requests == asked  # every row answered from the merged cache
