"""RAFTTrainer: LoRA steps on a synthetic build, normalisation, CE parity, raft vs ce, ICC in eval."""

from __future__ import annotations

import math

import datasets
import pytest
import torch
from peft import LoraConfig

from raft_trainer import RAFTConfig, RAFTDataCollator, RAFTTrainer

from _raft_helpers import cpu_config, make_model, make_tokenizer, short_encoded_toy, toy_fit_config


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


def _config(tmp_path, **kwargs) -> RAFTConfig:
    return cpu_config(tmp_path, **kwargs)


def _lora(dropout=0.1):
    return LoraConfig(
        r=8, lora_alpha=16, lora_dropout=dropout, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
    )


def test_config_defaults_follow_the_paper_and_validate():
    cfg = RAFTConfig(output_dir="unused", use_cpu=True, report_to="none")
    assert (cfg.num_train_epochs, cfg.learning_rate, cfg.per_device_train_batch_size, cfg.max_length) == (
        2.0,
        2e-5,
        2,
        512,
    )
    assert cfg.raft_objective == "raft" and cfg.loss_weights == (1.0, 0.0)
    assert cfg.loss_type == "nll"  # TRL's own field keeps its meaning and default
    assert RAFTConfig(output_dir="u", use_cpu=True, raft_objective="raft+ce", ce_weight=0.5).loss_weights == (1.0, 0.5)
    with pytest.raises(ValueError, match="raft_objective must be one of raft, ce, raft"):
        RAFTConfig(output_dir="u", use_cpu=True, raft_objective="nll")
    with pytest.raises(ValueError, match="loss_type='raft'.*with raft_objective='raft'"):
        RAFTConfig(output_dir="u", use_cpu=True, loss_type="raft")  # the old spelling points to the new field
    with pytest.raises(ValueError, match="loss_type='dft'.*ignores TRL's token loss"):
        RAFTConfig(output_dir="u", use_cpu=True, loss_type="dft")
    with pytest.raises(ValueError, match="packing"):
        RAFTConfig(output_dir="u", use_cpu=True, packing=True)


def test_three_lora_steps_on_the_synthetic_build_and_the_loss_falls(synthetic_build, tokenizer, tmp_path):
    scoring = datasets.load_dataset(str(synthetic_build), "scoring")
    train = scoring["train"].select(range(16))
    model = make_model(tokenizer)
    base_before = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    trainer = RAFTTrainer(
        model,
        args=_config(tmp_path, max_steps=3, learning_rate=5e-3, per_device_train_batch_size=2),
        train_dataset=train,
        eval_dataset=train,
        processing_class=tokenizer,
        peft_config=_lora(),
    )
    before = trainer.evaluate()
    lora_before = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_B" in n}
    trainer.train()
    after = trainer.evaluate()
    steps = [h for h in trainer.state.log_history if "loss" in h]
    assert len(steps) == 3 and all(math.isfinite(h["loss"]) for h in steps)
    assert all("score_mse" in h and "mean_predicted_score" in h for h in steps)
    assert after["eval_loss"] < before["eval_loss"]
    assert {"eval_score_mse", "eval_icc", "eval_mean_dimension_icc"} <= set(after), after
    assert after["eval_loss"] == pytest.approx(after["eval_score_mse"], rel=1e-5)  # raft loss is the score MSE
    changed = [n for n, p in trainer.model.named_parameters() if "lora_B" in n and not torch.equal(p, lora_before[n])]
    assert changed
    base = trainer.model.get_base_model().model.layers[0].self_attn.q_proj.base_layer.weight
    assert torch.equal(base, base_before)


