"""`mis-bench build RELEASE_DIR [...]`: the Hub-ready Parquet folder plus card and build report."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import add_json, existing, non_negative_int, positive_float, print_json, say
from eval_scripts.cli.common_options import add_out
from mis_bench_dataset.dataset.format import DEFAULT_BUILD_DIR
from mis_bench_dataset.release.limits import MAX_RECORDING_SECONDS
from mis_bench_dataset.splits import PAPER_ROWS, PAPER_ROWS_SEED, SPLIT_BY


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "build",
        help="build the Hub-ready dataset folder (Parquet + dataset card) from a release tree",
        description="Read and validate a MIS-Bench release tree and write the `features` and "
        "`scoring` configs as Parquet with a dataset card, loadable with "
        "datasets.load_dataset(OUT, 'scoring', split='test'). Problems (missing or broken files) "
        "are listed in OUT/build_report.json; --strict fails on any.",
    )
    parser.add_argument(
        "release_dir",
        nargs="?",
        default=None,
        type=existing("folder", as_path=False),
        help="release folder (optional when --transcripts gives a text-only build)",
    )
    parser.add_argument(
        "--labels",
        type=existing("file", as_path=False),
        help="labels CSV: per-rater long (video_id,rater,dimension,score) or wide (e.g. the authors' coding.csv; "
        "values not at one decimal are rounded half up and counted) (default: none, an unlabelled build)",
    )
    parser.add_argument(
        "--transcripts",
        type=existing("file", as_path=False),
        help="transcripts CSV (video,transcript); supplies the text modality (default: none, the release's own)",
    )
    parser.add_argument(
        "--authors",
        nargs="?",
        const="",
        metavar="DIR",
        help="a folder `mis-bench fetch` wrote (no DIR: its default folder): the same build as --transcripts "
        "DIR/fis_transcript.csv --labels DIR/coding.csv, the card citing the authors' repository, commit and path "
        "(default: none)",
    )
    add_out(parser, "folder", f"the build (default: ./{DEFAULT_BUILD_DIR})", default=Path(DEFAULT_BUILD_DIR))
    parser.add_argument(
        "--split-by",
        "--split-scheme",
        dest="split_by",
        choices=SPLIT_BY,
        default="video",
        help="the 80/10/10 split scheme: video (default, the paper's stated rule), clinician, or "
        f"{PAPER_ROWS} (the authors' Table 4 row split, which LEAKS: a test video's other dimensions are "
        "in training; only to reproduce the paper)",
    )
    parser.add_argument(
        "--seed",
        type=non_negative_int,
        default=None,
        help=f"split seed (default: 0; {PAPER_ROWS_SEED} with {PAPER_ROWS}, the authors' seed)",
    )
    parser.add_argument("--strict", action="store_true", help="fail (exit 1) on any problem")
    parser.add_argument(
        "--max-duration",
        type=positive_float,
        default=MAX_RECORDING_SECONDS,
        metavar="SECONDS",
        help="longest recording an array may hold; a longer one is reported and never decompressed "
        f"(default {MAX_RECORDING_SECONDS:g} s = two hours)",
    )
    parser.add_argument(
        "--allow-label-problems",
        action="store_true",
        help="build even when the labels file has problems (they are still reported)",
    )
    parser.add_argument(
        "--push-to-hub",
        metavar="REPO",
        help="then upload the folder to this Hub dataset repo (default: none, nothing is uploaded)",
    )
    parser.add_argument("--private", action="store_true", help="with --push-to-hub: create a private repo")
    add_json(parser, what="the build report")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.builder.builder import BuildChecks, SplitPlan, build_dataset
    from mis_bench_dataset.toolkit.errors import UsageError

    if args.authors is not None:
        from mis_bench_dataset.release.fetch import authors_inputs

        if args.transcripts or args.labels:
            raise UsageError(
                "--authors gives the transcripts and the labels itself", hint="drop --transcripts / --labels"
            )
        args.transcripts, args.labels = (str(path) for path in authors_inputs(args.authors or None))
    if args.release_dir is None and args.transcripts is None:
        raise UsageError("nothing to build", hint="give RELEASE_DIR, --transcripts CSV, --authors DIR, or both")
    report = build_dataset(
        args.release_dir,
        args.out,
        labels=args.labels,
        transcripts=args.transcripts,
        split=SplitPlan(split_by=args.split_by, seed=args.seed),
        checks=BuildChecks(
            strict=args.strict, allow_label_problems=args.allow_label_problems, max_seconds=args.max_duration
        ),
    )
    if args.json:
        print_json(report.to_dict())
    else:
        say(report.summary())
    if args.push_to_hub:
        from mis_bench_dataset.builder.publish import push_to_hub

        url = push_to_hub(report.out_dir, args.push_to_hub, private=args.private)
        say(f"pushed to {url}")
    return 0
