"""`mis-bench leaderboard --from-authors DIR`: the real leaderboard page from the authors' public files
(`eval_scripts.leaderboard.authors`), written as Markdown (and its data as JSON) into --out."""

from __future__ import annotations

import argparse
import shlex

from eval_scripts.cli.args import existing, print_json, say, shown


def add_authors_arguments(board: argparse.ArgumentParser) -> None:
    board.add_argument(
        "--from-authors",
        metavar="DIR",
        type=existing("folder"),
        help="instead of SUBMISSIONS_DIR: the real leaderboard page from the authors' public files in DIR (coding.csv, "
        "the three Table 4 prediction files; the transcripts from --transcripts or DIR/fis_transcript.csv), written "
        "as real-leaderboard.md and .json into --out (default: none, score SUBMISSIONS_DIR)",
    )
    board.add_argument(
        "--transcripts",
        type=existing("file"),
        help="with --from-authors: the authors' transcripts (fis_transcript.csv; default: DIR/fis_transcript.csv)",
    )


def check_board_arguments(args: argparse.Namespace) -> bool:
    """True for --from-authors; a usage error when neither it nor SUBMISSIONS_DIR with --references is given."""
    from mis_bench_dataset.toolkit.errors import UsageError

    if args.from_authors is not None:
        if args.submissions is not None or args.references is not None:
            raise UsageError(
                "--from-authors builds its own board", hint="drop SUBMISSIONS_DIR and --references, or --from-authors"
            )
        return True
    if args.submissions is None or args.references is None:
        raise UsageError(
            "give SUBMISSIONS_DIR and --references (or --from-authors DIR)", hint="see `mis-bench leaderboard --help`"
        )
    return False


def authors_command(args: argparse.Namespace) -> int:
    from eval_scripts.leaderboard.authors import JSON_NAME, PAGE_NAME, WRITER, authors_leaderboard, write_authors_page
    from mis_bench_dataset.toolkit.ownership import OutputFolder, check_not_overlapping

    check_not_overlapping(args.out, [args.from_authors], command="leaderboard")
    inputs = [p for p in (args.from_authors, args.transcripts) if p is not None]
    folder = OutputFolder(args.out, command="leaderboard", inputs=inputs)
    folder.claim_all([PAGE_NAME, JSON_NAME], WRITER)  # before the work: fail fast
    say("Building the paper-rows and video-level text builds and fitting the baselines on each ...", err=True)
    doc = authors_leaderboard(args.from_authors, args.transcripts, n_bootstrap=args.bootstrap, seed=args.seed)
    command = ["mis-bench", "leaderboard", "--from-authors", str(args.from_authors)]
    command += ["--transcripts", str(args.transcripts)] if args.transcripts else []
    command += ["--bootstrap", str(args.bootstrap), "--seed", str(args.seed), "--out", "DIR"]
    page_path, json_path = write_authors_page(doc, folder, shlex.join(command))
    if args.json:
        print_json(doc)
        return 0
    say(f"Real leaderboard page: {shown(page_path)}  (and {json_path.name})")
    return 0
