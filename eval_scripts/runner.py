"""One zero-shot run (setting x prompt style) end to end, resumable; and grids of runs.

rows (`scoring` config) -> prompts -> backend, through the append-only response cache
(`CachingBackend`) -> parser g -> predictions + raw responses + results JSON (with the
metric's scores when the split has labels). The pieces live in `eval_scripts.harness`;
this module only strings them together.

Inputs per setting: `text` uses the transcript only. The audio/video settings use raw media
when the rows carry `audio_path` / `video_path` (users with the full data), otherwise
feature-derived descriptions from the `features` config, recorded as
`input_source = "features"`. A setting the backend cannot take is refused
(`UnsupportedSetting`) before any model call.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eval_scripts.backends.base import Backend, Completion, get_backend
from eval_scripts.cache import (
    STATUS_FAILED,
    STATUS_TRUNCATED,
    CacheIndex,
    ResponseCache,
    read_cache,
)
from eval_scripts.harness.batch import (
    OPENAI_MAX_MB,
    OPENAI_MAX_REQUESTS,
    BatchOutcome,
    BatchOutputBackend,
    ImportReport,
    batch_line,
    custom_id,
    read_batch_outputs,
    resolve_outcomes,
    split_lines,
    write_batch_files,
)
from eval_scripts.harness.caching import CachingBackend
from eval_scripts.harness.context import CACHE_NAME, RunConfig, RunContext, prepare_run, setting_label
from eval_scripts.harness.estimate import (
    cost,
    count_prompt_tokens,
    expected_completion_tokens,
    local_tokenizer,
    token_estimator,
)
from eval_scripts.harness.ordering import PrefixStats, prefix_order, prefix_stats
from eval_scripts.harness.outcomes import (
    OUTCOME_ANSWERED,
    OUTCOME_FAILED,
    OUTCOME_TRUNCATED,
    OUTCOME_UNPARSED,
    TRUNCATION_HINT,
    count_outcomes,
    row_outcome,
    summarise_failures,
)
from eval_scripts.harness.outputs import RUN_WRITER, write_run
from eval_scripts.harness.readouts import RowReadout, SampleOutcome, row_readout, sample_outcome
from eval_scripts.prompts import MODALITIES, Prompt
from eval_scripts.readout_agreement import READOUTS_FORMAT_VERSION, readout_agreement
from mis_bench_dataset.dimensions import ZERO_SHOT_PROMPT_STYLES
from mis_bench_dataset.errors import DataError, UsageError
from mis_bench_dataset.inputs import UnsupportedSetting
from mis_bench_dataset.numbers import round_half_up
from mis_bench_dataset.outputs import OutputFolder, check_not_overlapping

logger = logging.getLogger(__name__)

__all__ = [
    "GridEntry",
    "PreparedSetting",
    "RunConfig",
    "RunResult",
    "dry_run",
    "export_batch",
    "import_batch",
    "make_backend",
    "prepare_settings",
    "run_grid",
    "run_setting",
]


@dataclass
class RunResult:
    config: RunConfig
    input_source: str
    n_rows: int
    n_cached: int
    n_called: int
    n_failed: int
    n_parsed: int
    n_truncated: int
    scores: dict | None
    parse_rates: dict[str, float]
    run_dir: Path
    predictions_path: Path
    raw_responses_path: Path
    results_path: Path
    elapsed_s: float
    n_unparsed: int = 0
    outcomes: dict = field(default_factory=dict)  # `harness.outcomes.count_outcomes`
    failures: dict = field(default_factory=dict)  # kind of failure -> {"count", "example"}
    usage: dict[str, int] | None = None  # token totals of the rows' responses (`results.usage_totals`)
    prefix: PrefixStats | None = None  # of the requests sent, in the order sent (None: the engine reorders)
    readouts_path: Path | None = None  # readouts.json of an expected-score or repeated-sample run

    @property
    def n_unanswered(self) -> int:
        """Rows without an answer: failed or truncated (the next run or export asks again)."""
        return self.n_failed + self.n_truncated

    @property
    def label(self) -> str:
        return setting_label(self.config.modality, self.config.prompt_style, self.config.few_shot_k)


def make_backend(config: RunConfig) -> Backend:
    return get_backend(config.backend, config.model, **config.backend_options)


def output_folder(config: RunConfig) -> OutputFolder:
    """The run's --out: never inside (or around) the dataset it reads."""
    if isinstance(config.dataset, (str, Path)):
        check_not_overlapping(config.out, [config.dataset], command="run")
    return OutputFolder(config.out, command="run")


