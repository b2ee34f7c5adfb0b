"""The `mis-bench` console script: one entry point at the top layer, one module per subcommand.

Each subcommand module exposes `register(subparsers)`, which adds its parser and sets
`func` (parsed arguments -> exit code). Subcommand modules keep their top-level imports
light so `mis-bench --help` stays fast; the work happens in the library layers below. A command
line that names its command imports and registers only that command's module (`mis-bench score`
starts in about 0.18 s, not 0.30: none of the model run's modules and backends); `--help`, `help`
and anything argparse would answer with the list of commands get the whole parser.

Failures follow one convention (`mis_bench_dataset.toolkit.errors`): an expected failure prints one
line on stderr, `mis-bench CMD: error: WHAT (WHERE); WHAT TO DO`, and exits 2 (usage), 1 (data)
or 3 (failed model requests); Ctrl-C exits 130 and SIGTERM 143, saying what was kept (both
unwind the command, so its temporary files and staging folders are removed). A traceback
appears only with `--debug` (or `MIS_BENCH_DEBUG=1`).

The CLI only parses arguments, calls one library function and prints; nothing outside `cli/` imports it.

- `args`: argument types and output helpers shared by every subcommand.
- `process_settings`: the process-wide settings the console script makes for itself (OpenBLAS's idle threads,
  glibc keeping freed memory), each yielding to the user's.
- `common_options`: the CLI's one vocabulary (`--predictions`, `--references`, `--out`, `--split`), declared once.
- `backends`: `mis-bench backends [B]`: the backends `run` takes, or one backend's options (`run -M`).
- `batch`: `mis-bench batch export|import` (provider batch files of a model run; `run --export-batch` is its alias).
- `build`: `mis-bench build`.
- `cache`: `mis-bench cache check|merge`.
- `calibrate`: `mis-bench calibrate` (and `--apply`).
- `estimate`: `mis-bench estimate` (PPI++ means from a judge on every video and experts on a few).
- `trust_card`: `mis-bench trust` (one page answering "can I use this judge?": verdict, number to cite, flags).
- `fetch`: `mis-bench fetch`: the authors' public files at their pinned commits, verified.
- `jury`: `mis-bench jury`: several systems' predictions combined into a new system.
- `leaderboard`: `mis-bench submit` and `mis-bench leaderboard`.
- `leaderboard_authors`: `mis-bench leaderboard --from-authors DIR` (the real leaderboard page).
- `parse`: `mis-bench parse`.
- `plan`: `mis-bench plan` (how many videos, clinicians or expert labels an evaluation needs).
- `report`: `mis-bench report`.
- `reproduce`: `mis-bench reproduce table4|table6`.
- `run`: `mis-bench run`.
- `run_flags`: the flags of a model run and the RunConfig they give, shared by `run` and `batch`.
- `run_lines`: what a model run prints (summary, run line, problems, exit code, dry-run plan), for `run` and `batch`.
- `score`: `mis-bench score` and `mis-bench compare`.
- `stats`: `mis-bench stats`.
- `synth`: `mis-bench synth`.
- `train`: `mis-bench train`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import importlib
import logging
import os
import signal
import sys
import threading
import types
from collections.abc import Sequence

from eval_scripts.cli import process_settings
from eval_scripts.cli.args import shown_default
from eval_scripts.cli.common_options import vocabulary
from mis_bench_dataset.toolkit.errors import (
    EXIT_DATA,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    MisBenchError,
    Terminated,
    os_error_line,
)
from mis_bench_dataset.toolkit.given import recording
from mis_bench_dataset.toolkit.text_safety import clean_line, clean_terminal

# The subcommand modules (each `register`s its commands); order is the order `--help` lists them in.
SUBCOMMANDS = (
    "synth",
    "fetch",
    "build",
    "stats",
    "score",
    "calibrate",
    "estimate",
    "plan",
    "trust_card",
    "run",
    "batch",
    "backends",
    "parse",
    "cache",
    "report",
    "jury",
    "leaderboard",
    "reproduce",
    "train",
)
# Each command's module, where it is not the command's name (tests/test_cli_lazy.py checks the map is whole).
COMMAND_MODULES = {"compare": "score", "trust": "trust_card", "submit": "leaderboard"}
# The top-level options, as they may come before a command: none takes a value.
_TOP_SWITCHES = frozenset({"--verbose", "--debug", "--progress"})


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the help already says it (argparse's
    ArgumentDefaultsHelpFormatter would also print "(default: None)" on every switch and unset option)."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        """The option's spellings, less its deprecated ones (`common_options.add_aliased`: its help names them)."""
        old = getattr(action, "deprecated", ())
        if not old:
            return super()._format_action_invocation(action)
        shown_action = copy.copy(action)
        shown_action.option_strings = [flag for flag in action.option_strings if flag not in old]
        return super()._format_action_invocation(shown_action)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        value = shown_default(action.default)
        if not action.option_strings or value is None or "default" in text.lower():
            return text
        return f"{text} (default: {value.replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """argparse with the toolkit's one-line error format (its own is a usage block plus a line), every
    option's default in its help, and the options the user gave recorded as they are parsed (`given_flags`)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)
        recording(self)

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        """argparse's, with arguments no parser knows reported under the subcommand that was given."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self._command = getattr(parsed, "command", None)
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.split(" ", 1)[1] if " " in self.prog else getattr(self, "_command", None) or ""
        prog = f"mis-bench {command}".strip()
        hint = f"see `{prog} --help`"
        if message.startswith("unrecognized arguments") and ".json" in message:
            hint = f"--json is a switch (JSON on stdout); write a JSON file with --out FILE; {hint}"
        self.exit(EXIT_USAGE, clean_line(f"{prog}: error: {message}; {hint}") + "\n")


@functools.cache
def _version() -> str:
    """The installed version (read from the package metadata once per process: each parser shows it)."""
    from importlib import metadata

    try:
        return metadata.version("mis-bench")
    except metadata.PackageNotFoundError:  # running from a source tree that is not installed
        return "unknown"


def _module(name: str) -> types.ModuleType:
    """Subcommand module `name`, imported when a parser needs it (not when the CLI package is imported)."""
    return importlib.import_module(f"eval_scripts.cli.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The whole `mis-bench` parser: every command's (what `--help`, `help` and a mistyped command show)."""
    return _parser(SUBCOMMANDS)


