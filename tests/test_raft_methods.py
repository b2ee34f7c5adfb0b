"""The trainer's other methods (issue 40): the number token loss (`raft_objective="ntl"`, `"raft+ntl"`) and the
regression head (`head="regression"`), each against a hand computation (and NTL against the `ntloss` package),
with finite gradients, a falling loss on a toy set, a save/load/predict round trip and one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from peft import LoraConfig

from raft_trainer import DigitTokens, RAFTConfig, RAFTDataCollator, RAFTTrainer, ReadoutOptions
from raft_trainer.loss import number_token_loss_sum

from _raft_helpers import cpu_config, make_model, make_tokenizer, short_encoded_toy, toy_fit_config, toy_rows


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


def _config(tmp_path, **kwargs) -> RAFTConfig:
    return cpu_config(tmp_path, **kwargs)


def _lora():
    return LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")


def _regression_model(tokenizer, seed: int = 0):
    """The tiny Qwen2 backbone with a one-output regression head (built from its config, nothing downloaded)."""
    from transformers import Qwen2ForSequenceClassification

    config = make_model(tokenizer, seed=seed).config
    config.num_labels = 1
    config.pad_token_id = tokenizer.pad_token_id
    torch.manual_seed(seed)
    return Qwen2ForSequenceClassification(config)


# -- the number token loss -------------------------------------------------------------------------------------
def test_number_token_loss_equals_a_hand_computation():
    """NTL-WAS on fixed logits: sum_d softmax_digits(d) |d - y| (Zausinger et al. 2025, eq. 4)."""
    digit_ids = torch.tensor([5, 6, 7, 8, 9, 10, 11, 12, 13, 14])  # "0".."9" at ids 5..14 of a 16-token vocabulary
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 2, 16, generator=generator)
    gold = torch.tensor([[3, 4], [1, 0], [5, 9]])
    expected = 0.0
    for row in range(3):
        for position in range(2):
            z = logits[row, position, 5:15].double().numpy()
            p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            expected += sum(p[d] * abs(d - int(gold[row, position])) for d in range(10))
    assert number_token_loss_sum(logits, gold, digit_ids).item() == pytest.approx(expected, rel=1e-6)
    # a distribution all on the gold digit costs nothing; all on the digit k away costs k
    sharp = torch.full((1, 16), -1e4)
    sharp[0, 5 + 7] = 0.0
    assert number_token_loss_sum(sharp, torch.tensor([7]), digit_ids).item() == pytest.approx(0.0, abs=1e-6)
    assert number_token_loss_sum(sharp, torch.tensor([2]), digit_ids).item() == pytest.approx(5.0, rel=1e-6)


def _loss_of(tokenizer, model, batch, tmp_path, **config) -> torch.Tensor:
    trainer = RAFTTrainer(
        model,
        args=_config(tmp_path, **config),
        train_dataset=short_encoded_toy(tokenizer, 4),
        processing_class=tokenizer,
    )
    trainer.model.eval()
    with torch.no_grad():
        return trainer.compute_loss(trainer.model, dict(batch))


def test_ntl_term_equals_the_ntloss_package_on_the_same_logits(tokenizer, tmp_path):
    """The trainer's `ntl` loss on a batch equals `ntloss.NTLoss` (the paper's form: `reweigh=False`) on the same
    completion logits and labels: the completion's only digits are the score's two."""
    ntloss = pytest.importorskip("ntloss")
    data = short_encoded_toy(tokenizer, 6, seed=3)
    model = make_model(tokenizer, seed=2)
    batch = RAFTDataCollator(tokenizer.pad_token_id)(list(data))
    with torch.no_grad():
        logits = model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], logits_to_keep=batch["logits_keep"]
        ).logits
    reference = ntloss.NTLoss(tokenizer, vocab_size=logits.size(-1), reweigh=False)(logits, batch["keep_labels"])
    ours = _loss_of(tokenizer, model, batch, tmp_path, raft_objective="ntl")
    assert ours.item() == pytest.approx(reference.item(), rel=1e-5)
    raft = _loss_of(tokenizer, model, batch, tmp_path, raft_objective="raft")
    both = _loss_of(tokenizer, model, batch, tmp_path, raft_objective="raft+ntl", ntl_weight=0.25)
    assert both.item() == pytest.approx(raft.item() + 0.25 * ours.item(), rel=1e-5)


def test_ntl_gradients_are_finite_and_not_all_zero(tokenizer, tmp_path):
    data = short_encoded_toy(tokenizer, 4, seed=1)
    model = make_model(tokenizer, seed=1)
    batch = RAFTDataCollator(tokenizer.pad_token_id)(list(data))
    trainer = RAFTTrainer(
        model, args=_config(tmp_path, raft_objective="ntl"), train_dataset=data, processing_class=tokenizer
    )
    trainer.compute_loss(trainer.model, dict(batch)).backward()
    grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


@pytest.mark.slow  # about 5-6 s on the 2-core box
def test_ntl_training_lowers_the_loss_on_a_toy_set(tokenizer, tmp_path):
    """The toy task (score = 1.0 + 0.5 x the number of 'warm'): 20 steps of `ntl` lower its held-out loss."""
    train, held_out = short_encoded_toy(tokenizer, 64, seed=0), short_encoded_toy(tokenizer, 32, seed=1)
    trainer = RAFTTrainer(
        make_model(tokenizer, seed=0),
        args=toy_fit_config(tmp_path, raft_objective="ntl"),
        train_dataset=train,
        eval_dataset=held_out,
        processing_class=tokenizer,
    )
    before = trainer.evaluate()
    trainer.train()
    after = trainer.evaluate()
    assert math.isfinite(after["eval_loss"]) and after["eval_loss"] < 0.7 * before["eval_loss"]
    assert after["eval_score_mse"] < before["eval_score_mse"]


def test_ntl_refusals_are_one_line():
    with pytest.raises(ValueError, match=r"'ntl' takes the softmax over the ten digits") as err:
        RAFTConfig("u", use_cpu=True, raft_objective="ntl", renormalize_digits=False)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="ntl_weight must be >= 0"):
        RAFTConfig("u", use_cpu=True, raft_objective="raft+ntl", ntl_weight=-1)
    assert RAFTConfig("u", use_cpu=True, raft_objective="raft+ntl", ntl_weight=0.5).number_token_weight == 0.5
    assert RAFTConfig("u", use_cpu=True, raft_objective="raft").number_token_weight == 0.0


# -- the regression head -----------------------------------------------------------------------------------------
def test_regression_loss_equals_each_row_run_alone_on_its_prompt(tokenizer, tmp_path):
    """The batched loss (left and right padding) is the mean squared error of the head's output on each row's prompt
    (ids up to the score's integer digit) run alone, unpadded."""
    data = short_encoded_toy(tokenizer, 5, seed=4)
    model = _regression_model(tokenizer, seed=3).eval()
    with torch.no_grad():
        alone = [model(input_ids=torch.tensor([row["input_ids"][: row["score_index"]]])).logits[0, 0] for row in data]
    expected = np.mean([(float(p) - row["score"]) ** 2 for p, row in zip(alone, data, strict=True)])
    for side in ("left", "right"):
        batch = RAFTDataCollator(tokenizer.pad_token_id, padding_side=side)(list(data))
        loss = _loss_of(tokenizer, model, batch, tmp_path, head="regression", padding_side=side)
        assert loss.item() == pytest.approx(expected, rel=1e-5)


def test_regression_lora_trains_the_head_fully_and_the_loss_falls(tokenizer, tmp_path):
    train, held_out = short_encoded_toy(tokenizer, 32, seed=0), short_encoded_toy(tokenizer, 16, seed=1)
    trainer = RAFTTrainer(
        _regression_model(tokenizer),
        args=toy_fit_config(tmp_path, head="regression", max_steps=12, logging_steps=4),
        train_dataset=train,
        eval_dataset=held_out,
        processing_class=tokenizer,
        peft_config=_lora(),  # a causal-LM LoRA config, as `mis-bench train` builds it: turned to SEQ_CLS
    )
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert any("lora_A" in n and "q_proj" in n for n in trainable) and any("v_proj" in n for n in trainable)
    assert any(n.endswith("score.modules_to_save.default.weight") for n in trainable), trainable
    assert not any("mlp" in n or "embed_tokens" in n for n in trainable)
    before = trainer.evaluate()
    trainer.train()
    after = trainer.evaluate()
    steps = [h for h in trainer.state.log_history if "grad_norm" in h]
    assert steps and all(math.isfinite(h["grad_norm"]) for h in steps)
    assert after["eval_loss"] < 0.5 * before["eval_loss"]
    assert after["eval_loss"] == pytest.approx(after["eval_score_mse"], rel=1e-5)


def test_regression_save_load_predict_round_trip(tokenizer, tmp_path, caplog):
    """The saved adapter (LoRA + the head) loads back into the same scores through `predict_scores`."""
    from raft_trainer import ScoringEncoder, predict_scores
    from raft_trainer.regression import is_regression_folder, load_regression_model, read_regression_scores

    base = tmp_path / "base"
    make_model(tokenizer, seed=5).save_pretrained(base)
    tokenizer.save_pretrained(base)
    config = _config(tmp_path, head="regression", max_steps=3, learning_rate=1e-2, per_device_train_batch_size=4)
    trainer = RAFTTrainer(
        str(base),
        args=config,
        train_dataset=short_encoded_toy(tokenizer, 12),
        processing_class=tokenizer,
        peft_config=_lora(),
    )
    trainer.train()
    out = tmp_path / "saved"
    trainer.save_model(str(out))
    rows = toy_rows(6, seed=9)
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None)
    prompts = [encoder.encode_prompt(row) for row in rows]
    live = read_regression_scores(trainer.model, prompts, tokenizer.pad_token_id)
    assert is_regression_folder(out) and not is_regression_folder(base)
    loaded = load_regression_model(str(out), tokenizer)
    np.testing.assert_allclose(read_regression_scores(loaded, prompts, tokenizer.pad_token_id), live, rtol=1e-5)
    assert np.isfinite(live).all() and len(set(np.round(live, 6))) > 1
    # Outputs outside the scale are clipped to it, and said: a clipped score is not the head's own answer.
    outside = int(((live < 1.0) | (live > 5.0)).sum())
    with caplog.at_level("WARNING", logger="raft_trainer.predict"):
        clipped = predict_scores(loaded, tokenizer, rows, config, readout=ReadoutOptions(show_progress=False))
    np.testing.assert_allclose(clipped, np.clip(live, 1.0, 5.0), rtol=1e-5)
    assert outside > 0 and f"{outside} of {len(rows)} regression-head outputs lay outside [1, 5]" in caplog.text
    # predict_scores reads the same outputs: the head scaled first so that they lie inside the scale (after 3 steps
    # they are about 0.5, which the scale's clip would turn into 1.0 on both sides)
    with torch.no_grad():
        for name, parameter in loaded.named_parameters():
            if "score" in name and "lora" not in name:
                parameter.mul_(6.0)
    inside = read_regression_scores(loaded, prompts, tokenizer.pad_token_id)
    assert ((inside > 1.0) & (inside < 5.0)).all() and len(set(np.round(inside, 6))) > 1
    np.testing.assert_allclose(
        predict_scores(loaded, tokenizer, rows, config, readout=ReadoutOptions(show_progress=False)), inside, rtol=1e-5
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"raft_objective": "ce"},
            r"head='regression' trains the squared error of its one output; raft_objective='ce'",
        ),
        ({"raft_objective": "ntl"}, r"raft_objective='ntl' is a token objective of the LM head"),
        ({"raft_objective": "raft+ce"}, r"raft_objective='raft\+ce'"),
        ({"renormalize_digits": False}, "reads no digits"),
        ({"modality": "video+text", "input_source": "raw"}, "not raw media"),
        ({"head": "classifier"}, "head must be one of lm, regression"),
    ],
)
def test_regression_refusals_are_one_line(settings, message):
    settings = {"head": "regression", **settings}
    with pytest.raises(ValueError, match=message) as err:
        RAFTConfig("u", use_cpu=True, **settings)
    assert "\n" not in str(err.value)


