"""`mis-bench run`: zero-shot evaluation of a model on MIS-Bench (one setting, or a grid).

Without --model/--backend it runs the project's default job
(`eval_scripts.jobs.default_job.run_default`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import (
    add_fields,
    add_json,
    bounded_int,
    comma_list,
    config_from_args,
    non_negative_float,
    positive_float,
    positive_int,
    print_json,
    say,
    seconds,
    shown,
)
from eval_scripts.cli.backends import HelpWithBackendOptions
from eval_scripts.formats.data_names import any_synthetic, source_synthetic
from eval_scripts.harness.batch_files import OPENAI_MAX_MB, OPENAI_MAX_REQUESTS
from eval_scripts.harness.config import RunConfig, decoding_for
from eval_scripts.jobs.default_job import DEFAULT_CV_FOLDS, DEFAULT_CV_SEEDS
from mis_bench_dataset.dimensions import (
    MODALITY_SETTINGS,
    PROMPT_STYLE_TABLE,
    PROMPT_STYLES,
    SYNTHETIC_LINE,
    ZERO_SHOT_PROMPT_STYLES,
)
from mis_bench_dataset.toolkit.numbers import pct


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
            "report and a leaderboard, under ./mis-bench-results."
        ),
        add_help=False,
    )
    parser.add_argument("-h", "--help", action=HelpWithBackendOptions)  # after --backend B: B's -M options too
    add_fields(parser, RunConfig, "model")
    parser.add_argument(
        "-M",
        "--backend-option",
        action="append",
        metavar="KEY=VALUE",
        help="one of the backend's own options, repeatable, typed and checked against what the backend declares "
        "(`mis-bench backends B` lists them: the engine's settings, a server's extra request fields, ...; the flags "
        "under `transformers / vllm` and `openai-compatible HTTP` below fill the same options) (default: none)",
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
    add_fields(parser.add_argument_group("transformers / vllm"), RunConfig, "local")
    group = parser.add_argument_group(
        "raw video (transformers backend; an openai/vllm server samples its own frames)",
        "fixed: N frames at linspace(0, n_frames - 1, N) truncated (the authors' get_video_frames); paper: what "
        "the authors' runs fed the model (2 frames a second up to 768, each frame resized within the budget, "
        "then every second row and column); the pixel budget is the paper's by default",
    )
    add_fields(group, RunConfig, "video")
    add_fields(parser.add_argument_group("openai-compatible HTTP"), RunConfig, "openai")
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
    """The modes that open no connection (dry run, batch files) and their options: `run_command`'s, not RunConfig's."""
    group = parser.add_argument_group("cost estimate and batch files (--backend openai; these open no connection)")
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
        help="write one OpenAI Batch API / vLLM run_batch input line per request without a cached "
        "answer (every setting with --grid), split at --batch-max-requests / --batch-max-mb (default: none, a "
        "live run)",
    )
    mode.add_argument(
        "--import-batch",
        metavar="FILE.jsonl",
        action="append",
        help="answers from a batch output (or error) file, repeatable: cached like live answers, then "
        "predictions and results are written; exit 3 while rows remain unanswered",
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
    group.add_argument(
        "--batch-max-requests",
        type=positive_int,
        default=OPENAI_MAX_REQUESTS,
        help=f"requests per batch file (default {OPENAI_MAX_REQUESTS:,}, OpenAI's limit)",
    )
    group.add_argument(
        "--batch-max-mb",
        type=positive_float,
        default=OPENAI_MAX_MB,
        help=f"megabytes (10^6 bytes) per batch file (default {OPENAI_MAX_MB:g}, OpenAI's limit)",
    )


def _add_default_job_options(parser: argparse.ArgumentParser) -> None:
    """What only the default job takes (`eval_scripts.jobs.default_job.run_default_job`)."""
    group = parser.add_argument_group("the default job (no --backend/--model)")
    group.add_argument(
        "--cv-folds",
        type=bounded_int(0, 50),
        default=DEFAULT_CV_FOLDS,
        metavar="K",
        help="also cross-validate the baselines over every video: K folds grouped by clinician "
        f"(default: {DEFAULT_CV_FOLDS}, off)",
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

        config = _run_config(args, started)
        config.decoding = decoding_for(config)
        runs, files = model_perturbations(config, args.perturb, perturb_seed=args.perturb_seed)
        tables = runs.tables
        summary = {
            "unperturbed": _summary(runs.unperturbed),
            "arms": {name: _summary(arm) for name, arm in runs.arms.items()},
        }
        results = [runs.unperturbed, *runs.arms.values()]
    elif args.model or args.backend:
        raise UsageError("give both --backend and --model", hint="or neither, for the text ridge")
    else:
        from eval_scripts.jobs.perturb import ridge_perturbations

        if not args.dataset:
            raise UsageError("the text ridge needs a build", where="--perturb", hint="pass --dataset DIR")
        doc, files = ridge_perturbations(
            args.dataset,
            default_out(args),
            args.perturb,
            split=args.split,
            perturb_seed=args.perturb_seed,
            n_bootstrap=args.bootstrap,
            seed=args.seed,
            resample=args.resample,
        )
        tables, summary, results = doc["perturbations"], {}, []
    summary["shift_tables"] = str(files.json) if files else None
    if args.json:
        print_json({**summary, "perturbations": tables})
    else:
        for line in shift_table_lines(tables, dimensions=False):
            say(line)
        if files:
            say(f"shift tables: {files.markdown} (figure {files.figure.name}, JSON {files.json.name})")
    return _exit_code(results) if results else 0


# -- several servers (`--base-url` repeated or a comma list; issue 29) ----------------------------------------
def _servers_line(servers: list[dict] | None, concurrency: int | None) -> str:
    """Several servers: what each answered, failed and how often it was taken out (--concurrency is per server)."""
    if not servers:
        return ""
    each = "; ".join(
        f"{s['url']}: {s['answered']} answered, {s['failed']} failed"
        + (f", taken out {s['cool_downs']}x" if s["cool_downs"] else "")
        for s in servers
    )
    return f"\nservers: {len(servers)}, {concurrency} requests in flight per server (--concurrency): {each}"


# -- prompts laid out for prefix caching (issue 29): --price-cached-in (the version: RunConfig.prompt_version) --
def _register_prefix_caching(parser) -> None:
    parser.add_argument(
        "--price-cached-in",
        type=non_negative_float,
        metavar="USD",
        help="price per million cached prompt tokens (the provider's prompt-cache price), for --dry-run's cost "
        "with the prompt tokens shared with the previous request billed at it (default: none)",
    )


def _backend_options(args: argparse.Namespace) -> dict:
    """The backend keywords the flags and `-M` ask for (`eval_scripts.harness.config.backend_options`)."""
    from eval_scripts.harness.config import backend_options

    return backend_options(config_from_args(RunConfig, args, backend_options=_typed_options(args)))


def _typed_options(args: argparse.Namespace) -> dict:
    """`-M KEY=VALUE` as the backend's typed options (one usage line listing the valid keys when one is wrong)."""
    from eval_scripts.backends.base import typed_backend_options
    from mis_bench_dataset.toolkit.errors import UsageError

    if args.backend_option and not args.backend:
        raise UsageError("-M sets an option of the backend", where="-M/--backend-option", hint="give --backend B")
    return typed_backend_options(args.backend, args.backend_option or [])


