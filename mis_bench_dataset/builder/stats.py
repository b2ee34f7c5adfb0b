"""Gold-score statistics of a built dataset (paper Appendix C, Table 2).

Per dimension the mean, sample sd (ddof = 1), min, max and n (Table 6); the Pearson
correlation matrix of the eight dimensions over the videos with all eight gold scores
(Figure 5); gold histograms at 0.1 resolution (Figure 6); the same summaries per split,
time point and stimulus (the splits should look alike); and, from per-rater labels, the
human single-rater ICC(3,1) ceiling (Table 2) via `labels.human_ceiling`.

Means and sds are exact: gold scores are decimals (3.7, read from float32 through its
shortest repr), summed as fractions by `statistics`, so the figures do not depend on
summation order and are the correctly rounded floats. Undefined values (an sd of one
score, a correlation with a constant dimension) are None, so the JSON stays strict.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from mis_bench_dataset.dataset.format import check_build_dir, read_build_report, read_columns, resolve_splits
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.release.labels import Labels
from mis_bench_dataset.splits import ALL_SPLITS, SPLITS
from mis_bench_dataset.toolkit.atomic import AtomicFiles
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_bench_dataset.toolkit.numbers import exact_decimal, round_half_up
from mis_bench_dataset.toolkit.ownership import OutputFolder, as_output_folder
from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS

logger = logging.getLogger(__name__)

STATS_FILE = "stats.json"
FIGURE_FILES: dict[str, str] = {"correlation": "correlation.png", "histograms": "histograms.png"}
GENERATED_BY = "mis-bench stats"
# Histogram bins: every one-decimal score from 1.0 to 5.0 (41 bins).
HISTOGRAM_BINS: tuple[float, ...] = tuple(
    float(Fraction(k, 10)) for k in range(round(SCORE_MIN * 10), round(SCORE_MAX * 10) + 1)
)
GROUPINGS: tuple[str, ...] = ("split", "time_point", "stimulus")


@dataclass(frozen=True)
class GoldTable:
    """The gold scores of the selected videos: one row per video, NaN where unlabelled."""

    video_ids: tuple[str, ...]
    groups: dict[str, tuple[str, ...]]  # grouping (split, time_point, stimulus) -> value per video
    gold: np.ndarray  # (n_videos, 8) float64, widened exactly from float32 (3.7, not 3.700000047)

    def column(self, key: str) -> np.ndarray:
        return self.gold[:, DIMENSION_KEYS.index(key)]

    def merged_by_video(self) -> GoldTable:
        """One row per video: a `paper-rows` build puts a video in every split holding one of its rows,
        each copy with that split's gold only; merged, each video has its eight scores again."""
        if len(set(self.video_ids)) == len(self.video_ids):
            return self
        order = list(dict.fromkeys(self.video_ids))
        position = {video: i for i, video in enumerate(order)}
        rows = np.array([position[v] for v in self.video_ids])
        merged = np.full((len(order), self.gold.shape[1]), np.nan)
        labelled = ~np.isnan(self.gold)
        merged[rows[labelled.nonzero()[0]], labelled.nonzero()[1]] = self.gold[labelled]
        first = {}
        for i, video in enumerate(self.video_ids):
            first.setdefault(video, i)
        groups = {g: tuple(values[first[v]] for v in order) for g, values in self.groups.items()}
        return GoldTable(tuple(order), groups, merged)

    def subset(self, mask: np.ndarray) -> GoldTable:
        ids = tuple(v for v, keep in zip(self.video_ids, mask, strict=True) if keep)
        groups = {
            g: tuple(x for x, keep in zip(values, mask, strict=True) if keep) for g, values in self.groups.items()
        }
        return GoldTable(ids, groups, self.gold[mask])


def read_gold(build_dir: str | Path, split: str = ALL_SPLITS) -> GoldTable:
    """The gold scores of one split (or all) of a built folder, read from its Parquet files."""
    folder = check_build_dir(build_dir, ("features",))
    ids: list[str] = []
    groups: dict[str, list[str]] = {g: [] for g in GROUPINGS}
    blocks: list[np.ndarray] = []
    for name in resolve_splits(folder, split):
        table = read_columns(folder, "features", name, ["video_id", "time_point", "stimulus", *DIMENSION_KEYS])
        ids += table.column("video_id").to_pylist()
        groups["split"] += [name] * table.num_rows
        groups["time_point"] += table.column("time_point").to_pylist()
        groups["stimulus"] += table.column("stimulus").to_pylist()
        columns = [
            [math.nan if v is None else exact_decimal(np.float32(v)) for v in table.column(k).to_pylist()]
            for k in DIMENSION_KEYS
        ]
        blocks.append(np.array(columns, dtype=np.float64).T.reshape(table.num_rows, len(DIMENSION_KEYS)))
    return GoldTable(tuple(ids), {g: tuple(v) for g, v in groups.items()}, np.concatenate(blocks))


