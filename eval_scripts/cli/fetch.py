"""`mis-bench fetch [--out DIR] [--features subset10]`: the authors' public files at their pinned commits,
each verified against the provenance table before it is published (`mis_bench_dataset.release.fetch`)."""

from __future__ import annotations

import argparse
import shlex

from eval_scripts.cli.args import add_json, print_json, say, seconds, shown
from eval_scripts.cli.common_options import add_out


def register(subparsers) -> None:
    from mis_bench_dataset.release.fetch import BASE_URL_ENV, DEFAULT_BASE_URL, DEFAULT_TIMEOUT_S
    from mis_bench_dataset.release.provenance import FEATURE_SAMPLES

    parser = subparsers.add_parser(
        "fetch",
        help="download the authors' public files (gold, transcripts, Table 4 predictions), verified by SHA-256",
        description="Download the authors' public files from their repository at the pinned commits: coding.csv "
        "(the gold of the 996 videos), fis_transcript.csv and the three Table 4 prediction files, and with "
        "--features subset10 the public feature sample MIS-Bench_subset10/. Each file is published only when its "
        "SHA-256 is the provenance table's; files already there with that hash are kept; an interrupted download "
        "resumes. The folder is what `mis-bench reproduce --from` and `mis-bench build --authors` read.",
    )
    add_out(
        parser,
        "folder",
        "the authors' files (default: authors/ in the toolkit's cache, $MIS_BENCH_CACHE or ~/.cache/mis-bench)",
    )
    parser.add_argument(
        "--features",
        choices=tuple(FEATURE_SAMPLES),
        help="also fetch this public feature sample (default: none)",
    )
    parser.add_argument(
        "--base-url",
        help=f"where files are requested, as BASE/COMMIT/PATH (default: ${BASE_URL_ENV}, else {DEFAULT_BASE_URL})",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="seconds to wait for a connection and for each read",
    )
    add_json(parser, what="what was fetched, kept and verified")
    parser.set_defaults(
        func=run,
        interrupted_note="the files already verified are kept, and the partial download for the next "
        "mis-bench fetch to resume",
    )


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.release.fetch import fetch_authors_files

    report = fetch_authors_files(args.out, features=args.features, base_url=args.base_url, timeout=args.timeout)
    if args.json:
        print_json(report.to_dict())
        return 0
    say(report.summary())
    folder = shown(shlex.quote(str(report.out_dir)))
    say(f"next: mis-bench reproduce table4 --from {folder}   |   mis-bench build --authors {folder}")
    return 0
