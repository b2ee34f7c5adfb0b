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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from eval_scripts.answers.answer_status import FINISH_LENGTH
from eval_scripts.answers.expected_score import score_span
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.backend_options import backend_option
from eval_scripts.backends.base import Backend, BackendUnavailable, Completion, DecodingConfig
from mis_bench_dataset.dimensions import PAPER_PROMPT_STYLE, SCORE_REGRESSION
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.toolkit.errors import UsageError, require
from mis_bench_dataset.toolkit.options import positive_int
from mis_icc_metric.expected_record import ExpectedScore

logger = logging.getLogger(__name__)

_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json", "video_preprocessor_config.json")


@dataclass(frozen=True)
class TransformersOptions:
    """The transformers backend's options (`mis-bench run -M KEY=VALUE`; some also have their own `run` flag)."""

    batch_size: int = field(
        default=8,
        metadata=backend_option("prompts per forward pass", flag="--batch-size", parse=positive_int),
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = field(
        default="auto",
        metadata=backend_option("the model's dtype (auto: the checkpoint's)", changes_answers=True, flag="--dtype"),
    )
    device: str = field(default="auto", metadata=backend_option("auto, cpu, cuda, cuda:1, ...", flag="--device"))
    trust_remote_code: bool = field(
        default=False, metadata=backend_option("run the model repository's own code (only for repositories you trust)")
    )
    share_prefix: bool = field(
        default=True,
        metadata=backend_option(
            "the expected readout reads a batch's shared prompt prefix once (false: the plain path, docs/readouts.md)"
        ),
    )
    final_score: Literal["declared", "prefilled"] = field(
        default="declared",
        metadata=backend_option(
            "where a CoT answer's expected score is read: declared (after the 'Final score: ' the answer writes; none "
            "written, no score) or prefilled (CoT-RAFT's readout: the analysis cut before any final score of its "
            "own, then 'Final score: ' prefilled and its digits read, as `train.py` predicts; `run` sets it for a "
            "CoT-RAFT model folder)",
            changes_answers=True,
        ),
    )


class TransformersBackend(Backend):
    name = "transformers"
    Options = TransformersOptions
    keeps_request_order = False  # sorts prompts by length into padded batches itself; batches stay as they were
    picks_video_frames = True

    def __init__(
        self,
        model: str,
        options: TransformersOptions | None = None,
        *,
        model_obj=None,
        processor_obj=None,
        video_sampling: VideoSampling | None = None,
        **fields,
    ):
        """`options` (default: the defaults), then `fields` naming options (`TransformersBackend(m, device="cpu")`);
        `model_obj` / `processor_obj` a model already loaded, `video_sampling` the run's frame rule."""
        options = replace(options or TransformersOptions(), **fields)
        super().__init__(model, options)
        batch_size, dtype, device = options.batch_size, options.dtype, options.device
        trust_remote_code = options.trust_remote_code
        self.share_prefix = options.share_prefix  # the expected readout's shared-prefix path (`_prefix_sharing`)
        self.final_score = options.final_score  # CoT: read at the answer's own final score, or one prefilled
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
        # A regression head (`mis-bench train --head regression`) scores through its one output only.
        self.regression = model_obj is None and _is_regression_folder(local)
        try:
            if self.regression:
                from raft_trainer.regression import load_regression_model

                self.processor = None
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(model, trust_remote_code=trust_remote_code)
                self.hf_model = load_regression_model(
                    model, self.tokenizer, dtype=torch_dtype, trust_remote_code=trust_remote_code
                )
            elif use_processor:
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
        if self.regression or decoding.score_from == SCORE_REGRESSION:
            yield from self._complete_regression(prompts, decoding)
            return
        if decoding.expected:
            yield from self._complete_expected(prompts, decoding)
            return
        for answer in self._generate(prompts, decoding):
            yield answer.completion() if isinstance(answer, _Generated) else answer

    def _generate(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[_Generated | Completion]:
        """generate() in padded batches of similar length; one `_Generated` per prompt, or the failed
        `Completion` of a prompt the run's deadline left unanswered (`Backend.deadline_failure`)."""
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
            if mask is None:
                mask = torch.ones_like(inputs["input_ids"])
            for row, index in enumerate(indices):
                yield _Generated(
                    index,
                    texts[row],
                    ended[row],
                    new_tokens[row, : completion_tokens[row]].tolist(),
                    inputs["input_ids"][row][mask[row].bool()].tolist(),
                )

    # -- the expected-score readout (docs/readouts.md) ---------------------------------------------
    def _complete_expected(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        """The expected score from the model's digit distributions, through `raft_trainer.predict.read_digit_scores`
        (the trainer's own path, shared prefix included). direct / paper: no generate() at all, one pass over the
        prompt and its answer prefix (`paper`: MIS-RAFT's "The score prediction is: "), one cached step over
        [digit, '.']; the text kept beside is the greedy digits. cot: the answer is generated, then a second,
        prefilled pass reads the final score's position after the reasoning."""
        from raft_trainer.data import COMPLETION_PREFIX, prefilled_prompt_ids
        from raft_trainer.digits import DigitTokens

        with_media = [p for p in prompts if p.images or p.audio_path or p.video_path]
        if with_media:
            raise UsageError(
                "--score-from expected with the transformers backend reads text prompts only; "
                f"{len(with_media)} prompt(s) of this setting carry images, audio or video",
                where="--score-from",
                hint="use --score-from text for this setting, or an openai-compatible server that returns logprobs",
            )
        digits = DigitTokens.from_tokenizer(self.tokenizer)
        if decoding.style == "cot":
            yield from self._cot_expected(prompts, decoding, digits)
            return
        prefix = COMPLETION_PREFIX if decoding.style == PAPER_PROMPT_STYLE else ""
        by_dimension: dict[str, list[int]] = {}
        for index, prompt in enumerate(prompts):
            by_dimension.setdefault(prompt.dimension, []).append(index)
        groups = list(by_dimension.values())
        # One read per dimension, whose rows share the rubric prefix; the run's deadline is checked between them.
        for number, indices in enumerate(groups):
            if self.past_deadline():
                yield from (self.deadline_failure(i) for rest in groups[number:] for i in rest)
                return
            ids = [
                prefilled_prompt_ids(self.tokenizer, digits, self._messages(prompts[i], []), prefix, self.processor)
                for i in indices
            ]
            readout = self._read(ids, [prompts[i].dimension for i in indices], digits)
            for row, (index, prompt_ids) in enumerate(zip(indices, ids, strict=True)):
                expected = readout.expected_score(row).as_record()
                text = f"{prefix}{int(readout.integer_digit[row])}.{int(readout.fraction_digit[row])}"
                n_prompt = len(prompt_ids)
                usage = {"prompt_tokens": n_prompt, "completion_tokens": 3, "total_tokens": n_prompt + 3}
                yield Completion(index, text, True, usage=usage, expected=expected)

    # -- the regression readout (`mis-bench train --head regression`) --------------------------------------------
    def _complete_regression(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        """The regression head's output on the prompt the expected readout reads (the answer's prefix included),
        as the trainer's `predict_scores` reads it (clipped to the scale; the raw output is kept as `head_output`);
        the text kept beside is the score to two decimals."""
        from raft_trainer.data import COMPLETION_PREFIX, prefilled_prompt_ids
        from raft_trainer.digits import DigitTokens
        from raft_trainer.predict import pad_token_id
        from raft_trainer.regression import clipped_outputs, read_regression_scores, regression_readout

        if not self.regression:
            raise UsageError(
                f"--score-from regression reads a regression head; {self.model!r} is a language model",
                where="--score-from",
                hint="use --score-from text or expected, or a folder `mis-bench train --head regression` wrote",
            )
        if decoding.score_from != SCORE_REGRESSION:
            raise UsageError(
                f"{self.model!r} is a regression head (mis-bench train --head regression): it writes no text and "
                "has no digit distribution",
                where="--score-from",
                hint="use --score-from regression",
            )
        if any(p.images or p.audio_path or p.video_path for p in prompts):
            raise UsageError(
                "the regression head reads text prompts only; this setting's prompts carry media",
                where="--score-from",
                hint="use the text setting or feature-derived descriptors",
            )
        digits = DigitTokens.from_tokenizer(self.tokenizer)
        prefix = COMPLETION_PREFIX if decoding.style == PAPER_PROMPT_STYLE else ""
        ids = [prefilled_prompt_ids(self.tokenizer, digits, self._messages(p, []), prefix) for p in prompts]
        for start in range(0, len(ids), self.batch_size):
            if self.past_deadline():
                yield from (self.deadline_failure(i) for i in range(start, len(ids)))
                return
            batch = ids[start : start + self.batch_size]
            outputs = read_regression_scores(self.hf_model, batch, pad_token_id(self.tokenizer), batch_size=len(batch))
            self.calls += len(batch)
            scores, clipped = regression_readout(outputs), clipped_outputs(outputs)
            for offset, (prompt_ids, score, output) in enumerate(zip(batch, scores, outputs, strict=True)):
                usage = {"prompt_tokens": len(prompt_ids), "completion_tokens": 0, "total_tokens": len(prompt_ids)}
                record = {"score": float(score), "head_output": float(output), "readout": SCORE_REGRESSION}
                record["clipped"] = bool(clipped[offset])
                text = f"{score:.2f}"
                yield Completion(start + offset, text, True, finish_reason="stop", usage=usage, expected=record)

    def _cot_expected(self, prompts, decoding, digits) -> Iterator[Completion]:
        outcomes = list(self._generate(prompts, decoding))
        yield from (o for o in outcomes if not isinstance(o, _Generated))  # left unanswered by the run's deadline
        answers = sorted((o for o in outcomes if isinstance(o, _Generated)), key=lambda a: a.index)
        if self.final_score == "prefilled":
            read_at = [_prefilled_final_score(self.tokenizer, answer) for answer in answers]
        else:
            read_at = [_declared_final_score(self.tokenizer, digits, answer) for answer in answers]
        readable = [n for n, ids in enumerate(read_at) if not isinstance(ids, str)]
        readout = None
        if readable:
            readout = self._read(
                [read_at[n] for n in readable], [prompts[answers[n].index].dimension for n in readable], digits
            )
        for n, (answer, ids) in enumerate(zip(answers, read_at, strict=True)):
            completion = answer.completion()
            if isinstance(ids, str):
                completion.expected = ExpectedScore.missing(ids).as_record()
                yield completion
                continue
            completion.expected = readout.expected_score(readable.index(n)).as_record()
            if self.final_score == "prefilled":  # the answer's end is the readout's, by design: not a cut answer
                completion.expected["final_score"] = "prefilled"
                completion.finish_reason = "stop"
            yield completion

    def _read(self, ids: list[list[int]], groups: list[str], digits):
        from raft_trainer.predict import ReadoutOptions, pad_token_id, read_digit_scores

        self.calls += len(ids)
        return read_digit_scores(
            self.hf_model,
            ids,
            digits,
            pad_token_id(self.tokenizer),
            groups=groups,
            readout=ReadoutOptions(
                batch_size=self.batch_size, share_prefix=self._prefix_sharing(), show_progress=False
            ),
        )

    # -- the shared prefix of a dimension's prompts (issue 29; docs/readouts.md) ---------------------------
    def _prefix_sharing(self) -> bool:
        """Whether a group's common prefix is computed once and its KV cache continued by each row's rest.

        The version-2 templates put the task text, the dimension's rubric and few-shot examples before the
        transcript, so the rows of one dimension (the groups `_complete_expected` reads) share most of their
        tokens. Exact for text decoders with 1-D positions (explicit position ids after the prefix); a model with
        multimodal RoPE (Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni: a `vision_config` or `audio_config`) takes the plain
        path, one pass over each whole prompt (`raft_trainer.predict.read_digit_scores` decides).
        """
        return self.share_prefix

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


@dataclass
class _Generated:
    """One generated answer: its text (special tokens skipped), whether it ended by itself, its new token ids
    (up to and including the end of sequence) and the prompt's ids (padding removed)."""

    index: int
    text: str
    stopped: bool
    new_ids: list[int]
    prompt_ids: list[int]

    def completion(self) -> Completion:
        n_new, n_prompt = len(self.new_ids), len(self.prompt_ids)
        usage = {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new}
        finish = "stop" if self.stopped else FINISH_LENGTH
        return Completion(self.index, self.text.strip(), True, finish_reason=finish, usage=usage)


def _is_regression_folder(folder: Path) -> bool:
    if not folder.is_dir():
        return False
    from raft_trainer.regression import is_regression_folder

    return is_regression_folder(folder)


def _declared_final_score(tokenizer, digits, answer: _Generated) -> list[int] | str:
    """The ids a prefilled pass reads the answer's own final score after (prompt and answer up to the score's
    integer digit), or why there is none."""
    position = _final_score_token(tokenizer, digits, answer)
    return position if isinstance(position, str) else answer.prompt_ids + answer.new_ids[:position]


def _prefilled_final_score(tokenizer, answer: _Generated) -> list[int]:
    """CoT-RAFT's readout (`raft_trainer.rationales.predict_cot_scores`): the answer's analysis cut before any final
    score of its own (`rationale_of`), then the line `cot_completion` writes up to the score's digits."""
    from raft_trainer.cot import cot_completion, rationale_of

    tail = cot_completion(rationale_of(answer.text), "")
    return answer.prompt_ids + tokenizer(tail, add_special_tokens=False)["input_ids"]


def _final_score_token(tokenizer, digits, answer: _Generated) -> int | str:
    """Index in the new tokens of the final score's integer digit (what a prefilled pass predicts), or why none."""
    text = tokenizer.decode(answer.new_ids, skip_special_tokens=True)
    span = score_span(text, "cot")  # also where a value out of the scale stands: the distribution decides
    if isinstance(span, str):
        return span
    low, high = 0, len(answer.new_ids)
    while low < high:  # the fewest tokens whose text reaches past the digit
        middle = (low + high) // 2
        if len(tokenizer.decode(answer.new_ids[: middle + 1], skip_special_tokens=True)) > span[0]:
            high = middle
        else:
            low = middle + 1
    if low >= len(answer.new_ids) or answer.new_ids[low] != digits.digit_ids[int(text[span[0]])]:
        return "the score's integer digit is not a token of its own"
    return low
