"""Batch files, dry runs and token accounting, end to end through `mis-bench batch export|import` and `mis-bench
run` (`run --export-batch/--import-batch`, the older form, at the end).

A simulated provider answers an exported batch (shuffled lines, both shapes of error lines,
truncated answers, a malformed body, missing lines, a repeated line, an unknown id); the local
Chat Completions server answers a live run with exactly the same responses. The import must
equal the live run byte for byte in predictions, a re-export must hold exactly the unanswered
rows, and `--dry-run` / `batch export` must open no connection.
"""

from __future__ import annotations

import json
import math
import socket
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts.cli import main

from _batch_helpers import UNKNOWN_ID, closed_port_url, read_batch_input, simulate_provider
from _harness_helpers import fake_reply, fake_usage, prompt_text
from _run_args import batch_args, run_args

GRID = ["--grid", "--modalities", "text,audio+text", "--prompts", "direct,cot"]
SETTING_DIRS = ("text__direct", "text__cot", "audio-text__direct__features-text", "audio-text__cot__features-text")
MODEL = "fake-model"


_FLAGS = {"model": MODEL, "limit": 2, "retries": 0, "backoff_base": 0}
_run = partial(run_args, **_FLAGS)
_batch = partial(batch_args, **_FLAGS)  # `mis-bench batch export|import FILE` with the run's flags


@contextmanager
def refusing_connections():
    """Every attempt to open a connection is recorded (and fails)."""
    attempts: list[tuple] = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("this test allows no network connection")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "create_connection", refuse)
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        yield attempts


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _results(path: Path) -> dict:
    """A results file without what may differ between an import and a live run: the time, and the kinds of
    failure (a provider's own error line has no HTTP status; the counts of failed rows are compared)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    results.pop("created_at")
    failures = results.get("outcomes", {}).pop("failures", {})
    results["n_failures"] = sum(entry["count"] for entry in failures.values())
    return results


@pytest.fixture(scope="module")
def exported(synthetic_build, tmp_path_factory):
    """The grid's batch file, exported with the server URL pointing at a closed port and sockets refused."""
    root = tmp_path_factory.mktemp("exported")
    with refusing_connections() as attempts:
        code = main(
            _batch(
                "export",
                root / "batch" / "in.jsonl",
                synthetic_build,
                root / "unused",
                closed_port_url(),
                *GRID,
            )
        )
    assert code == 0 and attempts == []
    return root / "batch" / "in.jsonl"


def test_import_equals_a_live_run_with_the_same_answers(
    synthetic_build, exported, tmp_path, capsys, chat_server
) -> None:
    fates = simulate_provider([exported], tmp_path / "out.jsonl", seed=3)
    assert len(fates.by_id) == 4 * 16 and len(fates.ids("ok")) == 64 - 9
    batch_out, live_out = tmp_path / "from-batch", tmp_path / "live"

    capsys.readouterr()
    with refusing_connections() as attempts:
        code = main(_batch("import", tmp_path / "out.jsonl", synthetic_build, batch_out, closed_port_url(), *GRID))
    assert code == 3 and attempts == []  # rows remain unanswered
    err = capsys.readouterr().err
    duplicated = [line for line in err.splitlines() if "on more than one line" in line]
    assert UNKNOWN_ID in err and len(duplicated) == 1 and duplicated[0].split(": ")[-1] in fates.ids("ok")

    with chat_server(respond=fates.respond) as server:
        capsys.readouterr()
        assert main(_run(synthetic_build, live_out, server.base_url, *GRID, "--concurrency", "1")) == 3
    assert server.requests == 64
    sent = [payload["usage"] for payload in server.sent if "usage" in payload]
    prompt, completion = sum(u["prompt_tokens"] for u in sent), sum(u["completion_tokens"] for u in sent)
    assert (
        f"all settings: tokens: {prompt:,} prompt + {completion:,} completion in {len(sent)} responses; "
        "prefix reuse in the order sent: 50% of requests share"  # 4 settings x 8 dimensions x 2 videos
    ) in capsys.readouterr().out

    for setting in SETTING_DIRS:
        batch_dir, live_dir = batch_out / MODEL / setting, live_out / MODEL / setting
        assert (batch_dir / "predictions.jsonl").read_bytes() == (live_dir / "predictions.jsonl").read_bytes()
        assert _results(batch_dir / "results.json") == _results(live_dir / "results.json")
        batch_raw, live_raw = _jsonl(batch_dir / "raw_responses.jsonl"), _jsonl(live_dir / "raw_responses.jsonl")
        for record in batch_raw + live_raw:
            assert bool(record.pop("error")) == (record["status"] != "ok")  # the wording of errors differs
            assert bool(record.pop("failure")) == (record["status"] == "failed")  # so may the kind (see _results)
        assert batch_raw == live_raw
    # every simulated fault became the outcome the truncation and failure rules say
    statuses = {
        record["status"] for s in SETTING_DIRS for record in _jsonl(batch_out / MODEL / s / "raw_responses.jsonl")
    }
    assert statuses == {"ok", "failed", "truncated"}
    predictions = [p for s in SETTING_DIRS for p in _jsonl(batch_out / MODEL / s / "predictions.jsonl")]
    assert sum(p["prediction"] is not None for p in predictions) == len(fates.ids("ok"))


