"""`mis-bench trust`: one page that answers "can I use this judge?" (HTML and JSON) from a judge file and expert
labels, with the verdict, the number to cite and the flags printed on the terminal."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import (
    add_bootstrap,
    add_json,
    add_judge_and_experts,
    add_seed,
    print_json,
    probability,
    say,
    shown,
)
from eval_scripts.cli.common_options import add_out
from mis_bench_dataset.wording import RESEARCH_USE
from mis_icc_metric.calibrator_file import DEFAULT_COVERAGE

DEFAULT_OUT = Path("trust")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "trust",
        help="one page answering 'can I use this judge?': a verdict by stated rules, the number to cite, the "
        "yardstick, what the judge is biased by, the flags, the sizes to go further (HTML + JSON)",
        description="From a judge on every video and experts on a few: agreement against the human ceiling, "
        "calibration coverage by clinician, interval width against no judge, the PPI++ gain, each by a stated rule, "
        f"and a verdict in plain words. {RESEARCH_USE.capitalize()}.",
    )
    add_judge_and_experts(
        parser, experts_help="a build folder also gives the transcripts' lengths for the length-bias test"
    )
    parser.add_argument(
        "--coverage", type=probability, default=DEFAULT_COVERAGE, help="the intervals' nominal coverage"
    )
    add_bootstrap(parser)
    add_seed(parser)
    add_out(parser, "folder", "trust.html and trust.json (default: ./trust)", default=DEFAULT_OUT)
    add_json(parser, what="the page's JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.jobs.judge_card import trust_page

    options = {"split": args.split, "n_bootstrap": args.bootstrap, "seed": args.seed, "coverage": args.coverage}
    card, files = trust_page(args.predictions, args.references, args.out, **options)
    if args.json:
        print_json(card)
        return 0
    say(format_card(card))
    say(f"wrote {shown(files['html'])} and {shown(files['json'])}")
    return 0


def format_card(card: dict) -> str:
    """The terminal's summary: the verdict, the rules, the number to cite and the flags."""
    from mis_bench_dataset.toolkit.numbers import ci_pct, pct
    from mis_bench_dataset.wording import SYNTHETIC_LINE

    cite = card["agreement"]["cite"]
    interval = f"(CI withheld: {cite['withheld']})" if cite["withheld"] else ci_pct(cite["ci"])
    lines = [SYNTHETIC_LINE] if card["synthetic"] else []
    lines += [f"Verdict: {card['verdict']['sentence']}", "Rules:"]
    for rule in card["rules"]:
        result = f"withheld: {rule['withheld']}" if rule["withheld"] else ("holds" if rule["passed"] else "fails")
        lines.append(f"  {rule['name']}: {result}" + (f"; {rule['value']}" if rule["value"] else ""))
    lines.append(f"Cite: mean ICC(3,1) {pct(cite['value'])}% {interval}: {cite['what']}.")
    lines += ["Flags:"] + [f"  - {flag}" for flag in card["flags"]] if card["flags"] else ["Flags: none"]
    return "\n".join(lines)
