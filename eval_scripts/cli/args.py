"""Argument types and output helpers shared by every `mis-bench` subcommand.

Numbers are validated when parsed (a negative count or a zero timeout is a usage error
naming the flag, not a crash later); choices come from the constants that define them;
`--json` output is strict JSON (`null`, never NaN or Infinity).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from mis_bench_dataset.dimensions import DEFAULT_BOOTSTRAP, PAPER_BOOTSTRAP_RESAMPLES
from mis_bench_dataset.rules.text_safety import clean_line, clean_terminal


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


def existing(kind: str, *, as_path: bool = True):
    """An input path that must exist as a `kind` ("file", "folder" or "any"), checked when parsed: a path
    that does not exist or is of the wrong kind is a usage error naming the argument (exit 2), before any work.

    Returns a Path (or the text as given, `as_path=False`, where the command expects a string).
    """
    if kind not in ("file", "folder", "any"):
        raise ValueError(f"kind must be 'file', 'folder' or 'any', got {kind!r}")

    def parse(text: str) -> Path | str:
        path = Path(text).expanduser()
        if not path.exists():
            raise argparse.ArgumentTypeError(f"no such {'file or folder' if kind == 'any' else kind}: {text}")
        if kind == "file" and path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
        if kind == "folder" and not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
        return path if as_path else text

    parse.__name__ = kind
    return parse


def file_path(text: str) -> str:
    """A file that is read and appended to and need not exist yet (a response cache): a folder there, or a
    file where one of its folders should be, is a usage error naming the argument."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    blocking = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise argparse.ArgumentTypeError(f"{text} lies inside {blocking}, a file, not a folder")
    return text


# One definition per option concept shared by several subcommands: one spelling, one default, one help
# (tests/test_cli_options.py walks every subcommand's parser and checks it).
def add_bootstrap(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    minimum: int = 0,
    what: str = "bootstrap resamples for the ICC CIs",
    flag: str = "--bootstrap",
    default: int = DEFAULT_BOOTSTRAP,
) -> None:
    """`--bootstrap N`: the resample count, `DEFAULT_BOOTSTRAP` (the paper's 10,000) unless a command says why not."""
    from mis_icc_metric.bootstrap import MAX_BOOTSTRAP

    parser.add_argument(
        flag,
        type=bounded_int(minimum, MAX_BOOTSTRAP),
        default=default,
        metavar="N",
        help=f"{what}, {minimum} to {MAX_BOOTSTRAP:,}"
        + (" (0: no CIs)" if minimum == 0 else "")
        + f" (default: {default:,}"
        + (", the paper's)" if default == PAPER_BOOTSTRAP_RESAMPLES else ")"),
    )


def add_seed(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, what: str = "bootstrap seed") -> None:
    """`--seed S`: the one random seed of a command (what it seeds is said per command); default 0."""
    parser.add_argument("--seed", type=non_negative_int, default=0, metavar="S", help=f"{what} (default: 0)")


def add_json(parser: argparse.ArgumentParser, *, what: str = "the result") -> None:
    """`--json`: a switch everywhere. stdout then carries only strict JSON (progress and notes go to stderr);
    a command that also writes its JSON to a file takes the file with `--out`."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as strict JSON on stdout (instead of text)")


def strict_json(payload: Any) -> str:
    """JSON with undefined numbers as null (strict JSON has no NaN / Infinity)."""
    from mis_bench_dataset.rules.jsonio import json_safe

    return json.dumps(json_safe(payload), indent=1, ensure_ascii=False, allow_nan=False)


def print_json(payload: Any) -> None:
    print(strict_json(payload))


def shown(value: object) -> str:
    """A user's value (a path, a model or file name) inside a printed line: control characters, newlines
    included, as visible escapes, so a hostile name can neither break nor forge the line."""
    return clean_line(str(value))


def say(text: str = "", *, err: bool = False) -> None:
    """Print one line of human output with control and bidi characters made visible."""
    print(clean_terminal(text), file=sys.stderr if err else sys.stdout, flush=True)
