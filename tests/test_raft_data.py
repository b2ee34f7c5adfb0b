"""Digit discovery, scoring-row encoding and the collator's score positions."""

from __future__ import annotations

import logging

import datasets
import pytest
import torch

from raft_trainer import (
    DigitTokens,
    RAFTDataCollator,
    ScoreTokenizationError,
    ScoringEncoder,
    expected_decimal_score,
    format_score,
    prepare_raft_dataset,
)
from raft_trainer.data import COMPLETION_PREFIX, conversation

from _raft_helpers import make_model, make_tokenizer, toy_rows


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def digits(tokenizer):
    return DigitTokens.from_tokenizer(tokenizer)


def test_digit_ids_are_discovered_from_the_tokenizer(tokenizer, digits):
    for d in range(10):
        assert tokenizer.convert_ids_to_tokens(digits.digit_ids[d]) == str(d)
    assert tokenizer.convert_ids_to_tokens(digits.point_id) == "."


def test_a_digit_merging_tokenizer_is_refused_with_a_clear_message():
    merging = make_tokenizer(split_digits=False)
    digits = DigitTokens.from_tokenizer(merging)  # "0".."9" alone are single tokens ...
    encoder = ScoringEncoder(merging, digits, max_length=None)
    with pytest.raises(ScoreTokenizationError, match=r"does not split the score '4\.0'.*Ġ4") as info:
        encoder.encode_training_row(toy_rows(1)[0])  # ... but " 4" merges in the completion
    assert "AB0000_T1_Stim0" in str(info.value) and "empathy" in str(info.value)


def test_a_tokenizer_without_single_digit_tokens_is_refused():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "score": 1, ".": 2, "10": 3}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")
    with pytest.raises(ScoreTokenizationError, match="same token id"):
        DigitTokens.from_tokenizer(fast)


def test_format_score_rejects_out_of_range_values():
    assert format_score(3.4000000953674316) == "3.4"
    with pytest.raises(ValueError, match="D.D"):
        format_score(10.0)


def test_encoding_trains_only_the_completion(tokenizer, digits):
    row = toy_rows(1)[0]
    out = ScoringEncoder(tokenizer, digits, None).encode_training_row(row)
    labelled = [t for t in out["labels"] if t != -100]
    assert tokenizer.decode(labelled).startswith(COMPLETION_PREFIX + format_score(row["score"]))
    s = out["score_index"]
    assert out["input_ids"][s : s + 3] == digits.score_pattern(format_score(row["score"]))
    assert out["labels"][s - 1] != -100 or out["labels"][s] != -100
    assert conversation(row)["completion"][0]["content"] == COMPLETION_PREFIX + format_score(row["score"])


def test_long_transcripts_are_shortened_never_the_completion(tokenizer, digits):
    row = dict(toy_rows(1)[0], transcript="warm calm " * 400)
    full = ScoringEncoder(tokenizer, digits, None).encode_training_row(row)
    limit = len(full["input_ids"]) - 300
    out = ScoringEncoder(tokenizer, digits, limit).encode_training_row(row)
    assert len(out["input_ids"]) <= limit
    assert out["transcript_truncated"]
    s = out["score_index"]
    assert out["input_ids"][s : s + 3] == digits.score_pattern(format_score(row["score"]))


def test_a_prompt_that_cannot_fit_names_the_row(tokenizer, digits):
    with pytest.raises(ValueError, match=r"AB0000_T1_Stim0.*max_length=50"):
        ScoringEncoder(tokenizer, digits, 50).encode_training_row(toy_rows(1)[0])


def test_missing_chat_template_is_refused(digits):
    tok = make_tokenizer()
    tok.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        ScoringEncoder(tok, digits)


def test_unlabelled_rows_are_dropped_with_a_log(tokenizer, digits, caplog):
    rows = toy_rows(4)
    rows[1]["score"] = None
    with caplog.at_level(logging.WARNING):
        encoded = prepare_raft_dataset(datasets.Dataset.from_list(rows), ScoringEncoder(tokenizer, digits, None))
    assert len(encoded) == 3
    assert "dropped 1 of 4 rows" in caplog.text


