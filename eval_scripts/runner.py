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
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from eval_scripts.backends.base import Backend, Completion, get_backend
from eval_scripts.cache import STATUS_FAILED, STATUS_OK, STATUS_TRUNCATED, ResponseCache, outcome_status
from eval_scripts.harness.caching import CachingBackend
from eval_scripts.harness.context import CACHE_NAME, HarnessError, RunConfig, RunContext, prepare_run, setting_label
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
from eval_scripts.parse import parse_score
from eval_scripts.prompts import MODALITIES
from mis_bench_dataset.dimensions import PROMPT_STYLES
from mis_bench_dataset.inputs import UnsupportedSetting
from mis_bench_dataset.outputs import OutputFolder, check_not_overlapping

logger = logging.getLogger(__name__)

__all__ = ["GridEntry", "HarnessError", "RunConfig", "RunResult", "make_backend", "run_grid", "run_setting"]


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


def run_setting(config: RunConfig, *, backend: Backend | None = None, scoring: Any = None, train: Any = None) -> RunResult:
    """Run (or resume) one setting; `scoring` / `train` override the dataset folder's rows."""
    started = time.monotonic()
    folder = output_folder(config)
    own_backend = backend is None
    backend = backend or make_backend(config)
    try:
        context = prepare_run(config, backend, scoring=scoring, train=train)
        completions = _complete(context, backend, folder)
    finally:
        if own_backend:
            backend.close()
    return _write(context, completions, folder, started)


def _complete(context: RunContext, backend: Backend, folder: OutputFolder) -> dict[int, Completion]:
    from tqdm.auto import tqdm

    config = context.config
    cache_path = Path(config.cache_path) if config.cache_path else folder.claim(CACHE_NAME, RUN_WRITER)
    completions: dict[int, Completion] = {}
    with ResponseCache(cache_path) as cache:
        caching = CachingBackend(backend, cache, context.setting)
        n_pending = len(caching.pending(context.prompts, context.decoding))
        logger.info("%s | %s | %s: %d rows, %d cached, %d to call", backend.name, config.model, context.label,
                    len(context.prompts), len(context.prompts) - n_pending, n_pending)
        with tqdm(total=len(context.prompts), unit="row", desc=context.label, disable=not config.progress,
                  dynamic_ncols=True) as bar:
            for completion in caching.complete(context.prompts, context.decoding):
                completions[completion.index] = completion
                bar.update(1)
    return completions


def _write(context: RunContext, completions: dict[int, Completion], folder: OutputFolder, started: float) -> RunResult:
    from eval_scripts.results import package_versions

    config = context.config
    predictions, raw_records, outcomes, failures = [], [], [], []
    parsed_by_dim: dict[str, list[bool]] = defaultdict(list)
    for index, (row, prompt) in enumerate(zip(context.rows, context.prompts, strict=True)):
        completion = completions.get(index)
        status = outcome_status(completion.ok, completion.finish_reason) if completion else STATUS_FAILED
        text = completion.text if completion is not None else None
        # Only a complete answer is scored: a truncated one ("3." of "3.5") is never parsed.
        value = parse_score(text, config.prompt_style) if status == STATUS_OK and text is not None else None
        parsed_by_dim[row["dimension"]].append(value is not None)
        outcomes.append((row["dimension"], row_outcome(status, value)))
        predictions.append({"video_id": row["video_id"], "dimension": row["dimension"], "prediction": value,
                            "raw_response": text if status == STATUS_OK else None})
        error = failure = None
        if status == STATUS_FAILED:
            error = completion.error if completion else "not answered"
            failure = (completion.failure if completion else None) or "request failed"
            failures.append((failure, error))
        elif status == STATUS_TRUNCATED:
            error = f"the answer reached the token limit (finish_reason length); {TRUNCATION_HINT}"
        raw_records.append({
            "video_id": row["video_id"], "dimension": row["dimension"], "prompt_hash": prompt.prompt_hash,
            "status": status, "response": text, "prediction": value, "error": error, "failure": failure,
            "finish_reason": completion.finish_reason if completion else None,
            "usage": completion.usage if completion else None,
        })
    parse_rates = {d: sum(v) / len(v) for d, v in parsed_by_dim.items()}
    counts = count_outcomes(outcomes)
    failure_summary = summarise_failures(failures)
    written = write_run(
        folder, context.run_dir,
        system={"model": config.model, "backend": context.backend_name, "decoding": context.system_decoding(),
                "package_versions": package_versions()},
        setting=context.results_setting(), dataset=context.dataset, predictions=predictions,
        references=context.references, parse_rates=parse_rates, n_bootstrap=config.n_bootstrap,
        raw_records=raw_records, outcomes={**counts, "failures": failure_summary},
    )
    n_cached = sum(1 for c in completions.values() if c.cached)
    overall = counts["overall"]
    return RunResult(
        config=config, input_source=context.input_source, n_rows=len(context.rows), n_cached=n_cached,
        n_called=len(completions) - n_cached, n_failed=overall[OUTCOME_FAILED], n_parsed=overall[OUTCOME_ANSWERED],
        n_truncated=overall[OUTCOME_TRUNCATED], scores=written.scores, parse_rates=parse_rates,
        run_dir=written.results_path.parent, predictions_path=written.predictions_path,
        raw_responses_path=written.raw_responses_path, results_path=written.results_path,
        elapsed_s=time.monotonic() - started, n_unparsed=overall[OUTCOME_UNPARSED], outcomes=counts,
        failures=failure_summary,
    )


@dataclass
class GridEntry:
    label: str
    result: RunResult | None = None
    refused: str | None = None


def run_grid(
    config: RunConfig,
    modalities: Iterable[str] = MODALITIES,
    styles: Iterable[str] = PROMPT_STYLES,
    *,
    backend: Backend | None = None,
    scoring: Any = None,
) -> list[GridEntry]:
    """Every (modality, style); settings the backend cannot take are listed as refused, with why."""
    own_backend = backend is None
    backend = backend or make_backend(config)
    entries = []
    try:
        for modality in modalities:
            for style in styles:
                sub = replace(config, modality=modality, prompt_style=style)
                label = setting_label(modality, style, config.few_shot_k)
                try:
                    entries.append(GridEntry(label, run_setting(sub, backend=backend, scoring=scoring)))
                except UnsupportedSetting as err:
                    logger.warning("refused %s: %s", label, err)
                    entries.append(GridEntry(label, refused=str(err)))
    finally:
        if own_backend:
            backend.close()
    return entries
