"""The openai backend against a real local HTTP server that injects faults; resume after SIGKILL."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from datasets import Dataset

from eval_scripts import DecodingConfig, Prompt, RunConfig, run_setting
from eval_scripts.backends.openai_backend import OpenAIBackend, RetryPolicy
from eval_scripts.harness.response_cache import iter_records

from _harness_helpers import ChatServer, FaultPlan, scoring_rows
from _run_args import run_args

REPO = Path(__file__).resolve().parents[1]
FAST_RETRY = RetryPolicy(max_retries=3, backoff_base_s=0.005, backoff_max_s=0.02, timeout_s=0.25)


def _expected(video_id: str) -> float:
    """What the fake server answers for a video (see ChatServer._answer)."""
    return 1.0 + ((int(video_id[2:6]) - 1000) % 40) / 10


def _config(out: Path, server: ChatServer, **kw) -> RunConfig:
    options = dict(base_url=server.base_url, concurrency=8, retry=FAST_RETRY, api_key_env="MIS_BENCH_TEST_KEY")
    return RunConfig(
        backend="openai", model="fake-model", out=out, backend_options=options, n_bootstrap=0, progress=False, **kw
    )


@pytest.mark.parametrize("seed", range(5))
def test_run_completes_under_injected_faults(tmp_path, seed, chat_server) -> None:
    rows = Dataset.from_list(scoring_rows(5, seed=seed))
    plan = FaultPlan(seed, fault_rate=0.4, permanent_rate=0.08)
    with chat_server(plan, slow_s=0.5) as server:
        first = run_setting(_config(tmp_path, server, prompt_style="cot"), scoring=rows)
        raw = [json.loads(line) for line in first.raw_responses_path.read_text().splitlines()]
        assert len(raw) == first.n_rows == 40
        for record in raw:
            assert record["status"] in ("ok", "failed")
            if record["status"] == "ok":
                assert record["prediction"] == _expected(record["video_id"])
            else:
                assert record["prediction"] is None and record["error"]
        assert first.n_failed == sum(r["status"] == "failed" for r in raw)
        assert first.n_parsed == first.n_rows - first.n_failed
        # every prompt the plan always fails is recorded as failed, never as an answer
        cache = list(iter_records(tmp_path / "responses.cache.jsonl"))
        ok_keys = [r["key"] for r in cache if r["status"] == "ok"]
        assert len(ok_keys) == len(set(ok_keys)) == first.n_rows - first.n_failed
        assert all(r["response"] is None for r in cache if r["status"] == "failed")
        assert first.n_failed >= 1  # permanent_rate 0.08 over 40 prompts, seeds 0-4 all draw some
        # a rerun retries exactly the failed rows
        requests_before = server.requests
        second = run_setting(_config(tmp_path, server, prompt_style="cot"), scoring=rows)
        assert second.n_called == first.n_failed and second.n_cached == first.n_rows - first.n_failed
        assert server.requests > requests_before
        results = json.loads(first.results_path.read_text())
        assert {p["prediction"] for p in results["predictions"] if p["raw_response"] is None} == {None}


def test_api_key_is_sent_but_never_logged_or_written(tmp_path, monkeypatch, caplog, chat_server) -> None:
    secret = "sk-test-DO-NOT-LEAK-1234567890"
    monkeypatch.setenv("MIS_BENCH_TEST_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with chat_server(FaultPlan(1, fault_rate=0.5, permanent_rate=0.0)) as server:
        run_setting(_config(tmp_path, server), scoring=Dataset.from_list(scoring_rows(1)))
    assert set(server.auth_headers) == {f"Bearer {secret}"}
    assert secret not in caplog.text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_other_client_errors_fail_the_row_at_once_without_retry(chat_server) -> None:
    class Always413(FaultPlan):
        def next(self, digest):
            return "413"

    with chat_server(Always413(0)) as server:
        backend = OpenAIBackend("m", base_url=server.base_url, retry=FAST_RETRY, api_key_env="MIS_BENCH_UNSET")
        (completion,) = backend.complete([Prompt("v", "wau", "hi")], DecodingConfig())
    assert not completion.ok and completion.attempts == 1 and completion.failure == "HTTP 413"
    assert completion.error == "HTTP 413: injected 413 for this request"  # the server's message, not its JSON
    assert server.requests == 1


def test_request_body_and_multimodal_content(tmp_path) -> None:
    audio = tmp_path / "a.wav"
    audio.write_bytes(b"RIFF....WAVE")
    assert OpenAIBackend("m", base_url="http://127.0.0.1:9/v1").modalities == frozenset({"text"})  # until declared
    backend = OpenAIBackend(
        "m",
        base_url="http://127.0.0.1:9/v1",
        modalities=("text", "image", "audio"),
        max_tokens_field="max_completion_tokens",
        extra_body={"reasoning_effort": "low"},
    )
    body = backend.request_body(
        Prompt("v", "wau", "hi", images=(b"\x89PNG",), audio_path=str(audio)), DecodingConfig(max_new_tokens=7)
    )
    assert body["max_completion_tokens"] == 7 and body["temperature"] == 0.0 and body["reasoning_effort"] == "low"
    kinds = [part["type"] for part in body["messages"][0]["content"]]
    assert kinds == ["input_audio", "image_url", "text"]
    assert body["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert backend.request_body(Prompt("v", "wau", "hi"), DecodingConfig())["messages"][0]["content"] == "hi"


def test_backoff_is_jittered_bounded_and_honours_retry_after() -> None:
    import random

    policy = RetryPolicy(max_retries=5, backoff_base_s=1.0, backoff_max_s=8.0)
    rng = random.Random(0)
    delays = [policy.delay(attempt, None, rng) for attempt in range(6) for _ in range(50)]
    assert all(0.0 <= d <= 8.0 for d in delays) and len(set(delays)) > 100
    assert all(policy.delay(0, 5.0, rng) >= 5.0 for _ in range(20))
    assert policy.delay(0, 100.0, rng) == 8.0


def test_sigkill_mid_run_then_rerun_gives_one_row_per_key(tmp_path, synthetic_build, chat_server) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    out = tmp_path / "runs"
    cache = out / "responses.cache.jsonl"
    with chat_server(delay_s=0.1) as server:
        run = run_args(synthetic_build, out, server.base_url, "--split", "test", "--prompt", "cot", concurrency=2)
        args = [sys.executable, "-m", "eval_scripts.cli", *run, "--json"]
        victim = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if cache.is_file() and cache.read_bytes().count(b"\n") >= 6:
                break
            if victim.poll() is not None:
                pytest.fail(f"run ended before it could be killed: {victim.stderr.read().decode()[-2000:]}")
            time.sleep(0.01)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        assert victim.returncode == -signal.SIGKILL
        killed_rows = cache.read_bytes().count(b"\n")
        # Rows answered before the kill; a slow reply may have been recorded as failed instead.
        answered_before_kill = sum(r["status"] == "ok" for r in iter_records(cache))

        resumed = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        summary = json.loads(resumed.stdout)
        assert killed_rows < summary["rows"], "the kill came too late to test resuming"
        assert summary["cached"] == answered_before_kill
        assert summary["called"] == summary["rows"] - summary["cached"]
        records = list(iter_records(cache))
        keys = [r["key"] for r in records if r["status"] == "ok"]
        assert len(keys) == len(set(keys)) == summary["rows"]
        assert {(r["video_id"], r["dimension"]) for r in records} == {
            (p["video_id"], p["dimension"]) for p in json.loads(Path(summary["results"]).read_text())["predictions"]
        }

        requests_before = server.requests
        again = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        assert json.loads(again.stdout)["called"] == 0
        assert server.requests == requests_before  # a finished run re-run makes zero model calls
        assert len(list(iter_records(cache))) == len(records)


def test_few_shot_examples_come_from_train_only(tmp_path, synthetic_build, chat_server) -> None:
    import re

    from mis_bench_dataset import BuiltDataset
    from mis_bench_dataset.toolkit.errors import UsageError

    train_transcripts = {r["transcript"].strip() for r in BuiltDataset.of(synthetic_build).rows("train")}
    test_rows = BuiltDataset.of(synthetic_build).rows("test")
    with chat_server() as server:
        config = _config(tmp_path, server, prompt_style="cot", dataset=synthetic_build, few_shot_k=2, limit=1)
        result = run_setting(config)
        assert result.n_failed == 0 and result.n_rows == 8
        for body in server.bodies:
            text = body["messages"][0]["content"]
            shots = re.findall(
                r'Example \d\. Transcript:\n"""\n(.*?)\n"""\nExpert score: Final score: \d\.\d', text, re.S
            )
            assert len(shots) == 2 and all(shot in train_transcripts for shot in shots)
            assert not any(shot == row["transcript"].strip() for shot in shots for row in test_rows)
        with pytest.raises(UsageError, match="few-shot examples come from the train split"):
            run_setting(_config(tmp_path, server, dataset=synthetic_build, few_shot_k=2, split="train"))


def test_vllm_backend_without_vllm_is_a_clear_error() -> None:
    import importlib.util

    from eval_scripts import BackendUnavailable, get_backend

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(BackendUnavailable, match="needs the `vllm` package"):
        get_backend("vllm", "some/model")
    with pytest.raises(ValueError, match="unknown backend 'tgi'"):
        get_backend("tgi", "some/model")
