"""`mis-bench stats DATASET_DIR|--references DIR [--split NAME|all] [--labels FILE] [--out DIR] [--json]`: the paper's
dataset statistics (Table 6, Figures 5-6, Table 2 ceiling) of a built folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import add_json, existing, print_json, say
from eval_scripts.cli.common_options import add_out, add_references, add_split, positional_or_flag

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
    parser.add_argument(
        "dataset_dir",
        nargs="?",
        type=existing("folder", as_path=False),
        help="folder written by `mis-bench build` (with labels), or give it as --references",
    )
    add_references(
        parser,
        "the same folder as DATASET_DIR, as a flag (default: DATASET_DIR)",
        required=False,
        kind="folder",
        as_path=False,
    )
    add_split(parser, "sample", "to describe")
    parser.add_argument(
        "--labels",
        type=existing("file", as_path=False),
        help="per-rater labels CSV (video_id,rater,dimension,score) for the human ceiling (default: none, no ceiling)",
    )
    add_out(parser, "folder", f"stats.json and the figures (default: ./{DEFAULT_OUT})", default=Path(DEFAULT_OUT))
    add_json(parser, what="stats.json")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.builder.stats import compute_stats, summary_text, write_stats
    from mis_bench_dataset.toolkit.ownership import OutputFolder, check_not_overlapping

    args.dataset_dir = positional_or_flag(args, "dataset_dir", "references", where="DATASET_DIR")
    check_not_overlapping(args.out, [args.dataset_dir], command="stats")
    folder = OutputFolder(args.out, command="stats", inputs=[p for p in (args.labels,) if p])
    stats = compute_stats(args.dataset_dir, args.split, args.labels)
    path = write_stats(stats, folder)
    if args.json:
        print_json(stats)
    else:
        say(summary_text(stats, Path(path).parent))
    return 0