def _video_sampling(args: argparse.Namespace):
    """The frame rule the flags ask for (`eval_scripts.harness.config.video_sampling`)."""
    from eval_scripts.harness.config import video_sampling

    return video_sampling(config_from_args(RunConfig, args))


def _summary(result) -> dict:
    scores = result.scores or {}
    return {
        "setting": result.label,
        "input_source": result.input_source,
        "rows": result.n_rows,
        "cached": result.n_cached,
        "called": result.n_called,
        "failed": result.n_failed,
        "truncated": result.n_truncated,
        # answered rows without a score: the parser could not read it, or it lies outside [1, 5]
        "unparsed": result.n_unreadable,
        "out_of_range": result.n_out_of_range,
        "parsed": result.n_parsed,
        "parsed_rate": round(result.n_parsed / result.n_rows, 4) if result.n_rows else None,
        "failures": result.failures,
        "mean_icc": scores.get("mean_icc"),
        "overall_icc": (scores.get("overall") or {}).get("icc"),
        "usage": result.usage,
        "prefix": result.prefix.as_dict() if result.prefix else None,
        "score_from": result.config.decoding.score_from if result.config.decoding else "text",
        "samples": result.config.samples,
        "predictions": str(result.predictions_path),
        "results": str(result.results_path),
        "readouts": str(result.readouts_path) if result.readouts_path else None,
        "distribution_only": result.distribution_only,
        "servers": result.replicas,
        "served_models": result.served_models,
        "model_warnings": result.model_warnings,
        "concurrency_per_server": result.config.concurrency if result.replicas else None,
        "seconds": round(result.elapsed_s, 2),
        # the build report's rule, carried in the results' dataset block (eval_scripts.formats.data_names)
        "synthetic": bool(source_synthetic(result.results_path)),
    }


