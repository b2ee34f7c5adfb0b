"""Expected-score inference: the value RAFT trains, read from the digit distributions, no text.

`predict_scores` runs one batched forward pass over each prompt (ending just before the score's
integer digit) for the integer-digit distribution, then one cached step over [digit, '.'] for the
fractional digit:

* `method="greedy"` (default): s = E[int] + 0.1 E[frac | argmax int], eq. 11 with the integer digit
  chosen as in training's teacher forcing (2 short steps per batch);
* `method="exact"`: s = sum_{i=1..5} p(i) (i + 0.1 E[frac | i]) / sum_{i=1..5} p(i), the expectation
  of the one-decimal score under the model restricted to the valid integer digits 1-5.

`generate_scores` is the baseline a user would otherwise run: greedy `generate()`, each answer read by the
harness's parser g (`mis_icc_metric.score_parser.parse_score`, the one parser of harness and trainer).
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from mis_bench_dataset.dimensions import canonical_prompt_style
from mis_bench_dataset.toolkit.progress import progress, step
from mis_icc_metric.expected_record import ExpectedScore
from mis_icc_metric.score_parser import parse_score
from raft_trainer.config import REGRESSION_HEAD, RAFTConfig
from raft_trainer.data import ScoringEncoder
from raft_trainer.digits import DigitTokens
from raft_trainer.loss import digit_probabilities, expected_digit

logger = logging.getLogger(__name__)

VALID_INTEGER_DIGITS = (1, 2, 3, 4, 5)
PREDICT_METHODS = ("greedy", "exact")


@dataclass(frozen=True)
class ReadoutOptions:
    """How the score's digits are read from a model, `batch_size` prompts at a time: `method` "greedy" (the greedy
    integer digit, then the fractional digit's expectation after it) or "exact" (every valid integer digit
    weighted by its probability); `renormalize` the digit probabilities over the ten digit tokens
    (`predict_scores` takes it from the `RAFTConfig` the model was trained with); `share_prefix` (text models): the
    common prefix of a group's prompts is computed once; `show_progress`: a progress bar."""

    batch_size: int = 8
    method: str = "greedy"
    renormalize: bool = True
    share_prefix: bool = True
    show_progress: bool = True


DEFAULT_READOUT = ReadoutOptions()  # the default of every `readout=` parameter


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


def _next_logits(model, appended, state) -> torch.Tensor:
    """Next-token logits (B, V) after appending `appended` (B, 2) to each row, reusing the KV cache."""
    mask = torch.cat([state["mask"], torch.ones_like(appended)], dim=1)
    if state["cache"] is None:  # models without a cache: a full pass over prefix + appended tokens
        out = model(input_ids=torch.cat([state["ids"], appended], dim=1), attention_mask=mask, logits_to_keep=1)
    else:
        positions = None
        if state["last_position"] is not None:
            positions = state["last_position"][:, None] + torch.arange(1, appended.size(1) + 1, device=appended.device)
        out = model(
            input_ids=appended,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{_cache_kwarg(model): state["cache"]},
        )
    return out.logits[:, -1]


def _repeat_state(state: dict, k: int) -> dict:
    if state["cache"] is not None:
        state["cache"].batch_repeat_interleave(k)
    return {
        "cache": state["cache"],
        "mask": state["mask"].repeat_interleave(k, dim=0),
        "ids": state["ids"].repeat_interleave(k, dim=0),
        "last_position": None if state["last_position"] is None else state["last_position"].repeat_interleave(k, dim=0),
    }


def _common_prefix_length(sequences: Sequence[Sequence[int]]) -> int:
    first = sequences[0]
    n = min(len(s) for s in sequences)
    for other in sequences[1:]:
        i = 0
        while i < n and other[i] == first[i]:
            i += 1
        n = i
    return n


def _can_share_prefix(model) -> bool:
    """Explicit 1-D position ids are exact for text decoders; multimodal RoPE (e.g. Qwen2.5-VL) is not."""
    config = getattr(model, "config", None)
    return (
        config is not None
        and getattr(config, "vision_config", None) is None
        and getattr(config, "audio_config", None) is None
    )


