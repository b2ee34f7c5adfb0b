"""Digit-token discovery: which vocabulary ids are "0".."9" and ".", found from the tokenizer.

RAFT reads the integer and fractional digit distributions straight off the LM head, so every
digit must be one token and a score string "3.4" inside the completion must tokenize as
[digit, '.', digit]. Tokenizers that merge digits (e.g. "3.4" or "34" as one token) cannot
express the compositional score and are refused here with a message saying what they produced.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

DIGITS = "0123456789"
DECIMAL_POINT = "."


class ScoreTokenizationError(ValueError):
    """The tokenizer cannot represent a score as [digit, '.', digit]."""


def _tokenizer_name(tokenizer) -> str:
    return getattr(tokenizer, "name_or_path", None) or type(tokenizer).__name__


def _single_token_id(tokenizer, text: str) -> int:
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        raise ScoreTokenizationError(
            f"tokenizer {_tokenizer_name(tokenizer)!r} encodes {text!r} as {len(ids)} tokens {pieces!r}; "
            "MIS-RAFT needs each of '0'..'9' and '.' to be exactly one token"
        )
    return ids[0]


@dataclass(frozen=True)
class DigitTokens:
    """Token ids of the ten digits (index d holds the id of str(d)) and of the decimal point."""

    digit_ids: tuple[int, ...]
    point_id: int

    @classmethod
    def from_tokenizer(cls, tokenizer, probe_texts: tuple[tuple[str, str], ...] = ()) -> DigitTokens:
        """Discover the ids, then check each probe text (e.g. rendered completions) splits its
        score as [digit, '.', digit]; raise `ScoreTokenizationError` otherwise."""
        digit_ids = tuple(_single_token_id(tokenizer, d) for d in DIGITS)
        if len(set(digit_ids)) != len(DIGITS):
            raise ScoreTokenizationError(
                f"tokenizer {_tokenizer_name(tokenizer)!r} maps different digits to the same token id: {digit_ids}"
            )
        tokens = cls(digit_ids=digit_ids, point_id=_single_token_id(tokenizer, DECIMAL_POINT))
        for text, score in probe_texts:
            ids = tokenizer.encode(text, add_special_tokens=False)
            tokens.find_score(ids, score, context=f"probe text {text!r}", tokenizer=tokenizer)
        return tokens

    def tensor(self, device: torch.device | str | None = None) -> torch.Tensor:
        return torch.tensor(self.digit_ids, dtype=torch.long, device=device)

    def score_pattern(self, score_text: str) -> list[int]:
        """Token ids "3.4" must produce: [id('3'), id('.'), id('4')]."""
        integer, fraction = split_score_text(score_text)
        return [self.digit_ids[integer], self.point_id, self.digit_ids[fraction]]

    def find_score(
        self, ids: list[int], score_text: str, *, start: int = 0, context: str = "", tokenizer=None, last: bool = False
    ) -> int:
        """Index of the integer-digit token of `score_text` in `ids[start:]`: the first match, or the last with
        `last` (a CoT completion's final score, after a rationale that may quote scores of its own)."""
        pattern = self.score_pattern(score_text)
        indices = range(start, len(ids) - 2)
        for i in reversed(indices) if last else indices:
            if ids[i] == pattern[0] and ids[i + 1 : i + 3] == pattern[1:]:
                return i
        produced = tokenizer.convert_ids_to_tokens(ids[start:]) if tokenizer is not None else ids[start:]
        name = _tokenizer_name(tokenizer) if tokenizer is not None else "the tokenizer"
        raise ScoreTokenizationError(
            f"{context or 'completion'}: tokenizer {name!r} does not split the score {score_text!r} as "
            f"[digit, '.', digit]; the completion tokenized as {produced!r}. MIS-RAFT needs single-digit "
            "tokens (a tokenizer whose pre-tokenizer splits digits individually, like Qwen2's)"
        )


def format_score(score: float) -> str:
    """One-decimal text of a gold score; MIS-Bench scores lie in 1.0-5.0."""
    text = f"{float(score):.1f}"
    split_score_text(text)
    return text


def split_score_text(text: str) -> tuple[int, int]:
    integer, point, fraction = text.partition(DECIMAL_POINT)
    if not (point and len(integer) == 1 and len(fraction) == 1 and integer.isdigit() and fraction.isdigit()):
        raise ValueError(f"score {text!r} is not of the form D.D (one integer digit, one decimal)")
    return int(integer), int(fraction)
