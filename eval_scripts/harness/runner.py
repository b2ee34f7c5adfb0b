"""One zero-shot run (setting x prompt style) end to end, resumable; and grids of runs.

rows (`scoring` config) -> prompts -> backend, through the append-only response cache
(`CachingBackend`) -> parser g -> predictions + raw responses + results JSON (with the
metric's scores when the split has labels). The pieces live in `eval_scripts.harness`
(`execution`: sending and writing one setting; `batch_flow`: dry runs and batch files);
this module only strings them together.

Inputs per setting: `text` uses the transcript only. The audio/video settings use raw media
when the rows carry `audio_path` / `video_path` (users with the full data), otherwise
feature-derived descriptions from the `features` config, recorded as
`input_source = "features"`. A setting the backend cannot take is refused
(`UnsupportedSetting`) before any model call. The dataset is opened once per call
(`BuiltDataset`): a grid's settings share it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from eval_scripts.answers.prompts import MODALITIES
from eval_scripts.backends.base import Backend, DecodingConfig
from eval_scripts.harness.context import RunConfig, open_sources, prepare_run, setting_label
from eval_scripts.harness.execution import (
    GridEntry,
    RunResult,
    complete_requests,
    make_backend,
    output_folder,
    replica_use,
    write_result,
)
from eval_scripts.harness.offline_runs import (
    PreparedSetting,
    batch_backend,
    dry_run,
    export_batch,
    import_batch,
    prepare_settings,
)
from mis_bench_dataset.dimensions import ZERO_SHOT_PROMPT_STYLES
from mis_bench_dataset.setting_inputs import UnsupportedSetting

if TYPE_CHECKING:
    from mis_bench_dataset.dataset.handle import DatasetSource

logger = logging.getLogger(__name__)

__all__ = [
    "GridEntry",
    "PreparedSetting",
    "RunConfig",
    "RunResult",
    "batch_backend",
    "dry_run",
    "export_batch",
    "import_batch",
    "make_backend",
    "prepare_settings",
    "run_grid",
    "run_setting",
]


def run_setting(
    config: RunConfig,
    *,
    backend: Backend | None = None,
    scoring: DatasetSource | None = None,
    train: DatasetSource | None = None,
) -> RunResult:
    """Run (or resume) one setting of one model end to end, as `mis-bench run` does.

    Opens `config.dataset` once, builds the backend from the config (or uses `backend`, which the caller then
    closes), asks only the rows the response cache has no answer for (appending each outcome as it arrives, so a
    killed run loses nothing), reads a score from each answer and writes, under `config.out/<model>/<setting>/`,
    `predictions.jsonl`, `results.json` (the submission schema, scored with the config's resampling) and the
    readouts. `scoring` / `train` override the dataset folder's rows (the few-shot examples come from `train`).

    Returns:
        The `RunResult`: counts by outcome (answered, unparsed, truncated, failed), the scores, usage and the
        paths written. Raises the toolkit's errors (`UsageError`, `DataError`, failed requests: exit 3 on the
        command line).
    """
    started = time.monotonic()
    (config,), scoring = open_sources([config], scoring)
    folder = output_folder(config)
    own_backend = backend is None
    backend = backend or make_backend(config)
    try:
        context = prepare_run(config, backend, scoring=scoring, train=train)
        before = backend.replicas()
        completions, prefix = complete_requests(context, backend, folder)
        replicas = replica_use(before, backend.replicas())
    finally:
        if own_backend:
            backend.close()
    return write_result(context, completions, folder, started, prefix, replicas)


def grid_configs(
    config: RunConfig,
    modalities: Iterable[str] = MODALITIES,
    styles: Iterable[str] = ZERO_SHOT_PROMPT_STYLES,
    decoding: Callable[[str], DecodingConfig] | None = None,
) -> Iterator[RunConfig]:
    """The grid's settings in the order of its table (modality-major), the one expansion of a grid for runs, dry
    runs and batch files; `decoding(style)` gives each style its decoding (default: the config's)."""
    styles = list(styles)
    for modality in modalities:
        for style in styles:
            sub = replace(config, modality=modality, prompt_style=style)
            yield sub if decoding is None else replace(sub, decoding=decoding(sub.prompt_style))


def run_grid(
    config: RunConfig,
    modalities: Iterable[str] = MODALITIES,
    styles: Iterable[str] = ZERO_SHOT_PROMPT_STYLES,
    *,
    backend: Backend | None = None,
    scoring: DatasetSource | None = None,
    decoding: Callable[[str], DecodingConfig] | None = None,
) -> list[GridEntry]:
    """Every modality x prompt style of one model (the paper's Table 3 grid by default), one `run_setting` each on
    one dataset handle and one backend; `decoding(style)` gives each style its decoding (default: the config's).

    Returns:
        One `GridEntry` per setting, in grid order: its `RunResult`, or why it was refused (a setting the backend
        cannot take, e.g. video on a text-only server).
    """
    (config,), scoring = open_sources([config], scoring)  # once for every setting
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
