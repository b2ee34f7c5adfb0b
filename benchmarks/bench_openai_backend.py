"""Throughput of the openai-compatible backend against a local server with a fixed reply delay.

Measures, in one run: rows/s of a full `run_setting` (prompts, HTTP, cache writes,
parsing, outputs) at concurrency 1, 8 and 32, the speed-up over concurrency 1 (the
sequential loop a user would otherwise write) against the ideal (= concurrency),
and the time of a fully cached rerun (no calls). Peak RSS is reported.

    python3 benchmarks/bench_openai_backend.py [--delay 0.05] [--videos 32]
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def start_server(delay_s: float) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls on keep-alive
        wbufsize = -1  # headers and body leave in one write

        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(delay_s)
            body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "3.5"}}]})
            payload = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 128
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def rows(n_videos: int) -> list[dict]:
    from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS, RUBRIC

    out = []
    for v in range(n_videos):
        for d in DIMENSION_KEYS:
            out.append(
                {
                    "video_id": f"BM{1000 + v}_T1_Luke",
                    "dimension": d,
                    "dimension_name": DIMENSION_BY_KEY[d].name,
                    "transcript": f"Benchmark transcript number {v}. " * 20,
                    "criterion": RUBRIC[d].criterion,
                    **{f"rubric_{i}": RUBRIC[d].description(i) for i in range(1, 6)},
                    "score": 3.0 + (v % 10) / 10,
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.05, help="server reply delay, seconds")
    parser.add_argument("--videos", type=int, default=32, help="videos (x8 rows)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from datasets import Dataset

    from eval_scripts.backends.openai_backend import RetryPolicy
    from eval_scripts.harness.runner import RunConfig, run_setting

    data = Dataset.from_list(rows(args.videos))
    server, url = start_server(args.delay)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        # warm-up: first-use imports (metric, schema validator) are not per-row cost
        warm = RunConfig(
            backend="openai",
            model="warm",
            out=Path(tmp) / "warm",
            n_bootstrap=0,
            progress=False,
            backend_options={"base_url": url, "api_key_env": "MIS_BENCH_UNSET"},
        )
        run_setting(warm, scoring=Dataset.from_list(rows(1)))
        base_rate = None
        for concurrency in (1, 8, 32):
            out = Path(tmp) / f"c{concurrency}"
            config = RunConfig(
                backend="openai",
                model="bench",
                out=out,
                n_bootstrap=0,
                progress=False,
                backend_options={
                    "base_url": url,
                    "concurrency": concurrency,
                    "api_key_env": "MIS_BENCH_UNSET",
                    "retry": RetryPolicy(max_retries=2, timeout_s=30),
                },
            )
            start = time.perf_counter()
            result = run_setting(config, scoring=data)
            elapsed = time.perf_counter() - start
            rate = result.n_rows / elapsed
            base_rate = base_rate or rate
            ideal = concurrency / args.delay
            start = time.perf_counter()
            rerun = run_setting(config, scoring=data)
            cached_s = time.perf_counter() - start
            assert rerun.n_called == 0 and result.n_failed == 0
            results.append((concurrency, result.n_rows, elapsed, rate, rate / base_rate, rate / ideal, cached_s))
    server.shutdown()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"server delay {args.delay * 1000:.0f} ms, {results[0][1]} rows per run, peak RSS {peak_mb:.0f} MB")
    print("| concurrency | seconds | rows/s | speed-up vs 1 | of ideal | cached rerun (s) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for concurrency, _, elapsed, rate, speedup, of_ideal, cached_s in results:
        print(
            f"| {concurrency} | {elapsed:.2f} | {rate:.1f} | {speedup:.1f}x | {100 * of_ideal:.0f}% | {cached_s:.2f} |"
        )


if __name__ == "__main__":
    main()
