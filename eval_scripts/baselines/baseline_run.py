"""Run a baseline on a built dataset and write what `mis-bench run` writes:
long-form predictions (mis_icc_metric.predictions_io) and a results JSON in the
submission schema (eval_scripts.formats.results.write_results), so scoring, reports and
leaderboard submissions are identical for baselines and models."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.baselines.models import make_baseline
from eval_scripts.formats.results import BASELINE_BACKEND, BASELINE_MODEL_IDS, RunRecord, run_repr
from eval_scripts.harness.run_writer import write_run
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dataset.loading import gold_references
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.protocol import FewShot, setting_record
from mis_bench_dataset.toolkit.errors import UsageError
from mis_bench_dataset.toolkit.ownership import OutputFolder, as_output_folder
from mis_bench_dataset.toolkit.text_safety import slug
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

logger = logging.getLogger(__name__)


@dataclass(frozen=True, repr=False)
class BaselineRun:
    """A baseline's run: its results JSON (`results`) and files; `scores` as a model run's `RunResult` has them."""

    name: str
    modality: str
    results: dict[str, Any]
    predictions_path: Path
    results_path: Path
    seconds: float

    @property
    def scores(self) -> dict[str, Any] | None:
        """The metric's scores of the run (the results JSON's `scores`), as `RunResult.scores`."""
        return self.results.get("scores")

    def __repr__(self) -> str:
        return run_repr("BaselineRun", f"{self.name} · {self.modality}", self.scores, self.results_path)


def load_feature_rows(dataset: str | Path | BuiltDataset, split: str) -> list[dict]:
    """`features`-config rows of one split, their arrays zero-copy views of a memory-mapped
    Arrow file (`mis_bench_dataset.dataset.arrays.FeatureArrays`, opened once per split by the
    handle): nothing is copied per video."""
    return list(BuiltDataset.of(dataset).features(split).rows())


def _system(baseline: str, model: Any, n_train: int) -> dict[str, Any]:
    """The results' `system` block of a fitted baseline."""
    from eval_scripts.formats.results import package_versions

    return {
        "model": BASELINE_MODEL_IDS[baseline],
        "backend": BASELINE_BACKEND,
        "decoding": model.describe(),
        "package_versions": package_versions(extra=("scikit-learn",)),
        "description": f"CPU {baseline} baseline fitted on the train split ({n_train} videos)",
    }


def _records(eval_rows: list[dict], predicted) -> list[dict]:
    return [
        {"video_id": str(row["video_id"]), "dimension": key, "prediction": float(predicted[key][i])}
        for i, row in enumerate(eval_rows)
        for key in DIMENSION_KEYS
    ]


@dataclass(frozen=True)
class BaselineBatch:
    """What the settings a caller runs together share (`run_default_job`'s baselines): the train and evaluated
    rows loaded once, the subfolder their runs land in, and one `summary_cache` (a dict) that summarises each
    video once."""

    train_rows: list[dict] | None = None
    eval_rows: list[dict] | None = None
    subdir: str = ""
    summary_cache: dict | None = None


def run_baseline(
    dataset: str | Path | BuiltDataset,
    out: str | Path | OutputFolder,
    *,
    baseline: str = "features",
    modality: str = "audio+video+text",
    split: str = "test",
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    batch: BaselineBatch = BaselineBatch(),
) -> BaselineRun:
    """Fit on the train split, predict `split`, score when it has labels, write predictions + results.

    The files land in `out/<batch.subdir>/<baseline>__<setting>/` (`out` a folder or the calling command's
    OutputFolder). `batch` lets a caller that runs several settings load the data once (`BaselineBatch`).
    """
    train_rows, eval_rows, subdir, summary_cache = batch.train_rows, batch.eval_rows, batch.subdir, batch.summary_cache
    if split == "train":
        raise UsageError(
            "baselines are fitted on the train split", where="--split", hint="evaluate them on validation or test"
        )
    started = time.monotonic()
    dataset = BuiltDataset.of(dataset).require("features")
    folder = as_output_folder(out, "run")
    train_rows = train_rows if train_rows is not None else load_feature_rows(dataset, "train")
    eval_rows = eval_rows if eval_rows is not None else load_feature_rows(dataset, split)
    model = make_baseline(baseline, modality, summary_cache).fit(train_rows)
    predicted = model.predict(eval_rows)
    records = _records(eval_rows, predicted)
    run_dir = "/".join(part for part in (subdir.strip("/"), f"{baseline}__{slug(modality.replace('+', '-'))}") if part)
    written = write_run(
        folder,
        run_dir,
        record=RunRecord(
            system=_system(baseline, model, len(train_rows)),
            setting=setting_record(modality, "none", "features", few_shot=FewShot(k=0)),
            dataset=dataset.record(split),
            predictions=records,
            parse_rates={key: 1.0 for key in DIMENSION_KEYS},
        ),
        references=gold_references(eval_rows),
        resampling=resampling,
    )
    seconds = time.monotonic() - started
    logger.info(
        "%s baseline, %s: %d predictions in %.1fs -> %s",
        baseline,
        modality,
        len(records),
        seconds,
        written.results_path.parent,
    )
    return BaselineRun(baseline, modality, written.results, written.predictions_path, written.results_path, seconds)
