"""A server is down when it stops answering, whenever that happens: real local servers (subprocesses) killed in
the middle of a run, one server and two replicas, stop the run with exit 3 within `--down-after` of the last answer,
everything answered so far cached, and a rerun once the servers are back asks exactly the rows left; replicas that
come back within the window finish the run. The rules themselves (`CircuitBreaker`) on a fake clock."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest
from datasets import Dataset

from eval_scripts import RunConfig, run_setting
from eval_scripts.backends.openai_backend import CircuitBreaker, RetryPolicy
from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

from _harness_helpers import ChatServer, scoring_rows
from _run_args import run_args
from _server_helpers import ChatServerProcess

REPO = Path(__file__).resolve().parents[1]
ROWS = 32  # --limit 4: four videos x eight dimensions
CACHE = "responses.cache.jsonl"


def _answered(cache: Path) -> set[str]:
    """The keys the cache holds an answer for (complete lines only: the run may be writing)."""
    if not cache.is_file():
        return set()
    lines = cache.read_text().split("\n")[:-1]
    return {record["key"] for record in map(json.loads, lines) if record.get("status") == "ok"}


class KillAfter(threading.Thread):
    """Kills `servers` (SIGKILL) once the cache holds `answers` answers; `killed_at` is when (monotonic)."""

    def __init__(self, cache: Path, answers: int, servers: list[ChatServerProcess]) -> None:
        super().__init__(daemon=True)
        self.cache, self.answers, self.servers = cache, answers, servers
        self.killed_at: float | None = None

    def run(self) -> None:
        deadline = time.monotonic() + 60
        while len(_answered(self.cache)) < self.answers and time.monotonic() < deadline:
            time.sleep(0.01)
        for server in self.servers:
            server.kill()
        self.killed_at = time.monotonic()


_args = partial(run_args, limit=4, concurrency=2)


def _killed_mid_run(build: Path, out: Path, servers: list[ChatServerProcess], capsys, *extra: str):
    """`mis-bench run` against `servers`, all killed after 8 answers: (exit code, seconds from the kill to the
    exit, the one error line, the keys answered before the kill)."""
    killer = KillAfter(out / CACHE, 8, servers)
    killer.start()
    code = main(_args(build, out, [s.base_url for s in servers], *extra))
    ended = time.monotonic()
    killer.join()
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    lines = [line for line in err.splitlines() if line.startswith("mis-bench")]
    assert len(lines) == 1, err
    return code, ended - killer.killed_at, lines[0], _answered(out / CACHE)


def _rerun_asks_only_the_rows_left(
    build: Path, out: Path, ports: list[int], answered: set[str], capsys, chat_server
) -> None:
    """The servers back on their ports: the rerun asks each row without an answer once, and nothing else."""
    servers = [chat_server(port=port) for port in ports]
    try:
        assert main([*_args(build, out, [s.base_url for s in servers]), "--json"]) == 0
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    summary = json.loads(capsys.readouterr().out)
    assert sum(s.requests for s in servers) == ROWS - len(answered)
    assert summary["cached"] == len(answered) and summary["parsed"] == ROWS and summary["failed"] == 0


def test_one_server_killed_mid_run_stops_the_run_with_exit_3_and_a_rerun_asks_only_the_rows_left(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with ChatServerProcess(tmp_path, delay_s=0.05) as server:
        # the default retries (5, backing off from 1 s): without the watch each row would retry on its own
        code, after_kill, line, answered = _killed_mid_run(synthetic_build, out, [server], capsys, "--down-after", "2")
    assert code == EXIT_REQUESTS and 2 <= after_kill < 6
    assert line.startswith("mis-bench run: error: cannot reach the model server: stopped answering: every attempt ")
    assert "for the last 2 s failed to connect (connection refused" in line
    assert f"(--base-url {server.base_url})" in line
    assert "a rerun asks only the rows left" in line
    assert 8 <= len(answered) < ROWS and not list(out.rglob("results.json"))
    _rerun_asks_only_the_rows_left(synthetic_build, out, [server.port], answered, capsys, chat_server)


def test_two_replicas_both_killed_mid_run_stop_the_run_naming_each(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with ChatServerProcess(tmp_path, delay_s=0.05) as first, ChatServerProcess(tmp_path, delay_s=0.05) as second:
        code, after_kill, line, answered = _killed_mid_run(
            synthetic_build, out, [first, second], capsys, "--down-after", "2"
        )
    assert code == EXIT_REQUESTS and 2 <= after_kill < 6
    assert line.startswith("mis-bench run: error: cannot reach any of the 2 model servers: ")
    for server in (first, second):  # each named with what failed
        assert f"{server.base_url} stopped answering: every attempt for the last 2 s failed to connect" in line
    assert 8 <= len(answered) < ROWS
    _rerun_asks_only_the_rows_left(synthetic_build, out, [first.port, second.port], answered, capsys, chat_server)


def test_replicas_that_come_back_within_the_window_finish_the_run(tmp_path, chat_server) -> None:
    """Both replicas killed, one back on its port 1.5 s later: every row is answered, none failed, none twice.
    Two retries per replica, backing off 0.05-0.2 s, ride out the outage: the cool-down probes spend none of them."""
    rows = Dataset.from_list(scoring_rows(4))
    retry = RetryPolicy(max_retries=2, backoff_base_s=0.05, backoff_max_s=0.2, timeout_s=5.0)
    cache = tmp_path / "runs" / CACHE
    revived: list[ChatServer] = []
    with ChatServerProcess(tmp_path, delay_s=0.05) as first, ChatServerProcess(tmp_path, delay_s=0.05) as second:
        options = dict(
            base_url=[first.base_url, second.base_url],
            concurrency=2,
            retry=retry,
            api_key_env="MIS_BENCH_UNSET",
            cooldown=0.1,
            down_after=10.0,
        )
        config = RunConfig(
            backend="openai", model="fake-model", out=tmp_path / "runs", backend_options=options, n_bootstrap=0
        )
        config.progress = False
        killer = KillAfter(cache, 8, [first, second])

        def revive() -> None:
            killer.join()
            time.sleep(1.5)
            revived.append(chat_server(port=first.port))  # back on its port

        killer.start()
        threading.Thread(target=revive, daemon=True).start()
        try:
            result = run_setting(config, scoring=rows)
        finally:
            killer.join()
            for server in revived:
                server.__exit__(None, None, None)
    assert result.n_failed == 0 and result.n_parsed == ROWS
    assert revived and revived[0].requests >= 1
    records = [json.loads(line) for line in cache.read_text().splitlines()]
    answers = [r["key"] for r in records if r.get("status") == "ok"]
    assert len(answers) == len(set(answers)) == ROWS  # every row answered once
    assert max(r["attempts"] for r in records if "attempts" in r) > 1  # some rows were asked during the outage


# ----------------------------------------------------------------------------- the rules, on a fake clock
def test_a_server_reached_before_is_down_after_the_window_of_failed_connections_and_after_a_failed_probe():
    now = [0.0]
    breaker = CircuitBreaker(clock=lambda: now[0], down_after_s=30.0)
    breaker.reached_server()
    assert not any(breaker.connection_failed("connection refused", "refused") for _ in range(50))  # not 3: reached
    now[0] = 29.9
    assert not breaker.down()
    now[0] = 30.0
    assert breaker.down()  # the watch sees it between attempts too
    breaker.reached_server()  # a probe answered: back
    assert not breaker.down()
    now[0] = 40.0
    assert not breaker.connection_failed("connection refused", "refused")  # a new streak starts
    now[0] = 70.0
    assert breaker.connection_failed("connection refused", "refused")  # a failed probe 30 s on: down again
    breaker.rearm()  # the next setting of a grid: the streak goes on, counted from this run's first failure
    assert not breaker.down()
    assert breaker.connection_failed("connect timeout", "slow")


class ChildRun(threading.Thread):
    """`mis-bench run ARGS` in a child process, waited for by this thread: `ended` is when it exited (monotonic),
    `err` what it printed on stderr."""

    def __init__(self, args: list[str]) -> None:
        super().__init__(daemon=True)
        command = [sys.executable, "-m", "eval_scripts.cli", *args]
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.ended: float | None = None
        self.err = ""

    def run(self) -> None:
        _, self.err = self.process.communicate(timeout=300)
        self.ended = time.monotonic()


@pytest.mark.slow
def test_with_default_options_a_run_whose_servers_die_ends_within_a_minute_of_the_last_answer(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    """The issue's case, default options (30 s, 5 retries backing off up to 30 s): one server, and two replicas.
    The two runs go side by side, each in a child process of its own (each waits out the same 30 s, mostly idle:
    one wait for the test, not two in a row)."""
    cases = {}
    for n_servers in (1, 2):
        out = tmp_path / f"runs-{n_servers}"
        servers = [ChatServerProcess(tmp_path, delay_s=0.05).start() for _ in range(n_servers)]
        run = ChildRun(_args(synthetic_build, out, [s.base_url for s in servers]))
        killer = KillAfter(out / CACHE, 8, servers)
        run.start()
        killer.start()
        cases[n_servers] = (out, servers, run, killer)
    try:
        for _, _, run, killer in cases.values():
            run.join()
            killer.join()
    finally:
        for _, servers, run, _ in cases.values():
            run.process.kill()
            for server in servers:
                server.kill()
    for out, servers, run, killer in cases.values():
        assert "Traceback" not in run.err and "internal error" not in run.err
        lines = [line for line in run.err.splitlines() if line.startswith("mis-bench")]
        assert len(lines) == 1, run.err
        answered = _answered(out / CACHE)
        assert run.ended is not None and killer.killed_at is not None, run.err  # the run ended; the servers were killed
        assert run.process.returncode == EXIT_REQUESTS and 30 <= run.ended - killer.killed_at < 60
        assert "for the last 30 s failed to connect" in lines[0] and 8 <= len(answered) < ROWS
        _rerun_asks_only_the_rows_left(synthetic_build, out, [s.port for s in servers], answered, capsys, chat_server)
