"""`mis-bench report`: Table-3-style table, MSE and parse rates, radar vs the human ceiling,
and predicted-vs-gold scatters for one run or a set of runs (results JSON files)."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import bounded_int, non_negative_int, print_json, say
from mis_bench_dataset.splits import SPLITS
from mis_icc_metric.bootstrap import MAX_BOOTSTRAP


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="report one or more runs: ICC table with CIs, MSE, parse rates, radar, scatters (MD + HTML + PNG)",
        description=(
            "Read results JSON files (written by `mis-bench run` or the baselines; a folder means every "
            "results.json under it) and write report.md, report.html and PNG figures into --out. "
            "With --references the runs are (re)scored against those labels and the scatters are drawn."
        ),
    )
    parser.add_argument("results", nargs="+", type=Path, help="results JSON files or folders holding them")
    parser.add_argument("--references", type=Path,
                        help="labels: a built dataset folder or a labels file (enables scatters; rescoring)")
    parser.add_argument("--split", default="test", choices=SPLITS,
                        help="split when --references is a dataset folder (default: test)")
    parser.add_argument("--bootstrap", type=bounded_int(0, MAX_BOOTSTRAP), default=1000,
                        help="bootstrap resamples when rescoring (default: 1000)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--title", default="MIS-Bench report")
    parser.add_argument("--out", type=Path, default=Path("mis-bench-report"), help="output folder")
    parser.add_argument("--json", action="store_true", help="print the written paths as JSON")
    parser.set_defaults(func=report_command)


def _results_files(paths: list[Path]) -> list[Path]:
    from mis_bench_dataset.errors import DataError

    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("results.json"))
            if not found:
                raise DataError("no results.json below this folder", where=str(path),
                                hint="give results JSON files or the folder `mis-bench run` wrote")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise DataError("no such file or folder", where=str(path), hint="check the path")
    return files


def report_command(args: argparse.Namespace) -> int:
    from eval_scripts.report import write_report
    from eval_scripts.submission import load_submission, predictions_mapping, validate_results
    from mis_bench_dataset.errors import DataError
    from mis_bench_dataset.outputs import OutputFolder

    files = _results_files(args.results)
    inputs = [*files, *([args.references] if args.references else [])]
    folder = OutputFolder(args.out, command="report", inputs=inputs)
    results_list = [validate_results(load_submission(f), source=str(f)) for f in files]
    references = None
    if args.references:
        from mis_icc_metric import score_predictions
        from mis_icc_metric.predictions_io import read_references
        from mis_icc_metric.scoring import json_safe

        references = read_references(args.references, split=args.split)
        for results in results_list:
            predictions = {k: v for k, v in predictions_mapping(results).items() if k in references}
            results["scores"] = json_safe(score_predictions(predictions, references, n_bootstrap=args.bootstrap,
                                                            seed=args.seed))
    unscored = [str(f) for f, r in zip(files, results_list) if not r.get("scores")]
    if unscored:
        raise DataError(f"{len(unscored)} run(s) have no scores", where=", ".join(unscored[:3]),
                        hint="pass --references LABELS (a labelled build or a labels file) to score them")
    written = write_report(results_list, folder, references=references, title=args.title)
    summary = {"runs": [str(f) for f in files], "markdown": str(written.markdown), "html": str(written.html),
               "figures": [str(written.radar), *map(str, written.scatters)]}
    if args.json:
        print_json(summary)
    else:
        say(f"Report of {len(files)} run(s): {written.html} (and {written.markdown.name}, "
              f"{1 + len(written.scatters)} figure(s))")
    return 0
