"""`mis-bench estimate`: mean expert-scale scores from a judge on every video and experts on a few (PPI++)."""

from __future__ import annotations

import argparse

from eval_scripts.cli.args import (
    add_bootstrap,
    add_confidence,
    add_json,
    add_judge_and_experts,
    add_resample,
    add_seed,
    shown,
)
from eval_scripts.cli.common_options import add_out
from mis_bench_dataset.toolkit.numbers import MISSING
from mis_bench_dataset.video_ids import GROUP_ORDER, GROUPINGS
from mis_bench_dataset.wording import RESEARCH_USE

GROUP_CHOICES = tuple(GROUP_ORDER)  # the groupings with an order of their own: a cohort's time points, the stimuli
STRATA_CHOICES = GROUPINGS  # what a sampling design may stratify on: every part of a video id


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="mean scores per dimension (and per group, and their differences) from a judge on every video and "
        "experts on a few: PPI++ beside the experts-only and the judge-only estimate",
        description="Prediction-powered inference (PPI++, power-tuned, as ppi_py computes it): the judge's scores "
        f"on every video correct the experts' mean on the labelled ones. {RESEARCH_USE.capitalize()}.",
    )
    add_judge_and_experts(
        parser,
        experts_help="videos with a gold score are the labelled set, the judge's other videos the unlabelled one",
    )
    parser.add_argument(
        "--by",
        choices=GROUP_CHOICES,
        default=None,
        help="also estimate per group and the differences between groups (default: none)",
    )
    parser.add_argument(
        "--strata",
        choices=STRATA_CHOICES,
        default=None,
        help="the expert labels were drawn at random within each time point, stimulus or clinician, at shares "
        "that may differ (say 30%% of T1, 5%% of T2): stratified PPI++, each stratum weighted by its size "
        "(default: none, the labelled videos a uniformly random subset)",
    )
    add_confidence(parser)
    add_bootstrap(parser, what="resamples of the bootstrap variant (PPI++ recomputed per resample; 0: none)")
    add_resample(parser)
    add_seed(parser)
    add_out(parser, "file", "also write the result as JSON there (default: none)")
    add_json(parser, what="the result")
    parser.set_defaults(func=run)


def _judge_and_experts(args: argparse.Namespace):
    from eval_scripts.cli.args import say
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file, read_references

    file = read_prediction_file(args.predictions)
    for note in file.notes:
        say(f"note: {shown(args.predictions)}: {note}", err=args.json)
    return predictions_to_mapping(file.records), read_references(args.references, split=args.split)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.cli.score import _claim_json, _finish, _text
    from mis_icc_metric.estimates import estimate_means, judged_videos
    from mis_icc_metric.resampling import make_resampling

    json_path = _claim_json(args, args.predictions, args.references)
    judge, experts = _judge_and_experts(args)
    resampling = None
    if args.bootstrap:
        resampling = make_resampling(judged_videos(judge), args.bootstrap, args.seed, args.resample)
    result = estimate_means(
        judge,
        experts,
        by=args.by,
        strata=args.strata,
        confidence=args.confidence,
        resampling=resampling,
        seed=args.seed,
    )
    result["meta"] = {"judge": str(args.predictions), "experts": str(args.references), "split": args.split}
    from eval_scripts.formats.data_names import any_synthetic
    from mis_bench_dataset.wording import SYNTHETIC_LINE

    result["synthetic"] = any_synthetic([args.references, args.predictions])
    if result["synthetic"]:
        _text(args)(SYNTHETIC_LINE)
    _text(args)(format_estimates(result))
    _finish(args, json_path, result)
    return 0


def _value(block: dict, notes: list[str]) -> str:
    """`estimate [low, high]`, or `estimate (no CI: n)` with the reason added to `notes` as footnote n."""
    if block["ci"] is None:
        if block["withheld"] not in notes:
            notes.append(block["withheld"])
        return f"{block['estimate']:.3f} (no CI: {notes.index(block['withheld']) + 1})"
    low, high = block["ci"]
    return f"{block['estimate']:.3f} [{low:.3f}, {high:.3f}]"


