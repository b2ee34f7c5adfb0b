"""`raft_trainer/train.py`: one process in-process, two processes under `accelerate launch`, outputs
readable by `mis-bench score`.

Multi-process proof: with LoRA dropout 0 and sequential data order, the first optimizer step of two
processes x per-device batch 1 has the same loss and gradient norm as one process x batch 2. On a
CPU-only machine accelerate 1.x starts several gloo processes with `--multi_gpu` (its `--cpu` flag
alone runs a single process unless an MPI hostfile is given); CUDA machines use the same command.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "raft_trainer" / "train.py"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from raft_trainer.tiny import save_tiny_model

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
    from mis_icc_metric.predictions_io import read_predictions, read_references
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
    assert "test predictions" in capsys.readouterr().out


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


def test_two_processes_match_one_process_with_twice_the_batch(tiny_model_dir, synthetic_build, tmp_path):
    from raft_trainer.train import main

    single = tmp_path / "single"
    single_args = ["--max_steps", "1", "--per_device_train_batch_size", "2", "--no_predict"]
    assert main([*_common(tiny_model_dir, synthetic_build, single), *single_args]) == 0

    double = tmp_path / "double"
    env = dict(
        os.environ,
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TOKENIZERS_PARALLELISM="false",
    )
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(TRAIN),
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
    one, two = _first_log(single), _first_log(double)
    assert two["loss"] == pytest.approx(one["loss"], rel=1e-5)
    assert two["grad_norm"] == pytest.approx(one["grad_norm"], rel=1e-5)
    assert two["score_mse"] == pytest.approx(one["score_mse"], rel=1e-5)
    assert two["mean_predicted_score"] == pytest.approx(one["mean_predicted_score"], rel=1e-5)
