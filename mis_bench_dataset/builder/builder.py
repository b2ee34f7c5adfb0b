"""Build a Hub-ready MIS-Bench folder: Parquet shards + dataset card + build report.

One video is read, validated and written at a time (peak memory does not grow
with the number of videos). The output appears atomically: everything is written
into a hidden sibling folder whose card (README.md, the file `load_dataset`
needs) is written last, and the folder is renamed into place only on success.
A build that fails, is interrupted (Ctrl-C, SIGTERM) or meets a full disk removes
its staging folder; one a killed build left behind is removed by the next build
(`mis_bench_dataset.toolkit.atomic.staging_folder`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from mis_bench_dataset.builder.parquet_shards import ShardedParquetWriter
from mis_bench_dataset.builder.schema import (
    arrays_1d,
    arrays_2d,
    features_arrow_schema,
    features_yaml,
    scoring_arrow_schema,
)
from mis_bench_dataset.dataset.format import (
    BUILD_WRITER,
    CONFIGS,
    REPORT_NAME,
    STATS_FOLDER,
    shard_sizes,
    split_fingerprints,
)
from mis_bench_dataset.dataset.format import DEFAULT_BUILD_DIR as DEFAULT_OUT
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS, RUBRIC
from mis_bench_dataset.release.labels import Labels, read_labels
from mis_bench_dataset.release.problems import BuildError, Problem
from mis_bench_dataset.release.transcripts import read_transcripts_csv
from mis_bench_dataset.release.tree import (
    MAX_RECORDING_SECONDS,
    MODALITIES,
    TEXT_MODALITY,
    ReleaseIndex,
    VideoRecord,
    read_video,
    scan_release,
)
from mis_bench_dataset.splits import (
    PAPER_ROWS,
    PAPER_ROWS_WARNING,
    SPLIT_BY,
    SPLITS,
    assign_rows,
    assign_splits,
    default_seed,
    split_counts,
)
from mis_bench_dataset.toolkit.atomic import (
    NoSpaceError,
    is_no_space,
    no_space_error,
    remove_stale_staging,
    staging_folder,
    sync_file,
    write_atomic,
)
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_bench_dataset.toolkit.numbers import num
from mis_bench_dataset.toolkit.ownership import (
    check_arrow_path,
    check_not_overlapping,
    check_replaceable_folder,
    resolve_path,
    write_manifest,
)
from mis_bench_dataset.toolkit.progress import step

logger = logging.getLogger(__name__)


@dataclass
class BuildReport:
    """What a build did: where, how many videos per split, what was missing or broken."""

    out_dir: str
    release_dir: str | None
    labels_path: str | None
    transcripts_path: str | None
    split_by: str
    seed: int
    n_videos: int
    split_counts: dict[str, int]
    modalities_present: dict[str, int]  # modality -> videos with it present
    absent_modalities: list[str]
    n_labeled_videos: int
    n_scoring_rows: int
    synthetic: bool
    fingerprint: str
    human_ceiling: dict[str, dict] = field(default_factory=dict)
    synthetic_signal: str | None = None  # the generator's description of its planted signal
    split_rows: dict[str, int] = field(default_factory=dict)  # scoring rows per split
    split_warning: str | None = None  # set for a leaking scheme (paper-rows)
    gold_rounding: dict | None = None  # labels.GoldRounding.to_dict(): values rounded to one decimal
    label_notes: list[dict] = field(default_factory=list)  # labels.LabelNote.to_dict(): read as written, reported
    sources: dict[str, dict] = field(default_factory=dict)  # "labels"/"transcripts" -> provenance.source_record
    problems: list[Problem] = field(default_factory=list)
    bytes_read: int = 0
    bytes_written: int = 0
    seconds: float = 0.0
    # split -> {"scoring" | "scoring+features" -> sha256 of those Parquet files}: what results record
    # (`dataset.format.fingerprint_files`), with each shard's size so a reader knows they still match.
    split_fingerprints: dict[str, dict[str, str]] = field(default_factory=dict)
    shard_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems

    def problem_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for p in self.problems:
            counts[p.kind] = counts.get(p.kind, 0) + 1
        return dict(sorted(counts.items()))

    def to_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "problems"}
        data["problem_counts"] = self.problem_counts()
        data["problems"] = [p.to_dict() for p in self.problems]
        return data

    def summary(self) -> str:
        lines = [
            f"built {self.out_dir}: {self.n_videos} videos "
            f"({', '.join(f'{k} {v}' for k, v in self.split_counts.items())}; "
            f"split by {self.split_by}, seed {self.seed}), "
            f"{self.n_scoring_rows} scoring rows, {self.n_labeled_videos} labelled videos"
            + (" [SYNTHETIC]" if self.synthetic else ""),
            "modalities: " + ", ".join(f"{k} {v}/{self.n_videos}" for k, v in self.modalities_present.items()),
        ]
        if self.split_warning:
            rows = ", ".join(f"{k} {v}" for k, v in self.split_rows.items())
            lines.append(f"scoring rows per split: {rows}")
            lines.append(f"WARNING: {self.split_warning}")
        if self.gold_rounding:
            lines.append(f"gold: {_rounding_sentence(self.gold_rounding)}")
        if self.label_notes:
            lines.append(f"{len(self.label_notes)} note(s) on the labels (read as written):")
            lines += [f"  - {_note_text(n)}" for n in self.label_notes[:20]]
        if self.human_ceiling:
            any_ceiling = next(iter(self.human_ceiling.values()))
            lines.append(
                f"human single-rater ICC(3,1) on {any_ceiling['n_videos']} fully rated videos: "
                + ", ".join(
                    f"{DIMENSION_BY_KEY[k].abbreviation} {num(v['icc'], 2)}" for k, v in self.human_ceiling.items()
                )
            )
        if self.problems:
            lines.append(
                f"{len(self.problems)} problem(s): " + ", ".join(f"{k} x{v}" for k, v in self.problem_counts().items())
            )
            lines += [f"  - {p}" for p in self.problems[:20]]
            if len(self.problems) > 20:
                lines.append(f"  ... {len(self.problems) - 20} more in {REPORT_NAME}")
        else:
            lines.append("no problems")
        return "\n".join(lines)


def _rounding_sentence(rounding: dict) -> str:
    from mis_bench_dataset.release.labels import GoldRounding

    return GoldRounding(rounding["n_rounded"], rounding["n_values"], rounding["form"]).sentence()


def _note_text(note: dict) -> str:
    return f"{note['kind']}: row {note.get('row', '?')}: {note['text']}"


def _scoring_batch(
    record: VideoRecord, gold: dict[str, float | None], keys: tuple[str, ...] = DIMENSION_KEYS
) -> pa.RecordBatch:
    n = len(keys)
    columns = {
        "video_id": [record.video_id] * n,
        "clinician": [record.clinician] * n,
        "time_point": [record.time_point] * n,
        "stimulus": [record.stimulus] * n,
        "dimension": list(keys),
        "dimension_name": [DIMENSION_BY_KEY[k].name for k in keys],
        "transcript": [record.transcript] * n,
        "criterion": [RUBRIC[k].criterion for k in keys],
    }
    for level in range(1, 6):
        columns[f"rubric_{level}"] = [RUBRIC[k].scores[level - 1] for k in keys]
    columns["score"] = pa.array([gold.get(k) for k in keys], type=pa.float32())
    return pa.RecordBatch.from_pydict(columns, schema=_SCORING_SCHEMA)


def _features_batch(record: VideoRecord, gold: dict[str, float | None]) -> pa.RecordBatch:
    columns: dict[str, pa.Array | list] = {
        "video_id": [record.video_id],
        "clinician": [record.clinician],
        "time_point": [record.time_point],
        "stimulus": [record.stimulus],
        "transcript": [record.transcript],
    }
    for m in MODALITIES:
        data = record.modalities[m.name]
        columns[m.name] = arrays_2d([data.features], m.width)
        columns[f"{m.name}_timestamps"] = arrays_1d([data.timestamps])
        columns[f"has_{m.name}"] = [data.present]
    columns["duration_seconds"] = pa.array([record.duration_seconds], type=pa.float32())
    for key in DIMENSION_KEYS:
        columns[key] = pa.array([gold.get(key)], type=pa.float32())
    return pa.RecordBatch.from_pydict(columns, schema=_FEATURES_SCHEMA)


_SCORING_SCHEMA = scoring_arrow_schema()
_FEATURES_SCHEMA = features_arrow_schema()


def _digest(hasher, record: VideoRecord, gold: dict[str, float | None]) -> None:
    hasher.update(record.video_id.encode())
    hasher.update(record.transcript.encode())
    for m in MODALITIES:
        data = record.modalities[m.name]
        hasher.update(m.name.encode() + bytes([data.present]))
        hasher.update(np.ascontiguousarray(data.features).reshape(-1).view(np.uint8))  # no copy of the array
        hasher.update(np.ascontiguousarray(data.timestamps).reshape(-1).view(np.uint8))
    hasher.update(json.dumps([gold.get(k) for k in DIMENSION_KEYS]).encode())


def check_build_output(out_dir: str | Path, sources: list[str | Path]) -> None:
    """Refuse an output the build must not replace: one overlapping its inputs, or holding foreign files.

    The build swaps the whole folder, so every file in an existing one must be the build's own
    (its manifest says so; a folder built before manifests existed may hold only the build's
    file names). The foreign files are named and nothing is changed.
    """
    check_not_overlapping(out_dir, sources, command="build")
    check_replaceable_folder(out_dir, BUILD_WRITER, command="build")


@contextlib.contextmanager
def _no_space_names(staging: Path, out_dir: Path):
    """A full disk while the shards are written (pyarrow's error names no file) says what and how much."""
    try:
        yield
    except NoSpaceError:
        raise
    except OSError as err:
        if not is_no_space(err):
            raise
        done = sum(p.stat().st_size for p in staging.rglob("*") if p.is_file())
        raise no_space_error(out_dir, done=done) from err


def _staging_prefix(out_dir: Path) -> str:
    return f".{out_dir.name}.building-"


def _old_prefix(out_dir: Path) -> str:
    return f".{out_dir.name}.old-"


def _publish(staging: Path, out_dir: Path) -> None:
    """Swap the finished staging folder into place; the old build is removed only afterwards.

    The old folder is checked once more right before the swap (files may have been added
    while the build ran): only a folder holding nothing but the build's own files is removed.
    Every file is flushed to the disk first, so the swap publishes complete files.
    """
    files = [p for p in staging.rglob("*") if p.is_file()]
    for path in files:
        sync_file(path)
    write_manifest(staging, {p.relative_to(staging).as_posix(): BUILD_WRITER for p in files})
    old = None
    remove_stale_staging(out_dir.parent, _old_prefix(out_dir))  # left by a build killed during its swap
    if out_dir.exists():
        check_replaceable_folder(out_dir, BUILD_WRITER, command="build")
        old = out_dir.parent / f"{_old_prefix(out_dir)}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        out_dir.rename(old)
    staging.rename(out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


@dataclass(frozen=True)
class SplitPlan:
    """How a build assigns videos to its splits: `split_by` one of `SPLIT_BY` ("video", "clinician", ...) from
    `seed` (None: 0, or 42, the authors' seed, for the leaking `paper-rows` scheme)."""

    split_by: str = "video"
    seed: int | None = None


@dataclass(frozen=True)
class BuildChecks:
    """How strict a build is and the limits it keeps: modality problems are reported, never fatal, unless
    `strict`; label problems are fatal unless `allow_label_problems`; Arrow shards hold at most `max_shard_bytes`;
    an array longer than `max_seconds` of frames is a `too_large` problem and is never decompressed."""

    strict: bool = False
    allow_label_problems: bool = False
    max_shard_bytes: int = 512 << 20
    max_seconds: float = MAX_RECORDING_SECONDS


def build_dataset(
    release_dir: str | Path | None,
    out_dir: str | Path = DEFAULT_OUT,
    *,
    labels: str | Path | Labels | None = None,
    transcripts: str | Path | None = None,
    split: SplitPlan = SplitPlan(),
    checks: BuildChecks = BuildChecks(),
    progress: bool = True,
) -> BuildReport:
    """Build the `features` and `scoring` configs of a release into `out_dir`.

    `release_dir` may be None when `transcripts` gives the text (a text-only build). `split`: how videos are
    assigned to splits (`SplitPlan`); `checks`: which problems are fatal and the limits kept (`BuildChecks`).
    Raises `BuildError` with the list of problems.
    """
    split_by, seed = split.split_by, split.seed
    strict, allow_label_problems = checks.strict, checks.allow_label_problems
    start = time.perf_counter()
    if split_by not in SPLIT_BY:
        raise BuildError(f"split_by must be one of {SPLIT_BY}, got {split_by!r}")
    if release_dir is None and transcripts is None:
        raise BuildError("nothing to build: give a release folder, a transcripts CSV, or both")
    seed = default_seed(split_by) if seed is None else seed
    out_dir = resolve_path(out_dir)
    check_arrow_path(out_dir, where="--out")
    sources = [
        s for s in (release_dir, transcripts, labels if isinstance(labels, (str, Path)) else None) if s is not None
    ]
    check_build_output(out_dir, sources)

    index, transcript_map, problems = _index_sources(release_dir, transcripts)
    video_ids = index.video_ids
    if not video_ids:
        raise BuildError(f"no videos found in {release_dir}" + (f" or {transcripts}" if transcripts else ""), problems)

    label_set = _read_label_set(labels, video_ids, problems, fail=not allow_label_problems and not strict)
    layout = _SplitLayout.make(video_ids, split_by, seed)
    # Written aside and swapped in whole; a staging folder a killed build left is removed here.
    with staging_folder(out_dir.parent, _staging_prefix(out_dir)) as staging, _no_space_names(staging, out_dir):
        written = _write_configs(staging, index, transcript_map, label_set, layout, checks=checks, progress=progress)
        problems += written.problems
        if strict and problems:
            raise BuildError(f"--strict: {len(problems)} problem(s) in the release", problems)

        with step(
            "building MIS-Bench: agreement, statistics, figures, card", total=2, unit="part", show=progress
        ) as done:
            given = (release_dir, transcripts, labels)
            report = _report(
                out_dir, given, label_set, (index, transcript_map), layout, written=written, problems=problems
            )
            done.update()
            report.split_by, report.seed = split_by, seed
            report.seconds = round(time.perf_counter() - start, 3)
            _finish(staging, out_dir, report, label_set, written)
            done.update()
    if report.split_warning:
        logger.warning("%s: %s", out_dir, report.split_warning)
    logger.info("built %s: %d videos, %d problem(s)", out_dir, report.n_videos, len(report.problems))
    return report


def _index_sources(release_dir, transcripts) -> tuple[ReleaseIndex, dict[str, str] | None, list[Problem]]:
    """The release index, the transcripts CSV's text (None without one), and their problems (release's first)."""
    problems: list[Problem] = []
    transcript_map: dict[str, str] | None = None
    if transcripts is not None:
        transcript_map, transcript_problems = read_transcripts_csv(transcripts)
        problems += transcript_problems
    index = scan_release(release_dir, extra_video_ids=sorted(transcript_map or {}))
    index_problems = index.problems
    if transcript_map is not None:
        # The CSV supplies the text: a video missing text/words but present in the CSV lacks nothing.
        index_problems = [
            p
            for p in index_problems
            if not (p.kind == "missing_modality_folder" and p.modality == TEXT_MODALITY)
            and not (p.kind == "missing_file" and p.modality == TEXT_MODALITY and p.video_id in transcript_map)
        ]
    return index, transcript_map, index_problems + problems


def _label_fields(labels: str | Path | Labels | None, label_set: Labels | None, transcripts) -> dict:
    if label_set is None:
        return {"labels_path": None, "sources": _source_records(None, transcripts)}
    return {
        "labels_path": str(label_set.path),
        "human_ceiling": {k: v.to_dict() for k, v in label_set.human_ceiling().items()},
        "gold_rounding": label_set.rounding.to_dict() if label_set.rounding else None,
        "label_notes": [n.to_dict() for n in label_set.notes],
        "sources": _source_records(labels, transcripts),
    }


def _report(out_dir, given, label_set, indexed, layout, *, written, problems):
    """The BuildReport of a finished write (split_by and seed are set by the caller); `given`: the release
    folder, transcripts and labels it was built from, as the caller named them; `indexed`: the release index
    and the transcripts' text (`_index_sources`)."""
    release_dir, transcripts, labels = given
    index, transcript_map = indexed
    return BuildReport(
        out_dir=str(out_dir),
        release_dir=str(Path(release_dir).resolve()) if release_dir is not None else None,
        transcripts_path=str(transcripts) if transcripts is not None else None,
        split_by="",
        seed=0,
        n_videos=len(index.video_ids),
        split_counts=layout.video_counts(),
        modalities_present=written.present,
        absent_modalities=[m for m in index.absent_modalities if not (m == TEXT_MODALITY and transcript_map)],
        n_labeled_videos=written.n_labeled,
        n_scoring_rows=len(index.video_ids) * len(DIMENSION_KEYS),
        synthetic=index.is_synthetic,
        synthetic_signal=index.manifest.get("planted_signal") if index.is_synthetic else None,
        fingerprint=written.fingerprint,
        split_rows=layout.row_counts(),
        split_warning=PAPER_ROWS_WARNING if layout.by_row is not None else None,
        problems=problems,
        bytes_read=written.bytes_read,
        bytes_written=sum(p.stat().st_size for paths in written.files.values() for p in paths),
        **_label_fields(labels, label_set, transcripts),
    )


def _finish(staging: Path, out_dir: Path, report: BuildReport, label_set: Labels | None, written) -> None:
    """The report, the statistics and the card (last: it makes the folder loadable), then the swap."""
    from mis_bench_dataset.builder.card import write_card

    report.split_fingerprints, report.shard_sizes = split_fingerprints(staging), shard_sizes(staging)
    report_text = json.dumps(json_safe(report.to_dict()), indent=2, ensure_ascii=False, allow_nan=False)
    write_atomic(staging / REPORT_NAME, report_text + "\n")  # strict JSON: an undefined ICC is null
    stats = (
        _write_statistics(staging, label_set, out_dir.name, synthetic=report.synthetic)
        if label_set is not None and written.n_labeled
        else None
    )
    write_card(staging, report, features_yaml("features"), features_yaml("scoring"), written.files, stats)
    _publish(staging, out_dir)


def _source_records(labels: str | Path | Labels | None, transcripts: str | Path | None) -> dict[str, dict]:
    """Name, SHA-256 and (for the authors' public files) repository, commit and path of the inputs."""
    from mis_bench_dataset.release.provenance import source_record

    paths = {"labels": labels.path if isinstance(labels, Labels) else labels, "transcripts": transcripts}
    return {role: source_record(path) for role, path in paths.items() if path is not None and Path(path).is_file()}


def _read_label_set(
    labels: str | Path | Labels | None, video_ids: list[str], problems: list[Problem], *, fail: bool
) -> Labels | None:
    """The labels, their problems appended to `problems`; BuildError (naming the first) when `fail`."""
    if labels is None:
        return None
    label_set = labels if isinstance(labels, Labels) else read_labels(labels)
    label_problems = list(label_set.problems)
    known = set(video_ids)
    for video_id in sorted(set(label_set.gold) - known):
        label_problems.append(
            Problem(
                "label_unknown_video",
                "labels name a video that is not in the release",
                video_id=video_id,
                path=str(label_set.path),
            )
        )
    problems += label_problems
    if label_problems and fail:
        more = f" and {len(label_problems) - 1} more" if len(label_problems) > 1 else ""
        raise BuildError(
            f"{len(label_problems)} problem(s) in labels {label_set.path}: {label_problems[0]}{more} "
            "(pass allow_label_problems / --allow-label-problems to build anyway)",
            label_problems,
        )
    return label_set


@dataclass(frozen=True)
class _SplitLayout:
    """Where each video's rows go: one split per video, or (paper-rows) one split per (video, dimension)."""

    by_video: dict[str, str]
    by_row: dict[tuple[str, str], str] | None

    @classmethod
    def make(cls, video_ids: list[str], split_by: str, seed: int) -> _SplitLayout:
        if split_by == PAPER_ROWS:
            rows = assign_rows(video_ids, seed)
            return cls({}, rows)
        return cls(assign_splits(video_ids, by=split_by, seed=seed), None)

    def parts(self, video_id: str) -> list[tuple[str, tuple[str, ...]]]:
        """(split, dimension keys) for the video, in SPLITS order."""
        if self.by_row is None:
            return [(self.by_video[video_id], DIMENSION_KEYS)]
        keys = {split: tuple(k for k in DIMENSION_KEYS if self.by_row[(video_id, k)] == split) for split in SPLITS}
        return [(split, keys[split]) for split in SPLITS if keys[split]]

    def video_counts(self) -> dict[str, int]:
        """Videos per split (paper-rows: videos with at least one row there, so a video counts in several)."""
        if self.by_row is None:
            return split_counts(self.by_video)
        return {split: len({v for (v, _), s in self.by_row.items() if s == split}) for split in SPLITS}

    def row_counts(self) -> dict[str, int]:
        if self.by_row is None:
            return {split: n * len(DIMENSION_KEYS) for split, n in split_counts(self.by_video).items()}
        return {split: sum(1 for s in self.by_row.values() if s == split) for split in SPLITS}


@dataclass
class _Written:
    files: dict
    present: dict[str, int]
    n_labeled: int
    fingerprint: str
    bytes_read: int
    problems: list[Problem]


def _write_configs(
    staging: Path,
    index,
    transcript_map: dict[str, str] | None,
    label_set: Labels | None,
    layout: _SplitLayout,
    *,
    checks: BuildChecks,
    progress: bool,
) -> _Written:
    """Read each of the index's videos once and write its `features` row(s) and `scoring` rows into their
    splits, within `checks`' limits."""
    video_ids, max_shard_bytes, max_seconds = index.video_ids, checks.max_shard_bytes, checks.max_seconds
    from mis_bench_dataset.toolkit.progress import progress as steps

    writers = {
        (config, split): ShardedParquetWriter(
            staging / config,
            split,
            _FEATURES_SCHEMA if config == "features" else _SCORING_SCHEMA,
            row_group_bytes=(16 << 20) if config == "features" else (8 << 20),
            max_shard_bytes=max_shard_bytes,
        )
        for config in CONFIGS
        for split in SPLITS
    }
    present = {m.name: 0 for m in MODALITIES}
    present[TEXT_MODALITY] = 0
    hasher = hashlib.blake2b(digest_size=16)
    bytes_read = n_labeled = 0
    problems: list[Problem] = []
    gold_by_video = label_set.gold if label_set is not None else {}
    empty_gold = dict.fromkeys(DIMENSION_KEYS)
    for video_id in steps(video_ids, desc="building MIS-Bench", unit="video", show=progress):
        record = read_video(index, video_id, transcript_map, max_seconds=max_seconds)
        problems += record.problems
        bytes_read += record.bytes_read
        gold = gold_by_video.get(video_id, empty_gold)
        n_labeled += any(v is not None for v in gold.values())
        for m in MODALITIES:
            present[m.name] += record.modalities[m.name].present
        present[TEXT_MODALITY] += record.has_transcript
        for split, keys in layout.parts(video_id):
            # A paper-rows video is in several splits: each copy carries the gold of that split's rows only.
            part_gold = {k: (gold.get(k) if k in keys else None) for k in DIMENSION_KEYS}
            writers[("features", split)].write(_features_batch(record, part_gold))
            writers[("scoring", split)].write(_scoring_batch(record, gold, keys))
        _digest(hasher, record, gold)
    files = {key: writer.close() for key, writer in writers.items()}
    empty_splits = [split for split in SPLITS if not files[("scoring", split)]]
    if empty_splits:
        logger.warning("only %d video(s): split(s) %s are empty and not written", len(video_ids), empty_splits)
    return _Written(files, present, n_labeled, hasher.hexdigest(), bytes_read, problems)


def _write_statistics(folder: Path, labels: Labels, name: str, *, synthetic: bool = False) -> dict:
    """`mis-bench stats` of the whole build into `folder/stats/`, for the card (ceiling only from per-rater labels)."""
    from mis_bench_dataset.builder.stats import dataset_stats, read_gold, write_stats

    rounding = labels.rounding.to_dict() if labels.rounding else None
    stats = dataset_stats(
        read_gold(folder), labels if labels.form == "long" else None, dataset=name, gold_rounding=rounding
    )
    stats = {"synthetic": synthetic, **stats}  # its figures say SYNTHETIC too
    write_stats(stats, folder / STATS_FOLDER)
    return stats
