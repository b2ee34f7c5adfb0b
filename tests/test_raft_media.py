"""Audio/video settings of MIS-RAFT: feature-derived descriptors joined on video_id, explicit
"not available" lines, refusals that say why, LoRA steps and prediction with audio+video+text."""

from __future__ import annotations

import json
import re

import datasets
import numpy as np
import pytest

from eval_scripts import UnsupportedSetting
from mis_bench_dataset.dataset.feature_descriptors import (
    audio_descriptors,
    describe_audio,
    describe_video,
    video_descriptors,
)
from mis_bench_dataset.setting_inputs import resolve_input_source
from mis_bench_dataset.toolkit.errors import UsageError
from raft_trainer import DigitTokens, ScoringEncoder
from raft_trainer.media import (
    MEDIA_CONTEXT_COLUMN,
    attach_feature_context,
    check_processor_takes_media,
    feature_context,
    load_feature_contexts,
)

from _raft_helpers import make_model, make_tokenizer

ALL = "audio+video+text"


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def features_rows(synthetic_build):
    return datasets.load_dataset(str(synthetic_build), "features", split="test").with_format("numpy")


@pytest.fixture(scope="module")
def contexts(synthetic_build):
    return load_feature_contexts(synthetic_build, ALL)


def test_contexts_are_the_harness_descriptors_joined_on_video_id(features_rows, contexts):
    for row in features_rows:
        block = contexts[str(row["video_id"])]
        assert block.startswith("Feature-derived inputs")
        assert describe_audio(audio_descriptors(row)) in block  # the harness's own text, not a copy
        assert describe_video(video_descriptors(row)) in block
        assert block.index("Audio descriptors") < block.index("Video descriptors")
    one = features_rows[0]
    audio_only, video_only = feature_context(one, "audio+text"), feature_context(one, "video+text")
    assert "Audio descriptors" in audio_only and "Video descriptors" not in audio_only
    assert "Video descriptors" in video_only and "Audio descriptors" not in video_only
    assert feature_context(one, "text") == ""


@pytest.mark.parametrize("absent", ["audio", "video"])
def test_a_medium_that_was_not_released_gets_an_explicit_not_available_line(features_rows, absent):
    row = dict(features_rows[0])
    flags = {"audio": ("has_librosa", "has_prosody"), "video": ("has_openface",)}[absent]
    for flag in flags:
        row[flag] = False
    block = feature_context(row, ALL)
    assert f"{absent.capitalize()} descriptors: not available for this response" in block
    present = "video" if absent == "audio" else "audio"
    assert f"{present.capitalize()} descriptors (feature-derived" in block


def test_prompts_carry_the_descriptors_and_a_multimodal_setting_never_runs_text_only(
    synthetic_build, contexts, tokenizer
):
    scoring = datasets.load_dataset(str(synthetic_build), "scoring", split="test")
    with_context = attach_feature_context(scoring, contexts, ALL, "test split")
    digits = DigitTokens.from_tokenizer(tokenizer)
    encoder = ScoringEncoder(tokenizer, digits, max_length=None, modality=ALL)
    row = with_context[0]
    text = tokenizer.decode(encoder.encode_prompt(row))
    assert contexts[row["video_id"]].strip() in text
    assert text.index("Transcript of the therapist's response") < text.index("Feature-derived inputs")
    with pytest.raises(ValueError, match=r"modality 'audio\+video\+text' needs the row's `media_context`.*text-only"):
        encoder.encode_prompt(scoring[0])
    with pytest.raises(ValueError, match="carries a `media_context` but the modality is 'text'"):
        ScoringEncoder(tokenizer, digits, max_length=None).encode_prompt(row)
    with pytest.raises(UnsupportedSetting, match=r"1 video\(s\) have no row in the `features` config"):
        attach_feature_context(scoring, {k: v for k, v in contexts.items() if k != scoring[0]["video_id"]}, ALL)


def test_input_source_resolution_and_refusals():
    rows = [{"video_id": "a", "video_path": "/m/a.mp4", "audio_path": None}]
    assert resolve_input_source("text", rows) == "text"
    assert resolve_input_source("video+text", rows) == "raw"
    assert resolve_input_source(ALL, rows) == "features"  # no audio path: descriptors for both
    assert resolve_input_source("video+text", [{"video_id": "a"}]) == "features"
    with pytest.raises(UnsupportedSetting, match="lack audio_path.*--input-source features"):
        resolve_input_source(ALL, rows, "raw")
    with pytest.raises(UnsupportedSetting, match="unknown modality"):
        resolve_input_source("smell+text", rows)
    with pytest.raises(UnsupportedSetting, match="raw media need an audio/video setting"):
        resolve_input_source("text", rows, "raw")

    class TextOnlyProcessor:
        tokenizer = object()

    with pytest.raises(UnsupportedSetting, match="cannot take video.*video_processor"):
        check_processor_takes_media(TextOnlyProcessor(), "video+text")