MIN_SHARED_PREFIX = 16


@torch.inference_mode()
def predict_scores(
    model,
    processing_class,
    rows: Iterable[Mapping[str, Any]],
    config: RAFTConfig | None = None,
    *,
    readout: ReadoutOptions = DEFAULT_READOUT,
    digit_tokens: DigitTokens | None = None,
) -> np.ndarray:
    """Expected score of every scoring row (same order), shape (len(rows),), with the prompts `config` describes
    (the `RAFTConfig` the model was trained with: its `modality`, `input_source`, `prompt_style`, `max_length`,
    `renormalize_digits` and raw-video sampling; default: RAFTConfig's defaults without a `max_length`).

    `readout`: how the digits are read (`ReadoutOptions`; its `renormalize` is the config's `renormalize_digits`).
    With `share_prefix` (text models), rows of one dimension share the system + rubric prefix: its
    KV cache is computed once per dimension and only each row's transcript and tail are run, with
    explicit position ids so the result equals the unshared computation. With an audio/video
    `modality` every row must carry its `media_context` (raft_trainer.media), placed after the transcript;
    with the input source "raw" (given, or "auto" resolved from the rows) the rows' `video_path` / `audio_path`
    go through the processor instead (`_predict_raw`: two full passes per batch, no KV cache or prefix sharing).
    With `config.head="regression"` the score is the sequence-classification head's output on the same prompt,
    clipped to [1, 5] (`raft_trainer.regression`; `method` and `share_prefix` do not apply).
    """
    method, batch_size = readout.method, readout.batch_size
    if method not in PREDICT_METHODS:
        raise ValueError(f"method must be {' or '.join(map(repr, PREDICT_METHODS))}, got {method!r}")
    config = config if config is not None else RAFTConfig(max_length=None)
    rows = list(rows)
    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    digits = digit_tokens or DigitTokens.from_tokenizer(tokenizer)
    readout = replace(readout, renormalize=config.renormalize_digits)
    if _input_source(config, rows) == "raw":
        from raft_trainer.raw_media import RawMediaEncoder

        encoder = RawMediaEncoder.for_setting(processing_class, digits, config.setting, max_length=config.max_length)
        return _predict_raw(model, encoder, rows, digits, readout=readout)
    encoder = ScoringEncoder.for_setting(tokenizer, digits, config.setting, max_length=config.max_length)
    prompts = [encoder.encode_prompt(row) for row in rows]
    if config.head == REGRESSION_HEAD:  # the head's output on the same prompt: no digits are read
        from raft_trainer.regression import clipped_outputs, read_regression_scores, regression_readout

        outputs = read_regression_scores(model, prompts, pad_token_id(tokenizer), batch_size=batch_size)
        n_clipped = int(clipped_outputs(outputs).sum())
        if n_clipped:  # said like the LM head's out-of-range scores: a clipped score is not the head's answer
            logger.warning(
                "%d of %d regression-head outputs lay outside [1, 5] and were clipped to the scale",
                n_clipped,
                len(rows),
            )
        return regression_readout(outputs)
    groups = [str(row.get("dimension")) for row in rows]
    return read_digit_scores(
        model,
        prompts,
        digits,
        pad_token_id(tokenizer),
        groups=groups,
        readout=readout,
    ).scores


def _input_source(config: RAFTConfig, rows: Sequence[Mapping[str, Any]]) -> str:
    """The config's input source; "auto" resolved from the rows as the trainer resolves it."""
    if config.input_source != "auto":
        return config.input_source
    from mis_bench_dataset.setting_inputs import resolve_input_source

    return resolve_input_source(config.modality, rows, "auto")


def pad_token_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


