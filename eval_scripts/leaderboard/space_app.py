"""Hub Space app: serves the leaderboard page built by the same code as `mis-bench leaderboard`.

Deploy as a Docker Space (`sdk: docker`, `app_port: 7860`) whose command is
`python -m eval_scripts.leaderboard.space_app`. Configuration by environment:

- `MIS_BENCH_SUBMISSIONS`: folder of submission JSON files (the operator's), or
  `MIS_BENCH_REQUESTS_REPO`: a Hub dataset of requests, read at start: each pull request adding
  `requests/*.json` is a submission of its author (`received.hub_requests`);
- `MIS_BENCH_REFERENCES`: the hidden labels (a built dataset folder or a labels file,
  anything `mis_icc_metric.predictions_io.read_references` reads), kept in a private
  location the submitters cannot see; a build's fingerprints and SYNTHETIC flag apply as in the CLI;
- `MIS_BENCH_HIDDEN_LABELS=1`: the labels are not public (ICCs only, one ranked submission per account a
  day); `MIS_BENCH_TRUSTED_ACCOUNTS`: comma-separated accounts that may submit `baseline/*` entries;
- `MIS_BENCH_SPLIT` (default `test`), `MIS_BENCH_BOOTSTRAP` (default 10000), `HOST` (default 0.0.0.0, as a
  Space needs), `PORT` (default 7860).

Stdlib HTTP only: the page is static, so no web framework is needed. The server answers GET and HEAD,
gives each connection `CLIENT_TIMEOUT_S` in all from its arrival (waiting for a slot, headers, answer: a
deadline for the whole request, not for each read, so a client trickling a byte at a time is dropped too),
serves at most `MAX_CONNECTIONS` at once, lets `WAITING_PER_SLOT` times as many wait for a slot (a visitor
arriving while slow clients hold every slot is served when theirs end; 503 beyond), never answers a request
cut off before its headers ended, logs a client that hangs up or runs out of time as one line (no
traceback), and sends no server version, `nosniff`, a CSP that allows only the page's own inline script and
style, and `frame-ancestors` (the Hub embeds a Space in an iframe from huggingface.co).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from eval_scripts.leaderboard.outputs import csv_text, json_text
from eval_scripts.leaderboard.page import render_page
from eval_scripts.leaderboard.received import Request, hub_requests
from eval_scripts.leaderboard.references import read_board_references
from eval_scripts.leaderboard.scoring import build_leaderboard
from mis_bench_dataset.dimensions import DEFAULT_BOOTSTRAP

logger = logging.getLogger(__name__)

CLIENT_TIMEOUT_S = 20.0
MAX_CONNECTIONS = 32
WAITING_PER_SLOT = 4  # clients that may wait for a slot, per slot (threads blocked on a semaphore: cheap)
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'self' https://huggingface.co https://*.hf.space"
    ),
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def site_files(board: Mapping) -> dict[str, tuple[str, bytes]]:
    """URL path -> (content type, body) of everything the Space serves."""
    page = render_page(board).encode("utf-8")
    return {
        "/": ("text/html; charset=utf-8", page),
        "/index.html": ("text/html; charset=utf-8", page),
        "/leaderboard.json": ("application/json", json_text(board).encode("utf-8")),
        "/leaderboard.csv": ("text/csv; charset=utf-8", csv_text(board).encode("utf-8")),
    }


class _LastLine:
    """The request stream, remembering the last line read: headers that end without their blank line were cut
    off (the client hung up or its deadline passed), and such a request is not answered."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.last = b""

    def readline(self, limit: int = -1) -> bytes:
        self.last = self._stream.readline(limit)
        return self.last

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


