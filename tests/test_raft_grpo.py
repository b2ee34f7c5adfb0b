"""`--method grpo`: the rewards against hand computations, the prompts equal to RAFT's, the config carried over,
a few GRPO steps that run and save (and load back to the same scores), and the one-line refusals."""

from __future__ import annotations

import math
from types import SimpleNamespace

import datasets
import pytest
import torch

from mis_bench_dataset.toolkit.errors import UsageError
from raft_trainer import DigitTokens, RAFTConfig, ReadoutOptions, ScoringEncoder, make_grpo_trainer
from raft_trainer.data import COMPLETION_PREFIX
from raft_trainer.grpo import (
    WORST_SQUARED_ERROR,
    format_reward,
    grpo_config,
    grpo_rows,
    read_answer_score,
    score_reward,
)
from raft_trainer.methods import check_method

from _raft_helpers import cpu_config, make_model, make_tokenizer, toy_dataset, toy_rows


def _script(**overrides) -> SimpleNamespace:
    base = dict(
        method="grpo",
        train=True,
        generate_rationales=False,
        num_generations=2,
        max_completion_length=8,
        grpo_temperature=1.0,
        grpo_beta=0.0,
        grpo_reward="parsed",
        num_processes=1,
        accelerate_config=None,
    )
    return SimpleNamespace(**{**base, **overrides})


def _config(tmp_path, **kwargs) -> RAFTConfig:
    return cpu_config(tmp_path, **kwargs)


def test_the_rewards_equal_hand_computations():
    completions = [
        "The score prediction is: 3.4",
        [{"role": "assistant", "content": " The score prediction is: 1.0\n"}],  # conversational, spaces around
        "The score prediction is: 5.9",  # out of the scale
        "3.4",  # no score line
        "The score prediction is: 3.4 or 4.0",  # more than the line
        [],
    ]
    gold = [4.0, 2.5, 3.0, 3.4, 3.4, 1.0]
    assert score_reward(completions, gold) == pytest.approx(
        [-(0.6**2), -(1.5**2), -16.0, -16.0, -16.0, -16.0], abs=1e-12
    )
    assert format_reward(completions) == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert WORST_SQUARED_ERROR == (5.0 - 1.0) ** 2
    assert read_answer_score("The score prediction is: 2.5") == 2.5 and read_answer_score("score 2.5") is None


def test_grpo_prompts_are_the_raft_prompts_up_to_the_answer():
    tokenizer = make_tokenizer()
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None)
    rows = grpo_rows(toy_dataset(3), encoder)
    for row, original in zip(rows, toy_rows(3), strict=True):
        prompt = tokenizer(row["prompt"], add_special_tokens=False)["input_ids"]
        raft_prompt = encoder.encode_prompt(original)  # RAFT's: up to the score, after "The score prediction is: "
        assert raft_prompt[: len(prompt)] == prompt
        assert tokenizer.decode(raft_prompt[len(prompt) :]) == COMPLETION_PREFIX
        assert row["prompt"].endswith("<|im_start|>assistant\n") and row["score"] == original["score"]


def test_the_grpo_config_carries_the_runs_training_arguments(tmp_path):
    args = _config(tmp_path, learning_rate=3e-4, max_steps=7, seed=11, per_device_train_batch_size=4)
    config = grpo_config(args, _script(num_generations=4, max_completion_length=12, grpo_beta=0.05))
    assert (config.learning_rate, config.max_steps, config.seed, config.per_device_train_batch_size) == (
        3e-4,
        7,
        11,
        4,
    )
    assert (config.num_generations, config.max_completion_length, config.beta) == (4, 12, 0.05)
    assert config.output_dir == args.output_dir and config.remove_unused_columns is False


@pytest.mark.slow
def test_a_few_grpo_steps_run_save_and_load_back_to_the_same_scores(tmp_path):
    from peft import LoraConfig, PeftModel

    from raft_trainer import predict_scores

    tokenizer = make_tokenizer()
    trainer = make_grpo_trainer(
        make_model(tokenizer, seed=0),
        _config(tmp_path, max_steps=2, per_device_train_batch_size=2, learning_rate=1e-3),
        _script(),
        toy_dataset(4),
        tokenizer,
        peft_config=LoraConfig(r=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == 2 and all(math.isfinite(entry["loss"]) and entry["reward"] <= 1.0 for entry in logged)
    trainer.save_model(str(tmp_path / "saved"))
    rows = toy_rows(3)
    config = RAFTConfig(output_dir="u", use_cpu=True, max_length=None)
    trained = predict_scores(trainer.model, tokenizer, rows, config, readout=ReadoutOptions(show_progress=False))
    loaded = PeftModel.from_pretrained(make_model(tokenizer, seed=0), tmp_path / "saved")
    assert predict_scores(
        loaded, tokenizer, rows, config, readout=ReadoutOptions(show_progress=False)
    ) == pytest.approx(trained, abs=1e-5)
    assert torch.isfinite(torch.as_tensor(trained)).all()


@pytest.mark.parametrize(
    ("script", "config", "message"),
    [
        ({}, {"completion_style": "cot"}, "no reward parser for a CoT answer"),
        ({}, {"raft_objective": "ce"}, "raft_objective ce is RAFTTrainer's loss"),
        ({"train": False}, {}, "trains nothing"),
        ({"num_generations": 1}, {}, "compares a group of answers"),
        ({"num_generations": 4}, {}, "must be a multiple of --num_generations 4"),
        ({"generate_rationales": True}, {"completion_style": "cot"}, "not GRPO's"),
        ({"generate_rationales": True, "method": "raft"}, {}, "completion_style is 'score'"),
        ({"generate_rationales": True, "method": "raft", "num_processes": 2}, {"completion_style": "cot"}, "one proc"),
    ],
)
def test_combinations_that_make_no_sense_are_refused_in_one_line(tmp_path, script, config, message):
    with pytest.raises(UsageError, match=message) as refused:
        check_method(_script(**script), _config(tmp_path, **config))
    assert "\n" not in refused.value.line()


def test_raw_media_is_refused_for_grpo(tmp_path):
    args = _config(tmp_path)
    args.input_source = "raw"  # as check_run resolves it for rows with media paths
    with pytest.raises(UsageError, match="samples answers from text prompts"):
        check_method(_script(), args)
    check_method(_script(method="raft"), args)  # RAFT takes raw media


def test_grpo_rows_drop_unlabelled_rows():
    tokenizer = make_tokenizer()
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None)
    rows = toy_rows(3)
    rows[1]["score"] = None
    assert len(grpo_rows(datasets.Dataset.from_list(rows), encoder)) == 2
