"""What each modality setting feeds a model, and where its audio/video come from (defined once).

The paper's four settings (§4.1) need no media (`text`), audio, video, or both. The public
release has no raw media, so a setting's audio/video come either from raw files (rows with
`audio_path` / `video_path`, users with the full data: `input_source = "raw"`) or from
numeric descriptors of the released features (`input_source = "features"`,
`mis_bench_dataset.dataset.feature_descriptors`). The zero-shot harness and the RAFT trainer both
resolve the source here, so the same rows always get the same answer and the same refusal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mis_bench_dataset.dimensions import MODALITY_SETTINGS
from mis_bench_dataset.toolkit.errors import UsageError

# Inputs a setting needs besides text, in the vocabulary backends declare.
SETTING_MEDIA: dict[str, frozenset[str]] = {
    "text": frozenset(),
    "audio+text": frozenset({"audio"}),
    "video+text": frozenset({"video"}),
    "audio+video+text": frozenset({"audio", "video"}),
}
MEDIA_ORDER: tuple[str, ...] = ("audio", "video")  # the order of media blocks in a prompt
PATH_COLUMNS: dict[str, str] = {"audio": "audio_path", "video": "video_path"}
INPUT_SOURCES: tuple[str, ...] = ("auto", "raw", "features")
FEATURE_FORMATS: tuple[str, ...] = ("text", "plot", "text+plot")  # feature-derived input as text, a plot, both
assert set(SETTING_MEDIA) == set(MODALITY_SETTINGS)


class UnsupportedSetting(UsageError):
    """A setting cannot run with these rows, dataset, backend or processor; the message says why."""


def setting_media(modality: str) -> tuple[str, ...]:
    """The media a setting needs, audio first; an unknown setting is refused."""
    if modality not in SETTING_MEDIA:
        raise UnsupportedSetting(
            f"unknown modality setting {modality!r}", hint=f"use one of {', '.join(MODALITY_SETTINGS)}"
        )
    return tuple(m for m in MEDIA_ORDER if m in SETTING_MEDIA[modality])


def has_raw_media(rows: Iterable[Mapping[str, Any]], modality: str) -> bool:
    """True when there are rows and every one carries a path for every medium of `modality`."""
    needed = [PATH_COLUMNS[m] for m in setting_media(modality)]
    rows = list(rows)
    return bool(needed) and bool(rows) and all(row.get(column) for row in rows for column in needed)


def resolve_input_source(modality: str, rows: Iterable[Mapping[str, Any]], requested: str = "auto") -> str:
    """`text`, `raw` or `features` for this setting and these rows; refuses what cannot run, saying why."""
    if requested not in INPUT_SOURCES:
        raise UnsupportedSetting(
            f"unknown input source {requested!r}", where="--input-source", hint=f"use one of {', '.join(INPUT_SOURCES)}"
        )
    media = setting_media(modality)
    if not media:
        if requested == "raw":
            raise UnsupportedSetting(
                "raw media need an audio/video setting; the text setting has none",
                where="--input-source raw",
                hint="drop --input-source or pick an audio/video setting",
            )
        return "text"
    rows = list(rows)
    raw = has_raw_media(rows, modality)
    if requested == "raw" and not raw:
        missing = sorted({PATH_COLUMNS[m] for m in media for row in rows if not row.get(PATH_COLUMNS[m])})
        raise UnsupportedSetting(
            f"{modality} with raw media: the rows lack {', '.join(missing or [PATH_COLUMNS[m] for m in media])}",
            where="--input-source raw",
            hint="the public release has no raw media; use --input-source features for feature-derived descriptors",
        )
    if requested == "auto":
        return "raw" if raw else "features"
    return requested
