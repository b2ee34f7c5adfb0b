"""`mis-bench report`: Table-3-style table, MSE and parse rates, radar vs the human ceiling,
and predicted-vs-gold scatters for one run or a set of runs (results JSON files)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


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
    parser.add_argument("--split", default="test", help="split when --references is a dataset folder (default: test)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples when rescoring (default: 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--title", default="MIS-Bench report")
    parser.add_argument("--out", type=Path, default=Path("mis-bench-report"), help="output folder")
    parser.add_argument("--json", action="store_true", help="print the written paths as JSON")
    parser.set_defaults(func=report_command)


def _results_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.rglob("results.json"))
            if not found:
                raise FileNotFoundError(f"{path}: no results.json below this folder")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return files


def report_command(args: argparse.Namespace) -> int:
    from eval_scripts.report import write_report
    from eval_scripts.submission import SubmissionError, load_submission, predictions_mapping, validate_results

    try:
        files = _results_files(args.results)
        results_list = [validate_results(load_submission(f), source=str(f)) for f in files]
    except (FileNotFoundError, SubmissionError) as err:
        print(f"mis-bench report: {err}", file=sys.stderr)
        return 2
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
        print("mis-bench report: no scores in " + ", ".join(unscored) + "; pass --references LABELS", file=sys.stderr)
        return 2
    written = write_report(results_list, args.out, references=references, title=args.title)
    summary = {"runs": [str(f) for f in files], "markdown": str(written.markdown), "html": str(written.html),
               "figures": [str(written.radar), *map(str, written.scatters)]}
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"Report of {len(files)} run(s): {written.html} (and {written.markdown.name}, "
              f"{1 + len(written.scatters)} figure(s))")
    return 0
