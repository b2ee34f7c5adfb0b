"""Raw audio/video rows (`video_path` / `audio_path`) -> processor inputs with the score's position.

For users with the full data: the chat message carries the media entries first, then the text; a
video is decoded and sampled here (`raft_trainer.video`, by `video_sampling`: the "fixed" 32 frames and the
paper's pixel budget by default, or the "paper" rule of the authors' runs), an audio file is loaded by the
processor. The model's processor (`AutoProcessor`, e.g. Qwen2.5-VL's) renders the chat, processes the media
and expands its placeholder tokens; the RAFT loss still reads the two score positions. Rows are encoded lazily,
batch by batch, in the collator: one video's pixel tensors can take hundreds of MB, far too much
to store per (video, dimension) row.

The completion is located from the end: the text the chat template adds for the assistant turn
is tokenized on its own (no media in it) and must equal the tail of the processor's ids, else a
clear error. Rows longer than `max_length` raise (media tokens are never cut).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mis_bench_dataset.dimensions import DIRECT_PROMPT_STYLE, PAPER_PROMPT_STYLE
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.setting import Setting
from mis_bench_dataset.setting_inputs import PATH_COLUMNS, UnsupportedSetting, setting_media
from raft_trainer.collator import MEDIA_BATCH_KEYS
from raft_trainer.data import (
    PLACEHOLDER_SCORE,
    TrainingRowMixin,
    _row_name,
    check_prompt_style,
    completion_text,
    prompt_texts,
)
from raft_trainer.digits import DigitTokens
from raft_trainer.media import check_processor_takes_media
from raft_trainer.video import load_sampled_video, video_kwargs

logger = logging.getLogger(__name__)


def attached_note(media: tuple[str, ...]) -> str:
    """The line that stands where the feature-derived descriptors would be (the harness's wording)."""
    return f"The {'video' if 'video' in media else 'audio'} of the response is attached."


@dataclass
class RawMediaEncoder(TrainingRowMixin):
    processor: Any
    digits: DigitTokens
    modality: str
    max_length: int | None = None
    prompt_style: str = DIRECT_PROMPT_STYLE
    video_sampling: VideoSampling = field(default_factory=VideoSampling)

    @classmethod
    def for_setting(
        cls, processor: Any, digits: DigitTokens, setting: Setting, *, max_length: int | None = None
    ) -> RawMediaEncoder:
        """The encoder of a `Setting` (a `RAFTConfig`'s `.setting`): its modality, prompt style and video sampling."""
        return cls(processor, digits, setting.modality, max_length, setting.prompt_style, setting.video)

    def __post_init__(self) -> None:
        self.prompt_style = check_prompt_style(self.prompt_style)
        self.media = setting_media(self.modality)
        if not self.media:
            raise UnsupportedSetting("raw media needs an audio/video modality, got 'text'")
        check_processor_takes_media(self.processor, self.modality)
        self.tokenizer = getattr(self.processor, "tokenizer", None)
        if self.tokenizer is None:
            raise UnsupportedSetting(f"the processor {type(self.processor).__name__} has no tokenizer")

    def messages(self, row: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The chat (system; user: media first, then the text) and the metadata of its sampled video, if any.

        The `direct` style says in its text that the media are attached; the `paper` style, as the
        authors' protocol, does not.
        """
        missing = [PATH_COLUMNS[m] for m in self.media if not row.get(PATH_COLUMNS[m])]
        if missing:
            raise ValueError(f"{_row_name(row)}: {self.modality} with raw media needs {', '.join(missing)}")
        content: list[dict[str, Any]] = []
        video_metadata: list[dict[str, Any]] = []
        for medium in self.media:
            path = str(row[PATH_COLUMNS[medium]])
            if medium == "video":
                try:
                    frames, metadata = load_sampled_video(path, self.video_sampling)
                except UnsupportedSetting:
                    raise
                except ValueError as err:
                    raise ValueError(f"{_row_name(row)}: {err}") from err
                content.append({"type": "video", "video": frames})
                video_metadata.append(metadata)
            else:
                content.append({"type": medium, "path": path})
        note = None if self.prompt_style == PAPER_PROMPT_STYLE else attached_note(self.media)
        system, user = prompt_texts(row["dimension"], row.get("transcript") or "", note, self.prompt_style)
        content.append({"type": "text", "text": user})
        messages = [
            {"role": "system", "content": [{"type": "text", "text": system}]},
            {"role": "user", "content": content},
        ]
        return messages, video_metadata

    def encode(self, row: Mapping[str, Any], score_text: str) -> dict[str, Any]:
        """Processor ids (media placeholders expanded), completion-only labels, score index, media tensors."""
        prompt, video_metadata = self.messages(row)
        full = prompt + [{"role": "assistant", "content": [{"type": "text", "text": completion_text(score_text)}]}]
        prompt_text = self.processor.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        full_text = self.processor.apply_chat_template(full, tokenize=False)
        if not full_text.startswith(prompt_text):
            raise ValueError(
                f"{_row_name(row)}: the chat template does not render the prompt as a prefix of the conversation"
            )
        tail = self.tokenizer(full_text[len(prompt_text) :], add_special_tokens=False)["input_ids"]
        extra = {"processor_kwargs": video_kwargs(self.video_sampling, video_metadata)} if video_metadata else {}
        inputs = self.processor.apply_chat_template(full, tokenize=True, return_dict=True, return_tensors="pt", **extra)
        ids = [int(i) for i in inputs["input_ids"][0]]
        prompt_len = len(ids) - len(tail)
        if ids[prompt_len:] != tail:
            raise ValueError(
                f"{_row_name(row)}: the processor's ids do not end with the assistant turn tokenized alone "
                f"({self.tokenizer.convert_ids_to_tokens(ids[prompt_len:])} "
                f"vs {self.tokenizer.convert_ids_to_tokens(tail)})"
            )
        if self.max_length is not None and len(ids) > self.max_length:
            raise ValueError(
                f"{_row_name(row)}: {len(ids)} tokens with the media expanded, more than max_length={self.max_length}; "
                "raise max_length or lower the processor's fps / resolution (media tokens are never cut)"
            )
        score_index = self.digits.find_score(
            ids, score_text, start=prompt_len, context=_row_name(row), tokenizer=self.tokenizer
        )
        out = {"input_ids": ids, "labels": [-100] * prompt_len + ids[prompt_len:], "score_index": score_index}
        unbatched = sorted(set(inputs) - {"input_ids", "attention_mask", *MEDIA_BATCH_KEYS})
        if unbatched:  # e.g. an audio processor's input_features: dropping them would feed placeholders only
            raise UnsupportedSetting(
                f"the processor {type(self.processor).__name__} returned {unbatched}, which the RAFT collator does not "
                f"batch yet (it batches {', '.join(MEDIA_BATCH_KEYS)}); use --input-source features"
            )
        out.update({k: inputs[k] for k in MEDIA_BATCH_KEYS if inputs.get(k) is not None})
        return out

    def encode_prompt(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """Ids up to (excluding) the integer digit, with the row's media tensors."""
        out = self.encode(row, PLACEHOLDER_SCORE)
        media = {k: v for k, v in out.items() if k in MEDIA_BATCH_KEYS}
        return {"input_ids": out["input_ids"][: out["score_index"]], **media}
