"""Raw video through the RAFT loss: a tiny randomly initialised Qwen2.5-VL with hand-made video inputs.

The processor side (AutoProcessor + torchvision video decoding) cannot run here: torchvision's
PyPI build does not import beside this CPU torch. These tests build what the processor would
return (video placeholder tokens, `pixel_values_videos`, `video_grid_thw`) and check the collator
and the RAFT loss on the model.
"""

from __future__ import annotations

import math

import datasets
import pytest
import torch

from raft_trainer import RAFTConfig, RAFTDataCollator, RAFTTrainer, ReadoutOptions, expected_decimal_score

from _raft_helpers import make_vl_model, make_vl_tokenizer, short_raft_config, video_encoded_toy


@pytest.fixture(scope="module")
def tokenizer():
    return make_vl_tokenizer()


def _config(tmp_path, **kwargs) -> RAFTConfig:
    return short_raft_config(tmp_path, **kwargs)


@pytest.mark.parametrize("side", ["left", "right"])
def test_collator_concatenates_video_inputs_in_row_order(tokenizer, side):
    rows = video_encoded_toy(tokenizer, 3)
    batch = RAFTDataCollator(tokenizer.pad_token_id, side)(rows)
    expected = torch.cat([torch.as_tensor(r["pixel_values_videos"]) for r in rows])
    assert torch.equal(batch["pixel_values_videos"], expected)
    assert batch["video_grid_thw"].tolist() == [[1, 4, 4], [2, 4, 8], [1, 4, 4]]
    video_token = tokenizer.convert_tokens_to_ids("<|video_pad|>")
    # one placeholder per merged patch, per row, in the same order as the patches
    per_row = (batch["input_ids"] == video_token).sum(dim=1)
    assert per_row.tolist() == (batch["video_grid_thw"].prod(dim=1) // 4).tolist()
    digits = torch.tensor([tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)])
    rows_index = torch.arange(3)
    assert torch.isin(batch["input_ids"][rows_index, batch["score_positions"][:, 0] + 1], digits).all()
    mixed = [rows[0], {k: v for k, v in rows[1].items() if k not in ("pixel_values_videos", "video_grid_thw")}]
    with pytest.raises(ValueError, match=r"batch rows \[1\] lack `pixel_values_videos`"):
        RAFTDataCollator(tokenizer.pad_token_id, side)(mixed)


