"""The MIS-RAFT objective (paper eq. 9-12) as pure tensor functions, testable without a trainer."""

from __future__ import annotations

import torch

_DIGIT_VALUES = torch.arange(10, dtype=torch.float32)


def digit_probabilities(logits: torch.Tensor, digit_token_ids: torch.Tensor, renormalize: bool = True) -> torch.Tensor:
    """(B, V) logits -> (B, 10) probabilities of the digit tokens "0".."9".

    `renormalize=True` (default) takes the softmax over the ten digit logits only, i.e. p(d | the
    next token is a digit). `renormalize=False` is the paper's literal form: the full-vocabulary
    softmax restricted to the digits, whose mass can sum to less than one, which shrinks the
    expectation toward 0 whenever the model puts probability on non-digit tokens.
    """
    logits = logits.float()
    if renormalize:
        return torch.softmax(logits.index_select(-1, digit_token_ids), dim=-1)
    return torch.softmax(logits, dim=-1).index_select(-1, digit_token_ids)


def expected_digit(probabilities: torch.Tensor) -> torch.Tensor:
    """(..., 10) digit probabilities -> (...) expected digit sum_d p(d) d (eq. 9-10)."""
    return probabilities @ _DIGIT_VALUES.to(probabilities.device)


def expected_decimal_score(
    int_logits: torch.Tensor,
    frac_logits: torch.Tensor,
    digit_token_ids: torch.Tensor,
    renormalize: bool = True,
) -> torch.Tensor:
    """s = E[int digit] + 0.1 E[frac digit] (eq. 11) from the (B, V) logits at the two score positions.

    `frac_logits` are taken with the integer digit teacher-forced (the gold digit during training,
    the chosen digit at inference), so this is E[int] + 0.1 E[frac | int].
    """
    s_int = expected_digit(digit_probabilities(int_logits, digit_token_ids, renormalize))
    s_frac = expected_digit(digit_probabilities(frac_logits, digit_token_ids, renormalize))
    return s_int + 0.1 * s_frac


def squared_score_error_sum(
    predicted: torch.Tensor, target: torch.Tensor, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """Sum over the batch of (s_hat - s*)^2; the caller divides by the number of scored rows.

    Returning the sum (not the mean) lets the trainer normalise once by the number of scored rows
    across gradient-accumulation micro-batches and processes, so eq. 12's 1/B is applied exactly once.
    """
    errors = (predicted - target.to(predicted.dtype)) ** 2
    if valid is not None:
        errors = torch.where(valid, errors, torch.zeros_like(errors))
    return errors.sum()


def raft_loss(
    int_logits: torch.Tensor,
    frac_logits: torch.Tensor,
    target: torch.Tensor,
    digit_token_ids: torch.Tensor,
    renormalize: bool = True,
) -> torch.Tensor:
    """Eq. 12 on one batch: mean over the batch of (s_hat - s*)^2."""
    predicted = expected_decimal_score(int_logits, frac_logits, digit_token_ids, renormalize)
    return squared_score_error_sum(predicted, target) / predicted.numel()


def number_token_loss_sum(
    digit_logits: torch.Tensor, gold_digits: torch.Tensor, digit_token_ids: torch.Tensor
) -> torch.Tensor:
    """Sum over the given digit positions of the Number Token Loss, NTL-WAS (Zausinger et al., ICML 2025, eq. 4):
    the Wasserstein-1 distance between the softmax over the ten digit logits and the one-hot gold digit, which on
    the ordered digits 0..9 is sum_d p(d) |d - y|.

    `digit_logits` (..., V) are the logits at positions predicting a digit, `gold_digits` (...) the gold digit
    values 0..9. The softmax is over the ten digit logits, as the paper's and the `ntloss` package's (its
    `reweigh=False`, the paper's form). Returns the sum; the caller divides by the number of positions.
    """
    probabilities = digit_probabilities(digit_logits, digit_token_ids, renormalize=True)
    distances = (_DIGIT_VALUES.to(probabilities.device) - gold_digits.to(probabilities.dtype)[..., None]).abs()
    return (probabilities * distances).sum()
