"""Expected-score inference against a brute-force, one-row-at-a-time computation."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from raft_trainer.data import ScoringEncoder
from raft_trainer.digits import DigitTokens
from raft_trainer.predict import generate_scores, parse_first_number, predict_scores

from _raft_helpers import make_model, make_tokenizer, toy_rows


@pytest.fixture(scope="module")
def setup():
    tokenizer = make_tokenizer()
    model = make_model(tokenizer, seed=5)
    rows = toy_rows(3, seed=7)
    rows[1]["transcript"] += " with a longer tail" * 4
    return tokenizer, model, rows


def _brute_force(model, tokenizer, row):
    digits = DigitTokens.from_tokenizer(tokenizer)
    ids = list(digits.digit_ids)
    prompt = ScoringEncoder(tokenizer, digits, None).encode_prompt(row)
    values = torch.arange(10, dtype=torch.float32)

    def probs(seq):
        with torch.no_grad():
            return torch.softmax(model(torch.tensor([seq])).logits[0, -1, ids], dim=-1)

    p_int = probs(prompt)
    e_frac = {i: float(probs(prompt + [ids[i], digits.point_id]) @ values) for i in range(10)}
    greedy = float(p_int @ values) + 0.1 * e_frac[int(p_int.argmax())]
    weights = p_int[1:6] / p_int[1:6].sum()
    exact = sum(float(w) * (i + 0.1 * e_frac[i]) for w, i in zip(weights, range(1, 6), strict=True))
    return greedy, exact


@pytest.mark.parametrize("batch_size", [1, 3])
def test_predict_scores_matches_brute_force(setup, batch_size):
    tokenizer, model, rows = setup
    want = [_brute_force(model, tokenizer, row) for row in rows]
    model.train()
    greedy = predict_scores(model, tokenizer, rows, batch_size=batch_size, show_progress=False)
    exact = predict_scores(model, tokenizer, rows, batch_size=batch_size, method="exact", show_progress=False)
    assert greedy.tolist() == pytest.approx([w[0] for w in want], abs=1e-4)
    assert exact.tolist() == pytest.approx([w[1] for w in want], abs=1e-4)
    assert model.training  # the caller's mode is restored
    unshared = predict_scores(model, tokenizer, rows, batch_size=batch_size, share_prefix=False, show_progress=False)
    assert unshared.tolist() == pytest.approx(greedy.tolist(), abs=1e-5)
    model.eval()


def test_predict_scores_rejects_unknown_methods(setup):
    tokenizer, model, rows = setup
    with pytest.raises(ValueError, match="greedy' or 'exact"):
        predict_scores(model, tokenizer, rows, method="sample")


def test_generate_scores_returns_one_parsed_value_per_row(setup):
    tokenizer, model, rows = setup
    values, texts = generate_scores(model, tokenizer, rows, batch_size=2, max_new_tokens=4, show_progress=False)
    assert len(values) == len(texts) == len(rows)
    assert all(v is None or isinstance(v, float) for v in values)


@given(st.integers(10, 50), st.text(alphabet=st.characters(blacklist_categories=("Nd",)), max_size=20))
def test_parse_first_number_reads_the_score(tenths, prefix):
    score = tenths / 10
    assert parse_first_number(f"{prefix}The score prediction is: {score:.1f}.") == pytest.approx(score)
    assert parse_first_number(prefix) is None
