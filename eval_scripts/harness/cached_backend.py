"""`CachingBackend`: any backend behind the append-only response cache (lmms-eval's `CachingLM` idea).

The runner asks the wrapper for every prompt of a setting; answers the cache already holds
come back at once (`Completion.cached`), the rest go to the wrapped backend, and every new
outcome is appended to the cache the moment it arrives, so a killed run loses nothing. Failed
and truncated outcomes (`eval_scripts.answers.answer_status.outcome_status`) are recorded but never served as
answers: the next run asks again. A cached answer is served only for the row it names (video,
dimension, prompt hash), and a new answer that could not be served later (`cache.answer_problem`:
a NaN finish reason, a lone surrogate, negative token counts, a non-finite expected score) becomes a
failed, malformed one first. An expected-score readout is kept in the record (`expected`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from eval_scripts.answers.answer_status import FAILURE_MALFORMED, answer_problem, outcome_status, usage_problem
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.base import Backend, Completion, DecodingConfig
from eval_scripts.harness.response_cache import ResponseCache, cache_key
from mis_bench_dataset.toolkit.text_safety import unicode_text


class CachingBackend(Backend):
    """Serve cached answers, call `inner` for the rest, record every new outcome."""

    def __init__(self, inner: Backend, cache: ResponseCache, setting: Mapping[str, Any]) -> None:
        super().__init__(inner.model)
        self.inner = inner
        self.cache = cache
        self.setting = dict(setting)
        self.name = inner.name
        self.modalities = inner.modalities
        self.options = inner.options

    def key(self, prompt: Prompt, decoding: DecodingConfig) -> str:
        return cache_key(
            backend=self.inner.name,
            model=self.inner.model,
            setting=self.setting,
            prompt_hash=prompt.prompt_hash,
            video_id=prompt.video_id,
            dimension=prompt.dimension,
            decoding=decoding.as_dict(),
        )

    def cached(self, prompt: Prompt, key: str) -> dict | None:
        """The cache's answer for this prompt's row, checked against the row (`ResponseCache.answer_for`)."""
        return self.cache.answer_for(
            key, video_id=prompt.video_id, dimension=prompt.dimension, prompt_hash=prompt.prompt_hash
        )

    def pending(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> list[int]:
        """Indices of the prompts the cache has no answer for (a conflict raises here, before any call)."""
        return [i for i, prompt in enumerate(prompts) if self.cached(prompt, self.key(prompt, decoding)) is None]

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        keys = [self.key(prompt, decoding) for prompt in prompts]
        pending = []
        for index, key in enumerate(keys):
            record = self.cached(prompts[index], key)
            if record is None:
                pending.append(index)
            else:
                yield Completion(
                    index,
                    record["response"],
                    True,
                    attempts=0,
                    cached=True,
                    finish_reason=record.get("finish_reason"),
                    usage=record.get("usage"),
                    expected=record.get("expected"),
                    served_model=record.get("served_model"),
                )
        if not pending:
            return
        for completion in self.inner.complete([prompts[i] for i in pending], decoding):
            index = pending[completion.index]
            prompt = prompts[index]
            sanitise(completion)
            record = {
                "key": keys[index],
                "status": outcome_status(
                    completion.ok, completion.finish_reason, score_from=decoding.score_from, style=decoding.style
                ),
                "backend": self.inner.name,
                "model": self.inner.model,
                "setting": self.setting,
                "prompt_hash": prompt.prompt_hash,
                "video_id": prompt.video_id,
                "dimension": prompt.dimension,
                "decoding": decoding.as_dict(),
                "response": completion.text,
                "error": completion.error,
                "finish_reason": completion.finish_reason,
                "usage": completion.usage,
                "attempts": completion.attempts,
                "latency_s": round(completion.latency_s, 4),
                "created_at": time.time(),
            }
            if completion.expected is not None:
                record["expected"] = completion.expected
            if completion.served_model is not None:  # the model the server says answered
                record["served_model"] = completion.served_model
            self.cache.append(record)
            completion.index = index
            yield completion

    def close(self) -> None:
        self.inner.close()


def sanitise(completion: Completion) -> Completion:
    """Make an answer that must not be cached (`cache.answer_problem`) a failed, malformed one, in place.

    Whatever the backend: text with a lone surrogate, a finish reason that is not text (NaN), token
    counts that are negative, fractional or absurd, an expected-score readout holding NaN. The row fails
    this run (exit 3) and is asked again by the next; no such value ever reaches the cache, so no cached
    record can break a later run.
    """
    if completion.error is not None:
        completion.error = unicode_text(str(completion.error))  # a server's message may hold a lone surrogate
    if completion.served_model is not None:
        completion.served_model = unicode_text(str(completion.served_model))
    if not completion.ok:  # kept for the record only: nothing in it may break the cache line
        if completion.text is not None and answer_problem(completion.text, None, None):
            completion.text = None
        if usage_problem(completion.usage):
            completion.usage = None
        if not isinstance(completion.finish_reason, str | None):
            completion.finish_reason = None
        if answer_problem("", None, None, completion.expected):
            completion.expected = None
        return completion
    problem = answer_problem(completion.text, completion.finish_reason, completion.usage, completion.expected)
    if problem is not None:
        completion.ok = False
        completion.text, completion.finish_reason, completion.usage = None, None, None
        completion.expected = None
        completion.error = f"{FAILURE_MALFORMED}: {problem}"
        completion.failure = FAILURE_MALFORMED
    return completion