def test_token_totals_equal_the_sum_of_the_responses_usage(synthetic_build, exported, tmp_path) -> None:
    fates = simulate_provider([exported], tmp_path / "out.jsonl", seed=5)
    out = tmp_path / "runs"
    assert main(_batch("import", tmp_path / "out.jsonl", synthetic_build, out, closed_port_url(), *GRID)) == 3
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0}
    for setting in SETTING_DIRS:
        results = json.loads((out / MODEL / setting / "results.json").read_text())
        usages = [r["usage"] for r in _jsonl(out / MODEL / setting / "raw_responses.jsonl") if r["usage"]]
        assert results["schema_version"] == "1.1"
        assert results["usage"] == {
            "prompt_tokens": sum(u["prompt_tokens"] for u in usages),
            "completion_tokens": sum(u["completion_tokens"] for u in usages),
            "total_tokens": sum(u["total_tokens"] for u in usages),
            "requests": len(usages),
        }
        for key in totals:
            totals[key] += results["usage"][key]
    assert totals == fates.expected_usage()  # the simulator's own counts of what it answered


def test_live_run_usage_totals_and_summary_line(tmp_path, capsys, synthetic_build, chat_server) -> None:
    with chat_server() as server:
        code = main(_run(synthetic_build, tmp_path, server.base_url, "--prompt", "cot", "--concurrency", "1"))
    assert code == 0
    sent = [
        fake_usage(prompt_text(body), answer["choices"][0]["message"]["content"])
        for body, answer in zip(server.bodies, server.sent, strict=True)
    ]
    assert [a["usage"] for a in server.sent] == sent
    results = json.loads((tmp_path / MODEL / "text__cot" / "results.json").read_text())
    expected = {key: sum(u[key] for u in sent) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    assert results["usage"] == {**expected, "requests": 16}
    out = capsys.readouterr().out
    assert (
        f"tokens: {expected['prompt_tokens']:,} prompt + {expected['completion_tokens']:,} completion in 16 responses"
    ) in out
    # 16 requests over 8 dimensions, one group after another: 8 of 16 follow one of their own group
    assert "prefix reuse in the order sent: 50% of requests share the previous one's instructions" in out


def test_reexport_holds_exactly_the_unanswered_rows_and_a_live_run_asks_only_for_them(
    synthetic_build, exported, tmp_path, chat_server
) -> None:
    fates = simulate_provider([exported], tmp_path / "out.jsonl", seed=7)
    out = tmp_path / "runs"
    assert main(_batch("import", tmp_path / "out.jsonl", synthetic_build, out, closed_port_url(), *GRID)) == 3
    again = tmp_path / "again.jsonl"
    with refusing_connections() as attempts:
        assert main(_batch("export", again, synthetic_build, out, closed_port_url(), *GRID)) == 0
    assert attempts == []
    lines = read_batch_input([again])
    unanswered = fates.ids("error", "http_error", "length", "malformed", "missing")
    assert len(unanswered) == 9 and {line["custom_id"] for line in lines} == unanswered and len(lines) == 9
    assert all(line["body"] == fates.bodies[line["custom_id"]] for line in lines)  # the same requests as before

    # importing the same output twice adds nothing; a live run afterwards asks exactly for the unanswered rows
    assert main(_batch("import", tmp_path / "out.jsonl", synthetic_build, out, closed_port_url(), *GRID)) == 3
    with chat_server() as server:
        assert main(_run(synthetic_build, out, server.base_url, *GRID)) == 0
    assert server.requests == 9
    assert {prompt_text(body) for body in server.bodies} == {prompt_text(fates.bodies[i]) for i in unanswered}


def test_export_bodies_are_the_live_bodies_and_ids_are_stable(synthetic_build, exported, tmp_path, chat_server) -> None:
    lines = read_batch_input([exported])
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions" for line in lines)
    ids = [line["custom_id"] for line in lines]
    assert len(set(ids)) == len(ids) == 64
    for request_id in ids:
        setting, video, dimension, key = request_id.split("/")
        assert setting.split("__")[0] in ("text", "audio-text") and len(key) == 24 and dimension in request_id
    with chat_server() as server:
        assert main(_run(synthetic_build, tmp_path, server.base_url, *GRID)) == 0
    assert sorted(map(json.dumps, server.bodies)) == sorted(json.dumps(line["body"]) for line in lines)
    second = tmp_path / "second.jsonl"
    assert main(_batch("export", second, synthetic_build, tmp_path / "fresh", closed_port_url(), *GRID)) == 0
    assert second.read_bytes() == exported.read_bytes()  # same run, same ids, same order


def test_dry_run_counts_tokens_and_cost_without_a_connection(synthetic_build, exported, tmp_path, capsys) -> None:
    fates = simulate_provider([exported], tmp_path / "out.jsonl", seed=11)
    out = tmp_path / "runs"
    assert main(_batch("import", tmp_path / "out.jsonl", synthetic_build, out, closed_port_url(), *GRID)) == 3
    capsys.readouterr()
    with refusing_connections() as attempts:
        code = main(
            _run(
                synthetic_build,
                out,
                closed_port_url(),
                *GRID,
                "--dry-run",
                "--json",
                "--price-in",
                "2.5",
                "--price-out",
                "10",
            )
        )
    assert code == 0 and attempts == []
    plan = json.loads(capsys.readouterr().out)
    unanswered = [fates.bodies[i] for i in fates.ids("error", "http_error", "length", "malformed", "missing")]
    assert plan["requests"] == len(unanswered) == 9 and plan["cached"] == 64 - 9
    assert plan["prompt_chars"] == sum(len(prompt_text(body)) for body in unanswered)
    assert plan["token_estimator"] == "characters/4"
    for setting in plan["settings"]:
        style = setting["setting"].split()[-1]
        texts = [
            prompt_text(fates.bodies[i])
            for i in fates.ids("error", "http_error", "length", "malformed", "missing")
            if i.startswith(_dir(setting["setting"]) + "/")
        ]
        assert setting["requests"] == len(texts) and setting["prompt_chars"] == sum(map(len, texts))
        assert setting["prompt_tokens_estimate"] == math.ceil(sum(map(len, texts)) / 4)
        answered = [
            prompt_text(fates.bodies[i]) for i in fates.ids("ok") if i.startswith(_dir(setting["setting"]) + "/")
        ]
        completions = [fake_usage(text, fake_reply(text))["completion_tokens"] for text in answered]
        assert setting["expected_completion_source"] == f"mean of {len(answered)} cached answers"
        assert setting["expected_completion_tokens"] == int(sum(completions) / len(completions) + 0.5), style
    assert plan["prompt_tokens_estimate"] == sum(s["prompt_tokens_estimate"] for s in plan["settings"])
    completion = sum(s["expected_completion_tokens"] * s["requests"] for s in plan["settings"])
    assert plan["completion_tokens_estimate"] == completion
    assert plan["cost_estimate"] == pytest.approx((plan["prompt_tokens_estimate"] * 2.5 + completion * 10) / 1e6)
    assert plan["completion_tokens_max"] == sum(
        s["requests"] * (32 if s["setting"].endswith("direct") else 1024) for s in plan["settings"]
    )
    assert 0.0 <= plan["prefix"]["same_prefix_share"] <= 1.0


def _dir(label: str) -> str:
    modality, style = label.split()
    return modality.replace("+", "-") + "__" + style + ("" if modality == "text" else "__features-text")


def test_dry_run_uses_the_local_tokenizer(tmp_path, synthetic_build, capsys) -> None:
    from transformers import AutoTokenizer

    from eval_scripts import RunConfig
    from eval_scripts.harness.context import prepare_run
    from eval_scripts.harness.runner import batch_backend

    from _harness_helpers import make_tiny_chat_model

    model = make_tiny_chat_model(tmp_path / "tiny")
    args = run_args(
        synthetic_build,
        tmp_path / "runs",
        closed_port_url(),
        *("--dry-run", "--json", "--expected-completion-tokens", "5"),
        model=str(model),
        limit=1,
        api_key_env=None,
        bootstrap=None,
        no_progress=False,
    )
    with refusing_connections() as attempts:
        assert main(args) == 0
    assert attempts == []
    plan = json.loads(capsys.readouterr().out)
    tokenizer = AutoTokenizer.from_pretrained(model)
    config = RunConfig(
        backend="openai",
        model=str(model),
        dataset=synthetic_build,
        limit=1,
        backend_options={"base_url": closed_port_url()},
    )
    prompts = prepare_run(config, batch_backend(config)).prompts
    expected = sum(
        len(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": p.text}], tokenize=True, add_generation_prompt=True
            )["input_ids"]
        )
        for p in prompts
    )
    assert plan["token_estimator"] == f"tokenizer:{model}" and plan["prompt_tokens_estimate"] == expected
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing
    assert plan["completion_tokens_estimate"] == 5 * 8 and plan["cost_estimate"] is None


