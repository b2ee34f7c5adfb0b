"""`mis-bench train --head regression` and `--raft_objective ntl` on the tiny model and a synthetic build: a few
steps, saved, then evaluated like any other model (`mis-bench run --backend transformers`, `mis-bench score`);
the one-line refusals of combinations without a meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts.cli import main as mis_bench_main

from _run_args import run_args


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from raft_trainer import save_tiny_model

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
    argv = run_args(
        build,
        out,
        None,
        "--prompt",
        "paper",
        backend="transformers",
        model=str(model),
        bootstrap=None,
    )
    assert mis_bench_main([*argv, "--score-from", score_from]) == 0
    (results,) = out.rglob("results.json")
    return results


def _predictions(path: Path) -> dict:
    from mis_icc_metric import read_predictions

    return {(p["video_id"], p["dimension"]): p["prediction"] for p in read_predictions(path)}


@pytest.fixture(scope="module")
def trained(tiny_model_dir, synthetic_build, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Each method trained 2 steps and its test split served by `mis-bench run`: method -> (model folder,
    results.json)."""
    import numpy as np

    import raft_trainer.regression

    root = tmp_path_factory.mktemp("methods")
    runs = {}
    for method, extra, score_from in (
        ("regression", ("--head", "regression"), "regression"),
        ("ntl", ("--raft_objective", "ntl"), "expected"),
    ):
        out = root / method
        with pytest.MonkeyPatch.context() as patch:
            # After 2 steps the head's outputs are all below 1 (about -0.1), so the scale's clip would make every
            # score 1.0 on both sides; the same steep monotone readout in training and serving keeps them apart.
            patch.setattr(raft_trainer.regression, "regression_readout", lambda raw: np.clip(3.0 + 20.0 * raw, 1, 5))
            assert _train(tiny_model_dir, synthetic_build, out, *extra) == 0
            runs[method] = (out, _run(out, synthetic_build, root / f"run-{method}", score_from))
    return runs


@pytest.mark.slow
def test_each_method_trains_saves_and_is_served_with_the_scores_it_wrote(trained, synthetic_build):
    """`mis-bench run` on each saved folder gives the scores the training run wrote for the same rows (the same
    prompt, the paper's, read the same way: the regression head's output, the expected score)."""
    for method, (out, results) in trained.items():
        setting = json.loads((out / "setting.json").read_text())
        assert setting["method"] == method and setting["trained"] is True
        assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 2
        trained_scores = _predictions(out / "predictions_test.csv")
        served = _predictions(results.parent / "predictions.jsonl")
        assert served and set(served) == set(trained_scores)
        assert len({round(v, 4) for v in served.values() if 1 < v < 5}) > 1, method  # distinct, inside the scale
        assert all(served[key] == pytest.approx(trained_scores[key], abs=1e-4) for key in served), method
        score = ["score", "--predictions", str(out / "predictions_test.csv"), "--references", str(synthetic_build)]
        assert mis_bench_main([*score, "--bootstrap", "100"]) == 0
    regression_out, regression_results = trained["regression"]
    assert json.loads((regression_out / "adapter_config.json").read_text())["task_type"] == "SEQ_CLS"
    assert json.loads(regression_results.read_text())["system"]["decoding"]["score_from"] == "regression"


@pytest.mark.slow
def test_report_compares_the_methods_side_by_side_with_clinician_resampled_paired_tests(
    trained, synthetic_build, tmp_path
):
    out = tmp_path / "report"
    results = [str(path) for _, path in trained.values()]
    argv = ["report", *results, "--references", str(synthetic_build), "--out", str(out)]
    assert mis_bench_main([*argv, "--bootstrap", "200", "--comparison-bootstrap", "200"]) == 0
    report = json.loads((out / "report.json").read_text())
    comparison = report["comparison"]
    assert comparison["resample"] == "clinician"
    assert {system["method"] for system in comparison["systems"]} == {"regression", "ntl"}
    assert all(" · regression · " in s["label"] or " · ntl · " in s["label"] for s in comparison["systems"])
    (paired,) = comparison["paired"]
    assert paired["meta"]["resampling"]["unit"] == "clinician"
    assert "regression" in (out / "report.md").read_text() and "ntl" in (out / "report.md").read_text()


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
    argv = run_args(
        synthetic_build, tmp_path / "run", model="m", limit=1, api_key_env=None, bootstrap=None, no_progress=False
    )
    assert mis_bench_main([*argv, "--score-from", "regression"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--score-from regression reads a regression head's output" in err and "\n" not in err, err
