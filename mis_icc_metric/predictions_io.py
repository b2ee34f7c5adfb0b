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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mis_bench_dataset.dimensions import SCORE_MAX, SCORE_MIN, resolve_dimension
from mis_bench_dataset.release.labels import LONG_COLUMNS as RATING_COLUMNS
from mis_bench_dataset.release.labels import map_wide_header, table_form
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
    "gold_pairs_only",
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


# Which side of a comparison a file is, named in every error about it (a judge's file or the experts' gold).
PREDICTIONS_SIDE = "predictions (judge) file"
REFERENCES_SIDE = "references (expert) file"


def _side(side: str, path: Path) -> str:
    return f"{side} {path}"


def _where(path: Path | str, row: int | None = None, column: str | None = None) -> str:
    text = str(path)
    if row is not None:
        text += f", row {row}"
    if column is not None:
        text += f", column {column!r}"
    return text


def _parse_value(raw: object, path: Path | str, row: int, column: str) -> float | None:
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


def _video(raw: object, path: Path | str, row: int, column: str) -> str:
    try:
        return normalize_video_id(str(raw if raw is not None else ""))
    except ValueError as exc:
        raise PredictionsFormatError(f"{_where(path, row, column)}: {exc}") from None


def _dimension(raw: object, path: Path | str, row: int | None, column: str) -> str:
    try:
        return resolve_dimension(str(raw if raw is not None else ""))
    except KeyError as exc:
        raise PredictionsFormatError(f"{_where(path, row, column)}: {exc.args[0]}") from None


def _gold_score(value: float | None, label: str, row: int, column: str) -> float | None:
    """An expert score on the FIS scale or None: one outside [SCORE_MIN, SCORE_MAX] (a 1-10 or 0-100 file) is
    refused at its row, as `score` refuses it, in every command that reads gold."""
    if value is not None and not SCORE_MIN <= value <= SCORE_MAX:
        raise PredictionsFormatError(
            f"{_where(label, row, column)}: expert score {value:g} is outside the FIS scale [{SCORE_MIN}, {SCORE_MAX}]",
            hint="give gold on the 1-5 scale (rescale a file on another scale before reading it)",
        )
    return value


@contextlib.contextmanager
def _open_rows(path: Path, side: str) -> Iterator[tuple[list[str], Iterator[tuple[int, dict]]]]:
    """Header and a stream of (row number, row) of a CSV, JSONL or JSON file, read as iterated: a bad row stops
    the reading there, and memory holds one row at a time (a JSON document, size-limited, is read whole).

    JSON goes through `mis_bench_dataset.toolkit.jsonio` (size and nesting limits, strict: null, not NaN).
    A JSONL file's header is its first record's keys when that record names a ``dimension`` (long form);
    otherwise (wide form) the union of every record's keys, from a first pass that keeps only the keys.
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist")
    label = _side(side, path)
    try:
        with contextlib.ExitStack() as stack:
            yield _rows_by_suffix(path, path.suffix.lower(), label, stack)
    except (csv.Error, UnicodeDecodeError) as exc:
        kind = path.suffix.lstrip(".").upper()
        raise PredictionsFormatError(f"{label}: not a readable UTF-8 {kind} file: {exc}") from None
    except JSONInputError as exc:
        raise PredictionsFormatError(f"{side} {exc.source}: {exc.reason}") from None


def _rows_by_suffix(
    path: Path, suffix: str, label: str, stack: contextlib.ExitStack
) -> tuple[list[str], Iterator[tuple[int, dict]]]:
    if suffix == ".csv":
        handle = stack.enter_context(path.open(newline="", encoding="utf-8-sig"))
        reader = csv.DictReader(handle)
        header = [h.strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        return header, enumerate(reader, start=2)
    if suffix == ".jsonl":
        first = next(_jsonl_records(path, label, stack), None)
        if first is not None and "dimension" in first[1]:
            header = list(first[1])
        else:
            header = list(dict.fromkeys(k for _, record in _jsonl_records(path, label, stack) for k in record))
        return header, _jsonl_records(path, label, stack)
    if suffix == ".json":
        data = read_json(path)
        records = data.get("predictions") if isinstance(data, dict) else data
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise PredictionsFormatError(f"{label}: expected a list of records or an object with a 'predictions' list")
        header = list(dict.fromkeys(k for r in records for k in r))
        return header, ((number, _JSONRow(record)) for number, record in enumerate(records, start=1))
    raise PredictionsFormatError(f"{label}: unsupported file type {suffix!r}; use .csv, .jsonl or .json")


def _jsonl_records(path: Path, label: str, stack: contextlib.ExitStack) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSONL file, parsed as read."""
    handle = stack.enter_context(path.open(encoding="utf-8"))
    for number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            record = loads_strict(line, _where(label, number))
        except JSONInputError as exc:
            raise PredictionsFormatError(f"{_where(label, number)}: invalid JSON ({exc.reason})") from None
        if not isinstance(record, dict):
            raise PredictionsFormatError(f"{_where(label, number)}: expected a JSON object per line")
        yield number, _JSONRow(record)