def test_raft_loss_reads_the_score_positions_of_a_video_language_model(tokenizer, tmp_path):
    model = make_vl_model(tokenizer)
    rows = video_encoded_toy(tokenizer, 2)
    trainer = RAFTTrainer(
        model, args=_config(tmp_path), train_dataset=datasets.Dataset.from_list(rows), processing_class=tokenizer
    )
    batch = RAFTDataCollator(tokenizer.pad_token_id, "left")(rows)
    model.train()
    loss, outputs = trainer.compute_loss(model, dict(batch), return_outputs=True)
    loss.backward()

    # independent reference: full logits, read at the collator's positions
    with torch.no_grad():
        full = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            pixel_values_videos=batch["pixel_values_videos"],
            video_grid_thw=batch["video_grid_thw"],
        ).logits
    rows_index = torch.arange(2)
    int_pos, frac_pos = batch["score_positions"].unbind(dim=1)
    reference = expected_decimal_score(full[rows_index, int_pos], full[rows_index, frac_pos], trainer._digit_ids)
    torch.testing.assert_close(outputs["predicted_score"], reference, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(loss.detach(), ((reference - batch["score"]) ** 2).mean(), rtol=1e-5, atol=1e-5)
    # each row alone (no padding, its own video) gives the same score: padding and patch order are right
    model.eval()
    for i, row in enumerate(rows):
        alone = RAFTDataCollator(tokenizer.pad_token_id, "left")([row])
        with torch.no_grad():
            _, single = trainer.compute_loss(model, dict(alone), return_outputs=True)
        torch.testing.assert_close(single["predicted_score"][0], outputs["predicted_score"][i], rtol=1e-4, atol=1e-4)
    model.train()
    # the video reaches the loss: the vision tower gets gradients, and other pixels give another loss
    patch_grad = model.model.visual.patch_embed.proj.weight.grad
    assert patch_grad is not None and patch_grad.abs().sum() > 0
    other = dict(batch, pixel_values_videos=torch.randn_like(batch["pixel_values_videos"]))
    with torch.no_grad():
        assert not torch.isclose(trainer.compute_loss(model, other), loss.detach())


def test_two_lora_steps_with_video_inputs(tokenizer, tmp_path):
    from peft import LoraConfig

    rows = video_encoded_toy(tokenizer, 4, seed=1)
    trainer = RAFTTrainer(
        make_vl_model(tokenizer, seed=1),
        args=_config(tmp_path),
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)


def test_raw_video_rows_through_a_processor_train_with_lora(tokenizer, tmp_path):
    from peft import LoraConfig

    from raft_trainer.digits import DigitTokens
    from raft_trainer.raw_media import RawMediaEncoder

    from _raft_helpers import make_fake_video_processor, raw_video_rows

    processor = make_fake_video_processor(tokenizer)
    rows = raw_video_rows(tmp_path, 4)
    encoder = RawMediaEncoder(processor, DigitTokens.from_tokenizer(tokenizer), "video+text")
    encoded = encoder.encode_training_row(rows[1])
    ids, video_token = encoded["input_ids"], tokenizer.convert_tokens_to_ids("<|video_pad|>")
    # 75 frames of 28x56 -> 32 sampled frames -> 16 frame pairs x 2 x 4 patches -> one token per 2x2 patches
    assert ids.count(video_token) == 16 * 2 * 4 // 4 == encoded["pixel_values_videos"].shape[0] // 4
    gold = f"{rows[1]['score']:.1f}"
    assert tokenizer.decode(ids[encoded["score_index"] : encoded["score_index"] + 3]) == gold
    trained = [i for i, label in enumerate(encoded["labels"]) if label != -100]
    assert tokenizer.decode([ids[i] for i in trained]).startswith(f"The score prediction is: {gold}")
    assert "The video of the response is attached." in tokenizer.decode(ids)

    trainer = RAFTTrainer(  # input_source "auto": every row has a video_path, so the raw media are used
        make_vl_model(tokenizer, seed=2),
        args=_config(tmp_path, modality="video+text"),
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=processor,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    assert trainer.args.input_source == "auto" and trainer.input_source == "raw"
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)


def test_raw_video_is_refused_when_the_processor_cannot_take_it(tokenizer, tmp_path):
    from eval_scripts import UnsupportedSetting

    with pytest.raises(UnsupportedSetting, match="cannot take video"):
        RAFTTrainer(
            make_vl_model(tokenizer),
            args=_config(tmp_path, modality="video+text", input_source="raw"),
            train_dataset=datasets.Dataset.from_list(
                [{"video_id": "a", "dimension": "empathy", "transcript": "", "score": 3.0}]
            ),
            processing_class=tokenizer,
        )
    with pytest.raises(ValueError, match="needs an audio/video modality"):
        _config(tmp_path, input_source="raw")


def test_processor_outputs_the_collator_cannot_batch_are_refused_not_dropped(tokenizer, tmp_path):
    from eval_scripts import UnsupportedSetting
    from raft_trainer.digits import DigitTokens
    from raft_trainer.raw_media import RawMediaEncoder

    from _raft_helpers import make_fake_video_processor, raw_video_rows

    processor = make_fake_video_processor(tokenizer)
    original = processor.apply_chat_template

    def with_audio_features(conversation, **kwargs):
        out = original(conversation, **kwargs)
        if kwargs.get("tokenize"):
            out["input_features"] = torch.zeros(1, 128, 30)
        return out

    processor.apply_chat_template = with_audio_features
    encoder = RawMediaEncoder(processor, DigitTokens.from_tokenizer(tokenizer), "video+text")
    with pytest.raises(UnsupportedSetting, match=r"returned \['input_features'\].*does not batch"):
        encoder.encode_training_row(raw_video_rows(tmp_path, 1)[0])


@pytest.mark.parametrize("method", ["greedy", "exact"])
def test_predict_scores_on_raw_video_matches_single_sequence_references(tokenizer, tmp_path, method):
    from raft_trainer import predict_scores
    from raft_trainer.digits import DigitTokens
    from raft_trainer.loss import digit_probabilities, expected_digit
    from raft_trainer.raw_media import RawMediaEncoder

    from _raft_helpers import make_fake_video_processor, raw_video_rows

    processor = make_fake_video_processor(tokenizer)
    model = make_vl_model(tokenizer, seed=3).eval()
    rows = raw_video_rows(tmp_path, 3, seed=5)
    scores = predict_scores(
        model,
        processor,
        rows,
        RAFTConfig(modality="video+text", input_source="raw", max_length=None),
        readout=ReadoutOptions(batch_size=2, method=method),
    )

    digits = DigitTokens.from_tokenizer(tokenizer)
    ids = digits.tensor()
    encoder = RawMediaEncoder(processor, digits, "video+text")
    for row, score in zip(rows, scores, strict=True):
        prompt = encoder.encode_prompt(row)
        media = {k: prompt[k] for k in ("pixel_values_videos", "video_grid_thw")}

        def p_int_and_frac(integer: int, prompt=prompt, media=media):
            """One forward over prompt + [integer, '.']: digit distributions at the two score positions."""
            seq = torch.tensor([prompt["input_ids"] + [digits.digit_ids[integer], digits.point_id]])
            with torch.no_grad():
                logits = model(input_ids=seq, **media).logits[0]
            return digit_probabilities(logits[-3], ids), digit_probabilities(logits[-1], ids)

        p_int, _ = p_int_and_frac(0)
        if method == "greedy":
            best = int(p_int.argmax())
            expected = expected_digit(p_int) + 0.1 * expected_digit(p_int_and_frac(best)[1])
        else:
            weights = p_int[1:6] / p_int[1:6].sum()
            expected = sum(weights[i - 1] * (i + 0.1 * expected_digit(p_int_and_frac(i)[1])) for i in range(1, 6))
        assert score == pytest.approx(float(expected), abs=1e-4)
