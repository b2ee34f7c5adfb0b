"""`mis-bench run --perturb`: one setting run again under each named perturbation (`answers.perturbations`).

The unperturbed arm is read from the response cache and never asked again: a run whose answers are not all
cached is refused before any request, in one line saying which command fills it. Each perturbed arm is a run
like any other (its own folder `<setting>__perturb-<name>`, its answers cached under keys that record the
perturbation, so a rerun asks nothing), and each is measured against the unperturbed arm on the same pairs
(`mis_icc_metric.sensitivity.perturbation_shift`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval_scripts.answers.perturbations import DEFAULT_PERTURB_SEED, parse_perturbations
from eval_scripts.backends.base import Backend
from eval_scripts.harness.context import CACHE_NAME, RunConfig, RunContext, open_datasets, prepare_run
from eval_scripts.harness.execution import RunResult, complete_requests, make_backend, output_folder, write_result
from eval_scripts.harness.response_cache import read_cache
from mis_bench_dataset.toolkit.errors import UsageError
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)


@dataclass
class PerturbedRuns:
    """The unperturbed arm (from the cache), each perturbed arm, and each arm's shift table."""

    unperturbed: RunResult
    arms: dict[str, RunResult] = field(default_factory=dict)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    perturb_seed: int = DEFAULT_PERTURB_SEED
    references: dict = field(default_factory=dict)  # the gold of the evaluated pairs (empty: an unlabelled split)


def _cache_path(config: RunConfig) -> Path:
    return Path(config.cache_path) if config.cache_path else Path(config.out) / CACHE_NAME


def missing_answers(context: RunContext) -> int:
    """How many (row, sample) answers of `context` the response cache does not hold (read only, nothing sent)."""
    path = _cache_path(context.config)
    if not path.is_file():
        return len(context.prompts) * context.samples
    index = read_cache(path)
    return sum(
        index.answer_for(context.key(i, sample), video_id=p.video_id, dimension=p.dimension, prompt_hash=p.prompt_hash)
        is None
        for sample in range(context.samples)
        for i, p in enumerate(context.prompts)
    )


def arm_predictions(result: RunResult) -> dict[tuple[str, str], float | None]:
    """A run's predictions as read back from its predictions file (what the shift tables compare)."""
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file

    return predictions_to_mapping(read_prediction_file(result.predictions_path).records)


def run_perturbed(
    config: RunConfig,
    perturbations: str | Sequence[str],
    *,
    backend: Backend | None = None,
    perturb_seed: int = DEFAULT_PERTURB_SEED,
    resample: str | None = None,
) -> PerturbedRuns:
    """The unperturbed arm from the cache, then every perturbed arm, then their shift tables (see the module)."""
    from mis_icc_metric.sensitivity import perturbation_shift

    names = parse_perturbations(perturbations)
    started = time.monotonic()
    (config,) = open_datasets([config])
    folder = output_folder(config)
    own_backend = backend is None
    backend = backend or make_backend(config)
    try:
        base = prepare_run(config, backend)
        contexts = {name: prepare_run(config, backend, perturbation=name, perturb_seed=perturb_seed) for name in names}
        missing = missing_answers(base)
        if missing:
            raise UsageError(
                f"the unperturbed arm is not in the response cache ({missing} of "
                f"{len(base.prompts) * base.samples} answers missing)",
                where=str(_cache_path(config)),
                hint="run the same `mis-bench run` command without --perturb first (a perturbation is measured "
                "against answers the run already has)",
            )
        completions, prefix = complete_requests(base, backend, folder)
        unperturbed = write_result(base, completions, folder, started, prefix)
        runs = PerturbedRuns(unperturbed, perturb_seed=perturb_seed)
        for name, context in contexts.items():
            arm_started = time.monotonic()
            completions, prefix = complete_requests(context, backend, folder)
            runs.arms[name] = write_result(context, completions, folder, arm_started, prefix)
    finally:
        if own_backend:
            backend.close()
    references = runs.references = base.references
    if references:
        before = arm_predictions(unperturbed)
        for name, arm in runs.arms.items():
            table = perturbation_shift(
                before,
                arm_predictions(arm),
                references,
                resampling=ResamplingOptions(
                    n_bootstrap=max(1, config.n_bootstrap), seed=config.seed, resample=resample or config.resample
                ),
            )
            runs.tables[name] = {"perturbation": contexts[name].setting["perturbation"], **table}
    return runs
