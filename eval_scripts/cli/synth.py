"""`mis-bench synth OUT --videos N --seed S [--full-size]`: write a synthetic release tree."""

from __future__ import annotations

import argparse

from eval_scripts.cli.args import add_json, add_seed, bounded_int, print_json, say, shown
from mis_bench_dataset.dataset.format import DEFAULT_BUILD_DIR

MAX_VIDEOS = 100_000


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="write a synthetic release (release layout + per-rater ratings.csv) with planted signal",
        description="Write a SYNTHETIC MIS-Bench release tree in the public release layout, plus "
        "OUT/ratings.csv with three raters' scores. The planted signal is documented in "
        "mis_bench_dataset/synth/generator.py. Build it with: mis-bench build OUT --labels OUT/ratings.csv",
    )
    parser.add_argument("out", help="new (or empty) folder to write the release into")
    parser.add_argument("--videos", type=bounded_int(1, MAX_VIDEOS), default=40, help="number of videos (default 40)")
    add_seed(parser, what="seed of the generator")
    parser.add_argument("--full-size", action="store_true", help="real durations (mean about 62 s) for benchmarks")
    parser.add_argument("--no-compress", action="store_true", help="write uncompressed npz (faster, larger)")
    add_json(parser, what="a summary")
    parser.set_defaults(func=run, interrupted_note="the partial release folder is left as it is; delete it and rerun")


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.synth.generator import generate_synthetic_release

    release = generate_synthetic_release(
        args.out,
        n_videos=args.videos,
        seed=args.seed,
        full_size=args.full_size,
        compress=not args.no_compress,
        progress=True,
    )
    summary = {
        "release_dir": str(release.release_dir),
        "ratings_csv": str(release.ratings_csv),
        "n_videos": len(release.video_ids),
        "seed": release.seed,
        "synthetic": True,
    }
    if args.json:
        print_json(summary)
    else:
        say(
            f"wrote SYNTHETIC release of {summary['n_videos']} videos to {shown(release.release_dir)} "
            f"(ratings: {shown(release.ratings_csv)})"
        )
        say(
            f"next: mis-bench build {shown(release.release_dir)} --labels {shown(release.ratings_csv)} "
            f"--out {DEFAULT_BUILD_DIR}"
        )
    return 0
