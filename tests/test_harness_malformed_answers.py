"""An answer no server should send (a hostile finish_reason, usage or content; NaN in a cache written before
the fix; a lone surrogate in an imported batch line) is a malformed response, and a rerun heals it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

from _fault_helpers import (
    _error_lines,
    _first_run,
    _rewrite,
    _run_args,
    _strict_lines,
)
from _harness_helpers import chat_completion, prompt_text


def _hostile(field: str):
    """A server whose answers carry one hostile value in `field`, every time."""

    def respond(body: dict) -> tuple[int, dict]:
        payload = chat_completion(prompt_text(body))
        if field == "finish_reason":
            payload["choices"][0]["finish_reason"] = math.nan
        elif field == "usage":
            payload["usage"] = {"prompt_tokens": -5, "completion_tokens": 2, "total_tokens": -3}
        elif field == "content":
            payload["choices"][0]["message"]["content"] = "Score: 3\ud800"
        return 200, payload

    return respond


@pytest.mark.parametrize("field", ["finish_reason", "usage", "content"])
def test_a_hostile_answer_is_a_malformed_response_and_a_rerun_heals(
    field, dataset, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "out"
    with chat_server(respond=_hostile(field)) as server:
        code = main(_run_args(dataset, out, server.base_url, "--json"))
    captured = capsys.readouterr()
    _error_lines(captured.err)
    summary = json.loads(captured.out)
    assert code == EXIT_REQUESTS
    assert summary["failed"] == summary["rows"] and "malformed response" in summary["failures"]
    records = _strict_lines(out / "responses.cache.jsonl")
    assert records and not [r for r in records if r.get("status") == "ok"]
    results = json.loads(Path(summary["results"]).read_text(encoding="utf-8"))
    assert results["outcomes"]["overall"]["failed"] == summary["rows"]
    with chat_server() as healthy:
        assert main(_run_args(dataset, out, healthy.base_url)) == 0
        assert healthy.requests == summary["rows"]


def test_a_cache_written_before_the_fix_with_nan_does_not_break_a_rerun(dataset, tmp_path, capsys, chat_server) -> None:
    cache, args = _first_run(dataset, tmp_path, chat_server)
    lines = cache.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"status":"ok"' in line)
    lines[index] = lines[index].replace('"finish_reason":"stop"', '"finish_reason":NaN')
    assert "NaN" in lines[index]
    _rewrite(cache, lines)
    with chat_server() as healthy:
        args[args.index("--base-url") + 1] = healthy.base_url
        capsys.readouterr()
        assert main(args) == 0, capsys.readouterr().err
        assert healthy.requests == 1  # the poisoned answer is asked again, nothing else


def test_an_imported_batch_line_with_a_lone_surrogate_is_a_malformed_row(synthetic_build, tmp_path, capsys):
    export = tmp_path / "batch.jsonl"
    args = _run_args(synthetic_build, tmp_path / "out", "http://127.0.0.1:9/v1")
    assert main([*args, "--export-batch", str(export)]) == 0
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    outputs = []
    for n, line in enumerate(lines):
        reply = "3\ud800" if n == 0 else "3.5"
        body = chat_completion(prompt_text(line["body"]), reply=reply)
        outputs.append(json.dumps({"custom_id": line["custom_id"], "response": {"status_code": 200, "body": body}}))
    output = tmp_path / "output.jsonl"
    output.write_text("\n".join(outputs) + "\n", encoding="utf-8")
    capsys.readouterr()
    code = main([*args, "--import-batch", str(output), "--json"])
    captured = capsys.readouterr()
    _error_lines(captured.err)
    summary = json.loads(captured.out)["settings"][0]
    assert code == EXIT_REQUESTS
    assert summary["failed"] == 1 and "malformed response" in summary["failures"]
    assert summary["parsed"] == summary["rows"] - 1
