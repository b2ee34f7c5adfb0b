"""`raft_trainer/train.py` and `mis-bench train`: one process in-process, two processes under `accelerate launch`
(started by `--num_processes 2`), outputs claimed and readable by `mis-bench score`, one-line refusals.

Multi-process proof: with LoRA dropout 0 and sequential data order, the first optimizer step of two
processes x per-device batch 1 has the same loss and gradient norm as one process x batch 2. On a
CPU-only machine accelerate 1.x starts several gloo processes with `--multi_gpu` (its `--cpu` flag
alone runs a single process unless an MPI hostfile is given); CUDA machines use the same command.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "raft_trainer" / "train.py"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from raft_trainer import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2")


def _common(model: Path, dataset: Path, out: Path) -> list[str]:
    return [
        "--model_name_or_path",
        str(model),
        "--dataset_dir",
        str(dataset),
        "--output_dir",
        str(out),
        "--max_length",
        "2048",
        "--lora_dropout",
        "0",
        "--train_sampling_strategy",
        "sequential",
        "--logging_steps",
        "1",
        "--learning_rate",
        "1e-3",
    ]


def _first_log(out: Path) -> dict:
    return json.loads((out / "trainer_state.json").read_text())["log_history"][0]


def test_train_script_one_process_writes_adapter_state_and_scoreable_predictions(
    tiny_model_dir, synthetic_build, tmp_path, caplog, capsys
):
    from eval_scripts.cli import main as mis_bench_main
    from mis_icc_metric import read_predictions, read_references
    from raft_trainer.train import main

    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        assert (
            main(
                [
                    *_common(tiny_model_dir, synthetic_build, out),
                    "--max_steps",
                    "2",
                    "--per_device_train_batch_size",
                    "2",
                ]
            )
            == 0
        )
    assert "no CUDA device: training on the CPU in float32 with adamw_torch" in caplog.text
    for name in (
        "adapter_config.json",
        "adapter_model.safetensors",
        "trainer_state.json",
        "predictions_test.csv",
        "scores_test.json",
    ):
        assert (out / name).is_file(), name
    adapter = json.loads((out / "adapter_config.json").read_text())
    assert (adapter["r"], adapter["lora_alpha"], sorted(adapter["target_modules"])) == (8, 16, ["q_proj", "v_proj"])
    predictions = read_predictions(out / "predictions_test.csv")
    references = read_references(synthetic_build, split="test")
    assert {(p["video_id"], p["dimension"]) for p in predictions} == set(references)
    assert all(0.0 <= p["prediction"] <= 9.9 for p in predictions)
    # round trip through `mis-bench score`
    result_path = tmp_path / "scores.json"
    code = mis_bench_main(
        [
            "score",
            "--predictions",
            str(out / "predictions_test.csv"),
            "--references",
            str(synthetic_build),
            "--bootstrap",
            "200",
            "--out",
            str(result_path),
        ]
    )
    assert code == 0
    scored = json.loads(result_path.read_text())
    assert sum(d["n"] for d in scored["dimensions"].values()) == len(references)
    out_text = capsys.readouterr().out
    assert "test predictions" in out_text
    # the test scores in percent to one decimal with the 95% CI, as `mis-bench score` prints them
    own = json.loads((out / "scores_test.json").read_text())
    if own["mean_icc_ci"] is None:  # a split below the one rule's floor: the reason stands where the CI would
        shown = f"(CI withheld: {own['withheld']['mean_icc_ci']})"
    else:
        low, high = own["mean_icc_ci"]
        shown = f"[{100 * low:.1f}, {100 * high:.1f}] (95% CI)"
    line = f"test mean ICC(3,1) {100 * own['mean_icc']:.1f}% {shown}, "
    assert line in out_text, out_text
    assert f"MSE {own['overall']['mse']:.3f}" in out_text


def test_train_script_runs_the_paper_recipe_with_cpu_overrides_on_a_tiny_model(
    tiny_model_dir, synthetic_build, tmp_path, caplog
):
    """`--config recipes/paper_d1.yaml` with the CUDA-only settings and the model overridden by flags."""
    from raft_trainer.recipes import PAPER_D1_RECIPE
    from raft_trainer.train import main

    out = tmp_path / "recipe"
    with caplog.at_level(logging.WARNING):
        assert (
            main(
                [
                    "--config",
                    str(PAPER_D1_RECIPE),
                    "--model",
                    str(tiny_model_dir),
                    "--dataset",
                    str(synthetic_build),
                    "--output_dir",
                    str(out),
                    "--load_in_4bit",
                    "false",
                    "--bf16",
                    "false",
                    "--optim",
                    "adamw_torch",
                    "--max_length",
                    "2048",
                    "--max_steps",
                    "1",
                    "--lora_r",
                    "4",
                    "--no_predict",
                ]
            )
            == 0
        )
    assert "training on the CPU in float32 with adamw_torch" in caplog.text
    adapter = json.loads((out / "adapter_config.json").read_text())
    # lora_r from the flag, alpha, dropout and targets from the recipe
    assert (adapter["r"], adapter["lora_alpha"], adapter["lora_dropout"]) == (4, 16, 0.1)
    assert sorted(adapter["target_modules"]) == ["q_proj", "v_proj"]
    assert _first_log(out)["step"] == 1 and not (out / "predictions_test.csv").exists()


@pytest.fixture(scope="module")
def one_process_step(tiny_model_dir, synthetic_build, tmp_path_factory) -> dict:
    """The first logged step of one process x batch 2: the reference of the multi-process runs."""
    from raft_trainer.train import main

    single = tmp_path_factory.mktemp("single")
    single_args = ["--max_steps", "1", "--per_device_train_batch_size", "2", "--no_predict"]
    assert main([*_common(tiny_model_dir, synthetic_build, single), *single_args]) == 0
    return _first_log(single)


# Two processes x batch 1 against one x batch 2 (the same global batch), to rel 1e-5, started by `--num_processes 2`
# (DDP with every launcher value given). The shipped DDP configuration, `--accelerate_config multi_gpu` (its
# `num_processes: 2`), resolves in accelerate's own launcher to the same layout (the next test), and launches real
# processes in test_a_process_that_fails_after_the_launch_is_one_line_with_its_exit_code. FSDP and DeepSpeed are not
# run here: accelerate runs CPU processes as DDP whatever the configuration says (they are refused on a CPU,
# tests/test_raft_accelerate_configs.py; the GPU check runs ZeRO-2).
@pytest.mark.slow
def test_two_processes_match_one_process_with_twice_the_batch(
    tiny_model_dir, synthetic_build, tmp_path, one_process_step
):
    double = tmp_path / "double"
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TOKENIZERS_PARALLELISM="false",
    )
    # `mis-bench train --num_processes 2` checks the run, then runs `accelerate launch --multi_gpu --num_processes 2
    # ... raft_trainer/train.py` (raft_trainer.launch) with every launcher value given: no "not passed" block.
    cmd = [
        sys.executable,
        "-m",
        "eval_scripts.cli",
        "train",
        "--num_processes",
        "2",
        *_common(tiny_model_dir, synthetic_build, double),
        "--max_steps",
        "1",
        "--per_device_train_batch_size",
        "1",
        "--no_predict",
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "training on 2 process(es)" in proc.stderr
    assert "were not passed to `accelerate launch`" not in proc.stderr and "Traceback" not in proc.stderr
    one, two = one_process_step, _first_log(double)
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-5)
    assert two["grad_norm"] == pytest.approx(one["grad_norm"], rel=1e-5)
    assert two["score_mse"] == pytest.approx(one["score_mse"], rel=1e-5)
    assert two["mean_predicted_score"] == pytest.approx(one["mean_predicted_score"], rel=1e-5)


def test_the_shipped_ddp_configuration_launches_what_the_flag_launches():
    """accelerate's own launcher reads `--accelerate_config multi_gpu`'s command line and `--num_processes 2`'s into
    the same layout: DDP, 2 processes on 1 machine (rank 0, every GPU), no precision or dynamo of its own."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser

    from raft_trainer.accelerate_configs import config_path
    from raft_trainer.launch import launch_command

    layout = ("num_processes", "num_machines", "multi_gpu", "cpu", "use_fsdp", "use_deepspeed", "mixed_precision")
    layout += ("dynamo_backend", "training_script", "training_script_args")

    def resolved(command: list[str]) -> dict:
        assert command[1:3] == ["-m", "accelerate.commands.launch"]
        args = _validate_launch_command(launch_command_parser().parse_args(command[3:]))[0]
        return {name: getattr(args, name) for name in layout} | {
            "machine_rank": args.machine_rank or 0,
            "gpu_ids": args.gpu_ids or "all",
        }

    flag = resolved(launch_command(2, ["--max_steps", "1"]))
    assert flag["num_processes"] == 2 and flag["multi_gpu"] and flag["num_machines"] == 1
    assert resolved(launch_command(1, ["--max_steps", "1"], config_path("multi_gpu"))) == flag