def test_lora_steps_and_prediction_with_audio_video_text(synthetic_build, contexts, tokenizer, tmp_path):
    from peft import LoraConfig

    from raft_trainer import RAFTConfig, RAFTTrainer, ReadoutOptions, predict_scores

    scoring = datasets.load_dataset(str(synthetic_build), "scoring")
    train = attach_feature_context(scoring["train"].select(range(2)), contexts, ALL)
    args = RAFTConfig(
        str(tmp_path),
        modality=ALL,
        max_steps=2,
        per_device_train_batch_size=1,
        learning_rate=1e-3,
        max_length=2048,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        bf16=False,
    )
    trainer = RAFTTrainer(
        make_model(tokenizer),
        args=args,
        train_dataset=train,
        processing_class=tokenizer,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    first = tokenizer.decode(trainer.train_dataset[0]["input_ids"])
    assert contexts[train[0]["video_id"]].strip() in first
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 2 and all(np.isfinite(losses))

    test_rows = attach_feature_context(scoring["test"].select(range(2)), contexts, ALL).to_list()
    model = trainer.model
    with_media = predict_scores(
        model,
        tokenizer,
        test_rows,
        RAFTConfig(modality=ALL, max_length=None),
        readout=ReadoutOptions(show_progress=False),
    )
    text_rows = [{k: v for k, v in r.items() if k != MEDIA_CONTEXT_COLUMN} for r in test_rows]
    text_only = predict_scores(model, tokenizer, text_rows, readout=ReadoutOptions(show_progress=False))
    assert with_media.shape == (2,) and np.all((with_media >= 0) & (with_media <= 9.9))
    assert not np.allclose(with_media, text_only)  # the descriptors reach the model
    with pytest.raises(ValueError, match="refusing to build a text-only prompt"):
        predict_scores(
            model,
            tokenizer,
            text_rows,
            RAFTConfig(modality=ALL, max_length=None),
            readout=ReadoutOptions(show_progress=False),
        )


def test_train_script_refuses_raw_media_the_release_does_not_have(synthetic_build, tmp_path, capsys):
    from raft_trainer.train import main

    argv = ["--model", str(tmp_path / "unused"), "--dataset", str(synthetic_build), "--output-dir", str(tmp_path / "o")]
    assert main([*argv, "--modality", "video+text", "--input-source", "raw"]) == 2
    assert main([*argv, "--modality", "smell+text"]) == 2
    err = capsys.readouterr().err
    raw, smell = [line for line in err.splitlines() if "error:" in line]
    assert raw.startswith("train.py: error: ") and re.search("lack video_path.*--input-source features", raw)
    assert smell.startswith("train.py: error: ") and "invalid choice: 'smell+text'" in smell


def test_train_script_refuses_a_model_whose_processor_cannot_take_video(tmp_path):
    from raft_trainer import save_tiny_model
    from raft_trainer.train import load_media_processor

    with pytest.raises(UsageError, match="cannot take video"):
        load_media_processor(str(save_tiny_model(tmp_path / "tiny-qwen2")), "video+text")


def test_train_script_records_the_setting(synthetic_build, tmp_path):
    from raft_trainer import save_tiny_model
    from raft_trainer.train import main

    out = tmp_path / "run"
    model_dir = save_tiny_model(tmp_path / "tiny-qwen2")
    assert (
        main(
            [
                "--model",
                str(model_dir),
                "--dataset",
                str(synthetic_build),
                "--output-dir",
                str(out),
                "--max-length",
                "2048",
                "--modality",
                "video+text",
                "--max-steps",
                "1",
                "--per-device-train-batch-size",
                "1",
                "--predict-batch-size",
                "16",
            ]
        )
        == 0
    )
    setting = {
        "modality": "video+text",
        "input_source": "features",
        "prompt_style": "direct",
        "trained": True,
        "method": "raft",
        "synthetic": True,
        "feature_format": "text",
    }
    assert json.loads((out / "setting.json").read_text()) == setting
    assert json.loads((out / "scores_test.json").read_text())["setting"] == setting


def test_real_subset_descriptors(subset10_dir, tmp_path_factory, tokenizer):
    from mis_bench_dataset import build_dataset

    out = tmp_path_factory.mktemp("raft_subset10") / "build"
    build_dataset(subset10_dir, out, progress=False)
    contexts = load_feature_contexts(out, ALL)
    scoring = datasets.load_dataset(str(out), "scoring", split="train")
    assert set(scoring["video_id"]) <= contexts.keys() and len(contexts) == 10
    for block in contexts.values():
        assert (
            "face detected in" in block
            and "estimated pitch: mean" in block
            and "descriptors: not available" not in block
        )
    encoder = ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), max_length=None, modality=ALL)
    row = attach_feature_context(scoring, contexts, ALL)[0]
    assert contexts[row["video_id"]].strip() in tokenizer.decode(encoder.encode_prompt(row))
