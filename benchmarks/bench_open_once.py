"""A grid run opens its dataset once: the code before (`git archive REF`) against this tree, in one run.

Before `BuiltDataset`, each of a grid's 8 settings loaded its scoring rows through
`datasets.load_dataset` (a throw-away Arrow cache each time), decoded the `features` split
again for each feature setting, and hashed every Parquet byte for its results record. This
script builds one synthetic dataset, then runs, in fresh processes, with PYTHONPATH set to the
old code's folder and to this tree in turn:

1. `mis-bench run --grid --dry-run` (8 settings, the openai backend at a closed port: nothing sent);
2. `mis-bench run --grid` against a local Chat Completions server that answers at once
   (every request sent, the run's files written; a fresh --out and cache per round).

Each figure is the median of `--repeats` rounds (old and new alternate), wall time of the
whole command (interpreter start and imports included) and the process's peak RSS.

    python3 benchmarks/bench_open_once.py [--ref int] [--videos 996] [--limits 0,2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


def start_server() -> tuple[ThreadingHTTPServer, str]:
    """A Chat Completions server answering "3.5" at once (a real HTTP server on 127.0.0.1)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            payload = json.dumps(
                {"choices": [{"index": 0, "message": {"role": "assistant", "content": "3.5"}, "finish_reason": "stop"}]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def child(argv: list[str]) -> None:
    """Run the CLI in this process and print its wall time and peak RSS (the parent parses the last line)."""
    started = time.perf_counter()
    from eval_scripts.cli import main

    code = main(argv)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"code": code, "wall_s": wall, "peak_rss_mb": peak}))


def measure(code_dir: Path, argv: list[str], work: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code_dir), "MIS_BENCH_CACHE": str(work / "cache")}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(argv)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode not in (0,):
        raise SystemExit(f"{code_dir}: {' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    inner = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, "peak_rss_mb": inner["peak_rss_mb"]}


def bootstrap_flag(code_dir: Path) -> str:
    """The resample flag of that tree's `mis-bench run` (`--n-bootstrap` before issue 21 made it `--bootstrap`)."""
    source = (code_dir / "eval_scripts" / "cli" / "run.py").read_text(encoding="utf-8")
    return "--n-bootstrap" if '"--n-bootstrap"' in source else "--bootstrap"


def run_argv(build: Path, out: Path, base_url: str, limit: int, dry: bool, flag: str = "--bootstrap") -> list[str]:
    argv = ["run", "--backend", "openai", "--model", "fake-model", "--dataset", str(build), "--grid"]
    argv += ["--out", str(out), "--base-url", base_url, "--api-key-env", "MIS_BENCH_UNSET", "--no-progress"]
    argv += [flag, "0", "--max-retries", "0", "--concurrency", "16", "--json"]
    if limit:
        argv += ["--limit", str(limit)]
    return argv + (["--dry-run"] if dry else [])


def _test_rows(build: Path) -> list[dict]:
    from mis_bench_dataset import BuiltDataset

    return BuiltDataset.open(build).rows("test")


def old_tree(ref: str, into: Path) -> Path:
    """The code of `ref` (a commit or branch of this repository), unpacked with `git archive`."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="int", help="the code before (a git ref of this repository)")
    parser.add_argument("--videos", type=int, default=996, help="videos in the synthetic build (test: 10%%)")
    parser.add_argument(
        "--limits", default="0,2", help="comma-separated --limit values of the runs (0: the whole test split)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    sys.path.insert(0, str(REPO))
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    with tempfile.TemporaryDirectory(prefix="bench_open_once_") as scratch:
        work = Path(scratch)
        (work / "old").mkdir()
        old = old_tree(args.ref, work / "old")
        release = generate_synthetic_release(work / "release", n_videos=args.videos, seed=0, compress=False)
        build = work / "build"
        build_dataset(release.release_dir, build, labels=release.ratings_csv, progress=False)
        server, url = start_server()
        closed = "http://127.0.0.1:9/v1"
        limits = [int(x) for x in args.limits.split(",")]
        test_videos = len({row["video_id"] for row in _test_rows(build)})
        figures: dict[str, dict[str, list[dict]]] = {}
        for round_ in range(args.repeats):
            for name, code_dir in (("before", old), ("after", REPO)):
                for limit in limits:
                    for kind, dry in (("dry-run grid", True), ("server grid", False)):
                        label = f"{kind}, {(limit or test_videos) * 8} rows per setting"
                        out = work / f"out-{name}-{kind.split()[0]}-{limit}-{round_}"
                        argv = run_argv(build, out, closed if dry else url, limit, dry, bootstrap_flag(code_dir))
                        figures.setdefault(label, {}).setdefault(name, []).append(measure(code_dir, argv, work))
        server.shutdown()
    print(f"synthetic build of {args.videos} videos ({test_videos} test); grid of 8 settings; median of {args.repeats}")
    print("| run | before (s) | after (s) | speed-up | peak RSS before (MB) | after (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    result = {}
    for kind, by_code in figures.items():
        wall = {k: statistics.median(m["wall_s"] for m in v) for k, v in by_code.items()}
        rss = {k: statistics.median(m["peak_rss_mb"] for m in v) for k, v in by_code.items()}
        result[kind] = {"wall_s": wall, "peak_rss_mb": rss}
        print(
            f"| {kind} | {wall['before']:.2f} | {wall['after']:.2f} | {wall['before'] / wall['after']:.1f}x "
            f"| {rss['before']:.0f} | {rss['after']:.0f} |"
        )
    print(json.dumps({"videos": args.videos, "load_average": os.getloadavg(), **result}))


if __name__ == "__main__":
    main()
