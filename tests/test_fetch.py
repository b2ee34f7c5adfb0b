"""`mis-bench fetch` against a real HTTP server on 127.0.0.1 serving ../shared/data in the authors' layout
(`{commit}/{path}`, as GitHub's raw file host serves calistalu/MIS-Bench), and `mis-bench build --authors`.

The server is `http.server` in a thread with real Range support and switches for what can go wrong: a file
altered by one byte, a connection cut mid-file, a server ignoring Range. Expected hashes are computed here
from ../shared with hashlib; the commits are the issue's, written out, not read from the code under test.
Skipped where ../shared is not laid out.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import AUTHORS, REAL_TRANSCRIPTS, SHARED_DATA
from conftest import SUBSET10 as SUBSET10_DIR

from eval_scripts.cli import main
from mis_bench_dataset.release import fetch as fetch_module
from mis_bench_dataset.release.provenance import PUBLIC_FILES, SUBSET10

from _harness_helpers import SHUTDOWN_POLL_S

REPO = Path(__file__).resolve().parents[1]
GOLD_COMMIT = "d2b9b8ee2b1d17d30c782b991b534d18da27aa8d"
TABLE4_COMMIT = "d7a60ad3d7b93c38c2bfb57477a119b48e8f7166"
SUBSET_COMMIT = "84226a7a8f3785961f3cf0f9dfedc65b52d12235"

pytestmark = pytest.mark.skipif(
    not (AUTHORS.is_dir() and REAL_TRANSCRIPTS.is_file() and SUBSET10_DIR.is_dir()),
    reason=f"{SHARED_DATA} not present (../shared is only laid out for developers and CI)",
)


def _routes() -> dict[str, Path]:
    """URL path -> the file of ../shared/data it serves, in the authors' repository layout."""
    routes = {f"/{GOLD_COMMIT}/coding.csv": AUTHORS / "coding.csv"}
    for name in ("raw_inference.csv", "finetune.csv", "finetune_raft.csv"):
        routes[f"/{TABLE4_COMMIT}/{name}"] = AUTHORS / name
    routes[f"/{TABLE4_COMMIT}/fis_transcript.csv"] = REAL_TRANSCRIPTS
    for path in sorted(SUBSET10_DIR.rglob("*")):
        if path.is_file():
            routes[f"/{SUBSET_COMMIT}/MIS-Bench_subset10/{path.relative_to(SUBSET10_DIR).as_posix()}"] = path
    return routes


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Mirror:
    """The authors' files over HTTP. `tamper`: names served with their middle byte changed; `cut`: name ->
    bytes sent before the connection is cut (the first `cuts` responses of it); `ignore_range`: answer a
    Range request with the whole file (200)."""

    def __init__(self, tamper=(), cut=None, cuts=1, ignore_range=False, stall=None):
        self.routes = _routes()
        self.stall = stall  # (name, bytes): send that many bytes of it, then hold the connection until closed
        self.released = threading.Event()
        self.tamper, self.cut, self.cuts_left = set(tamper), dict(cut or {}), {k: cuts for k in (cut or {})}
        self.ignore_range = ignore_range
        self.log: list[tuple[str, str | None, int]] = []  # (file name, Range header, status)
        mirror = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                source = mirror.routes.get(self.path)
                if source is None:
                    self.send_error(404)
                    mirror.log.append((self.path, None, 404))
                    return
                name = self.path.rsplit("/", 1)[-1]
                body = bytearray(source.read_bytes())
                if name in mirror.tamper:
                    body[len(body) // 2] ^= 0x01
                asked = self.headers.get("Range")
                start = int(re.fullmatch(r"bytes=(\d+)-", asked)[1]) if asked and not mirror.ignore_range else 0
                status = 206 if start else 200
                mirror.log.append((name, asked, status))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body) - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                payload = bytes(body[start:])
                if mirror.stall and mirror.stall[0] == name:
                    self.wfile.write(payload[: mirror.stall[1]])
                    self.wfile.flush()
                    mirror.released.wait(30)
                    return
                if mirror.cuts_left.get(name, 0) > 0:
                    mirror.cuts_left[name] -= 1
                    self.wfile.write(payload[: mirror.cut[name]])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)  # the connection cut mid-file
                    self.close_connection = True
                    return
                self.wfile.write(payload)

        class QuietServer(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def requests(self, name: str) -> list[tuple[str | None, int]]:
        return [(asked, status) for served, asked, status in self.log if served == name]

    def __enter__(self) -> Mirror:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _fetch(out: Path, url: str, *extra: str, capsys) -> tuple[int, dict | None, str]:
    code = main(["fetch", "--out", str(out), "--base-url", url, "--json", *extra])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("mis-bench fetch: error: ")]


