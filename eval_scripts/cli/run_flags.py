"""What `mis-bench run` and `mis-bench batch` read alike: the flags of a model run and the RunConfig they give.

`batch export|import` take the flags of the run they stand for, so both build the same prompts and the same
response-cache keys (a batch file names each request by its key).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_scripts.cli.args import (
    add_fields,
    comma_list,
    config_from_args,
    positive_float,
    positive_int,
    say,
    shown_default,
)
from eval_scripts.harness.batch_files import OPENAI_MAX_MB, OPENAI_MAX_REQUESTS
from eval_scripts.harness.config import RunConfig, decoding_for
from mis_bench_dataset.dimensions import MODALITY_SETTINGS, PROMPT_STYLES, ZERO_SHOT_PROMPT_STYLES

if TYPE_CHECKING:
    from eval_scripts.backends.backend_options import RunFlag


def add_run_flags(parser: argparse.ArgumentParser, *, local: bool = True) -> None:
    """The RunConfig's flags by section, the grid's after the model's; `local`: the transformers / vllm and
    raw-video groups too (a batch file goes to an OpenAI-compatible provider, which samples its own frames)."""
    add_fields(parser, RunConfig, "model")
    parser.add_argument(
        "-M",
        "--backend-option",
        action="append",
        metavar="KEY=VALUE",
        help="one of the backend's own options, repeatable, typed and checked against what the backend declares "
        "(`mis-bench backends B` lists them: the engine's settings, a server's extra request fields, ...; the flags "
        "under `transformers / vllm` and `openai-compatible HTTP` below are generated from the same options, and "
        "a flag and -M giving one option two values is refused) (default: none)",
    )
    parser.add_argument(
        "--grid", action="store_true", help="run every --modalities x --prompts setting and print a Table-3-like table"
    )
    parser.add_argument(
        "--modalities",
        type=comma_list(MODALITY_SETTINGS),
        default=list(MODALITY_SETTINGS),
        help=f"comma-separated settings for --grid (default: all four, {','.join(MODALITY_SETTINGS)})",
    )
    parser.add_argument(
        "--prompts",
        type=comma_list(PROMPT_STYLES),
        default=list(ZERO_SHOT_PROMPT_STYLES),
        help=f"comma-separated prompt styles for --grid, of {', '.join(PROMPT_STYLES)} "
        f"(default: {','.join(ZERO_SHOT_PROMPT_STYLES)}, the paper's Table 3)",
    )
    add_fields(parser, RunConfig, "setting")
    flags = backend_flags()
    if local:
        add_backend_flags(parser.add_argument_group(LOCAL_GROUP), [f for f in flags if HTTP_BACKEND not in f.specs])
        group = parser.add_argument_group(
            "raw video (transformers backend; an openai/vllm server samples its own frames)",
            "fixed: N frames at linspace(0, n_frames - 1, N) truncated (the authors' get_video_frames); paper: what "
            "the authors' runs fed the model (2 frames a second up to 768, each frame resized within the budget, "
            "then every second row and column); the pixel budget is the paper's by default",
        )
        add_fields(group, RunConfig, "video")
    add_backend_flags(parser.add_argument_group(HTTP_GROUP), [f for f in flags if HTTP_BACKEND in f.specs])


# `run --help` lists a backend flag under the HTTP heading when the openai backend has the option it fills, else
# under the local engines' heading.
HTTP_BACKEND = "openai"
HTTP_GROUP = "openai-compatible HTTP"
LOCAL_GROUP = "transformers / vllm"


def backend_flags() -> list[RunFlag]:
    """The flags generated from the built-in backends' options (`backend_option(flag=...)`)."""
    from eval_scripts.backends.base import built_in_run_flags

    return built_in_run_flags()


def add_backend_flags(parser: argparse._ArgumentGroup, flags: list[RunFlag]) -> None:
    """One option per generated flag: its help, default and validator are the backend options' (several backends'
    when they share it, `--dtype`: then its value stays the text, read again by the backend asked for). Its parsed
    default is None: which flags count is what the user gave (`toolkit.given`), whatever the value."""
    for flag in flags:
        kwargs: dict = {"dest": flag.dest, "default": None, "help": _backend_flag_help(flag)}
        if flag.switch:
            kwargs["action"] = "store_true"
        else:
            kwargs.update(type=flag.check, metavar=flag.dest.upper(), action="append" if flag.repeatable else None)
        parser.add_argument(flag.flag, **kwargs)


