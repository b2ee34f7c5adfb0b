"""The Hugging Face training stack imported once per test worker, not once per `mis-bench train` of a docs page.

A docs page's `mis-bench train` (or `mis-bench run --backend transformers`) spends about 5 s of CPU importing
torch, transformers, TRL and PEFT before any work; the training page runs a dozen of them. `Zygote` is a server
process that imports them once and forks a child per such command: the child takes the caller's stdin, stdout
and stderr (passed over a Unix socket), working directory, environment and arguments, runs the console script's
`main()` exactly as `mis-bench` would, and returns its exit code. What a page proves stays the same (the command's
own argument parsing, work, printed lines and exit code, in a process of its own); only the imports are shared.
Anything that could make the fork differ from a fresh process falls back to one: an environment that differs from
the server's beyond the page's own folders (a locale, a thread count, a variable a block exported), or any other
command (`mis-bench` on the page's PATH is a shim that passes everything else to the real one). A Python block,
or a `python3 -c` line, that imports raft_trainer is run the same way, as the interpreter runs `python3 -` and
`python3 -c` (a fresh `__main__`, the working directory first on sys.path).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

# Variables that differ between pages (and that bash sets) without changing anything imported at start-up.
PER_PAGE = {"TMPDIR", "MIS_BENCH_CACHE", "DOCS_STATE", "DOCS_BASELINE", "PWD", "OLDPWD", "SHLVL", "_", "PATH"}
PRELOADED = ("torch", "transformers", "trl", "peft", "accelerate", "raft_trainer.train", "raft_trainer.arguments")
FALLBACK = b"fresh"  # the server's answer when the command must run in a fresh process
SHIM = r"""#!/usr/bin/env bash
# tests/_docs_zygote.py: `mis-bench train` and `mis-bench run --backend transformers` fork from the test worker's
# preloaded process; every other command (and any with another environment) runs the real mis-bench.
routed=
if [ "${1:-}" = train ]; then routed=1; fi
if [ "${1:-}" = run ] && [[ " $* " == *" --backend transformers "* ]]; then routed=1; fi
if [ -n "${DOCS_ZYGOTE:-}" ] && [ -n "$routed" ]; then
  exec "$DOCS_ZYGOTE_PYTHON" -S "$DOCS_ZYGOTE_CLIENT" "$@"
fi
PATH="${PATH#"$DOCS_ZYGOTE_BIN":}" exec mis-bench "$@"
"""
PYTHON_SHIM = r"""#!/usr/bin/env bash
# tests/_docs_zygote.py: `python3 -c CODE` whose code imports raft_trainer forks from the preloaded process too.
if [ -n "${DOCS_ZYGOTE:-}" ] && [ "$#" = 2 ] && [ "$1" = -c ] && [[ "$2" == *raft_trainer* ]]; then
  exec "$DOCS_ZYGOTE_PYTHON" -S "$DOCS_ZYGOTE_CLIENT" --python-c "$2"
fi
PATH="${PATH#"$DOCS_ZYGOTE_BIN":}" exec python3 "$@"
"""
PYTHON_C, PYTHON_STDIN = "--python-c", "--python-stdin"  # the client's first argument for Python code


def _read_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the caller went away")
        data += chunk
    return data


def _real_mis_bench(path: str) -> str:
    """The `mis-bench` a page would run without the shim (its console script), for argv[0]."""
    bin_dir = os.environ.get("DOCS_ZYGOTE_BIN", "")
    search = os.pathsep.join(p for p in path.split(os.pathsep) if p != bin_dir)
    import shutil

    return shutil.which("mis-bench", path=search) or "mis-bench"


_START_ENV: dict[str, str] = {}  # the server's environment before its imports (peft sets TORCHINDUCTOR_CACHE_DIR)


def _beyond_the_page(env: dict[str, str]) -> dict[str, str]:
    """`env` without the variables each page sets for itself."""
    return {k: v for k, v in env.items() if k not in PER_PAGE}


def _same_start(env: dict[str, str]) -> bool:
    """Whether a fresh process with `env` would import the preloaded modules the same way."""
    return _beyond_the_page(_START_ENV) == _beyond_the_page(env)


def _child(conn: socket.socket) -> None:
    """In the forked child: become the caller's `mis-bench ARGS`, run it, report its exit code."""
    _, fds, _, _ = socket.recv_fds(conn, 1, 3)
    request = json.loads(_read_exact(conn, int.from_bytes(_read_exact(conn, 8), "big")))
    if len(fds) != 3 or not _same_start(request["env"]):
        debug = request["env"].get("DOCS_ZYGOTE_DEBUG") or os.environ.get("DOCS_ZYGOTE_DEBUG")
        if debug:  # which variables sent the command to a fresh process
            mine, theirs = _START_ENV, request["env"]
            keys = {k for k in {*mine, *theirs} if k not in PER_PAGE and mine.get(k) != theirs.get(k)}
            with contextlib.suppress(OSError):
                Path(debug).write_text(f"{len(fds)} fds; differs: {sorted(keys)}\n")
        conn.sendall(FALLBACK)
        os._exit(0)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # a library may have asked for it at import: the page's TMPDIR now
    atexit._clear()  # the server's exit functions are not this command's
    argv = request["argv"]
    code = 0
    try:
        if argv[:1] in ([PYTHON_C], [PYTHON_STDIN]):
            _python(argv)
        else:
            from eval_scripts.cli import main

            sys.argv = [_real_mis_bench(request["env"].get("PATH", "")), *argv]
            code = main()  # the console script: sys.exit(main())
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    conn.sendall(str(int(code or 0)).encode())
    os._exit(int(code or 0))


