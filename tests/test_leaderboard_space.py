"""The Space as a real HTTP server on loopback: it serves its page whatever the request files hold, drops
idle and slow clients, bounds its connections, answers HEAD with hardened headers, binds HOST, reads
submissions as pull requests, and ranks exactly what `mis-bench leaderboard` ranks."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import select
import socket
import threading
import time
import urllib.request
from types import SimpleNamespace

import pytest

from eval_scripts.cli import main as cli_main
from eval_scripts.leaderboard import space_app
from eval_scripts.leaderboard.space_app import build_board_from_env, make_server, site_files

from _leaderboard_helpers import make_results, noisy_predictions


@contextlib.contextmanager
def serving(files, **kw):
    server = make_server(files, host="127.0.0.1", port=0, **kw)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _get(port, path="/", method="GET"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.headers, response.read()  # names case-insensitive, as HTTP has them


@pytest.fixture(scope="module")
def build_refs(synthetic_build):
    from eval_scripts import read_board_references

    return read_board_references(synthetic_build, "test")


@pytest.fixture()
def space_env(tmp_path, synthetic_build, build_refs, monkeypatch):
    """A submissions folder on the synthetic build: two good files, one on another build, one with a lone
    surrogate in its model name (valid JSON)."""
    subs = tmp_path / "subs"
    subs.mkdir()
    fingerprint = sorted(build_refs.fingerprints)[0]
    for index, (name, noise) in enumerate((("a", 0.2), ("b", 0.6))):
        obj = make_results(noisy_predictions(build_refs.labels, noise, seed=index), model=f"org/{name}")
        obj["dataset"].update(fingerprint=fingerprint, synthetic=False)  # the build says synthetic: it is marked
        (subs / f"{name}.json").write_text(json.dumps(obj))
    other = make_results(noisy_predictions(build_refs.labels, 0.1, seed=5), model="org/elsewhere")
    (subs / "elsewhere.json").write_text(json.dumps(other))
    hostile = make_results(noisy_predictions(build_refs.labels, 0.1, seed=6), model="SURROGATE")
    hostile["dataset"]["fingerprint"] = fingerprint
    (subs / "surrogate.json").write_text(json.dumps(hostile).replace("SURROGATE", "sur\\ud800rogate"))
    monkeypatch.setenv("MIS_BENCH_SUBMISSIONS", str(subs))
    monkeypatch.setenv("MIS_BENCH_REFERENCES", str(synthetic_build))
    monkeypatch.setenv("MIS_BENCH_BOOTSTRAP", "30")
    return subs


def test_the_space_serves_its_page_with_a_surrogate_file_present(space_env):
    board = build_board_from_env()
    assert [e["model"] for e in board["entries"]] == ["org/a", "org/b"]
    assert all(e["synthetic"] for e in board["entries"]) and board["synthetic"] is True
    reasons = {r["file"]: r["reasons"][0] for r in board["rejected"]}
    assert set(reasons) == {"elsewhere.json", "surrogate.json"}
    assert "dataset fingerprint 'abc123' is not the references'" in reasons["elsewhere.json"]
    assert "lone surrogate" in reasons["surrogate.json"]
    with serving(site_files(board)) as port:
        status, headers, body = _get(port)
        assert status == 200 and "org/a" in body.decode("utf-8") and "SYNTHETIC DATA" in body.decode("utf-8")
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert "frame-ancestors" in headers["Content-Security-Policy"]
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert headers["Server"] == "mis-bench-leaderboard"  # no server or Python version
        status, head_headers, head_body = _get(port, "/leaderboard.json", method="HEAD")
        assert status == 200 and head_body == b""
        assert int(head_headers["Content-Length"]) == len(site_files(board)["/leaderboard.json"][1])
        with pytest.raises(urllib.error.HTTPError) as info:
            _get(port, "/secret-labels.csv")
        assert info.value.code == 404 and info.value.headers["X-Content-Type-Options"] == "nosniff"


def test_the_space_ranks_exactly_what_the_cli_ranks(space_env, synthetic_build, tmp_path, capsys):
    out = tmp_path / "board"
    args = ["leaderboard", str(space_env), "--references", str(synthetic_build), "--out", str(out)]
    assert cli_main([*args, "--bootstrap", "100"]) == 0
    cli_board = json.loads((out / "leaderboard.json").read_text())
    space_board = build_board_from_env()
    for key in ("entries", "floors", "unranked", "rejected", "synthetic", "references_fingerprints"):
        assert space_board[key] == cli_board[key], key


def _idle_is_dropped(port, payload: bytes, within: float) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        if payload:
            client.sendall(payload)
        start = time.monotonic()
        data = client.recv(4096)  # blocks until the server answers or drops the connection
        elapsed = time.monotonic() - start
        assert elapsed < within
        return data


def test_idle_and_half_sent_clients_are_timed_out(space_env):
    files = site_files(build_board_from_env())
    with serving(files, timeout=0.5) as port:
        assert _idle_is_dropped(port, b"", within=5) == b""
        half = _idle_is_dropped(port, b"GET / HTTP/1.1\r\nHost: x\r\n", within=5)  # headers never finished
        assert half == b""
        assert _get(port)[0] == 200
    assert space_app.CLIENT_TIMEOUT_S <= 30


def test_connections_beyond_the_limit_get_503_and_the_page_returns(space_env):
    files = site_files(build_board_from_env())
    limit = 6
    with serving(files, timeout=3.0, max_connections=limit) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(limit)]  # every connection held
        time.sleep(0.5)  # all accepted (well within their deadline)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as extra:
                extra.sendall(b"GET / HTTP/1.0\r\n\r\n")
                assert extra.recv(4096).startswith(b"HTTP/1.1 503")
        finally:
            for client in idle:
                client.close()
        deadline = time.monotonic() + 10
        while True:  # the idle clients are gone and their connections with them
            try:
                assert _get(port)[0] == 200
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline
                time.sleep(0.2)


def _trickle(port: int, dropped_after: list[float]) -> None:
    """A slow client: a byte of its headers every 0.1 s (at most 100), until the server drops it."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        for byte in (b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 100)[:100]:
            try:
                client.sendall(bytes([byte]))
            except OSError:
                break
            if select.select([client], [], [], 0.1)[0]:  # readable: the server answered or hung up
                # hung up (its request cut off, never answered): a close, or a reset when a byte of it was still
                # unread as the server closed (how the kernel closes a socket with unread data)
                try:
                    answer = client.recv(4096)
                except ConnectionResetError:
                    answer = b""
                assert answer == b"" or answer.startswith(b"HTTP/1.1 503"), answer
                break
        else:
            return
        dropped_after.append(time.monotonic() - started)