def _backend_flag_help(flag: RunFlag) -> str:
    """The option's help and default, or each backend's where several share the flag; and its `-M` name."""

    def default(spec) -> str:
        return "off" if spec.hint is bool else shown_default(spec.default) or "none"

    specs = list(flag.specs.items())
    defaults = {default(spec) for _, spec in specs}
    if len({spec.help for _, spec in specs}) == 1:
        text = specs[0][1].help
    else:
        text = "; ".join(
            f"{name}: {spec.help}" + ("" if len(defaults) == 1 else f" (default: {default(spec)})")
            for name, spec in specs
        )
    if len(defaults) == 1:
        text += f" (default: {defaults.pop()})"
    names = sorted({spec.name for _, spec in specs})
    return f"{text}; -M {'/'.join(names)}=... sets the same option".replace("%", "%%")


def add_batch_limits(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """How big one exported batch file may be (`batch export`, and `run --export-batch`)."""
    parser.add_argument(
        "--batch-max-requests",
        type=positive_int,
        default=OPENAI_MAX_REQUESTS,
        help=f"requests per batch file (default {OPENAI_MAX_REQUESTS:,}, OpenAI's limit)",
    )
    parser.add_argument(
        "--batch-max-mb",
        type=positive_float,
        default=OPENAI_MAX_MB,
        help=f"megabytes (10^6 bytes) per batch file (default {OPENAI_MAX_MB:g}, OpenAI's limit)",
    )


def model_run_config(args: argparse.Namespace, started: float, *, command: str = "run") -> RunConfig:
    """The RunConfig of a model run (its deadline counted from `started`), with what Ctrl-C keeps noted on `args`
    and a warning when --samples asks for greedy answers."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    deadline = getattr(args, "run_deadline", None)
    adopt_model_setting(args, command)
    options = given_backend_options(args)  # checked before the dataset is opened
    config = config_from_args(
        RunConfig,
        args,
        backend_options=options,
        dataset=BuiltDataset.of(args.dataset),  # opened once, here: every setting of a grid shares it
        out=args.out or "runs",
        progress=not args.no_progress,
        deadline=None if deadline is None else started + deadline,
    )
    if args.samples > 1 and args.temperature == 0:
        say(
            f"mis-bench {command}: warning: --samples with --temperature 0 asks for greedy answers, which differ "
            "only where the engine is not deterministic; set --temperature above 0 to measure the judge's stability",
            err=True,
        )
    args.interrupted_note = (
        f"every answer received so far is in the response cache under {config.out}; rerun the same command to resume"
    )
    return config


def adopt_model_setting(args: argparse.Namespace, command: str = "run") -> None:
    """A trained model folder's `setting.json` fills the prompt, modality, input source and readout the user did not
    give (`harness.trained_setting`); one note says which, a warning each given flag that contradicts it."""
    from eval_scripts.harness.trained_setting import (
        adopt_backend_options,
        adopt_trained_setting,
        read_trained_setting,
    )
    from mis_bench_dataset.toolkit.given import given_flags

    trained = read_trained_setting(args.model) if args.model else None
    if trained is None:
        return
    adopted, notes, warnings = adopt_trained_setting(trained, vars(args), given_flags(args))
    for name, value in adopted.items():
        setattr(args, name, value)
    if args.backend == "transformers":  # the trainer's readout, as the local backend reads it
        added, option_notes = adopt_backend_options(trained, args.backend_option or [])
        args.backend_option = [*(args.backend_option or []), *added]
        notes += option_notes
    if notes:
        say(
            f"mis-bench {command}: note: as {args.model} was trained ({trained.source.name}, method "
            f"{trained.method or 'unknown'}): {', '.join(notes)}; give a flag to override it",
            err=True,
        )
    for warning in warnings:
        say(f"mis-bench {command}: warning: {warning}", err=True)


def given_backend_options(args: argparse.Namespace) -> dict:
    """The backend's options the command line gives: the generated flags the user gave (`toolkit.given`) and `-M
    KEY=VALUE`, merged and typed through one path (`backends.base.command_line_options`: one usage line for a
    key, value or flag the backend does not take, or one option given two values)."""
    from eval_scripts.backends.base import command_line_options
    from mis_bench_dataset.toolkit.errors import UsageError
    from mis_bench_dataset.toolkit.given import given_flags

    given = given_flags(args)
    flags = {flag.flag: getattr(args, flag.dest) for flag in backend_flags() if flag.dest in given}
    if (args.backend_option or flags) and not args.backend:
        what, where = ("-M", "-M/--backend-option") if args.backend_option else (next(iter(flags)),) * 2
        raise UsageError(f"{what} sets an option of the backend", where=where, hint="give --backend B")
    return command_line_options(args.backend, flags, args.backend_option or []) if args.backend else {}


def setting_configs(args: argparse.Namespace, config: RunConfig) -> list[RunConfig]:
    """One config per setting: the grid's (modality-major, as its table) or the single one asked for."""
    from eval_scripts.harness.runner import grid_configs

    modalities, styles = (args.modalities, args.prompts) if args.grid else ([args.modality], [args.prompt_style])
    return list(grid_configs(config, modalities, styles, lambda style: decoding_for(config, style)))
