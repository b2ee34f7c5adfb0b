"""Video id parsing: `{clinician}_{T1|T2|T3}_{stimulus}`.

Also accepts the spellings found in the original files: labels keyed by
`AG0914_FIS_Time1_Jackson` and result files keyed by `data/FIS996/CB0326_T3_Jackson`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STIMULI: tuple[str, ...] = ("Bethany", "Jackson", "Jessica", "John", "Lauren", "Luke", "Savannah", "Sean")
TIME_POINTS: tuple[str, ...] = ("T1", "T2", "T3")

_CANONICAL = re.compile(r"(?P<clinician>[A-Za-z]+\d+)_(?P<time>T[123])_(?P<stimulus>[A-Za-z]+)")
_ORIGINAL_LABEL = re.compile(r"(?P<clinician>[A-Za-z]+\d+)_FIS_Time(?P<time>[123])_(?P<stimulus>[A-Za-z]+)")


@dataclass(frozen=True)
class VideoId:
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


def parse_video_id(raw: str) -> VideoId:
    """Parse any accepted spelling into its parts; raises ValueError naming the input."""
    text = str(raw).strip()
    stem = text.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".npz", ".mp4", ".wav", ".json"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
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


def normalize_video_id(raw: str) -> str:
    """Canonical `{clinician}_{T}_{stimulus}` form of any accepted spelling."""
    return parse_video_id(raw).video_id