class _BoundedServer(ThreadingHTTPServer):
    """A threading server that serves at most `max_connections` clients at once, lets up to `WAITING_PER_SLOT`
    times as many wait for a slot, answers 503 beyond, and ends every connection `timeout` after it was
    accepted, waiting included: whoever came earlier is gone by then, so a visitor gets a slot within `timeout`
    of arriving however many slow clients came before it (its request, sent at once, is then answered)."""

    daemon_threads = True

    def __init__(self, address, handler, max_connections: int, timeout: float) -> None:
        self._slots = threading.Semaphore(max_connections)
        self._waiting = threading.Semaphore(max_connections * WAITING_PER_SLOT)
        self._deadline_s = timeout
        super().__init__(address, handler)

    @staticmethod
    def _refuse(request) -> None:
        with contextlib.suppress(OSError):
            request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def process_request(self, request, client_address) -> None:
        if not self._waiting.acquire(blocking=False):  # slots and queue full: refused at once
            self._refuse(request)
            self.shutdown_request(request)
            return
        ends = time.monotonic() + self._deadline_s
        threading.Thread(target=self._serve, args=(request, client_address, ends), daemon=True).start()

    def _serve(self, request, client_address, ends: float) -> None:
        try:
            got_slot = self._slots.acquire(timeout=max(0.0, ends - time.monotonic()))
        finally:
            self._waiting.release()
        if not got_slot:
            logger.info("%s: no free slot within %.0f s: answered 503", client_address[0], self._deadline_s)
            self._refuse(request)
            self.shutdown_request(request)
            return
        # The whole request's deadline: past it the socket is shut, so a blocked read or write returns at once.
        deadline = threading.Timer(max(0.0, ends - time.monotonic()), self._cut, args=(request,))
        deadline.daemon = True
        deadline.start()
        try:
            self.process_request_thread(request, client_address)
        finally:
            deadline.cancel()
            self._slots.release()

    @staticmethod
    def _cut(request) -> None:
        with contextlib.suppress(OSError):
            request.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request, client_address) -> None:
        """One line for a client that went away (the default prints a traceback for each)."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            logger.info("%s: connection ended early (%s)", client_address[0], type(error).__name__)
        else:
            logger.exception("%s: request failed", client_address[0])


def make_server(
    files: Mapping[str, tuple[str, bytes]],
    host: str = "0.0.0.0",
    port: int = 7860,
    *,
    timeout: float = CLIENT_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
) -> ThreadingHTTPServer:
    """An HTTP server answering GET and HEAD for `files` and 404 for anything else; `timeout`: each request's
    deadline in all (module docstring)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive holds a slot

        def setup(self) -> None:
            self.timeout = timeout  # no read waits past the deadline either
            super().setup()
            self.rfile = _LastLine(self.rfile)

        def parse_request(self) -> bool:
            cut_off = not self.raw_requestline.endswith(b"\n")
            if not cut_off:
                if not super().parse_request():
                    return False
                cut_off = self.request_version != "HTTP/0.9" and self.rfile.last not in (b"\r\n", b"\n")
            if cut_off:  # the client hung up or its deadline passed: nobody is left to answer
                logger.info("%s: request cut off before its headers ended: not answered", self.client_address[0])
                self.close_connection = True
                return False
            return True

        def version_string(self) -> str:
            return "mis-bench-leaderboard"  # no server or Python version

        def _send(self, head_only: bool) -> None:
            path = self.path.split("?", 1)[0]
            if path not in files:
                self.send_error(404, "not found")
                return
            content_type, body = files[path]
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            if not head_only:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            self._send(head_only=False)

        def do_HEAD(self) -> None:  # noqa: N802 - http.server API
            self._send(head_only=True)

        def end_headers(self) -> None:
            if not any(line.startswith(b"X-Content-Type-Options") for line in getattr(self, "_headers_buffer", [])):
                self.send_header("X-Content-Type-Options", "nosniff")  # the error pages too
            super().end_headers()

        def log_message(self, fmt: str, *args) -> None:
            logger.debug("%s " + fmt, self.address_string(), *args)

    return _BoundedServer((host, port), Handler, max_connections, timeout)


def _submissions(hf_api=None) -> tuple[Path, dict[str, Request]]:
    """The folder of submissions and, for a requests repo, who sent each and when."""
    local = os.environ.get("MIS_BENCH_SUBMISSIONS")
    if local:
        return Path(local), {}
    repo = os.environ.get("MIS_BENCH_REQUESTS_REPO")
    if not repo:
        raise SystemExit("set MIS_BENCH_SUBMISSIONS (a folder) or MIS_BENCH_REQUESTS_REPO (a Hub dataset id)")
    folder = Path(tempfile.mkdtemp(prefix="mis-bench-requests-"))
    return folder, hub_requests(repo, folder, api=hf_api, token=os.environ.get("HF_TOKEN"))


def build_board_from_env(hf_api=None) -> dict:
    """The board the Space serves, from its environment (module docstring); `hf_api`: an `HfApi` for tests."""
    references_path = os.environ.get("MIS_BENCH_REFERENCES")
    if not references_path:
        raise SystemExit("set MIS_BENCH_REFERENCES to the hidden labels (dataset folder or labels file)")
    split = os.environ.get("MIS_BENCH_SPLIT", "test")
    references = read_board_references(references_path, split)
    folder, requests = _submissions(hf_api)
    trusted = [a.strip() for a in os.environ.get("MIS_BENCH_TRUSTED_ACCOUNTS", "").split(",") if a.strip()]
    return build_leaderboard(
        folder,
        references.labels,
        split=split,
        n_bootstrap=int(os.environ.get("MIS_BENCH_BOOTSTRAP", str(DEFAULT_BOOTSTRAP))),
        fingerprints=references.fingerprints,
        synthetic=references.synthetic,
        labels_public=os.environ.get("MIS_BENCH_HIDDEN_LABELS", "") in ("", "0", "false"),
        requests=requests,
        trusted_accounts=trusted,
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    host, port = os.environ.get("HOST", "0.0.0.0"), int(os.environ.get("PORT", "7860"))
    server = make_server(site_files(build_board_from_env()), host=host, port=port)
    logger.info("serving the MIS-Bench leaderboard on http://%s:%s/", *server.server_address[:2])
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