def test_the_method_name_of_each_setting():
    names = {
        RAFTConfig("u", use_cpu=True, **kw).method
        for kw in ({}, {"raft_objective": "ntl"}, {"raft_objective": "raft+ntl"}, {"head": "regression"})
    }
    assert names == {"raft", "ntl", "raft+ntl", "regression"}


def test_a_trainer_refuses_a_causal_lm_under_the_regression_head(tokenizer, tmp_path):
    with pytest.raises(ValueError, match=r"needs AutoModelForSequenceClassification\(num_labels=1\)"):
        RAFTTrainer(
            make_model(tokenizer),
            args=_config(tmp_path, head="regression"),
            train_dataset=short_encoded_toy(tokenizer, 4),
            processing_class=tokenizer,
        )


def test_digit_tokens_of_the_test_tokenizer_are_the_ten_digits(tokenizer):
    """The NTL comparison assumes `ntloss` finds the same ten digit tokens the trainer reads."""
    digits = DigitTokens.from_tokenizer(tokenizer)
    assert [tokenizer.convert_ids_to_tokens(i) for i in digits.digit_ids] == list("0123456789")


def test_the_regression_recipe_is_paper_d1_with_the_head_and_a_text_backbone():
    """The budget is D.1's, value for value: the recipe differs from paper_d1.yaml only in the head and in the
    backbone (Qwen2.5-VL has no sequence-classification class in transformers)."""
    import yaml

    from raft_trainer import make_parser
    from raft_trainer.recipes import PAPER_D1_RECIPE, PAPER_D1_REGRESSION_RECIPE

    d1 = yaml.safe_load(PAPER_D1_RECIPE.read_text())
    regression = yaml.safe_load(PAPER_D1_REGRESSION_RECIPE.read_text())
    differing = {k for k in d1.keys() | regression.keys() if d1.get(k) != regression.get(k)}
    assert differing == {"head", "model_name_or_path"}
    assert regression["head"] == "regression" and regression["model_name_or_path"] == "Qwen/Qwen2.5-7B-Instruct"
    argv = ["--config", str(PAPER_D1_REGRESSION_RECIPE), "--dataset_dir", "unused", "--use_cpu", "true"]
    _, config, model = make_parser(check_machine=False).parse_args_and_config(argv)
    assert (config.head, config.method, model.lora_target_modules) == ("regression", "regression", ["q_proj", "v_proj"])


