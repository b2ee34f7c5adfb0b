"""The served model recorded: the `model` each response names is kept with the answer (response cache, raw
responses, results.json); replicas serving different models, or a name unrelated to --model, are warned about
on stderr and in the results; --strict-model refuses such answers (failed rows, never cached as answers)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from eval_scripts.backends.served_model import same_model, served_model_warnings
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

from _harness_helpers import chat_completion, prompt_text
from _run_args import run_args

ROWS = 16  # --limit 2: two videos x eight dimensions


@pytest.mark.parametrize(
    ("asked", "served", "same"),
    [
        ("gpt-4o", "gpt-4o", True),
        ("gpt-4o", "gpt-4o-2024-08-06", True),  # OpenAI's dated alias
        ("gpt-4", "gpt-4-0613", True),
        ("claude-3-5-sonnet", "claude-3-5-sonnet-20240620", True),
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct@main", True),  # transformers serve's revision
        ("gpt-4o", None, True),  # a server that names no model
        ("gpt-4o", "gpt-4o-mini", False),
        ("gpt-4o", "gpt-4o-mini-2024-07-18", False),
        ("gpt-4o-mini", "gpt-4o", False),
        ("gpt-4o", "gpt-4o-2024-08-06-extra", False),
        ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", False),
    ],
)
def test_a_served_name_is_the_model_asked_for_only_as_itself_a_revision_or_a_dated_alias(asked, served, same):
    assert same_model(asked, served) is same


def test_warnings_name_each_model_and_how_many_answers_it_gave() -> None:
    assert served_model_warnings("m", {"m": 10}) == []
    assert served_model_warnings("gpt-4o", {"gpt-4o-2024-08-06": 3, "gpt-4o-2024-05-13": 2}) == [
        "the answers name 2 different models: 'gpt-4o-2024-05-13' (2), 'gpt-4o-2024-08-06' (3)"
    ]
    assert served_model_warnings("m", {"m": 3, "other": 1}) == [
        "the answers name 2 different models: 'm' (3), 'other' (1)",
        "1 answer(s) came from 'other', not from --model 'm' (nor a dated alias of it)",
    ]


def naming(served: str):
    """`chat_server(respond=naming(served))`: a server that answers every request, naming `served` as the model that
    answered."""
    return lambda body: (200, chat_completion(prompt_text(body), model=served))


_args = partial(run_args, limit=2, concurrency=2, retries=1, backoff_base=0.001, backoff_max=0.002, as_json=True)


def test_a_replica_serving_another_model_is_recorded_and_warned_about(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with chat_server() as right, chat_server(respond=naming("stale-model")) as wrong:
        assert main(_args(synthetic_build, out, [right.base_url, wrong.base_url])) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    counts = {"fake-model": len(right.sent), "stale-model": len(wrong.sent)}
    assert counts["fake-model"] and counts["stale-model"] and sum(counts.values()) == ROWS
    results = json.loads(Path(summary["results"]).read_text())
    assert results["system"]["served_models"] == summary["served_models"] == counts
    warnings = results["system"]["model_warnings"]
    assert (
        warnings
        == summary["model_warnings"]
        == [
            f"the answers name 2 different models: 'fake-model' ({counts['fake-model']}), "
            f"'stale-model' ({counts['stale-model']})",
            f"{counts['stale-model']} answer(s) came from 'stale-model', not from --model 'fake-model' "
            "(nor a dated alias of it)",
        ]
    )
    lines = [line for line in captured.err.splitlines() if line.startswith("mis-bench run: warning:")]
    assert len(lines) == 2 and all(w in line for w, line in zip(warnings, lines, strict=True))
    # each answer with the name its response gave: the cache and the raw responses agree with the servers
    raw = [json.loads(line) for line in (Path(summary["results"]).parent / "raw_responses.jsonl").open()]
    cached = [r["served_model"] for r in iter_records(out / "responses.cache.jsonl") if r["status"] == "ok"]
    assert {name: cached.count(name) for name in set(cached)} == counts
    assert {name: [r["served_model"] for r in raw].count(name) for name in counts} == counts
    # a rerun serves the cached answers, names and warnings included
    assert main(_args(synthetic_build, out, ["http://127.0.0.1:9/v1"])) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["cached"] == ROWS and again["served_models"] == counts and again["model_warnings"] == warnings


def test_strict_model_sends_the_rows_to_the_replica_serving_the_model(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with chat_server() as right, chat_server(respond=naming("stale-model")) as wrong:
        assert main(_args(synthetic_build, out, [right.base_url, wrong.base_url], "--strict-model")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert wrong.requests >= 1 and len(right.sent) == ROWS  # every refused row was answered by the right one
    assert summary["served_models"] == {"fake-model": ROWS} and summary["model_warnings"] == []
    records = list(iter_records(out / "responses.cache.jsonl"))
    refused = [r for r in records if r["status"] != "ok"]
    assert {r.get("served_model") for r in records if r["status"] == "ok"} == {"fake-model"}
    assert all("another model" in (r["error"] or "") for r in refused)


def test_strict_model_refuses_every_answer_of_a_server_of_another_model(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with chat_server(respond=naming("gpt-4o-mini")) as wrong:
        code = main(_args(synthetic_build, out, [wrong.base_url], "--strict-model"))
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert code == EXIT_REQUESTS and wrong.requests == ROWS  # one request a row: no retry changes the model
    assert summary["failed"] == ROWS and list(summary["failures"]) == ["another model"]
    assert summary["failures"]["another model"]["example"] == (
        "another model: the server answered as 'gpt-4o-mini', not --model 'fake-model' (--strict-model)"
    )
    assert not [r for r in iter_records(out / "responses.cache.jsonl") if r["status"] == "ok"]  # none cached
