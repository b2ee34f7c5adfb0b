"""`mis-bench submit` (validate + package a results JSON, optionally push it to the Hub) and
`mis-bench leaderboard` (score a folder of submissions against hidden labels)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from eval_scripts.cli.args import (
    add_bootstrap,
    add_json,
    add_resample,
    add_seed,
    existing,
    positive_float,
    print_json,
    say,
    shown,
)
from eval_scripts.cli.common_options import add_out, add_references, add_split, require_resamples
from mis_bench_dataset.toolkit.numbers import pct

DEFAULT_MAX_MB = 64


def register(subparsers) -> None:
    submit = subparsers.add_parser(
        "submit",
        help="validate and package a results JSON as a leaderboard submission (optionally push it)",
        description=(
            "Check a results JSON against the submission schema (and, with --references, that it covers every "
            "video of the split and was made on that build), write a canonical copy named by its content hash "
            "into --out, and with --push open a pull request adding it to a Hub dataset of requests."
        ),
    )
    submit.add_argument("results", type=existing("file"), help="results JSON written by `mis-bench run`")
    add_references(
        submit,
        "built dataset folder the results were scored on: also check coverage of its --split and its fingerprint "
        "(default: none, the leaderboard checks them)",
        required=False,
        deprecated=("--dataset",),
        kind="folder",
    )
    add_split(submit, "judge", "whose coverage --references checks", every=False)
    submit.add_argument(
        "--name",
        help="the model's name on the board (default: the results' model, which for a local model folder is its "
        "path: give a name such as org/my-raft-7b)",
    )
    add_out(
        submit,
        "folder",
        "the package, named by its content hash (default: ./mis-bench-submissions)",
        default=Path("mis-bench-submissions"),
    )
    submit.add_argument(
        "--push",
        metavar="REPO",
        help="Hub dataset id of the leaderboard requests, e.g. org/requests: opens a pull request adding the "
        "package (default: none, nothing is uploaded)",
    )
    submit.add_argument("--token-env", default="HF_TOKEN", help="environment variable holding the Hub token")
    submit.add_argument("--max-mb", type=positive_float, default=DEFAULT_MAX_MB, help="size limit in MB")
    add_json(submit, what="the outcome")
    submit.set_defaults(func=submit_command)

    board = subparsers.add_parser(
        "leaderboard",
        help="score every submission in a folder against hidden labels; write CSV, JSON and an HTML page",
        description=(
            "Validate every *.json in SUBMISSIONS_DIR (schema, known videos, full coverage, value ranges, size, "
            "duplicates; a bad one is listed with its reasons and never stops the others), score each from its "
            "predictions against --references, and write leaderboard.csv, leaderboard.json and index.html to --out."
        ),
    )
    board.add_argument("submissions", nargs="?", type=existing("folder"), help="folder of submission JSON files")
    add_references(
        board,
        "hidden labels: a built dataset folder or a labels file (required with SUBMISSIONS_DIR; default: none)",
        required=False,
    )
    from eval_scripts.cli.leaderboard_authors import add_authors_arguments

    add_authors_arguments(board)
    add_split(board, "judge", "the submissions are scored on", every=False)
    add_bootstrap(board)
    add_resample(board)
    add_seed(board)
    board.add_argument("--max-mb", type=positive_float, default=DEFAULT_MAX_MB, help="per-submission size limit in MB")
    board.add_argument("--title", default="MIS-Bench leaderboard", help="the page's title")
    board.add_argument(
        "--hidden-labels",
        action="store_true",
        help="the references' labels are not public: publish only the ICCs of ranked entries (default: public "
        "labels, as MIS-Bench's are; the page says so)",
    )
    add_out(
        board,
        "folder",
        "leaderboard.csv, leaderboard.json and index.html (default: ./mis-bench-leaderboard)",
        default=Path("mis-bench-leaderboard"),
    )
    add_json(board, what="the leaderboard")
    board.set_defaults(func=leaderboard_command)


def _split_checks(dataset: Path, split: str) -> tuple[list[str], set[str], bool | None]:
    """(the split's video ids, its fingerprints, the build's synthetic flag) that `submit --references` checks."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    build = BuiltDataset.open(dataset, configs=("scoring",))
    return sorted({row["video_id"] for row in build.rows(split)}), build.fingerprints(split), build.synthetic


def _mark(entry: dict) -> str:
    from mis_bench_dataset.wording import SYNTHETIC_MARK

    return f" [{SYNTHETIC_MARK}]" if entry.get("synthetic") else ""


def _looks_like_a_path(model: str) -> bool:
    """A model name that is a local folder's path (absolute, `~`, `./`, or an existing folder), not a Hub id."""
    return model.startswith(("/", "~", "./", "../")) or Path(model).expanduser().is_dir()


