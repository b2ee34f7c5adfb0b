"""CoT-RAFT (TRACT): the final score's place against the harness's CoT readout, the loss against a hand computation,
gradients, a fitting toy set, the rationales' seeding and resuming, the CoT readout, and one-line refusals."""

from __future__ import annotations

import json
import math

import datasets
import pytest
import torch

from raft_trainer import CotScoringEncoder, DigitTokens, RAFTConfig, RAFTDataCollator, RAFTTrainer, ReadoutOptions
from raft_trainer import rationales as rationales_module
from raft_trainer.cot import RATIONALE_COLUMN, cot_completion, rationale_of

from _raft_helpers import cpu_config, make_model, make_tokenizer, toy_rows

# Rationales that quote scores of their own: the final score must still be the one read.
RATIONALES = (
    "The therapist scores 3.5 on warmth. Score 4: a warm reply. Overall calm.",
    "A rating of 2.0 would fit if the reply were cold; it is not.",
    "",
    "warm warm calm 4.9",
)


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def encoder(tokenizer):
    return CotScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None)


def _cot_rows(n: int, seed: int = 0) -> list[dict]:
    return [{**row, RATIONALE_COLUMN: RATIONALES[i % len(RATIONALES)]} for i, row in enumerate(toy_rows(n, seed))]


def _config(tmp_path, **kwargs) -> RAFTConfig:
    return cpu_config(tmp_path, **{"completion_style": "cot", "raft_objective": "raft+ce", **kwargs})


def test_the_final_score_is_where_the_harness_cot_readout_reads_it(tokenizer, encoder):
    """The trained position equals the one the transformers backend's expected readout of a CoT answer finds."""
    from eval_scripts.backends.transformers_backend import _final_score_token, _Generated

    for row in _cot_rows(4):
        encoded = encoder.encode(row, "3.4")
        ids, labels = encoded["input_ids"], encoded["labels"]
        start = next(i for i, label in enumerate(labels) if label != -100)
        answer = _Generated(0, "", True, ids[start:], ids[:start])
        assert start + _final_score_token(tokenizer, encoder.digits, answer) == encoded["score_index"]
        assert tokenizer.decode(ids[encoded["score_index"] : encoded["score_index"] + 3]) == "3.4"
        # the two digits RAFT reads carry no CE label; the rest of the completion does
        index = encoded["score_index"]
        assert labels[index] == labels[index + 2] == -100 and labels[index + 1] == ids[index + 1]
        assert all(label == token for label, token in zip(labels[start:index], ids[start:index], strict=True))


def test_rationale_of_cuts_the_models_own_final_score():
    assert rationale_of("Warm reply.\nFinal score: 2.5\nmore") == "Warm reply."
    assert rationale_of("  FINAL  SCORE 4") == ""
    assert rationale_of("no score here 3.5") == "no score here 3.5"
    assert cot_completion(" why ", "3.0") == "why\nFinal score: 3.0" and cot_completion("", "3.0") == "Final score: 3.0"


def _hand_loss(model, batch, gold: float, digit_ids: list[int]) -> torch.Tensor:
    """(E[int] + 0.1 E[frac] - gold)^2 + mean CE over the labelled completion tokens, from the full logits."""
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[0].double()
    index = int(batch["score_positions"][0, 0]) + 1
    digits = torch.arange(10, dtype=torch.float64)
    e_int = (torch.softmax(logits[index - 1, digit_ids], -1) * digits).sum()
    e_frac = (torch.softmax(logits[index + 1, digit_ids], -1) * digits).sum()
    labels = batch["labels"][0]
    targets = labels[1:]
    trained = targets != -100
    log_p = torch.log_softmax(logits[:-1], -1)
    ce = -log_p[trained.nonzero()[:, 0], targets[trained]].mean()
    return (e_int + 0.1 * e_frac - gold) ** 2 + ce


def test_cot_raft_loss_equals_a_hand_computation_and_its_gradients_are_finite(tokenizer, encoder, tmp_path):
    model = make_model(tokenizer, seed=3)
    row = _cot_rows(1)[0]
    encoded = {**encoder.encode(row, "4.0"), "score": 4.0, "dimension_index": 0}
    batch = RAFTDataCollator(tokenizer.pad_token_id)([encoded])
    rows = datasets.Dataset.from_list(_cot_rows(1))
    trainer = RAFTTrainer(model, args=_config(tmp_path), train_dataset=rows, processing_class=tokenizer)
    model.eval()
    loss = trainer.compute_loss(model, dict(batch))
    expected = _hand_loss(model, batch, 4.0, list(encoder.digits.digit_ids))
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads) and any(g.abs().sum() > 0 for g in grads)


