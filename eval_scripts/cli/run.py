"""`mis-bench run`: zero-shot evaluation of a model on MIS-Bench (one setting, or a grid).

Without --model/--backend it runs the project's default job
(`eval_scripts.main_job.run_default`).
"""

from __future__ import annotations

import argparse

from eval_scripts.cli.args import (
    bounded_int,
    comma_list,
    existing,
    file_path,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    print_json,
    say,
    unit_interval,
)
from eval_scripts.backends.base import BACKEND_NAMES
from eval_scripts.feature_plots import FEATURE_FORMATS
from mis_bench_dataset.dimensions import MODALITY_SETTINGS, PROMPT_STYLES
from mis_bench_dataset.inputs import INPUT_SOURCES
from mis_bench_dataset.splits import SPLITS
from mis_bench_dataset.numbers import pct
from mis_icc_metric.bootstrap import MAX_BOOTSTRAP



def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="evaluate a model zero-shot (4 modality settings x direct/CoT), resumable",
        description=(
            "Prompt a model for every (video, dimension) of a split, parse its scores, and write "
            "predictions, raw responses and a results JSON (leaderboard schema) under --out. "
            "Responses are cached append-only: a killed run resumes, a finished run re-run makes no calls."
        ),
    )
    parser.add_argument("--backend", choices=BACKEND_NAMES)
    parser.add_argument("--model", help="Hub id / local folder (transformers, vllm) or API model name (openai)")
    parser.add_argument("--dataset", type=existing("folder", as_path=False),
                        help="built dataset folder (`mis-bench build --out DIR`)")
    parser.add_argument("--split", default="test", choices=SPLITS)
    parser.add_argument("--modality", default="text", choices=MODALITY_SETTINGS)
    parser.add_argument("--prompt", dest="prompt_style", default="direct", choices=PROMPT_STYLES)
    parser.add_argument("--grid", action="store_true",
                        help="run every --modalities x --prompts setting and print a Table-3-like table")
    parser.add_argument("--modalities", type=comma_list(MODALITY_SETTINGS), default=list(MODALITY_SETTINGS),
                        help="comma-separated settings for --grid (default: all four)")
    parser.add_argument("--prompts", type=comma_list(PROMPT_STYLES), default=list(PROMPT_STYLES),
                        help="comma-separated prompt styles for --grid (default: all)")
    parser.add_argument("--limit", type=positive_int, help="only the first N videos (sorted ids), all dimensions")
    parser.add_argument("--few-shot", dest="few_shot_k", type=non_negative_int, default=0,
                        help="k scored examples per dimension from the train split (never the evaluated one)")
    parser.add_argument("--few-shot-seed", type=non_negative_int, default=0)
    parser.add_argument("--input-source", default="auto", choices=INPUT_SOURCES,
                        help="media for audio/video settings: raw files (video_path/audio_path) or "
                             "feature-derived descriptions (public release); auto picks raw when present")
    parser.add_argument("--feature-format", default="text", choices=FEATURE_FORMATS,
                        help="feature-derived input as text, a plot image (vision models), or both")
    parser.add_argument("--out", default=None,
                        help="output folder (cache, predictions, results); default ./runs, "
                        "or ./mis-bench-results for the default job")
    parser.add_argument("--cache", type=file_path, help="response cache file (default OUT/responses.cache.jsonl)")
    parser.add_argument("--max-new-tokens", "--max-tokens", dest="max_new_tokens", type=positive_int,
                        help="default 32 (direct) / 1024 (cot)")
    parser.add_argument("--temperature", type=non_negative_float, default=0.0, help="0 = greedy (default)")
    parser.add_argument("--top-p", type=unit_interval, default=1.0)
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--n-bootstrap", type=bounded_int(0, MAX_BOOTSTRAP), default=1000,
                        help=f"bootstrap resamples for ICC CIs, 0 to {MAX_BOOTSTRAP:,} (default 1000)")
    group = parser.add_argument_group("transformers / vllm")
    group.add_argument("--batch-size", type=positive_int, default=8)
    group.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    group.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ...")
    group = parser.add_argument_group("openai-compatible HTTP")
    group.add_argument("--base-url", default="https://api.openai.com/v1")
    group.add_argument("--api-key-env", default="OPENAI_API_KEY",
                       help="environment variable holding the API key (the key is never logged or written)")
    group.add_argument("--concurrency", type=bounded_int(1, 1024), default=8, help="requests in flight (1-1024)")
    group.add_argument("--max-retries", type=bounded_int(0, 100), default=5)
    group.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per request")
    group.add_argument("--backoff-base", type=non_negative_float, default=1.0,
                       help="seconds; doubles per retry, with jitter")
    group.add_argument("--backoff-max", type=non_negative_float, default=30.0)
    group.add_argument("--max-tokens-field", default="max_tokens",
                       help="request field for the token limit (max_completion_tokens for newer OpenAI models)")
    group.add_argument("--backend-modalities", default=None,
                       help="inputs the served model takes, e.g. text,image,audio,video (openai/vllm; default text,image)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true")
    parser.set_defaults(func=run_command)


