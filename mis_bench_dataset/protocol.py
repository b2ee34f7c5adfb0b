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
- Raw video (`VideoSampling`), a pixel budget of 20480x28x28 for the whole clip and at least 16x28x28
  per frame, and one of two rules: "fixed", 32 frames at `np.linspace(0, n_frames - 1, 32, dtype=int)`
  (the authors' `get_video_frames`, whose frames their published scripts never feed the model; computed
  exactly in integers), or "paper", what their runs fed the model through their copy of qwen-vl-utils'
  `fetch_video` (2 frames a second up to 768, rounded float32 linspace indices, a per-frame cap from the
  budget and the frame count, then every second row and column).

The rubric text comes from `mis_bench_dataset.dimensions.RUBRIC` (Table 5); nothing here copies it.
Feature-derived descriptors (public release, no raw media) go into "Response to evaluate", after
the transcript, under their own plain label.
"""

from __future__ import annotations

import hashlib
import math
import string
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: `mis-bench --help` needs none of it
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
    "VIDEO_SAMPLING_RULES",
    "VideoSampling",
    "paper_prompt",
    "qwen_frame_size",
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


# ----------------------------------------------------------------------------------------------- raw video
# Two rules pick and size a raw video's frames (`VideoSampling.rule`):
# - "fixed": N frames (32) at linspace(0, n - 1, N) truncated, the authors' `get_video_frames`, whose frames,
#   as published, never reach their model; the processor sizes them within the clip's budget.
# - "paper": what their runs fed the model, through their copy of qwen-vl-utils' `fetch_video`
#   (MIS-RAFT/utils/vision_process.py): 2 frames a second, at most 768, floored to a multiple of 2; indices
#   torch.linspace(0, n - 1, count).round(); each frame resized to multiples of 28 within a per-frame cap derived
#   from the clip's budget and the frame count; then every second row and column (their addition), after which
#   the processor only rounds the sides to multiples of 28 within Qwen2.5-VL's own bounds.
FIXED_VIDEO_SAMPLING = "fixed"
PAPER_VIDEO_SAMPLING = "paper"
VIDEO_SAMPLING_RULES: tuple[str, ...] = (FIXED_VIDEO_SAMPLING, PAPER_VIDEO_SAMPLING)

# The paper's video inputs (authors' code: 32 frames in get_video_frames, TOTAL_PIXELS, MIN_PIXELS).
PAPER_VIDEO_FRAMES = 32
PAPER_VIDEO_MAX_PIXELS = 20480 * 28 * 28
PAPER_VIDEO_MIN_PIXELS = 16 * 28 * 28
# qwen-vl-utils, which the authors' code vendors: no frame above 768x28x28 pixels, and frames enter the
# vision tower in pairs (the temporal patch), so each pair of frames shares twice a frame's share of the budget.
QWEN_VIDEO_FRAME_CEILING = 768 * 28 * 28
QWEN_TEMPORAL_PATCH = 2
QWEN_SIZE_FACTOR = 28  # patch 14 x merge 2: frame sides are multiples of 28
QWEN_MAX_ASPECT_RATIO = 200
# qwen-vl-utils' fps sampling (FPS, FPS_MIN_FRAMES, FPS_MAX_FRAMES) and the authors' halving of each side.
PAPER_VIDEO_FPS = 2.0
PAPER_VIDEO_MIN_FRAMES = 4
PAPER_VIDEO_MAX_FRAMES = 768
PAPER_FRAME_STRIDE = 2
# Qwen2.5-VL's processor bounds (its preprocessor_config.json: min_pixels, max_pixels, = qwen-vl-utils' image
# MIN_PIXELS, MAX_PIXELS); the authors' processor resized the halved frames within these.
QWEN_PROCESSOR_MIN_PIXELS = 4 * 28 * 28
QWEN_PROCESSOR_MAX_PIXELS = 16384 * 28 * 28


def _floor_to(value: float, factor: int) -> int:
    return math.floor(value / factor) * factor


def _ceil_to(value: float, factor: int) -> int:
    return math.ceil(value / factor) * factor


def qwen_frame_size(
    height: int, width: int, min_pixels: float, max_pixels: float, *, at_least_one_patch: bool = True
) -> tuple[int, int]:
    """(height, width) of a frame resized to multiples of 28 within [min_pixels, max_pixels], aspect kept as
    closely as possible: qwen-vl-utils' `smart_resize`, rounding as Python's `round` does (half to even).
    `at_least_one_patch=False` is the processors' variant in transformers, whose first rounding may reach 0
    (a side under 14 pixels) before the area bounds apply."""
    if min(height, width) < 1:
        raise ValueError(f"video sampling: a frame of {height}x{width} pixels has no area")
    if max(height, width) / min(height, width) > QWEN_MAX_ASPECT_RATIO:
        raise ValueError(
            f"video sampling: a {height}x{width} frame is more than {QWEN_MAX_ASPECT_RATIO} times longer than wide"
        )
    factor = QWEN_SIZE_FACTOR
    floor = factor if at_least_one_patch else 0
    h_bar = max(floor, round(height / factor) * factor)
    w_bar = max(floor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, _floor_to(height / beta, factor))
        w_bar = max(factor, _floor_to(width / beta, factor))
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = _ceil_to(height * beta, factor)
        w_bar = _ceil_to(width * beta, factor)
    return h_bar, w_bar


def _positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"video sampling: {name} must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class VideoSampling:
    """Which frames of a raw video a model sees and how large they are (the paper's budget by default).

    `rule` is "fixed" (default: `frames` frames, 32, at `linspace(0, n - 1, frames)` truncated) or "paper" (the
    authors' runs: `fps` frames a second, at most `frames`, 768; see the comment above `FIXED_VIDEO_SAMPLING`).
    `max_pixels` is the budget of the whole clip, `min_pixels` the floor of each frame; the per-frame ceiling
    follows qwen-vl-utils' rule (`max_pixels_per_frame`).
    """

    frames: int | None = None
    max_pixels: int = PAPER_VIDEO_MAX_PIXELS
    min_pixels: int = PAPER_VIDEO_MIN_PIXELS
    rule: str = FIXED_VIDEO_SAMPLING
    fps: float = PAPER_VIDEO_FPS

    def __post_init__(self) -> None:
        if self.rule not in VIDEO_SAMPLING_RULES:
            rules = ", ".join(VIDEO_SAMPLING_RULES)
            raise ValueError(f"video sampling: rule must be one of {rules}, got {self.rule!r}")
        if self.frames is None:
            default = PAPER_VIDEO_MAX_FRAMES if self.rule == PAPER_VIDEO_SAMPLING else PAPER_VIDEO_FRAMES
            object.__setattr__(self, "frames", default)
        for name in ("frames", "max_pixels", "min_pixels"):
            _positive_int(name, getattr(self, name))
        if self.rule == FIXED_VIDEO_SAMPLING:
            if self.fps != PAPER_VIDEO_FPS:
                raise ValueError("video sampling: fps applies to the 'paper' rule; the 'fixed' rule takes `frames`")
            if self.min_pixels * self.frames > self.max_pixels:
                raise ValueError(
                    f"video sampling: {self.frames} frames of at least {self.min_pixels} pixels exceed the clip's "
                    f"budget of {self.max_pixels} pixels; lower the frames or the minimum, or raise the budget"
                )
        elif isinstance(self.fps, bool) or not isinstance(self.fps, (int, float)) or not self.fps > 0:
            raise ValueError(f"video sampling: fps must be a positive number, got {self.fps!r}")
        elif self.frames < QWEN_TEMPORAL_PATCH:
            raise ValueError(f"video sampling: `frames` (the most frames) must be at least 2, got {self.frames}")

    @property
    def resizes_frames(self) -> bool:
        """Whether the frames are resized here (the paper rule) rather than by the model's processor."""
        return self.rule == PAPER_VIDEO_SAMPLING

    def frame_count(self, n_frames: int, video_fps: float | None = None) -> int:
        """How many frames a clip of `n_frames` frames at `video_fps` gives (the paper rule needs the fps)."""
        if n_frames < 1:
            raise ValueError(f"video sampling: the video has no frames (n_frames={n_frames})")
        if self.rule == FIXED_VIDEO_SAMPLING:
            return self.frames
        if video_fps is None or not video_fps > 0:
            raise ValueError(f"video sampling: the 'paper' rule needs the video's frame rate, got {video_fps!r}")
        if n_frames < QWEN_TEMPORAL_PATCH:
            raise ValueError(f"video sampling: the 'paper' rule needs at least 2 frames, the video has {n_frames}")
        wanted = n_frames / video_fps * self.fps
        most = _floor_to(min(self.frames, n_frames), QWEN_TEMPORAL_PATCH)
        least = _ceil_to(PAPER_VIDEO_MIN_FRAMES, QWEN_TEMPORAL_PATCH)
        return _floor_to(min(max(wanted, least), most, n_frames), QWEN_TEMPORAL_PATCH)

    def frame_indices(self, n_frames: int, video_fps: float | None = None) -> np.ndarray:
        """Indices of the sampled frames, in order.

        "fixed": `linspace(0, n_frames - 1, frames)` truncated, as the authors' `get_video_frames` (a clip
        shorter than `frames` repeats frames). Computed in integers: for 32 frames this equals their
        `np.linspace(..., dtype=int)` for every clip length; for some other counts numpy's floating-point steps
        land one frame low where the exact position is a whole frame (e.g. 51 of 457 frames).
        "paper": `torch.linspace(0, n_frames - 1, count).round()` in float32 on the CPU, the authors' reader's
        own call (its float32 steps differ from exact rounding by a frame at some positions of about a quarter of
        clip lengths, so the exact rational form would not be their rule); needs torch.
        """
        count = self.frame_count(n_frames, video_fps)
        if self.rule == PAPER_VIDEO_SAMPLING:
            from mis_bench_dataset.toolkit.errors import require

            torch = require("torch", "train", "the 'paper' video sampling")
            positions = torch.linspace(0, int(n_frames) - 1, count, dtype=torch.float32, device="cpu")
            return positions.round().long().numpy()
        import numpy as np

        if count == 1:
            return np.zeros(1, dtype=np.int64)
        return np.arange(count, dtype=np.int64) * (int(n_frames) - 1) // (count - 1)

    def max_pixels_per_frame(self, n_sampled: int | None = None) -> float:
        """qwen-vl-utils' per-frame ceiling for `n_sampled` frames (default `frames`): an even share of the
        clip's budget per temporal patch, at most 768x28x28, at least 1.05 x the per-frame minimum. An integer
        for the processor under "fixed"; under "paper" the authors' float division."""
        n = self.frames if n_sampled is None else n_sampled
        if self.rule == PAPER_VIDEO_SAMPLING:
            share = self.max_pixels / n * QWEN_TEMPORAL_PATCH
        else:
            share = self.max_pixels * QWEN_TEMPORAL_PATCH // n
        return max(min(QWEN_VIDEO_FRAME_CEILING, share), int(self.min_pixels * 1.05))

    def resized_size(self, height: int, width: int, n_sampled: int) -> tuple[int, int]:
        """The paper rule: (height, width) each of `n_sampled` frames is resized to here, before the halving."""
        if self.rule != PAPER_VIDEO_SAMPLING:
            raise ValueError("video sampling: only the 'paper' rule resizes frames itself")
        return qwen_frame_size(height, width, self.min_pixels, self.max_pixels_per_frame(n_sampled))

    def frame_size(self, height: int, width: int, n_sampled: int) -> tuple[int, int]:
        """(height, width) at which each of `n_sampled` frames of a `height` x `width` video reaches the model."""
        if self.rule == FIXED_VIDEO_SAMPLING:
            bounds = (self.min_pixels, self.max_pixels_per_frame(n_sampled))
            return qwen_frame_size(height, width, *bounds, at_least_one_patch=False)
        resized_h, resized_w = self.resized_size(height, width, n_sampled)
        halved = -(-resized_h // PAPER_FRAME_STRIDE), -(-resized_w // PAPER_FRAME_STRIDE)
        bounds = (QWEN_PROCESSOR_MIN_PIXELS, QWEN_PROCESSOR_MAX_PIXELS)
        return qwen_frame_size(*halved, *bounds, at_least_one_patch=False)

    def processor_kwargs(self) -> dict:
        """The Qwen2-VL-family video processor's kwargs for frames sampled here (no second sampling): "fixed"
        sizes them within the clip's budget; "paper" frames are sized already and only rounded to multiples of
        28 within Qwen2.5-VL's own bounds, as the authors' processor did."""
        if self.rule == PAPER_VIDEO_SAMPLING:
            size = {"shortest_edge": QWEN_PROCESSOR_MIN_PIXELS, "longest_edge": QWEN_PROCESSOR_MAX_PIXELS}
        else:
            size = {"shortest_edge": self.min_pixels, "longest_edge": self.max_pixels_per_frame()}
        return {"do_sample_frames": False, "size": size}

    def as_record(self) -> dict:
        """What a results file and `setting.json` record about the video inputs."""
        if self.rule == PAPER_VIDEO_SAMPLING:
            return {
                "rule": self.rule,
                "fps": self.fps,
                "max_frames": self.frames,
                "max_pixels": self.max_pixels,
                "min_pixels": self.min_pixels,
                "frame_rule": "fps frames a second (at least 4, at most max_frames, floored to a multiple of 2) at "
                "torch.linspace(0, n_frames - 1, count).round(); resized within the clip's budget, then every "
                "second row and column",
            }
        return {
            "rule": self.rule,
            "frames": self.frames,
            "max_pixels": self.max_pixels,
            "min_pixels": self.min_pixels,
            "max_pixels_per_frame": self.max_pixels_per_frame(),
            "frame_rule": "linspace(0, n_frames - 1, frames), truncated",
        }


@dataclass(frozen=True)
class FewShot:
    """A setting's in-context examples as a run records them: `k` examples (None: not said, e.g. the trainer),
    drawn with `seed`."""

    k: int | None = None
    seed: int | None = None


def setting_record(
    modality: str,
    prompt_style: str,
    input_source: str,
    *,
    few_shot: FewShot = FewShot(),
    feature_format: str | None = None,
    video: VideoSampling | None = None,
    **extra: object,
) -> dict:
    """The `setting` block a run records (results files, `setting.json`, `scores_test.json`): the one writer of it
    for the harness, the baselines and the trainer, so the three describe a setting with the same keys.

    `feature_format` is kept only for feature-derived inputs, the few-shot seed only with examples, `video` (the
    raw frames' sampling) only for raw inputs; `extra` (e.g. `trained`) is appended as given.
    """
    few_shot_k, few_shot_seed = few_shot.k, few_shot.seed
    record: dict = {"modality": modality, "prompt_style": prompt_style}
    if few_shot_k is not None:
        record["few_shot_k"] = few_shot_k
    record["input_source"] = input_source
    if input_source == "features" and feature_format is not None:
        record["feature_format"] = feature_format
    if few_shot_k and few_shot_seed is not None:
        record["few_shot_seed"] = few_shot_seed
    if input_source == "raw" and video is not None:
        record["video"] = video.as_record()
    record.update(extra)
    return record
