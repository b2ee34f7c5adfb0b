"""The `mis-bench` console script: one entry point, subcommands owned by their packages.

Each subcommand lives in the package that does the work, in a module exposing
`register(subparsers)`; that function adds its parser and sets `func`, which
receives the parsed arguments and returns the exit code. Subcommand modules keep
their top-level imports light so that `mis-bench --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

# Order is the order `--help` lists them in.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "mis_bench_dataset.cli_synth",
    "mis_bench_dataset.cli_build",
    "mis_bench_dataset.cli_stats",
    "mis_icc_metric.cli",
    "eval_scripts.cli_run",
    "eval_scripts.cli_report",
    "eval_scripts.cli_leaderboard",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mis-bench",
        description="MIS-Bench: judge therapists' interpersonal skills against expert FIS ratings.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in SUBCOMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
