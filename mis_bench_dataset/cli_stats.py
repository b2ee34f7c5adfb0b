"""`mis-bench stats DATASET_DIR [--split NAME|all] [--labels FILE] [--out DIR] [--json]`: the paper's
dataset statistics (Table 6, Figures 5-6, Table 2 ceiling) of a built folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

DEFAULT_OUT = "mis-bench-stats"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "stats",
        help="gold-score statistics of a built dataset (paper Table 6, Figures 5-6; Table 2 with --labels)",
        description="Per dimension the gold mean, sd (ddof=1), min, max and n; the Pearson correlation of the "
        "eight dimensions over videos with all eight gold scores; histograms at 0.1 resolution; the same per "
        "split, time point and stimulus; with per-rater --labels the human single-rater ICC(3,1) ceiling. "
        "Writes OUT/stats.json, OUT/correlation.png and OUT/histograms.png.",
    )
    parser.add_argument("dataset_dir", help="folder written by `mis-bench build` (with labels)")
    parser.add_argument("--split", default="all", help="train, validation, test or all (default: all)")
    parser.add_argument("--labels", help="per-rater labels CSV (video_id,rater,dimension,score) for the human ceiling")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default: ./{DEFAULT_OUT})")
    parser.add_argument("--json", action="store_true", help="print stats.json to stdout")
    parser.set_defaults(func=run)


def _check_out(out: Path, dataset_dir: Path) -> None:
    from mis_bench_dataset.errors import UsageError

    if out.resolve().is_relative_to(dataset_dir.resolve()):
        raise UsageError("--out is inside the dataset folder", where=str(out),
                         hint="choose a folder outside it (the build keeps its own statistics in DATASET_DIR/stats)")


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.stats import compute_stats, summary_text, write_stats

    out = Path(args.out)
    _check_out(out, Path(args.dataset_dir))
    stats = compute_stats(args.dataset_dir, args.split, args.labels)
    path = write_stats(stats, out)
    print(json.dumps(stats, indent=2, allow_nan=False) if args.json else summary_text(stats, path.parent))
    return 0