def _backend_options(args) -> dict:
    if args.backend == "openai":
        from eval_scripts.backends.openai_backend import RetryPolicy

        options = {
            "base_url": args.base_url, "api_key_env": args.api_key_env, "concurrency": args.concurrency,
            "retry": RetryPolicy(args.max_retries, args.backoff_base, args.backoff_max, args.timeout),
            "max_tokens_field": args.max_tokens_field,
        }
    else:
        options = {"batch_size": args.batch_size, "dtype": args.dtype}
        if args.backend == "transformers":
            options["device"] = args.device
    if args.backend_modalities and args.backend in ("openai", "vllm"):
        options["modalities"] = tuple(m.strip() for m in args.backend_modalities.split(",") if m.strip())
    return options


def _summary(result) -> dict:
    scores = result.scores or {}
    return {
        "setting": result.label,
        "input_source": result.input_source,
        "rows": result.n_rows,
        "cached": result.n_cached,
        "called": result.n_called,
        "failed": result.n_failed,
        "parsed": result.n_parsed,
        "mean_icc": scores.get("mean_icc"),
        "overall_icc": (scores.get("overall") or {}).get("icc"),
        "predictions": str(result.predictions_path),
        "results": str(result.results_path),
        "seconds": round(result.elapsed_s, 2),
    }


def run_command(args: argparse.Namespace) -> int:
    if not args.model and not args.backend:
        from eval_scripts.main_job import run_default

        return int(run_default(args) or 0)
    if not (args.model and args.backend):
        from mis_bench_dataset.errors import UsageError

        raise UsageError("give both --backend and --model", hint="or neither, for the default job")
    from eval_scripts.backends.base import DecodingConfig
    from eval_scripts.report.text_table import format_table
    from eval_scripts.runner import RunConfig, run_setting

    config = RunConfig(
        backend=args.backend, model=args.model, dataset=args.dataset, split=args.split,
        modality=args.modality, prompt_style=args.prompt_style, out=args.out or "runs", limit=args.limit,
        few_shot_k=args.few_shot_k, few_shot_seed=args.few_shot_seed, input_source=args.input_source,
        feature_format=args.feature_format, backend_options=_backend_options(args),
        n_bootstrap=args.n_bootstrap, cache_path=args.cache, progress=not args.no_progress,
    )
    args.interrupted_note = (f"every answer received so far is in the response cache under {config.out}; "
                             "rerun the same command to resume")
    if args.grid:
        entries = _run_grid_with_decoding(config, args.modalities, args.prompts, args)
        if args.json:
            print_json([{"setting": e.label, "refused": e.refused} if e.result is None else _summary(e.result)
                        for e in entries])
        else:
            say(format_table(entries))
        return _exit_code([e.result for e in entries if e.result is not None])
    config.decoding = DecodingConfig.for_style(
        args.prompt_style, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
        top_p=args.top_p, seed=args.seed,
    )
    result = run_setting(config)
    summary = _summary(result)
    if args.json:
        print_json(summary)
    else:
        mean = summary["mean_icc"]
        say(
            f"{summary['setting']} [{summary['input_source']}]: {summary['rows']} rows, {summary['cached']} cached, "
            f"{summary['called']} called, {summary['failed']} failed, {summary['parsed']} parsed; "
            f"mean ICC {pct(mean)}%\npredictions: {summary['predictions']}\nresults: {summary['results']}"
        )
    return _exit_code([result])


def _exit_code(results) -> int:
    """3 when any request of any setting failed (a grid follows the single-setting rule), else 0."""
    from mis_bench_dataset.errors import EXIT_REQUESTS, UsageError

    if not results:
        raise UsageError("every setting of the grid was refused", hint="see the reasons above")
    return EXIT_REQUESTS if any(r.n_failed for r in results) else 0


def _run_grid_with_decoding(config, modalities, styles, args):
    """Grid runs: each style gets its own default token budget unless --max-new-tokens is set."""
    from dataclasses import replace

    from eval_scripts.backends.base import DecodingConfig
    from eval_scripts.runner import make_backend, run_grid

    backend = make_backend(config)
    entries = []
    try:
        for style in styles:
            decoding = DecodingConfig.for_style(
                style, max_new_tokens=args.max_new_tokens, temperature=args.temperature, top_p=args.top_p,
                seed=args.seed,
            )
            entries += run_grid(replace(config, decoding=decoding), modalities, [style], backend=backend)
    finally:
        backend.close()
    order = {(m, s): i for i, (m, s) in enumerate((m, s) for m in modalities for s in styles)}
    return sorted(entries, key=lambda e: order.get(tuple(e.label.split(" ")[:2]), 0))
