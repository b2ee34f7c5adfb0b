"""`mis-bench score` with a built dataset as --references against the same gold as a CSV, side by side.

A build's gold is three Parquet columns: read with pyarrow, the command should cost about what the CSV costs
(issue 47 asks within 1.15x). Each command runs in a fresh interpreter (imports included, as a user pays them),
alternating the two, `--repeats` times; the medians and their ratio are printed, with the machine's load.

    python benchmarks/bench_lean_reads.py [--videos 996] [--repeats 7]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fresh_command import timed_command  # noqa: E402


def _score(predictions: Path, references: Path) -> float:
    """Wall seconds of `score --bootstrap 0` in a fresh interpreter (`benchmarks.fresh_command`)."""
    argv = ["score", "--predictions", predictions, "--references", references, "--split", "all"]
    return timed_command([*argv, "--bootstrap", "0", "--json"])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=996)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    from mis_bench_dataset import build_dataset, generate_synthetic_release
    from mis_icc_metric.predictions_io import read_references

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        release = generate_synthetic_release(root / "release", n_videos=args.videos, seed=0)
        build = root / "build"
        build_dataset(release.release_dir, build, labels=release.ratings_csv, progress=False)
        gold = read_references(build, split="all")
        rng = np.random.default_rng(0)
        labels, judge = root / "gold.csv", root / "judge.csv"
        with labels.open("w", newline="") as gold_file, judge.open("w", newline="") as judge_file:
            gold_rows, judge_rows = csv.writer(gold_file), csv.writer(judge_file)
            gold_rows.writerow(["video_id", "dimension", "score"])
            judge_rows.writerow(["video_id", "dimension", "prediction"])
            for (video, dimension), score in sorted(gold.items()):
                gold_rows.writerow([video, dimension, score])
                judge_rows.writerow([video, dimension, round(float(np.clip(score + rng.normal(0, 0.4), 1, 5)), 2)])
        times: dict[str, list[float]] = {"build": [], "csv": []}
        _score(judge, build)  # warm the file system cache once
        for _ in range(args.repeats):
            times["build"].append(_score(judge, build))
            times["csv"].append(_score(judge, labels))
    build_s, csv_s = statistics.median(times["build"]), statistics.median(times["csv"])
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {len(gold):,} gold pairs, SYNTHETIC")
    print(f"score --references BUILD: median {build_s:.2f} s of {args.repeats}")
    print(f"score --references CSV:   median {csv_s:.2f} s of {args.repeats}")
    print(f"ratio build / csv: {build_s / csv_s:.2f}x")


if __name__ == "__main__":
    main()
