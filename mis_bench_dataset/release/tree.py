"""Reading and validating a MIS-Bench release tree (de-identified features, one npz per file).

Layout (exactly that of the public release)::

    video/openface3/{id}.npz   features T x 208, timestamps T   (8 AUs, 98 landmarks x/y, gaze 2, confidence 2)
    audio/librosa/{id}.npz     features T x 93,  timestamps T   (80 log-Mel + 13 MFCC, 50 Hz)
    audio/wav2vec/{id}.npz     features T x 768, timestamps T
    audio/prosody/{id}.npz     features 1 x 15,  timestamps 1   (segment midpoint)
    text/words/{id}.npz        text: 0-d unicode array (the transcript)
    subset_manifest.csv/json   optional

Files are opened with `allow_pickle=False`. A file that is absent or broken
never aborts the read: the modality is returned empty and a `Problem` names the
video, modality, file and reason. Every array's shape and dtype are read from its
header first: an array longer than `max_seconds` of frames at its modality's rate
(default two hours) is reported as `too_large` and never decompressed, so a small
hostile file cannot make the reader allocate gigabytes.
"""

from __future__ import annotations

import json
import logging
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mis_bench_dataset.release.limits import MAX_RECORDING_SECONDS, MAX_TRANSCRIPT_CHARS
from mis_bench_dataset.release.problems import Problem
from mis_bench_dataset.video_ids import parse_video_id

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Modality:
    """An array modality: its column name in the dataset, its folder, row width and highest frame rate (rows/s)."""

    name: str
    folder: str
    width: int
    frame_rate: float


MODALITIES: tuple[Modality, ...] = (
    Modality("openface", "video/openface3", 208, 60.0),  # videos run at 24-30 fps; 60 leaves room
    Modality("librosa", "audio/librosa", 93, 50.0),
    Modality("wav2vec", "audio/wav2vec", 768, 50.0),
    Modality("prosody", "audio/prosody", 15, 1.0),  # one row per segment
)
MODALITY_BY_NAME: dict[str, Modality] = {m.name: m for m in MODALITIES}
# Column layout inside the arrays (paper Table 1); every consumer slices with these.
OPENFACE_AUS = slice(0, 8)
OPENFACE_LANDMARKS = slice(8, 204)
OPENFACE_GAZE = slice(204, 206)
OPENFACE_CONFIDENCE = slice(206, 208)
LIBROSA_LOG_MEL = slice(0, 80)
LIBROSA_MFCC = slice(80, 93)
TEXT_FOLDER = "text/words"
TEXT_MODALITY = "text"
# Modalities with a frame rate; prosody has one segment-level row.
FRAMED_MODALITIES: tuple[str, ...] = ("openface", "librosa", "wav2vec")
# Top-level files the layout knows (never read as labels: labels are passed explicitly).
KNOWN_TOP_LEVEL_FILES = frozenset(
    {"subset_manifest.csv", "subset_manifest.json", "README.md", "ratings.csv", "LICENSE"}
)
KNOWN_TOP_LEVEL_DIRS = frozenset({"video", "audio", "text"})


@dataclass
class ReleaseIndex:
    """What a release tree holds: the video ids, which file serves each (modality, id),
    which modality folders exist, and the problems found while scanning."""

    root: Path | None
    video_ids: list[str]
    files: dict[str, dict[str, Path]]  # modality -> video_id -> path ("text" included)
    present_modalities: list[str]
    absent_modalities: list[str]
    manifest: dict = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def is_synthetic(self) -> bool:
        return bool(self.manifest.get("synthetic", False))


@dataclass
class ModalityData:
    """One modality of one video; `features` is (0, W) when absent."""

    features: np.ndarray
    timestamps: np.ndarray
    present: bool


@dataclass
class VideoRecord:
    video_id: str
    clinician: str
    time_point: str
    stimulus: str
    transcript: str
    has_transcript: bool
    modalities: dict[str, ModalityData]
    problems: list[Problem]
    bytes_read: int = 0

    @property
    def duration_seconds(self) -> float | None:
        return duration_seconds(self.modalities)


def _empty(width: int) -> ModalityData:
    return ModalityData(np.zeros((0, width), np.float32), np.zeros((0,), np.float32), False)


