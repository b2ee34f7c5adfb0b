"""Benchmark `build_dataset`: streaming (peak RSS flat in the number of videos), throughput,
the naive alternative (`Dataset.from_generator`, default writer_batch_size), and loading.

    python3 benchmarks/bench_build.py --videos 100 996 --work /tmp/mis-bench-bench

Full-size SYNTHETIC videos (mean about 62 s, wav2vec included) are generated once for the
largest N (uncompressed npz by default, `--compress` for the release's deflate); smaller
N use the first N videos of the same tree through symlinks. Each measurement runs in its
own Python process, so peak RSS (ru_maxrss) is that run's alone. Prints a Markdown table
and writes `results.json` into --work.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}

BUILD_CHILD = r"""
import json, resource, sys, time
from mis_bench_dataset import build_dataset
import datasets  # imported up front so the baseline RSS includes it (a user's process has it too)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
start = time.perf_counter()
report = build_dataset(sys.argv[1], sys.argv[2], progress=False)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "bytes_read": report.bytes_read, "bytes_written": report.bytes_written,
                  "n_videos": report.n_videos, "rss_after_imports_mb": base,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# The alternative a user would reach for: Dataset.from_generator with default settings, fed by
# the same reader (so only the writing strategy differs), then to_parquet.
NAIVE_CHILD = r"""
import json, resource, sys, time
import datasets
from mis_bench_dataset.release.tree import scan_release, read_video, MODALITIES
from mis_bench_dataset.builder.schema import features_features
from mis_bench_dataset.dimensions import DIMENSION_KEYS
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
index = scan_release(sys.argv[1])
def rows(ids):
    for video_id in ids:
        r = read_video(index, video_id)
        row = {"video_id": r.video_id, "clinician": r.clinician, "time_point": r.time_point,
               "stimulus": r.stimulus, "transcript": r.transcript, "duration_seconds": r.duration_seconds}
        for m in MODALITIES:
            d = r.modalities[m.name]
            row[m.name] = d.features; row[m.name + "_timestamps"] = d.timestamps; row["has_" + m.name] = d.present
        row.update(dict.fromkeys(DIMENSION_KEYS))
        yield row
start = time.perf_counter()
ds = datasets.Dataset.from_generator(rows, gen_kwargs={"ids": index.video_ids}, features=features_features(),
                                     cache_dir=sys.argv[2] + "/cache")
ds.to_parquet(sys.argv[2] + "/features.parquet")
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "n_videos": len(index.video_ids), "rss_after_imports_mb": base,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

LOAD_CHILD = r"""
import json, sys, time
from datasets import load_dataset
def timed(fn):
    start = time.perf_counter(); value = fn(); return value, time.perf_counter() - start
