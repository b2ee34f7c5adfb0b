"""The authors' full dataset on the Hub (`CalistaLu/FIS-Full-Dataset`, access by request) -> `scoring` rows.

The full data (raw videos, transcripts, gold scores) is not public; users granted access load it with
`datasets.load_dataset(FULL_DATASET_ID, split="test")`. Its rows follow the authors' MIS-RAFT code, one
per (video, dimension): `video_path` (e.g. `data/FIS996/CB0326_T3_Jackson.mp4`), `orig_criteria` (the
dimension, by display name), `orig_response` (the transcript), `orig_instruction`,
`orig_score1_description` .. `orig_score5_description` (their rubric text) and `score`. These helpers turn
them into the toolkit's `scoring` rows (`video_id`, `clinician`, `time_point`, `stimulus`, `dimension`,
`transcript`, `score`, `video_path`), which the harness (`run_setting(..., scoring=rows)`) and
`predict_scores` take. The prompts keep taking the rubric from `mis_bench_dataset.dimensions.RUBRIC`; the rows'
own rubric columns are not used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mis_bench_dataset.dimensions import resolve_dimension
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.video_ids import parse_video_id

FULL_DATASET_ID = "CalistaLu/FIS-Full-Dataset"
PAPER_LAYOUT_COLUMNS: tuple[str, ...] = ("video_path", "orig_criteria", "orig_response", "score")


def scoring_rows_from_paper_layout(
    rows: Iterable[Mapping[str, Any]], video_root: str | Path | None = None, where: str = FULL_DATASET_ID
) -> list[dict[str, Any]]:
    """`scoring` rows from rows in the authors' layout; a relative `video_path` is resolved under `video_root`
    when given (URLs are kept). A row without the needed columns or with an unknown dimension or video id
    raises DataError naming it."""
    out = []
    for index, row in enumerate(rows):
        missing = [c for c in PAPER_LAYOUT_COLUMNS if c not in row]
        if missing:
            raise DataError(
                f"row {index} lacks {', '.join(missing)}",
                where=where,
                hint=f"expected the columns of {FULL_DATASET_ID}: {', '.join(PAPER_LAYOUT_COLUMNS)}",
            )
        try:
            video = parse_video_id(str(row["video_path"]))
            dimension = _dimension(str(row["orig_criteria"]))
        except (KeyError, ValueError) as err:
            raise DataError(str(err).strip("'\""), where=f"{where}, row {index}") from err
        score = row["score"]
        out.append(
            {
                "video_id": video.video_id,
                "clinician": video.clinician,
                "time_point": video.time_point,
                "stimulus": video.stimulus,
                "dimension": dimension,
                "transcript": row["orig_response"] or "",
                "score": None if score is None else float(score),
                "video_path": _resolve(str(row["video_path"]), video_root),
            }
        )
    return out


def load_full_dataset(split: str = "test", video_root: str | Path | None = None, **load_kwargs: Any) -> list[dict]:
    """`load_dataset(FULL_DATASET_ID, split=split)` as `scoring` rows. Needs access to the dataset, a Hub login
    and the network; anything else is one DataError saying so."""
    from datasets import load_dataset

    try:
        dataset = load_dataset(FULL_DATASET_ID, split=split, **load_kwargs)
    except Exception as err:  # noqa: BLE001 - gated, offline, unknown split: datasets raises many kinds
        raise DataError(
            f"cannot load {FULL_DATASET_ID} ({type(err).__name__}: {' '.join(str(err).split())[:300]})",
            where=f"split {split!r}",
            hint="request access on the Hub, log in (`hf auth login`) and allow the network (HF_HUB_OFFLINE unset); "
            "the public release is built with `mis-bench build` instead",
        ) from err
    return scoring_rows_from_paper_layout(dataset, video_root)


def _dimension(criteria: str) -> str:
    """The dimension of an `orig_criteria` value: its display name, key or abbreviation, or a criterion text
    starting with the name ("Empathy. The capacity ...")."""
    try:
        return resolve_dimension(criteria)
    except KeyError:
        return resolve_dimension(criteria.split(".", 1)[0])


def _resolve(path: str, root: str | Path | None) -> str:
    if root is None or path.startswith(("http://", "https://")) or Path(path).is_absolute():
        return path
    return str(Path(root) / path)
