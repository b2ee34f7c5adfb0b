"""`mis-bench backends [B]`: the backends `run --backend` takes (built in and installed), or one backend's options."""

from __future__ import annotations

import argparse
import sys

from eval_scripts.cli.args import add_json, print_json, say


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "backends",
        help="list the model backends (built in and installed plugins), or one backend's options for `run -M`",
        description=(
            "Without a name: every backend `mis-bench run --backend` takes and where it comes from (installed ones "
            "read from their packages' metadata, not imported). With a name: the options the backend declares "
            "(`mis-bench run --backend B -M KEY=VALUE`): name, type, default, help, the run flag that fills it too, "
            "and whether it changes answers (then it is part of every cache key and of results.json when set)."
        ),
    )
    parser.add_argument("backend", nargs="?", metavar="B", help="a backend's name (default: list them all)")
    add_json(parser, what="the backends or the options")
    parser.set_defaults(func=backends_command)


def backends_command(args: argparse.Namespace) -> int:
    from eval_scripts.backends.base import backend_origins

    if args.backend is None:
        origins = backend_origins()
        if args.json:
            print_json([{"name": name, "origin": origin} for name, origin in origins.items()])
        else:
            width = max(map(len, origins))
            for name, origin in origins.items():
                say(f"{name:<{width}}  {origin}")
            say("options of one: mis-bench backends B")
        return 0
    return _options(args)


class HelpWithBackendOptions(argparse.Action):
    """`-h/--help` of `mis-bench run`: its help, then, after `--backend B`, B's options (`-M KEY=VALUE`)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):  # noqa: A002
        help = "show this help (after --backend B also B's own options, for -M) and exit"  # noqa: A001
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from mis_bench_dataset.toolkit.errors import MisBenchError

        parser.print_help()
        backend = getattr(namespace, "backend", None) or _backend_later(sys.argv)
        if backend:
            say()
            try:
                _say_options(backend)
            except MisBenchError as err:
                say(f"the {backend} backend's options cannot be listed: {err.line()}")
        parser.exit()


def _backend_later(argv: list[str]) -> str | None:
    """`--backend B` given after `--help` (argparse runs the help before it reads the rest of the line)."""
    for i, arg in enumerate(argv):
        if arg.startswith("--backend="):
            return arg.split("=", 1)[1]
        if arg == "--backend" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _options(args: argparse.Namespace) -> int:
    from eval_scripts.backends.backend_options import option_specs
    from eval_scripts.backends.base import backend_class

    if args.json:
        specs = option_specs(backend_class(args.backend).Options)
        print_json({"backend": args.backend, "options": [spec.as_dict() for spec in specs]})
        return 0
    _say_options(args.backend)
    return 0


def _say_options(backend: str) -> None:
    """B's options, one line each (`mis-bench backends B`, `mis-bench run --backend B --help`)."""
    from eval_scripts.backends.backend_options import option_specs
    from eval_scripts.backends.base import backend_class

    specs = option_specs(backend_class(backend).Options)
    if not specs:
        say(f"the {backend} backend declares no options")
        return
    say(f"options of the {backend} backend (mis-bench run --backend {backend} -M KEY=VALUE):")
    for spec in specs:
        notes = [f"also {spec.flag}"] if spec.flag else []
        notes += ["changes answers"] if spec.changes_answers else []
        say(f"  {spec.name} ({spec.type_text}, default {_shown(spec.default)}): {spec.help}" + _notes(notes))


def _shown(default: object) -> str:
    """A default as `-M` would take it: `none`, `true`, a comma list."""
    if default is None or isinstance(default, bool):
        return str(default).lower()
    return ",".join(map(str, default)) if isinstance(default, tuple) else str(default)


def _notes(notes: list[str]) -> str:
    return f" [{'; '.join(notes)}]" if notes else ""
