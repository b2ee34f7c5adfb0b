"""Reading and writing predictions and references (interface contract item 2).

Predictions, long form (CSV or JSONL): ``video_id, dimension, prediction`` with an
empty cell / null when unparseable, optionally ``raw_response``. Also read:
- wide form: an id column (``video_id``, ``video``, ``file_name`` or ``sample_id``)
  and one column per dimension (key, display name or paper abbreviation), which
  covers the original result files (``video`` = ``data/FIS996/CB0326_T3_Jackson``,
  display-name columns, a UTF-8 BOM);
- a results JSON (``{"predictions": [...]}``) or a JSON list of long records.
A long file may also carry a calibrated prediction's interval and the judge's score before calibration
(``lower``, ``upper``, ``raw_prediction``: `mis-bench calibrate`); readers that do not know these columns
read the file as before, and this one keeps them on the records.
Video ids are normalised to ``{clinician}_{T1|T2|T3}_{stimulus}`` and dimensions to
their keys; every bad cell is an error naming the file, row and column.

What a file names is what was asked (`mis_icc_metric.coverage`): a long row or record names
its pair (an empty or null prediction is asked and unparsed); a wide row names the pairs of
its non-blank cells. A blank wide cell (or a key absent from a wide JSON object) was not
asked, as in the authors' files, which fill one cell per pair they asked; an unparsed
answer in a wide file is written as a null token (`null`, `NA`, `nan`, `none`) or JSON null.

References: a built dataset folder (``datasets.load_dataset(dir, "scoring")``), or a
labels CSV: per-rater (``video_id, rater, dimension, score``, aggregated by
`mis_bench_dataset.release.labels` as the paper does: mean, one decimal), aggregated wide,
or aggregated long (``video_id, dimension, score``; also ``reference``/``gold``).
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mis_bench_dataset.dimensions import resolve_dimension
from mis_bench_dataset.release.labels import LONG_COLUMNS as RATING_COLUMNS
from mis_bench_dataset.release.labels import map_wide_header, table_form
from mis_bench_dataset.splits import ALL_SPLITS, SPLITS
from mis_bench_dataset.toolkit.atomic import AtomicFiles
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.jsonio import JSONInputError, loads_strict, read_json
from mis_bench_dataset.video_ids import ID_COLUMNS, normalize_video_id

from .scoring import Key, coerce_score

logger = logging.getLogger(__name__)

__all__ = [
    "write_predictions",
    "read_predictions",
    "read_prediction_file",
    "PredictionFile",
    "check_predicted_pairs",
    "read_references",
    "predictions_to_mapping",
    "read_video_ids",
    "ID_COLUMNS",
]

LONG_COLUMNS = ("video_id", "dimension", "prediction")
# Optional long columns after `prediction` (and `raw_response`): a calibrated score's origin and interval.
INTERVAL_COLUMNS = ("raw_prediction", "lower", "upper")
GOLD_VALUE_COLUMNS = ("score", "reference", "gold")
_NULL_TEXT = {"", "nan", "none", "null", "na", "n/a"}


class PredictionsFormatError(DataError):
    """A predictions/references file that cannot be read as given (names file, row, column)."""


def _where(path: Path, row: int | None = None, column: str | None = None) -> str:
    text = str(path)
    if row is not None:
        text += f", row {row}"
    if column is not None:
        text += f", column {column!r}"
    return text


def _parse_value(raw: object, path: Path, row: int, column: str) -> float | None:
    """A prediction cell: None/empty/'nan'/'null' -> None, numbers -> float, else an error."""
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if text.casefold() in _NULL_TEXT:
            return None
        try:
            value = float(text)
        except ValueError:
            raise PredictionsFormatError(
                f"{_where(path, row, column)}: {raw!r} is not a number (leave the cell empty for unparseable)"
            ) from None
    elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise PredictionsFormatError(f"{_where(path, row, column)}: expected a number or null, got {raw!r}")
    else:
        value = float(raw)
    if math.isnan(value):
        return None
    if math.isinf(value):
        raise PredictionsFormatError(f"{_where(path, row, column)}: prediction is infinite")
    return value


def _video(raw: object, path: Path, row: int, column: str) -> str:
    try:
        return normalize_video_id(str(raw if raw is not None else ""))
    except ValueError as exc:
        raise PredictionsFormatError(f"{_where(path, row, column)}: {exc}") from None


def _dimension(raw: object, path: Path, row: int | None, column: str) -> str:
    try:
        return resolve_dimension(str(raw if raw is not None else ""))
    except KeyError as exc:
        raise PredictionsFormatError(f"{_where(path, row, column)}: {exc.args[0]}") from None


def _read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict]]]:
    """Header and (row number, row) pairs of a CSV, JSONL or JSON file.

    JSON goes through `mis_bench_dataset.toolkit.jsonio` (size and nesting limits, strict: null, not NaN).
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    try:
        return _rows_by_suffix(path, path.suffix.lower())
    except (csv.Error, UnicodeDecodeError) as exc:
        kind = path.suffix.lstrip(".").upper()
        raise PredictionsFormatError(f"{path}: not a readable UTF-8 {kind} file: {exc}") from None
    except JSONInputError as exc:
        raise PredictionsFormatError(f"{exc.source}: {exc.reason}") from None


