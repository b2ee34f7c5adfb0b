"""What a modality setting adds to the text prompt: feature-derived descriptors, or raw media.

The public release has no raw audio or video. For `audio+text`, `video+text` and
`audio+video+text` a row then gets the same numeric, plainly labelled descriptors the zero-shot
harness uses (`eval_scripts.feature_inputs`, computed from the `features` config and joined on
`video_id`), stored in the row's `media_context` column and recorded as `input_source =
"features"`. A video whose features for a requested medium were not released gets an explicit
"not available" line: a multimodal setting never silently degrades to a text-only prompt.

Rows that carry `video_path` / `audio_path` (users with the full data) can use the raw media
instead (`input_source = "raw"`), when the model's processor takes them; see
`check_processor_takes_media`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eval_scripts.prompts import SETTING_MEDIA
from mis_bench_dataset.dimensions import MODALITY_SETTINGS

logger = logging.getLogger(__name__)

MEDIA_CONTEXT_COLUMN = "media_context"
INPUT_SOURCES = ("auto", "features", "raw")
MEDIA_ORDER = ("audio", "video")  # the order of the blocks in the prompt, as in the harness
PATH_COLUMNS = {"audio": "audio_path", "video": "video_path"}
# The `features` flags saying whether a medium's features were released for a video.
PRESENCE_FLAGS = {"audio": ("has_librosa", "has_prosody"), "video": ("has_openface",)}
_FEATURES_HEADER = (
    "Feature-derived inputs (numeric summaries of the released features; the model does not see or hear "
    "the recording):"
)


class UnsupportedModality(ValueError):
    """A modality setting cannot run with these rows, dataset or processor; the message says why."""


def check_modality(modality: str) -> tuple[str, ...]:
    """The media of a setting (eval_scripts.prompts.SETTING_MEDIA), audio first."""
    if modality not in MODALITY_SETTINGS:
        raise UnsupportedModality(f"unknown modality {modality!r}; expected one of {', '.join(MODALITY_SETTINGS)}")
    return tuple(m for m in MEDIA_ORDER if m in SETTING_MEDIA[modality])


def not_available_line(medium: str) -> str:
    return (
        f"{medium.capitalize()} descriptors: not available for this response "
        f"(no {medium} features were released for this video)."
    )


def feature_context(features_row: Mapping[str, Any], modality: str) -> str:
    """The feature-derived block of one video for `modality` (the harness's descriptors, in its words)."""
    from eval_scripts.feature_inputs import feature_media_block

    media = check_modality(modality)
    if not media:
        return ""
    parts = [_FEATURES_HEADER]
    for medium in media:
        released = any(bool(features_row.get(flag, False)) for flag in PRESENCE_FLAGS[medium])
        if released:
            block, _ = feature_media_block(features_row, f"{medium}+text", "text")
            parts.append(block)
        else:
            parts.append(not_available_line(medium))
    return "\n".join(parts)


def has_raw_media(column_names: Iterable[str], rows: Iterable[Mapping[str, Any]], modality: str) -> bool:
    """True when every row carries a path for every medium of `modality`."""
    columns = set(column_names)
    needed = [PATH_COLUMNS[m] for m in check_modality(modality)]
    if not needed or not all(c in columns for c in needed):
        return False
    return all(row.get(c) for row in rows for c in needed)


def resolve_input_source(modality: str, column_names: Iterable[str], rows: Iterable[Mapping[str, Any]], requested: str = "auto") -> str:
    """`text`, `features` or `raw` for this setting; refuses `raw` without media paths, naming them."""
    media = check_modality(modality)
    if requested not in INPUT_SOURCES:
        raise UnsupportedModality(f"unknown input source {requested!r}; expected one of {', '.join(INPUT_SOURCES)}")
    if not media:
        if requested == "raw":
            raise UnsupportedModality("--input-source raw needs an audio/video modality; the text setting has no media")
        return "text"
    rows = list(rows)
    raw = has_raw_media(column_names, rows, modality)
    if requested == "raw" and not raw:
        needed = ", ".join(PATH_COLUMNS[m] for m in media)
        raise UnsupportedModality(
            f"{modality} with raw media: the scoring rows lack {needed} (the public release has no raw media; "
            "use --input-source features for the feature-derived descriptors)"
        )
    if requested == "auto":
        return "raw" if raw else "features"
    return requested


def load_feature_contexts(dataset_dir: str | Path, modality: str, splits: Iterable[str] | None = None) -> dict[str, str]:
    """video_id -> feature-derived block, over the given splits of the built dataset's `features` config."""
    from eval_scripts.feature_inputs import FEATURE_COLUMNS
    from mis_bench_dataset.arrays import FeatureArrays
    from mis_bench_dataset.built import built_splits
    from mis_bench_dataset.errors import MisBenchError

    media = check_modality(modality)
    if not media:
        return {}
    wanted = ["video_id", "transcript", *(c for m in media for c in FEATURE_COLUMNS[m])]
    contexts: dict[str, str] = {}
    try:
        present = built_splits(dataset_dir)
        for split in [s for s in (splits or present) if s in present]:
            features = FeatureArrays.open(dataset_dir, split, wanted)
            for row in features.rows(wanted):
                contexts[row["video_id"]] = feature_context(row, modality)
    except MisBenchError as err:
        raise UnsupportedModality(
            f"{modality}: {dataset_dir} has no usable `features` config to derive {' and '.join(media)} "
            f"descriptors from ({err})"
        ) from err
    if not present:
        raise UnsupportedModality(f"{modality}: {dataset_dir} has no `features` config to derive "
                                  f"{' and '.join(media)} descriptors from (build it with `mis-bench build`)")
    return contexts


def attach_feature_context(dataset, contexts: Mapping[str, str], modality: str, where: str = "dataset"):
    """Add the `media_context` column (joined on video_id); every video must have a `features` row."""
    missing = sorted(set(dataset["video_id"]) - contexts.keys())
    if missing:
        raise UnsupportedModality(
            f"{where}: {len(missing)} video(s) have no row in the `features` config, e.g. {missing[:3]}; "
            f"cannot build {modality} prompts for them"
        )
    if MEDIA_CONTEXT_COLUMN in dataset.column_names:
        dataset = dataset.remove_columns(MEDIA_CONTEXT_COLUMN)
    return dataset.add_column(MEDIA_CONTEXT_COLUMN, [contexts[v] for v in dataset["video_id"]])


def check_processor_takes_media(processor: Any, modality: str) -> None:
    """Refuse raw media unless the processor has a processor for each medium of the setting."""
    for medium in check_modality(modality):
        attribute = {"video": "video_processor", "audio": "feature_extractor"}[medium]
        if getattr(processor, attribute, None) is None:
            raise UnsupportedModality(
                f"{modality} with raw media: the processor {type(processor).__name__} cannot take {medium} "
                f"(it has no `{attribute}`; a tokenizer alone takes text only). Load the model's AutoProcessor, "
                "or use --input-source features"
            )
