"""What a report reads: results JSON files (or folders of them), labels, and rescoring against them.

Expected failures are `mis_bench_dataset.toolkit.errors` exceptions naming the file, so the CLI prints one line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval_scripts.formats.results import RESULTS_NAME
from eval_scripts.harness.trained_setting import TRAINED_SETTING_NAME
from mis_bench_dataset.dimensions import SCORE_REGRESSION
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.progress import progress
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)

Key = tuple[str, str]


def results_files(paths: Sequence[str | Path]) -> list[Path]:
    """The files given, folders replaced by every `results.json` below them (sorted)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(path.rglob(RESULTS_NAME))
            if not found:
                raise UsageError(
                    f"no {RESULTS_NAME} below this folder",
                    where=str(path),
                    hint="give results JSON files or folders holding them",
                )
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError("no such file or folder", where=str(path), hint="check the path")
    return files


def trained_method(results: Mapping[str, Any]) -> str:
    """The training method of the model a run evaluated, for the comparison of methods: the `method` that
    `mis-bench train` recorded in the model folder's setting.json (raft, ce, raft+ce, ntl, raft+ntl, regression,
    raw), else "regression" for a run read by a regression head; "" for any other model (a Hub id, a server)."""
    import json

    system = results.get("system") or {}
    decoding = system.get("decoding") if isinstance(system.get("decoding"), Mapping) else {}
    model = str(system.get("model") or "")
    path = Path(model) / TRAINED_SETTING_NAME if model else None
    if path is not None and path.is_file():
        try:
            method = json.loads(path.read_text(encoding="utf-8")).get("method")
        except (OSError, ValueError, AttributeError):
            method = None
        if isinstance(method, str) and method:
            return method
    return SCORE_REGRESSION if decoding.get("score_from") == SCORE_REGRESSION else ""


def load_results(files: Sequence[Path]) -> list[dict[str, Any]]:
    """Each file read strictly and validated against the submission schema."""
    from eval_scripts.formats.submission import SubmissionError, load_submission, validate_results

    loaded = []
    for path in files:
        try:
            loaded.append(validate_results(load_submission(path), source=str(path)))
        except SubmissionError as err:
            shown = "; ".join(err.reasons[:3]) + (f"; and {len(err.reasons) - 3} more" if len(err.reasons) > 3 else "")
            raise DataError(
                f"not a valid results file: {shown}",
                where=str(path),
                hint="fix it (`mis-bench submit` lists every problem) or leave it out",
            ) from None
    return loaded


def read_report_references(source: str | Path, split: str) -> dict[Key, float]:
    """Gold scores from a built dataset folder or a labels file (`mis_icc_metric.predictions_io`)."""
    from mis_icc_metric.predictions_io import read_references

    try:
        return read_references(source, split=split)
    except DataError:  # the reader's own line names the file, row and side
        raise
    except (OSError, ValueError) as err:
        raise DataError(
            f"cannot read the references: {err}", where=str(source), hint="give a built dataset folder or a labels CSV"
        ) from None


def one_fingerprint_per_build(
    results_list: Sequence[Mapping[str, Any]], source: str | Path, split: str
) -> list[Mapping[str, Any]]:
    """The results with every fingerprint of the references' build (`source`, when it is a build folder) on
    `split` written as that build's one fingerprint (`BuiltDataset.build_fingerprint`): results recorded over
    the configs they read (older runs: the text only; the baselines: text and features) are then compared with
    each other and named as one build."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    path = Path(source)
    if not path.is_dir():
        return list(results_list)
    build = BuiltDataset.open(path)
    aliases, canonical = build.fingerprints(split), build.build_fingerprint(split)
    same = []
    for results in results_list:
        dataset = results.get("dataset") or {}
        if dataset.get("fingerprint") in aliases and dataset.get("split", split) == split:
            results = {**results, "dataset": {**dataset, "fingerprint": canonical}}
        same.append(results)
    return same


def predictions_on(
    predictions: Mapping[Key, float | None], references: Mapping[Key, object]
) -> dict[Key, float | None]:
    """The predictions of the pairs the references label (a run may cover more videos than the split)."""
    return {key: value for key, value in predictions.items() if key in references}


def score_run(
    predictions: Mapping[Key, float | None],
    references: Mapping[Key, float],
    *,
    resampling: ResamplingOptions,
    source: str,
) -> dict[str, Any]:
    """`mis_icc_metric.score_predictions` of one run's predictions on the labelled pairs, strict-JSON safe."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import score_predictions

    try:
        return json_safe(
            score_predictions(
                predictions_on(predictions, references),
                references,
                resampling=resampling,
            )
        )
    except ValueError as err:
        raise DataError(
            f"cannot score against the references: {err}",
            where=source,
            hint="give the labels of the split these predictions were made on",
        ) from None


def rescore(
    results_list: Sequence[Mapping[str, Any]],
    references: Mapping[Key, float],
    *,
    resampling: ResamplingOptions,
    sources: Sequence[str],
) -> list[dict[str, Any]]:
    """Copies of the results with `scores` recomputed from their predictions against `references`."""
    from eval_scripts.formats.submission import predictions_mapping

    rescored = []
    for results, source in progress(
        list(zip(results_list, sources, strict=True)), desc="scoring runs", unit="run", show=len(results_list) >= 3
    ):
        scores = score_run(predictions_mapping(results), references, resampling=resampling, source=source)
        rescored.append({**results, "scores": scores})
    return rescored
