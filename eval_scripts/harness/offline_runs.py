"""Dry runs and batch files: a run's settings prepared, then estimated, exported or answered from files.

`dry_run` says what a run would send (requests without a cached answer, tokens, cost, prefix
reuse) calling nothing; `export_batch` writes those requests as provider batch files
(`harness.batch_files`); `import_batch` answers the run from the provider's output files and writes
its files exactly as a live run does (`harness.execution`). Every setting of a grid shares
one opened dataset.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.base import Backend
from eval_scripts.harness.batch_files import (
    OPENAI_MAX_MB,
    OPENAI_MAX_REQUESTS,
    BatchOutcome,
    BatchOutputBackend,
    ImportReport,
    batch_arg,
    batch_line,
    check_batch_outputs,
    check_batch_path,
    custom_id,
    read_batch_outputs,
    resolve_outcomes,
    split_lines,
    write_batch_files,
)
from eval_scripts.harness.context import (
    CACHE_NAME,
    RunConfig,
    RunContext,
    open_datasets,
    open_sources,
    prepare_run,
    setting_label,
)
from eval_scripts.harness.cost_estimate import (
    cached_prompt_tokens,
    cost,
    count_prompt_tokens,
    expected_completion_tokens,
    local_tokenizer,
    token_estimator,
)
from eval_scripts.harness.execution import (
    GridEntry,
    complete_requests,
    dataset_paths,
    make_backend,
    output_folder,
    protected_paths,
    requests_of,
    write_result,
)
from eval_scripts.harness.ordering import prefix_order, prefix_stats
from eval_scripts.harness.response_cache import CacheIndex, read_cache
from mis_bench_dataset.setting_inputs import UnsupportedSetting
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.numbers import round_half_up
from mis_bench_dataset.toolkit.ownership import check_not_overlapping

if TYPE_CHECKING:
    from mis_bench_dataset.dataset.handle import DatasetSource

logger = logging.getLogger(__name__)


@dataclass
class PreparedSetting:
    """One setting of a dry run, export or import: its resolved context, or why it was refused."""

    label: str
    context: RunContext | None = None
    refused: str | None = None


def batch_backend(config: RunConfig) -> Backend:
    """The openai backend, whose live request bodies batch files carry; it connects only when asked to send."""
    if config.backend != "openai":
        raise UsageError(
            f"dry runs and batch files are for --backend openai, not {config.backend!r}",
            where="--backend",
            hint="serve the model with an OpenAI-compatible server "
            "(vllm serve, transformers serve) and use --backend openai --base-url URL",
        )
    return make_backend(config)


def prepare_settings(
    configs: Sequence[RunConfig], backend: Backend, *, grid: bool = False, scoring: DatasetSource | None = None
) -> list[PreparedSetting]:
    """Contexts of every setting; in a grid a setting the backend cannot take is listed as refused.

    Each dataset, and the `scoring` override, is opened once for all the settings (`context.open_sources`).
    """
    entries = []
    configs, scoring = open_sources(configs, scoring)
    for config in configs:
        label = setting_label(config.modality, config.prompt_style, config.few_shot_k)
        output_folder(config)  # an --out overlapping the dataset is refused before anything else
        try:
            entries.append(PreparedSetting(label, prepare_run(config, backend, scoring=scoring)))
        except UnsupportedSetting as err:
            if not grid:
                raise
            logger.warning("refused %s: %s", label, err)
            entries.append(PreparedSetting(label, refused=str(err)))
    if not any(entry.context for entry in entries):
        raise UsageError("every setting of the grid was refused", hint="see the reasons above")
    return entries


@dataclass
class _Pending:
    """A prepared setting's requests without a cached answer (the cache read, never written): (row, sample) pairs."""

    context: RunContext
    answers: dict[str, dict]
    requests: list[tuple[int, int]]

    @property
    def rows(self) -> list[int]:
        """The row of each pending request."""
        return [index for index, _ in self.requests]

    def counts(self, label: str) -> dict[str, Any]:
        context = self.context
        return {
            "setting": label,
            "input_source": context.input_source,
            "rows": len(context.prompts),
            "requests": len(self.requests),
            "cached": len(context.prompts) * context.samples - len(self.requests),
        }


def _pending(entries: Sequence[PreparedSetting]) -> list[_Pending | None]:
    """`_Pending` of each prepared setting (None for a refused one); each cache file is read once."""
    read: dict[Path, CacheIndex] = {}
    pending: list[_Pending | None] = []
    for entry in entries:
        if entry.context is None:
            pending.append(None)
            continue
        context = entry.context
        config = context.config
        path = Path(config.cache_path) if config.cache_path else Path(config.out) / CACHE_NAME
        if path not in read:
            read[path] = read_cache(path, protected=protected_paths(config))
        answers: dict[str, dict] = {}
        requests: list[tuple[int, int]] = []  # (row, sample) pairs the cache cannot serve
        for sample in range(context.samples):
            for i, prompt in enumerate(context.prompts):
                key = context.key(i, sample)
                record = _served(read[path], key, prompt)
                if record is None:
                    requests.append((i, sample))
                else:
                    answers[key] = record
        pending.append(_Pending(context, answers, requests))
    return pending


