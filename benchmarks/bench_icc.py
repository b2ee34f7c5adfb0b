"""Speed of the ICC(3,1) core and bootstrap vs the pingouin alternative, in one run.

996 synthetic videos x 8 dimensions (about 1.5% unparsed), like the full benchmark.
Times (best of --repeats): the 9 point estimates (8 dimensions + overall), the
10,000-resample bootstrap of all 9 with one shared index matrix, and a whole
`score_predictions` call; pingouin on the point estimates, and a pingouin bootstrap
loop timed on a few resamples and extrapolated. Checks the values are equal and
reports peak memory (tracemalloc) of our bootstrap.

Then the same bootstrap resampling clinicians (the default: the videos' ids name 78 clinicians, as the real
benchmark's; `resampling.make_resampling` draws them, the per-clinician totals give every resample's sums in
one (10,000 x 78) @ (78 x 63) product) against pingouin on the same drawn clinicians' rows, and the ratio
beside issue 47's bar (at least 3,000x). SYNTHETIC data; the load average is printed with the figures.

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
from mis_icc_metric import ResamplingOptions
from mis_icc_metric.bootstrap import bootstrap_blocks, bootstrap_indices, point_blocks  # noqa: E402
from mis_icc_metric.resampling import make_resampling  # noqa: E402
from mis_icc_metric.scoring import score_predictions  # noqa: E402

# Issue 47: the ICC(3,1) bootstrap of 10,000 resamples x 9 blocks at least this many times a pingouin loop.
SPEEDUP_BAR = 3000
N_CLINICIANS = 78  # the real benchmark's: about 12.8 videos each


def clinician_videos(n: int, seed: int = 0) -> list[str]:
    """n video ids from N_CLINICIANS clinicians x 3 time points x 8 stimuli, row i the i-th (sorted) id."""
    from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS

    slots = [f"CL{c:04d}_{t}_{s}" for c in range(N_CLINICIANS) for t in TIME_POINTS for s in STIMULI]
    return sorted(np.random.default_rng(seed).choice(slots, size=n, replace=False).tolist())


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


def clinician_bootstrap(ratings: np.ndarray, valid: np.ndarray, args) -> dict:
    """ICC(3,1) of the 9 blocks in 10,000 clinician resamples (the draw included, as a command pays it) against
    pingouin on the rows of the same drawn clinicians, timed on --pingouin-resamples and extrapolated."""
    videos = clinician_videos(ratings.shape[0])

    def ours():
        return bootstrap_blocks(ratings, valid, make_resampling(videos, args.resamples, 0, "clinician"))["icc"]

    wall, boot = best_of(args.repeats, ours)
    cpu = []
    for _ in range(args.repeats):
        start = time.process_time()
        ours()
        cpu.append(time.process_time() - start)
    plan = make_resampling(videos, args.resamples, 0, "clinician")
    members = [np.flatnonzero(plan.clusters == c) for c in range(plan.n_clusters)]
    start, start_cpu = time.perf_counter(), time.process_time()
    looped = [
        pingouin_blocks(ratings, valid, np.concatenate([members[c] for c in draw]))
        for draw in plan.draws[: args.pingouin_resamples]
    ]
    per_resample = (time.perf_counter() - start) / args.pingouin_resamples
    per_resample_cpu = (time.process_time() - start_cpu) / args.pingouin_resamples
    return {
        "ours": wall,
        "ours_cpu": min(cpu),
        "pingouin_extrapolated": per_resample * args.resamples,
        "speedup": per_resample * args.resamples / wall,
        "speedup_cpu": per_resample_cpu * args.resamples / min(cpu),
        "bar": SPEEDUP_BAR,
        "max_abs_diff": float(np.abs(boot[: args.pingouin_resamples] - np.array(looped)).max()),
    }


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

    ids = clinician_videos(n)  # score resamples clinicians by default: the ids name them
    predictions = {
        (ids[i], d): (None if np.isnan(pred[i, j]) else float(pred[i, j]))
        for i in range(n)
        for j, d in enumerate(DIMENSION_KEYS)
    }
    references = {(ids[i], d): float(gold[i, j]) for i in range(n) for j, d in enumerate(DIMENSION_KEYS)}
    t_score, _ = best_of(
        max(2, args.repeats // 2),
        lambda: score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=args.resamples)),
    )

    clinician = clinician_bootstrap(ratings, valid, args)

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
        "clinician_bootstrap_s": clinician,
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
    print(
        f"by clinician    : ours {clinician['ours']:8.3f} s    pingouin "
        f"{clinician['pingouin_extrapolated'] / 60:8.1f} min"
        f" (same drawn clinicians)   x{clinician['speedup']:.0f} (bar: x{SPEEDUP_BAR:,}; CPU "
        f"{clinician['ours_cpu']:.3f} s, x{clinician['speedup_cpu']:.0f}); max |difference| "
        f"{clinician['max_abs_diff']:.1e}"
    )
    print(f"score_predictions (all rules, sensitivity blocks included): {t_score:.3f} s")
    print(f"peak memory of our bootstrap (tracemalloc): {report['peak_memory_mib']:.1f} MiB")
    print("max |difference|: " + ", ".join(f"{k} {v:.1e}" for k, v in report["max_abs_diff"].items()))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
