"""The eight prompt templates (4 modality settings x direct/CoT) and their rendering; the `paper` style.

The paper's Appendix A.1 templates are not in the text we have; the files in
`templates/` are our own, written from its description (§3.1, §4.1): task
description, the response to evaluate (transcript plus what the setting allows),
the dimension's rubric (criterion and five score descriptions, paper Table 5), and
the answer format (direct: only a score with one decimal in [1, 5]; CoT: analysis
of the observed behaviours, then ``Final score: x.y``).

The template's own wording names the medium through ``${media}``: "audio" when the
setting gives audio without video (paper §4.1: "video" becomes "audio" for
audio-only input), "video" otherwise. Rubric text is never rewritten (its "video
clip" is the client stimulus the therapist watched).

Two versions of the eight templates (`PROMPT_VERSIONS`). Version 1 (`templates/*.txt`) names the dimension
before the transcript; version 2 (`templates/v2/`, the default, `DEFAULT_PROMPT_VERSION`) is laid out for
prefix caching: the task text, the transcript and the media block (features or the attached-media line)
first, everything dimension-specific (the dimension's name, its rubric, few-shot examples, the answer
instruction) after them, so the eight prompts of one video share their start and a server's prefix cache
(or the transformers backend's shared-prefix read) computes it once. Version 1 stays selectable
(`--prompt-version 1`) for runs comparable with earlier ones; each file's sha256 identifies it.

The `paper` style is the authors' MIS-RAFT protocol (`mis_bench_dataset.protocol`): a system
message and one user text with fixed sections, the same for every modality setting; it has no
template file and no few-shot examples.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    MODALITY_SETTINGS,
    PAPER_PROMPT_STYLE,
    PROMPT_STYLES,
    RUBRIC,
    SCORE_LEVELS,
)
from mis_bench_dataset.protocol import PAPER_TEMPLATE_SHA256, PaperPrompt, paper_prompt
from mis_bench_dataset.toolkit.numbers import gold_decimal

MODALITIES: tuple[str, ...] = MODALITY_SETTINGS
TEMPLATE_DIR = Path(__file__).with_name("templates")
PROMPT_VERSIONS: tuple[int, ...] = (1, 2)
DEFAULT_PROMPT_VERSION = 2  # prefix-cache layout; 1 names the dimension before the transcript


def check_setting(modality: str, style: str) -> None:
    if modality not in MODALITIES:
        raise ValueError(f"unknown modality setting {modality!r}; expected one of {', '.join(MODALITIES)}")
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(PROMPT_STYLES)}")


def check_version(version: int) -> None:
    if version not in PROMPT_VERSIONS:
        raise ValueError(f"unknown prompt version {version!r}; expected one of {', '.join(map(str, PROMPT_VERSIONS))}")


def template_path(modality: str, style: str, version: int = DEFAULT_PROMPT_VERSION) -> Path:
    check_setting(modality, style)
    check_version(version)
    if style == PAPER_PROMPT_STYLE:
        raise ValueError("the `paper` style has no template file; it is built by mis_bench_dataset.protocol")
    folder = TEMPLATE_DIR if version == 1 else TEMPLATE_DIR / f"v{version}"
    return folder / f"{modality.replace('+', '_')}_{style}.txt"


@cache
def load_template(modality: str, style: str, version: int = DEFAULT_PROMPT_VERSION) -> string.Template:
    return string.Template(template_path(modality, style, version).read_text(encoding="utf-8"))


def template_hash(modality: str, style: str, version: int = DEFAULT_PROMPT_VERSION) -> str:
    """sha256 of the template file (of the protocol's wording for `paper`, whatever the version): identifies the
    prompt wording of a run."""
    if style == PAPER_PROMPT_STYLE:
        check_setting(modality, style)
        check_version(version)
        return PAPER_TEMPLATE_SHA256
    return hashlib.sha256(template_path(modality, style, version).read_bytes()).hexdigest()


def template_version(style: str, version: int = DEFAULT_PROMPT_VERSION) -> int | None:
    """The template version a run's prompts have: `version` for direct / cot, None for `paper` (the authors'
    protocol has one wording)."""
    check_version(version)
    return None if style == PAPER_PROMPT_STYLE else version


def media_word(modality: str) -> str:
    """'audio' when the setting gives audio but no video (paper §4.1), else 'video'."""
    return "audio" if modality == "audio+text" else "video"


def format_rubric(dimension: str) -> tuple[str, str]:
    """(criterion, five score lines) of a dimension, from the one rubric module."""
    rubric = RUBRIC[dimension]
    lines = rubric.level_lines(". ")
    return rubric.criterion, lines


@dataclass(frozen=True)
class FewShotExample:
    video_id: str
    transcript: str
    score: float


@dataclass(frozen=True)
class Prompt:
    """A backend-neutral request: the rendered user text, an optional system message, and the media.

    Backends send `system` (when set) as a system message before the user message.
    """

    video_id: str
    dimension: str
    text: str
    images: tuple[bytes, ...] = ()
    audio_path: str | None = None
    video_path: str | None = None
    media: frozenset[str] = field(default_factory=frozenset)
    system: str | None = None

    @property
    def prompt_hash(self) -> str:
        """sha256 over the text, the system message (when there is one) and the identity of every attachment.

        A prompt without a system message hashes exactly as before the field existed (cache keys stay valid).
        """
        digest = hashlib.sha256(self.text.encode("utf-8"))
        if self.system is not None:
            digest.update(b"\0system\0" + self.system.encode("utf-8"))
        for image in self.images:
            digest.update(b"\0image\0" + hashlib.sha256(image).digest())
        for name, value in (("audio", self.audio_path), ("video", self.video_path)):
            if value:
                digest.update(f"\0{name}\0{value}".encode())
        return digest.hexdigest()


def render_prompt(
    row: Mapping,
    modality: str,
    style: str,
    *,
    media_block: str = "",
    few_shot: Sequence[FewShotExample] = (),
    version: int = DEFAULT_PROMPT_VERSION,
) -> str:
    """Fill a template (of `version`) from one `scoring` row (uses its rubric columns when present)."""
    check_setting(modality, style)
    if style == PAPER_PROMPT_STYLE:
        raise ValueError("the `paper` style has a system message: use render_paper_prompt")
    dimension = row["dimension"]
    if dimension not in DIMENSION_BY_KEY:
        raise ValueError(f"row {row.get('video_id')!r}: unknown dimension {dimension!r}")
    criterion, rubric_lines = format_rubric(dimension)
    if row.get("criterion"):
        criterion = row["criterion"]
        rubric_lines = "\n".join(f"Score {level}. {row[f'rubric_{level}']}" for level in SCORE_LEVELS)
    transcript = (row.get("transcript") or "").strip()
    if not transcript:
        raise ValueError(f"row {row.get('video_id')!r} ({dimension}): empty transcript")
    return load_template(modality, style, version).substitute(
        media=media_word(modality),
        dimension_name=DIMENSION_BY_KEY[dimension].name,
        transcript=transcript,
        criterion=criterion,
        rubric=rubric_lines,
        media_block=media_block.strip() + "\n" if media_block.strip() else "",
        few_shot=format_few_shot(few_shot, style),
    )


def render_paper_prompt(row: Mapping, modality: str, *, media_block: str = "") -> PaperPrompt:
    """The `paper` style's system and user texts for one `scoring` row; `media_block` (feature-derived
    descriptors) follows the transcript. The rubric is always the one of `RUBRIC` (paper Table 5)."""
    check_setting(modality, PAPER_PROMPT_STYLE)
    dimension = row["dimension"]
    if dimension not in DIMENSION_BY_KEY:
        raise ValueError(f"row {row.get('video_id')!r}: unknown dimension {dimension!r}")
    transcript = (row.get("transcript") or "").strip()
    if not transcript:
        raise ValueError(f"row {row.get('video_id')!r} ({dimension}): empty transcript")
    return paper_prompt(dimension, transcript, media_block)


def format_few_shot(examples: Sequence[FewShotExample], style: str) -> str:
    if not examples:
        return ""
    answer = "Final score: {:.1f}" if style == "cot" else "{:.1f}"
    blocks = [
        f'Example {i}. Transcript:\n"""\n{ex.transcript.strip()}\n"""\nExpert score: ' + answer.format(ex.score)
        for i, ex in enumerate(examples, start=1)
    ]
    return (
        "\nScored examples of other therapists' responses (expert scores for this dimension):\n\n"
        + "\n\n".join(blocks)
        + "\n"
    )


def select_few_shot(
    pool: Iterable[Mapping],
    dimension: str,
    k: int,
    *,
    exclude_videos: Iterable[str] = (),
    seed: int = 0,
) -> list[FewShotExample]:
    """k labelled examples of `dimension`, seeded, never one of `exclude_videos`.

    The pool must be the train split; the runner refuses to draw from the evaluated split.
    """
    if k <= 0:
        return []
    excluded = set(exclude_videos)
    candidates = sorted(
        (
            FewShotExample(r["video_id"], r["transcript"], gold_decimal(r["score"]))
            for r in pool
            if r["dimension"] == dimension and r.get("score") is not None and r["video_id"] not in excluded
        ),
        key=lambda ex: ex.video_id,
    )
    if len(candidates) < k:
        raise ValueError(f"few-shot: only {len(candidates)} labelled train examples for {dimension}, need {k}")
    return random.Random(f"{seed}:{dimension}").sample(candidates, k)