LOOKUP_PROBE = """
import json, sys
from eval_scripts.harness.cost_estimate import local_tokenizer
hosted = local_tokenizer("gpt-5.4")
after_hosted = "transformers" in sys.modules
cached = local_tokenizer("org/tiny-chat")
print(json.dumps([hosted is None, after_hosted, type(cached).__name__, cached("hello")["input_ids"]]))
"""


def test_a_hosted_name_is_estimated_without_importing_transformers_and_a_hub_cached_tokenizer_is_used(
    tmp_path,
) -> None:
    """A name with no folder and nothing in the Hub cache (`gpt-5.4`) falls back to characters/4 before transformers
    is imported (it takes seconds); a repo id whose files are in the local Hub cache still gets its tokenizer."""
    import os
    import shutil
    import subprocess
    import sys

    from transformers import AutoTokenizer

    from _harness_helpers import make_tiny_chat_model

    model = make_tiny_chat_model(tmp_path / "tiny")
    hub = tmp_path / "hub"
    snapshot = hub / "models--org--tiny-chat" / "snapshots" / ("0" * 40)
    shutil.copytree(model, snapshot)
    (hub / "models--org--tiny-chat" / "refs").mkdir()
    (hub / "models--org--tiny-chat" / "refs" / "main").write_text("0" * 40)
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", LOOKUP_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    hosted_is_none, imported, cached_type, ids = json.loads(done.stdout)
    assert hosted_is_none and not imported
    assert cached_type != "NoneType" and ids == AutoTokenizer.from_pretrained(model)("hello")["input_ids"]


