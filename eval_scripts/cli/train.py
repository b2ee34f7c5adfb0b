"""`mis-bench train [FLAGS]`: MIS-RAFT fine-tuning, the flags and recipes of `raft_trainer/train.py`.

The subcommand hands every argument to the trainer's own parser (TRL's `TrlParser` over `RAFTScriptArguments`,
`RAFTConfig` and `RAFTModelConfig`), built only when the command runs, so `mis-bench --help` stays fast and works
without the `train` extra. `mis-bench train --help` prints that parser's short help as stored in `train_help.txt`
and `--help-all` every flag as stored in `train_help_all.txt` (building the parser imports torch, TRL and
transformers: seconds; tests/test_train_defaults.py checks the stored texts are what `full_parser()` prints, and
`write_help()` rewrites them). `--num_processes N` starts N processes with `accelerate launch` after checking the
settings and the data here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

PROG = "mis-bench train"
HELP_FILE = Path(__file__).with_name("train_help.txt")
HELP_ALL_FILE = Path(__file__).with_name("train_help_all.txt")
HELP_FILES = {"--help": HELP_FILE, "-h": HELP_FILE, "--help-all": HELP_ALL_FILE}
HELP_COLUMNS = 100  # the stored help's width


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="fine-tune a chat model with MIS-RAFT, then predict the test split (`mis-bench train --help`)",
        description="Fine-tune a chat model on MIS-Bench scores with MIS-RAFT; the flags of raft_trainer/train.py.",
        add_help=False,
        prefix_chars="\x00",  # every argument, `--help` included, goes to the trainer's parser
    )
    parser.add_argument("train_args", nargs="*", help="the trainer's flags (see `mis-bench train --help`)")
    parser.set_defaults(func=run, full_parser=full_parser)


def full_parser():
    """The parser `mis-bench train` really parses with (for its help and the parser walk); needs the train extra."""
    from raft_trainer.arguments import make_parser

    return make_parser(prog=PROG, check_machine=False)


def render_help(full: bool = False) -> str:
    """The short help (`full`: every flag) `full_parser()` prints, at the stored width (needs the train extra)."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        return full_parser().format_help(full=full)
    finally:
        with contextlib.suppress(KeyError):
            del os.environ["COLUMNS"]
        if saved is not None:
            os.environ["COLUMNS"] = saved


def write_help() -> Path:
    """Rewrite `train_help.txt` and `train_help_all.txt` from the parser (after a flag or a TRL / transformers
    default changed)."""
    from mis_bench_dataset.toolkit.atomic import write_atomic

    write_atomic(HELP_FILE, render_help())
    write_atomic(HELP_ALL_FILE, render_help(full=True))
    return HELP_FILE


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.toolkit.errors import require_extra

    if len(args.train_args) == 1 and args.train_args[0] in HELP_FILES:
        sys.stdout.write(HELP_FILES[args.train_args[0]].read_text(encoding="utf-8"))  # nothing heavy: under a second
        return 0

    require_extra("train", "mis-bench train")
    from raft_trainer.train import run as train

    return train(list(args.train_args), prog=PROG)
