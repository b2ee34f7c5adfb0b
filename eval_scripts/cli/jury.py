"""`mis-bench jury RUN [RUN ...] --method mean|median|stacked --out DIR`: several systems' predictions on the same
pairs combined into a new system (`eval_scripts.leaderboard.juries`)."""

from __future__ import annotations

import argparse

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

DEFAULT_OUT = "mis-bench-jury"


def register(subparsers) -> None:
    from eval_scripts.baselines.stacking import DEFAULT_JURY_FOLDS, DEFAULT_JURY_MISSING, JURY_METHODS, JURY_MISSING

    parser = subparsers.add_parser(
        "jury",
        help="combine several systems' predictions on the same pairs into a new system (mean, median, stacked)",
        description="A jury is a system like any other (predictions, results JSON: scored, reported, submittable), "
        "named as a combination of its members, compared with its best member (paired, on the same resamples). "
        "stacked: per dimension non-negative weights (scipy.optimize.nnls, no intercept) fitted on the gold of "
        "the --fit runs' split, or cross-fitted by clinician folds on the scored split; never scored by weights "
        "that saw its gold.",
    )
    parser.add_argument("runs", nargs="+", type=existing("any"), help="the members: run folders or results JSON files")
    parser.add_argument("--method", required=True, choices=JURY_METHODS, help="how the members' scores are combined")
    parser.add_argument(
        "--references",
        type=existing("any"),
        help="gold: a built dataset folder or a labels file (scoring, the comparison, stacked weights) "
        "(default: none, the jury is written unscored; stacked needs it)",
    )
    parser.add_argument(
        "--fit",
        nargs="+",
        type=existing("any"),
        metavar="RUN",
        help="stacked: the members' runs on another split of the same build, in the same order, to fit the "
        "weights on (default: cross-fitted by clinician folds on the scored split)",
    )
    parser.add_argument(
        "--missing",
        choices=JURY_MISSING,
        default=DEFAULT_JURY_MISSING,
        help="a pair some member did not answer: require-all leaves the jury's answer empty (counted as "
        "unanswered), available combines the members that answered (mean, median)",
    )
    parser.add_argument(
        "--folds", type=positive_int, default=DEFAULT_JURY_FOLDS, help="clinician folds of a cross-fitted stacked jury"
    )
    add_bootstrap(parser, what="bootstrap resamples for the jury's CIs and its comparison with its best member")
    add_resample(parser)
    add_seed(parser)
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default: ./{DEFAULT_OUT})")
    add_json(parser, what="the jury's record")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.leaderboard.juries import run_jury
    from mis_bench_dataset.toolkit.numbers import ci_pct, pct

    result = run_jury(
        args.runs,
        args.out,
        method=args.method,
        references=args.references,
        fit=args.fit,
        missing=args.missing,
        folds=args.folds,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        resample=args.resample,
    )
    if args.json:
        print_json({**result.record, "results": str(result.results_path)})
        return 0
    say(f"{result.name}: {result.record['n_pairs_answered']} of {result.record['n_pairs']} pairs answered")
    scores = result.results.get("scores")
    if scores:
        say(f"mean ICC {pct(scores['mean_icc'])}% {ci_pct(scores.get('mean_icc_ci'))}")
        versus = result.record["versus_best_member"]
        mean = versus["mean_icc"]
        say(
            f"versus its best member ({versus['best_member']}): {pct(mean['delta'])} points "
            f"{ci_pct(mean['delta_ci'])}, p {mean['p_value']:.4f} ({versus['meta']['ci_method']})"
        )
    say(f"written: {result.results_path} and {result.jury_path.name}")
    return 0