def test_export_splits_at_the_limits_and_never_replaces_other_files(synthetic_build, exported, tmp_path) -> None:
    whole = exported.read_bytes().splitlines(keepends=True)
    target = tmp_path / "parts" / "in.jsonl"
    args = _batch("export", target, synthetic_build, tmp_path / "runs", closed_port_url(), *GRID)
    assert main([*args, "--batch-max-requests", "10"]) == 0
    parts = sorted(target.parent.glob("in-*.jsonl"))
    assert [p.name for p in parts] == [f"in-{i:03d}.jsonl" for i in range(1, 8)] and not target.exists()
    assert b"".join(p.read_bytes() for p in parts) == b"".join(whole)
    assert [len(p.read_bytes().splitlines()) for p in parts] == [10] * 6 + [4]

    limit_mb = 4 * max(map(len, whole)) / 1e6
    assert main([*args, "--batch-max-mb", str(limit_mb)]) == 0
    parts = sorted(target.parent.glob("in-*.jsonl"))
    assert all(p.stat().st_size <= limit_mb * 1e6 for p in parts) and len(parts) >= math.ceil(
        sum(map(len, whole)) / (limit_mb * 1e6)
    )
    assert b"".join(p.read_bytes() for p in parts) == b"".join(whole)
    for part, following in zip(parts, parts[1:], strict=False):  # each file as full as the limit allows
        assert part.stat().st_size + len(following.read_bytes().splitlines(keepends=True)[0]) > limit_mb * 1e6

    assert main(args) == 0  # one file again: the earlier parts this export wrote are gone
    assert sorted(p.name for p in target.parent.glob("*.jsonl")) == ["in.jsonl"]

    cache = tmp_path / "runs" / "responses.cache.jsonl"  # an export never overwrites its inputs
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("")
    assert main(_batch("export", cache, synthetic_build, tmp_path / "runs", closed_port_url())) == 2
    assert (
        main(
            _batch(
                "export",
                synthetic_build / "in.jsonl",
                synthetic_build,
                tmp_path / "runs",
                closed_port_url(),
            )
        )
        == 2
    )
    assert not (synthetic_build / "in.jsonl").exists() and cache.read_text() == ""
    mine = tmp_path / "mine.jsonl"
    mine.write_text("my notes\n")
    assert main(_batch("export", mine, synthetic_build, tmp_path / "runs", closed_port_url())) == 1
    assert mine.read_text() == "my notes\n"


