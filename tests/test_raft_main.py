"""`raft_trainer.main(script_args, training_args, model_args)` (TRL's scripts' shape, issue 48 item 2): a tiny model
trains from the three dataclasses, through the same path as the command line (the same first logged loss and
gradient norm as `train.py` with the same settings), and what it refuses it refuses before a model loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="training needs the train extra")

from mis_bench_dataset.toolkit.errors import UsageError  # noqa: E402

SETTINGS = {
    "max_steps": 2,
    "per_device_train_batch_size": 2,
    "learning_rate": 1e-3,
    "logging_steps": 1,
    "max_length": 2048,
}


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from raft_trainer import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2")


def _arguments(model: Path, dataset: Path, out: Path, **training):
    from raft_trainer import RAFTConfig, RAFTModelConfig, RAFTScriptArguments

    return (
        RAFTScriptArguments(dataset_dir=str(dataset)),
        RAFTConfig(str(out), train_sampling_strategy="sequential", use_cpu=True, **{**SETTINGS, **training}),
        RAFTModelConfig(model_name_or_path=str(model), lora_dropout=0.0),
    )


def _first_log(out: Path) -> dict:
    return json.loads((out / "trainer_state.json").read_text())["log_history"][0]


def test_main_trains_a_tiny_model_from_dataclasses(tiny_model_dir, synthetic_build, tmp_path):
    from mis_icc_metric import read_predictions, read_references
    from raft_trainer import main

    out = tmp_path / "from-python"
    assert main(*_arguments(tiny_model_dir, synthetic_build, out)) == 0
    predictions = read_predictions(out / "predictions_test.csv")
    assert {(p["video_id"], p["dimension"]) for p in predictions} == set(read_references(synthetic_build, split="test"))
    assert (out / "adapter_model.safetensors").is_file() and (out / "scores_test.json").is_file()
    assert _first_log(out)["step"] == 1 and json.loads((out / "trainer_state.json").read_text())["global_step"] == 2


@pytest.mark.slow
def test_main_and_the_command_line_are_one_path(tiny_model_dir, synthetic_build, tmp_path):
    """The same settings as dataclasses and as flags: the same first logged loss and gradient norm."""
    from raft_trainer import main
    from raft_trainer.train import main as script

    out = tmp_path / "from-python"
    assert main(*_arguments(tiny_model_dir, synthetic_build, out)) == 0

    flags = ["--model_name_or_path", str(tiny_model_dir), "--dataset_dir", str(synthetic_build)]
    flags += ["--train_sampling_strategy", "sequential", "--lora_dropout", "0"]
    flags += [part for key, value in SETTINGS.items() for part in (f"--{key}", str(value))]
    assert script([*flags, "--output_dir", str(tmp_path / "from-flags")]) == 0
    python, command_line = _first_log(out), _first_log(tmp_path / "from-flags")
    assert python["loss"] == pytest.approx(command_line["loss"], rel=1e-6)
    assert python["grad_norm"] == pytest.approx(command_line["grad_norm"], rel=1e-5)


def test_main_refuses_starting_processes_and_a_max_length_below_the_prompts(tiny_model_dir, synthetic_build, tmp_path):
    from raft_trainer import main

    script_args, training_args, model_args = _arguments(tiny_model_dir, synthetic_build, tmp_path / "a")
    script_args.num_processes = 2
    with pytest.raises(UsageError, match="accelerate launch"):
        main(script_args, training_args, model_args)
    assert not (tmp_path / "a").exists()
    # a max_length other than the default is the user's choice: kept, so one below the prompts' floor is refused
    with pytest.raises(UsageError, match="max_length 64 is too small"):
        main(*_arguments(tiny_model_dir, synthetic_build, tmp_path / "b", max_length=64))
    assert not (tmp_path / "b").exists()


def test_main_refuses_a_cuda_only_setting_on_a_cpu(tiny_model_dir, synthetic_build, tmp_path):
    import torch

    from raft_trainer import main

    if torch.cuda.is_available():
        pytest.skip("the refusal is a CPU machine's")
    with pytest.raises(UsageError, match="paged_adamw_8bit"):
        main(*_arguments(tiny_model_dir, synthetic_build, tmp_path / "c", optim="paged_adamw_8bit"))
