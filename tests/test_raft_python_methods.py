"""Every training method from Python, through the package's own names: GRPO, and CoT-RAFT's two stages."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("trl")

import raft_trainer  # noqa: E402
from raft_trainer import (  # noqa: E402
    CotScoringEncoder,
    DigitTokens,
    RAFTTrainer,
    ReadoutOptions,
    attach_rationales,
    generate_rationales,
    grpo_options,
    make_grpo_trainer,
    predict_cot_scores,
)

from _raft_helpers import cpu_config, make_model, make_tokenizer, toy_dataset, toy_rows  # noqa: E402


@pytest.mark.slow
def test_grpo_runs_from_python_with_the_scripts_defaults(tmp_path):
    from peft import LoraConfig

    tokenizer = make_tokenizer()
    options = grpo_options()
    options.max_completion_length = 8
    trainer = make_grpo_trainer(
        make_model(tokenizer, seed=0),
        cpu_config(tmp_path, max_steps=1, per_device_train_batch_size=2, learning_rate=1e-3),
        options,
        toy_dataset(2),
        tokenizer,
        peft_config=LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    assert type(trainer).__name__ == "GRPOTrainer"
    assert (trainer.args.num_generations, trainer.args.max_completion_length) == (options.num_generations, 8)
    trainer.train()
    assert all(math.isfinite(entry["loss"]) for entry in trainer.state.log_history if "loss" in entry)


@pytest.mark.slow
def test_cot_raft_stage_one_then_two_run_from_python(tmp_path):
    tokenizer = make_tokenizer()
    model = make_model(tokenizer, seed=0)
    encoder = CotScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None)
    rows = toy_rows(4)
    texts = generate_rationales(model, encoder, rows, max_new_tokens=6, temperature=0.0)  # stage one
    assert len(texts) == len(rows) and all(isinstance(text, str) for text in texts)
    keyed = {(row["video_id"], row["dimension"]): text for row, text in zip(rows, texts, strict=True)}
    train = attach_rationales(toy_dataset(4), keyed, where="python")
    assert train["rationale"] == texts
    config = cpu_config(tmp_path, max_steps=1, per_device_train_batch_size=2, completion_style="cot")
    trainer = RAFTTrainer(model, args=config, train_dataset=train, processing_class=tokenizer)  # stage two
    trainer.train()
    scores = predict_cot_scores(
        trainer.model, encoder, rows[:2], max_new_tokens=4, readout=ReadoutOptions(show_progress=False)
    )
    assert len(scores) == 2 and all(1.0 <= s <= 5.0 for s in scores)


def test_every_method_is_a_public_name():
    assert {"RAFTTrainer", "make_grpo_trainer", "generate_rationales", "predict_cot_scores"} <= set(
        raft_trainer.__all__
    )


def test_the_trainer_scores_unlabelled_rows_into_named_records(tmp_path):
    from raft_trainer import predict_scores

    tokenizer = make_tokenizer()
    config = cpu_config(tmp_path, max_steps=1)
    trainer = RAFTTrainer(
        make_model(tokenizer, seed=1), args=config, train_dataset=toy_dataset(4), processing_class=tokenizer
    )
    rows = [{key: value for key, value in row.items() if key != "score"} for row in toy_rows(3, seed=5)]  # no gold
    records = trainer.predict_scores(rows)
    assert [(r["video_id"], r["dimension"]) for r in records] == [(r["video_id"], r["dimension"]) for r in rows]
    expected = predict_scores(trainer.model, tokenizer, rows, config, readout=ReadoutOptions(show_progress=False))
    assert [r["prediction"] for r in records] == pytest.approx(list(expected))