def _check_duplicate(seen: dict[Key, int], key: Key, path: Path | str, row: int) -> None:
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


@dataclass
class _Gate:
    """The checks on each predicted pair as it is read: gold to match (optional) and the scale count."""

    label: str
    gold: Mapping[Key, object] | None
    where: str
    videos: set[str] = field(default_factory=set)
    n_values: int = 0
    off_scale: list[str] = field(default_factory=list)
    n_off_scale: int = 0

    def __post_init__(self) -> None:
        if self.gold is not None:
            self.videos = {video for video, _ in self.gold}

    def check(self, key: Key, value: float | None, row: int) -> None:
        if self.gold is not None and key not in self.gold:
            raise _no_gold(self.label, row, key, self.videos, self.where)
        if value is None:
            return
        self.n_values += 1
        if not SCORE_MIN <= value <= SCORE_MAX:
            self.n_off_scale += 1
            if len(self.off_scale) < 3:
                self.off_scale.append(f"row {row}: {value:g}")

    def warn(self) -> None:
        """The out-of-scale warning (a 0-100 or 1-10 judge), the same in every command that reads a judge."""
        if self.n_off_scale:
            logger.warning(
                "%s: %d of %d prediction(s) lie outside the FIS scale [%s, %s] (%s): is the judge on another scale? "
                "They are used as given (not clipped); rescale them or calibrate (`mis-bench calibrate`) first",
                self.label,
                self.n_off_scale,
                self.n_values,
                SCORE_MIN,
                SCORE_MAX,
                ", ".join(self.off_scale),
            )


def _no_gold(label: str, row: int, key: Key, videos: set[str], where: str, more: str = "") -> PredictionsFormatError:
    what = (
        f"video {key[0]!r} is not in the references"
        if key[0] not in videos
        else f"({key[0]!r}, {key[1]!r}) has no gold in the references"
    )
    return PredictionsFormatError(
        f"{_where(label, row)}: {what} ({where}){more}; score against the references the predictions "
        "were made on (a build folder's --split, or --split all)"
    )


def read_prediction_file(
    path: str | Path, *, gold: Mapping[Key, object] | None = None, where: str | None = None
) -> PredictionFile:
    """`read_predictions` with the source row of each record and notes (blank wide cells, empty rows).

    The file is streamed and checked row by row: the first bad row (bad id, unknown dimension, bad number,
    duplicate pair and, with `gold`, a pair without gold: `where` names the references) ends the reading with
    an error naming the file (as the judge's) and row, in memory bounded by the rows read. Predictions outside
    the FIS scale are read as given and logged as one warning.
    """
    path = Path(path)
    label = _side(PREDICTIONS_SIDE, path)
    gate = _Gate(label, gold, where or "the references")
    with _open_rows(path, PREDICTIONS_SIDE) as (header, rows):
        form, wide_id = table_form(header, LONG_COLUMNS)
        if form == "long":
            file = _read_long_predictions(path, rows, gate)
        elif form is None:
            raise PredictionsFormatError(
                f"{label}: need long columns {list(LONG_COLUMNS)} or an id column ({', '.join(ID_COLUMNS)}) "
                f"plus one column per dimension; found {header}"
            )
        else:
            file = _read_wide_predictions(path, header, rows, wide_id, gate)
    gate.warn()
    return file