def test_import_refuses_what_it_cannot_use(synthetic_build, exported, tmp_path, capsys) -> None:
    run = (synthetic_build, tmp_path / "runs", closed_port_url(), *GRID)
    args = _run(*run)
    assert main([*args, "--dry-run", "--price-in", "1"]) == 2  # a price without the other
    local = run_args(synthetic_build, tmp_path / "runs", None, *GRID, "--dry-run", backend="transformers", limit=2)
    capsys.readouterr()  # (without the openai backend's flags, --base-url ..., refused first: not its options)
    assert main(local) == 2 and "are for --backend openai" in capsys.readouterr().err
    capsys.readouterr()
    assert main(_batch("import", tmp_path / "absent.jsonl", *run)) == 2
    assert capsys.readouterr().err.startswith(f"mis-bench batch import: error: FILE {tmp_path / 'absent.jsonl'} does")
    assert main([*args, "--import-batch", str(tmp_path / "absent.jsonl")]) == 2  # the old form: its own flag named
    assert f"error: --import-batch {tmp_path / 'absent.jsonl'} does not exist" in capsys.readouterr().err
    assert main(_batch("export", tmp_path, *run)) == 2  # a folder
    assert capsys.readouterr().err.startswith(f"mis-bench batch export: error: FILE {tmp_path} is a folder")
    torn = tmp_path / "torn.jsonl"
    torn.write_text('{"custom_id": "a", "response": null, "error": null}\n{"custom_id": "b", "resp')
    capsys.readouterr()
    assert main(_batch("import", torn, *run)) == 1
    assert f"{torn}, line 2" in capsys.readouterr().err
    # the output of another model: no id belongs to this run
    fates = simulate_provider([exported], tmp_path / "out.jsonl")
    other = _batch("import", tmp_path / "out.jsonl", *run)
    other[other.index(MODEL)] = "another-model"
    assert main(other) == 1
    assert "none of the" in capsys.readouterr().err and not (tmp_path / "runs" / "another-model").exists()
    assert len(fates.by_id) == 64


