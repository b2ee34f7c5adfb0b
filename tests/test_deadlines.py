"""Deadlines that hold: `--timeout` bounds a whole attempt (connect, headers, body) however slowly a server
trickles its bytes, every retry included; `--run-deadline` ends a run, for the HTTP and the local backends,
and the next run asks only for the rows left without an answer."""

from __future__ import annotations

import json
import threading
import time
from functools import partial

import pytest
from datasets import Dataset

from eval_scripts import RunConfig, run_setting
from eval_scripts.backends.deadlines import Deadlines
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

from _harness_helpers import TricklingServer, make_tiny_chat_model, scoring_rows
from _run_args import TEST_KEY_ENV, run_args

_run = partial(run_args, model="m", api_key_env=TEST_KEY_ENV, limit=1, as_json=True)


def test_the_watchdog_fires_once_past_the_deadline_and_never_after_a_disarm() -> None:
    import threading

    deadlines = Deadlines()
    fired, late_fired = [], threading.Event()
    late = deadlines.arm(time.monotonic() + 0.05, lambda: (fired.append("late"), late_fired.set()))
    early = deadlines.arm(time.monotonic() + 0.05, lambda: fired.append("early"))
    assert deadlines.disarm(early) is False
    assert late_fired.wait(10)  # the same deadline as the disarmed one: had that fired, it would have by now
    assert fired == ["late"] and deadlines.disarm(late) is True and deadlines.disarm(late) is False


def test_every_retry_is_bounded_by_the_timeout(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(kind=TricklingServer, interval_s=0.25) as server:
        started = time.monotonic()
        extra = ("--timeout", "1", "--max-retries", "2", "--backoff-base", "0.01", "--backoff-max", "0.02")
        code = main(_run(synthetic_build, tmp_path / "out", server.base_url, *extra, "--concurrency", "8"))
        elapsed = time.monotonic() - started
        assert server.requests == 8 * 3  # the first try and two retries, each cut off after 1 s
    summary = json.loads(capsys.readouterr().out)
    assert code == EXIT_REQUESTS and list(summary["failures"]) == ["timeout"]
    assert "connect, headers and body" in summary["failures"]["timeout"]["example"]
    assert elapsed < 3 * 1 + 3.0, f"3 attempts of at most 1 s took {elapsed:.1f} s"


def test_a_slow_steady_answer_within_the_timeout_is_kept(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(kind=TricklingServer, interval_s=0.0005) as server:  # ~400 bytes: about 0.2 s per answer
        code = main(_run(synthetic_build, tmp_path / "out", server.base_url, "--timeout", "20", "--concurrency", "8"))
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["parsed"] == summary["rows"] == 8


def test_a_run_deadline_is_resumed_by_the_next_run(synthetic_build, tmp_path, capsys, chat_server) -> None:
    out = tmp_path / "out"
    with chat_server(delay_s=0.3) as server:
        code = main(
            _run(synthetic_build, out, server.base_url, "--limit", "3", "--concurrency", "2", "--run-deadline", "1")
        )
        first = json.loads(capsys.readouterr().out)
        assert code == EXIT_REQUESTS and 0 < first["parsed"] < first["rows"] == 24
        assert set(first["failures"]) == {"run deadline"}
        answered = sum(r["status"] == "ok" for r in iter_records(out / "responses.cache.jsonl"))
        before = server.requests
        assert main(_run(synthetic_build, out, server.base_url, "--limit", "3", "--concurrency", "8")) == 0
        again = json.loads(capsys.readouterr().out)
    assert again["cached"] == answered and again["called"] == 24 - answered
    assert server.requests - before == 24 - answered


def test_a_grid_shares_one_run_deadline(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(delay_s=0.2) as server:
        started = time.monotonic()
        args = _run(synthetic_build, tmp_path / "out", server.base_url, "--grid", "--modalities", "text")
        code = main([*args, "--prompts", "direct,cot", "--concurrency", "1", "--run-deadline", "1.5"])
        elapsed = time.monotonic() - started
    entries = json.loads(capsys.readouterr().out)
    assert code == EXIT_REQUESTS and elapsed < 1.5 + 3.0
    assert entries[-1]["failures"] == {"run deadline": entries[-1]["failures"]["run deadline"]}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return make_tiny_chat_model(tmp_path_factory.mktemp("tiny-qwen2"), answer_tokens=("3", "4"))


def test_a_local_backend_stops_between_batches_at_the_run_deadline(tiny_model, tmp_path) -> None:
    from eval_scripts import get_backend

    backend = get_backend("transformers", str(tiny_model), batch_size=4, device="cpu")
    config = RunConfig(
        backend="transformers",
        model=str(tiny_model),
        out=tmp_path,
        progress=False,
        n_bootstrap=0,
        backend_options={"device": "cpu"},
        deadline=time.monotonic() - 1.0,  # already past: nothing is generated
    )
    result = run_setting(config, backend=backend, scoring=Dataset.from_list(scoring_rows(2)))
    assert backend.calls == 0 and result.n_failed == result.n_rows == 16
    assert list(result.failures) == ["run deadline"]
    config.deadline = None
    again = run_setting(config, backend=backend, scoring=Dataset.from_list(scoring_rows(2)))
    assert again.n_failed == 0 and backend.calls == 16
    assert repr(again).startswith("RunResult(") and len(repr(again)) < 300 and "results.json" in repr(again)


def test_one_watchdog_thread_serves_every_armed_request() -> None:
    def watchdogs() -> int:
        return sum(t.name == "mis-bench-deadlines" for t in threading.enumerate())

    before = watchdogs()
    deadlines = Deadlines()
    tokens = [deadlines.arm(time.monotonic() + 60, lambda: None) for _ in range(1000)]
    assert watchdogs() == before + 1
    assert not any(deadlines.disarm(t) for t in tokens)