def _total_usage(entries) -> dict:
    """The token totals of a grid's settings, summed."""
    usages = [e.result.usage for e in entries if e.result is not None and e.result.usage]
    return {key: sum(u[key] for u in usages) for key in ("prompt_tokens", "completion_tokens", "requests")}


def _total_prefix(entries) -> dict | None:
    """The prefix reuse of a grid's settings, run one after the other."""
    from eval_scripts.harness.ordering import PrefixStats

    stats = [e.result.prefix for e in entries if e.result is not None and e.result.prefix]
    return sum(stats, PrefixStats()).as_dict() if stats else None


def _tokens_line(usage: dict | None) -> str:
    if not usage or not usage["requests"]:
        return "tokens: not reported"
    return (
        f"tokens: {usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,} completion "
        f"in {usage['requests']:,} responses"
    )


def _prefix_line(prefix: dict | None) -> str:
    """`; prefix reuse ...` of the requests in the order sent (empty when none were sent)."""
    if not prefix or not prefix["requests"]:
        return ""
    return (
        f"; prefix reuse in the order sent: {pct(prefix['same_prefix_share'], 0)}% of requests share the "
        f"previous one's instructions ({pct(prefix['reused_chars_share'], 0)}% of prompt characters)"
    )


def _say_result(summary: dict, called: str = "called") -> None:
    say(
        f"{summary['setting']} [{summary['input_source']}]: {summary['rows']} rows, {summary['cached']} cached, "
        f"{summary['called']} {called}, {summary['failed']} failed, {summary['truncated']} truncated, "
        f"{summary['unparsed']} unparsed, {summary['out_of_range']} out of range, {summary['parsed']} parsed "
        f"({pct(summary['parsed_rate'])}%); mean ICC {pct(summary['mean_icc'])}%\n"
        f"{_tokens_line(summary['usage'])}{_prefix_line(summary['prefix'])}\n"
        f"predictions: {shown(summary['predictions'])}\nresults: {shown(summary['results'])}"
        + (
            f"\nreadouts ({summary['score_from']} score, {summary['samples']} sample(s) per row): "
            f"{shown(summary['readouts'])}"
            if summary.get("readouts")
            else ""
        )
        + _served_line(summary.get("served_models"))
        + _distribution_line(summary.get("distribution_only"))
        + _servers_line(summary.get("servers"), summary.get("concurrency_per_server"))
    )
    _say_synthetic(summary["synthetic"])


def _served_line(served: dict | None) -> str:
    """The model names the answers give (`model` of each response), when the server says."""
    if not served:
        return ""
    return "\nserved model: " + ", ".join(f"{name} ({count:,} answers)" for name, count in served.items())


def _distribution_line(reasons: dict | None) -> str:
    """The rows an expected-score run scored from the distribution though their text gives no score."""
    if not reasons:
        return ""
    shown_reasons = ", ".join(f"{reason}: {count}" for reason, count in reasons.items())
    return f"\nscored from the distribution, the text giving no score: {sum(reasons.values())} rows ({shown_reasons})"


def _say_synthetic(synthetic: bool) -> None:
    if synthetic:
        say(SYNTHETIC_LINE)


def default_out(args: argparse.Namespace) -> Path:
    from eval_scripts.jobs.default_job import DEFAULT_OUT

    out = getattr(args, "out", None)
    return Path(out) if out else DEFAULT_OUT


