"""The one writer of a run's files, shared by model runs and the CPU baselines.

A run folder holds `predictions.jsonl` (long form, read by `mis-bench score`), optionally
`raw_responses.jsonl` (model runs) and `readouts.json` (expected-score or repeated-sample runs:
each row's samples and readouts, the judge's agreement with itself), and `results.json` (the
leaderboard submission schema, validated before it is written), scored against the split's gold
at its exact decimal when the split is labelled. Every file is claimed in the command's output folder
first, so a run never replaces a file it did not write (`mis_bench_dataset.toolkit.ownership`), and the files appear
together, each whole (`mis_bench_dataset.toolkit.atomic`): a failure leaves the earlier run's files as they were.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.formats.results import RESULTS_NAME, RunRecord
from mis_bench_dataset.toolkit.atomic import AtomicFiles
from mis_bench_dataset.toolkit.ownership import OutputFolder
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

RUN_WRITER = "run"
PREDICTIONS_NAME = "predictions.jsonl"
RAW_RESPONSES_NAME = "raw_responses.jsonl"


@dataclass(frozen=True)
class WrittenRun:
    results: dict[str, Any]
    predictions_path: Path
    raw_responses_path: Path | None
    results_path: Path
    readouts_path: Path | None = None

    @property
    def scores(self) -> dict | None:
        return self.results.get("scores")


def write_run(
    folder: OutputFolder,
    run_dir: str,
    record: RunRecord,
    *,
    references: Mapping[tuple[str, str], float],
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    raw_records: Sequence[Mapping[str, Any]] | None = None,
    readouts: Mapping[str, Any] | None = None,
) -> WrittenRun:
    """Score `record`'s predictions against `references` (when any) and write the run's files under `run_dir`;
    `readouts` (an expected-score or repeated-sample run's per-row readouts) go to readouts.json."""
    from eval_scripts.formats.results import write_results
    from eval_scripts.harness.readout_agreement import READOUTS_NAME, readouts_json
    from mis_icc_metric.predictions_io import write_predictions
    from mis_icc_metric.scoring import score_predictions

    predictions = record.predictions
    names = [PREDICTIONS_NAME, RESULTS_NAME] + ([RAW_RESPONSES_NAME] if raw_records is not None else [])
    names += [READOUTS_NAME] if readouts is not None else []
    claimed = dict(zip(names, folder.claim_all([f"{run_dir}/{name}" for name in names], RUN_WRITER), strict=True))
    scores = None
    if references:
        scored = {
            (p["video_id"], p["dimension"]): p["prediction"]
            for p in predictions
            if (p["video_id"], p["dimension"]) in references
        }
        scores = score_predictions(scored, references, resampling=resampling)
    raw_path = None
    with AtomicFiles() as files:  # the run's files appear together: never a folder mixing two runs
        write_predictions(claimed[PREDICTIONS_NAME], predictions, files=files)
        if raw_records is not None:
            raw_path = claimed[RAW_RESPONSES_NAME]
            lines = (json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in raw_records)
            files.write(raw_path, "".join(lines))
        results = write_results(claimed[RESULTS_NAME], record, scores=scores, files=files)
        readouts_path = None
        if readouts is not None:
            readouts_path = claimed[READOUTS_NAME]
            files.write(readouts_path, readouts_json(readouts))
    return WrittenRun(results, claimed[PREDICTIONS_NAME], raw_path, claimed[RESULTS_NAME], readouts_path)
