"""`mis-bench estimate`: mean expert-scale scores from a judge on every video and experts on a few (PPI++)."""

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
    shown,
)
from mis_bench_dataset.dimensions import RESEARCH_USE
from mis_bench_dataset.splits import ALL_SPLITS, SPLITS
from mis_bench_dataset.toolkit.numbers import MISSING
from mis_bench_dataset.video_ids import GROUP_ORDER

GROUP_CHOICES = tuple(GROUP_ORDER)  # the groupings with an order of their own: a cohort's time points, the stimuli


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="mean scores per dimension (and per group, and their differences) from a judge on every video and "
        "experts on a few: PPI++ beside the experts-only and the judge-only estimate",
        description="Prediction-powered inference (PPI++, power-tuned, as ppi_py computes it): the judge's scores "
        f"on every video correct the experts' mean on the labelled ones. {RESEARCH_USE.capitalize()}.",
    )
    parser.add_argument(
        "--judge",
        required=True,
        type=existing("file"),
        metavar="PREDICTIONS",
        help="the judge's predictions on every video (any predictions file `score` reads)",
    )
    parser.add_argument(
        "--experts",
        required=True,
        type=existing("any"),
        metavar="LABELS",
        help="expert labels (any --references form `score` reads): videos with a gold score are the labelled "
        "set, the judge's other videos the unlabelled one",
    )
    parser.add_argument(
        "--split",
        default=ALL_SPLITS,
        choices=(*SPLITS, ALL_SPLITS),
        help="dataset split when --experts is a built folder (default: all)",
    )
    parser.add_argument(
        "--by",
        choices=GROUP_CHOICES,
        default=None,
        help="also estimate per group and the differences between groups (default: none)",
    )
    add_confidence(parser)
    add_bootstrap(parser, what="resamples of the bootstrap variant (PPI++ recomputed per resample; 0: none)")
    add_resample(parser)
    add_seed(parser)
    parser.add_argument(
        "--out", type=Path, default=None, metavar="FILE.json", help="also write the result as JSON (default: none)"
    )
    add_json(parser, what="the result")
    parser.set_defaults(func=run)


def _judge_and_experts(args: argparse.Namespace):
    from eval_scripts.cli.args import say
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file, read_references

    file = read_prediction_file(args.judge)
    for note in file.notes:
        say(f"note: {shown(args.judge)}: {note}", err=args.json)
    return predictions_to_mapping(file.records), read_references(args.experts, split=args.split)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.cli.score import _claim_json, _finish, _text
    from mis_icc_metric.estimates import estimate_means, judged_videos
    from mis_icc_metric.resampling import make_resampling

    json_path = _claim_json(args, args.judge, args.experts)
    judge, experts = _judge_and_experts(args)
    resampling = None
    if args.bootstrap:
        resampling = make_resampling(judged_videos(judge), args.bootstrap, args.seed, args.resample)
    result = estimate_means(judge, experts, by=args.by, confidence=args.confidence, resampling=resampling)
    result["meta"] = {"judge": str(args.judge), "experts": str(args.experts), "split": args.split}
    from eval_scripts.formats.data_names import any_synthetic
    from mis_bench_dataset.dimensions import SYNTHETIC_LINE

    result["synthetic"] = any_synthetic([args.experts, args.judge])
    if result["synthetic"]:
        _text(args)(SYNTHETIC_LINE)
    _text(args)(format_estimates(result))
    _finish(args, json_path, result)
    return 0


def _value(block: dict) -> str:
    low, high = block["ci"]
    return f"{block['estimate']:.3f} [{low:.3f}, {high:.3f}]"


def _table(title: str, blocks: dict, confidence: float, clustered: dict | None, unit: str = "") -> list[str]:
    from mis_bench_dataset.dimensions import DIMENSION_BY_KEY

    level = f"{confidence * 100:g}%"
    lines = [
        title,
        f"{'dim':<6} {'lab':>4} {'unlab':>5}  {'PPI++ [' + level + ' CI]':<24} {'lambda':>6}  "
        f"{'experts only':<24} {'judge only (biased)':<24} {'width':>5}"
        + (f"  {unit + '-bootstrap CI':<18}" if clustered else ""),
    ]
    for key, block in blocks.items():
        ratio = block["ppi"]["width"] / block["classical"]["width"] if block["classical"]["width"] else None
        row = (
            f"{DIMENSION_BY_KEY[key].abbreviation:<6} {block['n_labelled']:>4} {block['n_unlabelled']:>5}  "
            f"{_value(block['ppi']):<24} {block['ppi']['lambda']:>6.2f}  {_value(block['classical']):<24} "
            f"{_value(block['judge_only']):<24} {MISSING if ratio is None else f'{ratio:.2f}':>5}"
        )
        if clustered:
            low, high = clustered[key]["ci"]
            row += f"  [{low:.3f}, {high:.3f}]"
        lines.append(row)
    return lines


def format_estimates(result: dict) -> str:
    """The tables: per dimension, per group and per difference; PPI++, experts only, judge only, width ratio."""
    confidence = result["confidence"]
    clustered = result.get("clustered")
    unit = clustered["resampling"]["unit"] if clustered else ""
    lines = [
        f"Mean scores by PPI++: the judge on {result['n_judged_videos']} videos, experts on "
        f"{result['n_expert_videos']} ({result['n_expert_videos_not_judged']} of them not judged, left out).",
        *_table("All videos:", result["dimensions"], confidence, clustered and clustered["dimensions"], unit),
    ]
    for group, blocks in (result.get("groups") or {}).items():
        lines += _table(f"{result['by']} {group}:", blocks, confidence, clustered and clustered["groups"][group], unit)
    for name, blocks in (result.get("differences") or {}).items():
        cl = clustered and clustered["differences"][name]
        lines += _table(f"difference {name} (PPI++ by ppi_ols_ci):", blocks, confidence, cl, unit)
    lines.append(
        "width: PPI++ CI width / experts-only CI width; lambda: PPI++'s weight on the judge (0: experts only)."
    )
    lines.append(f"CIs assume {result['assumes']}.")
    if clustered:
        plan = clustered["resampling"]
        lines.append(
            f"{unit}-bootstrap CI: PPI++ recomputed in each resample, {plan['method']}; {plan['n_resamples']} "
            f"resamples of {plan['n_clusters']} {plan['unit']}s, seed {plan['seed']}."
        )
    lines.append(f"{result['judge_only_note'][0].upper()}{result['judge_only_note'][1:]}.")
    lines.append(f"{result['purpose'][0].upper()}{result['purpose'][1:]}.")
    return "\n".join(lines)
