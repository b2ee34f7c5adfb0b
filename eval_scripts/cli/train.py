"""`mis-bench train [FLAGS]`: MIS-RAFT fine-tuning, the flags and recipes of `raft_trainer/train.py`.

The subcommand hands every argument to the trainer's own parser (TRL's `TrlParser` over `RAFTScriptArguments`,
`RAFTConfig` and `RAFTModelConfig`), built only when the command runs, so `mis-bench --help` stays fast and works
without the `train` extra. `mis-bench train --help` shows that parser's help (`full_parser()`); `--num_processes N`
starts N processes with `accelerate launch` after checking the settings and the data here.
"""

from __future__ import annotations

import argparse

PROG = "mis-bench train"


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


def run(args: argparse.Namespace) -> int:
    from mis_bench_dataset.rules.errors import require_extra

    require_extra("train", "mis-bench train")
    from raft_trainer.train import run as train

    return train(list(args.train_args), prog=PROG)