def duration_seconds(modalities: dict[str, ModalityData]) -> float | None:
    """Video duration from the timestamps, since the release has no duration field.

    The longest framed modality (openface, librosa, wav2vec) gives its last
    timestamp plus one median frame step (the last frame covers that interval);
    when none is present, the prosody timestamp, which is the segment midpoint,
    gives twice its value. None when no modality has timestamps.
    """
    best: float | None = None
    for name in FRAMED_MODALITIES:
        data = modalities.get(name)
        if data is None or not data.present or data.timestamps.size == 0:
            continue
        ts = data.timestamps.astype(np.float64)
        step = float(np.median(np.diff(ts))) if ts.size > 1 else 0.0
        value = float(ts[-1]) + step
        best = value if best is None else max(best, value)
    if best is None:
        prosody = modalities.get("prosody")
        if prosody is not None and prosody.present and prosody.timestamps.size:
            best = 2.0 * float(prosody.timestamps[-1])
    return best


def _scan_folder(root: Path, folder: str, modality: str, problems: list[Problem]) -> dict[str, Path]:
    """video id -> the file serving it. The file named exactly `{id}.npz` always wins; a name that only
    parses to an id (a stray space, another spelling) is reported, and used only when no exact one exists."""
    candidates: dict[str, list[Path]] = {}
    for path in sorted((root / folder).iterdir()):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or path.suffix != ".npz":
            problems.append(Problem("unknown_file", "not an .npz file; ignored", modality=modality, path=rel))
            continue
        try:
            video_id = parse_video_id(path.stem).video_id
        except ValueError as exc:
            problems.append(Problem("malformed_id", str(exc), modality=modality, path=rel))
            continue
        candidates.setdefault(video_id, []).append(path)
    found: dict[str, Path] = {}
    for video_id, paths in candidates.items():
        exact = [p for p in paths if p.name == f"{video_id}.npz"]
        chosen = (exact or paths)[0]
        found[video_id] = chosen
        chosen_rel = chosen.relative_to(root).as_posix()
        if not exact:
            problems.append(
                Problem(
                    "inexact_name",
                    f"the file name is not exactly {video_id}.npz; used, as no file has the exact name",
                    video_id=video_id,
                    modality=modality,
                    path=chosen_rel,
                )
            )
        for other in (p for p in paths if p != chosen):
            problems.append(
                Problem(
                    "duplicate_id",
                    f"also served by {chosen_rel}"
                    + (" (the exact name wins)" if exact else "")
                    + "; this file ignored",
                    video_id=video_id,
                    modality=modality,
                    path=other.relative_to(root).as_posix(),
                )
            )
    return dict(sorted(found.items()))


def _read_manifest(root: Path, problems: list[Problem]) -> dict:
    path = root / "subset_manifest.json"
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(Problem("unreadable", f"manifest is not valid JSON: {exc}", path=path.name))
        return {}
    return manifest if isinstance(manifest, dict) else {}


_RELEASE_FOLDERS: tuple[tuple[str, str], ...] = (
    *((m.name, m.folder) for m in MODALITIES),
    (TEXT_MODALITY, TEXT_FOLDER),
)


def _scan_modalities(root: Path, problems: list[Problem]) -> tuple[dict[str, dict[str, Path]], list[str], list[str]]:
    """Each modality folder's files by video id; the modalities present and absent (an absent one is a problem)."""
    files: dict[str, dict[str, Path]] = {}
    present: list[str] = []
    absent: list[str] = []
    for name, folder in _RELEASE_FOLDERS:
        if (root / folder).is_dir():
            files[name] = _scan_folder(root, folder, name, problems)
            present.append(name)
        else:
            absent.append(name)
            problems.append(
                Problem(
                    "missing_modality_folder",
                    f"folder {folder}/ is absent from the release; '{name}' is empty for every video",
                    modality=name,
                    path=folder,
                )
            )
    return files, present, absent


def _unknown_files(root: Path, problems: list[Problem]) -> None:
    """Files and folders outside the release layout: listed, ignored."""
    known = {f for _, f in _RELEASE_FOLDERS}
    for path in sorted(root.iterdir()):
        if path.is_dir() and path.name in KNOWN_TOP_LEVEL_DIRS:
            for sub in sorted(path.iterdir()):
                rel = sub.relative_to(root).as_posix()
                if rel not in known:
                    problems.append(Problem("unknown_file", "not part of the release layout; ignored", path=rel))
        elif path.name not in KNOWN_TOP_LEVEL_FILES and path.name not in KNOWN_TOP_LEVEL_DIRS:
            problems.append(Problem("unknown_file", "not part of the release layout; ignored", path=path.name))


