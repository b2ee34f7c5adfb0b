"""Benchmark reading one video's array from a built dataset: `FeatureArrays` (zero-copy views of
a memory-mapped Arrow file) against `np.load` of the release npz and `with_format("numpy")`.

    python3 benchmarks/bench_feature_access.py --work /tmp/mis-bench-access

Two datasets: the real public subset (--real, default ../shared/data/MIS-Bench_subset10, 10
full-length videos; skipped when absent) and a SYNTHETIC 996-video release (`mis-bench synth --videos 996`:
short 2-6 s arrays, compressed npz like the release), each built once into --work. Every
method runs in its own Python process over every video of the build's train split (per-video
times, after one warm-up pass, so the npz files are in the page cache for all methods), and
reports the median per video of the read alone and of read + `.sum()` (every value touched, so a
view pays its page faults), the one-off opening cost and the peak RSS (ru_maxrss).
Prints a Markdown table and writes results.json into --work.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
REPO = Path(__file__).resolve().parents[1]
REAL_SUBSET = REPO.parent / "shared" / "data" / "MIS-Bench_subset10"

# argv: method, build dir, release dir, modality, scratch dir
CHILD = r"""
import json, resource, sys, tempfile, time
import numpy as np
method, build, release, modality, scratch = sys.argv[1:6]
from mis_bench_dataset.dataset.arrays import FeatureArrays
from mis_bench_dataset.release.tree import MODALITY_BY_NAME
import datasets
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from pathlib import Path
ids = FeatureArrays.open(build, "train", columns=["video_id"]).video_ids
folder = f"{release}/{MODALITY_BY_NAME[modality].folder}"
keep = [i for i, v in enumerate(ids) if Path(folder, f"{v}.npz").is_file()]  # the videos the release has it for
keep = keep * max(1, -(-200 // len(keep)))  # at least 200 timed reads (the real subset's train split has 8 videos)
start = time.perf_counter()
if method == "npz":
    def read(i):
        with np.load(f"{folder}/{ids[i]}.npz", allow_pickle=False) as npz:
            return npz["features"]
elif method in ("with_format", "FeatureArrays(dataset)"):
    ds = datasets.load_dataset(build, "features", split="train", cache_dir=scratch)
    if method == "with_format":
        ds = ds.with_format("numpy", columns=[modality])
        read = lambda i: ds[i][modality]
    else:
        features = FeatureArrays(ds)
        read = lambda i: features.array(i, modality)
else:
    features = FeatureArrays.open(build, "train", columns=[modality])
    read = lambda i: features.array(i, modality)
opened = time.perf_counter() - start
for i in keep:  # warm-up: page cache, lazily built offsets
    read(i).sum()
times, used, total = [], [], 0.0
for i in keep:
    t = time.perf_counter()
    array = read(i)
    times.append(time.perf_counter() - t)
for i in keep:  # read and use: every value touched once (a view pays its page faults here)
    t = time.perf_counter()
    total += float(read(i).sum())
    used.append(time.perf_counter() - t)
times, used = np.array(times), np.array(used)
print(json.dumps({"method": method, "videos": len(set(keep)), "reads": len(keep), "open_s": opened,
                  "median_us": float(np.median(times) * 1e6),
                  "mean_us": float(times.mean() * 1e6), "median_sum_us": float(np.median(used) * 1e6),
                  "rss_after_imports_mb": base,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

METHODS = ("npz", "with_format", "FeatureArrays(dataset)", "FeatureArrays.open")


def run_child(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        env={**ENV, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(work: Path, n_videos: int, real: Path) -> list[tuple[str, Path, Path]]:
    """(label, build dir, release dir) of each dataset, built once."""
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    datasets = []
    if real.is_dir():
        build = work / "subset10-build"
        if not (build / "README.md").is_file():
            build_dataset(real, build, progress=False)
        datasets.append(("real subset (10 videos)", build, real))
    else:
        print(f"skipping the real subset: {real} not present", file=sys.stderr)
    release = work / f"synthetic{n_videos}"
    if not (release / "ratings.csv").is_file():
        generate_synthetic_release(release, n_videos=n_videos, seed=0, progress=True)
    build = work / f"synthetic{n_videos}-build"
    if not (build / "README.md").is_file():
        build_dataset(release, build, labels=release / "ratings.csv")
    datasets.append((f"SYNTHETIC {n_videos} videos (short)", build, release))
    return datasets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="/tmp/mis-bench-access")
    parser.add_argument("--videos", type=int, default=996)
    parser.add_argument("--modalities", nargs="+", default=["openface", "wav2vec"])
    parser.add_argument("--real", type=Path, default=REAL_SUBSET, help=f"the real subset (default {REAL_SUBSET})")
    args = parser.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for label, build, release in prepare(work, args.videos, args.real):
        for modality in args.modalities:
            for method in METHODS:
                scratch = work / "cache"  # a fresh datasets cache each time: its conversion is part of opening
                shutil.rmtree(scratch, ignore_errors=True)
                result = run_child(method, str(build), str(release), modality, str(scratch))
                results.append({"dataset": label, "modality": modality, **result})
                print(json.dumps(results[-1]), file=sys.stderr)
    shutil.rmtree(work / "cache", ignore_errors=True)
    (work / "results.json").write_text(json.dumps(results, indent=2))
    print(
        "| dataset | modality | method | open s | median µs/video | np.load ÷ method | read + sum µs/video "
        "| np.load ÷ method | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        npz = next(
            x
            for x in results
            if x["dataset"] == r["dataset"] and x["modality"] == r["modality"] and x["method"] == "npz"
        )
        print(
            f"| {r['dataset']} | {r['modality']} | {r['method']} | {r['open_s']:.2f} | {r['median_us']:.1f} | "
            f"{npz['median_us'] / r['median_us']:.0f}x | {r['median_sum_us']:.1f} | "
            f"{npz['median_sum_us'] / r['median_sum_us']:.1f}x | {r['peak_rss_mb']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