def _read_long_predictions(path: Path, rows: Iterable[tuple[int, dict]], gate: _Gate) -> PredictionFile:
    label = gate.label
    records: list[dict] = []
    numbers: list[int] = []
    seen: dict[Key, int] = {}
    for number, row in rows:
        video = _video(row.get("video_id"), label, number, "video_id")
        dim = _dimension(row.get("dimension"), label, number, "dimension")
        _check_duplicate(seen, (video, dim), label, number)
        value = _parse_value(row.get("prediction"), label, number, "prediction")
        gate.check((video, dim), value, number)
        record = {"video_id": video, "dimension": dim, "prediction": value}
        if "raw_response" in row:
            record["raw_response"] = row["raw_response"]
        for column in INTERVAL_COLUMNS:
            if column in row:
                record[column] = _parse_value(row.get(column), label, number, column)
        records.append(record)
        numbers.append(number)
    return PredictionFile(path, records, numbers, "long")


def _is_blank(row: dict, column: str) -> bool:
    """A wide cell that names no pair: absent (a short CSV row, a JSON key left out) or an empty string."""
    if column not in row:
        return True
    value = row[column]
    return (value is None and not isinstance(row, _JSONRow)) or (isinstance(value, str) and not value.strip())


class _JSONRow(dict):
    """A JSON/JSONL object: there `null` is a value (unparsed), not a blank cell."""


def _read_wide_predictions(
    path: Path, header: list[str], rows: Iterable[tuple[int, dict]], id_column: str, gate: _Gate
) -> PredictionFile:
    label = gate.label
    wide = map_wide_header(header, id_column)
    columns = wide.columns
    if not columns:
        raise PredictionsFormatError(f"{label}: no dimension columns found in {header}")
    if wide.clashes:
        raise PredictionsFormatError(f"{label}: several columns map to dimension(s) {wide.clashes}")
    notes = []
    if wide.unknown:
        notes.append(f"columns {wide.unknown} are not FIS dimensions and were ignored")
    records: list[dict] = []
    numbers: list[int] = []
    seen: dict[Key, int] = {}
    n_blank = 0
    empty_rows = []
    for number, row in rows:
        video = _video(row.get(id_column), label, number, id_column)
        named = 0
        for column, dim in columns.items():
            if _is_blank(row, column):
                n_blank += 1
                continue
            _check_duplicate(seen, (video, dim), label, number)
            value = _parse_value(row.get(column), label, number, column)
            gate.check((video, dim), value, number)
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

    `where` names the references (e.g. "split 'test' of BUILD") in the message. (`read_prediction_file(path,
    gold=...)` makes the same check as it reads, stopping at that row.)
    """
    videos = {video for video, _ in references}
    for record, number in zip(file.records, file.rows, strict=True):
        key = (record["video_id"], record["dimension"])
        if key in references:
            continue
        n_other = sum((r["video_id"], r["dimension"]) not in references for r in file.records) - 1
        more = f" (and {n_other} more prediction(s) without gold)" if n_other else ""
        raise _no_gold(_side(PREDICTIONS_SIDE, file.path), number, key, videos, where, more)


def gold_pairs_only(file: PredictionFile, references: Mapping[Key, object], where: str) -> tuple[list[dict], dict]:
    """A judge file that also covers videos without gold (a judge on every video, experts on a few): the records
    that have gold, and what was left aside ({"n_pairs", "n_videos", "examples": up to 3 video ids}), so the
    output can say it. None of them with gold is the error `check_predicted_pairs` gives (the wrong references)."""
    kept = [r for r in file.records if (r["video_id"], r["dimension"]) in references]
    if not kept:
        check_predicted_pairs(file, references, where)
    aside = [r for r in file.records if (r["video_id"], r["dimension"]) not in references]
    videos = sorted({r["video_id"] for r in aside})
    kept_videos = {r["video_id"] for r in kept}
    return kept, {
        "n_pairs": len(aside),
        "n_videos": len(set(videos) - kept_videos),
        "examples": videos[:3],
        "why": f"no gold in {where}",
    }


def read_video_ids(path: str | Path) -> list[str]:
    """A list of videos, one id per line (blank lines skipped), normalised; a bad line names the file and row
    (read line by line, stopping there)."""
    path = Path(path)
    videos = []
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        videos.append(normalize_video_id(line.strip()))
                    except ValueError as exc:
                        raise PredictionsFormatError(f"{_where(path, number)}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise PredictionsFormatError(f"{path}: not readable UTF-8 text: {exc}") from None
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
    of the `scoring` config, read straight from its Parquet shards with pyarrow (`datasets` is not imported: a
    statistics command needs three columns, not a `Dataset`)."""
    from mis_bench_dataset.dataset.format import check_build_dir, read_columns, resolve_splits

    build = check_build_dir(directory, ("scoring",))
    needed = ["video_id", "dimension", "score"]
    videos: list[str] = []
    dims: list[str] = []
    scores: list[np.ndarray] = []
    for name in resolve_splits(build, split, "scoring"):
        try:
            table = read_columns(build, "scoring", name, needed)
        except DataError as err:
            if "missing" in str(err):
                raise PredictionsFormatError(f"{directory}: the 'scoring' config lacks column(s): {err}") from None
            raise
        videos += table.column("video_id").to_pylist()
        dims += table.column("dimension").to_pylist()
        # (to_pylist, not to_numpy: pyarrow's to_numpy imports pandas, a sixth of the command's time)
        values = table.column("score").to_pylist()
        scores.append(np.array([np.nan if v is None else v for v in values], dtype=np.float32))
    return videos, dims, np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32)


