"""A command line that names a command builds only that command's parser (`eval_scripts.cli._command_parser`),
and what it parses and prints is what the whole parser's would be: the same help, the same defaults, the same
errors. Anything else (no command, a top-level --help or --version, `help`, a mistyped name) gets the whole parser.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import pytest

from eval_scripts.cli import COMMAND_MODULES, SUBCOMMANDS, _command_parser, _parser, build_parser, main

FULL = build_parser()
FULL_COMMANDS = FULL._subparsers._group_actions[0].choices


def _commands(parser) -> dict:
    return dict(parser._subparsers._group_actions[0].choices)


def _outcome(parser, argv: list[str]) -> tuple:
    """The parsed values (but the function), or the exit code and what was printed on stderr."""
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            parsed = parser.parse_args(argv)
        except SystemExit as stop:
            return stop.code, err.getvalue()
    return tuple((key, repr(value)) for key, value in sorted(vars(parsed).items()) if key != "func")


@pytest.mark.parametrize("module", SUBCOMMANDS)
def test_every_command_is_mapped_to_the_module_that_registers_it(module):
    """COMMAND_MODULES (else a command's own name) names the module that registers it, for every command."""
    assert {name for name in FULL_COMMANDS if name != "help"} <= {*COMMAND_MODULES, *SUBCOMMANDS}
    registered = set(_commands(_parser((module,))))
    assert registered == {name for name in FULL_COMMANDS if COMMAND_MODULES.get(name, name) == module}


@pytest.mark.parametrize("name", sorted(name for name in FULL_COMMANDS if name != "help"))
def test_a_commands_own_parser_prints_and_parses_as_the_whole_one(name):
    """Its help text, its prog and its parsed defaults equal the whole parser's."""
    own = _command_parser([name])
    assert name in _commands(own) and len(_commands(own)) < len(FULL_COMMANDS)
    assert _commands(own)[name].format_help() == FULL_COMMANDS[name].format_help()
    assert own.format_usage() == FULL.format_usage()
    assert _outcome(own, [name]) == _outcome(FULL, [name])  # a bare command: its defaults, or the same error


@pytest.mark.parametrize(
    "argv",
    [[], ["--help"], ["--version"], ["help", "run"], ["trust_card"], ["scroe"], ["--deb", "score"], ["-x", "score"]],
    ids=repr,
)
def test_anything_but_a_named_command_gets_the_whole_parser(argv):
    assert set(_commands(_command_parser(argv))) == set(FULL_COMMANDS)


@pytest.mark.parametrize("argv", [["score"], ["-v", "score"], ["-vv", "--debug", "--progress", "score"]], ids=repr)
def test_top_level_switches_before_the_command_keep_it_light(argv):
    assert set(_commands(_command_parser(argv))) == {"score", "compare"}


def test_errors_read_the_same(capsys):
    """An unknown option of a command and a bad value: the same one line, the same exit code."""
    for argv in (["score", "--bogus"], ["stats", "--split", "nowhere"], ["run", "--concurrency", "x"]):
        code = main(argv)
        light = capsys.readouterr().err
        with pytest.raises(SystemExit) as full:
            FULL.parse_args(argv)
        assert (code, light) == (full.value.code, capsys.readouterr().err), argv


def test_score_imports_none_of_the_model_runs_modules():
    """A fresh `mis-bench score --help` imports neither `run`'s nor `batch`'s module nor the HTTP backend."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from eval_scripts.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['score', '--help'])\n"
        "names = ('eval_scripts.cli.run', 'eval_scripts.cli.batch', 'eval_scripts.backends.openai_backend')\n"
        "print(json.dumps({'code': code, 'loaded': [m for m in names if m in sys.modules]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"code": 0, "loaded": []}
