"""`mis-bench run`: zero-shot evaluation of a model on MIS-Bench (one setting, or a grid), its dry run, its
perturbations; without --model/--backend, the project's default job (`eval_scripts.jobs.default_job`).

The flags a model run shares with `mis-bench batch` are in `run_flags`, what it prints in `run_lines`.
"""

from __future__ import annotations

import argparse

from eval_scripts.cli.args import (
    add_json,
    bounded_int,
    non_negative_float,
    positive_int,
    print_json,
    say,
    seconds,
)
from eval_scripts.cli.backends import HelpWithBackendOptions
from eval_scripts.cli.run_flags import (
    add_batch_limits,
    add_run_flags,
    given_backend_options,
    model_run_config,
    setting_configs,
)
from eval_scripts.cli.run_lines import (
    exit_code,
    prefix_line,
    report_problems,
    say_dry_run,
    say_result,
    say_synthetic,
    summary,
    tokens_line,
    total_prefix,
    total_usage,
)
from eval_scripts.harness.config import decoding_for
from eval_scripts.jobs.default_job import DEFAULT_CV_FOLDS, DEFAULT_CV_SEEDS
from mis_bench_dataset.dimensions import PROMPT_STYLE_TABLE

# The older form of the batch files (`run --export-batch/--import-batch`) still works; one stderr line (and
# --help) says where it moved.
MOVED = "mis-bench run: note: `run {old}` is now `mis-bench {new}` with the same flags; this form still works"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="evaluate a model zero-shot (4 modality settings x direct/CoT, or the paper's protocol), resumable; "
        "with no model, the default job (CPU baselines on the default synthetic sample)",
        description=(
            "With --backend and --model: prompt the model for every (video, dimension) of a split, parse its "
            "scores, and write predictions, raw responses and a results JSON (leaderboard schema) under --out. "
            "Responses are cached append-only: a killed run resumes, a finished run re-run makes no calls. "
            "Without a model (no --backend/--model): run the default job, offline on the CPU: the feature "
            "baselines and the mean floor on the default synthetic sample (or on --dataset DIR), scored, with a "
            "report and a leaderboard, under ./mis-bench-results. Batch files: `mis-bench batch export|import`."
        ),
        add_help=False,
    )
    parser.add_argument("-h", "--help", action=HelpWithBackendOptions)  # after --backend B: B's -M options too
    add_run_flags(parser)
    _add_batch_options(parser)
    _register_prefix_caching(parser)
    parser.add_argument(
        "--run-deadline",
        type=seconds,
        metavar="SECONDS",
        help="end the whole run (every setting of a --grid) this many seconds after it starts: requests in "
        "flight are cut off, none is sent after; rows without an answer by then are failed (kind `run "
        "deadline`, exit 3) and asked again by the next run. Checked between batches by transformers/vllm "
        "(default: no deadline)",
    )
    _add_default_job_options(parser)
    _add_perturb_options(parser)
    add_json(parser, what="the summary")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_command)


def _add_batch_options(parser: argparse.ArgumentParser) -> None:
    """The modes that open no connection (dry run; the batch files' older form) and their options: `run_command`'s,
    not RunConfig's."""
    group = parser.add_argument_group(
        "cost estimate (--backend openai; opens no connection); batch files: `mis-bench batch export|import`"
    )
    mode = group.add_mutually_exclusive_group()
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="build every prompt (of the grid with --grid) and call nothing: requests without a cached "
        "answer, cached ones, prompt characters and tokens, estimated cost, prefix reuse",
    )
    mode.add_argument(
        "--export-batch",
        metavar="FILE.jsonl",
        help="moved: `mis-bench batch export FILE` with the same flags; this older form still works (default: none, "
        "a live run)",
    )
    mode.add_argument(
        "--import-batch",
        metavar="FILE.jsonl",
        action="append",
        help="moved: `mis-bench batch import FILE...` with the same flags; this older form still works (repeatable)",
    )
    group.add_argument(
        "--price-in",
        type=non_negative_float,
        metavar="USD",
        help="price per million prompt tokens, for --dry-run's cost estimate (default: none, no cost estimate)",
    )
    group.add_argument(
        "--price-out",
        type=non_negative_float,
        metavar="USD",
        help="price per million completion tokens, for --dry-run's cost estimate (default: none, no cost estimate)",
    )
    group.add_argument(
        "--expected-completion-tokens",
        type=positive_int,
        metavar="N",
        help="completion tokens per request for --dry-run (default: the mean of the setting's cached answers, else "
        + " / ".join(f"{s.expected_completion_tokens} {s.name}" for s in PROMPT_STYLE_TABLE.values())
        + ")",
    )
    add_batch_limits(group)