def _command_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser `argv` needs: when it names a command after nothing but the top-level switches, only that
    command's module is imported and registered (one parser, not about thirty: a command line parses in about
    1 ms, not 9, and a `score` imports none of the model run's modules); anything else (no command, --help or
    --version first, an abbreviated switch, `help`, an unknown name) gets the whole parser, so what argparse
    prints is the same either way."""
    for arg in argv:
        if arg in _TOP_SWITCHES or (len(arg) > 1 and arg.strip("v") == "-"):  # -v, -vv ...
            continue
        module = COMMAND_MODULES.get(arg, arg)
        if module in SUBCOMMANDS:
            parser = _parser((module,))
            if arg in parser._subparsers._group_actions[0].choices:  # a command, not a module's name
                return parser
        break
    return build_parser()


def _parser(modules: Sequence[str]) -> argparse.ArgumentParser:
    parser = Parser(
        prog="mis-bench",
        description="MIS-Bench: judge therapists' interpersonal skills against expert FIS ratings.",
        epilog=vocabulary(),
    )
    parser.add_argument("--version", action="version", version=f"mis-bench {_version()}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log what each step does and writes (the INFO lines); -vv also debug messages; quiet: warnings only",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of a failure (also MIS_BENCH_DEBUG=1)"
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="draw progress bars even when stderr is not a terminal (a log file, a pipe); default: on a terminal only",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in modules:
        _module(name).register(subparsers)
    if len(modules) == len(SUBCOMMANDS):
        _register_help(subparsers, parser)
    return parser


def _register_help(subparsers, parser: argparse.ArgumentParser) -> None:
    """`mis-bench help [COMMAND]`: the same text as `mis-bench [COMMAND] --help`."""
    names = list(subparsers.choices)
    helper = subparsers.add_parser("help", help="show the help of mis-bench or of one COMMAND (`mis-bench help run`)")
    helper.add_argument("topic", nargs="?", metavar="COMMAND", choices=names, help=f"one of {', '.join(names)}")

    def show(args: argparse.Namespace) -> int:
        if args.topic is None:
            parser.print_help()
            return 0
        return _main([args.topic, "--help"])

    helper.set_defaults(func=show)


def _fail(command: str, message: str, code: int) -> int:
    print(clean_line(f"mis-bench {command}: error: {message}"), file=sys.stderr, flush=True)  # one line, always
    return code


class _TerminalFormatter(logging.Formatter):
    """Log lines as the terminal may show them: one line per message, control characters in file names
    (a newline, an escape sequence) as visible escapes; a traceback keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        return clean_line(super().formatMessage(record))

    def formatException(self, ei) -> str:  # noqa: N802 - logging's name
        return clean_terminal(super().formatException(ei))


