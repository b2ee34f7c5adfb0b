"""Scoring rows, toy encodings and stand-in processors for the raft_trainer tests (no downloads).

The tiny model and tokenizer are the package's own (`raft_trainer.tiny`, also used by the docs' demo).
"""

from __future__ import annotations

import random
from pathlib import Path

from raft_trainer.tiny import WORDS
from raft_trainer.tiny import tiny_model as make_model  # noqa: F401 (the tests' name for it)
from raft_trainer.tiny import tiny_tokenizer as make_tokenizer


def toy_rows(n: int, seed: int = 0, dimensions=("empathy",)) -> list[dict]:
    """Scoring rows whose gold score is a function of the text: 1.0 + 0.5 * (number of 'warm')."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        k = rng.randint(0, 8)
        words = ["warm"] * k + [rng.choice(WORDS[1:]) for _ in range(8 - k)]
        rng.shuffle(words)
        dim = dimensions[i % len(dimensions)]
        rows.append(
            {
                "video_id": f"AB{i:04d}_T1_Stim{i % 3}",
                "clinician": f"AB{i:04d}",
                "time_point": "T1",
                "stimulus": f"Stim{i % 3}",
                "dimension": dim,
                "transcript": " ".join(words),
                "score": 1.0 + 0.5 * k,
            }
        )
    return rows


def toy_dataset(n: int, seed: int = 0, **kwargs):
    import datasets

    return datasets.Dataset.from_list(toy_rows(n, seed, **kwargs))


def short_encoded_toy(tokenizer, n: int, seed: int = 0):
    """Pre-encoded toy rows with a one-line prompt (~30 tokens instead of the rubric's hundreds),
    so objective comparisons train many steps quickly; same columns as `prepare_raft_dataset`."""
    import datasets

    from raft_trainer.digits import DigitTokens

    digits = DigitTokens.from_tokenizer(tokenizer)
    return datasets.Dataset.from_list(
        [_encode_toy_row(tokenizer, digits, row, row["transcript"]) for row in toy_rows(n, seed)]
    )


def _encode_toy_row(tokenizer, digits, row: dict, user_text: str, **extras) -> dict:
    """One toy row encoded as `prepare_raft_dataset` would: a one-turn chat prompt with `user_text`,
    the completion trained, the score's integer digit located; `extras` (e.g. media tensors) ride along."""
    from raft_trainer.data import completion_text
    from raft_trainer.digits import format_score

    prompt = f"<|im_start|>user\n{user_text}<|im_end|>\n<|im_start|>assistant\n"
    score_text = format_score(row["score"])
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(completion_text(score_text) + "<|im_end|>\n", add_special_tokens=False)["input_ids"]
    ids = prompt_ids + completion_ids
    return {
        "video_id": row["video_id"],
        "dimension": row["dimension"],
        "input_ids": ids,
        "labels": [-100] * len(prompt_ids) + completion_ids,
        "score_index": digits.find_score(ids, score_text, start=len(prompt_ids)),
        "score": float(score_text),
        "dimension_index": 5,
        **extras,
    }


VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|video_pad|>", "<|image_pad|>")
PATCH_DIM = 3 * 2 * 14 * 14  # channels x temporal patch x patch x patch (Qwen2.5-VL's defaults)


def make_vl_tokenizer():
    """The test tokenizer plus Qwen2.5-VL's vision placeholder tokens."""
    tokenizer = make_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": list(VISION_TOKENS)})
    return tokenizer


def make_vl_model(tokenizer, seed: int = 0, hidden: int = 32):
    """A tiny randomly initialised Qwen2_5_VLForConditionalGeneration (1 vision block, 2 text layers)."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS}
    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=len(tokenizer),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]},
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
            bos_token_id=None,
            tie_word_embeddings=True,
        ),
        vision_config=dict(
            depth=1,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=hidden,
            patch_size=14,
            temporal_patch_size=2,
            spatial_merge_size=2,
            window_size=56,
            fullatt_block_indexes=[0],
            in_channels=3,
        ),
        video_token_id=ids["<|video_pad|>"],
        image_token_id=ids["<|image_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    return Qwen2_5_VLForConditionalGeneration(config)


def video_encoded_toy(tokenizer, n: int, seed: int = 0, grids=((1, 4, 4), (2, 4, 8))):
    """Pre-encoded toy rows with a hand-made video input, as a Qwen2.5-VL processor would lay them out:
    the user turn holds <|vision_start|>, one <|video_pad|> per merged patch, <|vision_end|>; the row
    carries `pixel_values_videos` (patches, PATCH_DIM) and `video_grid_thw` (1, 3)."""
    import numpy as np

    from raft_trainer.digits import DigitTokens

    digits = DigitTokens.from_tokenizer(tokenizer)
    rng = np.random.default_rng(seed)
    encoded = []
    for i, row in enumerate(toy_rows(n, seed)):
        t, h, w = grids[i % len(grids)]
        video = f"<|vision_start|>{'<|video_pad|>' * (t * h * w // 4)}<|vision_end|>"
        encoded.append(
            _encode_toy_row(
                tokenizer,
                digits,
                row,
                video + row["transcript"],
                pixel_values_videos=rng.standard_normal((t * h * w, PATCH_DIM)).astype("float32"),
                video_grid_thw=np.array([[t, h, w]], dtype=np.int64),
            )
        )
    return encoded


def make_fake_video_processor(tokenizer):
    """A stand-in for Qwen2.5-VL's processor (whose video path needs torchvision, not importable here):
    same `apply_chat_template` contract. A video entry (already sampled frames, (T, H, W, 3)) renders as
    <|vision_start|><|video_pad|><|vision_end|>; with `tokenize=True` the frames are cut into 14x14 patches
    in pairs of frames, as the real processor does (without its resize), and the placeholder is expanded
    to one token per merged 2x2 patch. A list of conversations is a batch, left-padded. Every tokenized
    conversation's `processor_kwargs`, frames and rendered text are recorded (`calls`, `videos_seen`, `texts`)
    so tests can check what the real processor would be told."""
    import numpy as np
    import torch
    from transformers import BatchFeature, ProcessorMixin

    def patchify(frames: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        if len(frames) % 2:  # the temporal patch: pad with the last frame, as Qwen2-VL's processor
            frames = np.concatenate([frames, frames[-1:]])
        t, h, w = len(frames) // 2, frames.shape[1] // 14, frames.shape[2] // 14
        pixels = torch.from_numpy(frames[:, : h * 14, : w * 14].astype("float32") / 255.0)
        patches = pixels.reshape(t, 2, h, 14, w, 14, 3).permute(0, 2, 4, 6, 1, 3, 5).reshape(t * h * w, PATCH_DIM)
        return patches, torch.tensor([[t, h, w]])

    class FakeVideoProcessor(ProcessorMixin):
        def __init__(self, tokenizer):
            super().__init__(tokenizer)
            self.video_processor = "fake: patchifies sampled frames"
            self.calls: list[dict] = []
            self.videos_seen: list[np.ndarray] = []
            self.texts: list[str] = []

        def apply_chat_template(
            self,
            conversation,
            tokenize=False,
            add_generation_prompt=False,
            return_dict=False,
            return_tensors=None,
            processor_kwargs=None,
            padding=False,
            **kwargs,
        ):
            if conversation and isinstance(conversation[0], list):  # a batch: left-padded, media in row order
                outs = [
                    self.apply_chat_template(c, tokenize, add_generation_prompt, processor_kwargs=processor_kwargs)
                    for c in conversation
                ]
                if not tokenize:
                    return outs
                return self._left_pad(outs)
            flat, videos = [], []
            for message in conversation:
                parts = []
                for item in message["content"]:
                    if item["type"] == "video":
                        videos.append(patchify(np.asarray(item["video"])))
                        if tokenize:
                            self.videos_seen.append(np.asarray(item["video"]))
                        parts.append("<|vision_start|><|video_pad|><|vision_end|>")
                    else:
                        parts.append(item["text"])
                flat.append({"role": message["role"], "content": "".join(parts)})
            text = self.tokenizer.apply_chat_template(flat, tokenize=False, add_generation_prompt=add_generation_prompt)
            if not tokenize:
                return text
            self.calls.append(processor_kwargs or {})
            self.texts.append(text)
            pieces = text.split("<|video_pad|>")
            expanded = pieces[0] + "".join(
                "<|video_pad|>" * int(grid.prod() // 4) + piece
                for (_, grid), piece in zip(videos, pieces[1:], strict=True)
            )
            ids = self.tokenizer(expanded, add_special_tokens=False)["input_ids"]
            out = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
            if videos:
                out["pixel_values_videos"] = torch.cat([patches for patches, _ in videos])
                out["video_grid_thw"] = torch.cat([grid for _, grid in videos])
            return BatchFeature(out)

        def _left_pad(self, outs: list) -> BatchFeature:
            width = max(o["input_ids"].shape[1] for o in outs)
            left = [(width - o["input_ids"].shape[1], 0) for o in outs]
            pad = self.tokenizer.pad_token_id
            pairs = list(zip(outs, left, strict=True))
            ids = torch.stack([torch.nn.functional.pad(o["input_ids"][0], w, value=pad) for o, w in pairs])
            mask = torch.stack([torch.nn.functional.pad(o["attention_mask"][0], w) for o, w in pairs])
            batch = {"input_ids": ids, "attention_mask": mask}
            for key in ("pixel_values_videos", "video_grid_thw"):
                if key in outs[0]:
                    batch[key] = torch.cat([o[key] for o in outs])
            return BatchFeature(batch)

    return FakeVideoProcessor(tokenizer)


def write_frame_archive(path: Path, n_frames: int, height: int = 28, width: int = 28, fps: float = 25.0, seed: int = 0):
    """A "video" as pre-extracted frames (`raft_trainer.video` reads `.npz` frame archives): frame k has
    the value k % 256 in its first pixel's red channel (so tests can tell which frames were sampled), noise
    elsewhere."""
    import numpy as np

    frames = np.random.default_rng(seed).integers(0, 256, size=(n_frames, height, width, 3), dtype=np.uint8)
    frames[:, 0, 0, 0] = np.arange(n_frames) % 256
    np.savez(path, frames=frames, fps=np.float64(fps))
    return path


def raw_video_rows(tmp_path: Path, n: int, seed: int = 0, sizes=((40, 28, 28), (75, 28, 56))) -> list[dict]:
    """Toy scoring rows with a `video_path` to a frame archive ((n_frames, height, width) cycling over `sizes`)."""
    rows = []
    for i, row in enumerate(toy_rows(n, seed)):
        n_frames, height, width = sizes[i % len(sizes)]
        path = write_frame_archive(tmp_path / f"{row['video_id']}.npz", n_frames, height, width, seed=seed + i)
        rows.append({**row, "video_path": str(path)})
    return rows


def short_raft_config(output_dir, **overrides):
    """A RAFTConfig for a two-step CPU run on a tiny model (sequential data, no saving, no reporting)."""
    from raft_trainer import RAFTConfig

    base = dict(
        max_steps=2,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        max_length=None,
        train_sampling_strategy="sequential",
    )
    return RAFTConfig(str(output_dir), **{**base, **overrides})


def cpu_config(tmp_path, **kwargs):
    """A `RAFTConfig` for a few quiet CPU steps in `tmp_path/out` (no saving, no reporting, seed 0); `kwargs` win."""
    from raft_trainer import RAFTConfig

    base = dict(
        output_dir=str(tmp_path / "out"),
        report_to="none",
        use_cpu=True,
        max_length=None,
        save_strategy="no",
        disable_tqdm=True,
        logging_steps=1,
        seed=0,
    )
    return RAFTConfig(**{**base, **kwargs})


# A short fit on the toy task that moves a random tiny model: 20 steps of 8 rows at a constant rate of 1e-2.
TOY_FIT = dict(max_steps=20, per_device_train_batch_size=8, learning_rate=1e-2, lr_scheduler_type="constant")


def toy_fit_config(tmp_path, **kwargs):
    """`cpu_config` with `TOY_FIT` (logged once, at the end); `kwargs` win."""
    return cpu_config(tmp_path, **{**TOY_FIT, "logging_steps": TOY_FIT["max_steps"], **kwargs})
