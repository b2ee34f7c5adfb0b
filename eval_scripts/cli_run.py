"""`mis-bench run`: zero-shot evaluation of a model on MIS-Bench (one setting, or a grid).

Without --model/--backend it runs the project's default job
(`eval_scripts.main_job.run_default`).
"""

from __future__ import annotations

import argparse
import json
import sys

from mis_bench_dataset.dimensions import MODALITY_SETTINGS as MODALITY_CHOICES

STYLE_CHOICES = ("direct", "cot")


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
    parser.add_argument("--backend", choices=("transformers", "openai", "vllm"))
    parser.add_argument("--model", help="Hub id / local folder (transformers, vllm) or API model name (openai)")
    parser.add_argument("--dataset", help="built dataset folder (`mis-bench build --out DIR`)")
    parser.add_argument("--split", default="test", choices=("train", "validation", "test"))
    parser.add_argument("--modality", default="text", choices=MODALITY_CHOICES)
    parser.add_argument("--prompt", dest="prompt_style", default="direct", choices=STYLE_CHOICES)
    parser.add_argument("--grid", action="store_true",
                        help="run every --modalities x --prompts setting and print a Table-3-like table")
    parser.add_argument("--modalities", default=",".join(MODALITY_CHOICES),
                        help="comma-separated settings for --grid (default: all four)")
    parser.add_argument("--prompts", default="direct,cot", help="comma-separated prompt styles for --grid")
    parser.add_argument("--limit", type=int, help="only the first N videos (sorted ids), all dimensions")
    parser.add_argument("--few-shot", dest="few_shot_k", type=int, default=0,
                        help="k scored examples per dimension from the train split (never the evaluated one)")
    parser.add_argument("--few-shot-seed", type=int, default=0)
    parser.add_argument("--input-source", default="auto", choices=("auto", "raw", "features"),
                        help="media for audio/video settings: raw files (video_path/audio_path) or "
                             "feature-derived descriptions (public release); auto picks raw when present")
    parser.add_argument("--feature-format", default="text", choices=("text", "plot", "text+plot"),
                        help="feature-derived input as text, a plot image (vision models), or both")
    parser.add_argument("--out", default=None,
                        help="output folder (cache, predictions, results); default ./runs, "
                        "or ./mis-bench-results for the default job")
    parser.add_argument("--cache", help="response cache file (default OUT/responses.cache.jsonl)")
    parser.add_argument("--max-new-tokens", type=int, help="default 32 (direct) / 1024 (cot)")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-bootstrap", type=int, default=1000, help="bootstrap resamples for ICC CIs")
    group = parser.add_argument_group("transformers / vllm")
    group.add_argument("--batch-size", type=int, default=8)
    group.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    group.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ...")
    group = parser.add_argument_group("openai-compatible HTTP")
    group.add_argument("--base-url", default="https://api.openai.com/v1")
    group.add_argument("--api-key-env", default="OPENAI_API_KEY",
                       help="environment variable holding the API key (the key is never logged or written)")
    group.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    group.add_argument("--max-retries", type=int, default=5)
    group.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    group.add_argument("--backoff-base", type=float, default=1.0, help="seconds; doubles per retry, with jitter")
    group.add_argument("--backoff-max", type=float, default=30.0)
    group.add_argument("--max-tokens-field", default="max_tokens",
                       help="request field for the token limit (max_completion_tokens for newer OpenAI models)")
    group.add_argument("--backend-modalities", default=None,
                       help="inputs the served model takes, e.g. text,image,audio,video "
                       "(openai/vllm; default text,image)")
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
        print("mis-bench run: give both --backend and --model (or neither, for the default job)", file=sys.stderr)
        return 2
    from eval_scripts.backends.base import BackendUnavailable, DecodingConfig, UnsupportedSetting
    from eval_scripts.cache import CacheError
    from eval_scripts.runner import HarnessError, RunConfig, format_table, run_setting
    from mis_bench_dataset.errors import MisBenchError

    config = RunConfig(
        backend=args.backend, model=args.model, dataset=args.dataset, split=args.split,
        modality=args.modality, prompt_style=args.prompt_style, out=args.out or "runs", limit=args.limit,
        few_shot_k=args.few_shot_k, few_shot_seed=args.few_shot_seed, input_source=args.input_source,
        feature_format=args.feature_format, backend_options=_backend_options(args),
        n_bootstrap=args.n_bootstrap, cache_path=args.cache, progress=not args.no_progress,
    )
    try:
        if args.grid:
            styles = [s.strip() for s in args.prompts.split(",") if s.strip()]
            modalities = [m.strip() for m in args.modalities.split(",") if m.strip()]
            config.decoding = None
            entries = _run_grid_with_decoding(config, modalities, styles, args)
            summaries = [
                {"setting": e.label, "refused": e.refused} if e.result is None else _summary(e.result) for e in entries
            ]
            if args.json:
                print(json.dumps(summaries, indent=1))
            else:
                print(format_table(entries))
            return 0 if any(e.result for e in entries) else 1
        config.decoding = DecodingConfig.for_style(
            args.prompt_style, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
            top_p=args.top_p, seed=args.seed,
        )
        result = run_setting(config)
    except MisBenchError as err:
        print(f"mis-bench run: error: {err.line()}", file=sys.stderr)
        return err.exit_code
    except (UnsupportedSetting, HarnessError, BackendUnavailable, CacheError, ValueError) as err:
        print(f"mis-bench run: {err}", file=sys.stderr)
        return 2
    summary = _summary(result)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        mean = summary["mean_icc"]
        print(
            f"{summary['setting']} [{summary['input_source']}]: {summary['rows']} rows, {summary['cached']} cached, "
            f"{summary['called']} called, {summary['failed']} failed, {summary['parsed']} parsed; "
            f"mean ICC {'-' if mean is None else f'{100 * mean:.1f}%'}\n"
            f"predictions: {summary['predictions']}\nresults: {summary['results']}"
        )
    return 0 if result.n_failed == 0 else 3


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


def main(argv=None) -> int:
    """`python -m eval_scripts.cli_run run ...`: the subcommand without the full `mis-bench` CLI."""
    import logging

    parser = argparse.ArgumentParser(prog="mis-bench")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