def test_trickling_clients_cannot_keep_a_visitor_out(space_env, caplog):
    """Clients trickling their headers: each is dropped at the request's deadline (not reset by every byte), the
    visitor who arrives after them is served within that deadline, and no half-sent request is answered or
    logged as a traceback."""
    files = site_files(build_board_from_env())
    deadline_s, n_tricklers = 2.0, 6
    dropped_after = []
    caplog.set_level("INFO", logger=space_app.__name__)
    with serving(files, timeout=deadline_s) as port:
        tricklers = [threading.Thread(target=_trickle, args=(port, dropped_after)) for _ in range(n_tricklers)]
        for thread in tricklers:
            thread.start()
        time.sleep(0.3)  # every trickler connected and sending
        try:
            started = time.monotonic()
            status, _, body = _get(port)
            waited = time.monotonic() - started
        finally:
            for thread in tricklers:
                thread.join(timeout=15)
    assert status == 200 and b"org/a" in body
    assert waited < deadline_s + 1.0  # within the deadline (and scheduling on a loaded machine)
    assert len(dropped_after) == n_tricklers  # every trickler was cut off ...
    assert max(dropped_after) < 2 * deadline_s + 1  # ... by its deadline (a byte each 0.1 s reset no timer)
    assert "Traceback" not in caplog.text
    assert "cut off before its headers ended" in caplog.text


