"""The authors' MIS-RAFT protocol (paper Table 4), in our own words: the `paper` prompt style and
the raw-video sampling rule. The zero-shot harness and the RAFT trainer both build from here.

Read from the authors' public code (github.com/calistalu/MIS-Bench, folder MIS-RAFT: its
`prompt/` templates, `pipeline_inference.py`, `pipeline_finetune_raft.py`):

- Messages: a system message holding the task instruction, then a user message with the video
  first (raw media) and a text in the layout of Prometheus-style absolute grading: the sections
  "Task Description", "Response to evaluate" (the transcript) and "Score Rubrics" (the criterion in
  square brackets, then "Score 1: ..." to "Score 5: ..."), ending with the line "###Score:" to be
  completed. The wording below is ours; only the structure and the headings are theirs.
- The training completion is "The score prediction is: " + the gold score at one decimal.
- Inference is greedy with at most 16 new tokens (`PAPER_MAX_NEW_TOKENS`).
- Raw video: 32 frames at indices `np.linspace(0, n_frames - 1, 32, dtype=int)` (truncated toward
  zero, as the authors' `get_video_frames`; computed exactly in integers), a pixel budget of
  20480x28x28 for the whole clip and at least 16x28x28 per frame (`VideoSampling`).

The rubric text comes from `mis_bench_dataset.dimensions.RUBRIC` (Table 5); nothing here copies it.
Feature-derived descriptors (public release, no raw media) go into "Response to evaluate", after
the transcript, under their own plain label.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass

import numpy as np

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    PAPER_PROMPT_STYLE,
    RUBRIC,
    prompt_style,
    resolve_dimension,
)

__all__ = [
    "ANSWER_LINE",
    "PAPER_MAX_NEW_TOKENS",
    "PAPER_PROMPT_STYLE",
    "PAPER_TEMPLATE_SHA256",
    "SECTION_HEADINGS",
    "PaperPrompt",
    "VideoSampling",
    "paper_prompt",
    "section_heading",
]

# The authors' MAX_NEW_TOKENS, held in the table of per-style defaults.
PAPER_MAX_NEW_TOKENS = prompt_style(PAPER_PROMPT_STYLE).max_new_tokens
SECTION_HEADINGS: tuple[str, ...] = ("Task Description", "Response to evaluate", "Score Rubrics")
ANSWER_LINE = "###Score:"


def section_heading(name: str) -> str:
    """A section's heading line, in the Prometheus layout the authors use (`###Name:`)."""
    return f"###{name}:"


SYSTEM_TEMPLATE = string.Template(
    "You evaluate a therapist's spoken response to a standardized client in the Facilitative Interpersonal "
    "Skills (FIS) performance task. Rate the response on one FIS dimension, ${dimension_name}, following the "
    "score rubric you are given."
)
USER_TEMPLATE = string.Template(
    section_heading(SECTION_HEADINGS[0]) + "\n"
    "You are given an instruction, a response to evaluate and a score rubric that sets out one evaluation "
    "criterion.\n"
    "Answer with a numerical score between 1 and 5 with one decimal place, and nothing else; base it on the "
    "score rubric.\n"
    "Write no opening, no closing and no explanation.\n"
    "\n" + section_heading(SECTION_HEADINGS[1]) + "\n"
    "${response}\n"
    "\n" + section_heading(SECTION_HEADINGS[2]) + "\n"
    "[${criterion}]\n"
    "${levels}\n"
    "\n" + ANSWER_LINE
)
# Identifies the wording of a `paper` run, as a template file's sha256 does for `direct` / `cot`.
PAPER_TEMPLATE_SHA256 = hashlib.sha256(
    (SYSTEM_TEMPLATE.template + "\0" + USER_TEMPLATE.template).encode("utf-8")
).hexdigest()


@dataclass(frozen=True)
class PaperPrompt:
    """The two texts of a `paper` request: the system message and the user message's text part."""

    system: str
    user: str


