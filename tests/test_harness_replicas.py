"""Several servers of one model: the replica pool's routing and cool-downs (a fake clock), and `mis-bench run`
against two and three real local servers, one killed in the middle of the run, one that only answers HTTP 500:
every row answered once, the cache the same as a one-server run's."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from functools import partial
from pathlib import Path

import pytest

from eval_scripts.backends.openai_backend import base_url_list
from eval_scripts.backends.replicas import ANSWERED, FAILED, NEUTRAL, ReplicaPool
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, EXIT_USAGE

from _harness_helpers import ChatServer, chat_completion, prompt_text
from _run_args import run_args

ROWS = 32  # --limit 4: four videos x eight dimensions


# ----------------------------------------------------------------------------- the pool, by itself
class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _any(_: int) -> bool:
    return True


def test_attempts_go_to_the_replica_with_the_fewest_in_flight_up_to_its_capacity() -> None:
    pool = ReplicaPool(3, capacity=2, clock=Clock())
    picks = [pool.acquire(_any) for _ in range(6)]
    assert picks == [0, 1, 2, 0, 1, 2]  # spread evenly, two each
    pool.release(1, ANSWERED)
    assert pool.acquire(_any) == 1  # the only one with room
    pool.release(2, ANSWERED)
    pool.release(2, ANSWERED)
    assert pool.acquire(_any, avoid=2) == 2  # avoiding the replica that failed only while another has room
    assert (
        pool.acquire(lambda r: r != 2, stop=threading.Event(), deadline=0.0) is None
    )  # full: gives up at its deadline


def test_three_failures_in_a_row_take_a_replica_out_until_a_probe_answers() -> None:
    clock = Clock()
    pool = ReplicaPool(2, capacity=8, failures_to_cool=3, cooldown_s=5.0, clock=clock)
    for _ in range(3):
        assert pool.acquire(lambda r: r == 0) == 0
        pool.release(0, FAILED)
    assert pool.health[0].cooling_until == 105.0 and pool.health[0].cool_downs == 1
    assert [pool.acquire(_any) for _ in range(3)] == [1, 1, 1]  # the other carries on
    for _ in range(3):
        pool.release(1, ANSWERED)
    clock.now = 105.0  # the cool-down is over: one probe
    assert pool.acquire(lambda r: r == 0) == 0
    assert pool.acquire(_any) == 1  # no second attempt while the probe is out
    pool.release(0, FAILED)  # the probe failed: out again, twice as long
    assert pool.health[0].cooling_until == 115.0 and pool.health[0].cool_downs == 2
    clock.now = 115.0
    assert pool.acquire(lambda r: r == 0) == 0
    pool.release(0, ANSWERED)
    assert pool.health[0].cooling_until is None  # back in service
    pool.release(1, NEUTRAL)
    assert pool.summary()[0] == {"concurrency": pool.capacity, "sent": 5, "answered": 1, "failed": 4, "cool_downs": 2}


def test_a_single_server_is_never_taken_out_and_no_usable_replica_means_none() -> None:
    pool = ReplicaPool(1, capacity=1, clock=Clock())
    for _ in range(10):
        assert pool.acquire(_any) == 0
        pool.release(0, FAILED)
    assert pool.health[0].cooling_until is None
    assert pool.acquire(lambda r: False) is None  # every replica's retry budget spent


def test_base_urls_may_be_repeated_or_a_comma_list_each_kept_once() -> None:
    assert base_url_list(["http://a/v1,http://b/v1", " http://c/v1", "http://a/v1"]) == [
        "http://a/v1",
        "http://b/v1",
        "http://c/v1",
    ]
    assert base_url_list("http://a/v1") == ["http://a/v1"]


# ----------------------------------------------------------------------------- real servers
class KillableServer(ChatServer):
    """A ChatServer that dies at its `die_at`-th request (that one is never answered): it stops listening and
    drops every open connection, as a killed process does. `answered` counts the requests it answered."""

    def __init__(self, die_at: int | None = None, status: int = 200) -> None:
        self.die_at, self.status, self.answered, self.dead = die_at, status, 0, False
        self.clients: list[socket.socket] = []
        self._count_lock = threading.Lock()
        super().__init__(respond=self._respond)
        accept = self.httpd.get_request

        def get_request():
            sock, address = accept()
            self.clients.append(sock)
            return sock, address

        self.httpd.get_request = get_request

    def _respond(self, body: dict) -> tuple[int, dict]:
        with self._count_lock:
            if self.die_at is not None and self.requests >= self.die_at and not self.dead:
                self.dead = True
                self.kill()
            if self.dead:  # the handler ends without a response: the connection just drops
                raise ConnectionAbortedError("killed")
            if self.status != 200:
                return self.status, {"error": {"message": "injected: this server only fails"}}
            self.answered += 1
        return 200, chat_completion(prompt_text(body))

    def kill(self) -> None:
        """Stop listening and drop every connection at once; the accept loop ends in the background."""
        self.httpd.server_close()
        for sock in self.clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        threading.Thread(target=self.httpd.shutdown, daemon=True).start()


_run = partial(run_args, limit=4, backoff_base=0.01, backoff_max=0.05, concurrency=2)


def _answers(out: Path) -> dict[str, str]:
    """The cache's answers by key; asserts no key was answered twice."""
    records = list(iter_records(out / "responses.cache.jsonl"))
    answers = {r["key"]: r["response"] for r in records}
    assert len(answers) == len(records), "a row answered twice in the cache"
    return answers