def _rows_by_suffix(path: Path, suffix: str) -> tuple[list[str], list[tuple[int, dict]]]:
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            header = [h.strip() for h in reader.fieldnames or []]
            reader.fieldnames = header
            return header, [(number, row) for number, row in enumerate(reader, start=2)]
    if suffix == ".jsonl":
        rows = []
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = loads_strict(line, _where(path, number))
                except JSONInputError as exc:
                    raise PredictionsFormatError(f"{_where(path, number)}: invalid JSON ({exc.reason})") from None
                if not isinstance(record, dict):
                    raise PredictionsFormatError(f"{_where(path, number)}: expected a JSON object per line")
                rows.append((number, _JSONRow(record)))
        header = list(dict.fromkeys(k for _, r in rows for k in r))
        return header, rows
    if suffix == ".json":
        data = read_json(path)
        records = data.get("predictions") if isinstance(data, dict) else data
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise PredictionsFormatError(f"{path}: expected a list of records or an object with a 'predictions' list")
        rows = [(number, _JSONRow(record)) for number, record in enumerate(records, start=1)]
        header = list(dict.fromkeys(k for _, r in rows for k in r))
        return header, rows
    raise PredictionsFormatError(f"{path}: unsupported file type {suffix!r}; use .csv, .jsonl or .json")


def _check_duplicate(seen: dict[Key, int], key: Key, path: Path, row: int) -> None:
    if key in seen:
        raise PredictionsFormatError(
            f"{_where(path, row)}: duplicate prediction for {key} (first given at row {seen[key]})"
        )
    seen[key] = row


@dataclass
class PredictionFile:
    """A predictions file as read: long records, the source row of each, and notes on what it names."""

    path: Path
    records: list[dict]
    rows: list[int]  # source row (CSV line, JSONL line, JSON record) of each record
    form: str  # "long" or "wide"
    notes: list[str] = field(default_factory=list)


def read_predictions(path: str | Path) -> list[dict]:
    """Predictions as records ``{video_id, dimension, prediction[, raw_response]}``, long or wide input."""
    return read_prediction_file(path).records


def read_prediction_file(path: str | Path) -> PredictionFile:
    """`read_predictions` with the source row of each record and notes (blank wide cells, empty rows)."""
    path = Path(path)
    header, rows = _read_rows(path)
    form, wide_id = table_form(header, LONG_COLUMNS)
    if form == "long":
        return _read_long_predictions(path, rows)
    if form is None:
        raise PredictionsFormatError(
            f"{path}: need long columns {list(LONG_COLUMNS)} or an id column ({', '.join(ID_COLUMNS)}) "
            f"plus one column per dimension; found {header}"
        )
    return _read_wide_predictions(path, header, rows, wide_id)