def run_setting(
    config: RunConfig, *, backend: Backend | None = None, scoring: Any = None, train: Any = None
) -> RunResult:
    """Run (or resume) one setting; `scoring` / `train` override the dataset folder's rows."""
    started = time.monotonic()
    folder = output_folder(config)
    own_backend = backend is None
    backend = backend or make_backend(config)
    try:
        context = prepare_run(config, backend, scoring=scoring, train=train)
        completions, prefix = _complete(context, backend, folder)
    finally:
        if own_backend:
            backend.close()
    return _write(context, completions, folder, started, prefix)


def _requests(context: RunContext, indices: Iterable[int]) -> list[tuple[str, Prompt]]:
    """(modality, prompt) of rows `indices`, what `harness.ordering` sorts and measures."""
    return [(context.config.modality, context.prompts[i]) for i in indices]


def _protected(config: RunConfig, inputs: Sequence[str | Path] = ()) -> list[Path]:
    """What a response cache must never be or lie inside: the dataset folder and the run's other inputs."""
    return [Path(p) for p in (config.dataset, *inputs) if isinstance(p, (str, Path))]


def _complete(
    context: RunContext, backend: Backend, folder: OutputFolder, inputs: Sequence[str | Path] = ()
) -> tuple[dict[tuple[int, int], Completion], PrefixStats | None]:
    """Every (row, sample) completion (cached or new), sent in prefix-friendly order when the engine keeps it."""
    from tqdm.auto import tqdm

    config = context.config
    cache_path = Path(config.cache_path) if config.cache_path else folder.claim(CACHE_NAME, RUN_WRITER)
    completions: dict[tuple[int, int], Completion] = {}
    order = list(range(len(context.prompts)))
    if backend.keeps_request_order:
        order = prefix_order(_requests(context, order))
    backend.deadline = config.deadline
    decodings = [context.decoding.for_sample(sample) for sample in range(context.samples)]
    with ResponseCache(cache_path, protected=_protected(config, inputs)) as cache:
        caching = CachingBackend(backend, cache, context.setting)
        pending = [set(caching.pending(context.prompts, decoding)) for decoding in decodings]
        logger.info(
            "%s | %s | %s: %d rows x %d sample(s), %d cached, %d to call",
            backend.name,
            config.model,
            context.label,
            len(context.prompts),
            len(decodings),
            len(context.prompts) * len(decodings) - sum(map(len, pending)),
            sum(map(len, pending)),
        )
        prefix = sum(
            (prefix_stats(_requests(context, (i for i in order if i in todo))) for todo in pending), PrefixStats()
        )
        with tqdm(
            total=len(context.prompts) * len(decodings),
            unit="answer",
            desc=context.label,
            disable=not config.progress,
            dynamic_ncols=True,
        ) as bar:
            for sample, decoding in enumerate(decodings):  # one pass per sample: each answer cached as it comes
                for completion in caching.complete([context.prompts[i] for i in order], decoding):
                    completion.index = order[completion.index]
                    completions[(completion.index, sample)] = completion
                    bar.update(1)
    return completions, prefix if backend.keeps_request_order else None


def _raw_record(row: dict, prompt: Prompt, sample: SampleOutcome, index: int, context: RunContext) -> dict:
    """One line of raw_responses.jsonl: one sample of one row, with both readouts of an expected-score run."""
    completion = sample.completion
    error = failure = None
    if sample.status == STATUS_FAILED:
        error = completion.error if completion else "not answered"
        failure = (completion.failure if completion else None) or "request failed"
    elif sample.status == STATUS_TRUNCATED:
        error = f"the answer reached the token limit (finish_reason length); {TRUNCATION_HINT}"
    record = {
        "video_id": row["video_id"],
        "dimension": row["dimension"],
        "prompt_hash": prompt.prompt_hash,
        "status": sample.status,
        "response": completion.text if completion is not None else None,
        "prediction": sample.value,
        "error": error,
        "failure": failure,
        "finish_reason": completion.finish_reason if completion else None,
        "usage": completion.usage if completion else None,
    }
    if context.decoding.expected:
        record.update(text_prediction=sample.text_value, expected=sample.expected)
    if context.samples > 1:
        record["sample"] = index
    return record


def _readouts(context: RunContext, readouts: Sequence[RowReadout]) -> dict[str, Any] | None:
    """readouts.json of an expected-score or repeated-sample run (None for a plain text run)."""
    decoding = context.decoding
    if not decoding.expected and context.samples == 1:
        return None
    rows = []
    for row, readout in zip(context.rows, readouts, strict=True):
        record = {
            "video_id": row["video_id"],
            "dimension": row["dimension"],
            "prediction": readout.prediction,
            "median": readout.median,
            "sd": readout.sd,
            "spread": readout.spread,
            "values": list(readout.values),
        }
        if decoding.expected:
            record["text_values"] = [sample.text_value for sample in readout.samples]
        rows.append(record)
    return {
        "format_version": READOUTS_FORMAT_VERSION,
        "score_from": decoding.score_from,
        "samples": context.samples,
        "temperature": decoding.temperature,
        "aggregate": "mean of the samples' scores that could be read (median beside)",
        "agreement": readout_agreement(rows),
        "rows": rows,
    }


