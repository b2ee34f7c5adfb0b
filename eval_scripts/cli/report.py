"""`mis-bench report`: the paper's views of one or more runs (results JSON files): Table 3 (each
system's best configuration), Figure 2 (every configuration by dimension), Table 4 / Figure 4
(systems on one split with CIs, paired tests, radar), MSE, parse rates and scatters."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import (
    add_bootstrap,
    add_by,
    add_json,
    add_resample,
    add_seed,
    existing,
    print_json,
    say,
    shown,
)
from eval_scripts.cli.common_options import add_out, add_references, add_split
from eval_scripts.report.options import DEFAULT_TITLE, SCATTER_CHOICES, ReportOptions


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="report runs as the paper does: best configuration per system, configuration heatmap, "
        "comparison with CIs and paired tests (MD + HTML + JSON + PNG)",
        description=(
            "Read results JSON files (written by `mis-bench run` or the baselines; a folder means every "
            "results.json under it) and write report.md, report.html, report.json and PNG figures into --out. "
            "With --references the runs are (re)scored against those labels, the comparison gets its CIs "
            "from --comparison-bootstrap resamples and paired tests against the reference, and the scatters "
            "are drawn; without, the stored scores are shown and no paired test runs."
        ),
    )
    parser.add_argument("results", nargs="+", type=existing("any"), help="results JSON files or folders holding them")
    add_references(
        parser,
        "labels: a built dataset folder or a labels file (rescoring, paired tests, scatters) (default: none, "
        "the stored scores are shown)",
        required=False,
    )
    add_split(parser, "judge", "when --references is a dataset folder", every=False)
    add_bootstrap(parser, what="bootstrap resamples when rescoring every run (with --references)")
    add_bootstrap(
        parser,
        flag="--comparison-bootstrap",
        what="bootstrap resamples of the comparison's CIs and paired tests; needs --references",
    )
    parser.add_argument(
        "--reference",
        metavar="SYSTEM_OR_FILE",
        help="the comparison's reference: a model id (its best configuration) or one of the "
        "results files (default: the best configuration of the first system given)",
    )
    parser.add_argument(
        "--scatters",
        default=ReportOptions.scatters,
        choices=SCATTER_CHOICES,
        help="predicted-vs-gold scatters (with --references) of each system's best configuration "
        "(default), of all runs, or none",
    )
    parser.add_argument(
        "--raters",
        type=existing("file"),
        metavar="LABELS",
        help="per-rater labels (video_id, rater, dimension, score): add the model-as-one-more-rater section "
        "(each system's best configuration against each rater, leave one rater out, the Appendix B "
        "certification rule); needs --references (default: no such section)",
    )
    add_by(parser)
    add_resample(parser)
    add_seed(parser)
    parser.add_argument("--title", default=DEFAULT_TITLE, help="the report's title")
    add_out(
        parser,
        "folder",
        "the report's pages and figures (default: ./mis-bench-report)",
        default=Path("mis-bench-report"),
    )
    add_json(parser, what="the written paths")
    parser.set_defaults(func=report_command)


def report_command(args: argparse.Namespace) -> int:
    from eval_scripts.jobs.report_job import report_runs
    from eval_scripts.report import ReportOptions
    from mis_icc_metric.resampling_options import ResamplingOptions

    options = ReportOptions(
        title=args.title,
        reference=args.reference,
        comparison_bootstrap=args.comparison_bootstrap,
        seed=args.seed,
        resample=args.resample,
        scatters=args.scatters,
        by=args.by or (),
    )
    done = report_runs(
        args.results,
        args.out,
        options,
        references=args.references,
        split=args.split,
        raters=args.raters,
        resampling=ResamplingOptions(n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample),
    )
    _say_report(args, done.sources, done.written, rescored=done.rescored, synthetic=done.synthetic)
    return 0


def _say_report(args: argparse.Namespace, sources: list[str], written, *, rescored: bool, synthetic: bool) -> None:
    summary = {
        "synthetic": synthetic,
        "runs": sources,
        "markdown": str(written.markdown),
        "html": str(written.html),
        "json": str(written.json),
        "figures": [str(p) for p in written.figures],
    }
    if args.json:
        print_json(summary)
        return
    say(
        f"Report of {len(sources)} run(s): {shown(written.html)} (and {written.markdown.name}, {written.json.name}, "
        f"{len(written.figures)} figure(s))"
    )
    if not rescored:
        say("No --references: the comparison shows the stored CIs and has no paired tests.")
    if synthetic:
        from mis_bench_dataset.wording import SYNTHETIC_LINE

        say(SYNTHETIC_LINE)