def test_conflicting_answers_are_not_imported_and_answers_beat_errors_across_files(
    synthetic_build, exported, tmp_path, capsys
) -> None:
    from _harness_helpers import chat_completion

    request = read_batch_input([exported])[0]
    text = prompt_text(request["body"])

    def line(body=None, error=None):
        response = None if body is None else {"status_code": 200, "request_id": "r", "body": body}
        return json.dumps({"id": "x", "custom_id": request["custom_id"], "response": response, "error": error}) + "\n"

    failed, first, second = tmp_path / "failed.jsonl", tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    failed.write_text(line(error={"code": "batch_expired", "message": "expired"}))
    first.write_text(line(chat_completion(text, reply="2.5")))
    second.write_text(line(chat_completion(text, reply="4.5")))
    out = tmp_path / "runs"
    run = (synthetic_build, out, closed_port_url(), *GRID)
    capsys.readouterr()
    assert main(_batch("import", [first, second], *run)) == 3
    assert "with different answers on different lines" in capsys.readouterr().err
    setting = request["custom_id"].split("/")[0]
    dimension, video = request["custom_id"].split("/")[2], request["custom_id"].split("/")[1]

    def prediction():
        rows = _jsonl(out / MODEL / setting / "predictions.jsonl")
        return next(r["prediction"] for r in rows if (r["video_id"], r["dimension"]) == (video, dimension))

    assert prediction() is None
    assert main(_batch("import", [failed, first], *run)) == 3
    assert prediction() == 2.5  # the answer counts, the expired line before it does not


def test_prefix_order_changes_no_result(tmp_path, chat_server) -> None:
    from datasets import Dataset

    from eval_scripts import RunConfig, run_setting
    from eval_scripts.backends.openai_backend import OpenAIBackend, RetryPolicy

    from _harness_helpers import scoring_rows

    class Unordered(OpenAIBackend):
        keeps_request_order = False

    rows = Dataset.from_list(scoring_rows(5, seed=2))
    runs = {}
    for name, cls in (("ordered", OpenAIBackend), ("unordered", Unordered)):
        with chat_server() as server:
            backend = cls(
                MODEL, base_url=server.base_url, concurrency=1, retry=RetryPolicy(0), api_key_env="MIS_BENCH_UNSET"
            )
            config = RunConfig(backend="openai", model=MODEL, out=tmp_path / name, n_bootstrap=0, progress=False)
            runs[name] = run_setting(config, backend=backend, scoring=rows)
            dimensions = [prompt_text(body).split("FIS dimension: ")[1].split(".")[0] for body in server.bodies]
        changes = sum(a != b for a, b in zip(dimensions, dimensions[1:], strict=False))
        assert changes == (7 if name == "ordered" else 39)  # grouped by dimension, or row by row as in the dataset
    ordered, unordered = runs["ordered"], runs["unordered"]
    assert ordered.predictions_path.read_bytes() == unordered.predictions_path.read_bytes()
    assert _results(ordered.results_path) == _results(unordered.results_path)
    assert ordered.prefix.same_prefix_share == (40 - 8) / 40 and unordered.prefix is None


# ----------------------------------------------------------------------------- the pieces