@dataclass(frozen=True)
class DigitReadout:
    """What `read_digit_scores` read per prompt: the expected score, the greedy digits, the digit expectations
    and the probability mass the ten digit tokens hold in the full softmax at the two positions (NaN / -1 where
    `method="exact"` has no single fractional position).

    A column per field of one answer's record (`mis_icc_metric.expected_record.ExpectedScore`, `score` as
    `scores`), plus the fractional digit: `expected_score(i)` is prompt i's record, the one the harness writes."""

    scores: np.ndarray
    integer_digit: np.ndarray
    fraction_digit: np.ndarray
    integer_expected: np.ndarray
    fraction_expected: np.ndarray
    integer_mass: np.ndarray
    fraction_mass: np.ndarray

    def expected_score(self, index: int) -> ExpectedScore:
        """Prompt `index`'s readout as one answer's record: the score as computed here, to the last bit (None
        outside [1, 5], never clipped), its integer digit, and both positions' expectation and digit mass."""
        return ExpectedScore.of(
            int(self.integer_digit[index]),
            (float(self.integer_expected[index]), float(self.integer_mass[index])),
            (float(self.fraction_expected[index]), float(self.fraction_mass[index])),
            score=float(self.scores[index]),
        )


def _digit_mass(logits: torch.Tensor, digit_ids: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits.float(), dim=-1).index_select(-1, digit_ids).sum(dim=-1)


@torch.inference_mode()
def read_digit_scores(
    model,
    prompts: Sequence[Sequence[int]],
    digits: DigitTokens,
    pad_id: int,
    *,
    groups: Sequence[str] | None = None,
    readout: ReadoutOptions = DEFAULT_READOUT,
) -> DigitReadout:
    """The expected score after each prompt (token ids ending just before the score's integer digit): the one
    expected-score path of `predict_scores` and of the harness's transformers backend.

    With `share_prefix` (text models), prompts of one group (`groups`, e.g. the dimension) share their common
    prefix: its KV cache is computed once per group and only each prompt's rest is run, with explicit position
    ids so the result equals the unshared computation (`readout`: how, `ReadoutOptions`).
    """
    method, batch_size, share_prefix, show_progress = (
        readout.method,
        readout.batch_size,
        readout.share_prefix,
        readout.show_progress,
    )
    if method not in PREDICT_METHODS:
        raise ValueError(f"method must be {' or '.join(map(repr, PREDICT_METHODS))}, got {method!r}")
    device = next(model.parameters()).device
    share_prefix = share_prefix and _can_share_prefix(model)
    was_training = model.training
    model.eval()
    members_of: dict[str, list[int]] = {}
    for i in range(len(prompts)):
        members_of.setdefault(groups[i] if share_prefix and groups is not None else "", []).append(i)
    columns = {name: np.full(len(prompts), np.nan) for name in DigitReadout.__dataclass_fields__}
    with step(
        "predict_scores", total=len(prompts), unit="row", show=show_progress and len(prompts) > batch_size
    ) as done:
        for members in members_of.values():
            shared, prefix_cache = _shared_prefix(model, prompts, members, device) if share_prefix else (0, None)
            members = sorted(members, key=lambda i: len(prompts[i]))  # similar lengths share a batch
            for start in range(0, len(members), batch_size):
                index = np.array(members[start : start + batch_size])
                batch = _read_batch(
                    model,
                    [prompts[i] for i in index],
                    digits,
                    pad_id,
                    prefix=(shared, prefix_cache),
                    readout=readout,
                    device=device,
                )
                for name, values in batch.items():
                    columns[name][index] = values
                done.update(len(index))
    model.train(was_training)
    return DigitReadout(**columns)


def _shared_prefix(model, prompts, members, device) -> tuple[int, Any]:
    """(length, KV cache) of the prefix the group's prompts share, when long enough to be worth it; else (0, None)."""
    if len(members) < 2:
        return 0, None
    shared = min(_common_prefix_length([prompts[i] for i in members]), min(len(prompts[i]) for i in members) - 1)
    if shared < MIN_SHARED_PREFIX:
        return 0, None
    prefix = torch.tensor([list(prompts[members[0]][:shared])], device=device)
    prefix_cache = _returned_cache(model(input_ids=prefix, use_cache=True, logits_to_keep=1))
    return (shared, prefix_cache) if prefix_cache is not None else (0, None)


