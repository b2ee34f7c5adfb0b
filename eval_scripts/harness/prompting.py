"""The prompts of one run: the input source the backend can take, feature-derived blocks, rendered text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eval_scripts.answers.feature_plots import FEATURE_FORMATS, feature_media_block
from eval_scripts.answers.prompts import (
    DEFAULT_PROMPT_VERSION,
    Prompt,
    render_paper_prompt,
    render_prompt,
    select_few_shot,
)
from eval_scripts.backends.base import Backend
from mis_bench_dataset.dataset.feature_descriptors import FEATURE_COLUMNS
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dimensions import DIMENSION_KEYS, PAPER_PROMPT_STYLE
from mis_bench_dataset.setting_inputs import SETTING_MEDIA, UnsupportedSetting, resolve_input_source
from mis_bench_dataset.toolkit.errors import DataError, UsageError


def input_source_for(
    modality: str,
    requested: str,
    feature_format: str,
    rows: Sequence[Mapping],
    dataset: BuiltDataset | None,
    backend: Backend,
) -> str:
    """`text`, `raw` or `features` for this setting, or UnsupportedSetting before any model call, saying why."""
    source = resolve_input_source(modality, rows, requested)
    media = SETTING_MEDIA[modality]
    if source == "raw":
        backend.check_inputs(media, f"setting {modality} with raw media")
    elif source == "features":
        if dataset is None or not dataset.is_folder:
            raise UnsupportedSetting(
                f"{modality}: no raw media in the rows and no dataset folder with a `features` config",
                hint="pass --dataset DIR (a `mis-bench build` output) to derive audio/video descriptions",
            )
        if feature_format not in FEATURE_FORMATS:
            raise UsageError(
                f"unknown feature format {feature_format!r}",
                where="--feature-format",
                hint=f"use one of {', '.join(FEATURE_FORMATS)}",
            )
        if "plot" in feature_format:
            backend.check_inputs({"image"}, f"setting {modality} with feature plots")
    return source


def feature_blocks(
    dataset: BuiltDataset, split: str, modality: str, feature_format: str, video_ids: set[str]
) -> dict[str, tuple[str, tuple[bytes, ...]]]:
    """video_id -> (text block, images), from zero-copy views of the `features` columns (`FeatureArrays`).

    The handle opens the split's arrays once: every feature setting of a grid reads the same ones.
    """
    columns = ["video_id", "transcript", *(c for kind in SETTING_MEDIA[modality] for c in FEATURE_COLUMNS[kind])]
    try:
        features = dataset.features(split, columns)
    except DataError as err:
        raise UnsupportedSetting(
            f"{modality}: no usable `features` config: {err.what}",
            where=err.where,
            hint="rebuild the dataset with `mis-bench build`",
        ) from err
    blocks = {
        video_id: feature_media_block(features.row(video_id, columns), modality, feature_format)
        for video_id in sorted(video_ids & set(features.video_ids))
    }
    missing = video_ids - blocks.keys()
    if missing:
        raise DataError(
            f"{len(missing)} video(s) have no row in the `features` config, e.g. {sorted(missing)[:3]}",
            where=str(dataset.path),
            hint="rebuild the dataset with `mis-bench build`",
        )
    return blocks


def build_prompts(
    rows: Sequence[Mapping],
    *,
    modality: str,
    prompt_style: str,
    input_source: str,
    dataset: BuiltDataset | None = None,
    split: str = "test",
    feature_format: str = "text",
    train_rows: Sequence[Mapping] | None = None,
    few_shot_k: int = 0,
    few_shot_seed: int = 0,
    prompt_version: int = DEFAULT_PROMPT_VERSION,
) -> list[Prompt]:
    """One prompt per row: the template (of `prompt_version`) filled with the row, its media (or their descriptors)
    and few-shot examples."""
    media = SETTING_MEDIA[modality]
    evaluated = {r["video_id"] for r in rows}
    blocks = feature_blocks(dataset, split, modality, feature_format, evaluated) if input_source == "features" else {}
    shots = (
        {
            d: select_few_shot(train_rows or [], d, few_shot_k, exclude_videos=evaluated, seed=few_shot_seed)
            for d in DIMENSION_KEYS
        }
        if few_shot_k
        else {}
    )
    prompts = []
    for row in rows:
        block, images = blocks.get(row["video_id"], ("", ()))
        system = None
        if prompt_style == PAPER_PROMPT_STYLE:  # raw media lead the user message; the protocol's text names none
            paper = render_paper_prompt(row, modality, media_block="" if input_source == "raw" else block)
            system, text = paper.system, paper.user
        else:
            if input_source == "raw":
                block = f"The {'video' if 'video' in media else 'audio'} of the response is attached."
            shots_here = shots.get(row["dimension"], ())
            text = render_prompt(
                row, modality, prompt_style, media_block=block, few_shot=shots_here, version=prompt_version
            )
        prompts.append(
            Prompt(
                video_id=row["video_id"],
                dimension=row["dimension"],
                text=text,
                images=images,
                audio_path=row.get("audio_path") if input_source == "raw" and "audio" in media else None,
                video_path=row.get("video_path") if input_source == "raw" and "video" in media else None,
                media=frozenset(media),
                system=system,
            )
        )
    return prompts