def _python(argv: list[str]) -> None:
    """`python3 -c CODE` or `python3 -` (the code on stdin), as the interpreter runs them: a fresh `__main__`,
    the working directory first on sys.path."""
    import builtins
    import types

    stdin = argv[0] == PYTHON_STDIN
    source = sys.stdin.read() if stdin else argv[1]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv = ["-" if stdin else "-c"]
    sys.path.insert(0, "")
    exec(compile(source, "<stdin>" if stdin else "<string>", "exec"), main.__dict__)


def _reap(*_) -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(path: str) -> None:
    """The server: import the stack, then fork a child per connection."""
    import importlib

    _START_ENV.update(os.environ)
    for name in PRELOADED:
        importlib.import_module(name)
    importlib.import_module("eval_scripts.cli")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, _reap)  # waited for, so their CPU time counts in the test run's
    print("ready", flush=True)
    parent = os.getppid()
    listener.settimeout(5)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:  # the test worker is gone (killed): so is its server
                return
            continue
        conn.settimeout(None)
        sys.stdout.flush()
        sys.stderr.flush()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the command's own subprocesses are waited for
            try:
                _child(conn)
            finally:
                os._exit(1)
        conn.close()


def client(argv: list[str]) -> int:
    """The shim's side: hand this process's stdio, directory, environment and arguments to the server."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.environ["DOCS_ZYGOTE"])
    socket.send_fds(conn, [b"r"], [0, 1, 2])
    payload = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    conn.sendall(len(payload).to_bytes(8, "big") + payload)
    answer = b""
    while chunk := conn.recv(64):
        answer += chunk
    if answer == FALLBACK or not answer:
        if not answer:
            print("tests/_docs_zygote.py: the forked command died without an exit code", file=sys.stderr)
            return 1
        bin_dir = os.environ["DOCS_ZYGOTE_BIN"]
        os.environ["PATH"] = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != bin_dir)
        if argv[:1] == [PYTHON_STDIN]:
            os.execvp("python3", ["python3", "-"])
        if argv[:1] == [PYTHON_C]:
            os.execvp("python3", ["python3", "-c", argv[1]])
        os.execvp("mis-bench", ["mis-bench", *argv])
    return int(answer)


class Zygote:
    """One server per test worker, started at the first page that runs a routed command, stopped at exit."""

    _started: Zygote | None = None

    def __init__(self, env: dict[str, str]) -> None:
        self.start_env = _beyond_the_page(env)
        self.folder = Path(tempfile.mkdtemp(prefix="docs-zygote-"))
        self.bin = self.folder / "bin"
        self.bin.mkdir()
        for name, text in (("mis-bench", SHIM), ("python3", PYTHON_SHIM)):
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        self.socket = str(self.folder / "socket")
        here = str(Path(__file__).parent)
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"import sys; sys.path[0] = {here!r}; import _docs_zygote as z; sys.path.pop(0); "
             f"z.serve({self.socket!r})"],
            env=self.page_env(env),  # the pages' environment, shim included, so that theirs compares equal
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=open(self.folder / "server.err", "wb"),  # noqa: SIM115 - the server's, for a failing page
            text=True,
        )  # fmt: skip
        atexit.register(self.stop)

    def wait_ready(self) -> bool:
        """Whether the server imported the stack and listens (else the pages run every command fresh)."""
        if not hasattr(self, "ready"):
            self.ready = self.process.stdout.readline().strip() == "ready"
        return self.ready

    def page_env(self, env: dict[str, str]) -> dict[str, str]:
        """`env` with the shim first on PATH (the server started with a page's environment, so the rest agrees)."""
        return {
            **env,
            "PATH": os.pathsep.join([str(self.bin), env["PATH"]]),
            "DOCS_ZYGOTE": self.socket,
            "DOCS_ZYGOTE_BIN": str(self.bin),
            "DOCS_ZYGOTE_CLIENT": __file__,
            "DOCS_ZYGOTE_PYTHON": sys.executable,
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)

    @classmethod
    def for_env(cls, env: dict[str, str]) -> Zygote:
        """The worker's server, restarted when `env` differs from the one it started with beyond a page's own
        folders (an earlier test's environment would otherwise send every later command to a fresh process)."""
        if cls._started is not None and cls._started.start_env != _beyond_the_page(env):
            cls._started.stop()
            cls._started = None
        if cls._started is None:
            cls._started = cls(env)
        return cls._started


if __name__ == "__main__":
    sys.exit(client(sys.argv[1:]))
