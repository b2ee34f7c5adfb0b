"""The `paper` prompt style in the RAFT trainer: encoders, raw video with the paper's sampling, and `train.py` with the
Table 4 recipes on a tiny model (CPU)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import datasets
import pytest
import torch
from test_protocol import check_paper_user_text, reference_indices

from mis_bench_dataset import paper_prompt
from mis_bench_dataset.protocol import VideoSampling
from raft_trainer import DigitTokens, RAFTConfig, RAFTTrainer, ReadoutOptions, ScoringEncoder, save_tiny_model
from raft_trainer.data import conversation, prompt_messages
from raft_trainer.recipes import PAPER_TABLE4_RECIPES, SOUND_TABLE4_RECIPES

from _raft_helpers import (
    make_fake_video_processor,
    make_tokenizer,
    make_vl_model,
    make_vl_tokenizer,
    raw_video_rows,
    short_raft_config,
    toy_rows,
)


def test_paper_messages_and_conversation_are_the_protocol():
    row = {**toy_rows(1)[0], "dimension": "abc"}
    paper = paper_prompt("abc", row["transcript"])
    assert prompt_messages(row, prompt_style="paper") == [
        {"role": "system", "content": paper.system},
        {"role": "user", "content": paper.user},
    ]
    check_paper_user_text(paper.user, "abc", row["transcript"])
    assert conversation(row, "paper")["completion"] == [
        {"role": "assistant", "content": f"The score prediction is: {row['score']:.1f}"}
    ]
    assert prompt_messages(row)[0]["content"] != paper.system  # the default stays the toolkit's prompt
    with pytest.raises(ValueError, match="unknown prompt style 'fancy'"):
        prompt_messages(row, prompt_style="fancy")


def test_scoring_encoder_trains_only_the_completion_after_the_score_line():
    tokenizer = make_tokenizer()
    row = toy_rows(1)[0]
    encoded = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), None, prompt_style="paper").encode(
        row, f"{row['score']:.1f}"
    )
    ids, labels = encoded["input_ids"], encoded["labels"]
    prompt_len = labels.count(-100)
    assert labels[prompt_len:] == ids[prompt_len:] and all(label == -100 for label in labels[:prompt_len])
    paper = paper_prompt(row["dimension"], row["transcript"])
    assert tokenizer.decode(ids[:prompt_len]) == (
        f"<|im_start|>system\n{paper.system}<|im_end|>\n<|im_start|>user\n{paper.user}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tokenizer.decode(ids[prompt_len:]).startswith(f"The score prediction is: {row['score']:.1f}")
    assert tokenizer.decode(ids[encoded["score_index"] : encoded["score_index"] + 3]) == f"{row['score']:.1f}"


def test_raft_config_prompt_style_and_video_fields(tmp_path):
    config = RAFTConfig(str(tmp_path), prompt_style="paper", video_frames=16, use_cpu=True)
    assert config.raw_video_sampling == VideoSampling(frames=16)
    assert RAFTConfig(str(tmp_path), use_cpu=True).prompt_style == "direct"
    aliased = RAFTConfig(str(tmp_path), prompt_style="toolkit", use_cpu=True)  # the trainer's earlier name
    assert aliased.prompt_style == "direct" and aliased.setting.prompt_style == "direct"
    with pytest.raises(ValueError, match="prompt_style must be one of direct, paper"):
        RAFTConfig(str(tmp_path), prompt_style="cot", use_cpu=True)
    with pytest.raises(ValueError, match="RAFTConfig: video sampling: .*exceed"):
        RAFTConfig(str(tmp_path), video_frames=64, video_max_pixels=1000, use_cpu=True)


@pytest.mark.slow
def test_raw_video_with_the_paper_style_trains_and_tells_the_processor_the_budget(tmp_path):
    """Two LoRA steps on a tiny Qwen2.5-VL; the stand-in processor receives the paper-style chat, frames sampled by
    the rule and the pixel budget (the real processor's video path needs torchvision, which does not import here)."""
    from peft import LoraConfig

    tokenizer = make_vl_tokenizer()
    processor = make_fake_video_processor(tokenizer)
    rows = raw_video_rows(tmp_path, 4, sizes=((50, 28, 28), (120, 28, 56)))
    args = short_raft_config(
        tmp_path / "out", modality="video+text", prompt_style="paper", video_frames=8, video_max_pixels=8 * 60000
    )
    trainer = RAFTTrainer(
        make_vl_model(tokenizer, seed=4),
        args=args,
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=processor,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    assert trainer.input_source == "raw"
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    assert processor.calls and all(
        {k: v for k, v in call["videos_kwargs"].items() if k != "video_metadata"}
        == {"do_sample_frames": False, "size": {"shortest_edge": 12544, "longest_edge": 120000}}
        for call in processor.calls
    )
    assert {len(frames) for frames in processor.videos_seen} == {8}
    for call in processor.calls:
        (metadata,) = call["videos_kwargs"]["video_metadata"]
        assert metadata["frames_indices"] == reference_indices(metadata["total_num_frames"], 8)
    for text in processor.texts:  # the paper's chat: no "attached" note, the video before the text
        assert "of the response is attached" not in text
        assert "<|vision_end|>###Task Description:\n" in text and "###Score:<|im_end|>" in text


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2")


CPU_OVERRIDES = ["--load_in_4bit", "false", "--bf16", "false", "--optim", "adamw_torch"]


def _train(recipe, model_dir, build, out, *extra: str) -> int:
    from raft_trainer.train import main

    return main(
        [
            "--config",
            str(recipe),
            "--model",
            str(model_dir),
            "--dataset",
            str(build),
            "--output_dir",
            str(out),
            *CPU_OVERRIDES,
            "--per_device_train_batch_size",
            "1",
            "--predict_batch_size",
            "16",
            *extra,
        ]
    )


@pytest.mark.parametrize("recipes", ["paper", "sound"])
@pytest.mark.parametrize("condition", ["MIS-RAFT", "standard fine-tuning"])
def test_table4_recipes_train_predict_and_score_with_the_paper_style(
    tiny_model_dir, synthetic_build, tmp_path, recipes, condition
):
    """Two steps of each Table 4 training recipe, as the authors ran it (full-softmax digits, their loss scale and
    early stopping) and with the sound defaults, on the tiny model on the CPU."""
    from mis_icc_metric import read_predictions, read_references

    recipe = (PAPER_TABLE4_RECIPES if recipes == "paper" else SOUND_TABLE4_RECIPES)[condition]
    out = tmp_path / "out"
    assert _train(recipe, tiny_model_dir, synthetic_build, out, "--max_steps", "2") == 0
    setting = {
        "modality": "video+text",
        "input_source": "features",
        "prompt_style": "paper",
        "trained": True,
        "method": "ce" if condition == "standard fine-tuning" else "raft",
        "synthetic": True,
        "feature_format": "text",
    }
    assert json.loads((out / "setting.json").read_text()) == setting
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and all(math.isfinite(h["loss"]) for h in state["log_history"] if "loss" in h)
    assert (out / "adapter_model.safetensors").is_file()
    args = torch.load(out / "training_args.bin", weights_only=False)
    as_run = recipes == "paper"
    assert args.early_stopping_patience == (10 if as_run else None)
    assert args.renormalize_digits is not (as_run and condition == "MIS-RAFT")
    assert args.raft_loss_scale == ("authors" if as_run and condition == "MIS-RAFT" else "batch-mean")
    assert args.video_sampling == ("paper" if as_run else "fixed")
    predictions = read_predictions(out / "predictions_test.csv")
    assert {(p["video_id"], p["dimension"]) for p in predictions} == set(read_references(synthetic_build, split="test"))
    scores = json.loads((out / "scores_test.json").read_text())
    assert scores["setting"] == setting and "mean_icc" in scores


@pytest.mark.slow
def test_the_authors_early_stopping_stops_and_keeps_the_best_checkpoint(tiny_model_dir, synthetic_build, tmp_path):
    """The MIS-RAFT recipe as they ran it, evaluating every step: with a learning rate of 0 the eval loss never
    improves, so a patience of 1 stops at the second evaluation and the first checkpoint is the best one."""
    out = tmp_path / "stop"
    extra = ["--max_steps", "6", "--eval_steps", "1", "--save_steps", "1", "--early_stopping_patience", "1"]
    assert (
        _train(PAPER_TABLE4_RECIPES["MIS-RAFT"], tiny_model_dir, synthetic_build, out, *extra, "--learning_rate", "0")
        == 0
    )
    state = json.loads((out / "trainer_state.json").read_text())
    evals = [h["eval_loss"] for h in state["log_history"] if "eval_loss" in h]
    assert state["global_step"] == 2 and len(evals) == 2 and evals[0] == evals[1]
    assert Path(state["best_model_checkpoint"]).name == "checkpoint-1" and state["best_metric"] == evals[0]


def test_table4_raw_inference_recipe_predicts_with_the_base_model(tiny_model_dir, synthetic_build, tmp_path):
    """`train: false`: no step, no adapter; the predictions equal predict_scores of the untouched model (the
    recipe's LoRA adapter is at its initialisation, B = 0, so it changes nothing)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mis_bench_dataset import BuiltDataset
    from mis_icc_metric import read_predictions
    from raft_trainer import predict_scores
    from raft_trainer.train import main

    out = tmp_path / "raw"
    assert (
        main(
            [
                "--config",
                str(PAPER_TABLE4_RECIPES["raw inference"]),
                "--model",
                str(tiny_model_dir),
                "--dataset",
                str(synthetic_build),
                "--output_dir",
                str(out),
                *CPU_OVERRIDES,
                "--modality",
                "text",
                "--predict_batch_size",
                "16",
            ]
        )
        == 0
    )
    assert json.loads((out / "setting.json").read_text()) == {
        "modality": "text",
        "input_source": "text",
        "prompt_style": "paper",
        "trained": False,
        "method": "raw",
        "synthetic": True,
    }
    assert not (out / "adapter_model.safetensors").exists() and not (out / "trainer_state.json").exists()
    rows = BuiltDataset.of(synthetic_build).rows("test")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    reference = predict_scores(
        model,
        AutoTokenizer.from_pretrained(tiny_model_dir),
        rows,
        RAFTConfig(prompt_style="paper", max_length=None),
        readout=ReadoutOptions(show_progress=False),
    )
    got = {(p["video_id"], p["dimension"]): p["prediction"] for p in read_predictions(out / "predictions_test.csv")}
    assert [got[(r["video_id"], r["dimension"])] for r in rows] == pytest.approx(reference.tolist(), abs=1e-5)
