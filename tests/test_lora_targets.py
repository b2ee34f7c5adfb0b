"""--lora_target_modules is checked against the model before it loads; one module name stays a name."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("peft")

from mis_bench_dataset.toolkit.errors import UsageError  # noqa: E402
from raft_trainer import save_tiny_model  # noqa: E402
from raft_trainer.lora_targets import as_module_names, check_lora_targets, missing_targets  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    save_tiny_model(folder)
    return folder


def _args(model, targets, use_peft=True):
    return SimpleNamespace(
        model_name_or_path=str(model),
        model_revision=None,
        use_peft=use_peft,
        lora_target_modules=targets,
    )


def test_one_module_name_is_a_name_not_a_regular_expression():
    assert as_module_names("q_proj") == ["q_proj"]  # what TRL's ModelConfig made of ["q_proj"]
    assert as_module_names("all-linear") == "all-linear" and as_module_names(r".*\.q_proj") == r".*\.q_proj"
    assert as_module_names(["q_proj", "v_proj"]) == ["q_proj", "v_proj"]


def test_names_match_as_peft_matches_a_list():
    names = {"model.layers.0.self_attn.q_proj", "model.layers.0.mlp.up_proj"}
    assert missing_targets(["q_proj", "self_attn.q_proj", "up_proj", "k_proj", "proj"], names) == ["k_proj", "proj"]


def test_a_single_target_of_the_model_passes_and_one_it_lacks_is_one_line(tiny):
    args = _args(tiny, "q_proj")
    check_lora_targets(args)
    assert args.lora_target_modules == ["q_proj"]
    with pytest.raises(UsageError) as caught:
        check_lora_targets(_args(tiny, ["q_proj", "query_key_value"]))
    line = caught.value.line()
    assert "query_key_value" in line and "q_proj" in line.split("use names it has")[1] and "\n" not in line
    check_lora_targets(_args(tiny, ["query_key_value"], use_peft=False))  # no adapter: nothing to check


def test_a_single_target_trains_through_peft(tiny):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    args = _args(tiny, "q_proj")
    check_lora_targets(args)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(tiny), LoraConfig(target_modules=args.lora_target_modules)
    )
    assert any("q_proj.lora_A" in name for name, _ in model.named_parameters())