def _served(index: CacheIndex, key: str, prompt: Prompt) -> dict | None:
    """The answer a live run would serve for this prompt's row (checked against the row)."""
    return index.answer_for(key, video_id=prompt.video_id, dimension=prompt.dimension, prompt_hash=prompt.prompt_hash)


def _expected_completion(context: RunContext, answers: dict[str, dict], given: int | None) -> tuple[int, str]:
    """Completion tokens per request: the flag, else the mean of this setting's cached answers, else the default."""
    if given is not None:
        return given, "--expected-completion-tokens"
    seen = [
        answers[key]["usage"]["completion_tokens"]
        for key in context.keys
        if key in answers and isinstance((answers[key].get("usage") or {}).get("completion_tokens"), int)
    ]
    if seen:
        return int(round_half_up(sum(seen) / len(seen), 0)), f"mean of {len(seen)} cached answers"
    style = context.config.prompt_style
    # a request writes at most its token limit (an expected-score request asks for only the score's tokens)
    return min(expected_completion_tokens(style), context.decoding.max_new_tokens), f"default for {style}"


def _setting_estimate(
    label: str,
    pending: _Pending,
    tokenizer: Any,
    model: str,
    expected_tokens: int | None,
    price_in: float | None,
    price_out: float | None,
) -> dict[str, Any]:
    """One setting's line of a dry run: its requests, prompt tokens, expected and maximal completion, cost."""
    context = pending.context
    prompts = [context.prompts[i] for i in pending.rows]
    tokens = count_prompt_tokens([p.text for p in prompts], tokenizer, model)
    per_request, source = _expected_completion(context, pending.answers, expected_tokens)
    completion = per_request * len(prompts)
    upper = context.decoding.max_new_tokens * len(prompts)
    return {
        **pending.counts(label),
        "prompt_chars": sum(len(p.text) for p in prompts),
        "prompt_tokens_estimate": tokens.tokens,
        "attachments": sum(len(p.images) + bool(p.audio_path) + bool(p.video_path) for p in prompts),
        "expected_completion_tokens": per_request,
        "expected_completion_source": source,
        "completion_tokens_estimate": completion,
        "completion_tokens_max": upper,
        "cost_estimate": cost(tokens.tokens, completion, price_in, price_out),
        "cost_max": cost(tokens.tokens, upper, price_in, price_out),
    }


def dry_run(
    configs: Sequence[RunConfig],
    *,
    grid: bool = False,
    scoring: DatasetSource | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    expected_completion_tokens: int | None = None,
    price_cached_in: float | None = None,
) -> dict[str, Any]:
    """What a run would send, calling nothing: requests without a cached answer, tokens, cost, prefix reuse (and,
    with `price_cached_in`, the cost when the prompt tokens a prefix cache reuses are billed as cached)."""
    backend = batch_backend(configs[0])
    entries = prepare_settings(configs, backend, grid=grid, scoring=scoring)
    model = configs[0].model
    tokenizer = local_tokenizer(model)
    settings, pending_requests = [], []
    for entry, pending in zip(entries, _pending(entries), strict=True):
        if pending is None:
            settings.append({"setting": entry.label, "refused": entry.refused})
            continue
        settings.append(
            _setting_estimate(entry.label, pending, tokenizer, model, expected_completion_tokens, price_in, price_out)
        )
        pending_requests += requests_of(pending.context, pending.rows)
    reuse = prefix_stats([pending_requests[i] for i in prefix_order(pending_requests)])
    done = [s for s in settings if "refused" not in s]
    totals = {
        key: sum(s[key] for s in done)
        for key in (
            "requests",
            "cached",
            "prompt_chars",
            "prompt_tokens_estimate",
            "attachments",
            "completion_tokens_estimate",
            "completion_tokens_max",
        )
    }
    return {
        **totals,
        "token_estimator": token_estimator(tokenizer, model),
        "price_in_per_million": price_in,
        "price_out_per_million": price_out,
        "cost_estimate": cost(
            totals["prompt_tokens_estimate"], totals["completion_tokens_estimate"], price_in, price_out
        ),
        "cost_max": cost(totals["prompt_tokens_estimate"], totals["completion_tokens_max"], price_in, price_out),
        "prefix": reuse.as_dict(),
        **_cached_cost(totals, reuse, price_in, price_out, price_cached_in),
        "settings": settings,
    }


