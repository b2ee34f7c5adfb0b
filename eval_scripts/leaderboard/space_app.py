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

Served by uvicorn (an asyncio server: an idle or slow connection costs a socket and a timer, not a thread or a
slot) running a Starlette app (`make_app`), installed by the `space` extra (`pip install "mis-bench[space]"`).
The server answers GET and HEAD (404 for any other path, 405 for any other method), gives each connection
`CLIENT_TIMEOUT_S` in all from its arrival (a deadline for the whole request, not for each read, so a client
trickling a byte at a time is dropped too; uvicorn itself has no such deadline, `_DeadlineProtocol` adds it),
answers one request per connection, holds at most `MAX_CONNECTIONS` connections at once (a request arriving
beyond them gets 503: uvicorn's `limit_concurrency`), never answers a request cut off before its headers
ended, logs a client that hangs up or runs out of time as one line (no traceback), and sends no server
version, `nosniff`, a CSP that allows only the page's own inline script and style, and `frame-ancestors` (the
Hub embeds a Space in an iframe from huggingface.co) on every answer of the app, 404 and 405 included.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from eval_scripts.leaderboard.outputs import csv_text, json_text
from eval_scripts.leaderboard.page import render_page
from eval_scripts.leaderboard.received import Request, hub_requests
from eval_scripts.leaderboard.references import read_board_references
from eval_scripts.leaderboard.scoring import BoardRules, build_leaderboard
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)

CLIENT_TIMEOUT_S = 20.0
# Connections held at once, idle ones included (each a socket and a timer on the event loop, no thread): past
# them a request is answered 503. Far above what idle or trickling clients need to hold to crowd out a visitor.
MAX_CONNECTIONS = 1000
BACKLOG = 2048  # connections the kernel queues before the server accepts them (uvicorn's default)
SERVER_NAME = "mis-bench-leaderboard"  # the Server header: no server or Python version
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


class _Hardened:
    """ASGI middleware: the security headers, the server name and `Connection: close` (one request per
    connection: no idle keep-alive) on every answer, the app's and the 404/405 pages alike."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        from starlette.datastructures import MutableHeaders

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def hardened(message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in {**SECURITY_HEADERS, "Server": SERVER_NAME, "Connection": "close"}.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, hardened)


def make_app(files: Mapping[str, tuple[str, bytes]]):
    """The Starlette app answering GET and HEAD for `files` (HEAD: the headers, no body)."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    async def serve(request) -> Response:
        content_type, body = files[request.url.path]
        return Response(body, headers={"Content-Type": content_type})

    async def error(request, exc) -> Response:
        return PlainTextResponse("not found" if exc.status_code == 404 else exc.detail, status_code=exc.status_code)

    app = Starlette(
        routes=[Route(path, serve, methods=["GET", "HEAD"]) for path in files],
        exception_handlers={404: error, 405: error},
    )
    app.add_middleware(_Hardened)
    return app


def _deadline_protocol(deadline_s: float):
    """uvicorn's HTTP/1.1 protocol with the whole-request deadline (uvicorn times out idle keep-alive only): the
    connection is closed `deadline_s` after it was made unless its answer is done, and a request cut off before
    its headers ended (the client hung up, or its deadline passed) is logged as one line and never answered."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class _DeadlineProtocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self.got_bytes = False
            self.deadline = self.loop.call_later(deadline_s, self.deadline_passed)

        def data_received(self, data: bytes) -> None:
            self.got_bytes = self.got_bytes or bool(data)
            super().data_received(data)

        def eof_received(self) -> None:
            if self.got_bytes and self.cycle is None:
                logger.info("%s: request cut off before its headers ended: not answered", self._who())
            return super().eof_received()

        def connection_lost(self, exc: Exception | None) -> None:
            self.deadline.cancel()
            if exc is not None:
                logger.info("%s: connection ended early (%s)", self._who(), type(exc).__name__)
            super().connection_lost(exc)

        def deadline_passed(self) -> None:
            if self.cycle is None:
                what = "request cut off before its headers ended" if self.got_bytes else "sent nothing"
                logger.info("%s: %s within %.0f s: not answered", self._who(), what, deadline_s)
                self.transport.close()
            elif not self.cycle.response_complete:
                logger.info("%s: answer not taken within %.0f s: dropped", self._who(), deadline_s)
                self.transport.abort()

        def _who(self) -> str:
            return self.client[0] if self.client else "client"

    return _DeadlineProtocol


class SpaceServer:
    """uvicorn serving `make_app(files)` on a socket bound at construction (so `server_address` is known before
    it serves: port 0 picks a free one); `serve_forever` blocks, `shutdown` (from another thread) stops it."""

    def __init__(self, files: Mapping[str, tuple[str, bytes]], address: tuple[str, int], *, timeout: float,
                 max_connections: int) -> None:  # fmt: skip
        import uvicorn

        self.socket = socket.create_server(address, backlog=BACKLOG)
        self.server_address = self.socket.getsockname()
        config = uvicorn.Config(
            make_app(files),
            http=_deadline_protocol(timeout),
            lifespan="off",
            log_config=None,  # the Space's own logging, not uvicorn's dictConfig
            access_log=False,
            server_header=False,
            limit_concurrency=max_connections,
            backlog=BACKLOG,
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._started, self._stopped = threading.Event(), threading.Event()

    def serve_forever(self) -> None:
        self._started.set()
        try:
            self._server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self, wait_s: float = 10.0) -> None:
        self._server.should_exit = True
        if self._started.is_set():
            self._stopped.wait(wait_s)

    def server_close(self) -> None:
        self.socket.close()


def make_server(
    files: Mapping[str, tuple[str, bytes]],
    host: str = "0.0.0.0",
    port: int = 7860,
    *,
    timeout: float = CLIENT_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
) -> SpaceServer:
    """A server answering GET and HEAD for `files` and 404 for anything else; `timeout`: each request's
    deadline in all; `max_connections`: connections held at once before a request gets 503 (module docstring)."""
    from mis_bench_dataset.toolkit.errors import require_extra

    require_extra("space", "the leaderboard Space")
    return SpaceServer(files, (host, port), timeout=timeout, max_connections=max_connections)


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
        references,
        split=split,
        resampling=ResamplingOptions(n_bootstrap=int(os.environ.get("MIS_BENCH_BOOTSTRAP", str(DEFAULT_BOOTSTRAP)))),
        rules=BoardRules(
            labels_public=os.environ.get("MIS_BENCH_HIDDEN_LABELS", "") in ("", "0", "false"), trusted_accounts=trusted
        ),
        requests=requests,
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
