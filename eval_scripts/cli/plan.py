"""`mis-bench plan icc|difference|labels`: how many videos, clinicians or expert labels an evaluation needs."""

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
    positive_float,
    positive_int,
    probability,
    shown,
)
from eval_scripts.cli.common_options import add_out, add_predictions, add_references, add_split, require_resamples
from mis_bench_dataset.dimensions import DEFAULT_VIDEOS_PER_CLINICIAN, N_CLINICIANS, N_VIDEOS
from mis_bench_dataset.wording import RESEARCH_USE

TARGETS = ("icc", "difference", "labels")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="sample size from a pilot run: videos and clinicians for an ICC CI half-width or to tell two judges "
        "apart, expert labels for an `estimate` CI",
        description="icc: videos (clinicians) for a judge's ICC(3,1) CI of --half-width; difference: to detect "
        "an ICC difference of --difference between --predictions and --compare at --power and --level; labels: "
        "expert labels for a PPI++ mean's CI of --half-width score points. By resampling the pilot (icc, "
        "difference; the headline) with Bonett (2002) beside it, for a study of --videos-per-clinician videos per "
        "clinician and at most --clinicians clinicians, as totals and as how many more than the pilot. "
        f"{RESEARCH_USE.capitalize()}.",
    )
    parser.add_argument("target", choices=TARGETS, help="what to plan for")
    add_predictions(parser, "the pilot's predictions (any form `score` reads)")
    add_references(parser, "the pilot's gold: a built dataset folder or a labels file (any form `score` reads)")
    add_split(parser, "sample", "when --references is a folder")
    parser.add_argument(
        "--compare",
        type=existing("file"),
        default=None,
        help="difference: the second judge's pilot predictions (default: none; difference needs it)",
    )
    parser.add_argument(
        "--half-width",
        type=positive_float,
        default=None,
        help="icc: the CI half-width wanted, in ICC units (0.1: ICC +/- 0.1); labels: in score points "
        "(default: none; icc and labels need it)",
    )
    parser.add_argument(
        "--difference",
        type=positive_float,
        default=None,
        help="difference: the ICC difference to detect (default: none; difference needs it)",
    )
    parser.add_argument("--power", type=probability, default=0.8, help="difference: the power wanted (default: 0.8)")
    parser.add_argument(
        "--level", type=probability, default=0.05, help="difference: the two-sided test's level (default: 0.05)"
    )
    parser.add_argument(
        "--judged",
        type=positive_int,
        default=None,
        help="labels: videos the judge will score (default: as many as in --predictions)",
    )
    _add_design(parser)
    add_confidence(parser)
    add_bootstrap(parser, what="resamples at each size tried (icc, difference)")
    add_resample(parser)
    add_seed(parser)
    add_out(parser, "file", "also write the result as JSON there (default: none)")
    add_json(parser, what="the result")
    parser.set_defaults(func=run)


def _add_design(parser: argparse.ArgumentParser) -> None:
    """`--videos-per-clinician` and `--clinicians`: the study a plan sizes (`planning.StudyDesign`)."""
    parser.add_argument(
        "--videos-per-clinician",
        type=positive_float,
        default=DEFAULT_VIDEOS_PER_CLINICIAN,
        metavar="M",
        help="icc, difference: the videos each clinician of the planned study contributes, which sets the "
        f"clustering its CI carries (default: the benchmark's {N_VIDEOS} / {N_CLINICIANS} = "
        f"{DEFAULT_VIDEOS_PER_CLINICIAN:g}, not the pilot's)",
    )
    parser.add_argument(
        "--clinicians",
        type=positive_int,
        default=N_CLINICIANS,
        metavar="N",
        help="icc, difference: the clinicians that exist, the pilot's included; no plan asks for more "
        f"(default: the benchmark's {N_CLINICIANS})",
    )


def _needs(args: argparse.Namespace) -> None:
    from mis_bench_dataset.toolkit.errors import UsageError

    need = {"icc": ["half_width"], "difference": ["difference", "compare"], "labels": ["half_width"]}[args.target]
    missing = ["--" + name.replace("_", "-") for name in need if getattr(args, name) is None]
    if missing:
        raise UsageError(f"plan {args.target} needs {' and '.join(missing)}", hint="see mis-bench plan --help")


def _mapping(path: Path, args: argparse.Namespace):
    from eval_scripts.cli.args import say
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file

    file = read_prediction_file(path)
    for note in file.notes:
        say(f"note: {shown(path)}: {note}", err=args.json)
    return predictions_to_mapping(file.records)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.cli.score import _claim_json, _finish, _text
    from mis_icc_metric import planning
    from mis_icc_metric.predictions_io import read_references

    _needs(args)
    if args.target != "labels":
        require_resamples(args.bootstrap, f"a planned size ({args.target})")
    json_path = _claim_json(args, args.predictions, args.references, args.compare)
    predictions = _mapping(args.predictions, args)
    references = read_references(args.references, split=args.split)
    design = planning.StudyDesign(args.videos_per_clinician, args.clinicians, args.resample)
    common = {"n_resamples": args.bootstrap, "seed": args.seed, "design": design}
    if args.target == "icc":
        result = planning.plan_icc(
            predictions, references, half_width=args.half_width, confidence=args.confidence, **common
        )
    elif args.target == "difference":
        second = _mapping(args.compare, args)
        target = planning.DifferenceTarget(args.difference, power=args.power, level=args.level)
        result = planning.plan_difference(predictions, second, references, target, **common)
    else:
        result = planning.plan_labels(
            predictions, references, half_width=args.half_width, n_judged=args.judged, confidence=args.confidence
        )
    result["target"] = args.target
    result["purpose"] = planning.PURPOSE
    result["meta"] = {"predictions": str(args.predictions), "references": str(args.references), "split": args.split}
    _text(args)(format_plan(result))
    _finish(args, json_path, result)
    return 0


