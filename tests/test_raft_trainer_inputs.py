"""RAFTTrainer takes what TRL's trainers take: scoring rows in `evaluate` and `predict` (not only in `__init__`),
and a model given by its folder or Hub id, loaded with `model_init_kwargs`, its tokenizer from the same folder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from raft_trainer import RAFTConfig, RAFTTrainer, ScoringEncoder, prepare_raft_dataset

from _raft_helpers import cpu_config, make_model, make_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def rows(synthetic_build):
    """Eight labelled scoring rows of the synthetic build, as `mis-bench build` writes them."""
    import datasets

    return datasets.load_dataset(str(synthetic_build), "scoring")["train"].select(range(8))


def _config(tmp_path, **kwargs) -> RAFTConfig:
    # one eval batch: the eval loss is the mean over all rows
    return cpu_config(tmp_path, **{"per_device_eval_batch_size": 16, **kwargs})


def _encoded(rows, tokenizer, config):
    from raft_trainer.digits import DigitTokens

    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), config.max_length)
    return prepare_raft_dataset(rows, encoder, split="reference")


def test_evaluate_takes_scoring_rows_like_the_constructor(rows, tokenizer, tmp_path):
    config = _config(tmp_path)
    trainer = RAFTTrainer(make_model(tokenizer), args=config, train_dataset=rows, processing_class=tokenizer)
    from_rows = trainer.evaluate(eval_dataset=rows)  # was KeyError: 'text'
    from_encoded = trainer.evaluate(eval_dataset=_encoded(rows, tokenizer, config))
    at_init = RAFTTrainer(
        make_model(tokenizer), args=config, train_dataset=rows, eval_dataset=rows, processing_class=tokenizer
    ).evaluate()
    keys = ("eval_loss", "eval_score_mse", "eval_mean_predicted_score", "eval_icc")
    assert [from_rows[k] for k in keys] == [from_encoded[k] for k in keys] == [at_init[k] for k in keys]
    assert from_rows["eval_loss"] == pytest.approx(from_rows["eval_score_mse"], rel=1e-6)  # raft loss = score MSE
    named = trainer.evaluate(eval_dataset={"a": rows, "b": rows.select(range(4))})
    assert named["eval_a_loss"] == from_rows["eval_loss"] and named["eval_b_loss"] != named["eval_a_loss"]


def test_predict_takes_scoring_rows_and_drops_the_unlabelled(rows, tokenizer, tmp_path):
    config = _config(tmp_path)
    trainer = RAFTTrainer(make_model(tokenizer), args=config, train_dataset=rows, processing_class=tokenizer)
    unlabelled = rows.map(lambda row, i: {"score": None if i == 0 else row["score"]}, with_indices=True)
    out = trainer.predict(unlabelled)
    reference = trainer.predict(_encoded(rows.select(range(1, 8)), tokenizer, config))
    assert out.predictions.shape == (7, 2)
    np.testing.assert_array_equal(out.predictions, reference.predictions)
    np.testing.assert_array_equal(out.label_ids, np.array(rows["score"][1:], dtype=np.float32))
    predicted = out.predictions[:, 0].astype(np.float64)
    mse = float(np.mean((predicted - np.asarray(rows["score"][1:])) ** 2))  # by hand, from the arrays returned
    assert out.metrics["test_loss"] == pytest.approx(mse, rel=1e-5)
    assert out.metrics["test_score_mse"] == pytest.approx(mse, rel=1e-6)


def test_a_model_folder_is_loaded_with_model_init_kwargs_and_its_own_tokenizer(rows, tmp_path):
    from raft_trainer import save_tiny_model
    from raft_trainer.tiny import tiny_model, tiny_tokenizer

    folder = save_tiny_model(tmp_path / "tiny", seed=3)
    trainer = RAFTTrainer(
        str(folder), args=_config(tmp_path, max_steps=1, model_init_kwargs={"dtype": "float32"}), train_dataset=rows
    )
    reference = tiny_model(tiny_tokenizer(), seed=3).state_dict()
    loaded = trainer.model.state_dict()
    assert set(loaded) == set(reference) and all(torch.equal(loaded[k], reference[k]) for k in reference)
    assert trainer.processing_class.get_vocab() == tiny_tokenizer().get_vocab()
    trainer.train()
    assert np.isfinite(trainer.state.log_history[-1]["train_loss"])
    half = RAFTTrainer(str(folder), args=_config(tmp_path, model_init_kwargs={"dtype": "bfloat16"}), train_dataset=rows)
    assert half.model.dtype == torch.bfloat16  # the kwargs decide how the weights load
    with pytest.raises(ValueError, match="needs `processing_class`"):
        RAFTTrainer(make_model(tiny_tokenizer()), args=_config(tmp_path), train_dataset=rows)
