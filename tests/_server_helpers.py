"""A real OpenAI-compatible server for the tests: `transformers serve` on 127.0.0.1, offline.

`TransformersServer(model_dir)` starts `transformers serve MODEL_DIR` (the `transformers[serving]`
extra: FastAPI, uvicorn, openai) in a subprocess on a free port, pinned to the local model (the
server then refuses any other model name with HTTP 400), waits until `/health` answers and stops
it on exit. Its log (uvicorn's access lines included) is kept, so tests can count the requests
the server really received.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SERVING_MODULES = ("fastapi", "uvicorn", "openai")
START_TIMEOUT_S = 180.0


def serving_missing() -> list[str]:
    """The packages of the `transformers[serving]` extra that cannot be imported here."""
    import importlib.util

    return [name for name in SERVING_MODULES if importlib.util.find_spec(name) is None]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TransformersServer:
    """`transformers serve` for one local model; use as a context manager."""

    def __init__(self, model_dir: Path, log_path: Path):
        self.model = str(model_dir)
        self.port = free_port()
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chat_requests(self) -> int:
        """Chat Completions requests the server has logged so far (uvicorn's access log)."""
        return self.log_path.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1"')

    def __enter__(self) -> TransformersServer:
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONUNBUFFERED": "1",
        }
        command = [
            sys.executable,
            "-m",
            "transformers.cli.transformers",
            "serve",
            self.model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--device",
            "cpu",
            "--log-level",
            "info",
        ]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in __exit__
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError(
                    f"transformers serve exited with {self.process.returncode}:\n"
                    + self.log_path.read_text(errors="replace")[-3000:]
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError(
            f"transformers serve did not answer within {START_TIMEOUT_S:g} s:\n"
            + self.log_path.read_text(errors="replace")[-3000:]
        )

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


class ChatServerProcess:
    """The tests' Chat Completions server (`_harness_helpers.ChatServer`) in a subprocess of its own, so a test can
    kill it as a crash or an OOM killer would (SIGKILL: no goodbye, every connection dropped) and start it again
    on the same port; use as a context manager."""

    def __init__(self, folder: Path, delay_s: float = 0.0, port: int = 0) -> None:
        self.folder, self.delay_s, self.port = folder, delay_s, port
        self.process: subprocess.Popen | None = None
        self.base_url = ""

    def start(self) -> ChatServerProcess:
        port_file = self.folder / f"server-{id(self)}-{time.monotonic_ns()}.url"
        tests = Path(__file__).resolve().parent
        code = (
            f"import sys; sys.path.insert(0, {str(tests)!r}); from _harness_helpers import serve_forever_main; "
            f"serve_forever_main({str(port_file)!r}, {self.delay_s!r}, {self.port!r})"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests.parent), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen([sys.executable, "-c", code], env=env)
        deadline = time.monotonic() + 30
        while not port_file.is_file():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server subprocess did not start (exit {self.process.poll()})")
            time.sleep(0.02)
        self.base_url = port_file.read_text()
        self.port = int(self.base_url.rsplit(":", 1)[1].split("/")[0])
        return self

    def kill(self) -> None:
        """SIGKILL, and wait until the process is gone (its port then refuses connections)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ChatServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.kill()