def _table(title: str, blocks: dict, result: dict, clustered: dict | None, notes: list[str]) -> list[str]:
    """One table: the estimate to cite first (with the clinician-bootstrap CI where clinicians were resampled),
    then PPI++'s CLT CI, lambda, experts only, judge only and the width ratio (and a video-bootstrap check)."""
    from mis_bench_dataset.dimensions import DIMENSION_BY_KEY

    level = f"{result['confidence'] * 100:g}%"
    by_clinician = result["cite"]["source"] == "clinician_bootstrap"
    first = f"PPI++ [{level} clinician CI]" if by_clinician else f"PPI++ [{level} CI]"
    video_check = clustered is not None and not by_clinician
    lines = [
        title,
        f"{'dim':<6} {'lab':>4} {'unlab':>5}  {first:<24}"
        + (f" {'CLT CI (videos indep.)':<24}" if by_clinician else "")
        + f" {'lambda':>6}  {'experts only':<24} {'judge only (biased)':<24} {'width':>5}"
        + (f"  {'video-bootstrap CI':<18}" if video_check else ""),
    ]
    for key, block in blocks.items():
        widths = block["ppi"]["width"], block["classical"]["width"]
        ratio = widths[0] / widths[1] if None not in widths and widths[1] else None
        row = (
            f"{DIMENSION_BY_KEY[key].abbreviation:<6} {block['n_labelled']:>4} {block['n_unlabelled']:>5}  "
            f"{_value(block['cite'], notes):<24}"
            + (f" {_value(block['ppi'], notes):<24}" if by_clinician else "")
            + f" {block['ppi']['lambda']:>6.2f}  {_value(block['classical'], notes):<24} "
            f"{_value(block['judge_only'], notes):<24} {MISSING if ratio is None else f'{ratio:.2f}':>5}"
        )
        if video_check:
            check = clustered[key]
            row += "  " + (_value(check, notes).split(" ", 1)[1] if check["ci"] else _value(check, notes))
        lines.append(row)
    return lines


def _check_lines(check: dict) -> list[str]:
    """PPI's assumption checked: a WARNING when the labelled videos do not look random, else one quiet line."""
    if check["warning"]:
        return [f"WARNING: {check['warning']}."]
    within = f" within each {check['strata'].replace('_', ' ')}" if check["strata"] else ""
    shares = ", ".join(by.replace("_", " ") for by in check["shares"])
    return [
        f"Labelled vs unlabelled videos{within}: no check flags (the judge's mean score per dimension, the "
        f"labelled share by {shares}; a random labelled set is flagged at most {check['alpha']:.0%} of the time)."
    ]


def format_estimates(result: dict) -> str:
    """The tables: per dimension, per group and per difference; the estimate to cite first, then PPI++'s CLT CI,
    experts only, judge only and the width ratio; the withheld CIs' reasons and the labelled-set check below."""
    clustered = result.get("clustered")
    notes: list[str] = []
    design = f", stratified by {result['strata']}" if result.get("strata") else ""
    lines = [
        f"Mean scores by PPI++{design}: the judge on {result['n_judged_videos']} videos, experts on "
        f"{result['n_expert_videos']} ({result['n_expert_videos_not_judged']} of them not judged, left out).",
    ]
    if result["labelled_check"]["warning"]:
        lines += _check_lines(result["labelled_check"])
    if result.get("dimensions_not_judged"):
        from mis_bench_dataset.dimensions import DIMENSION_BY_KEY

        missing = ", ".join(DIMENSION_BY_KEY[k].abbreviation for k in result["dimensions_not_judged"])
        lines.append(
            f"Not estimated: the judge scored no video on {missing} (the experts did); judge them to add them."
        )
    lines += _table("All videos:", result["dimensions"], result, clustered and clustered["dimensions"], notes)
    for group, blocks in (result.get("groups") or {}).items():
        lines += _table(f"{result['by']} {group}:", blocks, result, clustered and clustered["groups"][group], notes)
    for name, blocks in (result.get("differences") or {}).items():
        cl = clustered and clustered["differences"][name]
        how = "stratified means" if result.get("strata") else "ppi_ols_ci"
        lines += _table(f"difference {name} (PPI++ by {how}):", blocks, result, cl, notes)
    lines += [f"no CI {i}: {reason}." for i, reason in enumerate(notes, 1)]
    lines.append(f"{result['cite']['why'][0].upper()}{result['cite']['why'][1:]}.")
    lines.append(
        "width: PPI++ CLT CI width / experts-only CI width; lambda: PPI++'s weight on the judge (0: experts only)."
    )
    lines.append(f"CLT CIs assume {result['assumes']}.")
    if clustered:
        plan = clustered["resampling"]
        undefined = max(
            [b["n_undefined"] for b in clustered["dimensions"].values()]
            + [b["n_undefined"] for g in ("groups", "differences") for t in clustered[g].values() for b in t.values()]
        )
        where = " in a stratum" if result.get("strata") else ""
        lines.append(
            f"{plan['unit']}-bootstrap CI: {'stratified ' if result.get('strata') else ''}PPI++ recomputed in each "
            f"resample, {plan['method']}; "
            f"{plan['n_resamples']} resamples of {plan['n_clusters']} {plan['unit']}s, seed {plan['seed']}; "
            f"undefined resamples (fewer than 2 labelled videos drawn{where}): "
            f"at most {undefined} in a row, a CI is withheld past {result['floor']['max_undefined_share']:.0%}."
        )
    if not result["labelled_check"]["warning"]:
        lines += _check_lines(result["labelled_check"])
    lines.append(f"{result['judge_only_note'][0].upper()}{result['judge_only_note'][1:]}.")
    lines.append(f"{result['purpose'][0].upper()}{result['purpose'][1:]}.")
    return "\n".join(lines)
