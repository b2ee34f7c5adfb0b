"""The `evaluate` module (loading rules, add_batch, None carried through), the metric
card, and the `score` / `compare` subcommands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import evaluate
import pytest
import yaml

import mis_icc_metric
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, score_predictions, write_predictions

from _metric_helpers import make_scores, write_scoring_dataset

METRIC_DIR = Path(mis_icc_metric.metric_path())


def _columns(predictions, references):
    keys = sorted(references)
    return {
        "predictions": [predictions[k] for k in keys],
        "references": [references[k] for k in keys],
        "video_ids": [k[0] for k in keys],
        "dimensions": [k[1] for k in keys],
    }


def test_metric_path_points_at_the_module_folder():
    assert METRIC_DIR.name == "mis_icc" and (METRIC_DIR / "mis_icc.py").is_file()


def test_evaluate_compute_equals_score_predictions_and_keeps_none():
    predictions, references = make_scores(n=30, seed=1, unparsed=0.1)
    metric = mis_icc_metric.load()
    out = metric.compute(**_columns(predictions, references), n_bootstrap=200, seed=3)
    expected = json_safe(
        score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=200, seed=3))
    )
    assert json.dumps(out, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert sum(e["n_unparsed"] for e in out["dimensions"].values()) == sum(v is None for v in predictions.values())


def test_add_batch_accumulates_and_carries_none():
    predictions, references = make_scores(n=20, seed=2, unparsed=0.1)
    columns = _columns(predictions, references)
    metric = evaluate.load(str(METRIC_DIR))
    for start in range(0, len(columns["predictions"]), 37):
        metric.add_batch(**{name: values[start : start + 37] for name, values in columns.items()})
    out = metric.compute(n_bootstrap=0)
    expected = json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=0)))
    assert out == expected


def test_evaluate_load_by_bare_name_from_the_package_folder_and_repo_root(monkeypatch):
    monkeypatch.chdir(METRIC_DIR.parent)
    assert type(evaluate.load("mis_icc")).__name__ == "MisIcc"
    monkeypatch.chdir(METRIC_DIR.parents[1])
    assert type(evaluate.load("mis_icc_metric/mis_icc")).__name__ == "MisIcc"


def test_evaluate_module_reports_bad_input():
    metric = mis_icc_metric.load()
    with pytest.raises(ValueError, match="duplicate"):
        metric.compute(
            predictions=[3.0, 3.0, 2.0],
            references=[3.0, 3.0, 2.0],
            video_ids=["a", "a", "b"],
            dimensions=["empathy"] * 3,
            n_bootstrap=0,
        )


def test_metric_card_has_the_hub_yaml_header_and_paper_values():
    text = (METRIC_DIR / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(re.match(r"^---\n(.*?)\n---\n", text, re.S).group(1))
    assert header["title"] and "evaluate" in header["tags"] and header["sdk"]
    for section in (
        "## Metric description",
        "## How to use",
        "### Inputs",
        "### Output values",
        "## Limitations",
        "## Citation",
    ):
        assert section in text
    assert "71.48" in text or "0.7148" in text  # the Shrout & Fleiss check
    assert "64.0" in text  # the human ceiling of Table 2


# --- CLI ----------------------------------------------------------------------------------


def _run(argv: list[str]) -> int:
    from eval_scripts.cli import main

    return main(argv)


def test_score_cli_prints_the_table_and_writes_raw_json(tmp_path, capsys):
    predictions, references = make_scores(n=25, seed=4, unparsed=0.05)
    dataset = write_scoring_dataset(tmp_path / "ds", references)
    preds = write_predictions(
        tmp_path / "preds.csv", [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()]
    )
    out = tmp_path / "scores.json"
    assert (
        _run(
            [
                "score",
                "--predictions",
                str(preds),
                "--references",
                str(dataset),
                "--bootstrap",
                "300",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    for abbreviation in ("VF", "H/PE", "Per.", "Emo.", "WAU", "Emp.", "ABC", "ARRR", "All"):
        assert re.search(rf"^{re.escape(abbreviation)}\s", printed, re.M)
    assert "64.0 [ 61.0,  68.0]" in printed  # VF human ceiling, Table 2
    saved = json.loads(out.read_text())
    expected = json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=300)))
    assert saved["dimensions"] == expected["dimensions"]
    assert saved["overall"]["icc"] == expected["overall"]["icc"] and -1 <= saved["overall"]["icc"] <= 1
    vf = saved["dimensions"]["verbal_fluency"]
    assert f"{100 * vf['icc']:6.1f}" in printed


def test_score_cli_on_the_synthetic_build_with_common_set(synthetic_build, tmp_path, capsys):
    from mis_icc_metric import read_references

    references = read_references(synthetic_build)
    records = [{"video_id": v, "dimension": d, "prediction": min(5.0, s + 0.3)} for (v, d), s in references.items()]
    preds = write_predictions(tmp_path / "p.jsonl", records)
    common = tmp_path / "common.txt"
    videos = sorted({v for v, _ in references})
    common.write_text("\n".join(videos[:3]) + "\n")
    assert (
        _run(
            [
                "score",
                "--predictions",
                str(preds),
                "--references",
                str(synthetic_build),
                "--bootstrap",
                "100",
                "--common-videos",
                str(common),
                "--out",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["common_set"]["n_videos"] == 3 and saved["meta"]["split"] == "test"
    assert "Common set of 3 videos" in capsys.readouterr().out


def test_compare_cli_runs_the_paired_bootstrap(tmp_path, capsys):
    pred_a, references = make_scores(n=40, seed=5, noise=0.3)
    pred_b, _ = make_scores(n=40, seed=6, noise=1.2)
    dataset = write_scoring_dataset(tmp_path / "ds", references)
    paths = []
    for name, preds in (("a", pred_a), ("b", pred_b)):
        paths.append(
            str(
                write_predictions(
                    tmp_path / f"{name}.jsonl",
                    [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in preds.items()],
                )
            )
        )
    out = tmp_path / "cmp.json"
    assert _run(["compare", *paths, "--references", str(dataset), "--bootstrap", "300", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^All\s", printed, re.M) and "paired bootstrap" in printed
    saved = json.loads(out.read_text())
    assert saved["overall"]["delta"] > 0 and 0 < saved["overall"]["p_value"] <= 1


def test_score_cli_reports_bad_predictions_file(tmp_path, capsys):
    _, references = make_scores(n=5, seed=7)
    dataset = write_scoring_dataset(tmp_path / "ds", references)
    bad = tmp_path / "bad.csv"
    bad.write_text("video_id,dimension,prediction\nEH0822_T1_Jessica,empathy,high\n")
    assert _run(["score", "--predictions", str(bad), "--references", str(dataset)]) == 1  # a data error
    assert re.search(r"mis-bench score: error: .*bad.csv, row 2, column 'prediction'", capsys.readouterr().err)


def test_score_through_the_mis_bench_dispatcher(tmp_path, capsys):
    from eval_scripts.cli import main

    predictions, references = make_scores(n=12, seed=8)
    dataset = write_scoring_dataset(tmp_path / "ds", references)
    preds = write_predictions(
        tmp_path / "p.csv", [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()]
    )
    assert main(["score", "--predictions", str(preds), "--references", str(dataset), "--bootstrap", "100"]) == 0
    assert re.search(r"^ARRR\s", capsys.readouterr().out, re.M)