def test_output_lines_of_openai_and_vllm_shapes() -> None:
    from eval_scripts.harness.batch_files import parse_output_line

    from _harness_helpers import chat_completion

    body = chat_completion("step 3.", reply="4.0")
    ok = parse_output_line(
        {"id": "b", "custom_id": "a", "response": {"status_code": 200, "body": body}, "error": None}, "f, line 1"
    )
    answer = ok[1].answer
    assert ok[0] == "a" and answer.ok and answer.text == "4.0" and answer.usage == body["usage"]
    cut = parse_output_line(
        {
            "custom_id": "a",
            "response": {"status_code": 200, "body": chat_completion("x", reply="3.", finish_reason="length")},
        },
        "w",
    )[1].answer
    assert cut.ok and cut.finish_reason == "length"  # recorded as truncated by the one rule, never an answer
    shapes = [
        (
            {"custom_id": "a", "response": None, "error": {"code": "batch_expired", "message": "expired"}},
            "batch error: batch_expired: expired",
        ),  # OpenAI error file
        (
            {
                "custom_id": "a",
                "response": {"status_code": 400, "body": {"error": {"message": "bad", "code": "x"}}},
                "error": None,
            },
            "HTTP 400: bad",
        ),  # OpenAI, a request the API refused
        (
            {
                "custom_id": "a",
                "response": {"status_code": 400, "request_id": "r", "body": None},
                "error": {"error": {"message": "too long", "type": "BadRequestError", "code": 400}},
            },
            "batch error: 400: too long",
        ),  # vLLM run_batch ErrorResponse
        (
            {"custom_id": "a", "response": {"status_code": 400, "body": None}, "error": "Request must not be streamed"},
            "batch error: Request must not be streamed",
        ),  # vLLM run_batch, plain message
        (
            {"custom_id": "a", "response": {"status_code": 200, "body": {"choices": []}}, "error": None},
            "malformed response: ValueError: field choices is an empty list, not a list of at least one choice",
        ),
    ]
    for line, message in shapes:
        outcome = parse_output_line(line, "w")[1].answer
        assert not outcome.ok and outcome.text is None and outcome.error == message
    from mis_bench_dataset.toolkit.errors import DataError

    with pytest.raises(DataError, match="no custom_id"):
        parse_output_line({"response": None}, "out.jsonl, line 7")


@settings(max_examples=60, deadline=None)
@given(st.permutations(range(6)))
def test_any_line_order_imports_the_same_outcomes(order) -> None:
    from eval_scripts import Completion
    from eval_scripts.harness.batch_files import UNPLACED, BatchOutcome, resolve_outcomes

    def answer(text):
        return BatchOutcome(Completion(UNPLACED, text, True, finish_reason="stop"), "w")

    failure = BatchOutcome(Completion(UNPLACED, None, False, "HTTP 500"), "w")
    lines = [
        ("a", failure),
        ("a", answer("3.0")),
        ("b", failure),
        ("c", answer("2.0")),
        ("c", answer("2.0")),
        ("zz", answer("1.0")),
    ]
    chosen, report = resolve_outcomes([lines[i] for i in order], {"a": 0, "b": 1, "c": 2})
    assert {k: (v.answer.ok, v.answer.text) for k, v in chosen.items()} == {
        "a": (True, "3.0"),
        "b": (False, None),
        "c": (True, "2.0"),
    }
    assert (report.lines, report.matched, report.unknown, sorted(report.duplicates), report.conflicting) == (
        6,
        3,
        ["zz"],
        ["a", "c"],
        [],
    )


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab\u00e9", max_size=30), st.text(alphabet="ab\u00e9", max_size=30))
def test_common_prefix_length_matches_os_path_commonprefix(a, b) -> None:
    import os

    from eval_scripts.harness.ordering import common_prefix_length

    assert common_prefix_length(a, b) == len(os.path.commonprefix([a, b]))


def test_usage_totals_by_hand() -> None:
    from eval_scripts.formats.results import usage_totals

    usages = [
        {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
        None,
        {"prompt_tokens": 7, "completion_tokens": 3},
        {},
    ]
    assert usage_totals(usages) == {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22, "requests": 2}
    assert usage_totals([]) == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0}


def test_results_schema_reads_1_1_with_usage_and_refuses_1_0() -> None:
    from eval_scripts.formats.submission import SubmissionError, validate_results

    from _leaderboard_helpers import make_references, make_results, noisy_predictions

    old = make_results(noisy_predictions(make_references(), 0.4, seed=1))
    with pytest.raises(SubmissionError, match="unsupported schema version '1.0'"):
        validate_results({**old, "schema_version": "1.0"})  # a draft no release wrote
    new = {
        **old,
        "schema_version": "1.1",
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6, "requests": 1},
    }
    assert validate_results(new) is new
    with pytest.raises(SubmissionError, match="usage"):
        validate_results(
            {**new, "usage": {"prompt_tokens": -1, "completion_tokens": 1, "total_tokens": 0, "requests": 1}}
        )
    with pytest.raises(SubmissionError, match="unsupported schema version '1.2'"):
        validate_results({**new, "schema_version": "1.2"})


