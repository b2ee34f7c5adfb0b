"""Typed command-line values, defined once below the CLI: parsers that refuse a bad value with a message
naming what is wrong (argparse shows it under the flag, exit 2), and `option`, the metadata of a dataclass
field that becomes a flag (`eval_scripts.cli.args.add_fields` reads it, the way `HfArgumentParser` reads a
dataclass's fields), so a default, its help and its validator are written once, on the field; and the
factories of the options several commands share (`bootstrap_option`, `resample_option`, `seed_option`).
"""

from __future__ import annotations

import argparse
import math
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mis_bench_dataset.toolkit.defaults import (
    DEFAULT_BOOTSTRAP,
    DEFAULT_RESAMPLE,
    DEFAULT_SEED,
    MAX_BOOTSTRAP,
    MIN_BOOTSTRAP,
    RESAMPLE_UNITS,
)
from mis_bench_dataset.toolkit.errors import UsageError, os_error_line
from mis_bench_dataset.toolkit.urls import http_url_list

# What `option` passes on to argparse's `add_argument` as it is (its own names): the parser, the allowed values,
# the value's name in the help and the action.
ARGPARSE_KEYWORDS = ("type", "choices", "metavar", "action")


def option(
    help: str,  # noqa: A002 - argparse's name
    *,
    flag: str | None = None,
    dest: str | None = None,
    aliases: Sequence[str] = (),
    section: str = "main",
    cli_default: Any = ...,
    **argparse_keywords: Any,
) -> dict[str, Any]:
    """A field's `metadata`, e.g. `field(default=8, metadata=option("requests in flight", type=positive_int))`.

    `flag` defaults to `--field-name` and `dest` (the parsed attribute) to the field's name; `aliases` are
    further spellings; `section` says under which heading `--help` lists it; `cli_default` is the command
    line's default where it differs from the field's (None where the command picks the value by mode, e.g.
    the output folder; `...`: the field's own). `argparse_keywords`: `ARGPARSE_KEYWORDS` (`type`, `choices`,
    `metavar`, `action`), given to `add_argument` as argparse names them; any other name is refused."""
    unknown = sorted(set(argparse_keywords) - set(ARGPARSE_KEYWORDS))
    if unknown:
        raise TypeError(f"option() got unexpected keyword(s) {', '.join(unknown)}; it passes on {ARGPARSE_KEYWORDS}")
    spec = {"help": help, "flag": flag, "dest": dest, "aliases": tuple(aliases)}
    spec.update({name: argparse_keywords.get(name) for name in ARGPARSE_KEYWORDS})
    spec.update(section=section, cli_default=cli_default)
    return spec


def argparse_metadata(spec: Mapping[str, Any]) -> dict[str, Any]:
    """An `option`'s help and choices in the words of `HfArgumentParser` (TRL's `TrlParser`), which passes a
    field's metadata to `add_argument` as it is and takes the type from the field: a config parsed by it
    embeds fields declared with `option` through this."""
    kept = {"help": spec["help"]}
    if spec.get("choices") is not None:
        kept["choices"] = list(spec["choices"])
    return kept


def _number(kind: type, text: str) -> float | int:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None