def _manifest_videos(manifest: dict, ids: set[str], problems: list[Problem]) -> None:
    """Add the manifest's listed videos to `ids`; one listed but in no modality is a problem."""
    for raw in manifest.get("sample_ids", []) or []:
        try:
            video_id = parse_video_id(raw).video_id
        except ValueError as exc:
            problems.append(Problem("malformed_id", str(exc), path="subset_manifest.json"))
            continue
        if video_id not in ids:
            problems.append(
                Problem(
                    "missing_video",
                    "listed in subset_manifest.json but no file in any modality",
                    video_id=video_id,
                    path="subset_manifest.json",
                )
            )
            ids.add(video_id)


def scan_release(root: str | Path | None, extra_video_ids: list[str] | tuple[str, ...] = ()) -> ReleaseIndex:
    """Index a release tree without reading arrays.

    `extra_video_ids` (e.g. the ids of a transcripts CSV) join the video set, so
    a text-only build needs no tree at all (`root=None`).
    """
    problems: list[Problem] = []
    files: dict[str, dict[str, Path]] = {}
    present: list[str] = []
    manifest: dict = {}
    ids: set[str] = set(extra_video_ids)
    if root is not None:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"release directory {root} does not exist or is not a folder")
        manifest = _read_manifest(root, problems)
        files, present, absent = _scan_modalities(root, problems)
        for name in present:
            ids.update(files[name])
        _unknown_files(root, problems)
        _manifest_videos(manifest, ids, problems)
    else:
        absent = [name for name, _ in _RELEASE_FOLDERS]
    for name in present:
        for video_id in sorted(ids - set(files[name])):
            folder = dict(_RELEASE_FOLDERS)[name]
            problems.append(Problem("missing_file", f"no {folder}/{video_id}.npz", video_id=video_id, modality=name))
    logger.info(
        "release %s: %d videos, modalities present: %s",
        root or "(none: transcripts only)",
        len(ids),
        ", ".join(present) or "none",
    )
    return ReleaseIndex(
        root=root,
        video_ids=sorted(ids),
        files=files,
        present_modalities=present,
        absent_modalities=absent,
        manifest=manifest,
        problems=problems,
    )


def _archive_headers(archive: zipfile.ZipFile) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """name -> (shape, dtype) of every .npy array of an open npz, from the headers (numpy's own parser) without
    decompressing the data."""
    headers = {}
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            continue
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(member)
        headers[info.filename[: -len(".npy")]] = (tuple(shape), dtype)
    return headers


