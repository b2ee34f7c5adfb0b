"""Every `mis-bench` subcommand's options, walked from the real parser (a subcommand added later, such as
`mis-bench train`, is covered without touching this file): each option has help, the help shows its default,
a concept is spelt one way everywhere, `--json` is a switch everywhere, and shared options have one default."""

from __future__ import annotations

import argparse
import inspect
import re

import pytest

from eval_scripts.cli import build_parser, shown_default
from eval_scripts.cli.args import DEFAULT_BOOTSTRAP

# concept -> (the one flag, a pattern no other flag or dest may match)
CONCEPTS = {
    "bootstrap resamples": ("--bootstrap", re.compile(r"^(n[-_])?(bootstraps?|resamples|n[-_]?boot)$")),
    "resampling unit": ("--resample", re.compile(r"^(resample|resampling|resample[-_]unit|cluster[-_]by)$")),
    "random seed": ("--seed", re.compile(r"^(random|rng)[-_]?seed$|^seeds?$")),
    "machine-readable output": ("--json", re.compile(r"^(json|as[-_]json|json[-_](out|output|file))$")),
    "output location": ("--out", re.compile(r"^(out|output|outdir|out[-_]dir|output[-_](dir|folder|file))$")),
    "dataset split": ("--split", re.compile(r"^splits?$")),
}
# Two spellings of one option, kept because other commands' messages, recipes and the paper's docs use them; and
# the trainer's name of a setting the harness shares (`train --prompt_style`: one vocabulary for both).
KNOWN_ALIASES = {("--max-new-tokens", "--max-tokens"), ("--split-by", "--split-scheme"), ("--prompt", "--prompt_style")}


def _parsers(parser: argparse.ArgumentParser, name: str = "mis-bench"):
    """(command name, parser) of every subcommand, nested ones (`cache check`) included."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


PARSERS = dict(_parsers(build_parser()))
OPTIONS = [
    (command, action)
    for command, parser in PARSERS.items()
    for action in parser._actions
    if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction))
]


def _id(item) -> str:
    return f"{item[0]} {item[1].option_strings[0]}"


def _rendered_help(command: str, action: argparse.Action) -> str:
    formatter = PARSERS[command]._get_formatter()
    return " ".join(formatter._expand_help(action).split()) if action.help else ""


def test_walk_finds_every_subcommand():
    names = {name.split(" ")[1] for name in PARSERS if " " in name}
    assert {"synth", "build", "stats", "score", "compare", "run", "report", "leaderboard", "submit"} <= names
    assert len(OPTIONS) > 100


@pytest.mark.parametrize("item", OPTIONS, ids=_id)
def test_every_option_has_help_showing_its_default(item):
    command, action = item
    text = _rendered_help(command, action)
    assert text.strip(), f"{command} {action.option_strings[0]} has no help"
    value = shown_default(action.default)
    if value is None:
        if not action.required and action.nargs != 0 and not isinstance(action, argparse._AppendAction):
            # an option that may be left out says what leaving it out means
            assert "default" in text.lower(), f"{command} {action.option_strings}: help does not say what not set means"
        return
    forms = {value, value.replace(",", "")}
    if isinstance(action.default, float) and action.default == int(action.default):
        forms.add(f"{int(action.default):,}")
    assert "default" in text.lower() and any(form in text for form in forms), (
        f"{command} {action.option_strings}: help {text!r} does not show its default {value!r}"
    )
    assert "default: None" not in text


@pytest.mark.parametrize("item", OPTIONS, ids=_id)
def test_one_spelling_per_concept(item):
    command, action = item
    # a deprecated spelling (`common_options.add_aliased`) is the old name kept working, not a second spelling
    old = getattr(action, "deprecated", ())
    longs = tuple(flag for flag in action.option_strings if flag.startswith("--") and flag not in old)
    if len(longs) > 1:
        assert longs in KNOWN_ALIASES, f"{command}: {longs} spells one option two ways"
    for concept, (flag, variants) in CONCEPTS.items():
        names = {flag.lstrip("-") for flag in longs} | {action.dest}
        for name in names:
            if variants.match(name):
                assert flag in longs and name in (flag.lstrip("-"), action.dest), (
                    f"{command}: {action.option_strings} (dest {action.dest}) spells {concept!r}; use {flag}"
                )
                assert action.dest == flag.lstrip("-"), f"{command}: {flag} stored as {action.dest}"


def test_json_is_a_switch_everywhere():
    found = [(command, action) for command, action in OPTIONS if "--json" in action.option_strings]
    assert len(found) >= 12
    for command, action in found:
        assert action.nargs == 0 and action.default is False, f"{command} --json takes a value"


def test_bootstrap_and_seed_defaults_are_the_metrics():
    from mis_bench_dataset.dimensions import PAPER_BOOTSTRAP_RESAMPLES
    from mis_icc_metric import paired_comparison, score_predictions

    metric_default = inspect.signature(score_predictions).parameters["resampling"].default.n_bootstrap
    assert DEFAULT_BOOTSTRAP == metric_default == PAPER_BOOTSTRAP_RESAMPLES
    assert inspect.signature(paired_comparison).parameters["resampling"].default.n_bootstrap == metric_default
    for command, action in OPTIONS:
        if "--bootstrap" in action.option_strings:
            assert action.default == DEFAULT_BOOTSTRAP, f"{command} --bootstrap defaults to {action.default}"
        if "--seed" in action.option_strings and command != "mis-bench build":  # build: 0, or the authors' 42
            assert action.default == 0, f"{command} --seed defaults to {action.default}"


def test_run_help_starts_with_what_it_does_with_and_without_a_model(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    description = text.split("options:")[0].split("]")[-1].strip()
    assert description.startswith("With --backend and --model:")
    assert "Without a model" in description and "default job" in description and "synthetic" in description


def test_old_spellings_are_usage_errors(capsys):
    from eval_scripts.cli import main

    old = "--n-" + "bootstrap"  # spelt in two pieces so that a search for the old flag finds only this test
    assert main(["run", old, "10"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mis-bench run: error: unrecognized arguments: " + old) and err.count("\n") == 1


# Options in seconds that are a limit compared against, never a wait handed to a socket or a timer.
SECONDS_LIMITS = {("mis-bench build", "--max-duration")}


@pytest.mark.parametrize(
    "item",
    [
        item
        for item in OPTIONS
        if item[1].metavar == "SECONDS" or (item[1].help or "").lower().startswith("seconds")
        if (item[0], item[1].option_strings[0]) not in SECONDS_LIMITS
    ],
    ids=_id,
)
def test_every_wait_in_seconds_refuses_what_a_timer_cannot_hold(item, capsys):
    """A timeout of 1e20 s overflowed the platform's time type inside the socket (found by the CLI fuzz on
    `fetch --timeout`): every wait is refused above a week, with the usage line, before anything runs."""
    from eval_scripts.cli import main

    command, action = item
    flag = action.option_strings[0]
    assert main([*command.split()[1:], flag, "99999999999999999999"]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "at most 604,800 seconds" in err and err.count("\n") == 1
    assert action.type(str(7 * 24 * 3600)) == 7 * 24 * 3600