def _read_batch(model, batch_prompts, digits, pad_id, *, prefix, readout: ReadoutOptions, device) -> dict:
    """One batch of `read_digit_scores`: a pass to the integer digit, then one cached step over [digit, '.'];
    `prefix`: (length, KV cache) of the prompts' shared prefix (`_shared_prefix`)."""
    shared, prefix_cache = prefix
    method, renormalize = readout.method, readout.renormalize
    digit_ids = digits.tensor(device)
    point = torch.tensor([digits.point_id], device=device)
    n = len(batch_prompts)
    ids, mask = _left_pad([p[shared:] for p in batch_prompts], pad_id, device)
    positions, cache, last_position = None, None, None
    if shared:
        cache = copy.deepcopy(prefix_cache)
        cache.batch_repeat_interleave(n)
        positions = (shared + mask.cumsum(dim=1) - 1).clamp(min=shared)
        last_position = positions[:, -1]
        mask = torch.cat([torch.ones(n, shared, dtype=mask.dtype, device=device), mask], dim=1)
    kwargs = {_cache_kwarg(model): cache} if cache is not None else {}
    out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1, **kwargs)
    int_logits = out.logits[:, -1]
    p_int = digit_probabilities(int_logits, digit_ids, renormalize)  # (B, 10)
    state = {"cache": _returned_cache(out), "mask": mask, "ids": ids, "last_position": last_position}
    if state["cache"] is None and shared:
        raise RuntimeError("the model returned no KV cache after a cached prefix; pass share_prefix=False")
    chosen = p_int.argmax(dim=-1)
    result = {
        "integer_digit": chosen,
        "integer_expected": expected_digit(p_int),
        "integer_mass": _digit_mass(int_logits, digit_ids),
    }
    if method == "greedy":
        appended = torch.stack([digit_ids[chosen], point.expand_as(chosen)], dim=1)
        frac_logits = _next_logits(model, appended, state)
        p_frac = digit_probabilities(frac_logits, digit_ids, renormalize)
        result.update(
            fraction_digit=p_frac.argmax(dim=-1),
            fraction_expected=expected_digit(p_frac),
            fraction_mass=_digit_mass(frac_logits, digit_ids),
            scores=expected_digit(p_int) + 0.1 * expected_digit(p_frac),
        )
    else:
        k = len(VALID_INTEGER_DIGITS)
        ints = torch.tensor(VALID_INTEGER_DIGITS, device=device)
        appended = torch.stack([digit_ids[ints].repeat(n), point.repeat(n * k)], dim=1)
        frac_logits = _next_logits(model, appended, _repeat_state(state, k))
        p_frac = digit_probabilities(frac_logits, digit_ids, renormalize)
        result.update(scores=_exact_score(p_int, p_frac, ints), fraction_digit=torch.full_like(chosen, -1))
    values = torch.stack([value.double() for value in result.values()]).cpu().numpy()  # one copy to the host
    return dict(zip(result, values, strict=True))


def _exact_score(p_int: torch.Tensor, p_frac: torch.Tensor, ints: torch.Tensor) -> torch.Tensor:
    """sum_i p(i) (i + 0.1 E[frac | i]) / sum_i p(i) over the valid integer digits `ints`; `p_frac` holds one
    row per (row, integer digit), in that order."""
    e_frac = expected_digit(p_frac).view(len(p_int), len(ints))
    weights = p_int[:, ints]
    weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(weights.dtype).tiny)
    return (weights * (ints.to(e_frac.dtype) + 0.1 * e_frac)).sum(dim=-1)


def _media_forward(model, encoded: list[dict], pad_id: int, device) -> torch.Tensor:
    """Last-position logits of left-padded prompts with their media tensors (concatenated in row order)."""
    from raft_trainer.collator import _media_batch

    ids, mask = _left_pad([e["input_ids"] for e in encoded], pad_id, device)
    media = {k: v.to(device) for k, v in _media_batch(encoded).items()}
    return model(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=1, **media).logits[:, -1]