def _read_long_predictions(path: Path, rows: list[tuple[int, dict]]) -> PredictionFile:
    records: list[dict] = []
    seen: dict[Key, int] = {}
    for number, row in rows:
        video = _video(row.get("video_id"), path, number, "video_id")
        dim = _dimension(row.get("dimension"), path, number, "dimension")
        _check_duplicate(seen, (video, dim), path, number)
        record = {
            "video_id": video,
            "dimension": dim,
            "prediction": _parse_value(row.get("prediction"), path, number, "prediction"),
        }
        if "raw_response" in row:
            record["raw_response"] = row["raw_response"]
        for column in INTERVAL_COLUMNS:
            if column in row:
                record[column] = _parse_value(row.get(column), path, number, column)
        records.append(record)
    return PredictionFile(path, records, [number for number, _ in rows], "long")


def _is_blank(row: dict, column: str) -> bool:
    """A wide cell that names no pair: absent (a short CSV row, a JSON key left out) or an empty string."""
    if column not in row:
        return True
    value = row[column]
    return (value is None and not isinstance(row, _JSONRow)) or (isinstance(value, str) and not value.strip())


class _JSONRow(dict):
    """A JSON/JSONL object: there `null` is a value (unparsed), not a blank cell."""


def _read_wide_predictions(path: Path, header: list[str], rows: list[tuple[int, dict]], id_column: str):
    wide = map_wide_header(header, id_column)
    columns = wide.columns
    if not columns:
        raise PredictionsFormatError(f"{path}: no dimension columns found in {header}")
    if wide.clashes:
        raise PredictionsFormatError(f"{path}: several columns map to dimension(s) {wide.clashes}")
    notes = []
    if wide.unknown:
        notes.append(f"columns {wide.unknown} are not FIS dimensions and were ignored")
    records: list[dict] = []
    numbers: list[int] = []
    seen: dict[Key, int] = {}
    n_blank = 0
    empty_rows = []
    for number, row in rows:
        video = _video(row.get(id_column), path, number, id_column)
        named = 0
        for column, dim in columns.items():
            if _is_blank(row, column):
                n_blank += 1
                continue
            _check_duplicate(seen, (video, dim), path, number)
            value = _parse_value(row.get(column), path, number, column)
            records.append({"video_id": video, "dimension": dim, "prediction": value})
            numbers.append(number)
            named += 1
        if not named:
            empty_rows.append(f"row {number} ({video})")
    if n_blank:
        notes.append(f"{n_blank} blank cell(s) read as pairs not asked (write null or NA for an unparsed answer)")
    if empty_rows:
        shown = ", ".join(empty_rows[:5]) + (f" and {len(empty_rows) - 5} more" if len(empty_rows) > 5 else "")
        notes.append(
            f"{len(empty_rows)} row(s) name a video but no filled cell, so nothing of it is evaluated: {shown}"
        )
    for note in notes:
        logger.debug("%s: %s", path, note)
    return PredictionFile(path, records, numbers, "wide", notes)


def check_predicted_pairs(file: PredictionFile, references: Mapping[Key, object], where: str) -> None:
    """Every predicted pair must have gold: the first that has none is an error naming the file and row.

    `where` names the references (e.g. "split 'test' of BUILD") in the message.
    """
    videos = {video for video, _ in references}
    for record, number in zip(file.records, file.rows, strict=True):
        key = (record["video_id"], record["dimension"])
        if key in references:
            continue
        n_other = sum((r["video_id"], r["dimension"]) not in references for r in file.records) - 1
        more = f" (and {n_other} more prediction(s) without gold)" if n_other else ""
        what = (
            f"video {key[0]!r} is not in the references"
            if key[0] not in videos
            else f"({key[0]!r}, {key[1]!r}) has no gold in the references"
        )
        raise PredictionsFormatError(
            f"{_where(file.path, number)}: {what} ({where}){more}; score against the references the predictions "
            "were made on (a build folder's --split, or --split all)"
        )


