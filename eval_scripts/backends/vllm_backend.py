"""vLLM's offline engine (GPU only), imported lazily.

Prompts go through `LLM.chat` with OpenAI-style content parts, so images, audio
and video reach multimodal models the way vLLM's server would pass them. All prompts go to one `LLM.chat` call
(vLLM's scheduler forms the batches) unless `batch_size` (`--batch-size`) cuts them into calls of that size. Like the
openai backend it assumes text only until told (`modalities`, ``--backend-modalities``).
The expected-score readout asks for the top `TOP_LOGPROBS` candidates of every generated token
(`SamplingParams(logprobs=...)`) and reads them as the openai backend reads a server's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from eval_scripts.answers.expected_score import TOP_LOGPROBS, TokenChoice, expected_from_tokens
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.backend_options import backend_option
from eval_scripts.backends.base import (
    Backend,
    BackendUnavailable,
    Completion,
    DecodingConfig,
    declared_kinds_field,
    declared_modalities,
)
from mis_bench_dataset.toolkit.options import positive_int, unit_interval


@dataclass(frozen=True)
class VLLMOptions:
    """The vllm backend's options (`mis-bench run -M KEY=VALUE`; some also have their own `run` flag): the engine's
    settings that `vllm.LLM` takes."""

    dtype: str = field(
        default="auto",
        metadata=backend_option(
            "the model's dtype: auto, float32, bfloat16, float16", changes_answers=True, flag="--dtype"
        ),
    )
    batch_size: int | None = field(
        default=None,
        metadata=backend_option(
            "prompts per LLM.chat call (none: all in one, batched by vLLM's scheduler)",
            flag="--batch-size",
            parse=positive_int,
        ),
    )
    modalities: tuple[str, ...] = declared_kinds_field()
    trust_remote_code: bool = field(
        default=False, metadata=backend_option("run the model repository's own code (only for repositories you trust)")
    )
    tensor_parallel_size: int = field(
        default=1,
        metadata=backend_option(
            "GPUs the model is split over (the order of the sums, and so the answers, may change)",
            changes_answers=True,
            parse=positive_int,
        ),
    )
    max_model_len: int | None = field(
        default=None,
        metadata=backend_option(
            "the longest prompt plus answer in tokens (none: the model's; vLLM refuses a longer prompt, never cuts it)",
            parse=positive_int,
        ),
    )
    gpu_memory_utilization: float = field(
        default=0.9, metadata=backend_option("share of the GPU's memory vLLM may take", parse=unit_interval)
    )
    quantization: str | None = field(
        default=None,
        metadata=backend_option(
            "vLLM's quantization method (awq, gptq, fp8, ...; none: the checkpoint's)", changes_answers=True
        ),
    )


class VLLMBackend(Backend):
    name = "vllm"
    Options = VLLMOptions

    def __init__(self, model: str, options: VLLMOptions | None = None, **fields):
        """`options` (default: the defaults), then `fields` naming options (`VLLMBackend(m, max_model_len=2048)`)."""
        options = replace(options or VLLMOptions(), **fields)
        super().__init__(model, options)
        try:
            import vllm
        except ImportError as err:
            raise BackendUnavailable(
                "the vllm backend needs the `vllm` package (GPU only): pip install vllm; "
                "or use --backend transformers, or --backend openai against a `vllm serve` endpoint"
            ) from err
        self.modalities = declared_modalities(options.modalities)
        self._vllm = vllm
        engine = {
            "tensor_parallel_size": options.tensor_parallel_size,
            "gpu_memory_utilization": options.gpu_memory_utilization,
        }
        engine.update({k: getattr(options, k) for k in ("max_model_len", "quantization") if getattr(options, k)})
        self.llm = vllm.LLM(model=model, dtype=options.dtype, trust_remote_code=options.trust_remote_code, **engine)
        self.batch_size = options.batch_size  # None: every prompt in one `LLM.chat` call, batched by vLLM's scheduler
        self.calls = 0

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        from eval_scripts.backends.openai_backend import chat_messages  # same messages as the HTTP API

        params = self._vllm.SamplingParams(
            temperature=decoding.temperature,
            top_p=decoding.top_p,
            max_tokens=decoding.max_new_tokens,
            seed=decoding.seed,
            **({"logprobs": TOP_LOGPROBS} if decoding.expected else {}),
        )
        size = self.batch_size or max(1, len(prompts))
        for start in range(0, len(prompts), size):
            if self.past_deadline():  # checked between batches: a batch in progress finishes
                yield from (self.deadline_failure(i) for i in range(start, len(prompts)))
                return
            batch = prompts[start : start + size]
            conversations = [chat_messages(p) for p in batch]
            outputs = self.llm.chat(conversations, params, use_tqdm=False)
            self.calls += len(batch)
            for offset, output in enumerate(outputs):
                generated = output.outputs[0]
                prompt_tokens = len(output.prompt_token_ids or ())
                usage = {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": len(generated.token_ids),
                    "total_tokens": prompt_tokens + len(generated.token_ids),
                }
                expected = None
                if decoding.expected:
                    expected = expected_from_tokens(vllm_tokens(generated), decoding.style or "direct").as_record()
                yield Completion(
                    start + offset,
                    generated.text.strip(),
                    True,
                    finish_reason=generated.finish_reason,
                    usage=usage,
                    expected=expected,
                )


def vllm_tokens(generated) -> list[TokenChoice]:
    """The generated positions of a vLLM `CompletionOutput` with `logprobs`: per position a dict token id ->
    `Logprob(logprob, rank, decoded_token)` holding the top-k and the sampled token."""
    if generated.logprobs is None:
        raise BackendUnavailable("vLLM returned no logprobs although they were asked for (SamplingParams.logprobs)")
    tokens = []
    for token_id, position in zip(generated.token_ids, generated.logprobs, strict=True):
        chosen = position[token_id]
        top = tuple((entry.decoded_token or "", float(entry.logprob)) for entry in position.values())
        tokens.append(TokenChoice(chosen.decoded_token or "", float(chosen.logprob), top))
    return tokens
