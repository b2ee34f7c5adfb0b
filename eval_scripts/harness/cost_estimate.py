"""Token and cost estimates of a run before it is sent (`mis-bench run --dry-run`).

Prompt tokens are counted with the model's own tokenizer when it is on this machine
(`transformers.AutoTokenizer.from_pretrained(model, local_files_only=True)`, the chat template
applied as a server would); nothing is downloaded, and a plain install without transformers works.
Otherwise the estimate is characters / 4, OpenAI's rule of thumb for English text (about 4
characters per token; the MIS-Bench prompts are English). Images, audio and video attached to a
prompt are not in the estimate (providers price them separately); their number is reported.

With a cached-input price (`--price-cached-in`, the provider's price for cached prompt tokens) the estimate
also prices the prompt tokens a prefix cache can reuse: the run's prompt tokens times the share of prompt
characters that repeat the start of the previous request (`ordering.PrefixStats.reused_chars_share`, in the
order the run sends them). That is the most a cache holding the previous request saves; providers cache in
blocks and from a minimum length (OpenAI: prompts of 1,024 tokens or more), so the real bill lies between the
two figures.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mis_bench_dataset.dimensions import prompt_style

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
CHARS_ESTIMATOR = f"characters/{CHARS_PER_TOKEN}"


def expected_completion_tokens(style: str) -> int:
    """Completion tokens per request when the cache has no answers of the setting to learn it from: the
    style's `expected_completion_tokens` (`mis_bench_dataset.dimensions.PROMPT_STYLE_TABLE`)."""
    return prompt_style(style).expected_completion_tokens


@dataclass(frozen=True)
class TokenCount:
    tokens: int
    estimator: str  # "tokenizer:<model>" or CHARS_ESTIMATOR


# What AutoTokenizer reads first: a model with none of them in a folder or the Hub cache has no local tokenizer.
TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "config.json")


def tokenizer_files_here(model: str) -> bool:
    """Whether `model` may have a tokenizer on this machine: a folder, or a Hub id with one of TOKENIZER_FILES in
    the local Hub cache. Asked before importing transformers (seconds on a laptop), which a hosted model's name
    (`gpt-5.4`) never needs."""
    if Path(model).expanduser().is_dir():
        return True
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # transformers' own lookup decides
        return True
    try:
        return any(isinstance(try_to_load_from_cache(model, name), str) for name in TOKENIZER_FILES)
    except ValueError:  # not a repo id (HFValidationError): no Hub cache entry either
        return False


def local_tokenizer(model: str):
    """The model's tokenizer when it is available locally, else None (never downloads)."""
    if not tokenizer_files_here(model):
        logger.debug("no local tokenizer files for %r; estimating tokens as %s", model, CHARS_ESTIMATOR)
        return None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    try:
        return AutoTokenizer.from_pretrained(model, local_files_only=True)
    except Exception as err:  # noqa: BLE001 - any failure (not cached, not a repo id, bad files): fall back
        logger.debug("no local tokenizer for %r (%s); estimating tokens as %s", model, err, CHARS_ESTIMATOR)
        return None


def token_estimator(tokenizer, model: str) -> str:
    """How `count_prompt_tokens` counts: `tokenizer:<model>` or `characters/4`."""
    return CHARS_ESTIMATOR if tokenizer is None else f"tokenizer:{model}"


def count_prompt_tokens(texts: Sequence[str], tokenizer=None, model: str = "") -> TokenCount:
    """Prompt tokens of user messages `texts`: with `tokenizer` (chat template when it has one), else chars/4."""
    if tokenizer is None:
        return TokenCount(math.ceil(sum(len(text) for text in texts) / CHARS_PER_TOKEN), CHARS_ESTIMATOR)
    if not texts:
        return TokenCount(0, token_estimator(tokenizer, model))
    if getattr(tokenizer, "chat_template", None):
        texts = [
            tokenizer.apply_chat_template(
                [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False
            )
            for text in texts
        ]
        encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    else:
        encoded = tokenizer(list(texts))["input_ids"]
    return TokenCount(sum(len(ids) for ids in encoded), token_estimator(tokenizer, model))


def cost(
    prompt_tokens: int,
    completion_tokens: int,
    price_in: float | None,
    price_out: float | None,
    *,
    cached_tokens: int = 0,
    price_cached_in: float | None = None,
) -> float | None:
    """Cost at `price_in` / `price_out` per million tokens, `cached_tokens` of the prompt tokens at
    `price_cached_in` when it is given; None unless `price_in` and `price_out` are given."""
    if price_in is None or price_out is None:
        return None
    cached = min(cached_tokens, prompt_tokens) if price_cached_in is not None else 0
    prompt_cost = (prompt_tokens - cached) * price_in + cached * (price_cached_in or 0.0)
    return (prompt_cost + completion_tokens * price_out) / 1_000_000


def cached_prompt_tokens(prompt_tokens: int, reused_chars_share: float | None) -> int:
    """Prompt tokens a prefix cache can reuse: `prompt_tokens` x the share of characters repeating the previous
    request's start (tokens taken as proportional to characters)."""
    return round(prompt_tokens * (reused_chars_share or 0.0))