def run_default(args: argparse.Namespace) -> int:
    """`mis-bench run` with no model: the default job with the command line's values; returns the exit code."""
    import functools

    from eval_scripts.jobs.default_job import run_default_job

    out_dir = default_out(args)
    args.interrupted_note = (
        f"what was written so far is kept under {out_dir} (and a finished synthetic sample in the "
        "cache); rerun the same command to run the job again"
    )
    given = {key: value for key, value in vars(args).items() if value is not None}
    # what the command line does not say, the job's own defaults (the same as RunConfig's: one definition each)
    names = {
        "split": "split",
        "n_bootstrap": "bootstrap",
        "resample": "resample",
        "seed": "seed",
        "cv_folds": "cv_folds",
        "cv_seeds": "cv_seeds",
    }
    job = {name: given[dest] for name, dest in names.items() if dest in given}
    as_json = bool(given.get("json"))
    summary = run_default_job(
        given.get("dataset"), out_dir, **job, say=functools.partial(say, err=as_json), closing_lines=not as_json
    )
    if as_json:
        print_json(summary)
    return 0


def run_command(args: argparse.Namespace) -> int:
    import time

    started = time.monotonic()
    batch_mode = args.dry_run or args.export_batch or args.import_batch
    if args.perturb:
        return _perturb_command(args, started)
    if not args.model and not args.backend and not batch_mode:
        _typed_options(args)  # -M without a backend: one line, not ignored
        return run_default(args)
    from mis_bench_dataset.toolkit.errors import UsageError

    if not (args.model and args.backend):
        raise UsageError("give both --backend and --model", hint="or neither, for the default job")
    if args.cv_folds:
        raise UsageError("--cv-folds cross-validates the default job's baselines", hint="drop --backend/--model")
    from eval_scripts.harness.runner import run_setting

    config = _run_config(args, started)
    if args.samples > 1 and args.temperature == 0:
        say(
            "mis-bench run: warning: --samples with --temperature 0 asks for greedy answers, which differ only "
            "where the engine is not deterministic; set --temperature above 0 to measure the judge's stability",
            err=True,
        )
    args.interrupted_note = (
        f"every answer received so far is in the response cache under {config.out}; rerun the same command to resume"
    )
    if batch_mode:
        return _batch_command(args, config)
    if args.grid:
        return _grid_command(args, config)
    config.decoding = decoding_for(config)
    result = run_setting(config)
    summary = _summary(result)
    if args.json:
        print_json(summary)
    else:
        _say_result(summary)
    _report_problems(result)
    return _exit_code([result])


def _run_config(args: argparse.Namespace, started: float) -> RunConfig:
    """The RunConfig of `mis-bench run` with a model (its deadline counted from `started`)."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    options = _typed_options(args)  # checked before the dataset is opened
    return config_from_args(
        RunConfig,
        args,
        backend_options=options,
        dataset=BuiltDataset.of(args.dataset),  # opened once, here: every setting of a grid shares it
        out=args.out or "runs",
        progress=not args.no_progress,
        deadline=None if args.run_deadline is None else started + args.run_deadline,
    )


def _grid_command(args: argparse.Namespace, config) -> int:
    """`--grid`: every setting, a Table-3-like table (or JSON), then each setting's problems."""
    from eval_scripts.harness.runner import run_grid
    from eval_scripts.report.text_table import format_table

    # each style its own default token budget unless --max-new-tokens is set
    entries = run_grid(config, args.modalities, args.prompts, decoding=lambda style: decoding_for(config, style))
    if args.json:
        print_json(
            [{"setting": e.label, "refused": e.refused} if e.result is None else _summary(e.result) for e in entries]
        )
    else:
        say(format_table(entries))
        say(f"all settings: {_tokens_line(_total_usage(entries))}{_prefix_line(_total_prefix(entries))}")
        _say_synthetic(any(_summary(e.result)["synthetic"] for e in entries if e.result is not None))
    for entry in entries:
        if entry.result is not None:
            _report_problems(entry.result)
    return _exit_code([e.result for e in entries if e.result is not None])


