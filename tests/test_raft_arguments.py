"""`raft_trainer/train.py`'s command line: TRL's TrlParser over RAFTScriptArguments, RAFTConfig and RAFTModelConfig,
the packaged Appendix D.1 recipe, flags over the recipe, and one-line refusals (no training here)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import yaml

from mis_bench_dataset.toolkit.errors import UsageError
from raft_trainer import RAFTConfig, RAFTModelConfig, RAFTScriptArguments, make_parser
from raft_trainer.arguments import DATACLASSES
from raft_trainer.config import gpu_bf16_available
from raft_trainer.recipes import PAPER_D1_RECIPE

# The paper's Appendix D.1, read off its text: (dataclass, field, value).
PAPER_D1 = [
    (RAFTModelConfig, "model_name_or_path", "Qwen/Qwen2.5-VL-7B-Instruct"),
    (RAFTModelConfig, "load_in_4bit", True),
    (RAFTModelConfig, "bnb_4bit_quant_type", "nf4"),
    (RAFTModelConfig, "use_peft", True),
    (RAFTConfig, "num_train_epochs", 2),
    (RAFTConfig, "learning_rate", 2e-5),
    (RAFTConfig, "per_device_train_batch_size", 2),
    (RAFTConfig, "max_length", 512),
    (RAFTConfig, "bf16", True),
    (RAFTConfig, "optim", "paged_adamw_32bit"),
]
# Not stated in D.1; the toolkit's LoRA, which the recipe writes out.
TOOLKIT_LORA = [
    (RAFTModelConfig, "lora_r", 8),
    (RAFTModelConfig, "lora_alpha", 16),
    (RAFTModelConfig, "lora_dropout", 0.1),
    (RAFTModelConfig, "lora_target_modules", ["q_proj", "v_proj"]),
]
# bf16 on a machine without a bf16 GPU is only accepted by TrainingArguments with use_cpu.
BF16_HERE = [] if gpu_bf16_available() else ["--use_cpu", "true"]


def _parse(*argv: str):
    """Parse as train.py does, without the machine check (the recipe asks for CUDA; this box may have none)."""
    parsed = make_parser(check_machine=False).parse_args_and_config(list(argv))
    return {type(obj): obj for obj in parsed}


def _value(obj, name):
    value = getattr(obj, name)
    return getattr(value, "value", value)  # enums (optim) as their string


def test_the_recipe_sets_every_appendix_d1_value_in_its_dataclass():
    recipe = yaml.safe_load(PAPER_D1_RECIPE.read_text())
    parsed = _parse("--config", str(PAPER_D1_RECIPE), "--dataset_dir", "unused", *BF16_HERE)
    for owner, name, expected in PAPER_D1 + TOOLKIT_LORA:
        assert name in recipe, f"{name} is not written in the recipe"
        assert _value(parsed[owner], name) == expected, name
    # every key of the recipe belongs to exactly one dataclass and arrives there unchanged
    fields = {cls: {f.name for f in dataclasses.fields(cls) if f.init} for cls in DATACLASSES}
    for key, value in recipe.items():
        owners = [cls for cls, names in fields.items() if key in names]
        assert len(owners) == 1, key
        assert _value(parsed[owners[0]], key) == value, key


def test_a_flag_overrides_the_recipe_and_the_rest_of_the_recipe_stays():
    parsed = _parse(
        "--config",
        str(PAPER_D1_RECIPE),
        "--dataset_dir",
        "unused",
        *BF16_HERE,
        "--learning_rate",
        "1e-3",
        "--lora_r",
        "4",
        "--max_length",
        "1024",
        "--raft_objective",
        "raft+ce",
    )
    training, model = parsed[RAFTConfig], parsed[RAFTModelConfig]
    assert (training.learning_rate, model.lora_r, training.max_length) == (1e-3, 4, 1024)
    assert training.raft_objective == "raft+ce"
    assert (training.num_train_epochs, _value(training, "optim"), model.lora_alpha, model.load_in_4bit) == (
        2,
        "paged_adamw_32bit",
        16,
        True,
    )


def test_short_and_dashed_spellings_and_defaults_without_a_recipe():
    parsed = _parse(
        "--model",
        "m",
        "--dataset",
        "d",
        "--output-dir",
        "o",
        "--max-length",
        "100",
        "--input-source",
        "features",
        "--no-predict",
        "--no_renormalize_digits",
    )
    script, training, model = parsed[RAFTScriptArguments], parsed[RAFTConfig], parsed[RAFTModelConfig]
    assert (model.model_name_or_path, script.dataset_dir, training.output_dir) == ("m", "d", "o")
    assert training.max_length == 100
    assert (training.input_source, script.predict, training.renormalize_digits) == ("features", False, False)
    # defaults come from the dataclasses: the paper's where D.1 states them, TRL's loss_type untouched
    assert (training.num_train_epochs, training.learning_rate, training.per_device_train_batch_size) == (2.0, 2e-5, 2)
    assert (training.raft_objective, training.loss_type, _value(training, "optim")) == ("raft", "nll", "adamw_torch")
    assert (model.use_peft, model.lora_r, model.lora_alpha) == (True, 8, 16)
    assert (model.load_in_4bit, model.dtype) == (False, None)


def test_retired_and_abbreviated_flags_are_refused_not_matched():
    # `--no-eval` would otherwise abbreviate `--no-eval-do-concat-batches`; `--loss-type raft` is TRL's field now
    with pytest.raises(ValueError, match=r"not used.*--no-eval"):
        _parse("--model", "m", "--dataset", "d", "--no-eval")
    with pytest.raises(UsageError, match="--loss-type"):
        _parse("--model", "m", "--dataset", "d", "--loss-type", "raft")


def _main_error(capsys, argv) -> str:
    from raft_trainer.train import main

    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("train.py: error: "), lines
    return lines[0]


def test_an_old_recipe_key_gets_a_one_line_pointer_to_the_new_field(tmp_path, capsys):
    old = tmp_path / "old.yaml"
    old.write_text("loss_type: raft\n")
    line = _main_error(capsys, ["--config", str(old), "--model", "m", "--dataset", "d", *BF16_HERE])
    assert "loss_type='raft'" in line and "raft_objective='raft'" in line
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("epochs: 2\n")
    assert "--epochs" in _main_error(capsys, ["--config", str(unknown), "--model", "m", "--dataset", "d"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_the_recipe_on_a_cpu_is_refused_in_one_line_naming_every_override(capsys):
    line = _main_error(capsys, ["--config", str(PAPER_D1_RECIPE), "--dataset_dir", "unused"])
    for part in ("load_in_4bit", "paged_adamw_32bit", "bf16", "--load_in_4bit false --optim adamw_torch --bf16 false"):
        assert part in line
    line = _main_error(capsys, ["--model", "m", "--dataset", "d", "--optim", "paged_adamw_8bit"])
    assert "optim paged_adamw_8bit" in line and "load_in_4bit" not in line and "--optim adamw_torch" in line