def test_a_backbone_without_a_sequence_classifier_is_refused_in_one_line(tokenizer, tmp_path):
    """Qwen2.5-VL (D.1's model) has no AutoModelForSequenceClassification: refused before any weight loads."""
    from mis_bench_dataset.toolkit.errors import UsageError
    from raft_trainer.regression import load_regression_model

    from _raft_helpers import make_vl_model, make_vl_tokenizer

    vl_tokenizer = make_vl_tokenizer()
    make_vl_model(vl_tokenizer).config.save_pretrained(tmp_path / "vl")
    with pytest.raises(UsageError, match="no AutoModelForSequenceClassification for 'qwen2_5_vl'") as err:
        load_regression_model(str(tmp_path / "vl"), vl_tokenizer)
    assert "\n" not in err.value.line() and "Qwen/Qwen2.5-7B-Instruct" in err.value.line()


def test_the_transformers_backend_reads_a_regression_folder_as_predict_scores_does(tokenizer, tmp_path):
    """`mis-bench run --backend transformers --score-from regression` on a saved head (full weights here): each
    row's raw output equals the trainer's readout on the same paper prompt, its score is that output clipped to
    [1, 5]; another readout on the head, or the regression readout on a language model, is refused in one line."""
    from eval_scripts import DecodingConfig, Prompt, get_backend, render_paper_prompt
    from mis_bench_dataset.toolkit.errors import UsageError
    from raft_trainer import ScoringEncoder, save_tiny_model
    from raft_trainer.regression import read_regression_scores

    from _harness_helpers import scoring_rows

    folder = tmp_path / "head"
    model = _regression_model(tokenizer, seed=7)
    with torch.no_grad():
        model.score.weight.mul_(-10.9)  # outputs near 3 (about -0.28 before), inside the scale
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    rows = scoring_rows(2, dimensions=("empathy", "wau"))
    prompts = []
    for row in rows:
        paper = render_paper_prompt(row, "text")
        prompts.append(Prompt(row["video_id"], row["dimension"], paper.user, system=paper.system))
    backend = get_backend("transformers", str(folder), batch_size=3, device="cpu")
    decoding = DecodingConfig.for_style("paper", score_from="regression")
    completions = sorted(backend.complete(prompts, decoding), key=lambda c: c.index)
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None, prompt_style="paper")
    reference = read_regression_scores(
        backend.hf_model, [encoder.encode_prompt(r) for r in rows], tokenizer.pad_token_id
    )
    outputs = np.array([c.expected["head_output"] for c in completions])
    np.testing.assert_allclose(outputs, reference, rtol=1e-5, atol=1e-6)
    assert ((outputs > 1) & (outputs < 5)).all() and len(set(np.round(outputs, 6))) > 1
    assert [c.expected["score"] for c in completions] == [float(np.clip(v, 1.0, 5.0)) for v in outputs]
    assert all(c.expected["readout"] == "regression" and c.text == f"{c.expected['score']:.2f}" for c in completions)
    with pytest.raises(UsageError, match="is a regression head"):
        list(backend.complete(prompts, DecodingConfig.for_style("paper", score_from="expected")))
    lm = get_backend("transformers", str(save_tiny_model(tmp_path / "lm")), device="cpu")
    with pytest.raises(UsageError, match="reads a regression head; .* is a language model"):
        list(lm.complete(prompts, decoding))