def _report_problems(result) -> None:
    """On stderr: why requests failed (count per kind, one example each), and what to do about truncated answers."""
    from eval_scripts.harness.row_counts import TRUNCATION_HINT, failure_lines

    for warning in result.model_warnings:  # the served model is not the one asked for (backends.served_model)
        say(
            f"mis-bench run: warning: {result.label}: {warning} (recorded in {shown(result.results_path)}; "
            "--strict-model refuses such answers)",
            err=True,
        )
    if result.failures:
        say(f"{result.label}: {result.n_failed} request(s) failed, by kind:", err=True)
        for line in failure_lines(result.failures):
            say(line, err=True)
        say(
            f"  details per row: {shown(result.raw_responses_path)}; rerun the same command to retry only these",
            err=True,
        )
    if result.n_truncated:
        say(
            f"{result.label}: {result.n_truncated} answer(s) reached the token limit and were not scored "
            f"(max_new_tokens {result.config.decoding.max_new_tokens if result.config.decoding else '?'}); "
            f"{TRUNCATION_HINT}",
            err=True,
        )


def _configs(args, config) -> list:
    """One config per setting: the grid's (modality-major, as its table) or the single one asked for."""
    from eval_scripts.harness.runner import grid_configs

    modalities, styles = (args.modalities, args.prompts) if args.grid else ([args.modality], [args.prompt_style])
    return list(grid_configs(config, modalities, styles, lambda style: decoding_for(config, style)))


def _batch_command(args, config) -> int:
    """--dry-run, --export-batch, --import-batch: the same prompts and keys as a live run, no live calls."""
    from mis_bench_dataset.toolkit.errors import UsageError

    if (args.price_in is None) != (args.price_out is None):
        raise UsageError("give both --price-in and --price-out, or neither", where="--price-in/--price-out")
    if args.price_cached_in is not None and args.price_in is None:  # _register_prefix_caching
        raise UsageError("--price-cached-in prices a part of the prompt", where="--price-cached-in",
                         hint="give --price-in and --price-out with it")  # fmt: skip
    configs = _configs(args, config)
    synthetic = any_synthetic([config.dataset])
    if args.dry_run:
        from eval_scripts.harness.runner import dry_run

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
            _say_dry_run(plan, config.model)
            _say_synthetic(synthetic)
        return 0
    if args.export_batch:
        from eval_scripts.harness.runner import export_batch

        export = export_batch(
            configs, args.export_batch, grid=args.grid, max_requests=args.batch_max_requests, max_mb=args.batch_max_mb
        )
        export = {**export, "synthetic": synthetic}
        if args.json:
            print_json(export)
        else:
            _say_export(export)
            _say_synthetic(synthetic)
        return 0
    return _import_command(args, configs, synthetic)


