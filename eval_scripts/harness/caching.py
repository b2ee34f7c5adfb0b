"""`CachingBackend`: any backend behind the append-only response cache (lmms-eval's `CachingLM` idea).

The runner asks the wrapper for every prompt of a setting; answers the cache already holds
come back at once (`Completion.cached`), the rest go to the wrapped backend, and every new
outcome is appended to the cache the moment it arrives, so a killed run loses nothing. Failed
and truncated outcomes (`eval_scripts.harness.readouts.answer_status`) are recorded but never served as
answers: the next run asks again. An expected-score readout is kept in the record (`expected`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from eval_scripts.backends.base import Backend, Completion, DecodingConfig
from eval_scripts.cache import ResponseCache, cache_key
from eval_scripts.harness.readouts import answer_status
from eval_scripts.prompts import Prompt


class CachingBackend(Backend):
    """Serve cached answers, call `inner` for the rest, record every new outcome."""

    def __init__(self, inner: Backend, cache: ResponseCache, setting: Mapping[str, Any]) -> None:
        super().__init__(inner.model)
        self.inner = inner
        self.cache = cache
        self.setting = dict(setting)
        self.name = inner.name
        self.modalities = inner.modalities

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

    def pending(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> list[int]:
        """Indices of the prompts the cache has no answer for."""
        return [i for i, prompt in enumerate(prompts) if self.key(prompt, decoding) not in self.cache]

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        keys = [self.key(prompt, decoding) for prompt in prompts]
        pending = []
        for index, key in enumerate(keys):
            record = self.cache.get(key)
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
                )
        if not pending:
            return
        for completion in self.inner.complete([prompts[i] for i in pending], decoding):
            index = pending[completion.index]
            prompt = prompts[index]
            record = {
                "key": keys[index],
                "status": answer_status(completion.ok, completion.finish_reason, decoding),
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
            self.cache.append(record)
            completion.index = index
            yield completion

    def close(self) -> None:
        self.inner.close()