def test_missing_scoring_columns_are_named(tokenizer, digits):
    with pytest.raises(ValueError, match=r"\['transcript'\]"):
        prepare_raft_dataset(
            datasets.Dataset.from_list([{"video_id": "a", "dimension": "empathy", "score": 3.0}]),
            ScoringEncoder(tokenizer, digits, None),
        )


def _encoded_rows(tokenizer, digits, n=3):
    encoder = ScoringEncoder(tokenizer, digits, None)
    rows = toy_rows(n, seed=3)
    rows[1]["transcript"] += " and a much longer answer here" * 3  # different lengths -> real padding
    return [encoder.encode_training_row(r) for r in rows]


@pytest.mark.parametrize("side", ["left", "right"])
def test_collator_positions_point_at_the_score_tokens(tokenizer, digits, side):
    examples = _encoded_rows(tokenizer, digits)
    assert len({len(e["input_ids"]) for e in examples}) > 1
    batch = RAFTDataCollator(tokenizer.pad_token_id, padding_side=side)(examples)
    ids = batch["input_ids"]
    for b, ex in enumerate(examples):
        int_pos, frac_pos = batch["score_positions"][b].tolist()
        integer, fraction = divmod(round(ex["score"] * 10), 10)
        assert ids[b, int_pos + 1] == digits.digit_ids[integer]  # logits at int_pos predict the integer digit
        assert ids[b, frac_pos] == digits.point_id  # the '.' (teacher-forced integer digit before it)
        assert ids[b, frac_pos + 1] == digits.digit_ids[fraction]
        keep = batch["logits_keep"]
        assert keep[batch["keep_index"][b, 0]] == int_pos and keep[batch["keep_index"][b, 1]] == frac_pos
        # every trained next-token label is reachable through the kept positions
        trained = (batch["labels"][b, 1:] != -100).nonzero().flatten()
        kept_labels = batch["keep_labels"][b]
        assert sorted(keep[kept_labels != -100].tolist()) == trained.tolist()
        assert torch.equal(kept_labels[kept_labels != -100], batch["labels"][b, keep[kept_labels != -100] + 1])
    if side == "left":  # aligned completions: logits only at the completion's positions
        assert len(batch["logits_keep"]) == max(sum(t != -100 for t in e["labels"]) for e in examples)


def test_left_and_right_padding_give_the_same_scores_and_gradients_only_at_score_positions(tokenizer, digits):
    examples = _encoded_rows(tokenizer, digits)
    model = make_model(tokenizer)
    ids = torch.tensor(digits.digit_ids)
    scores = {}
    for side in ("left", "right"):
        batch = RAFTDataCollator(tokenizer.pad_token_id, padding_side=side)(examples)
        embeds = model.get_input_embeddings()(batch["input_ids"]).detach().requires_grad_(True)
        logits = model(inputs_embeds=embeds, attention_mask=batch["attention_mask"]).logits  # full (B, L, V)
        logits.retain_grad()
        rows = torch.arange(len(examples))
        pos = batch["score_positions"]
        pred = expected_decimal_score(logits[rows, pos[:, 0]], logits[rows, pos[:, 1]], ids)
        ((pred - batch["score"]) ** 2).mean().backward()
        touched = logits.grad.abs().sum(dim=-1) > 0  # (B, L)
        expected = torch.zeros_like(touched)
        expected[rows, pos[:, 0]] = True
        expected[rows, pos[:, 1]] = True
        assert torch.equal(touched, expected)
        # no input after the fractional-digit position receives gradient (causality + right positions)
        for b in range(len(examples)):
            assert torch.all(embeds.grad[b, pos[b, 1] + 1 :] == 0)
        # the shortcut the trainer takes (logits_to_keep) gives the same scores
        kept = model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], logits_to_keep=batch["logits_keep"]
        ).logits
        ki = batch["keep_index"]
        fast = expected_decimal_score(kept[rows, ki[:, 0]], kept[rows, ki[:, 1]], ids)
        torch.testing.assert_close(fast, pred.detach(), rtol=1e-5, atol=1e-5)
        scores[side] = pred.detach()
    torch.testing.assert_close(scores["left"], scores["right"], rtol=1e-4, atol=1e-4)