def _trickle_until(port: int, stop: threading.Event) -> None:
    """A slow client holding its connection: a byte of its headers every 0.1 s until told to stop."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        for byte in (b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 1000)[:1000]:
            if stop.wait(0.1):
                return
            client.sendall(bytes([byte]))


def test_a_visitor_is_answered_within_2_s_past_200_idle_and_40_trickling_clients(space_env):
    """What the thread-per-connection server failed (a first byte after 14-15 s): idle sockets and trickling
    clients, all inside their deadline, hold nothing a visitor needs on an asyncio server."""
    files = site_files(build_board_from_env())
    stop = threading.Event()
    with serving(files) as port:  # the Space's own deadline and connection limit
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(200)]
        tricklers = [threading.Thread(target=_trickle_until, args=(port, stop), daemon=True) for _ in range(40)]
        try:
            for thread in tricklers:
                thread.start()
            time.sleep(0.5)  # every idle client accepted, every trickler connected and sending
            started = time.monotonic()
            status, _, body = _get(port)
            waited = time.monotonic() - started
            # none of them was dropped or answered to make room: the idle sockets are still open and silent
            assert not select.select(idle, [], [], 0)[0]
        finally:
            stop.set()
            for client in idle:
                client.close()
            for thread in tricklers:
                thread.join(timeout=5)
    assert status == 200 and b"org/a" in body
    assert waited < 2.0, f"the visitor waited {waited:.2f} s"


def test_a_client_that_hangs_up_mid_request_is_one_log_line_and_no_answer(space_env, caplog, capfd):
    files = site_files(build_board_from_env())
    caplog.set_level("INFO", logger=space_app.__name__)
    with serving(files, timeout=5.0) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            client.shutdown(socket.SHUT_WR)
            assert client.recv(4096) == b""  # not answered
        assert _get(port)[0] == 200
    lines = [r.getMessage() for r in caplog.records if "cut off" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "Traceback" not in capfd.readouterr().err


def test_main_binds_the_host_from_the_environment(space_env, monkeypatch):
    made = {}
    real = space_app.make_server

    def recording(files, host, port):
        made["server"] = real(files, host=host, port=port)
        return made["server"]

    monkeypatch.setattr(space_app, "make_server", recording)
    monkeypatch.setenv("HOST", "127.0.0.1")
    monkeypatch.setenv("PORT", "0")
    thread = threading.Thread(target=space_app.main, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while "server" not in made:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    server = made["server"]
    try:
        assert server.server_address[0] == "127.0.0.1"
        assert _get(server.server_address[1])[0] == 200
    finally:
        server.shutdown()
        server.server_close()


class FakeHub:
    """The few HfApi calls the Space makes, over in-memory pull requests (no network)."""

    def __init__(self, tmp_path, pulls, main_files):
        self.tmp, self.pulls, self.main_files = tmp_path, pulls, main_files

    def get_repo_discussions(self, repo_id, *, repo_type, discussion_type):
        assert (repo_type, discussion_type) == ("dataset", "pull_request")
        return [
            SimpleNamespace(num=n, status=p["status"], author=p["author"], created_at=p["at"])
            for n, p in self.pulls.items()
        ]

    def get_discussion_details(self, repo_id, num, *, repo_type):
        paths = self.pulls[num]["files"]
        return SimpleNamespace(diff="".join(f"diff --git a/{p} b/{p}\n--- /dev/null\n+++ b/{p}\n" for p in paths))

    def list_repo_files(self, repo_id, *, repo_type):
        return list(self.main_files)

    def hf_hub_download(self, repo_id, filename, *, repo_type, revision):
        source = self.pulls[int(revision.split("/")[-1])]["files"][filename] if revision else self.main_files[filename]
        local = self.tmp / f"download-{abs(hash((filename, revision)))}.json"
        local.write_text(source)
        return str(local)


def test_the_space_reads_pull_requests_and_limits_each_account(tmp_path, build_refs, synthetic_build, monkeypatch):
    fingerprint = sorted(build_refs.fingerprints)[0]

    def request(model, seed):
        obj = make_results(noisy_predictions(build_refs.labels, 0.4, seed=seed), model=model)
        obj["dataset"]["fingerprint"] = fingerprint
        return json.dumps(obj)

    t0 = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
    pulls = {
        1: {"status": "merged", "author": "alice", "at": t0, "files": {"requests/a.json": request("org/a", 1)}},
        2: {
            "status": "open",
            "author": "eve",
            "at": t0 + dt.timedelta(hours=1),
            "files": {"requests/e1.json": request("eve/1", 2)},
        },
        3: {
            "status": "open",
            "author": "eve",
            "at": t0 + dt.timedelta(hours=2),
            "files": {"requests/e2.json": request("eve/2", 3)},
        },
        4: {"status": "closed", "author": "bob", "at": t0, "files": {"requests/b.json": request("org/b", 4)}},
    }
    main_files = {"requests/a.json": pulls[1]["files"]["requests/a.json"], "README.md": "x"}
    monkeypatch.delenv("MIS_BENCH_SUBMISSIONS", raising=False)
    monkeypatch.setenv("MIS_BENCH_REQUESTS_REPO", "org/requests")
    monkeypatch.setenv("MIS_BENCH_REFERENCES", str(synthetic_build))
    monkeypatch.setenv("MIS_BENCH_BOOTSTRAP", "0")
    monkeypatch.setenv("MIS_BENCH_HIDDEN_LABELS", "1")
    board = build_board_from_env(hf_api=FakeHub(tmp_path, pulls, main_files))
    ranked = {e["file"]: e["account"] for e in board["entries"]}
    assert ranked == {"pr1__a.json": "alice", "pr2__e1.json": "eve"}  # the merged file counts once, as alice's
    (limited,) = board["unranked"]
    assert limited["file"] == "pr3__e2.json" and "less than a day earlier" in limited["reason"]
    assert board["labels_public"] is False and "pr4__b.json" not in json.dumps(board)
