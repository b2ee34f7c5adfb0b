"""Score every submission in a folder against hidden labels; never stop on a bad one.

Each file is loaded strictly, validated (schema, known videos, full coverage of
the split, and, when the references are a build, the dataset fingerprint), and scored by the
metric from its predictions; the `scores` a
submitter sent are ignored. A file that fails any step is listed as rejected
with its reasons; an unexpected crash is caught and reported the same way, so
one submission can never hide another.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from eval_scripts.formats.results import is_floor_baseline
from eval_scripts.formats.submission import (
    DEFAULT_MAX_BYTES,
    SubmissionError,
    load_submission,
    predictions_mapping,
    validate_results,
)
from mis_bench_dataset.dimensions import DEFAULT_BOOTSTRAP, DIMENSION_KEYS, DIMENSIONS, HUMAN_CEILING
from mis_bench_dataset.rules.errors import DataError

logger = logging.getLogger(__name__)

LEADERBOARD_FORMAT_VERSION = "1.0"
References = Mapping[tuple[str, str], "float | None"]


@dataclass
class _Accepted:
    file: str
    results: dict[str, Any]
    predictions: dict[tuple[str, str], float | None]


def fingerprint_reason(fingerprint: Any, fingerprints: Collection[str]) -> str | None:
    """Why a submission made on another dataset is not ranked (None when its fingerprint is the references')."""
    if fingerprint in fingerprints:
        return None
    return (
        f"dataset fingerprint {fingerprint!r} is not the references' ({', '.join(sorted(fingerprints))}): "
        "the predictions were made on another build or another version of it, so they cannot be ranked "
        "against these labels; rerun on the references' build"
    )


def _load_all(
    paths: list[Path], video_ids: set[str], split: str, max_bytes: int, fingerprints: Collection[str] | None = None
):
    accepted: list[_Accepted] = []
    rejected: list[dict[str, Any]] = []
    for path in tqdm(paths, desc="validating submissions", unit="file", disable=len(paths) < 5 or None):
        try:
            results = validate_results(
                load_submission(path, max_bytes=max_bytes), video_ids=video_ids, split=split, source=path.name
            )
            mismatch = (
                None if fingerprints is None else fingerprint_reason(results["dataset"]["fingerprint"], fingerprints)
            )
            if mismatch is not None:
                rejected.append({"file": path.name, "reasons": [mismatch]})
                continue
            accepted.append(_Accepted(path.name, results, predictions_mapping(results)))
        except SubmissionError as err:
            rejected.append({"file": path.name, "reasons": err.reasons})
        except Exception as err:  # noqa: BLE001 - a crash must not hide the other submissions
            logger.exception("unexpected error while validating %s", path)
            rejected.append(
                {"file": path.name, "reasons": [f"internal error while validating: {type(err).__name__}: {err}"]}
            )
    return accepted, rejected


def _fully_parsed_videos(predictions: Mapping[tuple[str, str], float | None]) -> set[str]:
    videos = {video for video, _ in predictions}
    return {v for v in videos if all(predictions.get((v, d)) is not None for d in DIMENSION_KEYS)}


def _entry(sub: _Accepted, scores: dict[str, Any]) -> dict[str, Any]:
    system, setting, dataset = sub.results["system"], sub.results["setting"], sub.results["dataset"]
    return {
        "id": Path(sub.file).stem,
        "file": sub.file,
        "model": system["model"],
        "backend": system["backend"],
        "modality": setting["modality"],
        "prompt_style": setting["prompt_style"],
        "few_shot_k": setting["few_shot_k"],
        "input_source": setting["input_source"],
        "dataset_fingerprint": dataset["fingerprint"],
        "synthetic": bool(dataset.get("synthetic", False)),
        # The `mean` baseline: shown as a reference line (board["floors"]), never ranked among the systems.
        "floor": is_floor_baseline(system),
        "created_at": sub.results["created_at"],
        # Recomputed by the metric from the predictions, like the scores: never the submitter's claim.
        "parse_rates": scores.get("parse_rates") or {},
        # The coverage rule of mis_icc_metric.coverage (a leaderboard admits only full coverage of the split).
        "coverage": scores.get("coverage"),
        # Why rows have no score (unparsed / truncated at the token limit / failed), as the run recorded it
        # (schema 1.1; checked to add up to the predictions); null for baselines.
        "outcomes": sub.results.get("outcomes"),
        "scores": scores,
    }


def _rank_key(entry: dict[str, Any]) -> tuple:
    overall = entry["scores"]["overall"].get("icc")
    mean = entry["scores"].get("mean_icc")
    return (overall is None, -(overall or 0.0), mean is None, -(mean or 0.0), entry["file"])


def _vs_leader(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of mis_icc_metric.paired_comparison(leader, entry) the page shows.

    `delta` is leader minus entry (positive: the leader is ahead); p-values are two-sided.
    """
    overall = comparison["overall"]
    return {
        "p_value": overall["p_value"],
        "delta": overall["delta"],
        "delta_ci": overall["delta_ci"],
        "n": overall["n"],
        "mean_icc_p_value": comparison["mean_icc"]["p_value"],
        "dimension_p_values": {key: block["p_value"] for key, block in comparison["dimensions"].items()},
    }


def _submission_files(submissions_dir: Path) -> list[Path]:
    """The folder's `.json` files; hidden files (the output manifest, editor backups) are never submissions."""
    if not submissions_dir.is_dir():
        raise DataError(
            f"the submissions folder {submissions_dir} does not exist",
            where="SUBMISSIONS_DIR",
            hint="give the folder `mis-bench submit --out` wrote",
        )
    return sorted(
        p
        for p in submissions_dir.iterdir()
        if p.is_file() and p.suffix.lower() == ".json" and not p.name.startswith(".")
    )


def _score_all(accepted, references, rejected: list, n_bootstrap: int, seed: int, common: list) -> list:
    """(entry, submission) for each accepted file it could score; one that fails is added to `rejected`."""
    from eval_scripts.report.inputs import predictions_on
    from mis_bench_dataset.rules.jsonio import json_safe
    from mis_icc_metric import score_predictions

    entries = []
    for sub in tqdm(accepted, desc="scoring submissions", unit="file", disable=len(accepted) < 5 or None):
        try:
            scores = json_safe(
                score_predictions(
                    predictions_on(sub.predictions, references),  # a pair without gold is not scored
                    references,
                    n_bootstrap=n_bootstrap,
                    seed=seed,
                    common_videos=common or None,
                )
            )
            entries.append((_entry(sub, scores), sub))
        except Exception as err:  # noqa: BLE001
            logger.exception("scoring failed for %s", sub.file)
            rejected.append({"file": sub.file, "reasons": [f"could not be scored: {type(err).__name__}: {err}"]})
    return entries


def _rank_against_leader(entries: list, references, n_bootstrap: int, seed: int) -> None:
    """Number the ranked entries and compare each with the leader (a paired bootstrap on the same videos)."""
    from eval_scripts.report.inputs import predictions_on
    from mis_bench_dataset.rules.jsonio import json_safe
    from mis_icc_metric import paired_comparison

    for rank, (entry, sub) in enumerate(entries, start=1):
        entry["rank"] = rank
        if rank == 1:
            entry["vs_leader"] = None
            continue
        try:
            comparison = paired_comparison(
                predictions_on(entries[0][1].predictions, references),
                predictions_on(sub.predictions, references),
                references,
                n_bootstrap=n_bootstrap,
                seed=seed,
            )
            entry["vs_leader"] = _vs_leader(json_safe(comparison))
        except Exception as err:  # noqa: BLE001 - a failed comparison only blanks the p-value
            logger.warning("paired comparison %s vs leader failed: %s", sub.file, err)
            entry["vs_leader"] = {
                "p_value": None,
                "delta": None,
                "delta_ci": None,
                "error": f"{type(err).__name__}: {err}",
            }


def build_leaderboard(
    submissions_dir: str | Path,
    references: References,
    *,
    split: str = "test",
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    max_bytes: int = DEFAULT_MAX_BYTES,
    fingerprints: Collection[str] | None = None,
) -> dict[str, Any]:
    """The leaderboard as a JSON-ready dict: ranked entries, rejected files, the human ceiling.

    Ranked by overall ICC (the paper's Table 3 criterion), then mean ICC. Each entry
    carries a paired bootstrap comparison against the leader on the same videos. The `mean`
    floor baseline is scored but not ranked: it is listed under `floors` (rank null).
    `fingerprints`: the references' dataset fingerprints (`loading.dataset_fingerprints` of the
    labelled build); a submission recording another one is not ranked but listed as rejected
    with the reason. None (labels from a file, which has no fingerprint): not checked.
    """
    paths = _submission_files(Path(submissions_dir))
    video_ids = {video for video, _ in references}
    accepted, rejected = _load_all(paths, video_ids, split, max_bytes, fingerprints)
    # One common item set for every system: the "overall on common videos" figure.
    common = sorted(set.intersection(*(_fully_parsed_videos(s.predictions) for s in accepted))) if accepted else []
    entries = _score_all(accepted, references, rejected, n_bootstrap, seed, common)
    floors = [entry for entry, _ in entries if entry["floor"]]
    for entry in floors:
        entry["rank"], entry["vs_leader"] = None, None
    entries = sorted((pair for pair in entries if not pair[0]["floor"]), key=lambda pair: _rank_key(pair[0]))
    _rank_against_leader(entries, references, n_bootstrap, seed)
    return {
        "format_version": LEADERBOARD_FORMAT_VERSION,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "split": split,
        "n_videos": len(video_ids),
        "n_common_videos": len(common),
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        # Any ranked or floor entry made from synthetic data marks the whole board (its rows are marked too).
        "synthetic": any(entry["synthetic"] for entry, _ in entries) or any(floor["synthetic"] for floor in floors),
        "references_fingerprints": None if fingerprints is None else sorted(fingerprints),
        "dimensions": [{"key": d.key, "name": d.name, "abbreviation": d.abbreviation} for d in DIMENSIONS],
        "human_ceiling": {key: {"icc": c.icc, "icc_ci": [c.ci_low, c.ci_high]} for key, c in HUMAN_CEILING.items()},
        "entries": [entry for entry, _ in entries],
        "floors": floors,
        "rejected": sorted(rejected, key=lambda r: r["file"]),
    }
