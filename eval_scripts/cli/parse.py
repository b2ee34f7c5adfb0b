"""`mis-bench parse`: re-parse a run's saved answers with the current parser and show what changed."""

from __future__ import annotations

import argparse

from eval_scripts.cli.args import add_json, existing, non_negative_int, print_json, say, shown
from eval_scripts.cli.common_options import add_out
from mis_bench_dataset.dimensions import PROMPT_STYLES

EXCERPT_CHARS = 100


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "parse",
        help="re-parse a run's saved answers with the current parser, show what changed (no model call)",
        description=(
            "Read a run's raw_responses.jsonl (or a predictions file with raw_response), parse every complete "
            "answer again with the current parser and list the answers whose value changed. With --out, write "
            "the re-parsed text readout as a predictions file (a new file, or one `mis-bench parse` wrote)."
        ),
    )
    parser.add_argument("file", type=existing("file"), help="raw_responses.jsonl, or predictions with raw_response")
    parser.add_argument(
        "--prompt", dest="prompt_style", choices=PROMPT_STYLES, help="prompt style (default: from results.json beside)"
    )
    add_out(parser, "file", "the re-parsed predictions (.jsonl or .csv) (default: no file)")
    parser.add_argument("--show", type=non_negative_int, default=20, help="changed answers to list (default 20)")
    add_json(parser, what="the counts and every change")
    parser.set_defaults(func=parse_command)


def _value(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


def _excerpt(text: str | None) -> str:
    if text is None:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else "\u2026" + flat[-(EXCERPT_CHARS - 1) :]


def parse_command(args: argparse.Namespace) -> int:
    from eval_scripts.formats.results import RESULTS_NAME
    from eval_scripts.harness.reparse import reparse

    out = None
    if args.out is not None:
        from mis_bench_dataset.toolkit.ownership import claim_file

        out = claim_file(
            args.out,
            command="parse",
            writer="parse",
            arg="--out",
            inputs=[args.file, args.file.with_name(RESULTS_NAME)],
        )
    result = reparse(args.file, args.prompt_style)
    counts = result.counts()
    from eval_scripts.formats.data_names import source_synthetic
    from mis_bench_dataset.wording import SYNTHETIC_LINE

    synthetic = bool(source_synthetic(args.file.with_name(RESULTS_NAME)))  # the run's results say what data it was
    if out is not None:
        from mis_icc_metric.predictions_io import write_predictions

        write_predictions(out, result.predictions())
    if args.json:
        print_json(
            {
                "source": str(result.source),
                "style": result.style,
                **counts,
                "changes": [{**vars(a), "text": _excerpt(a.text)} for a in result.changed],
                "out": str(out) if out else None,
                "synthetic": synthetic,
            }
        )
        return 0
    say(
        f"{shown(result.source)} ({result.style}): {counts['answers']} answers re-parsed with the current parser, "
        f"{counts['changed']} changed ({counts['number_to_none']} number -> none, {counts['none_to_number']} "
        f"none -> number, {counts['number_to_number']} to another number)"
    )
    for answer in result.changed[: args.show]:
        sample = f" sample {answer.sample}" if answer.sample else ""
        why = answer.rule if answer.new is not None else answer.reason
        say(
            f"  {answer.video_id} {answer.dimension}{sample}: {_value(answer.old)} -> {_value(answer.new)} "
            f"({why}): {_excerpt(answer.text)}"
        )
    if len(result.changed) > args.show:
        say(f"  ... and {len(result.changed) - args.show} more (--show N, or --json for all)")
    if out is not None:
        say(f"wrote {shown(out)}: the re-parsed predictions of {len(result.predictions())} rows")
    if synthetic:
        say(SYNTHETIC_LINE)
    return 0