def _row_readouts(context: RunContext, completions: dict[tuple[int, int], Completion]) -> list[RowReadout]:
    """Each row's samples read (text or expected) and combined (`eval_scripts.harness.readouts`)."""
    decodings = [context.decoding.for_sample(sample) for sample in range(context.samples)]
    style = context.config.prompt_style
    return [
        row_readout([sample_outcome(completions.get((index, n)), d, style) for n, d in enumerate(decodings)])
        for index in range(len(context.rows))
    ]


def _write(
    context: RunContext,
    completions: dict[tuple[int, int], Completion],
    folder: OutputFolder,
    started: float,
    prefix: PrefixStats | None = None,
) -> RunResult:
    from eval_scripts.results import package_versions, usage_totals

    config = context.config
    readouts = _row_readouts(context, completions)
    predictions, raw_records, outcomes, failures = [], [], [], []
    parsed_by_dim: dict[str, list[bool]] = defaultdict(list)
    for row, prompt, readout in zip(context.rows, context.prompts, readouts, strict=True):
        parsed_by_dim[row["dimension"]].append(readout.prediction is not None)
        outcomes.append((row["dimension"], row_outcome(readout.status, readout.prediction)))
        predictions.append(
            {
                "video_id": row["video_id"],
                "dimension": row["dimension"],
                "prediction": readout.prediction,
                "raw_response": readout.samples[0].text,
            }
        )
        for n, sample in enumerate(readout.samples):
            raw_records.append(_raw_record(row, prompt, sample, n, context))
            if sample.status == STATUS_FAILED:
                failures.append((raw_records[-1]["failure"], raw_records[-1]["error"]))
    parse_rates = {d: sum(v) / len(v) for d, v in parsed_by_dim.items()}
    usage = usage_totals(record["usage"] for record in raw_records)
    counts = count_outcomes(outcomes)
    failure_summary = summarise_failures(failures)
    written = write_run(
        folder,
        context.run_dir,
        system={
            "model": config.model,
            "backend": context.backend_name,
            "decoding": context.system_decoding(),
            "package_versions": package_versions(),
        },
        setting=context.results_setting(),
        dataset=context.dataset,
        predictions=predictions,
        references=context.references,
        parse_rates=parse_rates,
        n_bootstrap=config.n_bootstrap,
        raw_records=raw_records,
        usage=usage,
        outcomes={**counts, "failures": failure_summary},
        readouts=_readouts(context, readouts),
    )
    n_cached = sum(1 for c in completions.values() if c.cached)
    overall = counts["overall"]
    return RunResult(
        config=config,
        input_source=context.input_source,
        n_rows=len(context.rows),
        n_cached=n_cached,
        n_called=len(completions) - n_cached,
        n_failed=overall[OUTCOME_FAILED],
        n_parsed=overall[OUTCOME_ANSWERED],
        n_truncated=overall[OUTCOME_TRUNCATED],
        scores=written.scores,
        parse_rates=parse_rates,
        run_dir=written.results_path.parent,
        predictions_path=written.predictions_path,
        raw_responses_path=written.raw_responses_path,
        results_path=written.results_path,
        elapsed_s=time.monotonic() - started,
        usage=usage,
        prefix=prefix,
        n_unparsed=overall[OUTCOME_UNPARSED],
        outcomes=counts,
        failures=failure_summary,
        readouts_path=written.readouts_path,
    )


@dataclass
class GridEntry:
    label: str
    result: RunResult | None = None
    refused: str | None = None


def grid_configs(
    config: RunConfig,
    modalities: Iterable[str] = MODALITIES,
    styles: Iterable[str] = ZERO_SHOT_PROMPT_STYLES,
    decoding: Callable[[str], Any] | None = None,
) -> Iterator[RunConfig]:
    """The grid's settings in the order of its table (modality-major), the one expansion of a grid for runs, dry
    runs and batch files; `decoding(style)` gives each style its decoding (default: the config's)."""
    styles = list(styles)
    for modality in modalities:
        for style in styles:
            sub = replace(config, modality=modality, prompt_style=style)
            yield sub if decoding is None else replace(sub, decoding=decoding(style))


