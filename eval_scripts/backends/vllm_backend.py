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

from eval_scripts.answers.expected_score import TOP_LOGPROBS, TokenChoice, expected_from_tokens
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.base import (
    DEFAULT_DECLARED_KINDS,
    Backend,
    BackendUnavailable,
    Completion,
    DecodingConfig,
    declared_modalities,
)


class VLLMBackend(Backend):
    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        modalities: Sequence[str] = DEFAULT_DECLARED_KINDS,
        batch_size: int | None = None,
        trust_remote_code: bool = False,
        **engine_options,
    ):
        super().__init__(model)
        try:
            import vllm
        except ImportError as err:
            raise BackendUnavailable(
                "the vllm backend needs the `vllm` package (GPU only): pip install vllm; "
                "or use --backend transformers, or --backend openai against a `vllm serve` endpoint"
            ) from err
        self.modalities = declared_modalities(modalities)
        self._vllm = vllm
        options = {k: v for k, v in engine_options.items() if k in ("tensor_parallel_size", "max_model_len")}
        self.llm = vllm.LLM(model=model, dtype=dtype, trust_remote_code=trust_remote_code, **options)
        self.batch_size = batch_size  # None: every prompt in one `LLM.chat` call, batched by vLLM's scheduler
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
