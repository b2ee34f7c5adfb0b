"""The append-only response cache: torn tails, corruption, duplicates, locking."""

from __future__ import annotations

import json

import pytest

from eval_scripts.harness.response_cache import CacheError, ResponseCache, cache_key, iter_records


def _record(key: str, status: str = "ok", response: str | None = "3.5") -> dict:
    return {"key": key, "status": status, "response": response if status == "ok" else None}


def test_key_depends_on_every_component() -> None:
    base = dict(
        backend="openai",
        model="m",
        setting={"modality": "text"},
        prompt_hash="p",
        video_id="v",
        dimension="wau",
        decoding={"temperature": 0.0},
    )
    keys = {cache_key(**base)}
    for field, value in [
        ("backend", "vllm"),
        ("model", "m2"),
        ("setting", {"modality": "audio+text"}),
        ("prompt_hash", "q"),
        ("video_id", "w"),
        ("dimension", "abc"),
        ("decoding", {"temperature": 0.7}),
    ]:
        keys.add(cache_key(**{**base, field: value}))
    assert len(keys) == 8
    assert cache_key(**base) == cache_key(**dict(reversed(list(base.items()))))


def test_answers_survive_reopen_and_failed_records_are_not_answers(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    with ResponseCache(path) as cache:
        cache.append(_record("a"))
        cache.append(_record("b", "failed"))
        assert "a" in cache and "b" not in cache
    with ResponseCache(path) as cache:
        assert cache.get("a")["response"] == "3.5" and "b" not in cache
        assert cache.stats.failed_records == 1
        cache.append(_record("b", response="4.0"))
        cache.append(_record("a", response="1.0"))  # already answered: ignored, not a second row
    rows = list(iter_records(path))
    assert [(r["key"], r["status"]) for r in rows] == [("a", "ok"), ("b", "failed"), ("b", "ok")]


def test_torn_last_line_is_dropped_then_appending_works(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    with ResponseCache(path) as cache:
        cache.append(_record("a"))
    with open(path, "ab") as handle:
        handle.write(b'{"key": "b", "status": "o')  # killed mid-write
    with ResponseCache(path) as cache:
        assert cache.stats.torn_tail_bytes == len(b'{"key": "b", "status": "o')
        assert "a" in cache and "b" not in cache
        cache.append(_record("b"))
    header, *lines = path.read_bytes().splitlines()
    assert json.loads(header)["mis_bench_cache"] == 1
    assert [json.loads(line)["key"] for line in lines] == ["a", "b"]


def test_corrupt_middle_line_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(_record("a")) + "\nnot json\n" + json.dumps(_record("b")) + "\n")
    with pytest.raises(CacheError, match=r"c\.jsonl, line 2: malformed cache record"):
        ResponseCache(path).open()


def test_second_writer_is_refused(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    with ResponseCache(path), pytest.raises(CacheError, match="another run is writing this cache"):
        ResponseCache(path).open()
    with ResponseCache(path) as cache:  # released on close
        assert len(cache) == 0


def test_a_cache_reached_through_a_link_is_one_cache_with_one_lock(tmp_path) -> None:
    """A symlink to the cache, or to its folder (clusters link scratch folders), is refused like the cache itself."""
    path = tmp_path / "real" / "c.jsonl"
    path.parent.mkdir()
    (tmp_path / "link.jsonl").symlink_to(path)
    (tmp_path / "linked").symlink_to(path.parent, target_is_directory=True)
    with ResponseCache(path):
        for other in (tmp_path / "link.jsonl", tmp_path / "linked" / "c.jsonl"):
            with pytest.raises(CacheError, match="another run is writing this cache"):
                ResponseCache(other).open()
    with ResponseCache(tmp_path / "link.jsonl") as cache:  # released on close, the lock file reused
        assert len(cache) == 0
    assert sorted(p.name for p in path.parent.iterdir()) == [".c.jsonl.lock", "c.jsonl"]


def test_bad_status_is_rejected(tmp_path) -> None:
    with (
        ResponseCache(tmp_path / "c.jsonl") as cache,
        pytest.raises(ValueError, match="one of ok, failed, truncated"),
    ):
        cache.append({"key": "a", "status": "maybe"})


@pytest.mark.parametrize(
    ("readout", "style", "status"),
    [
        ("text", "direct", "truncated"),
        ("text", "paper", "truncated"),
        ("text", "cot", "truncated"),
        ("expected", "direct", "ok"),  # its score is in the first tokens: the short limit cuts the rest by design
        ("expected", "paper", "ok"),
        ("expected", "cot", "truncated"),  # its score comes last: a cut CoT answer has none
        ("expected", None, "truncated"),
    ],
)
def test_the_one_truncation_rule_knows_the_expected_readout_of_a_score_first_style(readout, style, status) -> None:
    from eval_scripts.answers.answer_status import FINISH_LENGTH, outcome_status

    assert outcome_status(True, FINISH_LENGTH, score_from=readout, style=style) == status
    assert outcome_status(True, "stop", score_from=readout, style=style) == "ok"
    assert outcome_status(False, FINISH_LENGTH, score_from=readout, style=style) == "failed"


def test_an_expected_record_with_a_non_finite_number_is_never_cached(tmp_path) -> None:
    from eval_scripts import Backend, Completion, DecodingConfig, Prompt
    from eval_scripts.answers.answer_status import answer_problem
    from eval_scripts.harness.cached_backend import CachingBackend

    assert answer_problem("3.5", "stop", None, {"score": 3.5, "reason": None}) is None
    assert "finite" in answer_problem("3.5", "stop", None, {"score": float("nan")})
    assert "finite" in answer_problem("3.5", "stop", None, [3.5])

    class NaNExpected(Backend):
        name = "nan-expected"

        def complete(self, prompts, decoding):
            for index, _ in enumerate(prompts):
                yield Completion(index, "3.5", True, finish_reason="stop", expected={"score": float("inf")})

    path = tmp_path / "c.jsonl"
    decoding = DecodingConfig.for_style("direct", score_from="expected")
    with ResponseCache(path) as cache:
        (completion,) = CachingBackend(NaNExpected("m"), cache, {"s": 1}).complete([Prompt("v", "wau", "t")], decoding)
    assert not completion.ok and completion.failure == "malformed response" and completion.expected is None
    (record,) = iter_records(path)
    assert record["status"] == "failed" and "expected" not in record


def test_truncated_and_failed_outcomes_are_recorded_but_never_answers(tmp_path) -> None:
    from eval_scripts.answers.answer_status import FINISH_LENGTH, outcome_status

    assert outcome_status(True, "stop") == "ok" and outcome_status(True, None) == "ok"
    assert outcome_status(True, FINISH_LENGTH) == "truncated" and outcome_status(False, "stop") == "failed"
    path = tmp_path / "c.jsonl"
    with ResponseCache(path) as cache:
        cache.append({"key": "a", "status": "truncated", "response": "3."})
        cache.append({"key": "b", "status": "failed", "response": None})
        assert "a" not in cache and "b" not in cache
    with ResponseCache(path) as cache:
        assert len(cache) == 0 and cache.stats.failed_records == 2
