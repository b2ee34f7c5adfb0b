"""Hub Space app: serves the leaderboard page built by the same code as `mis-bench leaderboard`.

Deploy as a Docker Space (`sdk: docker`, `app_port: 7860`) whose command is
`python -m eval_scripts.leaderboard.space_app`. Configuration by environment:

- `MIS_BENCH_SUBMISSIONS`: folder of submission JSON files, or
  `MIS_BENCH_REQUESTS_REPO`: a Hub dataset of requests (`requests/*.json`), downloaded at start;
- `MIS_BENCH_REFERENCES`: the hidden labels (a built dataset folder or a labels file,
  anything `mis_icc_metric.predictions_io.read_references` reads), kept in a private
  location the submitters cannot see;
- `MIS_BENCH_SPLIT` (default `test`), `MIS_BENCH_BOOTSTRAP` (default 10000), `PORT` (default 7860).

Stdlib HTTP only: the page is static, so no web framework is needed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from eval_scripts.leaderboard.outputs import csv_text, json_text
from eval_scripts.leaderboard.page import render_page
from eval_scripts.leaderboard.scoring import build_leaderboard
from mis_bench_dataset.dimensions import DEFAULT_BOOTSTRAP

logger = logging.getLogger(__name__)


def site_files(board: Mapping) -> dict[str, tuple[str, bytes]]:
    """URL path -> (content type, body) of everything the Space serves."""
    page = render_page(board).encode("utf-8")
    return {
        "/": ("text/html; charset=utf-8", page),
        "/index.html": ("text/html; charset=utf-8", page),
        "/leaderboard.json": ("application/json", json_text(board).encode("utf-8")),
        "/leaderboard.csv": ("text/csv; charset=utf-8", csv_text(board).encode("utf-8")),
    }


def make_server(files: Mapping[str, tuple[str, bytes]], host: str = "0.0.0.0", port: int = 7860) -> ThreadingHTTPServer:
    """An HTTP server answering GET for `files` and 404 for anything else."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server API
            path = self.path.split("?", 1)[0]
            if path not in files:
                self.send_error(404, "not found")
                return
            content_type, body = files[path]
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt: str, *args) -> None:
            logger.debug("%s " + fmt, self.address_string(), *args)

    return ThreadingHTTPServer((host, port), Handler)


def _submissions_dir() -> Path:
    local = os.environ.get("MIS_BENCH_SUBMISSIONS")
    if local:
        return Path(local)
    repo = os.environ.get("MIS_BENCH_REQUESTS_REPO")
    if not repo:
        raise SystemExit("set MIS_BENCH_SUBMISSIONS (a folder) or MIS_BENCH_REQUESTS_REPO (a Hub dataset id)")
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo, repo_type="dataset", allow_patterns=["requests/*.json"])) / "requests"


def build_board_from_env() -> dict:
    from mis_icc_metric.predictions_io import read_references

    references_path = os.environ.get("MIS_BENCH_REFERENCES")
    if not references_path:
        raise SystemExit("set MIS_BENCH_REFERENCES to the hidden labels (dataset folder or labels file)")
    split = os.environ.get("MIS_BENCH_SPLIT", "test")
    return build_leaderboard(
        _submissions_dir(),
        read_references(references_path, split=split),
        split=split,
        n_bootstrap=int(os.environ.get("MIS_BENCH_BOOTSTRAP", str(DEFAULT_BOOTSTRAP))),
    )


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    server = make_server(site_files(build_board_from_env()), port=int(os.environ.get("PORT", "7860")))
    print(f"serving the MIS-Bench leaderboard on http://{server.server_address[0]}:{server.server_address[1]}/")
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
