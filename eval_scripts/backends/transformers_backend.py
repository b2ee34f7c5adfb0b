"""Local Hugging Face models: chat LMs (tokenizer + causal LM) and processor-based MLLMs.

Generation is batched (prompts sorted by length to limit padding, left padding) and
greedy unless the decoding config asks for a temperature. A model folder with a
processor that has an image processor, video processor or audio feature extractor
is loaded with `AutoProcessor` + `AutoModelForImageTextToText` and declares those
inputs; a plain chat LM declares text only. Each answer says why it ended (`finish_reason`:
"stop" at an end-of-sequence token, "length" at max_new_tokens) and how many tokens it used.
Models with their own loading code (e.g. Qwen2.5-Omni) can be passed in already built
(`model_obj`, `processor_obj`).

Raw video is sampled here, not by the processor: `video_sampling` (`mis_bench_dataset.protocol.VideoSampling`;
default the "fixed" rule, 32 frames at `linspace(0, n - 1, 32)`, 20480x28x28 pixels for the clip, 16x28x28 at
least per frame; `--video-sampling paper` the frames of the authors' runs) picks the frames
(`raft_trainer.video`, shared with the trainer) and sizes them as the rule says. A prompt's `system` text goes
first, as a system message.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

from eval_scripts.backends.base import Backend, BackendUnavailable, Completion, DecodingConfig
from eval_scripts.cache import FINISH_LENGTH
from eval_scripts.prompts import Prompt
from mis_bench_dataset.errors import require
from mis_bench_dataset.protocol import VideoSampling

logger = logging.getLogger(__name__)

_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json", "video_preprocessor_config.json")


class TransformersBackend(Backend):
    name = "transformers"
    keeps_request_order = False  # sorts prompts by length into padded batches itself; batches stay as they were

    def __init__(
        self,
        model: str,
        *,
        batch_size: int = 8,
        dtype: str = "auto",
        device: str = "auto",
        model_obj=None,
        processor_obj=None,
        trust_remote_code: bool = False,
        video_sampling: VideoSampling | None = None,
        **_ignored,
    ):
        super().__init__(model)
        self.video_sampling = video_sampling or VideoSampling()
        torch = require("torch", "train", "the transformers backend")
        transformers = require("transformers", "train", "the transformers backend")

        self.batch_size = max(1, int(batch_size))
        torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype, None)
        if torch_dtype is None:
            raise ValueError(f"unknown --dtype {dtype!r}; use auto, float32, bfloat16 or float16")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        local = Path(model)
        use_processor = processor_obj is not None or (
            local.is_dir() and any((local / name).is_file() for name in _PROCESSOR_FILES)
        )
        try:
            if use_processor:
                self.processor = processor_obj or transformers.AutoProcessor.from_pretrained(
                    model, trust_remote_code=trust_remote_code
                )
                self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
                self.hf_model = model_obj or transformers.AutoModelForImageTextToText.from_pretrained(
                    model, dtype=torch_dtype, trust_remote_code=trust_remote_code
                )
            else:
                self.processor = None
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
                self.hf_model = model_obj or transformers.AutoModelForCausalLM.from_pretrained(
                    model, dtype=torch_dtype, trust_remote_code=trust_remote_code
                )
        except OSError as err:
            raise BackendUnavailable(f"cannot load model {model!r} with transformers: {err}") from err
        self.hf_model.to(device).eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        kinds = {"text"}
        if self.processor is not None:
            if getattr(self.processor, "image_processor", None) is not None:
                kinds.add("image")
            if getattr(self.processor, "video_processor", None) is not None:
                kinds.add("video")
            if getattr(self.processor, "feature_extractor", None) is not None:
                kinds.add("audio")
        self.modalities = frozenset(kinds)
        self.calls = 0  # prompts sent to generate()

    def _messages(self, prompt: Prompt, video_metadata: list[dict]) -> list[dict]:
        """The chat of one prompt; a raw video is decoded and sampled here, its metadata appended to
        `video_metadata` (in the order the processor meets the videos)."""
        if self.processor is None:
            system = [{"role": "system", "content": prompt.system}] if prompt.system is not None else []
            return [*system, {"role": "user", "content": prompt.text}]
        parts: list[dict] = []
        if prompt.video_path:
            from raft_trainer.video import load_sampled_video

            frames, metadata = load_sampled_video(prompt.video_path, self.video_sampling)
            parts.append({"type": "video", "video": frames})
            video_metadata.append(metadata)
        if prompt.audio_path:
            parts.append({"type": "audio", "path": prompt.audio_path})
        if prompt.images:
            from PIL import Image

            parts += [{"type": "image", "image": Image.open(io.BytesIO(img)).convert("RGB")} for img in prompt.images]
        parts.append({"type": "text", "text": prompt.text})
        user = {"role": "user", "content": parts}
        if prompt.system is None:
            return [user]
        return [{"role": "system", "content": [{"type": "text", "text": prompt.system}]}, user]

    def _encode(self, batch: Sequence[Prompt]):
        video_metadata: list[dict] = []
        conversations = [self._messages(p, video_metadata) for p in batch]
        if self.processor is None:
            texts = [
                self.tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in conversations
            ]
            return self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        extra = {}
        if video_metadata:
            from raft_trainer.video import video_kwargs

            extra["processor_kwargs"] = video_kwargs(self.video_sampling, video_metadata)
        return self.processor.apply_chat_template(
            conversations,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            return_tensors="pt",
            padding=True,
            **extra,
        )

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        import torch

        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i].text))
        sampling = decoding.temperature > 0
        generation_kwargs = {
            "max_new_tokens": decoding.max_new_tokens,
            "do_sample": sampling,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if sampling:
            torch.manual_seed(decoding.seed)
            generation_kwargs.update(temperature=decoding.temperature, top_p=decoding.top_p)
        for start in range(0, len(order), self.batch_size):
            indices = order[start : start + self.batch_size]
            if self.past_deadline():  # checked between batches: a batch in progress finishes
                yield from (self.deadline_failure(i) for i in order[start:])
                return
            inputs = self._encode([prompts[i] for i in indices]).to(self.device)
            with torch.inference_mode():
                output = self.hf_model.generate(**inputs, **generation_kwargs)
            self.calls += len(indices)
            new_tokens = output[:, inputs["input_ids"].shape[1] :]
            texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
            ended, completion_tokens = self._endings(new_tokens)
            mask = inputs.get("attention_mask")
            prompt_tokens = (
                mask.sum(dim=1).tolist() if mask is not None else [inputs["input_ids"].shape[1]] * len(indices)
            )
            for index, text, stopped, n_new, n_prompt in zip(
                indices, texts, ended, completion_tokens, prompt_tokens, strict=True
            ):
                usage = {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new}
                yield Completion(
                    index, text.strip(), True, finish_reason="stop" if stopped else FINISH_LENGTH, usage=usage
                )

    def _endings(self, new_tokens) -> tuple[list[bool], list[int]]:
        """Per sequence: did it end with an end-of-sequence token, and how many tokens did it generate.

        A sequence without one ran into max_new_tokens (`generate` stops a batch only when every
        sequence has ended or the limit is reached); padding after an ended sequence is not counted.
        """
        import torch

        eos = self.hf_model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        eos_ids = torch.tensor([eos] if isinstance(eos, int) else list(eos), device=new_tokens.device)
        is_eos = torch.isin(new_tokens, eos_ids)
        ended = is_eos.any(dim=1)
        first_eos = is_eos.int().argmax(dim=1)
        lengths = torch.where(ended, first_eos + 1, torch.full_like(first_eos, new_tokens.shape[1]))
        return ended.tolist(), lengths.tolist()

    def close(self) -> None:
        self.hf_model = None
