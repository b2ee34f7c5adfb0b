"""`mis-bench cache check FILE...` and `mis-bench cache merge FILE... --out NEW`: look inside response
caches and merge the caches of several machines, keeping conflicting answers apart."""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import add_json, existing, print_json, say
from eval_scripts.cli.common_options import add_out


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="check response caches, or merge several machines' caches into one (conflicts kept apart)",
        description="`check`: prove each file a response cache and count its answers, failed records, repeated "
        "and unusable answers and conflicts (a row with two different answers); exit 1 when any file has "
        "conflicts. `merge`: write one cache from several (each proven first; an answer repeated with the same "
        "text once); the records of conflicting rows go to --conflicts instead, so the merged cache serves "
        "neither and the next run asks those rows again. No input is ever changed.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(parser))
    check = actions.add_parser("check", help="describe response caches (read only)")
    check.add_argument("caches", nargs="+", type=existing("file"), help="response cache files")
    add_json(check, what="the reports")
    check.set_defaults(func=check_command)
    merge = actions.add_parser("merge", help="merge response caches into a new one")
    merge.add_argument("caches", nargs="+", type=existing("file"), help="response cache files")
    add_out(merge, "file", "the merged cache to write (never an input)", required=True)
    merge.add_argument(
        "--conflicts", type=Path, help="where conflicting records go (default: OUT.conflicts.jsonl, when there are any)"
    )
    add_json(merge, what="the outcome")
    merge.set_defaults(func=merge_command)


def check_command(args: argparse.Namespace) -> int:
    from eval_scripts.harness.cache_maintenance import check_cache
    from mis_bench_dataset.toolkit.errors import EXIT_DATA

    reports = [check_cache(path) for path in args.caches]
    if args.json:
        print_json([report.as_dict() for report in reports])
    else:
        for report in reports:
            say(
                f"{report.path}: {report.answers:,} answers, {report.failed_records:,} failed or truncated records, "
                f"{report.duplicates:,} repeated answers, {len(report.unusable):,} unusable, "
                f"{len(report.conflicts):,} conflicts" + ("" if report.header else " (no header: an older cache)")
            )
            for item in report.unusable[:10]:
                say(f"  line {item['line']}: not used as an answer: {item['why']}")
            for conflict in report.conflicts[:10]:
                say(
                    "  conflict: "
                    + "; ".join(
                        f"line {a['line']}: video {a['video_id']}, dimension {a['dimension']}: {a['response']!r}"
                        for a in conflict["answers"]
                    )
                )
    return 0 if all(report.ok for report in reports) else EXIT_DATA


def merge_command(args: argparse.Namespace) -> int:
    from eval_scripts.harness.cache_maintenance import merge_caches

    report = merge_caches(args.caches, args.out, conflicts=args.conflicts)
    if args.json:
        print_json(report.as_dict())
        return 0
    say(
        f"merged {len(report.inputs)} cache(s) into {report.out}: {report.answers_out:,} answers, "
        f"{report.records_out:,} records ({report.duplicates:,} repeated answers written once, "
        f"{report.unusable_dropped:,} unusable left out)"
    )
    if report.conflicting_keys:
        say(
            f"{report.conflicting_keys:,} row(s) had different answers: their {report.conflict_records:,} records "
            f"are in {report.conflicts_path}, not in the merged cache (the next run asks those rows again)",
            err=True,
        )
    return 0
