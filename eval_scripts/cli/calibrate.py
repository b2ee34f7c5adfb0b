"""`mis-bench calibrate`: a judge's scores mapped to the expert scale, with split-conformal intervals.

Top-level imports stay light so `mis-bench --help` is fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import (
    add_bootstrap,
    add_confidence,
    add_json,
    add_resample,
    add_seed,
    existing,
    print_json,
    probability,
    say,
    shown,
)
from eval_scripts.cli.common_options import add_out, add_predictions, add_references, warn_deprecated
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
from mis_bench_dataset.splits import SPLITS
from mis_bench_dataset.toolkit.numbers import num, pct, signed
from mis_bench_dataset.wording import RESEARCH_USE
from mis_icc_metric.calibrator_file import (
    CALIBRATION_METHODS,
    DEFAULT_CALIBRATION_METHOD,
    DEFAULT_CALIBRATION_SPLIT,
    DEFAULT_COVERAGE,
    DEFAULT_FIT_SPLIT,
)

# The file `--apply` writes into --out: the predictions' name with this ending.
APPLIED_SUFFIX = "-calibrated.csv"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="calibrate a judge's scores to the expert scale, with a conformal interval per video",
        description="Fit a monotone map from the judge's score to the gold per dimension on one split, "
        "split-conformal intervals on a second, and write every other split calibrated with its interval "
        f"and a before/after summary; or --apply a saved calibrator to new predictions. {RESEARCH_USE.capitalize()}.",
    )
    add_predictions(
        parser,
        "predictions file (the forms score reads) covering the fit, calibration and evaluated splits; "
        "with --apply: new predictions, no gold needed",
    )
    add_references(
        parser,
        "built dataset folder (its splits and gold); required unless --apply (default: none)",
        required=False,
        kind="folder",
    )
    parser.add_argument(
        "--apply",
        type=existing("file"),
        default=None,
        metavar="CALIBRATOR",
        help=f"apply this calibrator.json to --predictions instead of fitting one, writing PREDICTIONS{APPLIED_SUFFIX} "
        "into --out (default: fit one)",
    )
    parser.add_argument(
        "--allow-in-sample",
        action="store_true",
        help="with --apply: calibrate videos the calibrator was fitted or calibrated on (refused by default: "
        "their intervals carry no coverage guarantee)",
    )
    parser.add_argument(
        "--method", choices=CALIBRATION_METHODS, default=DEFAULT_CALIBRATION_METHOD, help="the monotone map"
    )
    parser.add_argument(
        "--coverage", type=probability, default=DEFAULT_COVERAGE, help="the intervals' nominal coverage"
    )
    parser.add_argument("--fit-split", choices=SPLITS, default=DEFAULT_FIT_SPLIT, help="the split the map is fitted on")
    parser.add_argument(
        "--calibration-split",
        choices=SPLITS,
        default=DEFAULT_CALIBRATION_SPLIT,
        help="the split the conformal residuals come from",
    )
    add_bootstrap(parser, what="resamples for the summary's CIs (each refits the map)")
    add_seed(parser)
    add_resample(parser)
    add_confidence(parser)
    add_out(
        parser,
        "folder",
        "calibrator.json, the calibrated predictions and the summary (default: ./calibration); with --apply, "
        f"PREDICTIONS{APPLIED_SUFFIX} (default: the predictions' folder)",
    )
    add_json(parser, what="the summary")
    parser.set_defaults(func=run_calibrate, command_prog=parser.prog)


def _ci(entry: dict, show) -> str:
    """`value [low, high]` with `show` formatting each number; the value alone without a CI (`value [-]` when the
    CI was withheld: the reason is printed under the table)."""
    ci = entry["ci"]
    if ci:
        return f"{show(entry['value'])} [{show(ci[0])}, {show(ci[1])}]"
    return f"{show(entry['value'])} [-]" if entry.get("withheld") else show(entry["value"])


def _withheld_lines(summary: dict) -> list[str]:
    """The CIs withheld (the rule's reason) and the undefined resamples, one line per distinct text with the
    dimensions it holds for."""
    texts: dict[str, list[str]] = {}
    for key, entry in summary["dimensions"].items():
        cells = [cell for side in ("before", "after") for cell in entry.get(side, {}).values()]
        reasons = sorted({cell["withheld"] for cell in cells if cell.get("withheld")})
        facts = entry.get("ci_resamples") or {}
        undefined = facts.get("undefined", 0)
        said = any("undefined" in reason for reason in reasons)
        count = (
            f"{undefined} of {facts.get('n_resamples')} resamples undefined (left out)"
            if undefined and not said
            else ""
        )
        text = "; ".join(filter(None, [count, *(f"CI withheld: {reason}" for reason in reasons)]))
        if text:
            texts.setdefault(text, []).append(DIMENSION_BY_KEY[key].abbreviation)
    every = len(summary["dimensions"])
    return [
        f"  {'every dimension' if len(dims) == every > 1 else ', '.join(dims)}: {text}" for text, dims in texts.items()
    ]


def _yardstick_lines(summary: dict) -> list[str]:
    """The no-judge interval beside the judge's, and the coverage spread over clinicians (the worst named)."""
    lines = []
    pooled = summary["no_judge"]
    if pooled["n"]:
        wider = ", ".join(DIMENSION_BY_KEY[d].abbreviation for d in pooled["judge_not_narrower"])
        lines.append(
            "No judge (the fit split's mean +- the same conformal quantile): mean width "
            f"{num(pooled['mean_width'], 2)}, coverage {pct(pooled['coverage'])}%; "
            + (f"the judge's intervals are not narrower on {wider}" if wider else "the judge's are narrower on all")
        )
    spread = summary["by_clinician"]
    if spread["n_clinicians"]:
        worst = ", ".join(f"{w['clinician']} {pct(w['coverage'])}% (n {w['n']})" for w in spread["worst"])
        lines.append(
            f"By clinician ({spread['n_clinicians']}): coverage min {pct(spread['min'])}%, median "
            f"{pct(spread['median'])}%, max {pct(spread['max'])}%; {spread['below']['n']} under "
            f"{pct(spread['below']['threshold'])}%; worst: {worst}"
        )
    return lines


def format_summary(split: str, summary: dict) -> str:
    """Per dimension before -> after (ICC in %, MAE and bias in points, with CIs), coverage and width; then
    the pooled coverage, by time point and stimulus, and the risk-coverage table."""
    lines = [f"Split {split!r}: {summary['method']} calibration, intervals at {pct(summary['coverage_nominal'])}%"]
    plan = summary.get("resampling")
    lines.append(
        "CIs: "
        + (f"{plan['n_resamples']:,} resamples, {plan['method']}; {plan['refit']}" if plan else "none (--bootstrap 0)")
    )
    lines.append(
        f"{'dim':<6} {'ICC(3,1) before -> after':<36} {'ICC(A,1) before -> after':<36} "
        f"{'MAE before -> after':<34} {'bias before -> after':<34} {'cover %':>7} {'width':>6} {'no-judge':>8} "
        f"{'n':>4}"
    )
    for key, entry in summary["dimensions"].items():
        if "before" not in entry:
            lines.append(f"{DIMENSION_BY_KEY[key].abbreviation:<6} {entry.get('note', '')}")
            continue
        cells = []
        for stat, show in (("icc3_1", pct), ("icc2_1", pct), ("mae", num), ("bias", signed)):
            cells.append(f"{_ci(entry['before'][stat], show)} -> {_ci(entry['after'][stat], show)}")
        lines.append(
            f"{DIMENSION_BY_KEY[key].abbreviation:<6} {cells[0]:<36} {cells[1]:<36} {cells[2]:<34} {cells[3]:<34} "
            f"{pct(entry['coverage']):>7} {num(entry['mean_width'], 2):>6} "
            f"{num((entry.get('no_judge') or {}).get('width'), 2):>8} {entry['n_evaluated']:>4}"
        )
    withheld = _withheld_lines(summary)
    if withheld:
        lines.append("CIs (the reporting floor's rule):")
        lines.extend(withheld)
    pooled = summary["pooled"]
    lines.append(
        f"Coverage pooled over dimensions: {pct(pooled['coverage'])}% of {pooled['n']} pairs "
        f"(nominal {pct(summary['coverage_nominal'])}%), mean width {num(pooled['mean_width'], 2)}"
    )
    lines.extend(_yardstick_lines(summary))
    for field, title in (("by_time_point", "time point"), ("by_stimulus", "stimulus")):
        groups = ", ".join(
            f"{group} {pct(cell['coverage'])}% (w {num(cell['mean_width'], 2)}, n {cell['n']})"
            for group, cell in summary[field].items()
        )
        lines.append(f"By {title}: {groups}")
    lines.append("Risk-coverage (intervals at most W wide: share of pairs, their MAE and coverage):")
    for row in summary["risk_coverage"]:
        lines.append(
            f"  W <= {row['max_width']:.2f}: {pct(row['share'])}% of pairs, MAE {num(row['mae'])}, "
            f"coverage {pct(row['coverage'])}%"
        )
    return "\n".join(lines)


def _applied_file(args: argparse.Namespace) -> Path:
    """Where `--apply` writes: PREDICTIONS-calibrated.csv in the --out folder (default: beside the predictions).
    An --out naming a .csv or .jsonl file that is not a folder is the earlier usage, kept with a deprecation line."""
    name = args.predictions.stem + APPLIED_SUFFIX
    if args.out is None:
        return args.predictions.with_name(name)
    if args.out.suffix.lower() in (".csv", ".jsonl") and not args.out.is_dir():
        warn_deprecated(args.command_prog, "--out FILE with --apply", "--out FOLDER")
        return args.out
    return args.out / name


def run_calibrate(args: argparse.Namespace) -> int:
    from mis_bench_dataset.toolkit.errors import UsageError
    from mis_icc_metric.calibration import INTENDED_USE

    text = (lambda *_, **__: None) if args.json else say
    if args.apply is not None:
        from eval_scripts.jobs.calibration import apply_calibrator

        result = apply_calibrator(
            args.apply, args.predictions, _applied_file(args), allow_in_sample=args.allow_in_sample
        )
        if result["synthetic"]:
            from mis_bench_dataset.wording import SYNTHETIC_LINE

            text(SYNTHETIC_LINE)
        text(
            f"Calibrated {result['n_calibrated']} of {result['n_predictions']} predictions with {shown(args.apply)} "
            f"({result['method']}, intervals at {pct(result['coverage'])}%): wrote {shown(result['file'])}"
        )
        halves, bare = list(result["half_widths"].values()), list(result["no_judge_half_widths"].values())
        if halves and bare:
            text(
                f"Interval half-widths {num(min(halves), 2)} to {num(max(halves), 2)} points by dimension; "
                f"without a judge (the fit split's mean) {num(min(bare), 2)} to {num(max(bare), 2)}."
            )
        text(f"Intended use: {INTENDED_USE}.")
        for warning in result["warnings"]:
            text(f"warning: {warning}")
        for note in result["notes"]:
            text(f"note: {note}")
        if args.json:
            print_json(result)
        return 0
    if args.references is None:
        raise UsageError("--references is required to fit a calibrator", hint="give a build folder, or --apply")
    from eval_scripts.jobs.calibration import CalibrationSplits, calibrate
    from mis_icc_metric.resampling_options import ResamplingOptions

    result = calibrate(
        args.predictions,
        args.references,
        args.out or Path("calibration"),
        method=args.method,
        coverage=args.coverage,
        splits=CalibrationSplits(fit=args.fit_split, calibration=args.calibration_split),
        resampling=ResamplingOptions(
            n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample, confidence=args.confidence
        ),
    )
    if result["synthetic"]:
        from mis_bench_dataset.wording import SYNTHETIC_LINE

        text(SYNTHETIC_LINE)
    calibrator = result["calibrator"]
    text(
        f"Calibrated {shown(args.predictions)} on {shown(args.references)}: {calibrator['method']} map fitted on "
        f"{args.fit_split!r}, conformal intervals from {args.calibration_split!r}."
    )
    text(f"Intended use: {INTENDED_USE}.")
    for split, summary in result["evaluated"].items():
        text("")
        text(format_summary(split, summary))
    for warning in result["warnings"]:
        text(f"warning: {warning}")
    for note in result["notes"]:
        text(f"note: {note}")
    text("")
    for name, path in result["files"].items():
        text(f"wrote {name}: {shown(path)}")
    for path in result["removed"]:
        text(f"removed {shown(path)} (an earlier run's, not written by this one)")
    if args.json:
        print_json(result)
    return 0
