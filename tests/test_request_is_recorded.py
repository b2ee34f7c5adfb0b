"""What is sent is what the run records: `-M extra_body` adds fields to a request but cannot set one the toolkit
sets and records (the model, the messages, the decoding), nor carry NaN; the server's received bodies equal what
results.json and the response cache record.

Before, `-M 'extra_body={"temperature": 1.5, "messages": []}'` sent requests with no transcript at temperature
1.5 while results.json recorded 0.0; `extra_body={"x": NaN}` sent non-JSON bodies and failed only while caching.
"""

from __future__ import annotations

import json

import pytest

from eval_scripts.backends.openai_backend import CONTROLLED_FIELDS, OpenAIBackend, OpenAIOptions
from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_USAGE, UsageError

from _run_args import batch_args, run_args


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ('{"temperature": 1.5, "messages": []}', "messages, temperature"),
        ('{"max_completion_tokens": 5}', "max_completion_tokens"),
        ('{"seed": 1, "top_p": 0.5}', "seed, top_p"),
        ('{"logprobs": true, "top_logprobs": 3}', "logprobs, top_logprobs"),
        ('{"n": 4}', "n"),
        ('{"stream": true}', "stream"),
        ('{"model": "other"}', "model"),
        ('{"x": NaN}', "NaN"),
        ('{"x": {"y": [Infinity]}}', "Infinity"),
        ('{"x": -1e400}', "overflows"),
    ],
)
@pytest.mark.parametrize("command", ["run", "batch export"])
def test_a_controlled_field_or_a_non_finite_number_is_refused_before_any_request(
    extra, named, command, synthetic_build, tmp_path, capsys, chat_server
) -> None:
    with chat_server() as server:
        if command == "run":
            argv = run_args(synthetic_build, tmp_path / "out", server.base_url, "-M", f"extra_body={extra}", limit=1)
        else:
            argv = batch_args("export", tmp_path / "b.jsonl", synthetic_build, tmp_path / "out", None, "-M",
                              f"extra_body={extra}", limit=1)  # fmt: skip
        code = main(argv)
        assert server.requests == 0
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == EXIT_USAGE and len(lines) == 1, err
    assert "extra_body" in lines[0] and named in lines[0], lines[0]
    assert not (tmp_path / "out").exists() and not (tmp_path / "b.jsonl").exists()


def test_the_python_api_is_held_to_the_same_rule() -> None:
    with pytest.raises(UsageError, match="temperature"):
        OpenAIBackend("m", options=OpenAIOptions(extra_body={"temperature": 2.0}))
    with pytest.raises(UsageError, match="max_output_tokens"):  # the token limit, whatever field names it
        OpenAIBackend("m", options=OpenAIOptions(max_tokens_field="max_output_tokens",
                                                 extra_body={"max_output_tokens": 9}))  # fmt: skip
    with pytest.raises(UsageError, match="strict JSON"):
        OpenAIBackend("m", options=OpenAIOptions(extra_body={"x": float("nan")}))
    assert {"model", "messages", "temperature", "top_p", "seed", "max_tokens", "n"} <= CONTROLLED_FIELDS


def test_the_received_bodies_are_what_results_json_records(synthetic_build, tmp_path, chat_server) -> None:
    extra = {"reasoning_effort": "low", "metadata": {"project": "mis-bench"}}
    out = tmp_path / "out"
    flags = ["--temperature", "0.3", "--top-p", "0.9", "--seed", "7", "--max-new-tokens", "64"]
    with chat_server() as server:
        argv = run_args(synthetic_build, out, server.base_url, *flags, "-M", f"extra_body={json.dumps(extra)}", limit=2)
        assert main(argv) == 0
        bodies = list(server.bodies)
    (results_path,) = out.rglob("results.json")
    results = json.loads(results_path.read_text())
    system = results["system"]
    decoding = system["decoding"]
    assert bodies, "no request reached the server"
    for body in bodies:
        assert body["model"] == system["model"]
        assert body["temperature"] == decoding["temperature"] == 0.3
        assert body["top_p"] == decoding["top_p"] == 0.9
        assert body["max_tokens"] == decoding["max_new_tokens"] == 64
        assert body["seed"] == decoding["seed"] == 7
        assert body["messages"] and body["messages"][-1]["content"], "the transcript and rubric were sent"
        sent_extra = {k: v for k, v in body.items() if k not in CONTROLLED_FIELDS}
        assert sent_extra == extra
    recorded = json.dumps(results, sort_keys=True)
    assert '"reasoning_effort": "low"' in recorded, "the extra fields sent are recorded in results.json"
    (cache,) = out.rglob("responses.cache.jsonl")
    records = [json.loads(line) for line in cache.read_text().splitlines()[1:]]
    assert records and all('"reasoning_effort": "low"' in json.dumps(r, sort_keys=True) for r in records), (
        "the cache key records the extra fields"
    )