def _references_from_dataset(directory: Path, split: str) -> dict[Key, float]:
    """The gold column of the `scoring` config, of one split or (`split="all"`) of every split the build wrote."""
    videos, dims, scores = _scoring_columns(directory, split)
    label = _side(REFERENCES_SIDE.replace("file", "build"), directory)
    references: dict[Key, float] = {}
    seen: dict[Key, int] = {}
    unlabeled = 0
    for row, (video, dim, score) in enumerate(zip(videos, dims, scores, strict=True)):
        key = (normalize_video_id(video), _dimension(dim, label, row, "dimension"))
        _check_duplicate(seen, key, label, row)
        value = _gold_score(coerce_score(score, what=f"{label} row {row} score"), label, row, "score")
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
        raise PredictionsFormatError(f"{label} [{split}]: no labelled rows (every gold score is null)")
    return references


def _references_from_long_gold(path: Path, header: list[str], rows: Iterable[tuple[int, dict]]) -> dict[Key, float]:
    label = _side(REFERENCES_SIDE, path)
    value_column = next(c for c in GOLD_VALUE_COLUMNS if c in header)
    references: dict[Key, float] = {}
    seen: dict[Key, int] = {}
    for number, row in rows:
        key = (
            _video(row.get("video_id"), label, number, "video_id"),
            _dimension(row.get("dimension"), label, number, "dimension"),
        )
        _check_duplicate(seen, key, label, number)
        value = _parse_value(row.get(value_column), label, number, value_column)
        if _gold_score(value, label, number, value_column) is not None:
            references[key] = value
    return references


def _references_from_labels(path: Path) -> dict[Key, float]:
    """Per-rater or wide gold through the build's labels reader, stopping at the first bad row."""
    from mis_bench_dataset.release.labels import read_labels
    from mis_bench_dataset.release.problems import BuildError

    try:
        labels = read_labels(path, first_fails=True)
    except BuildError as err:
        where = f"{REFERENCES_SIDE} {err.where}" if err.where else _side(REFERENCES_SIDE, path)
        raise PredictionsFormatError(err.what, where=where, hint=err.hint) from None
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
    pairs are left out (logged). Files are streamed and checked row by row, the first bad row (bad id,
    unknown dimension, bad number, duplicate, an expert score outside the FIS scale [1, 5]) ending the
    reading with an error naming the file (as the experts') and row.
    """
    path = Path(source)
    if path.is_dir():
        return _references_from_dataset(path, split)
    label = _side(REFERENCES_SIDE, path)
    with _open_rows(path, REFERENCES_SIDE) as (header, rows):
        if table_form(header, RATING_COLUMNS, marker="rater")[0] == "long":  # per-rater labels, as the build reads
            if path.suffix.lower() != ".csv":
                raise PredictionsFormatError(f"{label}: per-rater labels are read from CSV only")
            labels = True
        else:
            form, _ = table_form(header, ("video_id", "dimension"), value_columns=GOLD_VALUE_COLUMNS)
            if form == "long":
                return _references_from_long_gold(path, header, rows)
            labels = form == "wide" and _has_dimension_column(header) and path.suffix.lower() == ".csv"
    if labels:
        return _references_from_labels(path)
    raise PredictionsFormatError(
        f"{label}: not a references file; expected a dataset folder, per-rater labels "
        "(video_id, rater, dimension, score), long gold (video_id, dimension, score) "
        f"or wide gold (an id column plus one column per dimension); found columns {header}"
    )
