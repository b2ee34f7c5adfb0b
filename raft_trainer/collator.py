"""Pads tokenized scoring rows and tells the loss where the score's digits are.

For a completion "... is: 3.4", with the integer digit at token index s, the logits at position
s - 1 predict the integer digit and those at s + 1 (the '.') predict the fractional digit, which is
thereby teacher-forced on the gold integer digit. The collator knows each row's padding, so it
computes these positions for left and right padding alike, and the positions of every completion
token (for the `ce` part), as a short list of sequence positions `logits_keep` shared by the
batch: the model computes logits only there (`logits_to_keep`), never the full (B, L, V).
With left padding (the default) every row's completion ends at the same place, so `logits_keep`
is just the completion length; right padding works too, at the cost of a longer list.

Raw media (a vision-language model's processor output, e.g. Qwen2.5-VL's `pixel_values_videos`
and `video_grid_thw`) rides along: each row's tensor lists its items (patches, videos) along the
first axis and the batch concatenates them in row order, as the processors do for a batch; the
model matches them to the media placeholder tokens in that order. Left or right padding does not
change the order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

# Processor outputs concatenated along the first axis (patches / videos / images) in row order.
MEDIA_BATCH_KEYS = (
    "pixel_values_videos",
    "video_grid_thw",
    "second_per_grid_ts",
    "pixel_values",
    "image_grid_thw",
)
RAFT_BATCH_KEYS = ("score_positions", "logits_keep", "keep_index", "keep_labels", "score", "dimension_index")


@dataclass
class RAFTDataCollator:
    """Pads encoded scoring rows into a batch and adds where each score's digits are, so the loss reads only those
    logits: for a completion "... is: 3.4" the logits before the integer digit and those at the '.' (the fraction,
    teacher-forced on the gold integer), computed for left and right padding alike, as one short list of
    positions shared by the batch (`logits_to_keep`: the model never computes the full logits)."""

    pad_token_id: int
    padding_side: str = "left"
    pad_to_multiple_of: int | None = None
    # Raw-media rows (video_path / audio_path) arrive unencoded and are encoded here, batch by batch
    # (raft_trainer.raw_media.RawMediaEncoder): their pixel tensors are too large to store per row.
    encoder: Any = None

    def __post_init__(self) -> None:
        if self.padding_side not in ("left", "right"):
            raise ValueError(f"padding_side must be 'left' or 'right', got {self.padding_side!r}")

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if examples and "input_ids" not in examples[0]:
            if self.encoder is None:
                raise ValueError("rows without input_ids reached the collator and it has no encoder for raw-media rows")
            examples = [self.encoder.encode_training_row(ex) for ex in examples]
        lengths = np.array([len(ex["input_ids"]) for ex in examples])
        width = int(lengths.max())
        if self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        batch = len(examples)
        input_ids = np.full((batch, width), self.pad_token_id, dtype=np.int64)
        labels = np.full((batch, width), -100, dtype=np.int64)
        attention_mask = np.zeros((batch, width), dtype=np.int64)
        offsets = width - lengths if self.padding_side == "left" else np.zeros_like(lengths)
        for row, (ex, offset, n) in enumerate(zip(examples, offsets, lengths, strict=True)):
            input_ids[row, offset : offset + n] = ex["input_ids"]
            labels[row, offset : offset + n] = ex["labels"]
            attention_mask[row, offset : offset + n] = 1

        score_index = np.array([ex["score_index"] for ex in examples]) + offsets
        # logits at position t predict token t + 1
        score_positions = np.stack([score_index - 1, score_index + 1], axis=1)
        trained = labels[:, 1:] != -100  # (B, L-1): position t predicts a trained token
        keep = np.flatnonzero(trained.any(axis=0) | np.isin(np.arange(width - 1), score_positions))
        keep_labels = np.where(trained[:, keep], labels[:, keep + 1], -100)
        keep_index = np.searchsorted(keep, score_positions)

        out = {
            "input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy(attention_mask),
            "labels": torch.from_numpy(labels),
            "score_positions": torch.from_numpy(score_positions),
            "logits_keep": torch.from_numpy(keep),
            "keep_index": torch.from_numpy(keep_index),
            "keep_labels": torch.from_numpy(keep_labels),
            "score": torch.tensor([float(ex["score"]) for ex in examples], dtype=torch.float32),
            "dimension_index": torch.tensor([int(ex.get("dimension_index", -1)) for ex in examples]),
        }
        out.update(_media_batch(examples))
        return out


def _media_batch(examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
    """Concatenate the rows' media tensors; a key must be on every row or on none (named if not)."""
    out = {}
    for key in MEDIA_BATCH_KEYS:
        present = [key in ex and ex[key] is not None for ex in examples]
        if not any(present):
            continue
        if not all(present):
            rows = [i for i, p in enumerate(present) if not p]
            raise ValueError(
                f"batch rows {rows} lack `{key}` that other rows carry: mixing rows with and without raw media "
                "in one batch is not supported (keep one input source per run)"
            )
        out[key] = torch.cat([torch.as_tensor(ex[key]) for ex in examples], dim=0)
    return out
