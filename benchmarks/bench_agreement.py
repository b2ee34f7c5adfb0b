"""Speed of the agreement bootstrap (every statistic together) vs the loop a user would write, in one run.

996 synthetic videos x 8 dimensions + overall (about 1.5% unparsed), as bench_icc.py. Times (best of
--repeats): `agreement_blocks` (point estimates, 10,000-resample bootstrap of all 18 statistics of all 9
blocks from one shared index matrix, percentile CIs), the replicates alone, and ICC(3,1) alone
(`bootstrap_blocks`, the metric's existing path) for comparison; the reference is a loop over resamples
calling pingouin.intraclass_corr (six forms), krippendorff.alpha, scipy pearsonr / spearmanr and numpy
(MAE, MSE, bias, limits of agreement, range use) per block, timed on a few resamples and extrapolated.
Checks every replicate equals the loop's and reports peak memory (tracemalloc) of our bootstrap.

With `--ref REV`, also the code before (`git show REV:mis_icc_metric/agreement_statistics.py`, imported beside this
tree's: REV from issue 38's renames on, when the module had this name and imported `mis_bench_dataset.toolkit`)
against this tree in the same run: `agreement_blocks` on the same data and on continuous predictions (a ridge's:
nearly every prediction distinct), CPU seconds (best of --repeats), the ratio, peak traced memory, and whether
every replicate of every statistic and the JSON entries are the same bits.

    python3 benchmarks/bench_agreement.py [--resamples 10000] [--loop-resamples 3] [--json OUT] [--ref a3f6604]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_icc import best_of, make_data  # noqa: E402

from mis_icc_metric.agreement_statistics import STATISTIC_KEYS, agreement_blocks, agreement_replicates  # noqa: E402
from mis_icc_metric.bootstrap import bootstrap_blocks, bootstrap_indices  # noqa: E402

PINGOUIN_ROWS = dict(
    zip(("icc1_1", "icc2_1", "icc3_1", "icc1_k", "icc2_k", "icc3_k"), range(6), strict=True)
)  # row order of pingouin.intraclass_corr: ICC(1,1), ICC(A,1), ICC(C,1), ICC(1,k), ICC(A,k), ICC(C,k)


def reference_statistics(pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """Every statistic of one block the way a user would compute it with the usual libraries."""
    import krippendorff
    import pandas as pd
    import pingouin
    from scipy import stats

    n = len(pred)
    # Fresh target ids: resampled copies stay distinct items (pivoting by video id would merge them).
    long = pd.DataFrame(
        {"t": np.repeat(np.arange(n), 2), "r": np.tile([0, 1], n), "y": np.stack([pred, gold], 1).ravel()}
    )
    table = pingouin.intraclass_corr(long, targets="t", raters="r", ratings="y")
    out = {key: float(table["ICC"].iloc[row]) for key, row in PINGOUIN_ROWS.items()}
    out["krippendorff_alpha"] = float(krippendorff.alpha(np.stack([pred, gold]), level_of_measurement="interval"))
    out["pearson"] = float(stats.pearsonr(pred, gold)[0])
    out["spearman"] = float(stats.spearmanr(pred, gold)[0])
    d = pred - gold
    sd = float(np.std(d, ddof=1))
    out.update(mae=float(np.abs(d).mean()), mse=float((d**2).mean()), bias=float(d.mean()), sd_diff=sd)
    out.update(loa_low=out["bias"] - 1.96 * sd, loa_high=out["bias"] + 1.96 * sd)
    out["sd_ratio"] = float(np.std(pred, ddof=1) / np.std(gold, ddof=1))
    out["integer_share"] = float(np.mean(pred == np.round(pred)))
    out["n_distinct"] = float(len(np.unique(pred)))
    return out


def loop_resample(ratings: np.ndarray, valid: np.ndarray, rows: np.ndarray) -> dict[str, np.ndarray]:
    out = {key: np.empty(ratings.shape[1]) for key in STATISTIC_KEYS}
    for block in range(ratings.shape[1]):
        keep = rows[valid[rows, block]]
        for key, value in reference_statistics(ratings[keep, block, 0], ratings[keep, block, 1]).items():
            out[key][block] = value
    return out


def cpu_time(repeats: int, func) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        func()
        times.append(time.process_time() - start)
    return min(times)


def old_agreement(ref: str):
    """`mis_icc_metric/agreement_statistics.py` as it was at `ref`, as a module of this tree's package (its relative
    imports are this tree's `bootstrap`)."""
    from _old_tree import module_at

    return module_at(ref, "mis_icc_metric/agreement_statistics.py", "mis_icc_metric._agreement_before")