def _leftovers(out: Path, name: str) -> list[Path]:
    """Anything of `name` anywhere under `out` (the published file, a partial download)."""
    return [p for p in out.rglob("*") if name in p.name]


@pytest.fixture(scope="module")
def fetched(tmp_path_factory) -> tuple[Path, dict]:
    """Every file, the feature sample included, fetched once from a healthy mirror."""
    out = tmp_path_factory.mktemp("fetched") / "authors"
    with Mirror() as mirror:
        code = main(["fetch", "--out", str(out), "--base-url", mirror.url, "--features", "subset10", "--json"])
    assert code == 0
    return out, {"routes": mirror.routes, "log": list(mirror.log)}


def test_every_file_arrives_with_the_sha256_of_the_shared_copy(fetched):
    out, served = fetched
    expected = {"coding.csv": AUTHORS / "coding.csv", "fis_transcript.csv": REAL_TRANSCRIPTS}
    expected |= {name: AUTHORS / name for name in ("raw_inference.csv", "finetune.csv", "finetune_raft.csv")}
    expected |= {f"MIS-Bench_subset10/{p.relative_to(SUBSET10_DIR).as_posix()}": p for p in SUBSET10_DIR.rglob("*")}
    expected = {name: path for name, path in expected.items() if path.is_file()}
    published = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")}
    assert published == set(expected) and len(published) == 5 + 44
    assert {name: _sha(out / name) for name in published} == {name: _sha(path) for name, path in expected.items()}
    assert not (out / fetch_module.PARTIAL_FOLDER).exists()
    assert len(served["log"]) == 49 and all(status == 200 for _, _, status in served["log"])


def test_the_provenance_table_holds_every_file_of_the_feature_sample():
    on_disk = {f"MIS-Bench_subset10/{p.relative_to(SUBSET10_DIR).as_posix()}": p for p in SUBSET10_DIR.rglob("*")}
    on_disk = {name: (path.stat().st_size, _sha(path)) for name, path in on_disk.items() if path.is_file()}
    assert {f.name: (f.size, f.sha256) for f in SUBSET10.files} == on_disk
    assert {f.commit_full for f in SUBSET10.files} == {SUBSET_COMMIT}
    assert {f.name: f.commit_full for f in PUBLIC_FILES} == {
        "coding.csv": GOLD_COMMIT,
        **dict.fromkeys(
            ("raw_inference.csv", "finetune.csv", "finetune_raft.csv", "fis_transcript.csv"), TABLE4_COMMIT
        ),
    }
    sizes = {"coding.csv": AUTHORS / "coding.csv", "fis_transcript.csv": REAL_TRANSCRIPTS}
    sizes |= {n: AUTHORS / n for n in ("raw_inference.csv", "finetune.csv", "finetune_raft.csv")}
    assert {f.name: f.size for f in PUBLIC_FILES} == {n: p.stat().st_size for n, p in sizes.items()}


def test_files_already_there_are_kept_without_a_request(fetched, capsys):
    out, _ = fetched

    def files() -> dict:  # the lock file is opened (O_TRUNC: a new mtime) by every run; the files are what is kept
        return {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and p.name != ".fetch.lock"}

    before = files()
    with Mirror() as mirror:
        code, doc, _ = _fetch(out, mirror.url, "--features", "subset10", capsys=capsys)
    assert code == 0 and mirror.log == []
    assert doc["fetched"] == [] and len(doc["kept"]) == len(doc["verified"]) == 49
    assert files() == before


