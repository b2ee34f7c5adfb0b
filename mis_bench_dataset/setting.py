"""`Setting`: what a judge is shown and how it is asked (modality, input source, prompt style, raw-video
sampling), declared once for the zero-shot harness (`RunConfig`) and the trainer (`RAFTConfig`).

Each field's default, help and validator are written here, once, as an `option` (`toolkit.options`). The
configs embed the fields flat, since both are read by argument parsers that need flat dataclass fields
(`mis-bench run`'s flags come from `RunConfig`'s, TRL's `TrlParser` reads `RAFTConfig`'s): `SettingFields`
is the mixin `RunConfig` inherits, `setting_fields(name, metadata=argparse_metadata)` the one `RAFTConfig`
inherits (the same fields, their metadata in `HfArgumentParser`'s words). Either config's `.setting` is the
frozen, validated `Setting` its fields describe, which is what code below the configs takes.

One vocabulary of prompt styles (`PROMPT_STYLES`): `direct` (the toolkit's own prompt, the score alone),
`cot` (the toolkit's, an analysis then the score), `paper` (the authors' MIS-RAFT protocol). The trainer
renders `direct` in its own chat wording (rubric, then transcript) and takes `direct` and `paper`; its earlier
name for that prompt, `toolkit`, is an alias of `direct` (`PROMPT_STYLE_ALIASES`), so recipes and commands
that say `toolkit` keep working.

Light on purpose (no numpy, no transformers): `mis-bench run --help` imports it.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any

from mis_bench_dataset.dimensions import (
    DIRECT_PROMPT_STYLE,
    MODALITY_SETTINGS,
    PROMPT_STYLE_ALIASES,
    PROMPT_STYLE_TABLE,
    PROMPT_STYLES,
    canonical_prompt_style,
)
from mis_bench_dataset.protocol import (
    FIXED_VIDEO_SAMPLING,
    PAPER_VIDEO_FRAMES,
    PAPER_VIDEO_MAX_FRAMES,
    PAPER_VIDEO_MAX_PIXELS,
    PAPER_VIDEO_MIN_PIXELS,
    VIDEO_SAMPLING_RULES,
    VideoSampling,
)
from mis_bench_dataset.setting_inputs import INPUT_SOURCES
from mis_bench_dataset.toolkit.options import option, positive_int

# The text setting's input source once resolved: a config may carry it (a trained model's saved config does).
TEXT_INPUT = "text"


def _prompt_help() -> str:
    styles = "; ".join(f"{style.name}: {style.help}" for style in PROMPT_STYLE_TABLE.values())
    aliases = "; ".join(
        f"{alias}: {style}'s earlier name in the trainer" for alias, style in PROMPT_STYLE_ALIASES.items()
    )
    return f"{styles}; {aliases}"


@dataclass(frozen=True)
class Setting:
    """One setting of a judge: what it is shown (`modality`, `input_source`, the raw video's frames and pixel
    budget) and how it is asked (`prompt_style`, one of `PROMPT_STYLES`; an alias is stored as its style).
    Validated when made; `video` is the raw-video sampling these fields describe."""

    modality: str = field(
        default="text",
        metadata=option("modality setting", choices=MODALITY_SETTINGS, section="model"),
    )
    input_source: str = field(
        default="auto",
        metadata=option(
            "media for audio/video settings: raw files (video_path/audio_path) or "
            "feature-derived descriptions (public release); auto picks raw when present",
            choices=INPUT_SOURCES,
            section="setting",
        ),
    )
    prompt_style: str = field(
        default=DIRECT_PROMPT_STYLE,
        metadata=option(
            _prompt_help(),
            flag="--prompt",
            aliases=("--prompt_style",),  # the trainer's name of the same setting (`train --prompt_style`)
            choices=(*PROMPT_STYLES, *PROMPT_STYLE_ALIASES),
            section="model",
        ),
    )
    video_sampling: str = field(
        default=FIXED_VIDEO_SAMPLING,
        metadata=option(
            f"raw video's frame rule: {FIXED_VIDEO_SAMPLING} (evenly spaced frames) or paper (the frames of Table 4's "
            "runs, 2 a second)",
            choices=VIDEO_SAMPLING_RULES,
            section="video",
        ),
    )
    video_frames: int | None = field(
        default=None,
        metadata=option(
            f"frames sampled per video under fixed (default {PAPER_VIDEO_FRAMES}), the most frames under paper "
            f"(default {PAPER_VIDEO_MAX_FRAMES})",
            type=positive_int,
            section="video",
        ),
    )
    video_max_pixels: int = field(
        default=PAPER_VIDEO_MAX_PIXELS,
        metadata=option(
            f"pixel budget of the whole clip, all frames together (default 20480*28*28 = {PAPER_VIDEO_MAX_PIXELS})",
            type=positive_int,
            section="video",
        ),
    )
    video_min_pixels: int = field(
        default=PAPER_VIDEO_MIN_PIXELS,
        metadata=option(
            f"pixels each frame keeps at least (default 16*28*28 = {PAPER_VIDEO_MIN_PIXELS})",
            type=positive_int,
            section="video",
        ),
    )

    def __post_init__(self) -> None:
        if self.modality not in MODALITY_SETTINGS:
            raise ValueError(
                f"unknown modality setting {self.modality!r}; expected one of {', '.join(MODALITY_SETTINGS)}"
            )
        if self.input_source not in (*INPUT_SOURCES, TEXT_INPUT):
            raise ValueError(f"unknown input source {self.input_source!r}; expected one of {', '.join(INPUT_SOURCES)}")
        if self.input_source == TEXT_INPUT and self.modality != "text":
            raise ValueError(f"input source 'text' is the text setting's, got modality {self.modality!r}")
        object.__setattr__(self, "prompt_style", canonical_prompt_style(self.prompt_style))
        _ = self.video  # the video fields checked now, not at the first raw-video row

    @property
    def video(self) -> VideoSampling:
        """The raw-video sampling of these fields (`mis_bench_dataset.protocol.VideoSampling`)."""
        return VideoSampling(self.video_frames, self.video_max_pixels, self.video_min_pixels, self.video_sampling)


SETTING_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Setting))


class _EmbedsSetting:
    """A config that carries `Setting`'s fields flat: `.setting` is the `Setting` they describe."""

    def __post_init__(self) -> None:
        self.store_style_alias()

    def store_style_alias(self) -> None:
        """An alias of a prompt style (`toolkit`) stored as the style it names (`direct`)."""
        self.prompt_style = PROMPT_STYLE_ALIASES.get(self.prompt_style, self.prompt_style)

    @property
    def setting(self) -> Setting:
        """The frozen, validated `Setting` of these fields (a ValueError names what is wrong)."""
        return Setting(**{name: getattr(self, name) for name in SETTING_FIELDS})


def setting_fields(
    name: str,
    *,
    metadata: Callable[[Mapping[str, Any]], Mapping[str, Any]] = dict,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> type:
    """A dataclass mixin named `name` with `Setting`'s fields (mutable, keyword-only, `Setting`'s defaults),
    each field's metadata `metadata(its option)` updated by `overrides[field name]` (what a config says of a
    field in its own words: the trainer's prompt styles), and `.setting`. Its `__post_init__` stores an alias of a
    prompt style as the style (a config that defines its own `__post_init__` calls `store_style_alias`)."""
    overrides = overrides or {}
    declared = [
        (
            item.name,
            item.type,
            field(
                default=item.default,
                kw_only=True,
                metadata={**metadata(item.metadata), **overrides.get(item.name, {})},
            ),
        )
        for item in fields(Setting)
    ]
    mixin = make_dataclass(name, declared, bases=(_EmbedsSetting,))
    mixin.__module__, mixin.__qualname__ = __name__, name
    mixin.__doc__ = f"`Setting`'s fields, flat, for a config to inherit; `.setting` is their `Setting`. ({name})"
    return mixin


# The harness's mixin: its metadata are `option`s, from which `mis-bench run`'s flags are generated.
SettingFields = setting_fields("SettingFields")