def _fractions(values: Iterable[float]) -> list[Fraction]:
    """Exact decimals of finite floats (3.7 -> 37/10); NaN (unlabelled) dropped."""
    return [Fraction(repr(float(v))) for v in values if not math.isnan(v)]


def summarize(values: Iterable[float]) -> dict:
    """{mean, sd (ddof=1), min, max, n} of the labelled values; None where undefined."""
    exact = _fractions(values)
    n = len(exact)
    return {
        "mean": float(statistics.mean(exact)) if n else None,
        "sd": float(statistics.stdev(exact)) if n >= 2 else None,
        "min": float(min(exact)) if n else None,
        "max": float(max(exact)) if n else None,
        "n": n,
    }


def histogram(values: Iterable[float]) -> list[int]:
    """Counts per HISTOGRAM_BINS value; a score off the 0.1 grid counts in the bin it rounds (half up) to."""
    counts = [0] * len(HISTOGRAM_BINS)
    first = round(SCORE_MIN * 10)
    for value in values:
        if not math.isnan(value):
            counts[round(round_half_up(value) * 10) - first] += 1
    return counts


def correlation(gold: np.ndarray) -> tuple[list[list[float | None]], int]:
    """Pearson r between dimensions over the rows with all eight scores, and that row count.

    None where undefined (fewer than 2 complete rows, or a dimension constant on them).
    """
    complete = gold[~np.isnan(gold).any(axis=1)]
    k = gold.shape[1]
    if len(complete) < 2:
        return [[None] * k for _ in range(k)], int(len(complete))
    with np.errstate(invalid="ignore", divide="ignore"):
        matrix = np.corrcoef(complete, rowvar=False)
    return [[None if math.isnan(r) else float(r) for r in row] for row in matrix.tolist()], int(len(complete))


def _dimension_summaries(table: GoldTable) -> dict[str, dict]:
    return {key: summarize(table.column(key)) for key in DIMENSION_KEYS}


def _group_order(grouping: str, values: Sequence[str]) -> list[str]:
    known = {"split": SPLITS, "time_point": TIME_POINTS, "stimulus": STIMULI}[grouping]
    present = set(values)
    return [v for v in known if v in present] + sorted(present - set(known))


def group_summaries(table: GoldTable, grouping: str) -> dict[str, dict]:
    """Per value of `grouping`: video counts and the per-dimension gold summary."""
    values = np.array(table.groups[grouping], dtype=object)
    result = {}
    for value in _group_order(grouping, table.groups[grouping]):
        part = table.subset(values == value)
        result[value] = {
            "n_videos": len(part.video_ids),
            "n_labelled_videos": int((~np.isnan(part.gold)).any(axis=1).sum()),
            "dimensions": _dimension_summaries(part),
        }
    return result


def _check_labels_match(table: GoldTable, labels: Labels) -> None:
    """Per-rater labels must aggregate to the build's gold, or the ceiling describes other data."""
    mismatches = []
    for row, video_id in enumerate(table.video_ids):
        gold = labels.gold.get(video_id) or {}
        for d, key in enumerate(DIMENSION_KEYS):
            built = table.gold[row, d]
            expected = gold.get(key)
            if (expected is None) != math.isnan(built) or (expected is not None and expected != built):
                mismatches.append(f"{video_id} {key}: labels {expected}, build {None if math.isnan(built) else built}")
    if mismatches:
        raise DataError(
            f"the labels aggregate to other gold scores than the build's for {len(mismatches)} "
            f"(video, dimension) pair(s), e.g. {'; '.join(mismatches[:3])}",
            where=str(labels.path),
            hint="pass the per-rater labels file the dataset was built with",
        )


def _ceiling(table: GoldTable, labels: Labels) -> tuple[dict[str, dict] | None, int]:
    if labels.form != "long":
        raise UsageError(
            "the human ceiling needs per-rater labels; these are aggregated (wide)",
            where=str(labels.path),
            hint="pass the long CSV video_id,rater,dimension,score",
        )
    _check_labels_match(table, labels)
    selected = labels.restricted_to(table.video_ids)
    n_fully_rated = len(selected.fully_rated_videos())
    ceiling = {k: v.to_dict() for k, v in selected.human_ceiling().items()}
    return ceiling or None, n_fully_rated