def test_a_tampered_file_is_refused_with_both_hashes_and_nothing_left(tmp_path, capsys):
    out = tmp_path / "authors"
    with Mirror(tamper={"finetune.csv"}) as mirror:
        code, _, err = _fetch(out, mirror.url, capsys=capsys)
    altered = bytearray((AUTHORS / "finetune.csv").read_bytes())
    altered[len(altered) // 2] ^= 0x01
    (line,) = _error_lines(err)
    assert code == 1 and "finetune.csv" in line
    assert hashlib.sha256(altered).hexdigest() in line and _sha(AUTHORS / "finetune.csv") in line
    assert _leftovers(out, "finetune") == []
    assert {p.name for p in out.glob("*.csv")} == {"coding.csv", "raw_inference.csv"}  # verified before it
    # The next run against a sound mirror gets it (and keeps the two already there).
    with Mirror() as mirror:
        code, doc, _ = _fetch(out, mirror.url, capsys=capsys)
    assert code == 0 and doc["kept"] == ["coding.csv", "raw_inference.csv"]
    assert _sha(out / "finetune.csv") == _sha(AUTHORS / "finetune.csv")


def test_a_connection_cut_mid_file_is_resumed_with_a_range_request(tmp_path, capsys):
    out = tmp_path / "authors"
    with Mirror(cut={"fis_transcript.csv": 100_000}) as mirror:
        code, doc, _ = _fetch(out, mirror.url, capsys=capsys)
    assert code == 0 and mirror.requests("fis_transcript.csv") == [(None, 200), ("bytes=100000-", 206)]
    entry = next(f for f in doc["files"] if f["file"] == "fis_transcript.csv")
    assert (entry["resumed_from"], entry["restarts"], entry["requests"]) == (100_000, 0, 2)
    assert (out / "fis_transcript.csv").read_bytes() == REAL_TRANSCRIPTS.read_bytes()


def test_a_server_ignoring_the_range_makes_the_file_start_over(tmp_path, capsys):
    out = tmp_path / "authors"
    with Mirror(cut={"coding.csv": 50_000}, ignore_range=True) as mirror:
        code, doc, _ = _fetch(out, mirror.url, capsys=capsys)
    assert code == 0 and mirror.requests("coding.csv") == [(None, 200), ("bytes=50000-", 200)]
    entry = next(f for f in doc["files"] if f["file"] == "coding.csv")
    assert (entry["resumed_from"], entry["restarts"]) == (0, 1)
    assert (out / "coding.csv").read_bytes() == (AUTHORS / "coding.csv").read_bytes()


def test_cuts_past_the_retries_exit_3_and_the_next_run_resumes(tmp_path, capsys):
    out = tmp_path / "authors"
    attempts = fetch_module.RETRIES + 1
    with Mirror(cut={"fis_transcript.csv": 100_000}, cuts=attempts) as mirror:
        code, _, err = _fetch(out, mirror.url, capsys=capsys)
    (line,) = _error_lines(err)
    kept = 100_000 * attempts
    assert code == 3 and "fis_transcript.csv" in line and f"{kept:,} bytes" in line and "rerun" in line
    assert not (out / "fis_transcript.csv").exists()
    assert (out / fetch_module.PARTIAL_FOLDER / "fis_transcript.csv.part").stat().st_size == kept
    with Mirror() as mirror:
        code, doc, _ = _fetch(out, mirror.url, capsys=capsys)
    assert code == 0 and mirror.requests("fis_transcript.csv") == [(f"bytes={kept}-", 206)]
    assert (out / "fis_transcript.csv").read_bytes() == REAL_TRANSCRIPTS.read_bytes()
    assert not (out / fetch_module.PARTIAL_FOLDER).exists()


def test_a_damaged_partial_download_starts_over_once(tmp_path, capsys):
    out = tmp_path / "authors"
    part = out / fetch_module.PARTIAL_FOLDER / "coding.csv.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"not the authors' bytes" * 100)
    with Mirror() as mirror:
        code, doc, _ = _fetch(out, mirror.url, capsys=capsys)
    assert code == 0 and mirror.requests("coding.csv") == [("bytes=2200-", 206), (None, 200)]
    assert next(f for f in doc["files"] if f["file"] == "coding.csv")["restarts"] == 1
    assert (out / "coding.csv").read_bytes() == (AUTHORS / "coding.csv").read_bytes()


def test_sigterm_mid_file_keeps_the_partial_download_for_the_next_run(tmp_path, capsys):
    out = tmp_path / "authors"
    part = out / fetch_module.PARTIAL_FOLDER / "coding.csv.part"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with Mirror(stall=("coding.csv", 60_000)) as mirror:
        command = [sys.executable, "-m", "eval_scripts.cli", "fetch", "--out", str(out), "--base-url", mirror.url]
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not (part.is_file() and part.stat().st_size == 60_000) and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 143 and "partial download for the next mis-bench fetch to resume" in err
    assert part.stat().st_size == 60_000 and not (out / "coding.csv").exists()
    with Mirror() as mirror:
        code, doc, _ = _fetch(out, mirror.url, capsys=capsys)
    assert code == 0 and mirror.requests("coding.csv") == [("bytes=60000-", 206)]
    assert (out / "coding.csv").read_bytes() == (AUTHORS / "coding.csv").read_bytes()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed when the block ends: nothing listens there


def test_a_closed_port_gives_one_line_with_the_git_show_commands_of_the_docs(tmp_path, capsys):
    out = tmp_path / "authors"
    code = main(["fetch", "--out", str(out), "--base-url", f"http://127.0.0.1:{_closed_port()}"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""  # an unreachable file host (docs/reproducing.md)
    (line,) = captured.err.splitlines()
    docs = (REPO / "docs" / "reproducing.md").read_text(encoding="utf-8")
    shown = re.findall(r"git show ([0-9a-f]{7}):(\S+)", docs)
    assert len(set(shown)) == 5 and all(f"git show {commit}:{path} " in line for commit, path in set(shown))
    assert line.startswith("mis-bench fetch: error: cannot reach") and "connection refused" in line
    assert not list(out.glob("*.csv")) and not (out / fetch_module.PARTIAL_FOLDER).exists()


def test_a_server_refusing_the_path_is_a_usage_error(tmp_path, capsys):
    with Mirror() as mirror:
        code, _, err = _fetch(tmp_path / "authors", mirror.url + "/wrong", capsys=capsys)
    (line,) = _error_lines(err)
    assert code == 2 and "HTTP 404" in line and "--base-url" in line


def test_a_foreign_file_in_the_folder_is_left_alone(tmp_path, capsys):
    out = tmp_path / "authors"
    out.mkdir()
    (out / "coding.csv").write_text("mine\n", encoding="utf-8")
    with Mirror() as mirror:
        code, _, err = _fetch(out, mirror.url, capsys=capsys)
    (line,) = _error_lines(err)
    assert code == 1 and mirror.log == [] and "coding.csv" in line and _sha(AUTHORS / "coding.csv") in line
    assert (out / "coding.csv").read_text(encoding="utf-8") == "mine\n"


def test_the_base_url_comes_from_the_flag_then_the_environment(monkeypatch):
    monkeypatch.delenv(fetch_module.BASE_URL_ENV, raising=False)
    assert fetch_module.resolve_base_url() == "https://raw.githubusercontent.com/calistalu/MIS-Bench"
    monkeypatch.setenv(fetch_module.BASE_URL_ENV, "http://mirror.example/MIS-Bench/")
    assert fetch_module.resolve_base_url() == "http://mirror.example/MIS-Bench"
    assert fetch_module.resolve_base_url("https://other.example") == "https://other.example"
    assert main(["fetch", "--base-url", "ftp://x/y", "--out", "/nonexistent-never-made"]) == 2


@pytest.mark.slow
def test_reproduce_table4_from_the_fetched_folder_equals_the_run_from_shared(fetched, reproduced_table4, capsys):
    """The fetched folder holds the transcripts (fis_transcript.csv) the ridge column needs; ../shared keeps them
    beside the authors' folder under another name (`reproduced_table4`: the run from ../shared, made once)."""
    from conftest import REPRODUCE_TABLE4_BOOTSTRAP

    out, _ = fetched
    args = ["reproduce", "table4", "--from", str(out), "--bootstrap", str(REPRODUCE_TABLE4_BOOTSTRAP), "--json"]
    assert main(args) == 0
    docs = [json.loads(capsys.readouterr().out), copy.deepcopy(reproduced_table4)]
    names = [doc["ridge"]["transcripts"].pop("file") for doc in docs]  # the local names: all else is equal
    assert names == ["fis_transcript.csv", "mis-bench-transcripts.csv"]
    assert docs[0] == docs[1] and docs[0]["gold_file"]["published"] and docs[0]["n_equal"] == 24
    assert docs[0]["ridge"] is not None and round(100 * docs[0]["ridge"]["mean_icc"], 1) == 41.2


def test_build_authors_is_the_build_from_transcripts_and_labels(fetched, real_text_build, tmp_path, capsys):
    out, _ = fetched
    assert main(["build", "--authors", str(out), "--out", str(tmp_path / "real"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    reference = json.loads((real_text_build / "build_report.json").read_text(encoding="utf-8"))
    assert (
        report["fingerprint"] == reference["fingerprint"]
        and report["split_fingerprints"] == reference["split_fingerprints"]
    )
    card = (tmp_path / "real" / "README.md").read_text(encoding="utf-8")
    assert "https://github.com/calistalu/MIS-Bench, commit d2b9b8e, path coding.csv" in card
    assert "https://github.com/calistalu/MIS-Bench, commit d7a60ad, path fis_transcript.csv" in card


def test_build_authors_says_what_is_missing_and_refuses_a_second_source(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["build", "--authors", str(empty), "--out", str(tmp_path / "b")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "fis_transcript.csv" in line and f"mis-bench fetch --out {empty}" in line
    code = main(["build", "--authors", str(empty), "--labels", str(AUTHORS / "coding.csv"), "--out", str(tmp_path)])
    assert code == 2 and not (tmp_path / "b").exists()


class _Redirector(ThreadingHTTPServer):
    """A real local server that answers every GET with a redirect to `target` + the path asked."""

    def __init__(self, target: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                self.send_response(302)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True).start()


def test_a_redirect_to_a_port_that_refuses_names_that_port_not_the_host_that_redirected(tmp_path, capsys):
    closed = f"http://127.0.0.1:{_closed_port()}"
    redirector = _Redirector(closed + "/mirror")
    try:
        code = main(["fetch", "--out", str(tmp_path / "authors"), "--base-url", redirector.url])
    finally:
        redirector.shutdown()
        redirector.server_close()
    (line,) = capsys.readouterr().err.splitlines()
    host = closed.removeprefix("http://")
    assert code == 1 and f"cannot reach the authors' file host {host} (connection refused, where " in line
    assert f"where {redirector.url}/" in line and f"redirected) ({closed}/mirror/" in line


def test_a_redirect_to_a_path_the_mirror_refuses_names_the_redirected_url(tmp_path, capsys):
    class Refusing(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    refusing = ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=refusing.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True).start()
    target = f"http://127.0.0.1:{refusing.server_address[1]}/moved"
    redirector = _Redirector(target)
    try:
        code = main(["fetch", "--out", str(tmp_path / "authors"), "--base-url", redirector.url])
    finally:
        for server in (redirector, refusing):
            server.shutdown()
            server.server_close()
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and "HTTP 404" in line and f"({target}/" in line and f"({redirector.url}/" not in line