def _cached_cost(totals: dict, prefix: Any, price_in, price_out, price_cached_in) -> dict[str, Any]:
    """The dry run's figures with a provider's prompt cache (`estimate.cached_prompt_tokens`); the costs are None
    without `price_cached_in`."""
    prompt = totals["prompt_tokens_estimate"]
    cached = cached_prompt_tokens(prompt, prefix.reused_chars_share)

    def priced(completion: int) -> float | None:
        if price_cached_in is None:
            return None
        return cost(prompt, completion, price_in, price_out, cached_tokens=cached, price_cached_in=price_cached_in)

    return {
        "cached_prompt_tokens_estimate": cached,
        "price_cached_in_per_million": price_cached_in,
        "cost_estimate_with_cache": priced(totals["completion_tokens_estimate"]),
        "cost_max_with_cache": priced(totals["completion_tokens_max"]),
    }


def _inputs(configs: Sequence[RunConfig]) -> list[Path]:
    """What a batch export must never overwrite: the dataset folder and the response caches."""
    inputs = {Path(c.cache_path) if c.cache_path else Path(c.out) / CACHE_NAME for c in configs}
    inputs |= set(dataset_paths(configs))
    return sorted(inputs)


def export_batch(
    configs: Sequence[RunConfig],
    path: str | Path,
    *,
    grid: bool = False,
    scoring: DatasetSource | None = None,
    max_requests: int = OPENAI_MAX_REQUESTS,
    max_mb: float = OPENAI_MAX_MB,
    command: str = "batch export",
) -> dict[str, Any]:
    """Write one batch input line per request without a cached answer (every setting of a grid), calling nothing.
    `command`: what the user typed (`batch export`, or `run export` for the old `run --export-batch`)."""
    configs = open_datasets(configs)
    shown_command = "run" if command.startswith("run ") else command
    check_not_overlapping(path, dataset_paths(configs), command=shown_command, arg=batch_arg(command))
    check_batch_path(path, inputs=_inputs(configs), command=command)  # a user's file there: refused before the work
    backend = batch_backend(configs[0])
    entries = prepare_settings(configs, backend, grid=grid, scoring=scoring)
    requests, lines, settings = [], [], []
    for entry, pending in zip(entries, _pending(entries), strict=True):
        if pending is None:
            settings.append({"setting": entry.label, "refused": entry.refused})
            continue
        context = pending.context
        requests += requests_of(context, pending.rows)
        lines += [
            batch_line(
                custom_id(context, i, sample),
                backend.request_body(context.prompts[i], context.decoding.for_sample(sample)),
            )
            for i, sample in pending.requests
        ]
        settings.append(pending.counts(entry.label))
    order = prefix_order(requests)
    parts = split_lines([lines[i] for i in order], max_requests, int(max_mb * 1_000_000))
    files = write_batch_files(path, parts, inputs=_inputs(configs), command=command)
    return {
        "requests": len(lines),
        "cached": sum(s.get("cached", 0) for s in settings),
        "files": [
            {"path": str(f), "requests": len(part), "bytes": sum(map(len, part))}
            for f, part in zip(files, parts, strict=True)
        ],
        "prefix": prefix_stats([requests[i] for i in order]).as_dict(),
        "settings": settings,
    }


def import_batch(
    configs: Sequence[RunConfig],
    paths: Sequence[str | Path],
    *,
    grid: bool = False,
    scoring: DatasetSource | None = None,
    command: str = "batch import",
) -> tuple[list[GridEntry], ImportReport]:
    """Answer the run from provider output files, then write its files exactly as a live run does. `command`:
    what the user typed (`batch import`, or `run import` for the old `run --import-batch`)."""
    check_batch_outputs(paths, command=command)
    backend = batch_backend(configs[0])
    entries = prepare_settings(configs, backend, grid=grid, scoring=scoring)
    known = {
        custom_id(entry.context, i, sample): (n, i, sample)
        for n, entry in enumerate(entries)
        if entry.context
        for sample in range(entry.context.samples)
        for i in range(len(entry.context.prompts))
    }
    chosen, report = resolve_outcomes(read_batch_outputs(paths), known)
    where = ", ".join(str(p) for p in paths)
    if not report.lines:
        raise DataError("no batch output lines", where=where, hint="give the output file the provider wrote")
    if not report.matched:
        raise DataError(
            f"none of the {report.lines} output lines answers a request of this run, e.g. {report.unknown[0]!r}",
            where=where,
            hint="import with the flags of the export (model, dataset, split, settings, decoding, --limit)",
        )
    by_setting: dict[int, dict[tuple[str, str, str, int], BatchOutcome]] = defaultdict(dict)
    for request_id, outcome in chosen.items():
        n, i, sample = known[request_id]
        prompt = entries[n].context.prompts[i]
        by_setting[n][(prompt.video_id, prompt.dimension, prompt.prompt_hash, sample)] = outcome
    results = []
    for n, entry in enumerate(entries):
        if entry.context is None:
            results.append(GridEntry(entry.label, refused=entry.refused))
            continue
        started = time.monotonic()
        answering = BatchOutputBackend(backend, by_setting[n])
        folder = output_folder(entry.context.config)
        completions, _ = complete_requests(entry.context, answering, folder, inputs=paths)
        report.already_answered += len(by_setting[n]) - answering.served
        results.append(GridEntry(entry.label, write_result(entry.context, completions, folder, started)))
    return results, report
