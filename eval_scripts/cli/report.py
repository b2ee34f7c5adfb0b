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
    from eval_scripts.report import ReportOptions, write_report
    from eval_scripts.report.about import about_references
    from eval_scripts.report.inputs import (
        load_results,
        one_fingerprint_per_build,
        read_report_references,
        rescore,
        results_files,
    )
    from mis_bench_dataset.toolkit.errors import DataError
    from mis_bench_dataset.toolkit.ownership import OutputFolder

    files = results_files(args.results)
    sources = [str(f) for f in files]
    extra_inputs = [path for path in (args.references, args.raters) if path]
    folder = OutputFolder(args.out, command="report", inputs=[*files, *extra_inputs])
    results_list = load_results(files)
    raters = _raters(args)
    references = None
    if args.references:
        references = read_report_references(args.references, args.split)
        if not references:
            raise DataError(
                f"the references have no gold scores for split {args.split!r}",
                where=str(args.references),
                hint="give a labelled build or a labels file",
            )
        results_list = one_fingerprint_per_build(results_list, args.references, args.split)
        results_list = rescore(
            results_list,
            references,
            n_bootstrap=args.bootstrap,
            seed=args.seed,
            sources=sources,
            resample=args.resample,
        )
    unscored = [source for source, results in zip(sources, results_list, strict=True) if not results.get("scores")]
    if unscored:
        raise DataError(
            f"{len(unscored)} run(s) have no scores",
            where=", ".join(unscored[:3]),
            hint="pass --references LABELS (a labelled build or a labels file) to score them",
        )
    options = ReportOptions(
        title=args.title,
        reference=args.reference,
        comparison_bootstrap=args.comparison_bootstrap,
        seed=args.seed,
        resample=args.resample,
        scatters=args.scatters,
        by=args.by or (),
        about=about_references(args.references, args.split),
    )
    written = write_report(results_list, folder, options, references=references, sources=sources, raters=raters)
    from eval_scripts.formats.data_names import results_synthetic

    synthetic = any(results_synthetic(results) for results in results_list)
    _say_report(args, sources, written, rescored=references is not None, synthetic=synthetic)
    return 0


def _raters(args: argparse.Namespace):
    """The per-rater labels of `--raters` (they need the gold scores of `--references`), or None."""
    if not args.raters:
        return None
    from mis_bench_dataset.release.labels import read_labels
    from mis_bench_dataset.toolkit.errors import UsageError

    if not args.references:
        raise UsageError("--raters needs --references (the gold scores)", hint="pass --references LABELS_OR_BUILD")
    return read_labels(args.raters)


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