def paper_prompt(dimension: str, transcript: str, media_context: str | None = None) -> PaperPrompt:
    """System instruction and user text for one (response, dimension); the media context, if any,
    follows the transcript inside "Response to evaluate"."""
    key = resolve_dimension(dimension)
    text = (transcript or "").strip()
    response = text + (f"\n\n{media_context.strip()}" if media_context and media_context.strip() else "")
    rubric = RUBRIC[key]
    levels = rubric.level_lines(": ")
    return PaperPrompt(
        system=SYSTEM_TEMPLATE.substitute(dimension_name=DIMENSION_BY_KEY[key].name),
        user=USER_TEMPLATE.substitute(response=response, criterion=rubric.criterion, levels=levels),
    )


# The paper's video inputs (authors' code: 32 frames, TOTAL_PIXELS, MIN_PIXELS).
PAPER_VIDEO_FRAMES = 32
PAPER_VIDEO_MAX_PIXELS = 20480 * 28 * 28
PAPER_VIDEO_MIN_PIXELS = 16 * 28 * 28
# qwen-vl-utils, which the authors' code vendors: no frame above 768x28x28 pixels, and frames enter the
# vision tower in pairs (the temporal patch), so each pair of frames shares twice a frame's share of the budget.
QWEN_VIDEO_FRAME_CEILING = 768 * 28 * 28
QWEN_TEMPORAL_PATCH = 2


@dataclass(frozen=True)
class VideoSampling:
    """Which frames of a raw video a model sees and how large they may be (defaults: the paper's).

    `max_pixels` is the budget of the whole clip, `min_pixels` the floor of each frame; the per-frame
    ceiling handed to the processor follows qwen-vl-utils' rule (`max_pixels_per_frame`).
    """

    frames: int = PAPER_VIDEO_FRAMES
    max_pixels: int = PAPER_VIDEO_MAX_PIXELS
    min_pixels: int = PAPER_VIDEO_MIN_PIXELS

    def __post_init__(self) -> None:
        for name in ("frames", "max_pixels", "min_pixels"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"video sampling: {name} must be a positive integer, got {value!r}")
        if self.min_pixels * self.frames > self.max_pixels:
            raise ValueError(
                f"video sampling: {self.frames} frames of at least {self.min_pixels} pixels exceed the clip's budget "
                f"of {self.max_pixels} pixels; lower the frames or the minimum, or raise the budget"
            )

    def frame_indices(self, n_frames: int) -> np.ndarray:
        """`linspace(0, n_frames - 1, frames)` truncated to integers, as the authors' code samples (a clip
        shorter than `frames` repeats frames rather than giving fewer).

        Computed in integers: for 32 frames this equals the authors' `np.linspace(..., dtype=int)` for every
        clip length; for some other counts numpy's floating-point steps land one frame low where the exact
        position is a whole frame (e.g. 51 of 457 frames), which the integer form does not.
        """
        if n_frames < 1:
            raise ValueError(f"video sampling: the video has no frames (n_frames={n_frames})")
        if self.frames == 1:
            return np.zeros(1, dtype=np.int64)
        return np.arange(self.frames, dtype=np.int64) * (int(n_frames) - 1) // (self.frames - 1)

    def max_pixels_per_frame(self) -> int:
        """qwen-vl-utils' per-frame ceiling for this many frames: an even share of the clip's budget per
        temporal patch, at most 768x28x28, at least 1.05 x the per-frame minimum."""
        share = self.max_pixels * QWEN_TEMPORAL_PATCH // self.frames
        return max(min(QWEN_VIDEO_FRAME_CEILING, share), int(self.min_pixels * 1.05))

    def processor_kwargs(self) -> dict:
        """The Qwen2-VL-family video processor's kwargs for frames sampled here (no second sampling)."""
        return {
            "do_sample_frames": False,
            "size": {"shortest_edge": self.min_pixels, "longest_edge": self.max_pixels_per_frame()},
        }

    def as_record(self) -> dict:
        """What a results file records about the video inputs."""
        return {
            "frames": self.frames,
            "max_pixels": self.max_pixels,
            "min_pixels": self.min_pixels,
            "max_pixels_per_frame": self.max_pixels_per_frame(),
            "frame_rule": "linspace(0, n_frames - 1, frames), truncated",
        }
