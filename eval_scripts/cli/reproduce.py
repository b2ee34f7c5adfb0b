"""`mis-bench reproduce table4|table6 --from DIR`: the paper's Tables 4 and 6 from the authors' public files,
printed beside the published values (`eval_scripts.jobs.reproduction`)."""

from __future__ import annotations

import argparse

from eval_scripts.cli.args import add_bootstrap, add_json, add_seed, existing, print_json, say, shown
from eval_scripts.cli.common_options import add_out, require_resamples


def register(subparsers) -> None:
    from eval_scripts.jobs.reproduction import GOLD_CHOICES, TABLES, TRUST
    from mis_bench_dataset.paper_results import TABLE4_BOOTSTRAP

    parser = subparsers.add_parser(
        "reproduce",
        help="the paper's Table 4 or Table 6 from the authors' public files, beside the published values",
        description="Recompute the paper's Table 6 (gold statistics, from coding.csv) or Table 4 (Qwen2.5-VL raw, "
        "fine-tuning and MIS-RAFT ICCs with bootstrap CIs, from coding.csv, raw_inference.csv, finetune.csv and "
        "finetune_raft.csv) and print them beside the published numbers; table4 also fits the text ridge "
        "baseline on the authors' own training rows (with their transcripts, fis_transcript.csv) as a fourth column, "
        "with a paired bootstrap test against MIS-RAFT on the shared pairs. FOLDER holds the files under their names "
        "in the authors' repository, as `mis-bench fetch` writes them (docs/reproducing.md).",
    )
    parser.add_argument(
        "table",
        choices=(*TABLES, TRUST),
        help="which table, or trust: the docs page 'How far to trust a judge' (docs/trust.md) from --shared",
    )
    parser.add_argument(
        "--from",
        dest="folder",
        default=None,
        type=existing("folder"),
        help="table4/table6: folder holding the authors' files (coding.csv and, for table4, the three prediction "
        "files; default: none, required for the tables)",
    )
    parser.add_argument(
        "--shared",
        default=None,
        type=existing("folder"),
        help="trust: the folder laid out as ../shared (data/authors/ and data/mis-bench-transcripts.csv; default: "
        "none, required for trust)",
    )
    add_out(parser, "file", "trust: the page, replacing only a page this command wrote (default: print it)")
    parser.add_argument(
        "--gold",
        choices=GOLD_CHOICES,
        default="rounded",
        help="the rule the gold is derived by from the authors' files (not a file: those come from --from or "
        "--shared): rounded (default: the paper's rule, §3.2) or as-published (coding.csv's unrounded means, "
        "which do not reproduce the paper)",
    )
    parser.add_argument(
        "--transcripts",
        type=existing("file"),
        default=None,
        help="table4: the authors' transcripts (fis_transcript.csv; default: FOLDER/fis_transcript.csv when there), "
        "for the text ridge column fitted on their training rows and scored on the same test pairs",
    )
    parser.add_argument("--no-ridge", action="store_true", help="table4: leave out the text ridge column")
    add_bootstrap(parser, what="table4 and trust: bootstrap resamples", default=TABLE4_BOOTSTRAP)
    add_seed(parser, what="table4 and trust: bootstrap seed")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the numbers do not reproduce the paper's (for CI)"
    )
    add_json(parser, what="the comparison")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from eval_scripts.jobs.reproduction import format_table4, format_table6, reproduce_table4, reproduce_table6
    from mis_bench_dataset.toolkit.errors import DataError

    if args.table != "table6":
        require_resamples(args.bootstrap, f"{args.table}'s CIs (the paper's)")
    if args.table == "trust":
        return _trust(args)
    if args.folder is None:
        from mis_bench_dataset.toolkit.errors import UsageError

        raise UsageError(f"{args.table} needs --from FOLDER", hint="the folder holding the authors' files")
    if args.table == "table6":
        doc = reproduce_table6(args.folder, gold=args.gold)
        text = format_table6(doc)
    else:
        doc = reproduce_table4(
            args.folder,
            gold=args.gold,
            n_bootstrap=args.bootstrap,
            seed=args.seed,
            transcripts=args.transcripts,
            ridge=not args.no_ridge,
        )
        text = format_table4(doc)
    if args.json:
        print_json(doc)
    else:
        say(text)
    if args.check and not doc["reproduced"]:
        raise DataError(
            f"{args.table} is not reproduced from these files (gold: {args.gold})",
            where=str(args.folder),
            hint="use the authors' unmodified files and --gold rounded (see docs/reproducing.md)",
        )
    return 0


def _trust(args: argparse.Namespace) -> int:
    """The docs page from the shared folder: printed, or written to --out."""
    from eval_scripts.jobs.trust import reproduce_trust_page, write_page
    from mis_bench_dataset.toolkit.errors import UsageError

    if args.shared is None:
        raise UsageError("trust needs --shared FOLDER", hint="the folder laid out as ../shared")
    page = reproduce_trust_page(args.shared, n_bootstrap=args.bootstrap, seed=args.seed)
    if args.out is None:
        print(page, end="")
    else:
        say(f"wrote {shown(write_page(page, args.out))}")
    return 0
