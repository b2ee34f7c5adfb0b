"""Expected-score inference against a brute-force, one-row-at-a-time computation."""

from __future__ import annotations

import pytest
import torch

from eval_scripts import parse_score
from raft_trainer import DigitTokens, RAFTConfig, ReadoutOptions, ScoringEncoder, generate_scores, predict_scores

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
    greedy = predict_scores(model, tokenizer, rows, readout=ReadoutOptions(batch_size=batch_size, show_progress=False))
    exact = predict_scores(
        model, tokenizer, rows, readout=ReadoutOptions(batch_size=batch_size, method="exact", show_progress=False)
    )
    assert greedy.tolist() == pytest.approx([w[0] for w in want], abs=1e-4)
    assert exact.tolist() == pytest.approx([w[1] for w in want], abs=1e-4)
    assert model.training  # the caller's mode is restored
    unshared = predict_scores(
        model, tokenizer, rows, readout=ReadoutOptions(batch_size=batch_size, share_prefix=False, show_progress=False)
    )
    assert unshared.tolist() == pytest.approx(greedy.tolist(), abs=1e-5)
    model.eval()


def test_predict_scores_rejects_unknown_methods(setup):
    tokenizer, model, rows = setup
    with pytest.raises(ValueError, match="greedy' or 'exact"):
        predict_scores(model, tokenizer, rows, readout=ReadoutOptions(method="sample"))


def test_generate_scores_returns_one_parsed_value_per_row(setup):
    tokenizer, model, rows = setup
    values, texts = generate_scores(model, tokenizer, rows, batch_size=2, max_new_tokens=4, show_progress=False)
    assert len(values) == len(texts) == len(rows)
    assert all(v is None or isinstance(v, float) for v in values)
    assert values == [parse_score(text, "direct") for text in texts]  # the harness's parser, the one there is


# Answers the trainer's former first-number parser read wrongly (left) and what the one parser g reads (right).
@pytest.mark.parametrize(
    ("answer", "style", "want"),
    [
        ("1. Analysis: warm. The score prediction is: 3.5", "paper", 3.5),  # was 1.0: the list number
        ("7", "direct", None),  # was 7.0: outside the scale
        ("-1", "direct", None),  # was 1.0: the sign dropped
        ("3.375", "toolkit", 3.4),  # was 3.375: not one decimal; `toolkit` is `direct`'s old name
        ("3-4", "direct", None),  # was 3.0: a range
        ("Score 3: moderate. Final score: 4.5", "direct", 4.5),  # was 3.0: the rubric line quoted back
    ],
)
def test_generate_scores_reads_answers_with_the_harness_parser(setup, monkeypatch, answer, style, want):
    tokenizer, model, rows = setup
    monkeypatch.setattr(tokenizer, "decode", lambda *args, **kwargs: answer)
    config = RAFTConfig(max_length=None, prompt_style=style)
    values, texts = generate_scores(model, tokenizer, rows, config, batch_size=2, max_new_tokens=2, show_progress=False)
    assert texts == [answer] * len(rows)
    assert values == [want] * len(rows)


def test_the_digit_readout_is_one_expected_record_per_prompt(setup):
    """`DigitReadout` holds a column per field of the harness's `ExpectedScore` (issue 48: one definition), and
    `expected_score(i)` is prompt i's record, built from those columns by hand here."""
    from dataclasses import fields

    from mis_icc_metric.expected_record import ExpectedScore
    from raft_trainer.predict import DigitReadout, pad_token_id, read_digit_scores

    record_fields = {f.name for f in fields(ExpectedScore)} - {"score", "reason"}
    assert record_fields | {"scores", "fraction_digit"} == {f.name for f in fields(DigitReadout)}
    tokenizer, model, rows = setup
    digits = DigitTokens.from_tokenizer(tokenizer)
    encoder = ScoringEncoder(tokenizer, digits, None)
    readout = read_digit_scores(
        model,
        [encoder.encode_prompt(row) for row in rows],
        digits,
        pad_token_id(tokenizer),
        readout=ReadoutOptions(show_progress=False),
    )
    for i in range(len(rows)):
        record = readout.expected_score(i).as_record()
        assert record["integer_digit"] == int(readout.integer_digit[i])
        assert record["integer_mass"] == pytest.approx(float(readout.integer_mass[i]))
        assert record["fraction_expected"] == pytest.approx(float(readout.fraction_expected[i]))
        inside = 1.0 <= readout.scores[i] <= 5.0
        assert record["score"] == (pytest.approx(float(readout.scores[i])) if inside else None)
        assert (record["reason"] is None) == inside
