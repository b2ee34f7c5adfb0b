"""Expected-score inference: the value RAFT trains, read from the digit distributions, no text.

`predict_scores` runs one batched forward pass over each prompt (ending just before the score's
integer digit) for the integer-digit distribution, then one cached step over [digit, '.'] for the
fractional digit:

* `method="greedy"` (default): s = E[int] + 0.1 E[frac | argmax int], eq. 11 with the integer digit
  chosen as in training's teacher forcing (2 short steps per batch);
* `method="exact"`: s = sum_{i=1..5} p(i) (i + 0.1 E[frac | i]) / sum_{i=1..5} p(i), the expectation
  of the one-decimal score under the model restricted to the valid integer digits 1-5.

`generate_scores` is the baseline a user would otherwise run: greedy `generate()` plus parsing.
"""

from __future__ import annotations

import inspect
import logging
import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from raft_trainer.data import ScoringEncoder
from raft_trainer.digits import DigitTokens
from raft_trainer.loss import digit_probabilities, expected_digit

logger = logging.getLogger(__name__)

VALID_INTEGER_DIGITS = (1, 2, 3, 4, 5)
_NUMBER = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)")


def _left_pad(sequences: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, width - len(seq) :] = torch.as_tensor(seq, dtype=torch.long)
        mask[row, width - len(seq) :] = 1
    return ids.to(device), mask.to(device)


def _cache_kwarg(model) -> str:
    """transformers 5.x renamed `past_key_values` to `cache`; older models keep the old name."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"


def _returned_cache(out):
    return getattr(out, "cache", None) or getattr(out, "past_key_values", None)


def _next_digit_probs(model, ids, mask, cache, prefix_ids, prefix_mask, digit_ids, renormalize) -> torch.Tensor:
    """Digit probabilities after appending `ids`; reuses the prefix's KV cache when there is one."""
    if cache is not None:
        out = model(
            input_ids=ids, attention_mask=torch.cat([mask, torch.ones_like(ids)], dim=1),
            use_cache=True, logits_to_keep=1, **{_cache_kwarg(model): cache},
        )
    else:  # models without a cache: a full pass over prefix + appended tokens
        out = model(
            input_ids=torch.cat([prefix_ids, ids], dim=1),
            attention_mask=torch.cat([prefix_mask, torch.ones_like(ids)], dim=1), logits_to_keep=1,
        )
    return digit_probabilities(out.logits[:, -1], digit_ids, renormalize)


@torch.inference_mode()
def predict_scores(
    model,
    tokenizer_or_processor,
    rows: Iterable[Mapping[str, Any]],
    *,
    batch_size: int = 8,
    method: str = "greedy",
    max_length: int | None = None,
    renormalize: bool = True,
    digit_tokens: DigitTokens | None = None,
    show_progress: bool = True,
) -> np.ndarray:
    """Expected score of every scoring row (same order), shape (len(rows),)."""
    if method not in ("greedy", "exact"):
        raise ValueError(f"method must be 'greedy' or 'exact', got {method!r}")
    tokenizer = getattr(tokenizer_or_processor, "tokenizer", tokenizer_or_processor)
    digits = digit_tokens or DigitTokens.from_tokenizer(tokenizer)
    encoder = ScoringEncoder(tokenizer, digits, max_length)
    rows = list(rows)
    prompts = [encoder.encode_prompt(row) for row in rows]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device = next(model.parameters()).device
    digit_ids = digits.tensor(device)
    point = torch.tensor([digits.point_id], device=device)
    was_training = model.training
    model.eval()
    order = np.argsort([len(p) for p in prompts], kind="stable")  # similar lengths share a batch
    scores = np.empty(len(rows), dtype=np.float64)
    starts = range(0, len(rows), batch_size)
    for start in tqdm(starts, desc="predict_scores", disable=not show_progress or len(starts) < 2):
        index = order[start : start + batch_size]
        ids, mask = _left_pad([prompts[i] for i in index], pad_id, device)
        out = model(input_ids=ids, attention_mask=mask, use_cache=True, logits_to_keep=1)
        p_int = digit_probabilities(out.logits[:, -1], digit_ids, renormalize)  # (B, 10)
        cache = _returned_cache(out)
        if method == "greedy":
            chosen = digit_ids[p_int.argmax(dim=-1)]
            appended = torch.stack([chosen, point.expand_as(chosen)], dim=1)
            p_frac = _next_digit_probs(model, appended, mask, cache, ids, mask, digit_ids, renormalize)
            batch_scores = expected_digit(p_int) + 0.1 * expected_digit(p_frac)
        else:
            k = len(VALID_INTEGER_DIGITS)
            ints = torch.tensor(VALID_INTEGER_DIGITS, device=device)
            if cache is not None:
                cache.batch_repeat_interleave(k)
            appended = torch.stack([digit_ids[ints].repeat(len(index)), point.repeat(len(index) * k)], dim=1)
            mask_k, ids_k = mask.repeat_interleave(k, dim=0), ids.repeat_interleave(k, dim=0)
            p_frac = _next_digit_probs(model, appended, mask_k, cache, ids_k, mask_k, digit_ids, renormalize)
            e_frac = expected_digit(p_frac).view(len(index), k)
            weights = p_int[:, ints]
            weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
            batch_scores = (weights * (ints.to(e_frac.dtype) + 0.1 * e_frac)).sum(dim=-1)
        scores[index] = batch_scores.double().cpu().numpy()
    model.train(was_training)
    return scores


def parse_first_number(text: str) -> float | None:
    """First number in a generated answer (baseline parser for `generate_scores`)."""
    match = _NUMBER.search(text)
    return float(match.group(1)) if match else None


@torch.inference_mode()
def generate_scores(
    model,
    tokenizer_or_processor,
    rows: Iterable[Mapping[str, Any]],
    *,
    batch_size: int = 8,
    max_new_tokens: int = 16,
    max_length: int | None = None,
    show_progress: bool = True,
) -> tuple[list[float | None], list[str]]:
    """Greedy `generate()` from the chat prompt, then parse the first number: the usual alternative."""
    tokenizer = getattr(tokenizer_or_processor, "tokenizer", tokenizer_or_processor)
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), max_length)
    rows = list(rows)
    prompts = []
    for row in rows:
        encoded = encoder.encode(row, "0.0")
        prompts.append(encoded["input_ids"][: encoded["labels"].count(-100)])
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device = next(model.parameters()).device
    texts: list[str] = [""] * len(rows)
    order = np.argsort([len(p) for p in prompts], kind="stable")
    starts = range(0, len(rows), batch_size)
    for start in tqdm(starts, desc="generate", disable=not show_progress or len(starts) < 2):
        index = order[start : start + batch_size]
        ids, mask = _left_pad([prompts[i] for i in index], pad_id, device)
        out = model.generate(
            input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
            pad_token_id=pad_id, eos_token_id=tokenizer.eos_token_id,
        )
        for row, seq in zip(index, out[:, ids.size(1) :]):
            texts[row] = tokenizer.decode(seq, skip_special_tokens=True)
    return [parse_first_number(t) for t in texts], texts


def prediction_records(rows: Iterable[Mapping[str, Any]], scores: Sequence[float]) -> list[dict[str, Any]]:
    """Long-form prediction records (contract item 2) for `write_predictions`."""
    return [
        {"video_id": row["video_id"], "dimension": row["dimension"], "prediction": float(score)}
        for row, score in zip(rows, scores)
    ]
