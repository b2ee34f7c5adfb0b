"""One build, one fingerprint: a model run on the text and a baseline on the features of one build record the
same fingerprint (over every config the build holds), so `mis-bench report --references BUILD` compares them
and names the build once; a result recorded before, over the text only, is the same build to the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts import run_baseline
from eval_scripts.cli import main
from mis_bench_dataset import BuiltDataset
from mis_bench_dataset.dataset import format as fmt
from mis_icc_metric import ResamplingOptions

from _run_args import TEST_KEY_ENV, run_args


def _model_run(dataset: Path, out: Path, monkeypatch, capsys, chat_server) -> Path:
    monkeypatch.setenv("MIS_BENCH_TEST_KEY", "k")
    with chat_server() as server:
        args = run_args(dataset, out, server.base_url, model="org/judge", api_key_env=TEST_KEY_ENV, as_json=True)
        assert main(args) == 0
    return Path(json.loads(capsys.readouterr().out)["results"])


@pytest.mark.slow
def test_a_model_run_and_the_baselines_of_one_build_are_compared(
    synthetic_build, tmp_path, monkeypatch, capsys, chat_server
):
    runs = tmp_path / "runs"
    model_results = _model_run(synthetic_build, runs, monkeypatch, capsys, chat_server)
    baseline = run_baseline(
        synthetic_build, runs, baseline="features", modality="text", resampling=ResamplingOptions(n_bootstrap=0)
    )
    model_fp = json.loads(model_results.read_text())["dataset"]["fingerprint"]
    baseline_fp = json.loads(baseline.results_path.read_text())["dataset"]["fingerprint"]
    handle = BuiltDataset.open(synthetic_build)
    assert model_fp == baseline_fp == handle.fingerprint("test", ("scoring", "features"))  # text and features

    report = tmp_path / "report"
    args = ["report", str(runs), "--references", str(synthetic_build), "--bootstrap", "0", "--out", str(report)]
    assert main([*args, "--comparison-bootstrap", "100", "--reference", str(model_results)]) == 0
    capsys.readouterr()
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "Not compared" not in text
    doc = json.loads((report / "report.json").read_text())
    compared = json.dumps(doc["comparison"])
    assert "org/judge" in compared and "baseline/features-ridge" in compared
    assert text.count(model_fp[:19]) <= 1 and handle.fingerprint("test") not in text  # the build named once


def test_a_text_only_fingerprint_of_the_same_build_is_that_build_to_the_report(synthetic_build, tmp_path):
    """Results recorded before (over the text config only) are compared with today's on the same build."""
    from eval_scripts.report.inputs import one_fingerprint_per_build

    handle = BuiltDataset.open(synthetic_build)
    old = {"dataset": {"name": "mis-bench", "fingerprint": handle.fingerprint("test", ("scoring",)), "split": "test"}}
    other = {"dataset": {"name": "x", "fingerprint": "sha256:" + "0" * 64, "split": "test"}}
    same, kept = one_fingerprint_per_build([old, other], synthetic_build, "test")
    assert same["dataset"]["fingerprint"] == handle.build_fingerprint("test") != old["dataset"]["fingerprint"]
    assert kept == other  # another build's results are left as they are
    assert set(fmt.FINGERPRINT_CONFIGS[-1]) == {"scoring", "features"}
