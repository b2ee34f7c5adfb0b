"""One setting's requests and files: what a live run, an imported batch and a grid share.

`complete_requests` sends a context's prompts (in prefix-friendly order) through the caching
wrapper and the append-only response cache; `write_result` reads each row's answers and writes
the run's files through the one run writer. `context.open_datasets` opens each dataset a set of
configs names once (`BuiltDataset`), so a grid reads its dataset once.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_scripts.answers.answer_status import STATUS_FAILED, STATUS_TRUNCATED
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.base import Backend, Completion, get_backend
from eval_scripts.backends.served_model import served_model_warnings
from eval_scripts.formats.results import RunRecord, run_repr
from eval_scripts.harness.cached_backend import CachingBackend
from eval_scripts.harness.config import backend_options
from eval_scripts.harness.context import CACHE_NAME, RunConfig, RunContext, setting_label
from eval_scripts.harness.ordering import PrefixStats, prefix_order, prefix_stats
from eval_scripts.harness.readout_agreement import READOUTS_FORMAT_VERSION, readout_agreement
from eval_scripts.harness.readouts import (
    RowReadout,
    SampleOutcome,
    distribution_only_counts,
    out_of_range,
    row_readout,
    sample_outcome,
)
from eval_scripts.harness.response_cache import ResponseCache
from eval_scripts.harness.row_counts import (
    OUTCOME_ANSWERED,
    OUTCOME_FAILED,
    OUTCOME_TRUNCATED,
    OUTCOME_UNPARSED,
    TRUNCATION_HINT,
    count_outcomes,
    row_outcome,
    summarise_failures,
)
from eval_scripts.harness.run_writer import RUN_WRITER, write_run
from eval_scripts.harness.trained_setting import read_trained_setting
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dimensions import prompt_style
from mis_bench_dataset.toolkit.ownership import OutputFolder, check_not_overlapping
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)


@dataclass(repr=False)
class RunResult:
    """What one setting's run did (`run_setting`): its rows (cached, sent, failed, parsed), its scores and the
    files it wrote."""

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
    n_unparsed: int = 0  # answered rows that gave no score, out of range included (results.json's `unparsed`)
    n_out_of_range: int = 0  # of those, the rows whose score (text or expected) lies outside [1, 5]
    n_clipped: int = 0  # scored rows whose regression-head output lay outside [1, 5] and was clipped to the scale
    outcomes: dict = field(default_factory=dict)  # `harness.row_counts.count_outcomes`
    failures: dict = field(default_factory=dict)  # kind of failure -> {"count", "example"}
    usage: dict[str, int] | None = None  # token totals of the rows' responses (`results.usage_totals`)
    prefix: PrefixStats | None = None  # of the requests sent, in the order sent (None: the engine reorders)
    readouts_path: Path | None = None  # readouts.json of an expected-score or repeated-sample run
    # expected-score runs: rows the distribution scored though their text gives none, per reason
    distribution_only: dict[str, int] = field(default_factory=dict)
    replicas: list[dict] | None = None  # several servers: what each did in this setting (`replica_use`)
    served_models: dict[str, int] = field(default_factory=dict)  # the model each answer names -> answers
    model_warnings: list[str] = field(default_factory=list)  # `backends.served_model.served_model_warnings`

    @property
    def n_unreadable(self) -> int:
        """Answered rows whose text gave no score at all (the unparsed ones that are not out of range)."""
        return self.n_unparsed - self.n_out_of_range

    @property
    def n_unanswered(self) -> int:
        """Rows without an answer: failed or truncated (the next run or export asks again)."""
        return self.n_failed + self.n_truncated

    @property
    def label(self) -> str:
        return setting_label(self.config.modality, self.config.prompt_style, self.config.few_shot_k)

    def __repr__(self) -> str:
        return run_repr("RunResult", f"{self.config.model} · {self.label}", self.scores, self.results_path)


@dataclass
class GridEntry:
    """One setting of a grid (`run_grid`): its result, or why the backend refused it."""

    label: str
    result: RunResult | None = None
    refused: str | None = None


def dataset_paths(configs: Sequence[RunConfig]) -> list[Path]:
    """The dataset folders the configs read (what outputs must never overlap or overwrite)."""
    paths = []
    for config in configs:
        dataset = config.dataset  # opened at the boundary (`open_datasets`)
        if isinstance(dataset, BuiltDataset) and dataset.is_folder and dataset.path not in paths:
            paths.append(dataset.path)
    return paths


def make_backend(config: RunConfig) -> Backend:
    return get_backend(config.backend, config.model, **backend_options(config))


def replica_use(before: list[dict] | None, after: list[dict] | None) -> list[dict] | None:
    """What each server did between two `Backend.replicas()` readings (one setting of a grid), or None."""
    if not after:
        return None
    counters = ("sent", "answered", "failed", "cool_downs")
    return [
        {**now, **{key: now[key] - (then or {}).get(key, 0) for key in counters}}
        for now, then in zip(after, before or [None] * len(after), strict=True)
    ]


def output_folder(config: RunConfig) -> OutputFolder:
    """The run's --out: never inside (or around) the dataset it reads."""
    datasets = dataset_paths([config])
    if datasets:
        check_not_overlapping(config.out, datasets, command="run")
    return OutputFolder(config.out, command="run")