@pytest.fixture(scope="module")
def one_server_run(synthetic_build, tmp_path_factory, chat_server):
    """The reference: the same run against one server (its cache and predictions)."""
    out = tmp_path_factory.mktemp("one") / "runs"
    with chat_server() as server:
        assert main([*_run(synthetic_build, out, [server.base_url]), "--json"]) == 0
    predictions = next(out.rglob("predictions.jsonl")).read_text()
    return _answers(out), predictions


def test_the_summary_gives_the_concurrency_the_backend_used_however_it_was_set(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    """`-M concurrency=3` (no --concurrency flag) is what the pool used and what the summary says, not the flag's."""
    with chat_server() as first, chat_server() as second:
        args = run_args(
            synthetic_build,
            tmp_path / "runs",
            None,
            "-M",
            f"base_url={first.base_url},{second.base_url}",
            limit=4,
            backoff_base=0.01,
            backoff_max=0.05,
        )
        assert main([*args, "-M", "concurrency=3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["concurrency_per_server"] == 3


def _summary(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_two_servers_share_the_rows_and_give_the_one_server_cache(
    synthetic_build, one_server_run, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with chat_server(kind=KillableServer) as first, chat_server(kind=KillableServer) as second:
        urls = [first.base_url, second.base_url]
        assert main([*_run(synthetic_build, out, urls), "--json"]) == 0
        summary = _summary(capsys)
        assert first.answered + second.answered == ROWS and first.answered >= 4 and second.answered >= 4
        assert main(_run(synthetic_build, out, [f"{first.base_url},{second.base_url}"])) == 0  # a comma list
        line = capsys.readouterr().out
    assert summary["parsed"] == ROWS and summary["failed"] == 0 and summary["concurrency_per_server"] == 2
    assert [s["answered"] for s in summary["servers"]] == [first.answered, second.answered]
    assert _answers(out) == one_server_run[0]  # the cache key holds no address
    assert next(out.rglob("predictions.jsonl")).read_text() == one_server_run[1]
    assert "0 called" in line and "servers: 2, 2 requests in flight per server (--concurrency)" in line


def test_three_servers_one_killed_mid_run_lose_no_row_and_answer_none_twice(
    synthetic_build, one_server_run, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with (
        chat_server(kind=KillableServer, die_at=5) as victim,
        chat_server(kind=KillableServer) as second,
        chat_server(kind=KillableServer) as third,
    ):
        urls = [victim.base_url, second.base_url, third.base_url]
        assert main([*_run(synthetic_build, out, urls), "--json"]) == 0
        summary = _summary(capsys)
    victim_use = summary["servers"][0]
    # it died at its fifth request, which was never answered (nor, maybe, one in flight beside it)
    assert victim.dead and victim_use["answered"] <= 4 and victim_use["failed"] >= 1
    assert victim_use["answered"] + second.answered + third.answered == ROWS  # what the client received
    assert summary["rows"] == summary["parsed"] == ROWS and summary["failed"] == 0 and summary["failures"] == {}
    assert _answers(out) == one_server_run[0]
    assert next(out.rglob("predictions.jsonl")).read_text() == one_server_run[1]


def test_a_server_that_only_returns_500_is_taken_out_and_the_run_completes(
    synthetic_build, one_server_run, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with chat_server(kind=KillableServer, status=500) as broken, chat_server(kind=KillableServer) as healthy:
        assert main([*_run(synthetic_build, out, [broken.base_url, healthy.base_url]), "--json"]) == 0
        summary = _summary(capsys)
    assert healthy.answered == ROWS and broken.answered == 0
    assert summary["parsed"] == ROWS and summary["failed"] == 0
    broken_use = summary["servers"][0]
    assert broken_use["cool_downs"] >= 1 and broken_use["answered"] == 0 and broken_use["failed"] == broken.requests
    assert broken.requests < ROWS  # taken out: not asked once per row
    assert _answers(out) == one_server_run[0]


def test_when_no_server_can_be_reached_the_run_stops_naming_each(synthetic_build, tmp_path, capsys) -> None:
    closed = []
    for _ in range(2):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            closed.append(f"http://127.0.0.1:{probe.getsockname()[1]}/v1")
    code = main(_run(synthetic_build, tmp_path / "runs", closed))
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mis-bench")]
    assert code == EXIT_REQUESTS and len(err) == 1
    assert "cannot reach any of the 2 model servers" in err[0] and all(url in err[0] for url in closed)


def test_dry_run_and_batch_export_are_those_of_one_server(synthetic_build, tmp_path, capsys) -> None:
    urls = ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]
    assert main([*_run(synthetic_build, tmp_path / "a", urls[:1]), "--limit", "1", "--dry-run", "--json"]) == 0
    one = _summary(capsys)
    assert main([*_run(synthetic_build, tmp_path / "b", urls), "--limit", "1", "--dry-run", "--json"]) == 0
    assert _summary(capsys) == one
    files = []
    for name, given in (("a", urls[:1]), ("b", urls)):
        batch = tmp_path / name / "batch.jsonl"
        export = [*_run(synthetic_build, tmp_path / name, given), "--limit", "1", "--export-batch", str(batch)]
        assert main([*export, "--json"]) == 0
        capsys.readouterr()
        files.append(batch.read_text())
    assert files[0] == files[1]
    assert main([*_run(synthetic_build, tmp_path / "c", ["ftp://x"]), "--dry-run"]) == EXIT_USAGE
