"""The prompts of one run: the input source the backend can take, feature-derived blocks, rendered text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from eval_scripts.answers.feature_plots import FEATURE_FORMATS, feature_media_block
from eval_scripts.answers.prompts import (
    Prompt,
    render_paper_prompt,
    render_prompt,
    select_few_shot,
)
from eval_scripts.backends.base import Backend
from eval_scripts.harness.config import RunConfig
from mis_bench_dataset.dataset.feature_descriptors import FEATURE_COLUMNS
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dimensions import DIMENSION_KEYS, PAPER_PROMPT_STYLE
from mis_bench_dataset.setting_inputs import SETTING_MEDIA, UnsupportedSetting, resolve_input_source
from mis_bench_dataset.toolkit.errors import DataError, UsageError


def input_source_for(config: RunConfig, rows: Sequence[Mapping], backend: Backend) -> str:
    """`text`, `raw` or `features` for the config's setting (its input source resolved against the rows, its
    dataset and what the backend takes), or UnsupportedSetting before any model call, saying why."""
    modality, dataset, feature_format = config.modality, config.dataset, config.feature_format
    source = resolve_input_source(modality, rows, config.input_source)
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
    config: RunConfig,
    *,
    input_source: str,
    train_rows: Sequence[Mapping] | None = None,
) -> list[Prompt]:
    """One prompt per row of the config's setting: the template (of `config.prompt_version`) filled with the row,
    its media or their descriptors (`input_source`, as `input_source_for` resolved it; the descriptors from
    `config.dataset`'s `features` config of `config.split`, as `config.feature_format` says) and
    `config.few_shot_k` examples drawn from `train_rows`."""
    modality, prompt_style = config.modality, config.prompt_style
    media = SETTING_MEDIA[modality]
    evaluated = {r["video_id"] for r in rows}
    blocks = (
        feature_blocks(config.dataset, config.split, modality, config.feature_format, evaluated)
        if input_source == "features"
        else {}
    )
    k, seed = config.few_shot_k, config.few_shot_seed
    shots = (
        {d: select_few_shot(train_rows or [], d, k, exclude_videos=evaluated, seed=seed) for d in DIMENSION_KEYS}
        if k
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
                row, modality, prompt_style, media_block=block, few_shot=shots_here, version=config.prompt_version
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
