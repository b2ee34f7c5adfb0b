"""Labels: per-rater ratings -> gold scores (paper: arithmetic mean of the available
ratings, one decimal), and the human single-rater ICC(3,1) ceiling (paper Table 2).

Two input forms, told apart by the header:

* long, per rater: ``video_id, rater, dimension, score`` (dimension as key, display
  name or paper abbreviation);
* wide, aggregated: an id column (``video_id``, ``video`` or the original file's
  ``file_name`` such as ``AG0914_FIS_Time1_Jackson``) and one column per dimension
  (keys as in the original labels file, or names / abbreviations). Empty = unlabeled.

Gold = mean of the available ratings rounded half up to one decimal (decimal
arithmetic, so 3.25 -> 3.3 and 3.35 -> 3.4, never binary-float ties). A wide file
holds means already; a value that is not at one decimal (the authors' `coding.csv`
holds unrounded rater means such as 3.8333333333333335) is rounded by the same rule and
counted (`Labels.rounding`), never silently: the paper's gold is "the arithmetic mean,
retaining one decimal place" (§3.2), and only the rounded gold reproduces its Tables 4
and 6. Every bad row is reported as a `Problem` naming the file and row; what is read
as written but worth knowing (a known misspelling of an id, a column that is not a
dimension) is a `LabelNote`, which never stops a build or a score.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import numpy as np

from mis_bench_dataset.dimensions import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN, resolve_dimension
from mis_bench_dataset.release.problems import BuildError, Problem
from mis_bench_dataset.toolkit.atomic import atomic_open
from mis_bench_dataset.toolkit.numbers import round_half_up
from mis_bench_dataset.video_ids import ID_COLUMNS, id_column, misspelling_note, parse_video_id

# Wide-file columns that are neither the id nor a dimension and are skipped silently (pandas index columns).
IGNORED_COLUMNS = frozenset({"", "index", "unnamed: 0"})
LONG_COLUMNS = ("video_id", "rater", "dimension", "score")
GOLD_RULE = (
    "arithmetic mean of the available ratings rounded half up to one decimal on its exact decimal value "
    "(paper §3.2: 'taking their arithmetic mean and retaining one decimal place')"
)
# Kinds of notes, with their meaning: read as written, reported, never a problem.
NOTE_KINDS: dict[str, str] = {
    "id_misspelling": "a known misspelling of the id (`FIS`/`Time` in another case) read as the video it names",
    "ignored_column": "a column that is neither the id nor a dimension (ignored)",
}


@dataclass(frozen=True)
class LabelNote:
    """Something read as written but worth reporting: what, where (file, row)."""

    kind: str
    text: str
    path: str
    row: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in NOTE_KINDS:
            raise ValueError(f"unknown note kind {self.kind!r}")

    def to_dict(self) -> dict:
        data = {"kind": self.kind, "text": self.text, "path": self.path, "row": self.row}
        return {k: v for k, v in data.items() if v is not None}

    def __str__(self) -> str:
        where = f"{self.path}" + (f" row {self.row}" if self.row is not None else "")
        return f"{self.kind}: {where}: {self.text}"


@dataclass(frozen=True)
class GoldRounding:
    """How many gold values were not at one decimal and were rounded by `GOLD_RULE`."""

    n_rounded: int
    n_values: int
    form: str  # "long": means of ratings; "wide": aggregated values as given

    def to_dict(self) -> dict:
        return {"n_rounded": self.n_rounded, "n_values": self.n_values, "form": self.form, "rule": GOLD_RULE}

    def sentence(self) -> str:
        what = "means of the ratings" if self.form == "long" else "aggregated values in the labels file"
        return (
            f"{self.n_rounded} of {self.n_values} gold values ({what}) were not at one decimal and were rounded "
            f"half up to one decimal (paper §3.2)"
        )


@dataclass(frozen=True)
class CeilingEstimate:
    """Human single-rater ICC(3,1) on the fully rated videos, with its 95% F-based CI."""

    icc: float
    ci_low: float
    ci_high: float
    n_videos: int
    n_raters: int

    def to_dict(self) -> dict:
        return {
            "icc": self.icc,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n_videos": self.n_videos,
            "n_raters": self.n_raters,
        }


@dataclass
class Labels:
    """Gold scores per video (None = unlabeled dimension), the raw ratings when per-rater,
    and the problems found while reading."""

    path: Path
    form: str  # "long" or "wide"
    gold: dict[str, dict[str, float | None]]
    ratings: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)  # (video, dim) -> rater -> score
    problems: list[Problem] = field(default_factory=list)
    notes: list[LabelNote] = field(default_factory=list)
    rounding: GoldRounding | None = None

    def fully_rated_videos(self) -> list[str]:
        """Videos rated by every rater of the file on all eight dimensions (the paper's 625)."""
        if not self.ratings:
            return []
        n_raters = max(len(r) for r in self.ratings.values())
        return sorted(
            video_id
            for video_id in {v for v, _ in self.ratings}
            if all(len(self.ratings.get((video_id, d), {})) == n_raters for d in DIMENSION_KEYS)
        )

    def human_ceiling(self) -> dict[str, CeilingEstimate]:
        return human_ceiling(self)

    def restricted_to(self, video_ids: Iterable[str]) -> Labels:
        """The same labels for only these videos (e.g. one split's), problems kept."""
        keep = set(video_ids)
        return Labels(
            self.path,
            self.form,
            {v: g for v, g in self.gold.items() if v in keep},
            {key: r for key, r in self.ratings.items() if key[0] in keep},
            list(self.problems),
            list(self.notes),
            self.rounding,
        )


def _exact_mean(ratings: list[float]) -> Decimal:
    if not ratings:
        raise ValueError("no ratings to aggregate")
    return sum(Decimal(repr(float(r))) for r in ratings) / Decimal(len(ratings))


def aggregate(ratings: list[float]) -> float:
    """Paper rule: arithmetic mean of the available ratings, one decimal."""
    return round_half_up(_exact_mean(ratings))


def at_one_decimal(value: Decimal | str) -> bool:
    """Whether a decimal value (or its text) has nothing beyond the first decimal place."""
    exact = value if isinstance(value, Decimal) else Decimal(value.strip())
    return exact == exact.quantize(Decimal("0.1"))


def icc3_1_with_ci(matrix: np.ndarray, alpha: float = 0.05) -> tuple[float, float, float]:
    """ICC(3,1) (paper eq. 3-5) with its F-test CI, from the project's one metric core."""
    from mis_bench_dataset.icc import icc3_1, icc3_ci

    y = np.asarray(matrix, dtype=np.float64)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError(f"ICC(3,1) needs at least 2 videos and 2 raters, got shape {y.shape}")
    low, high = icc3_ci(y, confidence=1 - alpha)  # what `icc3` reports, without its average-rater form and p-value
    return float(icc3_1(y)), float(low), float(high)


def human_ceiling(labels: Labels) -> dict[str, CeilingEstimate]:
    """Per dimension, single-rater ICC(3,1) among the raters on the fully rated videos.

    Columns are the raters in sorted-name order; when every video has the same rater
    names this is the paper's rater-by-video matrix.
    """
    videos = labels.fully_rated_videos()
    if len(videos) < 2:
        return {}
    result: dict[str, CeilingEstimate] = {}
    for dim in DIMENSION_KEYS:
        matrix = np.array(
            [[labels.ratings[(v, dim)][r] for r in sorted(labels.ratings[(v, dim)])] for v in videos],
            dtype=np.float64,
        )
        icc, low, high = icc3_1_with_ci(matrix)
        result[dim] = CeilingEstimate(icc, low, high, len(videos), matrix.shape[1])
    return result


def _parse_score(raw: str, path: Path, row: int, video_id: str, dim: str, problems: list[Problem]) -> float | None:
    text = (raw or "").strip()
    if text == "" or text.lower() in {"na", "nan", "null", "none"}:
        return None
    try:
        score = float(text)
    except ValueError:
        problems.append(
            Problem(
                "label_unparseable",
                f"score {raw!r} is not a number",
                video_id=video_id,
                modality=dim,
                path=str(path),
                row=row,
            )
        )
        return None
    if not math.isfinite(score) or not SCORE_MIN <= score <= SCORE_MAX:
        problems.append(
            Problem(
                "label_out_of_range",
                f"score {score} outside [{SCORE_MIN}, {SCORE_MAX}]",
                video_id=video_id,
                modality=dim,
                path=str(path),
                row=row,
            )
        )
        return None
    return score


def _video_id(raw: str, path: Path, row: int, problems: list[Problem], notes: list[LabelNote]) -> str | None:
    try:
        video_id = parse_video_id(raw).video_id
    except ValueError as exc:
        problems.append(Problem("malformed_id", str(exc), path=str(path), row=row))
        return None
    note = misspelling_note(raw)
    if note is not None:
        notes.append(LabelNote("id_misspelling", note, str(path), row))
    return video_id


class _Problems(list):
    """A labels file's problems; with `first_fails` the first one raises (a reader that stops at the first bad
    row, in memory bounded by the rows read so far), else they are collected for the build's report."""

    def __init__(self, path: Path, first_fails: bool) -> None:
        super().__init__()
        self.path = path
        self.first_fails = first_fails

    def append(self, problem: Problem) -> None:
        if self.first_fails:
            subject = f" ({problem.video_id}, {problem.modality})" if problem.video_id else ""
            where = f"{self.path}, row {problem.row}" if problem.row is not None else str(self.path)
            raise BuildError(f"{problem.reason}{subject}", [problem], where=where)
        super().append(problem)


def _read_long(path: Path, reader: csv.DictReader, first_fails: bool = False) -> Labels:
    problems = _Problems(path, first_fails)
    notes: list[LabelNote] = []
    ratings: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for row_number, row in enumerate(reader, start=2):
        video_id = _video_id(row.get("video_id") or "", path, row_number, problems, notes)
        if video_id is None:
            continue
        try:
            dim = resolve_dimension(row.get("dimension") or "")
        except KeyError as exc:
            problems.append(
                Problem("label_unknown_dimension", str(exc.args[0]), video_id=video_id, path=str(path), row=row_number)
            )
            continue
        rater = (row.get("rater") or "").strip()
        score = _parse_score(row.get("score") or "", path, row_number, video_id, dim, problems)
        if score is None:
            continue
        if rater in ratings[(video_id, dim)]:
            problems.append(
                Problem(
                    "label_duplicate",
                    f"rater {rater!r} already rated this dimension; first kept",
                    video_id=video_id,
                    modality=dim,
                    path=str(path),
                    row=row_number,
                )
            )
            continue
        ratings[(video_id, dim)][rater] = score
    gold: dict[str, dict[str, float | None]] = {}
    n_rounded = 0
    for (video_id, dim), by_rater in ratings.items():
        mean = _exact_mean(list(by_rater.values()))
        n_rounded += not at_one_decimal(mean)
        gold.setdefault(video_id, dict.fromkeys(DIMENSION_KEYS))[dim] = round_half_up(mean)
    rounding = GoldRounding(n_rounded, len(ratings), "long")
    return Labels(path, "long", gold, dict(ratings), problems, notes, rounding)


@dataclass(frozen=True)
class WideHeader:
    """How a wide file's columns map to dimensions: the one reading shared by labels and predictions."""

    columns: dict[str, str]  # column -> dimension key
    unknown: list[str]  # neither a dimension nor a known bookkeeping column
    clashes: list[str]  # dimensions that several columns map to
    missing: list[str]  # dimensions without a column


def map_wide_header(header: list[str], id_column: str) -> WideHeader:
    """Map each column of a wide header (dimension keys, names or paper abbreviations) to its dimension."""
    columns: dict[str, str] = {}
    unknown = []
    for name in header:
        if name == id_column:
            continue
        try:
            columns[name] = resolve_dimension(name)
        except KeyError:
            if name.strip().casefold() not in IGNORED_COLUMNS:
                unknown.append(name)
    mapped = list(columns.values())
    clashes = sorted({d for d in mapped if mapped.count(d) > 1})
    missing = sorted(set(DIMENSION_KEYS) - set(mapped))
    return WideHeader(columns, unknown, clashes, missing)


def _read_wide(
    path: Path, reader: csv.DictReader, id_column: str, round_gold: bool = True, first_fails: bool = False
) -> Labels:
    problems = _Problems(path, first_fails)
    notes: list[LabelNote] = []
    header = map_wide_header(list(reader.fieldnames or []), id_column)
    columns = header.columns
    for name in header.unknown:
        notes.append(LabelNote("ignored_column", f"column {name!r} is not an FIS dimension; ignored", str(path), 1))
    if header.clashes:
        raise BuildError(
            f"several columns map to dimension(s) {header.clashes}",
            where=f"{path}, header",
            hint="keep one column per dimension",
        )
    if header.missing:
        problems.append(
            Problem("label_bad_header", f"no column for dimension(s) {header.missing}", path=str(path), row=1)
        )
    gold: dict[str, dict[str, float | None]] = {}
    first_row: dict[str, int] = {}
    n_rounded = n_values = 0
    for row_number, row in enumerate(reader, start=2):
        video_id = _video_id(row.get(id_column) or "", path, row_number, problems, notes)
        if video_id is None:
            continue
        if video_id in gold:
            problems.append(
                Problem(
                    "label_duplicate",
                    f"video labelled twice (first at row {first_row[video_id]}); first row kept",
                    video_id=video_id,
                    path=str(path),
                    row=row_number,
                )
            )
            continue
        first_row[video_id] = row_number
        scores = dict.fromkeys(DIMENSION_KEYS)
        for column, dim in columns.items():
            raw = row.get(column) or ""
            value = _parse_score(raw, path, row_number, video_id, dim, problems)
            if value is not None:
                n_values += 1
                if round_gold and not at_one_decimal(raw):
                    n_rounded += 1
                    value = round_half_up(raw.strip())
            scores[dim] = value
        gold[video_id] = scores
    return Labels(path, "wide", gold, {}, problems, notes, GoldRounding(n_rounded, n_values, "wide"))


def read_labels(path: str | Path, *, round_gold: bool = True, first_fails: bool = False) -> Labels:
    """Read a long (per-rater) or wide (aggregated) labels CSV; raises BuildError on an unusable header.

    `round_gold=False` keeps a wide file's values as written (not the paper's gold: only for showing
    what the unrounded file gives, `mis-bench reproduce --gold as-published`). `first_fails=True` raises a
    BuildError at the first bad row (a scoring command's references: streamed, nothing past it read) instead
    of collecting every problem (a build's report).
    """
    path = Path(path)
    if not path.is_file():
        raise BuildError(f"labels file {path} does not exist")
    try:
        labels = _read_labels(path, round_gold, first_fails)
    except (csv.Error, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: not a readable UTF-8 CSV: {exc}") from exc
    if not labels.gold and not labels.problems:  # a header and nothing else: labels that label nothing
        raise BuildError(
            "the labels file has a header but no rows",
            where=str(path),
            hint="give one row per rating (per-rater) or per video (wide)",
        )
    return labels


def table_form(
    header: Sequence[str],
    long_columns: Sequence[str],
    *,
    marker: str | None = None,
    value_columns: Sequence[str] = (),
) -> tuple[str | None, str | None]:
    """The one long/wide rule of a scores table (labels, predictions, references): `("long", None)` when the
    header has `marker` (default: every one of `long_columns`, and one of `value_columns` when given), else
    `("wide", id column)` when it has a video-id column (`ID_COLUMNS`), else `(None, None)`."""
    if marker:
        long = marker in header
    else:
        long = all(column in header for column in long_columns)
        long = long and (not value_columns or any(column in header for column in value_columns))
    if long:
        return "long", None
    wide_id = id_column(header)
    return ("wide", wide_id) if wide_id else (None, None)


def _read_labels(path: Path, round_gold: bool = True, first_fails: bool = False) -> Labels:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in reader.fieldnames or []]
        reader.fieldnames = header
        form, wide_id = table_form(header, LONG_COLUMNS, marker="rater")
        if form == "long":
            missing = [c for c in LONG_COLUMNS if c not in header]
            if missing:
                raise BuildError(f"{path}: per-rater labels need columns {list(LONG_COLUMNS)}; missing {missing}")
            return _read_long(path, reader, first_fails)
        if form is None:
            raise BuildError(
                f"{path}: labels need either per-rater columns {list(LONG_COLUMNS)} or an id column "
                f"({', '.join(ID_COLUMNS)}) plus one column per dimension; found {header}"
            )
        return _read_wide(path, reader, wide_id, round_gold, first_fails)


def write_ratings_long(path: str | Path, rows: list[tuple[str, str, str, float]]) -> Path:
    """Write per-rater ratings `(video_id, rater, dimension, score)` as the long CSV."""
    path = Path(path)
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(LONG_COLUMNS)
        for video_id, rater, dim, score in rows:
            writer.writerow([video_id, rater, dim, f"{score:g}"])
    return path


def write_gold_wide(path: str | Path, gold: dict[str, dict[str, float | None]], original_names: bool = False) -> Path:
    """Write gold scores wide; `original_names` writes `file_name` as `AG0914_FIS_Time1_Jackson`."""
    path = Path(path)
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file_name" if original_names else "video_id", *DIMENSION_KEYS])
        for video_id in sorted(gold):
            if original_names:
                parts = parse_video_id(video_id)
                name = parts.original_name
            else:
                name = video_id
            writer.writerow(
                [name, *("" if gold[video_id][d] is None else f"{gold[video_id][d]:.1f}" for d in DIMENSION_KEYS)]
            )
    return path
