"""The route of a run's `RunConfig` through one model run, traced (issue 38's measure of how far one setting's
options travel): every function called with a `RunConfig` among its arguments (or an object holding one as
`.config`, such as a setting's `RunContext`), in call order.

A model run of `mis-bench run --backend openai` against a local Chat Completions server (every answer
"Final score: 3.0") on a small SYNTHETIC build. Prints the modules the config visits (rooms), how often the
route comes back to a module it had left (returns), the functions it passes through, and how many times the
dataset folder is opened (`BuiltDataset.open`).

    python3 benchmarks/config_route.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ANSWER = "Final score: 3.0"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": "route-model", "object": "model"}]})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        message = {"role": "assistant", "content": ANSWER}
        self._send({"model": "route-model", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


def _trace(argv: list[str]) -> tuple[list[tuple[str, str]], int]:
    from eval_scripts.cli import main
    from eval_scripts.harness.config import RunConfig
    from mis_bench_dataset import BuiltDataset

    calls: list[tuple[str, str]] = []
    opens = 0
    original_open = BuiltDataset.open.__func__

    def counting_open(cls, *args, **kwargs):
        nonlocal opens
        opens += 1
        return original_open(cls, *args, **kwargs)

    def profile(frame, event, arg) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(("eval_scripts", "mis_bench_dataset", "mis_icc_metric", "raft_trainer")):
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        values = [frame.f_locals.get(name) for name in names]
        if any(isinstance(v, RunConfig) or isinstance(getattr(v, "config", None), RunConfig) for v in values):
            calls.append((module, code.co_qualname))

    BuiltDataset.open = classmethod(counting_open)
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        code = main(argv)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        BuiltDataset.open = classmethod(original_open)
    if code:
        raise SystemExit(f"the run failed with exit {code}")
    return calls, opens


def route_figures(calls: list[tuple[str, str]]) -> dict:
    """Rooms (modules visited) and returns (entries into a module the route had already left), along the route's
    functions in the order of their first call (a function called once per row counts once)."""
    route = list(dict.fromkeys(calls))
    left: set[str] = set()
    returns, previous = 0, None
    for module, _ in route:
        if module != previous:
            if module in left:
                returns += 1
            if previous is not None:
                left.add(previous)
            previous = module
    return {
        "rooms": len({module for module, _ in route}),
        "returns": returns,
        "functions": len(route),
        "calls": len(calls),
    }


def main() -> None:
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        release = generate_synthetic_release(root / "release", n_videos=24, seed=0)
        build_dataset(release.release_dir, root / "build", labels=release.ratings_csv, progress=False)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/v1"
        grid = "--grid" in sys.argv
        argv = ["run", "--backend", "openai", "--model", "route-model", "--base-url", url]
        argv += ["--dataset", str(root / "build"), "--out", str(root / "out"), "--no-progress"]
        argv += ["--grid"] if grid else ["--modality", "text"]
        calls, opens = _trace(argv)
        server.shutdown()
    figures = route_figures(calls)
    per_module = Counter(module for module, _ in calls)
    print(
        f"{'grid' if grid else 'one setting'}: {figures['rooms']} modules visited, {figures['returns']} returns "
        f"to a module already left, {figures['functions']} functions ({figures['calls']} calls) with the config; "
        f"BuiltDataset.open x{opens}"
    )
    for module, count in per_module.most_common():
        print(f"  {count:4}  {module}")


if __name__ == "__main__":
    main()