def _add_default_job_options(parser: argparse.ArgumentParser) -> None:
    """What only the default job takes (`eval_scripts.jobs.default_job.run_default_job`)."""
    group = parser.add_argument_group("the default job (no --backend/--model)")
    group.add_argument(
        "--cv-folds",
        type=bounded_int(0, 50),
        default=DEFAULT_CV_FOLDS,
        metavar="K",
        help="also cross-validate the baselines over every video: K folds grouped by clinician, each fold seed's "
        f"out-of-fold predictions written as a run under OUT/cv/ (default: {DEFAULT_CV_FOLDS}, off)",
    )
    group.add_argument(
        "--cv-seeds",
        type=bounded_int(1, 20),
        default=DEFAULT_CV_SEEDS,
        metavar="N",
        help=f"fold seeds for --cv-folds, from --seed on (default {DEFAULT_CV_SEEDS})",
    )


def _add_perturb_options(parser: argparse.ArgumentParser) -> None:
    """`--perturb`: the setting again under documented, seeded changes (`eval_scripts.jobs.perturb`)."""
    from eval_scripts.answers.perturbations import DEFAULT_PERTURB_SEED, PERTURBATIONS

    group = parser.add_argument_group(
        "perturbations (a judge under changes that should not matter; see the harness page)"
    )
    group.add_argument(
        "--perturb",
        metavar="NAME[,NAME...]",
        help=f"run the setting again under each of these ({', '.join(PERTURBATIONS)}) and write the shift tables "
        "under OUT/perturbations/: the unperturbed arm comes from the response cache (no request), so run the "
        "setting first. Without --backend/--model: the text ridge of --dataset under the transcript perturbations "
        "(default: none)",
    )
    group.add_argument(
        "--perturb-seed",
        type=int,
        default=DEFAULT_PERTURB_SEED,
        help="seed of the perturbations' random choices (the same seed gives byte-identical prompts)",
    )


def _perturb_command(args: argparse.Namespace, started: float) -> int:
    """`--perturb`: the shift tables of a model setting (from its cache) or of the text ridge."""
    from eval_scripts.answers.perturbations import parse_perturbations
    from eval_scripts.report.sensitivity_view import shift_table_lines
    from mis_bench_dataset.toolkit.errors import UsageError

    parse_perturbations(args.perturb)  # an unknown name: one line, before anything is read
    if args.grid or args.dry_run or args.export_batch or args.import_batch or args.cv_folds:
        raise UsageError(
            "--perturb runs one setting", where="--perturb", hint="drop --grid, batch modes and --cv-folds"
        )
    if args.model and args.backend:
        from eval_scripts.jobs.perturb import model_perturbations

        config = model_run_config(args, started)
        config.decoding = decoding_for(config)
        runs, files = model_perturbations(config, args.perturb, perturb_seed=args.perturb_seed)
        tables = runs.tables
        overview = {
            "unperturbed": summary(runs.unperturbed),
            "arms": {name: summary(arm) for name, arm in runs.arms.items()},
        }
        results = [runs.unperturbed, *runs.arms.values()]
    elif args.model or args.backend:
        raise UsageError("give both --backend and --model", hint="or neither, for the text ridge")
    else:
        from eval_scripts.jobs.default_job import out_folder
        from eval_scripts.jobs.perturb import ridge_perturbations
        from mis_icc_metric.resampling_options import ResamplingOptions

        if not args.dataset:
            raise UsageError("the text ridge needs a build", where="--perturb", hint="pass --dataset DIR")
        doc, files = ridge_perturbations(
            args.dataset,
            out_folder(args.out),
            args.perturb,
            split=args.split,
            perturb_seed=args.perturb_seed,
            resampling=ResamplingOptions(n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample),
        )
        tables, overview, results = doc["perturbations"], {}, []
    overview["shift_tables"] = str(files.json) if files else None
    if args.json:
        print_json({**overview, "perturbations": tables})
    else:
        for line in shift_table_lines(tables, dimensions=False):
            say(line)
        if files:
            say(f"shift tables: {files.markdown} (figure {files.figure.name}, JSON {files.json.name})")
    return exit_code(results) if results else 0


# -- prompts laid out for prefix caching (issue 29): --price-cached-in (the version: RunConfig.prompt_version) --
def _register_prefix_caching(parser) -> None:
    parser.add_argument(
        "--price-cached-in",
        type=non_negative_float,
        metavar="USD",
        help="price per million cached prompt tokens (the provider's prompt-cache price), for --dry-run's cost "
        "with the prompt tokens shared with the previous request billed at it (default: none)",
    )