def read_video_ids(path: str | Path) -> list[str]:
    """A list of videos, one id per line (blank lines skipped), normalised; a bad line names the file and row."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise PredictionsFormatError(f"{path}: not readable UTF-8 text: {exc}") from None
    videos = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                videos.append(normalize_video_id(line.strip()))
            except ValueError as exc:
                raise PredictionsFormatError(f"{_where(path, number)}: {exc}") from None
    if not videos:
        raise PredictionsFormatError(f"{path}: no video ids (expected one per line)")
    return videos


def predictions_to_mapping(records: Iterable[Mapping]) -> dict[Key, float | None]:
    """``{(video_id, dimension): prediction}`` from records; duplicates are an error."""
    mapping: dict[Key, float | None] = {}
    for index, record in enumerate(records):
        try:
            key = (str(record["video_id"]), str(record["dimension"]))
            value = record["prediction"]
        except KeyError as exc:
            raise DataError(f"prediction record {index} lacks field {exc.args[0]!r}") from None
        if key in mapping:
            raise DataError(f"prediction record {index}: duplicate (video_id, dimension) {key}")
        mapping[key] = coerce_score(value, what=f"prediction record {index} {key}")
    return mapping


def write_predictions(path: str | Path, records: Iterable[Mapping], *, files: AtomicFiles | None = None) -> Path:
    """Write long-form predictions; format from the suffix (.csv or .jsonl); None -> empty / null.

    The file is written atomically (`mis_bench_dataset.toolkit.atomic`); with `files` it is staged there
    and appears together with the other files of that group.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise DataError(f"{path}: unsupported predictions file type {suffix!r}; use .csv or .jsonl")
    rows: list[dict] = []
    seen: dict[Key, int] = {}
    for index, record in enumerate(records):
        missing = [c for c in LONG_COLUMNS if c not in record]
        if missing:
            raise DataError(f"prediction record {index} lacks field(s) {missing}")
        video = str(record["video_id"])
        if not video.strip():
            raise DataError(f"prediction record {index}: empty video_id")
        dim = _dimension(record["dimension"], path, None, f"record {index} dimension")
        value = coerce_score(record["prediction"], what=f"prediction record {index}")
        if value is not None and math.isinf(value):
            raise DataError(f"prediction record {index}: prediction is infinite")
        if (video, dim) in seen:
            raise DataError(
                f"prediction record {index}: duplicate {(video, dim)} (first at record {seen[(video, dim)]})"
            )
        seen[(video, dim)] = index
        row = {"video_id": video, "dimension": dim, "prediction": value}
        if record.get("raw_response") is not None or "raw_response" in record:
            row["raw_response"] = record.get("raw_response")
        for column in INTERVAL_COLUMNS:
            if column in record:
                row[column] = coerce_score(record[column], what=f"prediction record {index} {column}")
        rows.append(row)
    with contextlib.ExitStack() as stack:
        group = files if files is not None else stack.enter_context(AtomicFiles())
        with group.open(path, "w", newline="") as handle:
            _write_rows(handle, rows, suffix)
    return path


def _write_rows(handle, rows: list[dict], suffix: str) -> None:
    if suffix == ".jsonl":
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
        return
    with_raw = any("raw_response" in r for r in rows)
    extra = [column for column in INTERVAL_COLUMNS if any(column in r for r in rows)]
    columns = [*LONG_COLUMNS, *(["raw_response"] if with_raw else []), *extra]
    writer = csv.writer(handle)
    writer.writerow(columns)
    for row in rows:
        value = "" if row["prediction"] is None else repr(row["prediction"])
        cells = [row["video_id"], row["dimension"], value]
        if with_raw:
            cells.append("" if row.get("raw_response") is None else row["raw_response"])
        cells += ["" if row.get(column) is None else repr(row[column]) for column in extra]
        writer.writerow(cells)


# --- references ----------------------------------------------------------------------


def _scoring_columns(directory: Path, split: str) -> tuple[list[str], list[str], np.ndarray]:
    """video_id, dimension and score of one split (or "all", every split the build wrote, in split order)
    of the `scoring` config, loaded once with a private cache (`mis_bench_dataset.dataset.loading`)."""
    from mis_bench_dataset.dataset.loading import load_build

    needed = ["video_id", "dimension", "score"]
    videos: list[str] = []
    dims: list[str] = []
    scores: list[np.ndarray] = []
    with load_build(directory, "scoring", None if split == ALL_SPLITS else split) as loaded:
        parts = [loaded[name] for name in SPLITS if name in loaded] if split == ALL_SPLITS else [loaded]
        for dataset in parts:
            absent = [c for c in needed if c not in dataset.column_names]
            if absent:
                raise PredictionsFormatError(f"{directory}: the 'scoring' config lacks column(s) {absent}")
            table = dataset.select_columns(needed).with_format("arrow")[:]
            videos += table.column("video_id").to_pylist()
            dims += table.column("dimension").to_pylist()
            scores.append(table.column("score").to_numpy(zero_copy_only=False).copy())  # float32: widened later
            del table
    return videos, dims, np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32)


