"""`mis-bench batch export FILE.jsonl` and `mis-bench batch import FILE.jsonl...`: a model run through a provider's
batch API (OpenAI Batch API, `vllm run-batch`) instead of live requests, with the flags of the run it stands for.

`mis-bench run --export-batch/--import-batch` is the older form of the same two commands, kept as an alias.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import add_json, print_json, say, shown
from eval_scripts.cli.backends import HelpWithBackendOptions
from eval_scripts.cli.run_flags import add_batch_limits, add_run_flags, model_run_config, setting_configs
from eval_scripts.cli.run_lines import (
    prefix_line,
    report_problems,
    say_result,
    say_synthetic,
    summary,
    tokens_line,
    total_usage,
)

NEXT_STEP = "next: run the file(s) through the OpenAI Batch API or `vllm run-batch`, then "
IMPORT_NEXT = "`mis-bench batch import OUTPUT.jsonl` with the same flags"
EXPORT_AGAIN = "`mis-bench batch export` and the same flags"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="a model run through a provider's batch API: export its requests, import the answers (no connection)",
        description="The requests of a model run (`mis-bench run` with the same flags, --backend openai) without a "
        "cached answer as OpenAI Batch API / `vllm run-batch` input lines (`export`), and the provider's output "
        "lines back into the run's response cache, scored as a live run (`import`). Neither opens a connection. "
        "`mis-bench run --export-batch/--import-batch` is the older form of these two.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(parser))
    export = actions.add_parser(
        "export",
        add_help=False,
        help="write one batch input line per request without a cached answer",
        description="One OpenAI Batch API / vLLM run_batch input line per request of the run without a cached "
        "answer (every setting with --grid), split at --batch-max-requests / --batch-max-mb; each line's "
        "custom_id names the request's response-cache key.",
    )
    export.add_argument("-h", "--help", action=HelpWithBackendOptions)  # after --backend B: B's -M options too
    export.add_argument("file", type=Path, metavar="FILE.jsonl", help="the batch input file to write")
    add_run_flags(export, local=False)
    add_batch_limits(export.add_argument_group("batch files"))
    _add_output_flags(export, "the export")
    export.set_defaults(func=export_command, command="batch export")
    imported = actions.add_parser(
        "import",
        add_help=False,
        help="read a provider's batch output (and error) files into the run's cache and score the run",
        description="Answers from batch output (or error) files, cached like live answers; then the run's "
        "predictions and results are written as a live run writes them. Exit 3 while rows remain unanswered "
        "(`batch export` with the same flags then exports exactly those).",
    )
    imported.add_argument("-h", "--help", action=HelpWithBackendOptions)
    imported.add_argument("files", type=Path, nargs="+", metavar="FILE.jsonl", help="batch output or error files")
    add_run_flags(imported, local=False)
    _add_output_flags(imported, "the import")
    imported.set_defaults(func=import_command, command="batch import")


def _add_output_flags(parser: argparse.ArgumentParser, what: str) -> None:
    add_json(parser, what=what)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _model_configs(args: argparse.Namespace, command: str) -> list:
    """The run's configs, one per setting (the grid's with --grid), from the run's flags."""
    import time

    from mis_bench_dataset.toolkit.errors import UsageError

    if not (args.model and args.backend):
        raise UsageError(
            "give both --backend and --model", hint="the flags of the run it stands for: --backend openai --model M"
        )
    return setting_configs(args, model_run_config(args, time.monotonic(), command=command))


def export_command(args: argparse.Namespace) -> int:
    return export_batch_file(args, _model_configs(args, "batch export"), args.file)


def import_command(args: argparse.Namespace) -> int:
    return import_batch_files(args, _model_configs(args, "batch import"), args.files)


def export_batch_file(
    args: argparse.Namespace, configs: list, path: Path, *, then: str = IMPORT_NEXT, command: str = "batch export"
) -> int:
    """The batch input file(s) of `configs` at `path`, and what they hold (or its --json)."""
    from eval_scripts.formats.data_names import any_synthetic
    from eval_scripts.harness.runner import export_batch

    synthetic = any_synthetic([configs[0].dataset])
    export = export_batch(
        configs,
        path,
        grid=args.grid,
        max_requests=args.batch_max_requests,
        max_mb=args.batch_max_mb,
        command=command,
    )
    export = {**export, "synthetic": synthetic}
    if args.json:
        print_json(export)
        return 0
    if not export["files"]:
        say(f"nothing to export: every request has a cached answer ({export['cached']:,}); no file written")
    else:
        for item in export["files"]:
            say(f"wrote {shown(item['path'])}: {item['requests']:,} requests, {item['bytes']:,} bytes")
        say(
            f"exported {export['requests']:,} requests without a cached answer ({export['cached']:,} cached)"
            f"{prefix_line(export['prefix'])}\n{NEXT_STEP}{then}"
        )
    say_synthetic(synthetic)
    return 0


def import_batch_files(
    args: argparse.Namespace, configs: list, paths: list, *, command: str = "batch import", again: str = EXPORT_AGAIN
) -> int:
    """The batch's answers into the cache, then the run(s) scored as a live run would; exit 3 while rows remain
    unanswered."""
    from eval_scripts.formats.data_names import any_synthetic
    from eval_scripts.harness.runner import import_batch
    from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

    synthetic = any_synthetic([configs[0].dataset])
    entries, report = import_batch(
        configs, paths, grid=args.grid, command=f"{command} import" if command == "run" else command
    )
    results = [e.result for e in entries if e.result is not None]
    for line in report.problems():
        say(f"mis-bench {command}: warning: {line}", err=True)
    for result in results:
        report_problems(result, command=command)
    if args.json:
        summaries = [
            {"setting": e.label, "refused": e.refused}
            if e.result is None
            else {**summary(e.result), "imported": e.result.n_called}
            for e in entries
        ]
        print_json({"settings": summaries, "batch": report.as_dict(), "synthetic": synthetic})
    else:
        if args.grid:
            from eval_scripts.report.text_table import format_table

            say(format_table(entries))
            say(f"all settings: {tokens_line(total_usage(entries))}")
            say_synthetic(synthetic)
        else:
            say_result(summary(results[0]), called="imported")
        unanswered = sum(r.n_unanswered for r in results)
        say(
            f"batch: {report.lines} output lines, {report.matched} requests of this run, "
            f"{report.already_answered} already answered in the cache; {unanswered} rows still without an answer"
            + (f"; export them again with {again}" if unanswered else "")
        )
    return EXIT_REQUESTS if any(r.n_unanswered for r in results) else 0
