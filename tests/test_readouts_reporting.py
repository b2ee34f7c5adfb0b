"""`score` and `report` show the judge's agreement with itself beside its agreement with the experts: both
readouts of one run, its samples, and two runs of the same model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_readouts_samples import seeded_reply

from eval_scripts.cli import main

from _independent import pingouin_icc
from _readout_helpers import logprob_answer
from _run_args import run_args


def _with_logprobs(body: dict) -> tuple[int, dict]:
    status, plain = seeded_reply(body)
    text = body["messages"][-1]["content"]
    return status, logprob_answer(text, plain["choices"][0]["message"]["content"])


def _run(build: Path, out: Path, url: str, *extra: str) -> dict:
    args = run_args(build, out, url, *extra, model="fake-judge", limit=4, as_json=True)
    assert main(args) == 0
    return args


@pytest.fixture
def two_runs(synthetic_build, tmp_path, capsys, chat_server):
    flags = ("--score-from", "expected", "--samples", "2", "--temperature", "0.7")
    with chat_server(respond=_with_logprobs) as server:
        _run(synthetic_build, tmp_path / "first", server.base_url, *flags)
        first = json.loads(capsys.readouterr().out)
        _run(synthetic_build, tmp_path / "second", server.base_url, *flags, "--seed", "1")
        second = json.loads(capsys.readouterr().out)
    return first, second


def _predictions(path: str) -> dict:
    return {(r["video_id"], r["dimension"]): r["prediction"] for r in map(json.loads, Path(path).open())}


def test_score_shows_both_readouts_the_samples_and_a_second_run(two_runs, synthetic_build, tmp_path, capsys) -> None:
    first, second = two_runs
    out_json = tmp_path / "score.json"
    code = main(["score", "--predictions", first["predictions"], "--references", str(synthetic_build), "--bootstrap",
                 "0", "--retest", second["predictions"], "--out", str(out_json), "--missing", "unparsed"])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Judge stability (expected readout, agreement with itself):" in printed
    assert "text vs expected readout: ICC(3,1)" in printed and "test-retest, sample 1 vs 2" in printed
    result = json.loads(out_json.read_text())
    assert set(result["readouts"]["with_experts"]) == {"median", "text"}
    a, b = _predictions(first["predictions"]), _predictions(second["predictions"])
    common = sorted(k for k in a if a[k] is not None and b.get(k) is not None)
    assert result["retest"]["n"] == len(common) == 32
    assert result["retest"]["icc"] == pytest.approx(
        pingouin_icc([a[k] for k in common], [b[k] for k in common]), abs=1e-9
    )


def test_report_has_a_judge_stability_section(two_runs, synthetic_build, tmp_path) -> None:
    first, second = two_runs
    report = tmp_path / "report"
    code = main(["report", first["results"], second["results"], "--references", str(synthetic_build), "--bootstrap",
                 "0", "--comparison-bootstrap", "0", "--scatters", "none", "--out", str(report)])  # fmt: skip
    assert code == 0
    markdown = (report / "report.md").read_text()
    assert "## Judge stability" in markdown and "Two runs of the same model and setting" in markdown
    data = json.loads((report / "report.json").read_text())["stability"]
    assert len(data["runs"]) == 2 and {e["score_from"] for e in data["runs"]} == {"expected"}
    # direct answers read by their expected score: the samples cannot disagree, so the retest is withheld
    assert all(e["test_retest"]["icc"] is None and e["test_retest"]["withheld"] for e in data["runs"])
    (pair,) = data["pairs"]
    a, b = _predictions(first["predictions"]), _predictions(second["predictions"])
    common = sorted(k for k in a if a[k] is not None and b.get(k) is not None)
    assert pair["icc"] == pytest.approx(pingouin_icc([a[k] for k in common], [b[k] for k in common]), abs=1e-9)
    assert "Judge stability" in (report / "report.html").read_text()