def _predict_raw(model, encoder, rows, digits: DigitTokens, *, readout: ReadoutOptions) -> np.ndarray:
    """Expected scores of raw-media rows (`encoder`: a RawMediaEncoder): a pass to the integer digit, then a
    full pass over the prompt plus [digit, '.'] (the media are re-encoded by the model; multimodal RoPE forbids
    the text-only cache tricks)."""
    batch_size, method, renormalize, show_progress = (
        readout.batch_size,
        readout.method,
        readout.renormalize,
        readout.show_progress,
    )
    tokenizer = encoder.tokenizer
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    device = next(model.parameters()).device
    digit_ids = digits.tensor(device)
    was_training = model.training
    model.eval()
    scores = np.empty(len(rows), dtype=np.float64)
    starts = range(0, len(rows), batch_size)
    for start in progress(
        starts, desc="predict_scores (raw media)", unit="batch", show=show_progress and len(starts) > 1
    ):
        encoded = [encoder.encode_prompt(row) for row in rows[start : start + batch_size]]
        p_int = digit_probabilities(_media_forward(model, encoded, pad_id, device), digit_ids, renormalize)
        if method == "greedy":
            chosen = p_int.argmax(dim=-1).tolist()  # one host sync per batch, outside any loss
            extended = [
                dict(e, input_ids=e["input_ids"] + [digits.digit_ids[d], digits.point_id])
                for e, d in zip(encoded, chosen, strict=True)
            ]
            p_frac = digit_probabilities(_media_forward(model, extended, pad_id, device), digit_ids, renormalize)
            batch_scores = expected_digit(p_int) + 0.1 * expected_digit(p_frac)
        else:
            extended = [
                dict(e, input_ids=e["input_ids"] + [digits.digit_ids[d], digits.point_id])
                for e in encoded
                for d in VALID_INTEGER_DIGITS
            ]
            p_frac = digit_probabilities(_media_forward(model, extended, pad_id, device), digit_ids, renormalize)
            batch_scores = _exact_score(p_int, p_frac, torch.tensor(VALID_INTEGER_DIGITS, device=device))
        scores[start : start + len(encoded)] = batch_scores.double().cpu().numpy()
    model.train(was_training)
    return scores


@torch.inference_mode()
def generate_scores(
    model,
    tokenizer_or_processor,
    rows: Iterable[Mapping[str, Any]],
    config: RAFTConfig | None = None,
    *,
    batch_size: int = 8,
    max_new_tokens: int = 16,
    show_progress: bool = True,
) -> tuple[list[float | None], list[str]]:
    """Greedy `generate()` from the chat prompt `config` describes (as `predict_scores`: its `modality`,
    `prompt_style` and `max_length`; default: a direct text prompt, no `max_length`), each answer read by the
    paper's parser g for that `prompt_style` (the harness's: strict, None rather than a guess, one decimal): the
    usual alternative to the digit readout."""
    config = config if config is not None else RAFTConfig(max_length=None)
    max_length, modality, prompt_style = config.max_length, config.modality, config.prompt_style
    tokenizer = getattr(tokenizer_or_processor, "tokenizer", tokenizer_or_processor)
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), max_length, modality, prompt_style)
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
    for start in progress(starts, desc="generate", unit="batch", show=show_progress and len(starts) > 1):
        index = order[start : start + batch_size]
        ids, mask = _left_pad([prompts[i] for i in index], pad_id, device)
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        for row, seq in zip(index, out[:, ids.size(1) :], strict=True):
            texts[row] = tokenizer.decode(seq, skip_special_tokens=True)
    style = canonical_prompt_style(prompt_style)
    return [parse_score(t, style) for t in texts], texts


def prediction_records(rows: Iterable[Mapping[str, Any]], scores: Sequence[float]) -> list[dict[str, Any]]:
    """Long-form prediction records (contract item 2) for `write_predictions`."""
    return [
        {"video_id": row["video_id"], "dimension": row["dimension"], "prediction": float(score)}
        for row, score in zip(rows, scores, strict=True)
    ]