def _import_command(args, configs, synthetic: bool) -> int:
    """--import-batch: the batch's answers into the cache, then the run(s) scored as a live run would."""
    from eval_scripts.harness.runner import import_batch
    from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

    entries, report = import_batch(configs, args.import_batch, grid=args.grid)
    results = [e.result for e in entries if e.result is not None]
    for line in report.problems():
        say(f"mis-bench run: warning: {line}", err=True)
    for result in results:
        _report_problems(result)
    if args.json:
        summaries = [
            {"setting": e.label, "refused": e.refused}
            if e.result is None
            else {**_summary(e.result), "imported": e.result.n_called}
            for e in entries
        ]
        print_json({"settings": summaries, "batch": report.as_dict(), "synthetic": synthetic})
    else:
        if args.grid:
            from eval_scripts.report.text_table import format_table

            say(format_table(entries))
            say(f"all settings: {_tokens_line(_total_usage(entries))}")
            _say_synthetic(synthetic)
        else:
            _say_result(_summary(results[0]), called="imported")
        unanswered = sum(r.n_unanswered for r in results)
        say(
            f"batch: {report.lines} output lines, {report.matched} requests of this run, "
            f"{report.already_answered} already answered in the cache; {unanswered} rows still without an answer"
            + ("; export them again with --export-batch" if unanswered else "")
        )
    return EXIT_REQUESTS if any(r.n_unanswered for r in results) else 0


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _say_dry_run(plan: dict, model: str) -> None:
    say(f"dry run of {model}: nothing was sent")
    for item in plan["settings"]:
        if "refused" in item:
            say(f"  {item['setting']}: refused: {item['refused']}")
            continue
        say(
            f"  {item['setting']} [{item['input_source']}]: {item['requests']:,} requests ({item['cached']:,} cached), "
            f"{item['prompt_chars']:,} prompt characters, ~{item['prompt_tokens_estimate']:,} prompt tokens, "
            f"~{item['completion_tokens_estimate']:,} completion tokens ({item['expected_completion_tokens']:,} "
            f"per request: {item['expected_completion_source']})"
        )
    line = (
        f"total: {plan['requests']:,} requests without a cached answer, {plan['cached']:,} cached; "
        f"~{plan['prompt_tokens_estimate']:,} prompt tokens ({plan['token_estimator']}), "
        f"~{plan['completion_tokens_estimate']:,} completion tokens (at most {plan['completion_tokens_max']:,})"
    )
    if plan["attachments"]:
        line += f"; {plan['attachments']:,} attachments (images/audio/video) not in the token estimate"
    say(line)
    if plan["cost_estimate"] is not None:
        say(
            f"estimated cost: {_money(plan['cost_estimate'])} (at most {_money(plan['cost_max'])}) at "
            f"${plan['price_in_per_million']:g} / ${plan['price_out_per_million']:g} per million prompt / "
            "completion tokens"
        )
    prefix = _prefix_line(plan["prefix"])
    if prefix:
        say(prefix.removeprefix("; "))
    if plan.get("cost_estimate_with_cache") is not None:  # _register_prefix_caching
        say(
            f"with the provider's prompt cache: {_money(plan['cost_estimate_with_cache'])} (at most "
            f"{_money(plan['cost_max_with_cache'])}), ~{plan['cached_prompt_tokens_estimate']:,} prompt tokens "
            f"shared with the previous request at ${plan['price_cached_in_per_million']:g} per million"
        )


def _say_export(export: dict) -> None:
    if not export["files"]:
        say(f"nothing to export: every request has a cached answer ({export['cached']:,}); no file written")
        return
    for item in export["files"]:
        say(f"wrote {shown(item['path'])}: {item['requests']:,} requests, {item['bytes']:,} bytes")
    say(
        f"exported {export['requests']:,} requests without a cached answer ({export['cached']:,} cached)"
        f"{_prefix_line(export['prefix'])}\n"
        "next: run the file(s) through the OpenAI Batch API or `vllm run-batch`, then rerun this command with "
        "--import-batch OUTPUT.jsonl instead of --export-batch"
    )


def _exit_code(results) -> int:
    """3 when any request of any setting failed (a rerun retries them; a grid follows the single-setting rule);
    else 1 (a DataError: one line, the counts by reason) when no row of some setting gave a score; else 0, whatever
    the parse rate (the run line gives it)."""
    from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, DataError, UsageError

    if not results:
        raise UsageError("every setting of the grid was refused", hint="see the reasons above")
    if any(r.n_failed for r in results):
        return EXIT_REQUESTS
    empty = [r for r in results if r.n_rows and not r.n_parsed]
    if empty:
        raise DataError(
            "no row gave a score in "
            + "; ".join(f"{r.label} ({_unscored_counts(r)})" for r in empty)
            + (f" ({len(empty)} of {len(results)} settings)" if len(results) > 1 else ""),
            where=", ".join(shown(r.raw_responses_path) for r in empty[:2]) + (", ..." if len(empty) > 2 else ""),
            hint=_unscored_hint(empty),
        )
    return 0


def _unscored_counts(result) -> str:
    """`32 rows: 30 truncated, 2 unparsed, 0 out of range, 0 failed`."""
    return (
        f"{result.n_rows} rows: {result.n_truncated} truncated, {result.n_unreadable} "
        f"unparsed, {result.n_out_of_range} out of range, {result.n_failed} failed"
    )


def _unscored_hint(results) -> str:
    from eval_scripts.harness.row_counts import TRUNCATION_HINT

    hints = []
    if any(r.n_truncated for r in results):
        hints.append(f"{TRUNCATION_HINT} (answers cut at the token limit)")
    if any(r.n_unparsed for r in results):
        hints.append("read the answers in raw_responses.jsonl: the model may not follow the prompt's format")
    return "; ".join(hints) or "see raw_responses.jsonl"
