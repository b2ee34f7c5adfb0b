"""`--timeout` bounds a request whose server trickles its headers or body; `--run-deadline` ends the whole run."""

from __future__ import annotations

import json
import time

import pytest

from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

from _fault_helpers import _run_args
from _harness_helpers import TricklingServer


@pytest.mark.parametrize("trickle_headers", [False, True])
def test_timeout_bounds_a_trickled_request(trickle_headers, synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(kind=TricklingServer, interval_s=0.25, trickle_headers=trickle_headers) as server:
        started = time.monotonic()
        code = main(
            [
                *_run_args(synthetic_build, tmp_path / "out", server.base_url, "--json"),
                "--timeout",
                "2",
                "--max-retries",
                "0",
                "--concurrency",
                "8",
            ]
        )
        elapsed = time.monotonic() - started
    summary = json.loads(capsys.readouterr().out)
    assert code == EXIT_REQUESTS
    assert summary["failed"] == summary["rows"] == 8 and list(summary["failures"]) == ["timeout"]
    assert elapsed < 6.0, f"8 requests in parallel with --timeout 2 took {elapsed:.1f} s"


def test_a_run_deadline_ends_the_run(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(kind=TricklingServer, interval_s=0.25) as server:
        started = time.monotonic()
        code = main(
            [
                *_run_args(synthetic_build, tmp_path / "out", server.base_url, "--json"),
                "--limit",
                "4",
                "--concurrency",
                "2",
                "--timeout",
                "600",
                "--run-deadline",
                "2",
            ]
        )
        elapsed = time.monotonic() - started
    summary = json.loads(capsys.readouterr().out)
    assert code == EXIT_REQUESTS
    assert summary["failed"] == summary["rows"] == 32 and list(summary["failures"]) == ["run deadline"]
    assert elapsed < 6.0, f"--run-deadline 2 took {elapsed:.1f} s"
