"""What a modality setting adds to the text prompt: feature-derived descriptors, or raw media.

The public release has no raw audio or video. For `audio+text`, `video+text` and
`audio+video+text` a row then gets the same numeric, plainly labelled descriptors the zero-shot
harness uses (`mis_bench_dataset.dataset.feature_descriptors`, computed from the `features` config and joined on
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

from mis_bench_dataset.dataset.feature_descriptors import FEATURE_COLUMNS, describe_media
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.setting_inputs import UnsupportedSetting, setting_media

logger = logging.getLogger(__name__)

MEDIA_CONTEXT_COLUMN = "media_context"
# The `features` flags saying whether a medium's features were released for a video.
PRESENCE_FLAGS = {"audio": ("has_librosa", "has_prosody"), "video": ("has_openface",)}
_FEATURES_HEADER = (
    "Feature-derived inputs (numeric summaries of the released features; the model does not see or hear the recording):"
)


def not_available_line(medium: str) -> str:
    return (
        f"{medium.capitalize()} descriptors: not available for this response "
        f"(no {medium} features were released for this video)."
    )


def feature_context(features_row: Mapping[str, Any], modality: str) -> str:
    """The feature-derived block of one video for `modality` (the harness's descriptors, in its words)."""
    media = setting_media(modality)
    if not media:
        return ""
    parts = [_FEATURES_HEADER]
    for medium in media:
        released = any(bool(features_row.get(flag, False)) for flag in PRESENCE_FLAGS[medium])
        if released:
            parts.append(describe_media(features_row, f"{medium}+text"))
        else:
            parts.append(not_available_line(medium))
    return "\n".join(parts)


def load_feature_contexts(
    dataset_dir: str | Path | BuiltDataset, modality: str, splits: Iterable[str] | None = None
) -> dict[str, str]:
    """video_id -> feature-derived block, over the given splits of the built dataset's `features` config.

    Read with `mis_bench_dataset.dataset.arrays.FeatureArrays` (zero-copy views of the Parquet columns).
    """
    from mis_bench_dataset.toolkit.errors import DataError

    media = setting_media(modality)
    if not media:
        return {}
    wanted = ["video_id", "transcript", *(c for m in media for c in FEATURE_COLUMNS[m])]
    contexts: dict[str, str] = {}
    try:
        dataset = BuiltDataset.of(dataset_dir)  # a path is opened here; a handle's arrays are reused
        dataset_dir = dataset.path
        present = dataset.splits("features")
        for split in [s for s in (splits or present) if s in present]:
            features = dataset.features(split, wanted)
            for row in features.rows(wanted):
                contexts[row["video_id"]] = feature_context(row, modality)
    except DataError as err:
        raise UnsupportedSetting(
            f"{modality}: {dataset_dir} has no usable `features` config to derive "
            f"{' and '.join(media)} descriptors from ({err.what})",
            where=err.where,
        ) from err
    if not present:
        raise UnsupportedSetting(
            f"{modality}: {dataset_dir} has no `features` config to derive {' and '.join(media)} descriptors from",
            hint="build it with `mis-bench build`",
        )
    return contexts


def attach_feature_context(dataset, contexts: Mapping[str, str], modality: str, where: str = "dataset"):
    """Add the `media_context` column (joined on video_id); every video must have a `features` row."""
    missing = sorted(set(dataset["video_id"]) - contexts.keys())
    if missing:
        raise UnsupportedSetting(
            f"{where}: {len(missing)} video(s) have no row in the `features` config, e.g. {missing[:3]}; "
            f"cannot build {modality} prompts for them"
        )
    if MEDIA_CONTEXT_COLUMN in dataset.column_names:
        dataset = dataset.remove_columns(MEDIA_CONTEXT_COLUMN)
    return dataset.add_column(MEDIA_CONTEXT_COLUMN, [contexts[v] for v in dataset["video_id"]])


def check_processor_takes_media(processor: Any, modality: str) -> None:
    """Refuse raw media unless the processor has a processor for each medium of the setting."""
    for medium in setting_media(modality):
        attribute = {"video": "video_processor", "audio": "feature_extractor"}[medium]
        if getattr(processor, attribute, None) is None:
            raise UnsupportedSetting(
                f"{modality} with raw media: the processor {type(processor).__name__} cannot take {medium} "
                f"(it has no `{attribute}`; a tokenizer alone takes text only). Load the model's AutoProcessor, "
                "or use --input-source features"
            )