def submit_command(args: argparse.Namespace) -> int:
    from eval_scripts.formats.submission import SplitCheck, SubmissionError, load_submission, package_submission

    max_bytes = int(args.max_mb * 1024 * 1024)
    checked = _split_checks(args.references, args.split) if args.references else (None, None, None)
    video_ids, fingerprints, synthetic = checked
    try:
        package = package_submission(
            args.results,
            args.out,
            max_bytes=max_bytes,
            check=SplitCheck(video_ids, args.split if args.references else None, fingerprints),
            model_name=args.name,
        )
    except SubmissionError as err:
        if not args.json:
            raise
        print_json({"ok": False, "file": str(args.results), "reasons": err.reasons})
        return err.exit_code
    obj = load_submission(package, max_bytes=max_bytes)
    outcome = {
        "ok": True,
        "file": str(args.results),
        "package": str(package),
        "pushed": None,
        "coverage_checked": video_ids is not None,
        # The build's flag when --dataset gives one; else the file's own claim.
        "synthetic": bool((obj.get("dataset") or {}).get("synthetic", False)) if synthetic is None else synthetic,
    }
    if args.push:
        from eval_scripts.formats.submission import push_submission

        outcome["pushed"] = push_submission(package, args.push, token=os.environ.get(args.token_env))
    if args.json:
        print_json(outcome)
    else:
        say(
            f"Valid submission ({shown(obj['system']['model'])}, {obj['setting']['modality']}, "
            f"{obj['setting']['prompt_style']}): {shown(package)}" + _mark(outcome)
        )
        if args.name is None and _looks_like_a_path(obj["system"]["model"]):
            say(
                f"mis-bench submit: warning: the model is named by its path {shown(obj['system']['model'])}; the "
                "board shows that name: give --name ORG/NAME",
                err=True,
            )
        if not outcome["coverage_checked"]:
            say("Coverage of the split not checked here (pass --dataset DIR); the leaderboard checks it.")
        if outcome["pushed"]:
            say(f"Opened a pull request on {args.push}: {outcome['pushed']}")
    return 0


def leaderboard_command(args: argparse.Namespace) -> int:
    from eval_scripts.cli.leaderboard_authors import authors_command, check_board_arguments

    require_resamples(args.bootstrap, "the leaderboard's comparison of each entry with the leader")
    if check_board_arguments(args):
        return authors_command(args)
    from eval_scripts.leaderboard import BoardRules, build_leaderboard, write_leaderboard
    from eval_scripts.leaderboard.outputs import LEADERBOARD_FILES, LEADERBOARD_WRITER
    from eval_scripts.leaderboard.references import read_board_references
    from mis_bench_dataset.toolkit.ownership import OutputFolder, check_not_overlapping
    from mis_icc_metric.resampling_options import ResamplingOptions

    # The page lands outside the folders it reads: leaderboard.json inside SUBMISSIONS would be read as a submission.
    check_not_overlapping(
        args.out, [p for p in (args.submissions, args.references) if p.is_dir()], command="leaderboard"
    )
    inputs = [*sorted(args.submissions.glob("*.json")), args.references]  # none may be overwritten
    folder = OutputFolder(args.out, command="leaderboard", inputs=inputs)
    folder.claim_all(LEADERBOARD_FILES, LEADERBOARD_WRITER)  # before the scoring: fail fast
    # The same reading as the Space's: a build's fingerprints and SYNTHETIC flag apply to every submission.
    references = read_board_references(args.references, args.split)
    board = build_leaderboard(
        args.submissions,
        references,
        split=args.split,
        resampling=ResamplingOptions(n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample),
        rules=BoardRules(max_bytes=int(args.max_mb * 1024 * 1024), labels_public=not args.hidden_labels),
    )
    files = write_leaderboard(board, folder, title=args.title)
    if args.json:
        print_json(board)
        return 0
    unranked = f", {len(board['unranked'])} unranked" if board["unranked"] else ""
    say(f"{len(board['entries'])} ranked{unranked}, {len(board['rejected'])} rejected -> {shown(files.html)}")
    from eval_scripts.leaderboard.page import rank_text

    for entry in board["entries"][:10]:
        overall = entry["scores"]["overall"].get("icc")
        say(
            f"  {rank_text(entry):>3}. {shown(entry['model'])} [{entry['modality']}, {entry['prompt_style']}] "
            f"overall ICC {pct(overall)}%" + _mark(entry)
        )
    for floor in board.get("floors", []):
        say(
            f"  floor {shown(floor['model'])} overall ICC {pct(floor['scores']['overall'].get('icc'))}% (not ranked)"
            + _mark(floor)
        )
    for entry in board["unranked"]:
        say(f"  unranked {shown(entry['file'])}: {shown(entry['reason'])}")
    for rejected in board["rejected"]:
        say(
            f"  rejected {shown(rejected['file'])}: {shown(rejected['reasons'][0])}"
            + (f" (+{len(rejected['reasons']) - 1} more)" if len(rejected["reasons"]) > 1 else "")
        )
    if board["synthetic"]:
        from mis_bench_dataset.wording import SYNTHETIC_LINE

        say(SYNTHETIC_LINE)
    return 0
