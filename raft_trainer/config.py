"""`RAFTConfig`: TRL's `SFTConfig` plus the MIS-RAFT objective's settings, with the paper's defaults."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from trl import SFTConfig

logger = logging.getLogger(__name__)

LOSS_TYPES = ("raft", "ce", "raft+ce")


@dataclass
class RAFTConfig(SFTConfig):
    """Configuration for [`RAFTTrainer`]; paper Appendix D.1 values as defaults (2 epochs, lr 2e-5,
    per-device batch 2, max length 512).

    Args:
        loss_type: `"raft"` (eq. 12, the paper's MIS-RAFT), `"ce"` (token-level cross-entropy on the
            completion, the paper's "standard fine-tuning" baseline) or `"raft+ce"` (raft + `ce_weight` * ce).
            Replaces `SFTConfig.loss_type` ("nll"/"dft"), which RAFTTrainer does not use.
        ce_weight: weight of the cross-entropy term in `"raft+ce"`.
        renormalize_digits: softmax over the ten digit logits (default) instead of the paper's
            full-vocabulary softmax restricted to the digits, which biases scores toward 0.
        modality: input setting, one of `mis_bench_dataset.dimensions.MODALITY_SETTINGS`. `"text"`:
            rubric + transcript. The audio/video settings need each row's `media_context`
            (`raft_trainer.media`: feature-derived descriptors on the public release).
        input_source: for the audio/video settings, `"features"` (rows carry a `media_context`,
            tokenized like text) or `"raw"` (rows carry `video_path` / `audio_path`; the processor
            given as `processing_class` loads the media, batch by batch in the collator).
        padding_side: `"left"` (default: every row's completion is aligned, so the model computes
            logits at the fewest positions) or `"right"`.
    """

    loss_type: str = field(default="raft", metadata={"help": "raft | ce | raft+ce", "choices": list(LOSS_TYPES)})
    ce_weight: float = field(default=1.0, metadata={"help": "Weight of the cross-entropy term for raft+ce."})
    renormalize_digits: bool = field(
        default=True, metadata={"help": "Renormalise the ten digit probabilities (False: paper's literal form)."}
    )
    modality: str = field(default="text", metadata={"help": "text | audio+text | video+text | audio+video+text"})
    input_source: str = field(default="features", metadata={"help": "features | raw (audio/video settings)"})
    padding_side: str = field(default="left", metadata={"help": "Padding side of the RAFT collator."})
    max_length: int | None = field(default=512, metadata={"help": "Maximum tokens per row (paper: 512)."})
    num_train_epochs: float = field(default=2.0, metadata={"help": "Paper: 2 epochs."})
    per_device_train_batch_size: int = field(default=2, metadata={"help": "Paper: 2 per device."})

    def __post_init__(self) -> None:
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"RAFTConfig.loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.ce_weight < 0:
            raise ValueError(f"ce_weight must be >= 0, got {self.ce_weight}")
        from mis_bench_dataset.inputs import setting_media

        setting_media(self.modality)
        if self.input_source not in ("features", "raw"):
            raise ValueError(f"RAFTConfig.input_source must be 'features' or 'raw', got {self.input_source!r}")
        if self.input_source == "raw" and self.modality == "text":
            raise ValueError("RAFTConfig.input_source='raw' needs an audio/video modality, got 'text'")
        if self.input_source == "raw":  # rows are encoded in the collator; TRL must not tokenize them
            self.dataset_kwargs = {**(self.dataset_kwargs or {}), "skip_prepare_dataset": True}
        if self.padding_side not in ("left", "right"):
            raise ValueError(f"padding_side must be 'left' or 'right', got {self.padding_side!r}")
        if self.packing or self.padding_free:
            raise ValueError("MIS-RAFT reads per-row score positions: packing and padding_free are not supported")
        if self.bf16 is None and not _bf16_available(self.use_cpu):
            logger.info("bf16 is not available on this machine: training in float32")
            self.bf16 = False
        super().__post_init__()

    @property
    def loss_weights(self) -> tuple[float, float]:
        """(weight of the RAFT squared error, weight of the completion cross-entropy)."""
        return {"raft": (1.0, 0.0), "ce": (0.0, 1.0), "raft+ce": (1.0, self.ce_weight)}[self.loss_type]


def _bf16_available(use_cpu: bool) -> bool:
    import torch

    return (not use_cpu) and torch.cuda.is_available() and torch.cuda.is_bf16_supported()