def test_mis_bench_train_trains_and_claims_its_outputs_and_refuses_a_foreign_folder(
    tiny_model_dir, synthetic_build, tmp_path, capsys
):
    """`mis-bench train` is train.py's parser and recipe; every file it leaves is recorded as the `train` writer's,
    so a rerun may replace them, and a folder holding a file of the user's is refused in one line (exit 1)."""
    from eval_scripts.cli import main as mis_bench_main
    from mis_bench_dataset.toolkit.ownership import read_manifest

    out = tmp_path / "run"
    argv = ["train", *_common(tiny_model_dir, synthetic_build, out), "--max_steps", "1", "--no_predict"]
    assert mis_bench_main(argv) == 0
    owned = read_manifest(out)
    for name in ("setting.json", "adapter_model.safetensors", "adapter_config.json", "trainer_state.json"):
        assert owned.get(name) == "train", name
    assert json.loads((out / "setting.json").read_text())["trained"] is True
    assert mis_bench_main([*argv, "--no_train"]) == 0  # its own files: replaced
    assert json.loads((out / "setting.json").read_text())["trained"] is False
    capsys.readouterr()

    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("the user's\n")
    assert mis_bench_main(["train", *_common(tiny_model_dir, synthetic_build, foreign), "--no_train"]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert (
        len(errors) == 1 and errors[0].startswith("mis-bench train: error: --output_dir ") and "notes.txt" in errors[0]
    )
    assert (foreign / "notes.txt").read_text() == "the user's\n" and not (foreign / "setting.json").exists()


def test_raw_inference_builds_no_trainer_and_logs_no_training(tiny_model_dir, synthetic_build, tmp_path, caplog):
    """`--no_train` loads the model and predicts: the train rows are never tokenised (no RAFTTrainer, whose
    constructor encodes them) and nothing says it trains."""
    import raft_trainer.trainer
    from raft_trainer.train import main

    def no_trainer(*args, **kwargs):
        raise AssertionError("--no_train built a RAFTTrainer")

    original = raft_trainer.trainer.RAFTTrainer.__init__
    raft_trainer.trainer.RAFTTrainer.__init__ = no_trainer
    try:
        with caplog.at_level(logging.INFO):
            assert main([*_common(tiny_model_dir, synthetic_build, tmp_path / "raw"), "--no_train"]) == 0
    finally:
        raft_trainer.trainer.RAFTTrainer.__init__ = original
    assert "training on" not in caplog.text
    assert (tmp_path / "raw" / "predictions_test.csv").is_file() and (tmp_path / "raw" / "scores_test.json").is_file()


def test_a_bad_setting_with_several_processes_is_one_line_before_any_process_starts(
    synthetic_build, tmp_path, capsys, monkeypatch
):
    import raft_trainer.launch
    from eval_scripts.cli import main as mis_bench_main

    def no_launch(*args, **kwargs):
        raise AssertionError("processes were started for a refused setting")

    monkeypatch.setattr(raft_trainer.launch.subprocess, "Popen", no_launch)
    base = ["train", "--model", "m", "--dataset", str(synthetic_build), "--output_dir", str(tmp_path / "o")]
    refused = [
        ["--num_processes", "2", "--optim", "paged_adamw_8bit"],
        ["--num_processes", "2", "--modality", "video+text", "--input_source", "raw"],
        ["--num_processes", "2", "--modality", "smell+text"],
    ]
    for extra in refused:
        assert mis_bench_main([*base, *extra]) == 2, extra
        errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith("mis-bench train: error: "), errors


def test_the_launcher_keeps_a_childs_one_line_and_drops_the_launchers_traceback():
    """What accelerate's launcher prints when a child exits non-zero (accelerate 1.15, simple and torch elastic
    launchers) after the child's own line."""
    import io

    from raft_trainer.launch import filter_stderr

    launched = [
        "INFO raft_trainer.train: something before\n",
        "mis-bench train: error: no labelled rows (test split); rebuild it\n",
        "mis-bench train: error: no labelled rows (test split); rebuild it\n",  # the second process
        "Traceback (most recent call last):\n",
        '  File "/venv/bin/accelerate", line 8, in <module>\n',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n",
        "============================================================\n",
    ]
    shown = io.StringIO()
    errors = filter_stderr(iter(launched), "mis-bench train: error: ", shown)
    assert shown.getvalue() == "".join(launched[:2]) and len(errors) == 2


def test_train_help_lists_the_toolkits_and_the_most_used_flags_and_help_all_every_flag(capsys):
    from eval_scripts.cli.train import full_parser
    from raft_trainer.arguments import COMMON_TRAINING_FIELDS, TRAINING_ARGUMENTS_GROUP

    parser = full_parser()
    titles = [group.title for group in parser._action_groups if group._group_actions]
    assert titles[1:5] == [
        "data and outputs",
        "MIS-RAFT objective and inputs (RAFTConfig)",
        "model and LoRA adapter (RAFTModelConfig, TRL's ModelConfig)",
        "most used training arguments (TRL's SFTConfig, transformers' TrainingArguments)",
    ]
    assert titles[-1] == TRAINING_ARGUMENTS_GROUP
    short = parser.format_help()
    assert len(short.splitlines()) <= 152  # was 789; 150 before `--method`
    flags = [line.split()[0].rstrip(",") for line in short.splitlines() if line.startswith("  --")]
    for field, alias in (("dataset_dir", "--dataset"), ("output_dir", "--out"), ("model_name_or_path", "--model")):
        assert f"--{field}, {alias} " in short  # the other commands' names, beside TRL's
    assert flags.index("--dataset_dir") < flags.index("--raft_objective") < flags.index("--model_name_or_path")
    assert flags[-len(COMMON_TRAINING_FIELDS) :] == [f"--{name}" for name in COMMON_TRAINING_FIELDS]
    assert "--accelerate_config" in flags and "--help-all" in flags and "--no_train" not in flags
    assert "--adam_beta1" not in short and short.rstrip().endswith("mis-bench train --help-all")

    full = parser.format_help(full=True)
    assert len(full.splitlines()) > 700 and "--adam_beta1" in full and "--no_train, --no-train" in full
    options = [a for a in parser._actions if a.option_strings and a.dest not in ("help", "==SUPPRESS==")]
    assert len(options) > 150
    shown = {a.dest for a in options if any(f"  {a.option_strings[0]}{end}" in short for end in (" ", ", "))}
    more = int(re.search(r"(\d+) more flags", short).group(1))
    assert more == len({a.dest for a in options} - shown) > 100  # the count the short help gives is the rest
    formatter = parser._get_formatter()  # transformers' ArgumentDefaultsHelpFormatter, under --help-all
    for action in options:
        assert action.help and "%(default)" in formatter._get_help_string(action), action.dest


def test_mis_bench_train_help_and_help_all_print_and_exit_zero(capsys):
    from eval_scripts.cli import main as mis_bench_main

    assert mis_bench_main(["train", "--help"]) == 0
    short = capsys.readouterr().out
    assert mis_bench_main(["train", "--help-all"]) == 0
    full = capsys.readouterr().out
    assert len(short.splitlines()) <= 152 < 600 < len(full.splitlines())  # 150 before `--method`; both at 100 columns
    assert short.startswith("usage: mis-bench train ") and full.startswith("usage: mis-bench train ")


@pytest.mark.slow
def test_a_process_that_fails_after_the_launch_is_one_line_with_its_exit_code(synthetic_build, tmp_path):
    """Two real processes under `accelerate launch`, started by `mis-bench train --accelerate_config multi_gpu` (the
    shipped DDP file, `num_processes: 2`), that both refuse the model: their line is shown once, accelerate's
    traceback is dropped, the exit code is theirs (2)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "eval_scripts.cli", "train", "--accelerate_config", "multi_gpu"]
    cmd += ["--model", str(tmp_path / "none")]
    cmd += ["--dataset", str(synthetic_build), "--output_dir", str(tmp_path / "out")]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("mis-bench train: error: cannot load the tokenizer of "), errors
    assert "Traceback" not in proc.stderr and "CalledProcessError" not in proc.stderr