def _references_from_dataset(directory: Path, split: str) -> dict[Key, float]:
    """The gold column of the `scoring` config, of one split or (`split="all"`) of every split the build wrote."""
    videos, dims, scores = _scoring_columns(directory, split)
    references: dict[Key, float] = {}
    seen: dict[Key, int] = {}
    unlabeled = 0
    for row, (video, dim, score) in enumerate(zip(videos, dims, scores, strict=True)):
        key = (normalize_video_id(video), _dimension(dim, directory, row, "dimension"))
        _check_duplicate(seen, key, directory, row)
        value = coerce_score(score, what=f"{directory} row {row} score")
        if value is None:
            unlabeled += 1
            continue
        references[key] = value
    if unlabeled:
        logger.info(
            "%s [%s]: %d unlabelled (video, dimension) rows have no gold and are not scored",
            directory,
            split,
            unlabeled,
        )
    if not references:
        raise PredictionsFormatError(f"{directory} [{split}]: no labelled rows (every gold score is null)")
    return references


def _references_from_long_gold(path: Path, header: list[str], rows: list[tuple[int, dict]]) -> dict[Key, float]:
    value_column = next(c for c in GOLD_VALUE_COLUMNS if c in header)
    references: dict[Key, float] = {}
    seen: dict[Key, int] = {}
    for number, row in rows:
        key = (
            _video(row.get("video_id"), path, number, "video_id"),
            _dimension(row.get("dimension"), path, number, "dimension"),
        )
        _check_duplicate(seen, key, path, number)
        value = _parse_value(row.get(value_column), path, number, value_column)
        if value is not None:
            references[key] = value
    return references


def _references_from_labels(path: Path) -> dict[Key, float]:
    from mis_bench_dataset.release.labels import read_labels

    labels = read_labels(path)
    if labels.problems:
        shown = "; ".join(
            f"row {p.row}: {p.reason}" + (f" ({p.video_id}, {p.modality})" if p.video_id else "")
            for p in labels.problems[:5]
        )
        more = f" and {len(labels.problems) - 5} more" if len(labels.problems) > 5 else ""
        raise PredictionsFormatError(f"{path}: {len(labels.problems)} labels problem(s): {shown}{more}")
    references = {
        (video, dim): score
        for video, scores in labels.gold.items()
        for dim, score in scores.items()
        if score is not None
    }
    unlabeled = sum(score is None for scores in labels.gold.values() for score in scores.values())
    if unlabeled:
        logger.info("%s: %d unlabelled (video, dimension) pairs are not scored", path, unlabeled)
    return references


def _has_dimension_column(header: list[str]) -> bool:
    return bool(map_wide_header(header, id_column="").columns)


def read_references(source: str | Path, split: str = "test") -> dict[Key, float]:
    """Gold scores ``{(video_id, dimension): score}`` from a built dataset folder or a labels file.

    ``split`` applies to dataset folders only ("all": every split the build wrote). Unlabelled
    pairs are left out (logged).
    """
    path = Path(source)
    if path.is_dir():
        return _references_from_dataset(path, split)
    header, rows = _read_rows(path)
    if table_form(header, RATING_COLUMNS, marker="rater")[0] == "long":  # per-rater labels, as the build reads them
        if path.suffix.lower() != ".csv":
            raise PredictionsFormatError(f"{path}: per-rater labels are read from CSV only")
        return _references_from_labels(path)
    form, _ = table_form(header, ("video_id", "dimension"), value_columns=GOLD_VALUE_COLUMNS)
    if form == "long":
        return _references_from_long_gold(path, header, rows)
    if form == "wide" and _has_dimension_column(header) and path.suffix.lower() == ".csv":
        return _references_from_labels(path)
    raise PredictionsFormatError(
        f"{path}: not a references file; expected a dataset folder, per-rater labels "
        "(video_id, rater, dimension, score), long gold (video_id, dimension, score) "
        f"or wide gold (an id column plus one column per dimension); found columns {header}"
    )
