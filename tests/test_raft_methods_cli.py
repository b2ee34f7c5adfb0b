"""`mis-bench train --head regression` and `--raft_objective ntl` on the tiny model and a synthetic build: a few
steps, saved, then evaluated like any other model (`mis-bench run --backend transformers`, `mis-bench score`);
the one-line refusals of combinations without a meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts.cli import main as mis_bench_main


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from raft_trainer.tiny import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2")


def _train(model: Path, build: Path, out: Path, *extra: str) -> int:
    return mis_bench_main(
        [
            "train",
            "--model_name_or_path",
            str(model),
            "--dataset_dir",
            str(build),
            "--output_dir",
            str(out),
            "--max_length",
            "2048",
            "--max_steps",
            "2",
            "--learning_rate",
            "1e-3",
            "--prompt_style",
            "paper",
            *extra,
        ]
    )


def _run(model: Path, build: Path, out: Path, score_from: str) -> Path:
    argv = ["run", "--backend", "transformers", "--model", str(model), "--dataset", str(build), "--prompt", "paper"]
    assert mis_bench_main([*argv, "--score-from", score_from, "--limit", "2", "--out", str(out), "--no-progress"]) == 0
    (results,) = out.rglob("results.json")
    return results


def _predictions(path: Path) -> dict:
    from mis_icc_metric.predictions_io import read_predictions

    return {(p["video_id"], p["dimension"]): p["prediction"] for p in read_predictions(path)}


@pytest.mark.slow
def test_train_regression_head_then_run_and_score_it(tiny_model_dir, synthetic_build, tmp_path):
    """The head's own readout: `mis-bench run --score-from regression` on the saved folder gives the scores the
    training run wrote for the same rows (the same prompt, the paper's, read by the same head)."""
    out = tmp_path / "regression"
    assert _train(tiny_model_dir, synthetic_build, out, "--head", "regression") == 0
    setting = json.loads((out / "setting.json").read_text())
    assert setting["method"] == "regression" and setting["trained"] is True
    assert json.loads((out / "adapter_config.json").read_text())["task_type"] == "SEQ_CLS"
    trained = _predictions(out / "predictions_test.csv")
    results = _run(out, synthetic_build, tmp_path / "run", "regression")
    run = json.loads(results.read_text())
    assert run["system"]["decoding"]["score_from"] == "regression"
    served = _predictions(results.parent / "predictions.jsonl")
    assert served and set(served) <= set(trained)
    assert all(served[key] == pytest.approx(trained[key], abs=1e-4) for key in served)
    assert mis_bench_main(["score", "--predictions", str(out / "predictions_test.csv"), "--references",
                           str(synthetic_build), "--bootstrap", "100"]) == 0  # fmt: skip


@pytest.mark.slow
def test_train_number_token_loss_then_run_and_score_it(tiny_model_dir, synthetic_build, tmp_path):
    out = tmp_path / "ntl"
    assert _train(tiny_model_dir, synthetic_build, out, "--raft_objective", "ntl") == 0
    assert json.loads((out / "setting.json").read_text())["method"] == "ntl"
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    results = _run(out, synthetic_build, tmp_path / "run", "expected")
    served = _predictions(results.parent / "predictions.jsonl")
    trained = _predictions(out / "predictions_test.csv")
    assert served and all(served[key] == pytest.approx(trained[key], abs=1e-4) for key in served)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--head", "regression", "--raft_objective", "ce"], "head='regression' trains the squared error"),
        (["--head", "regression", "--no_train"], "--no_train --head regression would score with an untrained"),
        (["--raft_objective", "ntl", "--no_renormalize_digits"], "'ntl' takes the softmax over the ten digits"),
    ],
)
def test_train_refuses_combinations_without_a_meaning_in_one_line(
    tiny_model_dir, synthetic_build, tmp_path, capsys, extra, message
):
    assert _train(tiny_model_dir, synthetic_build, tmp_path / "out", *extra) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mis-bench train: error: ") and message in err and "\n" not in err, err


def test_run_refuses_the_regression_readout_of_a_server(synthetic_build, tmp_path, capsys):
    argv = ["run", "--backend", "openai", "--model", "m", "--dataset", str(synthetic_build), "--limit", "1"]
    assert mis_bench_main([*argv, "--score-from", "regression", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--score-from regression reads a regression head's output" in err and "\n" not in err, err
