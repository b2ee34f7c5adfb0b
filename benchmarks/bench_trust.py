"""The trust commands (`calibrate`, `estimate`, `plan icc`) with their defaults beside `score --bootstrap 0`.

Issue 47 asks each under 5x `score --bootstrap 0` on the full benchmark (996 videos x 8 dimensions). The data: the
real gold of the 996 videos (`../shared/data`, a text build split by clinician, as `mis-bench build --split-by
clinician`), a SYNTHETIC judge (the gold compressed, 0.4 points high at the bottom, noise 0.35, two decimals: a
ridge-like judge with nearly every score distinct), and for `estimate` the gold of a random 10% of the videos (seed
0) as the expert labels. Each command runs in a fresh interpreter (imports included, as a user pays them), the four
alternating, `--repeats` times; the medians, their ratios to `score --bootstrap 0` and the machine's load are printed.

With `--before TREE` (another checkout of the toolkit, e.g. `git worktree add /tmp/before main`), the same four
commands from that tree too, alternating with this one's, each tree's ratios to its own `score --bootstrap 0`.

    python3 benchmarks/bench_trust.py [--repeats 3] [--shared ../shared] [--before TREE] [--json OUT]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.fresh_command import timed_command  # noqa: E402

BAR = 5.0  # issue 47: each trust command under this multiple of `score --bootstrap 0`


def make_inputs(shared: Path, root: Path) -> tuple[Path, Path, Path, int]:
    """(the build, the SYNTHETIC judge's CSV, the 10% expert labels' CSV, gold pairs) under `root`."""
    from mis_bench_dataset import SplitPlan, build_dataset
    from mis_icc_metric.predictions_io import read_references

    build = root / "build"
    data = shared / "data"
    build_dataset(
        None,
        build,
        labels=data / "authors" / "coding.csv",
        transcripts=data / "mis-bench-transcripts.csv",
        split=SplitPlan(split_by="clinician"),
        progress=False,
    )
    gold = read_references(build, split="all")
    rng = np.random.default_rng(0)
    videos = sorted({video for video, _ in gold})
    labelled = set(rng.choice(videos, size=len(videos) // 10, replace=False).tolist())
    judge, experts = root / "judge.csv", root / "experts.csv"
    with judge.open("w", newline="") as judge_file, experts.open("w", newline="") as experts_file:
        judge_rows, expert_rows = csv.writer(judge_file), csv.writer(experts_file)
        judge_rows.writerow(["video_id", "dimension", "prediction"])
        expert_rows.writerow(["video_id", "dimension", "score"])
        for (video, dimension), score in sorted(gold.items()):
            judged = float(np.clip(1.0 + 0.8 * score + rng.normal(0, 0.35), 1, 5))
            judge_rows.writerow([video, dimension, round(judged, 2)])
            if video in labelled:
                expert_rows.writerow([video, dimension, score])
    return build, judge, experts, len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--before", type=Path, default=None, help="another checkout, timed beside this one")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    trees = {"this tree": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build, judge, experts, n_pairs = make_inputs(args.shared, root)
        commands = {
            "score --bootstrap 0": ["score", "--predictions", judge, "--references", build, "--split", "all"]
            + ["--bootstrap", "0", "--json"],
            "calibrate": ["calibrate", "--predictions", judge, "--references", build, "--out", root / "cal", "--json"],
            "estimate": ["estimate", "--judge", judge, "--experts", experts, "--json"],
            "plan icc": ["plan", "icc", "--predictions", judge, "--references", build, "--half-width", "0.05"]
            + ["--json"],
        }
        commands = {name: [str(a) for a in argv] for name, argv in commands.items()}
        times = {(tree, name): [] for tree in trees for name in commands}
        timed_command(commands["score --bootstrap 0"])  # warm the file system cache once
        for _ in range(args.repeats):
            for name, argv in commands.items():
                for tree, path in trees.items():
                    if name == "calibrate":
                        _remove(root / "cal")
                    times[tree, name].append(timed_command(argv, path))
    load = os.getloadavg()[0]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, load {load:.2f}; real gold, SYNTHETIC judge, "
        f"{n_pairs:,} pairs (996 videos x 8 dimensions); each command's defaults, a fresh interpreter, "
        f"median of {args.repeats}; wall and CPU (user + system) seconds, each as a ratio to score --bootstrap 0's"
    )
    results = {"machine": platform.machine(), "cores": os.cpu_count(), "load": round(load, 2), "trees": {}}
    for tree in trees:
        medians = {
            name: [statistics.median(kind) for kind in zip(*times[tree, name], strict=True)] for name in commands
        }
        wall_base, cpu_base = medians["score --bootstrap 0"]
        results["trees"][tree] = {}
        for name, (wall, cpu) in medians.items():
            ratio, cpu_ratio = wall / wall_base, cpu / cpu_base
            mark = "" if name.startswith("score") else (" (bar < 5x: met)" if ratio < BAR else " (bar < 5x: NOT met)")
            print(f"{tree:10s} {name:20s} wall {wall:6.2f} s {ratio:5.1f}x   CPU {cpu:6.2f} s {cpu_ratio:5.1f}x{mark}")
            results["trees"][tree][name] = {
                "wall_s": round(wall, 2),
                "ratio": round(ratio, 2),
                "cpu_s": round(cpu, 2),
                "cpu_ratio": round(cpu_ratio, 2),
            }
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


def _remove(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
