"""Video id parsing: `{clinician}_{T1|T2|T3}_{stimulus}`.

Also accepts the spellings found in the original files: labels keyed by
`AG0914_FIS_Time1_Jackson` and result files keyed by `data/FIS996/CB0326_T3_Jackson`.

Known misspellings of the original label spelling are read as the video they name, never
refused, and reported (`id_misspelling`): the `FIS` and `Time` tokens in another letter case.
The authors' own `coding.csv` (commit d2b9b8e) spells 8 rows `EH0202_FIs_Time3_*`. Anything
else that does not match is a malformed id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# The columns a CSV may hold a video id in, in the order they are looked for (the first present is the id):
# labels, transcripts, predictions and references files share it.
ID_COLUMNS: tuple[str, ...] = ("video_id", "video", "file_name", "sample_id")


def id_column(header: Iterable[str]) -> str | None:
    """The header's video-id column (the first of `ID_COLUMNS` it has), or None."""
    present = set(header)
    return next((column for column in ID_COLUMNS if column in present), None)


STIMULI: tuple[str, ...] = ("Bethany", "Jackson", "Jessica", "John", "Lauren", "Luke", "Savannah", "Sean")
"""The eight standardized patient stimulus clips a clinician responds to, as video ids name them."""
TIME_POINTS: tuple[str, ...] = ("T1", "T2", "T3")
"""The three time points of a clinician's responses, as video ids name them."""
# What agreement can be broken down by (`mis_icc_metric.groups`, `mis-bench score --by`): a part of the id, or the
# therapist level (a clinician at a time point, averaged over the stimuli, and each clinician's change T1 to T3).
GROUPINGS: tuple[str, ...] = ("time_point", "stimulus", "clinician")
# The groupings whose groups have an order of their own (the design's: T1, T2, T3; the stimuli), and that order;
# clinicians are listed by name.
GROUP_ORDER: dict[str, tuple[str, ...]] = {"time_point": TIME_POINTS, "stimulus": STIMULI}
THERAPIST_LEVEL = "therapist"
BY_CHOICES: tuple[str, ...] = (*GROUPINGS, THERAPIST_LEVEL)

_CANONICAL = re.compile(r"(?P<clinician>[A-Za-z]+\d+)_(?P<time>T[123])_(?P<stimulus>[A-Za-z]+)")
_ORIGINAL_LABEL = re.compile(
    r"(?P<clinician>[A-Za-z]+\d+)_(?P<fis>FIS)_(?P<word>Time)(?P<time>[123])_(?P<stimulus>[A-Za-z]+)", re.IGNORECASE
)
# How the original label spelling writes its two fixed tokens; other letter cases are known misspellings.
_ORIGINAL_TOKENS = {"fis": "FIS", "word": "Time"}
KNOWN_MISSPELLINGS = (
    "the `FIS` and `Time` tokens of `AG0914_FIS_Time1_Jackson` in another letter case (`_FIs_`, `_time1`)"
)


@dataclass(frozen=True)
class VideoId:
    """A parsed video id: clinician, time point and stimulus (`parse_video_id`); `video_id` is its normal form."""

    clinician: str
    time_point: str
    stimulus: str

    @property
    def video_id(self) -> str:
        return f"{self.clinician}_{self.time_point}_{self.stimulus}"

    @property
    def original_name(self) -> str:
        """The spelling of the original label files: `AG0914_FIS_Time1_Jackson`."""
        return f"{self.clinician}_FIS_Time{self.time_point[1:]}_{self.stimulus}"

    def __str__(self) -> str:
        return self.video_id


def _stem(raw: str) -> str:
    """The id part of a path-like spelling (`data/FIS996/X.mp4` -> `X`)."""
    stem = str(raw).strip().replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".npz", ".mp4", ".wav", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return stem


def parse_video_id(raw: str) -> VideoId:
    """Parse any accepted spelling into its parts; raises ValueError naming the input."""
    stem = _stem(raw)
    match = _CANONICAL.fullmatch(stem)
    if match:
        return VideoId(match["clinician"], match["time"], match["stimulus"])
    match = _ORIGINAL_LABEL.fullmatch(stem)
    if match:
        return VideoId(match["clinician"], f"T{match['time']}", match["stimulus"])
    raise ValueError(
        f"malformed video id {raw!r}: expected '{{clinician}}_{{T1|T2|T3}}_{{stimulus}}' "
        "such as 'EH0822_T1_Jessica' (or 'EH0822_FIS_Time1_Jessica')"
    )


def misspelling_note(raw: str) -> str | None:
    """`'id as written -> id read'` when `raw` is a known misspelling of the original spelling, else None.

    Raises ValueError (as `parse_video_id`) when `raw` is no video id at all.
    """
    parsed = parse_video_id(raw)
    match = _ORIGINAL_LABEL.fullmatch(_stem(raw))
    if match is None or all(match[group] == token for group, token in _ORIGINAL_TOKENS.items()):
        return None
    return f"{str(raw).strip()} -> {parsed.video_id}"


def normalize_video_id(raw: str) -> str:
    """Canonical `{clinician}_{T}_{stimulus}` form of any accepted spelling."""
    return parse_video_id(raw).video_id
