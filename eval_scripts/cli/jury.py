"""`mis-bench jury MEMBER [MEMBER ...] --method mean|median|stacked --out DIR`: several systems' predictions on the
same pairs combined into a new system (`eval_scripts.leaderboard.juries`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import (
    add_bootstrap,
    add_json,
    add_resample,
    add_seed,
    existing,
    positive_int,
    print_json,
    say,
)
from eval_scripts.cli.common_options import add_aliased, add_out, add_references, add_split, positional_or_flag

DEFAULT_OUT = "mis-bench-jury"


def register(subparsers) -> None:
    from eval_scripts.baselines.stacking import DEFAULT_JURY_FOLDS, DEFAULT_JURY_MISSING, JURY_METHODS, JURY_MISSING

    parser = subparsers.add_parser(
        "jury",
        help="combine several systems' predictions on the same pairs into a new system (mean, median, stacked)",
        description="A jury is a system like any other (predictions, results JSON: scored, reported, submittable), "
        "named as a combination of its members, compared with its best member (paired, on the same resamples; a "
        "CI or p-value below the reporting floor is withheld with its reason). stacked: per dimension weights that "
        "are non-negative and sum to one (least squares), fitted on the gold of the --fit runs' split, or "
        "cross-fitted by clinician folds on the scored split; never scored by weights that saw its gold, and on "
        "the members' scale by construction.",
    )
    parser.add_argument(
        "runs",
        nargs="*",
        type=existing("any"),
        metavar="MEMBER",
        help="the members: run folders, results JSON files, or predictions files (CSV/JSONL/JSON, long or wide, "
        "as score reads them; a predictions-file jury gets predictions and jury.json, no results.json), or give "
        "them as --predictions",
    )
    add_aliased(
        parser,
        "--predictions",
        nargs="+",
        type=existing("any"),
        metavar="MEMBER",
        default=None,
        help="the members, as a flag: the same as the positional MEMBERs (default: the positionals)",
    )
    parser.add_argument("--method", required=True, choices=JURY_METHODS, help="how the members' scores are combined")
    add_references(
        parser,
        "gold: a built dataset folder or a labels file (scoring, the comparison, stacked weights) "
        "(default: none, the jury is written unscored; stacked needs it)",
        required=False,
    )
    add_split(parser, "judge", "scored when --references is a build", every=False, default=None)
    parser.add_argument(
        "--fit",
        nargs="+",
        type=existing("any"),
        metavar="MEMBER",
        help="stacked only: each member's run (or predictions file of the same name) on other videos of the same "
        "build, matched to the members by identity in any order, to fit the weights on (default: cross-fitted by "
        "clinician folds on the scored split)",
    )
    parser.add_argument(
        "--missing",
        choices=JURY_MISSING,
        default=DEFAULT_JURY_MISSING,
        help="a pair some member did not answer: require-all leaves the jury's answer empty (counted as "
        "unanswered), available combines the members that answered (mean, median; the summary counts them)",
    )
    parser.add_argument(
        "--folds",
        type=positive_int,
        default=None,
        help=f"stacked without --fit only: clinician folds of the cross-fitting, at least 2 (default: "
        f"{DEFAULT_JURY_FOLDS})",
    )
    add_bootstrap(parser, what="bootstrap resamples for the jury's CIs and its comparison with its best member")
    add_resample(parser)
    add_seed(parser)
    add_out(parser, "folder", f"the jury's files (default: ./{DEFAULT_OUT})", default=Path(DEFAULT_OUT))
    add_json(parser, what="the jury's record")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.leaderboard.juries import JuryRecipe, run_jury
    from mis_icc_metric.resampling_options import ResamplingOptions

    result = run_jury(
        positional_or_flag(args, "runs", "predictions", where="MEMBER..."),
        args.out,
        JuryRecipe(args.method, missing=args.missing, fit=args.fit, folds=args.folds),
        references=args.references,
        split=args.split,
        resampling=ResamplingOptions(n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample),
    )
    if args.json:
        paths = {"results": None if result.results_path is None else str(result.results_path)}
        print_json({**result.record, **paths, "jury": str(result.jury_path)})
        return 0
    for line in summary_lines(result.record):
        say(line)
    written = [str(p) for p in (result.results_path, result.jury_path) if p is not None]
    say(f"written: {' and '.join(written)}")
    return 0


def summary_lines(record: dict) -> list[str]:
    """What the jury answered (and from how many members), its score and its comparison with its best member:
    every CI and p-value as the record gives it, or the reason it is withheld."""
    from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
    from mis_bench_dataset.toolkit.numbers import ci_pct, num, pct

    n_members = len(record["members"])
    answered = f"{record['name']}: {record['n_pairs_answered']} of {record['n_pairs']} pairs answered"
    if record.get("n_pairs_from_fewer_members"):
        counts = ", ".join(f"{n} by {k} members" for k, n in record["answered_by"].items())
        answered += f" ({counts}; {record['n_pairs_from_fewer_members']} from fewer than all {n_members})"
    lines = [answered]
    for key, why in record.get("dimensions_unanswered", {}).items():
        lines.append(f"no jury answer on {DIMENSION_BY_KEY[key].abbreviation}: {why}")
    scores = record.get("scores")
    if not scores:
        return lines
    if scores["value"] is None:
        by_dim = ", ".join(f"{DIMENSION_BY_KEY[k].abbreviation} {pct(v)}%" for k, v in scores["dimensions"].items())
        lines.append(f"mean ICC {scores['withheld']}; scored on the dimensions it answers: {by_dim or 'none'}")
    else:
        ci = ci_pct(scores["ci"]) if scores["ci"] else f"(CI withheld: {scores['withheld']})"
        lines.append(f"mean ICC {pct(scores['value'])}% {ci}")
    versus = record["versus_best_member"]
    unit = (versus["meta"].get("resampling") or {}).get("unit", "video")
    head = f"versus its best member ({versus['best_member']}; paired bootstrap resampling {unit}s)"
    mean = versus["mean_icc"]
    if mean.get("delta") is not None:
        lines.append(f"{head}: {_delta(mean, pct, ci_pct, num)}")
        return lines
    lines.append(f"{head}: no mean ICC difference ({mean['withheld']}); by dimension:")
    for key, entry in versus["dimensions"].items():
        lines.append(f"  {DIMENSION_BY_KEY[key].abbreviation}: {_delta(entry, pct, ci_pct, num)}")
    return lines


def _delta(entry: dict, pct, ci_pct, num) -> str:
    if entry.get("delta") is None:
        return entry.get("withheld") or "undefined"
    if entry.get("p_value") is None:
        return f"{pct(entry['delta'])} points; CI and p withheld: {entry.get('withheld')}"
    return f"{pct(entry['delta'])} points {ci_pct(entry['delta_ci'])}, p {num(entry['p_value'], 4)}"
