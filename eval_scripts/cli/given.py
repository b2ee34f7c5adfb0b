"""Which options the user gave, recorded while argparse parses them: one mechanism for every command.

A value equal to its default says nothing about whether the user typed it (`--prompt direct` is a choice;
no `--prompt` lets a trained model's setting decide). Each option action the toolkit's parser registers is
wrapped so that, when argparse calls it (only for an option on the command line), it adds its `dest` to the
namespace's `GIVEN` set; a subcommand's namespace is copied into the top one, set included.
"""

from __future__ import annotations

import argparse

GIVEN = "given_flags"
# argparse's own action names, as `add_argument(action=...)` spells them (None: the default, "store").
RECORDED_ACTIONS = (None, "store", "store_const", "store_true", "store_false", "append", "append_const", "count")


def recording(action_class: type[argparse.Action]) -> type[argparse.Action]:
    """`action_class` that also records its `dest` as given when it is called for an option string."""

    class Recorded(action_class):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None) -> None:
            super().__call__(parser, namespace, values, option_string)
            if option_string is not None:  # a positional is "called" with its default when absent
                setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})

    Recorded.__name__ = Recorded.__qualname__ = f"Recorded{action_class.__name__}"
    return Recorded


def given_flags(args: argparse.Namespace) -> frozenset[str]:
    """The `dest`s of the options the user gave on the command line (empty for a namespace built by hand)."""
    return frozenset(getattr(args, GIVEN, ()))