def npz_headers(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """name -> (shape, dtype) of every array in an npz, read from the headers without decompressing the data."""
    with zipfile.ZipFile(path) as archive:
        return _archive_headers(archive)


def _read_array(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    """One array of an open npz, read by numpy's own reader (pickles refused, as `np.load`)."""
    with archive.open(f"{name}.npy") as member:
        return np.lib.format.read_array(member, allow_pickle=False)


def _too_large(headers: dict[str, tuple[tuple[int, ...], np.dtype]], max_rows: int, max_chars: int) -> str | None:
    """Why the arrays are too large to read, or None."""
    for name, (shape, dtype) in headers.items():
        if dtype.kind == "U":
            chars = dtype.itemsize // 4 * int(np.prod(shape, dtype=np.int64))
            if chars > max_chars:
                return f"'{name}' holds {chars:,} characters, over the limit of {max_chars:,}"
        elif shape and shape[0] > max_rows:
            return f"'{name}' has {shape[0]:,} rows, over the limit of {max_rows:,}"
        elif int(np.prod(shape, dtype=np.int64)) > max_rows * 1024:
            return f"'{name}' has shape {shape}, over the size limit"
    return None


def _load_npz(
    path: Path, video_id: str, modality: str, rel: str, *, max_rows: int, max_chars: int = MAX_TRANSCRIPT_CHARS
) -> tuple[dict[str, np.ndarray] | None, Problem | None]:
    try:
        # One open of the archive for the check and the read: every header first (nothing decompressed if one
        # is too large), then the arrays.
        with zipfile.ZipFile(path) as archive:
            headers = _archive_headers(archive)
            reason = _too_large(headers, max_rows, max_chars)
            if reason is not None:
                return None, Problem(
                    "too_large", reason + " (never decompressed)", video_id=video_id, modality=modality, path=rel
                )
            return {name: _read_array(archive, name) for name in headers}, None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        reason = f"{type(exc).__name__}: {exc}".strip()
        return None, Problem("unreadable", reason, video_id=video_id, modality=modality, path=rel)


def read_modality(
    path: Path,
    modality: Modality,
    video_id: str,
    root: Path | None = None,
    *,
    max_seconds: float = MAX_RECORDING_SECONDS,
) -> tuple[ModalityData, Problem | None]:
    """Read and validate one array modality file; a broken file gives an empty modality and a Problem."""
    rel = path.relative_to(root).as_posix() if root is not None else str(path)

    def fail(kind: str, reason: str) -> tuple[ModalityData, Problem]:
        return _empty(modality.width), Problem(kind, reason, video_id=video_id, modality=modality.name, path=rel)

    max_rows = max(1, int(max_seconds * modality.frame_rate))
    arrays, problem = _load_npz(path, video_id, modality.name, rel, max_rows=max_rows)
    if problem is not None:
        return _empty(modality.width), problem
    missing = [key for key in ("features", "timestamps") if key not in arrays]
    if missing:
        return fail("bad_keys", f"missing array(s) {missing}; found {sorted(arrays)}")
    features, timestamps = arrays["features"], arrays["timestamps"]
    if features.dtype.kind not in "fiu" or timestamps.dtype.kind not in "fiu":
        return fail(
            "bad_dtype", f"features dtype {features.dtype}, timestamps dtype {timestamps.dtype}; expected numbers"
        )
    if features.ndim != 2 or features.shape[1] != modality.width:
        return fail("bad_width", f"features shape {features.shape}; expected (T, {modality.width})")
    if timestamps.ndim != 1 or timestamps.shape[0] != features.shape[0]:
        return fail(
            "timestamp_mismatch",
            f"timestamps shape {timestamps.shape} for {features.shape[0]} feature rows",
        )
    features = features.astype(np.float32, copy=False)
    timestamps = timestamps.astype(np.float32, copy=False)
    if not np.isfinite(features).all():
        bad = int((~np.isfinite(features)).sum())
        return fail("non_finite", f"{bad} NaN/inf value(s) in features")
    if not np.isfinite(timestamps).all():
        return fail("non_finite", "NaN/inf value(s) in timestamps")
    return ModalityData(features, timestamps, True), None


def read_transcript(path: Path, video_id: str, root: Path | None = None) -> tuple[str | None, Problem | None]:
    rel = path.relative_to(root).as_posix() if root is not None else str(path)
    arrays, problem = _load_npz(path, video_id, TEXT_MODALITY, rel, max_rows=MAX_TRANSCRIPT_CHARS)
    if problem is not None:
        return None, problem
    if "text" not in arrays:
        return None, Problem(
            "bad_keys",
            f"missing array 'text'; found {sorted(arrays)}",
            video_id=video_id,
            modality=TEXT_MODALITY,
            path=rel,
        )
    text = arrays["text"]
    if text.dtype.kind != "U" or text.size != 1:
        return None, Problem(
            "bad_dtype",
            f"'text' is {text.dtype} of shape {text.shape}; expected a 0-d unicode array",
            video_id=video_id,
            modality=TEXT_MODALITY,
            path=rel,
        )
    return str(text.reshape(()).item()), None


def read_video(
    index: ReleaseIndex,
    video_id: str,
    transcripts: dict[str, str] | None = None,
    *,
    max_seconds: float = MAX_RECORDING_SECONDS,
) -> VideoRecord:
    """Read one video's modalities; problems for absent files were already reported by `scan_release`."""
    parts = parse_video_id(video_id)
    problems: list[Problem] = []
    modalities: dict[str, ModalityData] = {}
    bytes_read = 0
    for modality in MODALITIES:
        path = index.files.get(modality.name, {}).get(video_id)
        if path is None:
            modalities[modality.name] = _empty(modality.width)
            continue
        bytes_read += path.stat().st_size
        data, problem = read_modality(path, modality, video_id, index.root, max_seconds=max_seconds)
        modalities[modality.name] = data
        if problem is not None:
            problems.append(problem)
    text: str | None = None
    path = index.files.get(TEXT_MODALITY, {}).get(video_id)
    if path is not None:
        bytes_read += path.stat().st_size
        text, problem = read_transcript(path, video_id, index.root)
        if problem is not None:
            problems.append(problem)
    if transcripts is not None and video_id in transcripts:
        csv_text = transcripts[video_id]
        if text is not None and text.strip() != csv_text.strip():
            problems.append(
                Problem(
                    "transcript_conflict",
                    "text/words differs from the transcripts CSV; the CSV is used",
                    video_id=video_id,
                    modality=TEXT_MODALITY,
                )
            )
        text = csv_text
    return VideoRecord(
        video_id=video_id,
        clinician=parts.clinician,
        time_point=parts.time_point,
        stimulus=parts.stimulus,
        transcript=text or "",
        has_transcript=text is not None,
        modalities=modalities,
        problems=problems,
        bytes_read=bytes_read,
    )