def dataset_stats(
    table: GoldTable,
    labels: Labels | None = None,
    *,
    dataset: str = "",
    split: str = ALL_SPLITS,
    source: str | None = None,
    gold_rounding: dict | None = None,
) -> dict:
    """The `stats.json` document of a gold table (strict JSON: None where undefined); `source`
    (the folder) names where the data came from in errors; `gold_rounding` (the build report's)
    says how many gold values the build rounded to one decimal."""
    by_split = table
    table = table.merged_by_video()
    labelled = ~np.isnan(table.gold)
    if not labelled.any():
        raise DataError(
            "the dataset has no gold scores (it was built without labels)",
            where=source or dataset or None,
            hint="rebuild it with `mis-bench build ... --labels LABELS.csv`",
        )
    matrix, n_complete = correlation(table.gold)
    doc: dict = {
        "generated_by": GENERATED_BY,
        "dataset": dataset,
        "split": split,
        "n_videos": len(table.video_ids),
        "n_labelled_videos": int(labelled.any(axis=1).sum()),
        "n_complete_videos": n_complete,
        "dimensions": _dimension_summaries(table),
        "correlation": {
            a: dict(zip(DIMENSION_KEYS, row, strict=True)) for a, row in zip(DIMENSION_KEYS, matrix, strict=True)
        },
        "histograms": {
            "bins": list(HISTOGRAM_BINS),
            "counts": {key: histogram(table.column(key)) for key in DIMENSION_KEYS},
        },
        "groups": {
            grouping: group_summaries(by_split if grouping == "split" else table, grouping) for grouping in GROUPINGS
        },
        "gold_rounding": gold_rounding,
        "human_ceiling": None,
        "n_fully_rated_videos": None,
        "figures": dict(FIGURE_FILES),
    }
    if labels is not None:
        doc["human_ceiling"], doc["n_fully_rated_videos"] = _ceiling(table, labels)
        doc["label_problems"] = len(labels.problems)
        if labels.problems:
            logger.warning(
                "%s: %d problem(s) in the labels, e.g. %s", labels.path, len(labels.problems), labels.problems[0]
            )
    return doc


def compute_stats(build_dir: str | Path, split: str = ALL_SPLITS, labels: Labels | str | Path | None = None) -> dict:
    """`stats.json` of a built folder's split (or all); with per-rater labels also the ceiling; `synthetic` from
    the build report (its figures and summary then say so)."""
    from mis_bench_dataset.dataset.handle import BuiltDataset
    from mis_bench_dataset.release.labels import read_labels

    folder = check_build_dir(build_dir, ("features",))
    label_set = labels if isinstance(labels, Labels) or labels is None else read_labels(labels)
    try:
        rounding = read_build_report(folder).get("gold_rounding")
    except (OSError, ValueError, AttributeError):
        rounding = None
    doc = dataset_stats(
        read_gold(folder, split),
        label_set,
        dataset=folder.resolve().name,
        split=split,
        source=str(folder),
        gold_rounding=rounding,
    )
    return {"synthetic": bool(BuiltDataset.open(folder).synthetic), **doc}


STATS_WRITER = "stats"


def write_stats(doc: dict, out_dir: str | Path | OutputFolder) -> Path:
    """Write `stats.json` and the figures into `out_dir`, replacing only files the statistics wrote there."""
    from mis_bench_dataset.builder.stats_plots import write_figures

    folder = as_output_folder(out_dir, "stats")
    path, *_ = folder.claim_all([STATS_FILE, *doc["figures"].values()], STATS_WRITER)
    with AtomicFiles() as files:  # the figures and stats.json appear together
        write_figures(doc, folder.root, files)
        files.write(path, json.dumps(json_safe(doc), indent=2, allow_nan=False) + "\n")  # undefined: null
    return path


def summary_text(doc: dict, out_dir: str | Path | None = None) -> str:
    """A short plain-text view of a `stats.json` document (what the CLI prints)."""
    from mis_bench_dataset.toolkit.numbers import num

    lines = [
        f"gold statistics of {doc['dataset']} [split {doc['split']}]: {doc['n_videos']} videos, "
        f"{doc['n_labelled_videos']} labelled, {doc['n_complete_videos']} with all eight gold scores",
        f"{'dim.':<6} {'mean':>6} {'sd':>6} {'min':>4} {'max':>4} {'n':>5}",
    ]
    for key, s in doc["dimensions"].items():
        lines.append(
            f"{DIMENSION_BY_KEY[key].abbreviation:<6} {num(s['mean'], 3):>6} {num(s['sd'], 3):>6} "
            f"{num(s['min'], 1):>4} {num(s['max'], 1):>4} {s['n']:>5}"
        )
    for grouping in GROUPINGS:
        counts = ", ".join(f"{value} {group['n_videos']}" for value, group in doc["groups"][grouping].items())
        lines.append(f"videos per {grouping.replace('_', ' ')}: {counts}")
    rounding = doc.get("gold_rounding")
    if rounding:
        lines.append(
            f"gold rounding (build): {rounding['n_rounded']} of {rounding['n_values']} values were not at one "
            "decimal and were rounded half up to one decimal (paper §3.2)"
        )
    if doc.get("human_ceiling"):
        lines.append(
            f"human single-rater ICC(3,1) on {doc['n_fully_rated_videos']} fully rated videos: "
            + ", ".join(
                f"{DIMENSION_BY_KEY[k].abbreviation} {num(v['icc'], 2)} [{num(v['ci_low'], 2)}, {num(v['ci_high'], 2)}]"
                for k, v in doc["human_ceiling"].items()
            )
        )
    if out_dir is not None:
        lines.append(f"wrote {Path(out_dir) / STATS_FILE}, " + ", ".join(doc["figures"].values()))
    if doc.get("synthetic"):
        lines.append("SYNTHETIC data: generated scores, not MIS-Bench's (the build report says synthetic: true)")
    return "\n".join(lines)