def compare_with(ref: str, repeats: int, resamples: int) -> list[dict]:
    """Old and new `agreement_blocks` on the same blocks and resamples: CPU s, ratio, peak memory, same bits."""
    from mis_icc_metric import agreement_statistics as new

    old = old_agreement(ref)
    pred, gold, ratings, valid = make_data()
    rng = np.random.default_rng(1)
    continuous = np.where(np.isnan(pred), np.nan, np.clip(gold + rng.normal(0, 0.6, gold.shape), 1, 5))
    complete = ~np.isnan(continuous).any(axis=1)
    overall = np.where(complete[:, None], np.stack([np.nanmean(continuous, 1), gold.mean(1)], 1), np.nan)
    ratings_c = np.concatenate([np.stack([continuous, gold], -1), overall[:, None]], axis=1)
    indices = bootstrap_indices(ratings.shape[0], resamples, 0)
    rows = []
    for name, data in (("predictions on 0.1 steps (as above)", ratings), ("continuous predictions", ratings_c)):
        row = {"case": name}
        for label, module in (("old", old), ("new", new)):
            row[f"{label}_cpu_s"] = round(
                cpu_time(repeats, lambda m=module, d=data: m.agreement_blocks(d, valid, indices)), 3
            )
            tracemalloc.start()
            module.agreement_blocks(data, valid, indices)
            row[f"{label}_peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
            tracemalloc.stop()
        row["speedup_cpu"] = round(row["old_cpu_s"] / row["new_cpu_s"], 2)
        before, after = old.agreement_replicates(data, valid, indices), new.agreement_replicates(data, valid, indices)
        row["same_bits"] = all(np.array_equal(before[k], after[k], equal_nan=True) for k in STATISTIC_KEYS) and repr(
            old.agreement_blocks(data, valid, indices)
        ) == repr(new.agreement_blocks(data, valid, indices))
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--loop-resamples", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--ref", default=None, help="also compare with the code before (a git revision)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    before = compare_with(args.ref, args.repeats, args.resamples) if args.ref else None

    _, _, ratings, valid = make_data()
    n = ratings.shape[0]

    def indices():
        return bootstrap_indices(n, args.resamples, 0)

    t_all, _ = best_of(args.repeats, lambda: agreement_blocks(ratings, valid, indices()))
    t_replicates, boot = best_of(args.repeats, lambda: agreement_replicates(ratings, valid, indices()))
    t_icc, _ = best_of(args.repeats, lambda: bootstrap_blocks(ratings, valid, indices()))
    cpu_all = cpu_time(args.repeats, lambda: agreement_blocks(ratings, valid, indices()))
    cpu_icc = cpu_time(args.repeats, lambda: bootstrap_blocks(ratings, valid, indices()))
    tracemalloc.start()
    agreement_blocks(ratings, valid, indices())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    shared = indices()
    start = time.perf_counter()
    looped = [loop_resample(ratings, valid, shared[b].astype(np.int64)) for b in range(args.loop_resamples)]
    t_loop_per_resample = (time.perf_counter() - start) / args.loop_resamples
    t_loop = t_loop_per_resample * args.resamples
    max_diff = {
        key: float(max(np.abs(boot[key][b] - looped[b][key]).max() for b in range(args.loop_resamples)))
        for key in STATISTIC_KEYS
    }

    report = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, numpy {np.__version__}",
        "load_average_1min": os.getloadavg()[0],
        "n_videos": n,
        "blocks": ratings.shape[1],
        "statistics": len(STATISTIC_KEYS),
        "resamples": args.resamples,
        "agreement_blocks_s": t_all,
        "agreement_blocks_cpu_s": cpu_all,
        "replicates_s": t_replicates,
        "icc31_only_s": t_icc,
        "icc31_only_cpu_s": cpu_icc,
        "loop_extrapolated_s": t_loop,
        "loop_per_resample_s": t_loop_per_resample,
        "speedup": t_loop / t_all,
        "peak_memory_mib": peak / 2**20,
        "max_abs_diff_vs_loop": max_diff,
        "against_ref": before,
    }
    print(
        f"{n} videos x 8 dimensions + overall, {len(STATISTIC_KEYS)} statistics, {args.resamples} resamples; "
        f"{report['machine']}, load average {report['load_average_1min']:.1f}"
    )
    print(f"all statistics, point + bootstrap + CIs : {t_all:7.3f} s wall, {cpu_all:.3f} s CPU")
    print(f"  of which the replicates               : {t_replicates:7.3f} s")
    print(f"ICC(3,1) alone (bootstrap_blocks)       : {t_icc:7.3f} s wall, {cpu_icc:.3f} s CPU")
    print(
        f"pingouin/krippendorff/scipy loop       : {t_loop / 60:7.1f} min (extrapolated from {args.loop_resamples} "
        f"resamples, {t_loop_per_resample:.2f} s each)   x{report['speedup']:.0f}"
    )
    print(f"peak memory of our bootstrap (tracemalloc): {report['peak_memory_mib']:.1f} MiB")
    print(f"max |difference| vs the loop over all statistics: {max(max_diff.values()):.1e}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    main()
