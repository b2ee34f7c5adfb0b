"""The CLI's one vocabulary: the options many `mis-bench` commands share, each declared once here.

The rules (docs/installation.md, "One vocabulary", states them for users; tests/test_cli_vocabulary.py walks every
parser against them):

- `--predictions`: what a system predicted; `--references`: the gold it is judged against (a built dataset folder
  or a labels file). A command whose natural form is positional (`stats BUILD`, `compare A B`) takes the flag too.
  An earlier spelling (`--judge`, `--experts`, `submit --dataset`) stays as an alias that behaves identically and
  prints one line on stderr: `mis-bench CMD: warning: --OLD is deprecated; use --NEW`.
- `--out`: a folder for a command that writes several files, a file for a command that writes one; every help
  starts with which (`OUT_FOLDER` / `OUT_FILE`).
- `--split`: `SPLIT_RULE`.
- `--bootstrap`: `mis_bench_dataset.toolkit.options.BOOTSTRAP_RULE` (`bootstrap_option`, `resample_count`); where
  the result itself is resampled (`compare`, `plan icc|difference`, `leaderboard`, `reproduce table4|trust`), 0 is
  refused (`require_resamples`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mis_bench_dataset.splits import ALL_SPLITS, SPLITS
from mis_bench_dataset.toolkit.given import recorded
from mis_bench_dataset.toolkit.options import existing
from mis_bench_dataset.toolkit.text_safety import clean_line

# What `--out` names: the first words of every `--out` help.
OUT_FOLDER = "output folder"
OUT_FILE = "output file"
# The one rule for `--split`'s default, by what the command does with the gold.
TEST_SPLIT = "test"
SPLIT_RULE = (
    f"a command that judges a system against the gold (score, compare, run, report, jury, submit, leaderboard) "
    f"defaults to {TEST_SPLIT}, the held-out split every published result uses; a command that uses the labels "
    f"themselves as its sample (stats, estimate, plan, trust) defaults to {ALL_SPLITS}, every labelled video"
)
SPLIT_DEFAULTS = {"judge": TEST_SPLIT, "sample": ALL_SPLITS}


def vocabulary() -> str:
    """The shared options' rules in a few sentences: `mis-bench --help`'s epilog and docs/installation.md."""
    from mis_bench_dataset.toolkit.options import BOOTSTRAP_RULE

    return (
        "Shared options mean one thing in every command: --predictions names a system's predictions and "
        "--references the gold (a built dataset folder or a labels file); `run` and `batch` read the benchmark "
        "itself with --dataset (its videos and its gold). --out is a folder where a command writes several files, "
        f"a file where it writes one (each help says which). --split's default: {SPLIT_RULE}. --bootstrap N: "
        f"{BOOTSTRAP_RULE}. Old spellings (--judge, --experts, submit --dataset) still work and warn once."
    )


def deprecation_line(command: str, old: str, new: str) -> str:
    """The one line an old spelling prints: `mis-bench CMD: warning: --OLD is deprecated; use --NEW`."""
    return clean_line(f"{command}: warning: {old} is deprecated; use {new}")


def warn_deprecated(command: str, old: str, new: str) -> None:
    """Print `deprecation_line` on stderr (stdout keeps only results, `--json` included)."""
    print(deprecation_line(command, old, new), file=sys.stderr, flush=True)


class _AliasedStore(recorded(argparse._StoreAction)):  # type: ignore[misc]
    """A store action whose `deprecated` option strings still work, each printing one deprecation line once."""

    deprecated: tuple[str, ...] = ()

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        super().__call__(parser, namespace, values, option_string)
        if option_string in self.deprecated:
            seen = getattr(namespace, "deprecated_given", set())
            if option_string not in seen:
                namespace.deprecated_given = {*seen, option_string}
                warn_deprecated(parser.prog, option_string, self.option_strings[0])


def add_aliased(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    *,
    deprecated: Sequence[str] = (),
    **kwargs: Any,
) -> argparse.Action:
    """`parser.add_argument(flag, ...)` that also accepts each `deprecated` spelling (hidden from the help's
    invocation, named at the end of its text) with one warning line."""
    if deprecated:
        kwargs["help"] = f"{kwargs.get('help', '')} (old name {', '.join(deprecated)}: deprecated)"
    action = parser.add_argument(flag, *deprecated, action=_AliasedStore, **kwargs)
    action.deprecated = tuple(deprecated)
    return action


def add_predictions(
    parser: argparse.ArgumentParser,
    what: str,
    *,
    required: bool = True,
    deprecated: Sequence[str] = (),
    nargs: int | str | None = None,
) -> argparse.Action:
    """`--predictions FILE`: a system's predictions, any form `score` reads (CSV/JSONL long or wide, results
    JSON); `what` says what this command reads them as."""
    return add_aliased(
        parser,
        "--predictions",
        deprecated=deprecated,
        required=required,
        type=existing("file"),
        metavar="PREDICTIONS",
        nargs=nargs,
        default=None,
        help=what,
    )


def add_references(
    parser: argparse.ArgumentParser,
    what: str,
    *,
    required: bool = True,
    deprecated: Sequence[str] = (),
    kind: str = "any",
    as_path: bool = True,
) -> argparse.Action:
    """`--references GOLD`: the gold, a built dataset folder (`mis-bench build --out`) or a labels file
    (per-rater or gold) where `kind` is "any"; `what` says what the command uses it for."""
    return add_aliased(
        parser,
        "--references",
        deprecated=deprecated,
        required=required,
        type=existing(kind, as_path=as_path),
        metavar="GOLD",
        default=None,
        help=what,
    )


def add_out(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    kind: str,
    what: str,
    *,
    default: Any = None,
    required: bool = False,
) -> argparse.Action:
    """`--out`: `kind` "folder" (the command writes several files) or "file" (it writes one); the help starts
    with which, then `what` (what goes there, and what leaving it out means)."""
    lead = {"folder": OUT_FOLDER, "file": OUT_FILE}[kind]
    metavar = "DIR" if kind == "folder" else "FILE"
    return parser.add_argument(
        "--out", type=Path, default=default, required=required, metavar=metavar, help=f"{lead}: {what}"
    )


def add_split(
    parser: argparse.ArgumentParser, role: str, when: str, *, every: bool = True, default: str | None = ...
) -> argparse.Action:
    """`--split NAME` (and `all` where `every`) with the default `SPLIT_RULE` gives a command of `role` ("judge"
    or "sample"); `when` says when the split applies (e.g. "when --references is a build"); `default` None only
    where the command inherits a split from its inputs (`jury`: its members', else the rule's)."""
    rule = SPLIT_DEFAULTS[role]
    why = "the held-out split" if role == "judge" else "every labelled video"
    shown = f"{rule}, {why}" if default is ... else f"its inputs' split, else {rule}, {why}"
    return parser.add_argument(
        "--split",
        default=rule if default is ... else default,
        choices=(*SPLITS, ALL_SPLITS) if every else SPLITS,
        help=f"dataset split {when}" + (f"; {ALL_SPLITS}: every split" if every else "") + f" (default: {shown})",
    )


def positional_or_flag(args: argparse.Namespace, positional: str, flag: str, *, where: str) -> Any:
    """The value given either as the positional `positional` or as `--flag` (both name one input); a usage
    error when both or neither are given."""
    from mis_bench_dataset.toolkit.errors import UsageError

    given, flagged = getattr(args, positional), getattr(args, flag)
    empty = given is None or given == []
    if flagged is not None and not empty:
        raise UsageError(f"{where} given twice", where=f"--{flag}", hint=f"give either {where} or --{flag}, not both")
    if flagged is None and empty:
        raise UsageError(f"{where} is required", where=f"--{flag}", hint=f"give {where} (or --{flag})")
    return flagged if flagged is not None else given


def require_resamples(n_bootstrap: int, what: str) -> None:
    """`--bootstrap 0` (no resampling) where the command's result is itself drawn from resamples (`compare`'s
    paired test, `plan`'s sizes, the leaderboard's comparisons with its leader, the paper's CIs `reproduce`
    checks): refused as a usage error saying so, never an empty result."""
    from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, MIN_BOOTSTRAP
    from mis_bench_dataset.toolkit.errors import UsageError

    if n_bootstrap == 0:
        raise UsageError(
            f"{what} is drawn from resamples; --bootstrap 0 (no resampling) leaves nothing to report",
            where="--bootstrap",
            hint=f"give --bootstrap {MIN_BOOTSTRAP} or more (default {DEFAULT_BOOTSTRAP:,})",
        )