def positive_int(text: str) -> int:
    value = _number(int, text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(int, text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def bounded_int(low: int, high: int):
    """An int in [low, high]: for counts whose size drives memory or time (bootstrap resamples, videos)."""

    def parse(text: str) -> int:
        value = _number(int, text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}, got {value:,}")
        return value

    parse.__name__ = "int"
    return parse


def resample_count(floor: int, high: int):
    """0 (no resampling) or an int in [floor, high]: the one bounds rule of every `--bootstrap`
    (`BOOTSTRAP_RULE`)."""

    def parse(text: str) -> int:
        value = _number(int, text)
        if value != 0 and not floor <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be 0 (no resampling) or between {floor:,} and {high:,}, got {value:,}"
            )
        return value

    parse.__name__ = "int"
    return parse


def positive_float(text: str) -> float:
    value = _number(float, text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a number above 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(float, text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a number of 0 or more, got {text}")
    return value


MAX_WAIT_S = 7 * 24 * 3600  # one week: the longest wait a timeout, backoff or deadline may ask for


def seconds(text: str) -> float:
    """A wait above 0 of at most a week: a timeout or deadline that sockets and timers can hold (a larger
    one overflows the platform's time type)."""
    value = positive_float(text)
    if value > MAX_WAIT_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_WAIT_S:,} seconds (a week), got {text}")
    return value


def wait_seconds(text: str) -> float:
    """A wait of 0 up to a week (a backoff between retries)."""
    value = non_negative_float(text)
    if value > MAX_WAIT_S:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_WAIT_S:,} seconds (a week), got {text}")
    return value


def probability(text: str) -> float:
    """A level strictly between 0 and 1 (a confidence level)."""
    value = _number(float, text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text}")
    return value


def unit_interval(text: str) -> float:
    """A value in [0, 1] (top-p)."""
    value = _number(float, text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must lie between 0 and 1, got {text}")
    return value


def comma_list(choices: tuple[str, ...]):
    """A comma-separated subset of `choices`, in the given order, without repeats."""

    def parse(text: str) -> list[str]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        unknown = [item for item in items if item not in choices]
        if unknown or not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated subset of {', '.join(choices)}; got {text!r}")
        return list(dict.fromkeys(items))

    parse.__name__ = "list"
    return parse


def http_urls(text: str) -> str:
    """One http(s) URL or a comma list of them, each checked (`toolkit.urls.http_url`); the text as given."""
    try:
        http_url_list(text, where="")
    except UsageError as err:
        raise argparse.ArgumentTypeError(f"{err.what}; {err.hint}") from None
    return text


def _stat(path: Path, text: str) -> os.stat_result | None:
    """The path's status, None when there is nothing there; any other operating-system error (no permission,
    a name too long, a link loop, an I/O error) is a usage error naming the argument, in the toolkit's words."""
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise argparse.ArgumentTypeError(os_error_line(err, text)) from None


def existing(kind: str, *, as_path: bool = True):
    """An input path that must exist as a `kind` ("file", "folder" or "any"), checked when parsed: a path
    that does not exist, is of the wrong kind or cannot be looked at is a usage error naming the argument
    (exit 2), before any work.

    Returns a Path (or the text as given, `as_path=False`, where the command expects a string).
    """
    if kind not in ("file", "folder", "any"):
        raise ValueError(f"kind must be 'file', 'folder' or 'any', got {kind!r}")

    def parse(text: str) -> Path | str:
        path = Path(text).expanduser()
        status = _stat(path, text)
        if status is None:
            raise argparse.ArgumentTypeError(f"no such {'file or folder' if kind == 'any' else kind}: {text}")
        if kind == "file" and stat.S_ISDIR(status.st_mode):
            raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
        if kind == "folder" and not stat.S_ISDIR(status.st_mode):
            raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
        return path if as_path else text

    parse.__name__ = kind
    return parse


def file_path(text: str) -> str:
    """A file that is read and appended to and need not exist yet (a response cache): a folder there, or a
    file where one of its folders should be, is a usage error naming the argument."""
    path = Path(text).expanduser()
    status = _stat(path, text)
    if status is not None and stat.S_ISDIR(status.st_mode):
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    for parent in path.parents:
        status = _stat(parent, str(parent))
        if status is not None and not stat.S_ISDIR(status.st_mode):
            raise argparse.ArgumentTypeError(f"{text} lies inside {parent}, a file, not a folder")
    return text


# One spelling, default and help per concept shared by several commands (tests/test_cli_options.py checks); the
# defaults are `toolkit.defaults`'.
# The one bounds rule of every `--bootstrap` (tests/test_cli_vocabulary.py walks every command against it).
BOOTSTRAP_RULE = (
    "0 (no resampling: CIs and p-values withheld; refused where the result is itself resampled: compare, plan, "
    f"leaderboard, reproduce) or {MIN_BOOTSTRAP} to {MAX_BOOTSTRAP:,}"
)


def bootstrap_option(
    *,
    what: str = "bootstrap resamples for the ICC CIs",
    flag: str = "--bootstrap",
    default: int = DEFAULT_BOOTSTRAP,
    section: str = "main",
) -> dict[str, Any]:
    """`--bootstrap N`: the resample count, `DEFAULT_BOOTSTRAP` (the paper's 10,000) unless a command says why not;
    every command's bounds are `BOOTSTRAP_RULE` (0, or `MIN_BOOTSTRAP` to `MAX_BOOTSTRAP`)."""
    text = f"{what}: {BOOTSTRAP_RULE} (default: {default:,}" + (
        ", the paper's)" if default == DEFAULT_BOOTSTRAP else ")"
    )
    dest = flag.lstrip("-").replace("-", "_")
    kind = resample_count(MIN_BOOTSTRAP, MAX_BOOTSTRAP)
    return option(text, flag=flag, dest=dest, type=kind, metavar="N", section=section)


def resample_option(*, default: str = DEFAULT_RESAMPLE, section: str = "main") -> dict[str, Any]:
    """`--resample video|clinician`: what one bootstrap draw resamples (every CI and paired test of the command)."""
    return option(
        "what each bootstrap resample draws: 'clinician' (all of a clinician's videos together: the clustered,"
        " honest CI) or 'video' (videos as if independent: the paper's protocol)"
        f" (default: {default})",
        flag="--resample",
        choices=RESAMPLE_UNITS,
        section=section,
    )


def seed_option(what: str = "bootstrap seed", *, section: str = "main") -> dict[str, Any]:
    """`--seed S`: the one random seed of a command (what it seeds is said per command)."""
    return option(
        f"{what} (default: {DEFAULT_SEED})", flag="--seed", type=non_negative_int, metavar="S", section=section
    )