def run_grid(
    config: RunConfig,
    modalities: Iterable[str] = MODALITIES,
    styles: Iterable[str] = ZERO_SHOT_PROMPT_STYLES,
    *,
    backend: Backend | None = None,
    scoring: Any = None,
    decoding: Callable[[str], Any] | None = None,
) -> list[GridEntry]:
    """Every (modality, style) of `grid_configs`; settings the backend cannot take are listed as refused, with why."""
    own_backend = backend is None
    backend = backend or make_backend(config)
    entries = []
    try:
        for sub in grid_configs(config, modalities, styles, decoding):
            label = setting_label(sub.modality, sub.prompt_style, config.few_shot_k)
            try:
                entries.append(GridEntry(label, run_setting(sub, backend=backend, scoring=scoring)))
            except UnsupportedSetting as err:
                logger.warning("refused %s: %s", label, err)
                entries.append(GridEntry(label, refused=str(err)))
    finally:
        if own_backend:
            backend.close()
    return entries


# ----------------------------------------------------------------------------- dry runs and batch files


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
    configs: Sequence[RunConfig], backend: Backend, *, grid: bool = False, scoring: Any = None
) -> list[PreparedSetting]:
    """Contexts of every setting; in a grid a setting the backend cannot take is listed as refused."""
    entries = []
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
            read[path] = read_cache(path, protected=_protected(config))
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


def dry_run(
    configs: Sequence[RunConfig],
    *,
    grid: bool = False,
    scoring: Any = None,
    price_in: float | None = None,
    price_out: float | None = None,
    expected_completion_tokens: int | None = None,
) -> dict[str, Any]:
    """What a run would send, calling nothing: requests without a cached answer, tokens, cost, prefix reuse."""
    backend = batch_backend(configs[0])
    entries = prepare_settings(configs, backend, grid=grid, scoring=scoring)
    model = configs[0].model
    tokenizer = local_tokenizer(model)
    settings, pending_requests = [], []
    for entry, pending in zip(entries, _pending(entries), strict=True):
        if pending is None:
            settings.append({"setting": entry.label, "refused": entry.refused})
            continue
        context = pending.context
        prompts = [context.prompts[i] for i in pending.rows]
        tokens = count_prompt_tokens([p.text for p in prompts], tokenizer, model)
        per_request, source = _expected_completion(context, pending.answers, expected_completion_tokens)
        completion = per_request * len(prompts)
        upper = context.decoding.max_new_tokens * len(prompts)
        settings.append(
            {
                **pending.counts(entry.label),
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
        )
        pending_requests += _requests(context, pending.rows)
    ordered = [pending_requests[i] for i in prefix_order(pending_requests)]
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
        "prefix": prefix_stats(ordered).as_dict(),
        "settings": settings,
    }


def _inputs(configs: Sequence[RunConfig]) -> list[Path]:
    """What a batch export must never overwrite: the dataset folder and the response caches."""
    inputs = {Path(c.cache_path) if c.cache_path else Path(c.out) / CACHE_NAME for c in configs}
    inputs |= {Path(c.dataset) for c in configs if isinstance(c.dataset, (str, Path))}
    return sorted(inputs)


def export_batch(
    configs: Sequence[RunConfig],
    path: str | Path,
    *,
    grid: bool = False,
    scoring: Any = None,
    max_requests: int = OPENAI_MAX_REQUESTS,
    max_mb: float = OPENAI_MAX_MB,
) -> dict[str, Any]:
    """Write one batch input line per request without a cached answer (every setting of a grid), calling nothing."""
    datasets = [c.dataset for c in configs if isinstance(c.dataset, (str, Path))]
    check_not_overlapping(path, datasets, command="run", arg="--export-batch")
    backend = batch_backend(configs[0])
    entries = prepare_settings(configs, backend, grid=grid, scoring=scoring)
    requests, lines, settings = [], [], []
    for entry, pending in zip(entries, _pending(entries), strict=True):
        if pending is None:
            settings.append({"setting": entry.label, "refused": entry.refused})
            continue
        context = pending.context
        requests += _requests(context, pending.rows)
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
    files = write_batch_files(path, parts, inputs=_inputs(configs))
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
    configs: Sequence[RunConfig], paths: Sequence[str | Path], *, grid: bool = False, scoring: Any = None
) -> tuple[list[GridEntry], ImportReport]:
    """Answer the run from provider output files, then write its files exactly as a live run does."""
    for path in paths:
        if not Path(path).is_file():
            raise UsageError(
                f"--import-batch {path} does not exist",
                where="mis-bench run",
                hint="give the output (or error) file the provider wrote",
            )
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
        completions, _ = _complete(entry.context, answering, folder, inputs=paths)
        report.already_answered += len(by_setting[n]) - answering.served
        results.append(GridEntry(entry.label, _write(entry.context, completions, folder, started)))
    return results, report