def test_one_request_over_the_size_limit_is_a_usage_error() -> None:
    from eval_scripts.harness.batch_files import split_lines
    from mis_bench_dataset.toolkit.errors import UsageError

    assert split_lines([b"aa\n", b"b\n", b"cccc\n"], 2, 5) == [[b"aa\n", b"b\n"], [b"cccc\n"]]  # 3 + 2 bytes fit
    assert split_lines([b"a\n", b"b\n", b"c\n"], 2, 100) == [[b"a\n", b"b\n"], [b"c\n"]]
    with pytest.raises(UsageError, match="raise --batch-max-mb"):
        split_lines([b"x" * 10 + b"\n"], 5, 10)


# ----------------------------------------------------------------------------- the older form: run --export-batch


def test_run_export_and_import_batch_are_the_batch_command_with_a_note(synthetic_build, exported, tmp_path, capsys):
    """`mis-bench run ... --export-batch FILE` writes the bytes `batch export FILE` wrote and `--import-batch FILE`
    scores what `batch import FILE` scores; each says once on stderr, and in `run --help`, that the form moved."""
    old = tmp_path / "old.jsonl"
    capsys.readouterr()
    with refusing_connections() as attempts:
        assert (
            main(_run(synthetic_build, tmp_path / "unused", closed_port_url(), *GRID, "--export-batch", str(old))) == 0
        )
    assert attempts == [] and old.read_bytes() == exported.read_bytes()
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "is now" in line] == [
        "mis-bench run: note: `run --export-batch FILE` is now `mis-bench batch export FILE` with the same flags; "
        "this form still works"
    ]
    simulate_provider([exported], tmp_path / "out.jsonl", seed=3)
    runs = {
        "new": _batch("import", tmp_path / "out.jsonl", synthetic_build, tmp_path / "new", closed_port_url(), *GRID),
        "old": _run(
            synthetic_build, tmp_path / "old", closed_port_url(), *GRID, "--import-batch", str(tmp_path / "out.jsonl")
        ),
    }
    notes = {}
    for name, args in runs.items():
        assert main(args) == 3  # rows remain unanswered, either way
        notes[name] = [line for line in capsys.readouterr().err.splitlines() if "is now" in line]
    assert notes == {"new": [], "old": [notes["old"][0]]} and "`mis-bench batch import FILE...`" in notes["old"][0]
    for setting in SETTING_DIRS:
        new, old = tmp_path / "new" / MODEL / setting, tmp_path / "old" / MODEL / setting
        assert (new / "predictions.jsonl").read_bytes() == (old / "predictions.jsonl").read_bytes()
        assert _results(new / "results.json") == _results(old / "results.json")
    assert main(["run", "--help"]) == 0
    assert "`mis-bench batch export FILE`" in " ".join(capsys.readouterr().out.split())
    assert main(["--help"]) == 0
    assert "  batch " in capsys.readouterr().out


def test_batch_export_takes_the_backend_options_of_the_run(synthetic_build, exported, tmp_path):
    """An answer-changing `-M` option keys the cache, so an export with it names other requests than one without;
    the same flags give the same file whichever form exports it."""
    option = ("-M", 'extra_body={"reasoning_effort": "low"}')
    new, old = tmp_path / "new.jsonl", tmp_path / "old.jsonl"
    assert main(_batch("export", new, synthetic_build, tmp_path / "a", closed_port_url(), *GRID, *option)) == 0
    assert (
        main(_run(synthetic_build, tmp_path / "b", closed_port_url(), *GRID, *option, "--export-batch", str(old))) == 0
    )
    assert new.read_bytes() == old.read_bytes()
    with_option, without = read_batch_input([new]), read_batch_input([exported])
    assert len(with_option) == len(without) == 64
    assert {line["custom_id"] for line in with_option}.isdisjoint(line["custom_id"] for line in without)
    assert all(line["body"]["reasoning_effort"] == "low" for line in with_option)