_, first = timed(lambda: load_dataset(sys.argv[1], "features", split="train", cache_dir=sys.argv[2]))
ds, second = timed(lambda: load_dataset(sys.argv[1], "features", split="train", cache_dir=sys.argv[2]))
np_ds = ds.with_format("numpy", columns=["openface"])
row, one = timed(lambda: np_ds[len(ds) // 2]["openface"])
_, col_len = timed(lambda: len(ds))
print(json.dumps({"first_load_s": first, "second_load_s": second, "one_openface_row_s": one,
                  "openface_shape": list(row.shape)}))
"""


def run_child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], env=ENV, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def subset_tree(release: Path, ids: list[str], target: Path) -> Path:
    """A release with the first len(ids) videos, as symlinks (no copy)."""
    if target.exists():
        shutil.rmtree(target)
    from mis_bench_dataset.release.tree import MODALITIES, TEXT_FOLDER

    for folder in (*(m.folder for m in MODALITIES), TEXT_FOLDER):
        (target / folder).mkdir(parents=True)
        for video_id in ids:
            (target / folder / f"{video_id}.npz").symlink_to(release / folder / f"{video_id}.npz")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--videos", type=int, nargs="+", default=[100, 996])
    parser.add_argument("--work", default="/tmp/mis-bench-bench")
    parser.add_argument("--compress", action="store_true", help="deflate the npz like the public release")
    parser.add_argument(
        "--naive-videos", type=int, default=100, help="videos for the from_generator baseline (0: skip)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the built folders")
    parser.add_argument("--no-control", action="store_true", help="skip the largest-videos control build")
    args = parser.parse_args(argv)

    from mis_bench_dataset import generate_synthetic_release
    from mis_bench_dataset.release.tree import FRAMED_MODALITIES, MODALITY_BY_NAME

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    release_dir = work / "release"
    n_max = max(args.videos)
    if not (release_dir / "subset_manifest.json").is_file():
        shutil.rmtree(release_dir, ignore_errors=True)
        start = time.perf_counter()
        generate_synthetic_release(
            release_dir, n_videos=n_max, seed=0, full_size=True, compress=args.compress, progress=True
        )
        print(f"generated {n_max} full-size synthetic videos in {time.perf_counter() - start:.0f} s", flush=True)
    ids = json.loads((release_dir / "subset_manifest.json").read_text())["sample_ids"]
    results: dict = {"compressed_npz": args.compress, "cpu_count": os.cpu_count(), "builds": []}
    for n in sorted(args.videos):
        tree = subset_tree(release_dir, ids[:n], work / f"release_{n}")
        out = work / f"out_{n}"
        shutil.rmtree(out, ignore_errors=True)
        res = run_child(BUILD_CHILD, str(tree), str(out))
        res["mb_per_s"] = res["bytes_read"] / 1e6 / res["seconds"]
        results["builds"].append(res)
        print(json.dumps(res), flush=True)
    if not args.no_control:
        # Control: the N_min largest videos. Peak RSS follows the largest video (one video is
        # in memory at a time), so this separates "grows with N" from "grows with video size".
        n = min(args.videos)
        framed = [MODALITY_BY_NAME[name].folder for name in FRAMED_MODALITIES]
        sizes = {v: sum((release_dir / f / f"{v}.npz").stat().st_size for f in framed) for v in ids}
        largest = sorted(ids, key=lambda v: -sizes[v])[:n]
        tree = subset_tree(release_dir, largest, work / "release_largest")
        out = work / "out_largest"
        shutil.rmtree(out, ignore_errors=True)
        res = run_child(BUILD_CHILD, str(tree), str(out))
        res["mb_per_s"] = res["bytes_read"] / 1e6 / res["seconds"]
        res["label"] = f"{n} largest"
        results["largest_control"] = res
        print(json.dumps(res), flush=True)
        shutil.rmtree(out, ignore_errors=True)
    if args.naive_videos:
        n = args.naive_videos
        tree = subset_tree(release_dir, ids[:n], work / f"release_{n}")
        naive_dir = work / "naive"
        shutil.rmtree(naive_dir, ignore_errors=True)
        naive_dir.mkdir()
        results["naive_from_generator"] = run_child(NAIVE_CHILD, str(tree), str(naive_dir))
        print(json.dumps(results["naive_from_generator"]), flush=True)
        shutil.rmtree(naive_dir, ignore_errors=True)
    smallest = work / f"out_{min(args.videos)}"
    cache = work / "hf_cache"
    shutil.rmtree(cache, ignore_errors=True)
    results["load"] = run_child(LOAD_CHILD, str(smallest), str(cache))
    print(json.dumps(results["load"]), flush=True)
    (work / "results.json").write_text(json.dumps(results, indent=2))

    print("\n| videos | wall s | s/video | MB read | MB/s | peak RSS MB | RSS after imports MB |")
    print("|---|---|---|---|---|---|---|")
    rows = results["builds"] + ([results["largest_control"]] if "largest_control" in results else [])
    for b in rows:
        print(
            f"| {b.get('label', b['n_videos'])} | {b['seconds']:.1f} | {b['seconds'] / b['n_videos']:.3f} "
            f"| {b['bytes_read'] / 1e6:.0f} "
            f"| {b['mb_per_s']:.0f} | {b['peak_rss_mb']:.0f} | {b['rss_after_imports_mb']:.0f} |"
        )
    if "naive_from_generator" in results:
        naive = results["naive_from_generator"]
        ours = (
            next(b for b in results["builds"] if b["n_videos"] == naive["n_videos"])
            if any(b["n_videos"] == naive["n_videos"] for b in results["builds"])
            else None
        )
        line = (
            f"\nfrom_generator baseline, {naive['n_videos']} videos: {naive['seconds']:.1f} s, "
            f"peak RSS {naive['peak_rss_mb']:.0f} MB"
        )
        if ours:
            line += (
                f" (ours: {naive['seconds'] / ours['seconds']:.1f}x faster, "
                f"{naive['peak_rss_mb'] / ours['peak_rss_mb']:.1f}x less peak RSS)"
            )
        print(line)
    load = results["load"]
    print(
        f"load_dataset features/train: first {load['first_load_s']:.2f} s, "
        f"second (warm) {load['second_load_s']:.2f} s; "
        f"one openface row as numpy {load['one_openface_row_s'] * 1000:.1f} ms"
    )
    if not args.keep:
        for n in args.videos:
            shutil.rmtree(work / f"out_{n}", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
