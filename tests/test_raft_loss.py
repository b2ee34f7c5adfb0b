"""The MIS-RAFT loss core against hand computations (paper eq. 9-12)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from raft_trainer import digit_probabilities, expected_decimal_score, raft_loss

# digit "d" lives at vocabulary id DIGIT_IDS[d]: deliberately scattered and out of order
DIGIT_IDS = [7, 3, 12, 0, 9, 14, 1, 5, 11, 2]
V = 15


def _hand_score(int_row: list[float], frac_row: list[float], renormalize: bool) -> float:
    def expected(row):
        exps = [math.exp(x) for x in row]
        denom = sum(exps[i] for i in DIGIT_IDS) if renormalize else sum(exps)
        return sum(d * exps[DIGIT_IDS[d]] / denom for d in range(10))

    return expected(int_row) + 0.1 * expected(frac_row)


FIXED_INT = [[0.3 * ((7 * i) % 11) - 1.0 for i in range(V)], [0.0] * V]
FIXED_FRAC = [[0.2 * ((5 * i) % 13) - 0.5 for i in range(V)], [float(i % 4) for i in range(V)]]


@pytest.mark.parametrize("renormalize", [True, False])
def test_expected_decimal_score_matches_hand_computation(renormalize):
    got = expected_decimal_score(
        torch.tensor(FIXED_INT), torch.tensor(FIXED_FRAC), torch.tensor(DIGIT_IDS), renormalize=renormalize
    )
    want = [_hand_score(i, f, renormalize) for i, f in zip(FIXED_INT, FIXED_FRAC, strict=True)]
    assert got.shape == (2,)
    assert got.tolist() == pytest.approx(want, rel=1e-6)


def test_uniform_logits_give_the_textbook_values():
    zeros = torch.zeros(1, V)
    renorm = expected_decimal_score(zeros, zeros, torch.tensor(DIGIT_IDS))
    assert renorm.item() == pytest.approx(4.5 + 0.45)  # uniform digits: E = 4.5
    literal = expected_decimal_score(zeros, zeros, torch.tensor(DIGIT_IDS), renormalize=False)
    assert literal.item() == pytest.approx((4.5 + 0.45) * 10 / V)  # shrunk by the digit mass 10/V


def test_raft_loss_is_the_batch_mean_squared_error():
    target = torch.tensor([3.4, 1.0])
    got = raft_loss(torch.tensor(FIXED_INT), torch.tensor(FIXED_FRAC), target, torch.tensor(DIGIT_IDS))
    preds = [_hand_score(i, f, True) for i, f in zip(FIXED_INT, FIXED_FRAC, strict=True)]
    assert got.item() == pytest.approx(((preds[0] - 3.4) ** 2 + (preds[1] - 1.0) ** 2) / 2, rel=1e-6)


def test_confident_logits_recover_the_score():
    big = torch.full((1, V), -30.0)
    int_logits, frac_logits = big.clone(), big.clone()
    int_logits[0, DIGIT_IDS[3]] = 30.0
    frac_logits[0, DIGIT_IDS[4]] = 30.0
    assert expected_decimal_score(int_logits, frac_logits, torch.tensor(DIGIT_IDS)).item() == pytest.approx(3.4)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-20, 20, allow_nan=False), min_size=2 * V, max_size=2 * V),
)
def test_literal_form_is_the_renormalised_one_scaled_by_digit_mass(values):
    int_logits = torch.tensor([values[:V]], dtype=torch.float64)
    frac_logits = torch.tensor([values[V:]], dtype=torch.float64)
    ids = torch.tensor(DIGIT_IDS)
    renorm = expected_decimal_score(int_logits, frac_logits, ids)
    literal = expected_decimal_score(int_logits, frac_logits, ids, renormalize=False)
    mass_int = torch.softmax(int_logits.float(), -1)[0, ids].sum()
    mass_frac = torch.softmax(frac_logits.float(), -1)[0, ids].sum()
    p_int = digit_probabilities(int_logits, ids)
    p_frac = digit_probabilities(frac_logits, ids)
    digits = torch.arange(10, dtype=torch.float32)
    assert 0.0 <= renorm.item() <= 9.9 + 1e-5
    assert literal.item() <= renorm.item() + 1e-5
    want = mass_int * (p_int @ digits) + 0.1 * mass_frac * (p_frac @ digits)
    assert literal.item() == pytest.approx(want.item(), rel=1e-4, abs=1e-5)


def test_gradients_reach_only_the_digit_logits_when_renormalised():
    int_logits = torch.tensor(FIXED_INT, requires_grad=True)
    frac_logits = torch.tensor(FIXED_FRAC, requires_grad=True)
    raft_loss(int_logits, frac_logits, torch.tensor([3.4, 1.0]), torch.tensor(DIGIT_IDS)).backward()
    non_digit = [i for i in range(V) if i not in DIGIT_IDS]
    for grad in (int_logits.grad, frac_logits.grad):
        assert torch.all(grad[:, non_digit] == 0)
        assert torch.all(grad[:, DIGIT_IDS].abs().sum(dim=1) > 0)