def _log_level(verbose: int) -> int:
    """Quiet by default (warnings a user must act on); -v the INFO lines, -vv debug messages."""
    return (logging.WARNING, logging.INFO)[verbose] if verbose < 2 else logging.DEBUG


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _safe_streams() -> None:
    """Text the terminal's encoding cannot show (LC_ALL=C, a path's undecodable bytes) is escaped, never fatal."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            with contextlib.suppress(ValueError, OSError):
                stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: SIGTERM is handled like Ctrl-C while it runs (temporaries removed, one line)."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if in_main_thread else None
    try:
        return _main(argv)
    finally:
        from mis_bench_dataset.toolkit.ownership import drop_pending_claims

        drop_pending_claims()  # a claim this command never wrote is not recorded by a later write
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    process_settings.before_imports()
    _safe_streams()
    parser = _command_parser(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a bad argument already printed as one line
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE if stop.code else 0
    debug = args.debug or os.environ.get("MIS_BENCH_DEBUG", "") not in ("", "0")
    if args.progress:
        from mis_bench_dataset.toolkit.progress import force_bars

        force_bars()
    handler = logging.StreamHandler()
    handler.setFormatter(_TerminalFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=_log_level(args.verbose), handlers=[handler])
    if not getattr(args, "func", None):
        names = ", ".join(parser._subparsers._group_actions[0].choices)
        print(
            clean_terminal(f"mis-bench: error: no COMMAND given (one of {names}); see `mis-bench --help`"),
            file=sys.stderr,
        )
        return EXIT_USAGE
    command = args.command
    process_settings.for_command(command)
    try:
        return int(args.func(args) or 0)
    except MisBenchError as err:
        if debug:
            raise
        listing = getattr(err, "listing", None)
        if getattr(err, "problems", None) and listing is not None:
            print(clean_terminal(listing()), file=sys.stderr)  # diagnostics: stdout keeps only results (--json)
        return _fail(command, err.line(), err.exit_code)
    except KeyboardInterrupt as stop:
        if debug:
            raise
        kept = getattr(args, "interrupted_note", None) or "files already written are kept"
        if isinstance(stop, Terminated):
            return _fail(command, f"terminated (SIGTERM); {kept}", EXIT_TERMINATED)
        return _fail(command, f"interrupted (Ctrl-C); {kept}", EXIT_INTERRUPTED)
    except OSError as err:  # at an input or output path: what it means there and what to do
        if debug:
            raise
        return _fail(command, os_error_line(err), EXIT_DATA)
    except (MemoryError, RecursionError) as err:
        if debug:
            raise
        return _fail(command, f"{str(err) or type(err).__name__}; rerun with --debug", EXIT_DATA)
    except Exception as err:  # noqa: BLE001 - a bug: one line, the traceback with --debug
        if debug:
            raise
        return _fail(
            command,
            f"internal error: {type(err).__name__}: {err}; rerun with --debug for the traceback and report it",
            EXIT_DATA,
        )


if __name__ == "__main__":
    sys.exit(main())
