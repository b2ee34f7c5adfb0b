"""The accelerate configurations shipped for `mis-bench train --accelerate_config NAME|PATH` (TRL's layouts: DDP, FSDP2,
DeepSpeed ZeRO-2/3): each read by accelerate's own loader and launch parser, the launch command they make, the refusals
before any process starts, and the package data that ships them. DeepSpeed itself needs CUDA (the GPU check runs a
ZeRO-2 step); FSDP is refused on a CPU, where accelerate would run the processes as DDP."""

from __future__ import annotations

import configparser
import fnmatch
import sys
from pathlib import Path

import pytest
import yaml

from raft_trainer.accelerate_configs import ACCELERATE_CONFIGS, ACCELERATE_CONFIGS_DIR, config_path
from raft_trainer.launch import TRAIN_SCRIPT, accelerate_config_file, launch_command, load_accelerate_config

REPO = Path(__file__).resolve().parents[1]
LAYOUTS = {"multi_gpu": "MULTI_GPU", "fsdp": "FSDP", "zero2": "DEEPSPEED", "zero3": "DEEPSPEED"}


def _launch_dests() -> set[str]:
    from accelerate.commands.launch import launch_command_parser

    return {action.dest for action in launch_command_parser()._actions}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_each_shipped_config_is_read_by_accelerate_and_names_only_launch_options(name):
    path = config_path(name)
    assert load_accelerate_config(path) == LAYOUTS[name]  # accelerate's loader refuses unknown top-level keys
    raw = yaml.safe_load(path.read_text())
    assert raw["mixed_precision"] == "no" and raw["num_processes"] == 2 and raw["num_machines"] == 1
    dests = _launch_dests()
    nested = {f"fsdp_{k}" if not k.startswith("fsdp_") else k for k in raw.get("fsdp_config", {})}
    nested |= set(raw.get("deepspeed_config", {}))
    # `accelerate launch` copies nested keys onto its own options silently: one it does not know would be lost
    assert nested <= dests, sorted(nested - dests)


def test_the_sharded_layouts_carry_what_a_lora_or_qlora_run_needs():
    fsdp = yaml.safe_load(config_path("fsdp").read_text())["fsdp_config"]
    assert fsdp["fsdp_version"] == 2 and fsdp["fsdp_state_dict_type"] == "FULL_STATE_DICT"  # a whole adapter saved
    assert fsdp["fsdp_activation_checkpointing"] is True and fsdp["fsdp_cpu_ram_efficient_loading"] is True
    assert fsdp["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    zero2 = yaml.safe_load(config_path("zero2").read_text())["deepspeed_config"]
    zero3 = yaml.safe_load(config_path("zero3").read_text())["deepspeed_config"]
    assert (zero2["zero_stage"], zero2["zero3_init_flag"]) == (2, False)
    assert (zero3["zero_stage"], zero3["zero3_init_flag"], zero3["zero3_save_16bit_model"]) == (3, True, True)
    for name in ("fsdp", "zero3"):  # QLoRA under sharding: the storage dtype flag is named in the file
        assert "--bnb_4bit_quant_storage bfloat16" in config_path(name).read_text()
    assert set(ACCELERATE_CONFIGS) == {p.stem for p in ACCELERATE_CONFIGS_DIR.glob("*.yaml")}


def test_a_name_or_a_path_gives_the_file_and_the_launch_command_uses_it(tmp_path):
    assert accelerate_config_file("multi_gpu", cuda=False) == config_path("multi_gpu")
    own = tmp_path / "two_machines.yaml"
    raw = yaml.safe_load(config_path("multi_gpu").read_text())
    own.write_text(yaml.safe_dump({**raw, "num_machines": 2, "machine_rank": 1, "main_process_ip": "10.0.0.1"}))
    assert accelerate_config_file(str(own), cuda=False) == own
    assert accelerate_config_file("zero3", cuda=True) == config_path("zero3")
    head = [sys.executable, "-m", "accelerate.commands.launch"]
    tail = ["--mixed_precision", "no", "--dynamo_backend", "no", str(TRAIN_SCRIPT), "--x", "1"]
    assert launch_command(1, ["--x", "1"], own) == [*head, "--config_file", str(own), *tail]  # the file's count
    assert launch_command(4, ["--x", "1"], own) == [*head, "--config_file", str(own), "--num_processes", "4", *tail]
    plain = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1"]
    assert launch_command(2, ["--x", "1"]) == [*head, *plain, *tail]


def test_refusals_are_one_line_before_any_process_starts(tmp_path, capsys, monkeypatch):
    import raft_trainer.launch
    from eval_scripts.cli import main as mis_bench_main

    def no_launch(*args, **kwargs):
        raise AssertionError("processes were started for a refused configuration")

    monkeypatch.setattr(raft_trainer.launch.subprocess, "Popen", no_launch)
    monkeypatch.setattr(raft_trainer.launch, "_cuda_available", lambda: False)
    bad = tmp_path / "bad.yaml"
    bad.write_text("distributed_type: MULTI_GPU\nnot_an_accelerate_key: 1\n")
    # checked before the build is opened (the folder need not exist) and before any process starts
    base = ["train", "--model", "m", "--dataset", str(tmp_path / "build"), "--output_dir", str(tmp_path / "o")]
    expected = {
        "fsdp": "FSDP needs CUDA GPUs",
        "zero2": "DEEPSPEED needs CUDA GPUs",
        "zero3": "DEEPSPEED needs CUDA GPUs",
        "fsdp3": "neither a shipped configuration nor a file",
        str(bad): "accelerate cannot read it (The config file at it had unknown keys (['not_an_accelerate_key'])",
    }
    for value, reason in expected.items():
        assert mis_bench_main([*base, "--accelerate_config", value]) == 2, value
        errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith("mis-bench train: error: --accelerate_config"), errors
        assert reason in errors[0], errors


def test_setup_cfg_ships_the_configs_as_package_data():
    from setuptools import find_packages

    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    include = cfg["options.packages.find"]["include"].split()
    packages = find_packages(str(REPO), include=include)
    assert "raft_trainer.accelerate_configs" in packages
    patterns = [p.strip() for p in cfg["options.package_data"]["*"].split(",")]
    files = sorted(ACCELERATE_CONFIGS_DIR.glob("*.yaml"))
    assert len(files) == 4 and all(any(fnmatch.fnmatch(f.name, p) for p in patterns) for f in files)