def _count(value: int | None, none: str = "withheld") -> str:
    return none if value is None else f"{value:,}"


def _more(total: int | None, more: int | None) -> str:
    return "withheld" if total is None else f"{total:,} (+{more:,})"


def format_plan(result: dict) -> str:
    """The plan as text: the pilot, the study assumed, the headline sizes (totals and how many more) with the
    other method beside them, the withheld sizes with their reasons, the warnings."""
    lines = _format_labels(result) if result["target"] == "labels" else _format_sizes(result)
    lines.append(f"{result['purpose'][0].upper()}{result['purpose'][1:]}.")
    return "\n".join(lines)


def _withheld(rows) -> list[str]:
    """One line per reason a size is withheld, naming the dimensions it holds for."""
    reasons: dict[str, list[str]] = {}
    for row in rows:
        if row["withheld"]:
            reasons.setdefault(row["withheld"], []).append(row["abbreviation"])
    return [f"Withheld ({', '.join(dims)}): {reason}." for reason, dims in reasons.items()]


def _format_labels(result: dict) -> list[str]:
    rows = result["dimensions"].values()
    lines = [
        f"Expert labels for a {result['confidence']:.0%} CI of +/- {result['half_width']:g} score points on a "
        "dimension's mean:",
        f"{'dim':<6} {'judged':>7} {'pilot labels':>13} {'PPI++ (more)':>16} {'experts only':>13}",
    ]
    lines += [
        f"{r['abbreviation']:<6} {r['n_judged']:>7,} {r['n_pilot_labelled']:>13,} "
        f"{_more(r['ppi_labels'], r['more_labels']):>16} {_count(r['classical_labels']):>13}"
        for r in rows
    ]
    lines += _withheld(rows)
    lines.append(f"Method: {result['method']}.")
    return lines


def _format_sizes(result: dict) -> list[str]:
    target, plan, pilot, design = result["target"], result["resampling"], result["pilot"], result["design"]
    rows = result["dimensions"].values()
    what = (
        f"an ICC(3,1) {result['confidence']:.0%} CI of +/- {result['half_width']:g}"
        if target == "icc"
        else f"an ICC difference of {result['difference']:g} at power {result['power']:g}, level {result['level']:g}"
    )
    analytic = "Bonett" if target == "icc" else "analytic"
    everyone = f"+/- all {design['clinicians_available']}"
    lines = [
        f"Size for {what}, from a pilot of {pilot['n_videos']} videos from {pilot['n_clinicians']} clinicians "
        f"({pilot['videos_per_clinician']:.1f} per clinician).",
        f"Planned study (assumed): {design['videos_per_clinician']:.1f} videos per clinician "
        f"(--videos-per-clinician), at most {design['clinicians_available']} clinicians (--clinicians), its CI "
        f"resampling {design['resample']}s. Totals include the pilot; (+N): beyond it.",
        f"{'dim':<6} {'design eff.':>11} {'videos (more)':>16} {'clinicians (more)':>18} {'range needed':>13}"
        + f" {analytic + ' videos':>16}"
        + (f" {everyone:>13}" if target == "icc" else f" {'pilot ICCs':>14}"),
    ]
    for r in rows:
        effect = "-" if r["design_effect"] is None else f"{r['design_effect']:.2f}"
        beside = r["bonett_design_videos"] if target == "icc" else r["analytic_design_videos"]
        span = r["videos_needed_range"]
        needed = f" {'-' if span is None else f'{span[0]:,}-{span[1]:,}':>13}"
        if target == "icc":
            best = r["reachable_half_width"]
            extra = f" {'-' if best is None else f'{best:.3f}':>13}"
        else:
            extra = f" {100 * r['pilot_icc_a']:>6.1f} {100 * r['pilot_icc_b']:>6.1f}"
        lines.append(
            f"{r['abbreviation']:<6} {effect:>11} {_more(r['videos'], r['more_videos']):>16} "
            f"{_more(r['clinicians'], r['more_clinicians']):>18}{needed} {_count(beside, '-'):>16}{extra}"
        )
    lines += _withheld(rows)
    lines.append(
        f"Range needed: the videos the target needs over the central {result['range']['level']:.0%} of "
        f"{result['range']['n_resamples']:,} clinician resamples of the pilot (not capped; a guide to how far the "
        "pilot pins the plan, which misses a pilot whose clinicians are unrepresentative)."
    )
    lines.append(
        f"Headline: the resampled videos and clinicians, with {analytic} x the same design effect beside them "
        f"('-': withheld, or past the clinicians available). Why: {result['headline']['why']}."
    )
    lines += [f"Warning: {warning}." for warning in result["warnings"]]
    lines.append(f"Resampling: {plan['method']}; {plan['n_resamples']} resamples per size, seed {plan['seed']}.")
    lines.append(f"Note: {result['note']}.")
    return lines
