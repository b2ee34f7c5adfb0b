"""Argument types and output helpers shared by every `mis-bench` subcommand.

Numbers are validated when parsed (a negative count or a zero timeout is a usage error
naming the flag, not a crash later); choices come from the constants that define them;
`--json` output is strict JSON (`null`, never NaN or Infinity).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.options import (  # noqa: F401 - the argument types, re-exported for every subcommand
    bootstrap_option,
    bounded_int,
    comma_list,
    existing,
    file_path,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
    resample_option,
    seconds,
    seed_option,
    unit_interval,
    wait_seconds,
)
from mis_bench_dataset.toolkit.text_safety import clean_line, clean_terminal
from mis_bench_dataset.wording import RESEARCH_USE


def shown_default(default: object) -> str | None:
    """An option's default as its help shows it; None when there is nothing to show (a switch, not set)."""
    if default is None or default is False or default is True or default == argparse.SUPPRESS:
        return None
    if isinstance(default, (list, tuple)):
        return ",".join(str(item) for item in default) or None
    if isinstance(default, int):
        return f"{default:,}"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


# One definition per option concept shared by several subcommands: one spelling, one default, one help
# (tests/test_cli_options.py walks every subcommand's parser and checks it).
def add_bootstrap(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    *,
    what: str = "bootstrap resamples for the ICC CIs",
    flag: str = "--bootstrap",
    default: int = DEFAULT_BOOTSTRAP,
) -> None:
    """`--bootstrap N`: the resample count, `DEFAULT_BOOTSTRAP` (the paper's 10,000) unless a command says why not;
    its bounds are every command's (`BOOTSTRAP_RULE`)."""
    add_option(parser, "bootstrap", bootstrap_option(what=what, flag=flag, default=default), default)


def add_by(parser: argparse.ArgumentParser) -> None:
    """`--by GROUPING[,...]`: agreement by subgroup and at the therapist level (`mis_icc_metric.groups`)."""
    from mis_bench_dataset.video_ids import BY_CHOICES

    parser.add_argument(
        "--by",
        type=comma_list(BY_CHOICES),
        default=None,
        metavar="GROUPING",
        help="also agreement by subgroup, a comma list of time_point, stimulus, clinician (ICC(3,1), bias and MAE per "
        "group with CIs, and a test of equal bias across groups) and therapist (a clinician's mean over the "
        f"stimuli per time point, and each clinician's change from T1 to T3, with clinician-resampled CIs); "
        f"{RESEARCH_USE}; needs the gold scores (default: none)",
    )


def add_resample(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, default: str = DEFAULT_RESAMPLE) -> None:
    """`--resample video|clinician`: what each bootstrap resample of the command's CIs and paired tests draws."""
    add_option(parser, "resample", resample_option(default=default), default)


def add_confidence(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """`--confidence P`: the level of every CI the command reports, `DEFAULT_CONFIDENCE` (95%)."""

    parser.add_argument(
        "--confidence", type=probability, default=DEFAULT_CONFIDENCE, help=f"CI level (default: {DEFAULT_CONFIDENCE})"
    )


def add_seed(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *, what: str = "bootstrap seed") -> None:
    """`--seed S`: the one random seed of a command (what it seeds is said per command)."""
    add_option(parser, "seed", seed_option(what), DEFAULT_SEED)


def add_option(parser, dest: str, spec: dict[str, Any], default: Any) -> None:
    """One argparse option from an `option(...)` spec (`mis_bench_dataset.toolkit.options`)."""
    flag = spec["flag"] or "--" + dest.replace("_", "-")
    # A callable help or choices is read now, when the parser is built (installed backends' names).
    spec = {key: value() if key in ("help", "choices") and callable(value) else value for key, value in spec.items()}
    kwargs: dict[str, Any] = {"dest": spec["dest"] or dest, "help": spec["help"]}
    kwargs["default"] = default if spec["cli_default"] is ... else spec["cli_default"]
    if spec["action"]:
        kwargs["action"] = spec["action"]
        if spec["action"] == "append":  # argparse appends to a default: none here, the field's when not given
            kwargs["default"] = None
    kwargs.update({key: spec[key] for key in ("type", "choices", "metavar") if spec[key] is not None})
    parser.add_argument(flag, *spec["aliases"], **kwargs)


def add_fields(parser, config_class: type, section: str) -> list[str]:
    """One option per field of the dataclass `config_class` whose metadata is an `option` of `section`, in field
    order (the class's own fields before those it inherits, e.g. `RunConfig`'s before its `Setting`'s), with the
    field's default (the way `HfArgumentParser` reads a dataclass); returns their names."""
    added = []
    own = set(vars(config_class).get("__annotations__", {}))
    for item in sorted(dataclasses.fields(config_class), key=lambda item: item.name not in own):
        if "help" not in item.metadata or item.metadata["section"] != section:
            continue
        if item.default is not dataclasses.MISSING:
            default = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        else:
            default = None  # a required field: the command says what leaving it out means
        add_option(parser, item.name, item.metadata, default)
        added.append(item.name)
    return added


def config_from_args(config_class: type, args: argparse.Namespace, **overrides: Any):
    """The dataclass from the parsed options that are its fields (`add_fields`), then `overrides`."""
    dests = {
        item.name: item.metadata["dest"] or item.name
        for item in dataclasses.fields(config_class)
        if "help" in item.metadata
    }
    given = {name: getattr(args, dest) for name, dest in dests.items() if hasattr(args, dest)}
    appended = {item.name for item in dataclasses.fields(config_class) if item.metadata.get("action") == "append"}
    given = {name: value for name, value in given.items() if not (name in appended and value is None)}
    return config_class(**{**given, **overrides})


def add_judge_and_experts(parser: argparse.ArgumentParser, *, experts_help: str) -> None:
    """`--predictions`, `--references` and `--split` (default all: the labels are the sample): a judge on every
    video and experts on a few, as `estimate` and `trust` read them (`experts_help` says what the labels are used
    for); `--judge` and `--experts` are their deprecated names."""
    from eval_scripts.cli.common_options import add_predictions, add_references, add_split

    add_predictions(
        parser,
        "the judge's predictions on every video (any predictions file `score` reads)",
        deprecated=("--judge",),
    )
    add_references(
        parser, f"expert labels (any --references form `score` reads): {experts_help}", deprecated=("--experts",)
    )
    add_split(parser, "sample", "when --references is a built folder")


def add_json(parser: argparse.ArgumentParser, *, what: str = "the result") -> None:
    """`--json`: a switch everywhere. stdout then carries only strict JSON (progress and notes go to stderr);
    a command that also writes its JSON to a file takes the file with `--out`."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as strict JSON on stdout (instead of text)")


def strict_json(payload: Any) -> str:
    """JSON with undefined numbers as null (strict JSON has no NaN / Infinity)."""
    from mis_bench_dataset.toolkit.jsonio import json_safe

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
