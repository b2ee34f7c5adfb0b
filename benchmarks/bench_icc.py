"""Speed of the ICC(3,1) core and bootstrap vs the pingouin alternative, in one run.

996 synthetic videos x 8 dimensions (about 1.5% unparsed), like the full benchmark.
Times (best of --repeats): the 9 point estimates (8 dimensions + overall), the
10,000-resample bootstrap of all 9 with one shared index matrix, and a whole
`score_predictions` call; pingouin on the point estimates, and a pingouin bootstrap
loop timed on a few resamples and extrapolated. Checks the values are equal and
reports peak memory (tracemalloc) of our bootstrap.

    python3 benchmarks/bench_icc.py [--resamples 10000] [--pingouin-resamples 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mis_bench_dataset.dimensions import DIMENSION_KEYS  # noqa: E402
from mis_bench_dataset.icc import icc3_1  # noqa: E402
from mis_icc_metric.bootstrap import bootstrap_blocks, bootstrap_indices, point_blocks  # noqa: E402
from mis_icc_metric.scoring import score_predictions  # noqa: E402


def make_data(n: int = 996, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = np.round(np.clip(rng.normal(3.5, 0.5, (n, 8)), 1, 5), 1)
    pred = np.round(np.clip(gold + rng.normal(0, 0.6, (n, 8)), 1, 5), 1)
    pred[rng.random((n, 8)) < 0.002] = np.nan  # about 1.5% of videos lose a dimension
    parsed = ~np.isnan(pred)
    complete = parsed.all(axis=1)
    overall = np.where(complete[:, None], np.stack([np.nanmean(pred, 1), gold.mean(1)], 1), np.nan)
    ratings = np.concatenate([np.stack([pred, gold], -1), overall[:, None]], axis=1)  # (n, 9, 2)
    valid = np.concatenate([parsed, complete[:, None]], axis=1)
    return pred, gold, ratings, valid


def best_of(repeats: int, func) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def pingouin_icc(matrix: np.ndarray) -> float:
    import pandas as pd
    import pingouin

    n, k = matrix.shape
    # Fresh target ids: resampled copies must stay distinct items (pivoting by the
    # original id would average them back into one).
    long = pd.DataFrame({"t": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n), "y": matrix.ravel()})
    table = pingouin.intraclass_corr(long, targets="t", raters="r", ratings="y")
    return float(table.set_index("Type").at["ICC(C,1)", "ICC"])


def pingouin_blocks(ratings: np.ndarray, valid: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    rows = np.arange(ratings.shape[0]) if rows is None else rows
    out = []
    for block in range(ratings.shape[1]):
        keep = valid[rows, block]
        out.append(pingouin_icc(ratings[rows, block][keep]))
    return np.array(out)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--pingouin-resamples", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    pred, gold, ratings, valid = make_data()
    n = ratings.shape[0]

    t_point, point = best_of(args.repeats, lambda: point_blocks(ratings, valid)["icc"])
    t_point_pg, point_pg = best_of(2, lambda: pingouin_blocks(ratings, valid))

    def ours_bootstrap():
        return bootstrap_blocks(ratings, valid, bootstrap_indices(n, args.resamples, 0))["icc"]

    t_boot, boot = best_of(args.repeats, ours_bootstrap)
    # CPU time of the (single-threaded) bootstrap: what the wall time is without competing load.
    cpu_times = []
    for _ in range(args.repeats):
        start = time.process_time()
        ours_bootstrap()
        cpu_times.append(time.process_time() - start)
    t_boot_cpu = min(cpu_times)
    tracemalloc.start()
    ours_bootstrap()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    indices = bootstrap_indices(n, args.resamples, 0)
    start = time.perf_counter()
    boot_pg = np.array([pingouin_blocks(ratings, valid, indices[b]) for b in range(args.pingouin_resamples)])
    t_pg_per_resample = (time.perf_counter() - start) / args.pingouin_resamples
    t_boot_pg = t_pg_per_resample * args.resamples

    predictions = {
        (f"v{i:04d}", d): (None if np.isnan(pred[i, j]) else float(pred[i, j]))
        for i in range(n)
        for j, d in enumerate(DIMENSION_KEYS)
    }
    references = {(f"v{i:04d}", d): float(gold[i, j]) for i in range(n) for j, d in enumerate(DIMENSION_KEYS)}
    t_score, _ = best_of(
        max(2, args.repeats // 2), lambda: score_predictions(predictions, references, n_bootstrap=args.resamples)
    )

    direct = np.array([icc3_1(ratings[indices[b], j][valid[indices[b], j]]) for b in range(3) for j in range(9)])
    report = {
        "machine": f"{platform.processor() or platform.machine()}, {__import__('os').cpu_count()} CPUs, "
        f"numpy {np.__version__}",
        "n_videos": n,
        "blocks": 9,
        "resamples": args.resamples,
        "point_estimates_s": {"ours": t_point, "pingouin": t_point_pg, "speedup": t_point_pg / t_point},
        "bootstrap_s": {
            "ours": t_boot,
            "ours_cpu": t_boot_cpu,
            "pingouin_extrapolated": t_boot_pg,
            "speedup": t_boot_pg / t_boot,
            "pingouin_per_resample": t_pg_per_resample,
        },
        "score_predictions_s": t_score,
        "peak_memory_mib": peak / 2**20,
        "max_abs_diff": {
            "point_vs_pingouin": float(np.abs(point - point_pg).max()),
            "bootstrap_vs_pingouin": float(np.abs(boot[: args.pingouin_resamples] - boot_pg).max()),
            "bootstrap_vs_direct_numpy": float(np.abs(boot[:3].ravel() - direct).max()),
        },
    }
    report["load_average_1min"] = __import__("os").getloadavg()[0]
    print(
        f"{n} videos x 8 dimensions + overall, {args.resamples} resamples; {report['machine']}, "
        f"load average {report['load_average_1min']:.1f}"
    )
    print(
        f"point estimates : ours {1e3 * t_point:8.2f} ms   pingouin {1e3 * t_point_pg:8.1f} ms   "
        f"x{report['point_estimates_s']['speedup']:.0f}"
    )
    print(
        f"bootstrap       : ours {t_boot:8.3f} s    pingouin {t_boot_pg / 60:8.1f} min (extrapolated from "
        f"{args.pingouin_resamples} resamples)   x{report['bootstrap_s']['speedup']:.0f}"
    )
    print(f"bootstrap CPU time (ours, single-threaded): {t_boot_cpu:.3f} s")
    print(f"score_predictions (all rules, sensitivity blocks included): {t_score:.3f} s")
    print(f"peak memory of our bootstrap (tracemalloc): {report['peak_memory_mib']:.1f} MiB")
    print("max |difference|: " + ", ".join(f"{k} {v:.1e}" for k, v in report["max_abs_diff"].items()))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