def requests_of(context: RunContext, indices: Iterable[int]) -> list[tuple[str, Prompt]]:
    """(modality, prompt) of rows `indices`, what `harness.ordering` sorts and measures."""
    return [(context.config.modality, context.prompts[i]) for i in indices]


def protected_paths(config: RunConfig, inputs: Sequence[str | Path] = ()) -> list[Path]:
    """What a response cache must never be or lie inside: the dataset folder and the run's other inputs."""
    return [*dataset_paths([config]), *(Path(p) for p in inputs)]


def complete_requests(
    context: RunContext, backend: Backend, folder: OutputFolder, inputs: Sequence[str | Path] = ()
) -> tuple[dict[tuple[int, int], Completion], PrefixStats | None]:
    """Every (row, sample) completion (cached or new), sent in prefix-friendly order when the engine keeps it."""
    from mis_bench_dataset.toolkit.progress import step

    config = context.config
    cache_path = Path(config.cache_path) if config.cache_path else folder.claim(CACHE_NAME, RUN_WRITER)
    completions: dict[tuple[int, int], Completion] = {}
    order = list(range(len(context.prompts)))
    if backend.keeps_request_order:
        order = prefix_order(requests_of(context, order))
    backend.deadline = config.deadline
    decodings = [context.decoding.for_sample(sample) for sample in range(context.samples)]
    with ResponseCache(cache_path, protected=protected_paths(config, inputs)) as cache:
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
            (prefix_stats(requests_of(context, (i for i in order if i in todo))) for todo in pending), PrefixStats()
        )
        with step(
            context.label, total=len(context.prompts) * len(decodings), unit="answer", show=config.progress
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
    if context.decoding.reads_value:
        record.update(text_prediction=sample.text_value, expected=sample.expected)
        if sample.distribution_only:  # scored from the distribution: why the text gives no score
            record["distribution_only"] = sample.distribution_only
    if context.samples > 1:
        record["sample"] = index
    if completion is not None and completion.served_model is not None:
        record["served_model"] = completion.served_model  # the model the server says answered
    return record


def _readouts(context: RunContext, readouts: Sequence[RowReadout]) -> dict[str, Any] | None:
    """readouts.json of an expected-score or repeated-sample run (None for a plain text run)."""
    decoding = context.decoding
    if not decoding.reads_value and context.samples == 1:
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
        if decoding.reads_value:
            record["text_values"] = [sample.text_value for sample in readout.samples]
            if any(sample.distribution_only for sample in readout.samples):
                record["distribution_only"] = [sample.distribution_only for sample in readout.samples]
        rows.append(record)
    payload = {
        "format_version": READOUTS_FORMAT_VERSION,
        "score_from": decoding.score_from,
        "samples": context.samples,
        "temperature": decoding.temperature,
        "aggregate": "mean of the samples' scores that could be read (median beside)",
        "agreement": readout_agreement(rows, sample_dependent=_sample_dependent(decoding)),
    }
    if decoding.reads_value:  # rows the distribution (or a regression head) scored though their text gives none
        reasons = distribution_only_counts(readouts)
        payload["distribution_only"] = {"rows": sum(reasons.values()), "reasons": reasons}
    return {**payload, "rows": rows}


def _row_readouts(context: RunContext, completions: dict[tuple[int, int], Completion]) -> list[RowReadout]:
    """Each row's samples read (text or expected) and combined (`eval_scripts.harness.readouts`)."""
    decodings = [context.decoding.for_sample(sample) for sample in range(context.samples)]
    style = context.config.prompt_style
    return [
        row_readout([sample_outcome(completions.get((index, n)), d, style) for n, d in enumerate(decodings)])
        for index in range(len(context.rows))
    ]


@dataclass
class _Collected:
    """What a run writes, gathered row by row from the readouts."""

    predictions: list[dict]
    raw_records: list[dict]
    outcomes: list[tuple[str, str]]
    failures: list[tuple[str, str]]
    parse_rates: dict[str, float]
    n_out_of_range: int = 0
    n_clipped: int = 0


def _sample_dependent(decoding) -> bool:
    """Whether a row's score can differ between samples: not for an expected (or regression) readout of a
    score-first style, read from the prompt alone (`readout_agreement.SAME_READOUT`)."""
    return not (decoding.reads_value and prompt_style(decoding.style).score_first)


def _clipped(readout: RowReadout) -> bool:
    """Whether a row's score is a regression head's output clipped to the scale (the record says so)."""
    return any(sample.expected is not None and sample.expected.get("clipped") for sample in readout.samples)


def _collect(context: RunContext, readouts: Sequence[RowReadout]) -> _Collected:
    """Predictions, raw records, outcomes and parse rates of every row, in row order."""
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
    style = context.config.prompt_style
    n_out_of_range = sum(out_of_range(readout, style) for readout in readouts)
    n_clipped = sum(_clipped(readout) for readout in readouts)
    return _Collected(predictions, raw_records, outcomes, failures, parse_rates, n_out_of_range, n_clipped)


def _run_result(context, completions, written, collected, *, started, prefix, readouts) -> RunResult:
    """What a run did: its counts, scores and files; the outcome counts, failures and token usage as its results
    file records them (`written.results`)."""
    outcomes = dict(written.results["outcomes"])
    failure_summary, counts, usage = outcomes.pop("failures"), outcomes, written.results["usage"]
    n_cached = sum(1 for c in completions.values() if c.cached)
    overall = counts["overall"]
    return RunResult(
        config=context.config,
        input_source=context.input_source,
        n_rows=len(context.rows),
        n_cached=n_cached,
        n_called=len(completions) - n_cached,
        n_failed=overall[OUTCOME_FAILED],
        n_parsed=overall[OUTCOME_ANSWERED],
        n_truncated=overall[OUTCOME_TRUNCATED],
        scores=written.scores,
        parse_rates=collected.parse_rates,
        run_dir=written.results_path.parent,
        predictions_path=written.predictions_path,
        raw_responses_path=written.raw_responses_path,
        results_path=written.results_path,
        elapsed_s=time.monotonic() - started,
        usage=usage,
        prefix=prefix,
        n_unparsed=overall[OUTCOME_UNPARSED],
        n_out_of_range=collected.n_out_of_range,
        n_clipped=collected.n_clipped,
        outcomes=counts,
        failures=failure_summary,
        readouts_path=written.readouts_path,
        distribution_only=distribution_only_counts(readouts) if context.decoding.reads_value else {},
    )


def write_result(
    context: RunContext,
    completions: dict[tuple[int, int], Completion],
    folder: OutputFolder,
    started: float,
    prefix: PrefixStats | None = None,
    replicas: list[dict] | None = None,
) -> RunResult:
    """Write the run's files (`harness.run_writer`) from its completions and say what happened."""
    from eval_scripts.formats.results import package_versions, usage_totals

    config = context.config
    served = served_models(completions.values())
    warnings = served_model_warnings(config.model, served)
    trained = read_trained_setting(config.model)  # a trained model folder names its training method
    readouts = _row_readouts(context, completions)
    collected = _collect(context, readouts)
    usage = usage_totals(record["usage"] for record in collected.raw_records)
    counts = count_outcomes(collected.outcomes)
    failure_summary = summarise_failures(collected.failures)
    written = write_run(
        folder,
        context.run_dir,
        record=RunRecord(
            system={
                "model": config.model,
                "backend": context.backend_name,
                "decoding": context.system_decoding(),
                **({"backend_options": context.backend_options} if context.backend_options else {}),
                "package_versions": package_versions(),
                **({"served_models": served} if served else {}),
                **({"model_warnings": warnings} if warnings else {}),
                **({"method": trained.method} if trained is not None and trained.method else {}),
            },
            setting=context.results_setting(),
            dataset=context.dataset,
            predictions=collected.predictions,
            parse_rates=collected.parse_rates,
            usage=usage,
            outcomes={**counts, "failures": failure_summary},
        ),
        references=context.references,
        resampling=ResamplingOptions(n_bootstrap=config.n_bootstrap, seed=config.seed, resample=config.resample),
        raw_records=collected.raw_records,
        readouts=_readouts(context, readouts),
    )
    result = _run_result(
        context,
        completions,
        written,
        collected,
        started=started,
        prefix=prefix,
        readouts=readouts,
    )
    result.replicas = replicas
    result.served_models, result.model_warnings = served, warnings
    return result


def served_models(completions: Iterable[Completion]) -> dict[str, int]:
    """How many answers (cached ones too) each served model name gave, by name."""
    counts = Counter(c.served_model for c in completions if c.ok and c.served_model is not None)
    return dict(sorted(counts.items()))