def run_default(args: argparse.Namespace) -> int:
    """`mis-bench run` with no model: the default job with the command line's values; returns the exit code."""
    import functools

    from eval_scripts.jobs.default_job import interrupted_note, out_folder, run_with_options

    as_json = bool(getattr(args, "json", False))
    args.interrupted_note = interrupted_note(out_folder(getattr(args, "out", None)))
    summary = run_with_options(vars(args), say=functools.partial(say, err=as_json), closing_lines=not as_json)
    if as_json:
        print_json(summary)
    return 0


def run_command(args: argparse.Namespace) -> int:
    import time

    started = time.monotonic()
    batch_mode = args.dry_run or args.export_batch or args.import_batch
    if not args.backend:  # -M or a backend's flag without a backend (the default job, the ridge perturbed): refused
        given_backend_options(args)
    if args.perturb is not None:  # an empty value (an unset shell variable) is refused there, never "no perturbation"
        return _perturb_command(args, started)
    if not args.model and not args.backend and not batch_mode:
        return run_default(args)
    from mis_bench_dataset.toolkit.errors import UsageError

    if not (args.model and args.backend):
        raise UsageError("give both --backend and --model", hint="or neither, for the default job")
    if args.cv_folds:
        raise UsageError("--cv-folds cross-validates the default job's baselines", hint="drop --backend/--model")
    from eval_scripts.harness.runner import run_setting

    config = model_run_config(args, started)
    if batch_mode:
        return _offline_command(args, config)
    if args.grid:
        return _grid_command(args, config)
    config.decoding = decoding_for(config)
    result = run_setting(config)
    result_summary = summary(result)
    if args.json:
        print_json(result_summary)
    else:
        say_result(result_summary)
    report_problems(result)
    return exit_code([result])


def _grid_command(args: argparse.Namespace, config) -> int:
    """`--grid`: every setting, a Table-3-like table (or JSON), then each setting's problems."""
    from eval_scripts.harness.runner import run_grid
    from eval_scripts.report.text_table import format_table

    # each style its own default token budget unless --max-new-tokens is set
    entries = run_grid(config, args.modalities, args.prompts, decoding=lambda style: decoding_for(config, style))
    if args.json:
        print_json(
            [{"setting": e.label, "refused": e.refused} if e.result is None else summary(e.result) for e in entries]
        )
    else:
        say(format_table(entries))
        say(f"all settings: {tokens_line(total_usage(entries))}{prefix_line(total_prefix(entries))}")
        say_synthetic(any(summary(e.result)["synthetic"] for e in entries if e.result is not None))
    for entry in entries:
        if entry.result is not None:
            report_problems(entry.result)
    return exit_code([e.result for e in entries if e.result is not None])


def _offline_command(args, config) -> int:
    """--dry-run, and the older form of `mis-bench batch export|import`: the same prompts and keys as a live run,
    no live calls."""
    from eval_scripts.cli.batch import export_batch_file, import_batch_files
    from mis_bench_dataset.toolkit.errors import UsageError

    if (args.price_in is None) != (args.price_out is None):
        raise UsageError("give both --price-in and --price-out, or neither", where="--price-in/--price-out")
    if args.price_cached_in is not None and args.price_in is None:  # _register_prefix_caching
        raise UsageError("--price-cached-in prices a part of the prompt", where="--price-cached-in",
                         hint="give --price-in and --price-out with it")  # fmt: skip
    configs = setting_configs(args, config)
    if args.export_batch:
        say(MOVED.format(old="--export-batch FILE", new="batch export FILE"), err=True)
        then = "rerun this command with --import-batch OUTPUT.jsonl instead of --export-batch"
        return export_batch_file(args, configs, args.export_batch, then=then, command="run export")
    if args.import_batch:
        say(MOVED.format(old="--import-batch FILE", new="batch import FILE..."), err=True)
        return import_batch_files(args, configs, args.import_batch, command="run", again="--export-batch")
    from eval_scripts.formats.data_names import any_synthetic
    from eval_scripts.harness.runner import dry_run

    synthetic = any_synthetic([config.dataset])
    plan = dry_run(
        configs,
        grid=args.grid,
        price_in=args.price_in,
        price_out=args.price_out,
        expected_completion_tokens=args.expected_completion_tokens,
        price_cached_in=args.price_cached_in,  # _register_prefix_caching
    )
    plan = {**plan, "synthetic": synthetic}
    if args.json:
        print_json(plan)
    else:
        say_dry_run(plan, config.model)
        say_synthetic(synthetic)
    return 0
