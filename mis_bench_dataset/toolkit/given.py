"""Which options the user gave, recorded while argparse parses them: the one mechanism of every command, the
harness's (`mis-bench run`) and the trainer's (`train.py`) alike.

A value equal to its default says nothing about whether the user typed it (`--prompt direct` is a choice;
no `--prompt` lets a trained model's setting decide; `--max_length 512` is a choice the trainer must not
raise). Each option action of a parser made `recording` is wrapped so that, when argparse calls it (only for an
option on the command line), it adds its `dest` to the namespace's `GIVEN` set; a subcommand's namespace is
copied into the top one, set included. A recipe's keys (`train.py --config`) are given too: the trainer adds
them (`mark_given`) when it reads the recipe.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterable

GIVEN = "given_flags"
# argparse's own action names, as `add_argument(action=...)` spells them (None: the default, "store").
RECORDED_ACTIONS = (None, "store", "store_const", "store_true", "store_false", "append", "append_const", "count")


@functools.cache
def recorded(action_class: type[argparse.Action]) -> type[argparse.Action]:
    """`action_class` that also records its `dest` as given when it is called for an option string (one class per
    action class: the CLI's parser makes about 30 parsers, each registering every recorded action)."""
    if getattr(action_class, "records_given", False):
        return action_class

    class Recorded(action_class):  # type: ignore[misc, valid-type]
        records_given = True

        def __call__(self, parser, namespace, values, option_string=None) -> None:
            super().__call__(parser, namespace, values, option_string)
            if option_string is not None:  # a positional is "called" with its default when absent
                mark_given(namespace, [self.dest])

    Recorded.__name__ = Recorded.__qualname__ = f"Recorded{action_class.__name__}"
    return Recorded


def recording(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser`, recording the options given: the actions it will add are registered recorded, the option actions
    it already has (a dataclass parser's, added in its constructor) are made so in place."""
    for name in RECORDED_ACTIONS:
        parser.register("action", name, recorded(parser._registry_get("action", name)))
    for action in parser._actions:
        if action.option_strings and action.dest != argparse.SUPPRESS:  # not --help
            action.__class__ = recorded(type(action))
    return parser


def mark_given(namespace: argparse.Namespace, dests: Iterable[str]) -> None:
    """Record `dests` as given (an option's action, or a recipe's keys)."""
    setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), *dests})


def given_flags(args: argparse.Namespace) -> frozenset[str]:
    """The `dest`s of the options the user gave on the command line (empty for a namespace built by hand)."""
    return frozenset(getattr(args, GIVEN, ()))