def test_gradient_accumulation_equals_a_larger_batch(tokenizer, tmp_path):
    """raft+ce exercises both normalisations: scored rows (raft) and completion tokens (ce)."""
    data = short_encoded_toy(tokenizer, 8, seed=2)
    logs = {}
    for batch, accum in ((4, 1), (1, 4)):
        trainer = RAFTTrainer(
            make_model(tokenizer, seed=1),
            args=_config(
                tmp_path,
                max_steps=1,
                per_device_train_batch_size=batch,
                gradient_accumulation_steps=accum,
                raft_objective="raft+ce",
                train_sampling_strategy="sequential",
                learning_rate=1e-3,
            ),
            train_dataset=data,
            processing_class=tokenizer,
            peft_config=_lora(dropout=0.0),
        )
        trainer.train()
        logs[(batch, accum)] = trainer.state.log_history[0]
    ref = logs[(4, 1)]
    for key in ((1, 4),):
        assert logs[key]["loss"] == pytest.approx(ref["loss"], rel=1e-5)
        assert logs[key]["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-4)
        assert logs[key]["score_mse"] == pytest.approx(ref["score_mse"], rel=1e-5)


def test_ce_loss_equals_the_causal_lm_loss_and_raft_ce_adds_up(tokenizer, tmp_path):
    data = short_encoded_toy(tokenizer, 4, seed=4)
    model = make_model(tokenizer, seed=3)
    batch = RAFTDataCollator(tokenizer.pad_token_id, padding_side="right")(list(data))
    reference = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    losses = {}
    for objective in ("ce", "raft", "raft+ce"):
        trainer = RAFTTrainer(
            model,
            args=_config(tmp_path, raft_objective=objective, ce_weight=0.5),
            train_dataset=data,
            processing_class=tokenizer,
        )
        trainer.model.eval()
        with torch.no_grad():
            losses[objective] = trainer.compute_loss(trainer.model, dict(batch)).item()
    assert losses["ce"] == pytest.approx(reference.item(), rel=1e-5)
    assert losses["raft+ce"] == pytest.approx(losses["raft"] + 0.5 * losses["ce"], rel=1e-5)


def test_raft_reaches_lower_score_mse_than_ce_in_the_same_steps(tokenizer, tmp_path):
    """Toy task: the gold score is 1.0 + 0.5 * (number of 'warm' in the text)."""
    train, held_out = short_encoded_toy(tokenizer, 64, seed=0), short_encoded_toy(tokenizer, 32, seed=1)
    results = {}
    for objective in ("raft", "ce"):
        trainer = RAFTTrainer(
            make_model(tokenizer, seed=0),
            args=toy_fit_config(tmp_path, raft_objective=objective),
            train_dataset=train,
            eval_dataset=held_out,
            processing_class=tokenizer,
        )
        trainer.train()
        results[objective] = trainer.evaluate()
    assert results["raft"]["eval_score_mse"] < 0.5 * results["ce"]["eval_score_mse"]
    assert results["raft"]["eval_icc"] > results["ce"]["eval_icc"]


def test_the_authors_loss_scale_divides_the_batch_mean_by_the_batch_size_again(tokenizer, tmp_path):
    """raft_loss_scale="authors": their MSE mean divided by the micro-batch's rows (1/B^2 of the sum); the CE term
    keeps its scale; evaluation (prediction_step) is scaled the same way."""
    data = short_encoded_toy(tokenizer, 4, seed=5)
    model = make_model(tokenizer, seed=6)
    batch = RAFTDataCollator(tokenizer.pad_token_id)(list(data))
    losses, evals = {}, {}
    for scale in ("batch-mean", "authors"):
        for objective in ("raft", "raft+ce"):
            trainer = RAFTTrainer(
                model,
                args=_config(tmp_path, raft_objective=objective, raft_loss_scale=scale),
                train_dataset=data,
                processing_class=tokenizer,
            )
            trainer.model.eval()
            with torch.no_grad():
                losses[scale, objective] = trainer.compute_loss(trainer.model, dict(batch)).item()
            evals[scale, objective] = trainer.prediction_step(trainer.model, dict(batch), True)[0].item()
    for table in (losses, evals):
        assert table["authors", "raft"] == pytest.approx(table["batch-mean", "raft"] / 4, rel=1e-6)
        ce = table["batch-mean", "raft+ce"] - table["batch-mean", "raft"]
        assert table["authors", "raft+ce"] == pytest.approx(table["batch-mean", "raft"] / 4 + ce, rel=1e-6)
    with pytest.raises(ValueError, match="raft_loss_scale must be one of batch-mean, authors"):
        _config(tmp_path, raft_loss_scale="twice")


def test_early_stopping_adds_transformers_callback_and_needs_evaluations(tokenizer, tmp_path):
    from transformers import EarlyStoppingCallback

    data = short_encoded_toy(tokenizer, 4, seed=5)
    args = _config(
        tmp_path,
        eval_strategy="steps",
        eval_steps=100,
        save_strategy="steps",
        save_steps=100,
        load_best_model_at_end=True,
        metric_for_best_model="eval_loss",
        early_stopping_patience=10,
    )
    trainer = RAFTTrainer(
        make_model(tokenizer), args=args, train_dataset=data, eval_dataset=data, processing_class=tokenizer
    )
    (stopping,) = [c for c in trainer.callback_handler.callbacks if isinstance(c, EarlyStoppingCallback)]
    assert (stopping.early_stopping_patience, stopping.early_stopping_threshold) == (10, 0.0)
    plain = RAFTTrainer(make_model(tokenizer), args=_config(tmp_path), train_dataset=data, processing_class=tokenizer)
    assert not any(isinstance(c, EarlyStoppingCallback) for c in plain.callback_handler.callbacks)
    with pytest.raises(ValueError, match="early_stopping_patience needs evaluations"):
        _config(tmp_path, early_stopping_patience=10)
    with pytest.raises(ValueError, match="early_stopping_patience needs the metric to watch"):
        _config(tmp_path, early_stopping_patience=10, eval_strategy="steps", eval_steps=5)
    with pytest.raises(ValueError, match="early_stopping_patience must be a positive integer"):
        _config(tmp_path, early_stopping_patience=0, eval_strategy="steps", metric_for_best_model="eval_loss")
    with pytest.raises(ValueError, match="early_stopping_threshold must be >= 0"):
        _config(tmp_path, early_stopping_threshold=-1.0)