@pytest.mark.slow
def test_a_few_cot_raft_steps_lower_the_loss_on_a_toy_set(tokenizer, tmp_path):
    rows = datasets.Dataset.from_list(_cot_rows(2))
    trainer = RAFTTrainer(
        make_model(tokenizer, seed=1),
        args=_config(tmp_path, max_steps=6, learning_rate=2e-2, per_device_train_batch_size=2),
        train_dataset=rows,
        eval_dataset=rows,
        processing_class=tokenizer,
    )
    before = trainer.evaluate()["eval_loss"]
    trainer.train()
    after = trainer.evaluate()["eval_loss"]
    assert math.isfinite(before) and math.isfinite(after) and after < 0.75 * before


@pytest.mark.slow
def test_rationales_are_seeded_and_resume_where_a_run_stopped(tokenizer, encoder, tmp_path, monkeypatch):
    monkeypatch.setattr(rationales_module, "CHUNK_ROWS", 2)
    model = make_model(tokenizer, seed=0)
    rows = toy_rows(5)
    settings = {"model": "tiny", "seed": 7, "temperature": 1.0, "max_new_tokens": 4}
    folder = tmp_path / "build.rationales" / "tiny"
    assert rationales_module.write_rationales(model, encoder, rows, folder, settings, show_progress=False) == (3, 0)
    first = rationales_module.read_rationales(folder)
    assert set(first) == {(r["video_id"], r["dimension"]) for r in rows}
    (folder / "part-00001.jsonl").unlink()  # a run stopped before its second part
    assert rationales_module.write_rationales(model, encoder, rows, folder, settings, show_progress=False) == (1, 2)
    assert rationales_module.read_rationales(folder) == first  # part k is sampled with seed + k: the same texts
    other = tmp_path / "other"
    rationales_module.write_rationales(model, encoder, rows, other, {**settings, "seed": 8}, show_progress=False)
    assert rationales_module.read_rationales(other) != first
    from mis_bench_dataset.toolkit.errors import UsageError

    with pytest.raises(UsageError, match="other settings .*seed"):
        rationales_module.write_rationales(model, encoder, rows, folder, {**settings, "seed": 8}, show_progress=False)
    assert json.loads((folder / "settings.json").read_text())["seed"] == 7


def test_attach_rationales_names_the_rows_without_one():
    from mis_bench_dataset.toolkit.errors import DataError

    rows = datasets.Dataset.from_list(toy_rows(3))
    found = {(r["video_id"], r["dimension"]): f"why {i}" for i, r in enumerate(toy_rows(2))}
    with pytest.raises(DataError, match="1 labelled rows have no rationale .*--generate_rationales"):
        rationales_module.attach_rationales(rows, found, "here")
    found[(rows[2]["video_id"], rows[2]["dimension"])] = "why 2"
    assert rationales_module.attach_rationales(rows, found, "here")[RATIONALE_COLUMN] == ["why 0", "why 1", "why 2"]


@pytest.mark.slow
def test_the_cot_readout_equals_generating_then_reading_the_final_digits(tokenizer, encoder):
    model = make_model(tokenizer, seed=2)
    rows = toy_rows(3)
    scores = rationales_module.predict_cot_scores(
        model, encoder, rows, max_new_tokens=6, readout=ReadoutOptions(show_progress=False)
    )
    digit_ids = list(encoder.digits.digit_ids)
    for row, score in zip(rows, scores, strict=True):
        prompt = torch.tensor([encoder.generation_prompt(row)])
        generated = model.generate(prompt, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        text = tokenizer.decode(generated[0, prompt.size(1) :], skip_special_tokens=True)
        ids = encoder.encode_prompt({**row, RATIONALE_COLUMN: rationale_of(text)})
        with torch.no_grad():
            p_int = torch.softmax(model(torch.tensor([ids])).logits[0, -1, digit_ids].double(), -1)
            chosen = int(p_int.argmax())
            tail = torch.tensor([ids + [digit_ids[chosen], encoder.digits.point_id]])
            p_frac = torch.softmax(model(tail).logits[0, -1, digit_ids].double(), -1)
        digits = torch.arange(10, dtype=torch.float64)
        assert score == pytest.approx(float((p_int * digits).sum() + 0.1 * (p_frac * digits).sum()), abs=1e-4)


def test_cot_settings_that_make_no_sense_are_refused_in_one_line():
    with pytest.raises(ValueError, match="completion_style 'cot' .*use prompt_style 'direct'"):
        RAFTConfig(output_dir="u", use_cpu=True, completion_style="cot", prompt_style="paper")
    with pytest.raises(ValueError, match="modality 'text' only"):
        RAFTConfig(output_dir="u", use_cpu=True, completion_style="cot", modality="audio+text")
    with pytest.raises(ValueError, match="completion_style must be one of score, cot"):
        RAFTConfig(output_dir="u", use_cpu=True, completion_style="essay")
