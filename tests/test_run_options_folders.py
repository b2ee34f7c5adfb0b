"""Nothing replaced without a word: a rerun with other decoding options writes beside the earlier run (its folder
named by what changed, recorded in results.json), the earlier results.json stays byte-identical, and `report`
and `leaderboard` show both runs, each labelled by what differs. Runs against a real HTTP server on loopback."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from eval_scripts.cli import main

from _run_args import TEST_KEY_ENV, run_args

_run = partial(run_args, model="org/judge", api_key_env=TEST_KEY_ENV, as_json=True, flags=("--prompt", "direct"))


@pytest.fixture()
def two_runs(synthetic_build, tmp_path, monkeypatch, capsys, chat_server):
    monkeypatch.setenv("MIS_BENCH_TEST_KEY", "k")
    out = tmp_path / "runs"
    with chat_server() as server:
        assert main(_run(synthetic_build, out, server.base_url)) == 0
        first = json.loads(capsys.readouterr().out)
        before = Path(first["results"]).read_bytes()
        assert main(_run(synthetic_build, out, server.base_url, "--max-tokens", "2", "--temperature", "0.5")) == 0
        second = json.loads(capsys.readouterr().out)
    return out, Path(first["results"]), before, Path(second["results"])


def test_a_rerun_with_other_decoding_writes_beside_and_leaves_the_earlier_results(two_runs):
    out, first, before, second = two_runs
    assert first.parent.relative_to(out).as_posix() == "org-judge/text__direct"  # the default's name, unchanged
    assert second.parent.relative_to(out).as_posix() == "org-judge/text__direct__max-tokens-2__temperature-0.5"
    assert first.read_bytes() == before  # byte-identical after the rerun
    decoding = json.loads(second.read_text())["system"]["decoding"]
    assert decoding["changed"] == {"max_new_tokens": 2, "temperature": 0.5}
    assert decoding["max_new_tokens"] == 2 and decoding["temperature"] == 0.5
    assert "changed" not in json.loads(first.read_text())["system"]["decoding"]


def test_the_same_options_again_reuse_their_folder(synthetic_build, tmp_path, monkeypatch, capsys, chat_server):
    """An option given at its default value is no change: the run keeps the default's folder."""
    monkeypatch.setenv("MIS_BENCH_TEST_KEY", "k")
    with chat_server() as server:
        assert main(_run(synthetic_build, tmp_path / "runs", server.base_url, "--temperature", "0", "--seed", "0")) == 0
    results = Path(json.loads(capsys.readouterr().out)["results"])
    assert results.parent.name == "text__direct"


def test_report_and_leaderboard_show_both_labelled_by_what_differs(two_runs, synthetic_build, tmp_path, capsys):
    out, first, _, second = two_runs
    report = tmp_path / "report"
    args = ["report", str(out), "--references", str(synthetic_build), "--bootstrap", "0", "--out", str(report)]
    assert main(args) == 0
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "| org/judge · text · direct | " in text  # the default run: no options to name
    assert "| org/judge · text · direct · max-tokens 2 · temperature 0.5 | " in text
    assert "(2)" not in text  # never told apart by a counter

    subs = tmp_path / "subs"
    for results in (first, second):
        assert main(["submit", str(results), "--out", str(subs)]) == 0
    board_out = tmp_path / "board"
    args = ["leaderboard", str(subs), "--references", str(synthetic_build), "--split", "test"]
    code = main([*args, "--bootstrap", "100", "--out", str(board_out)])
    capsys.readouterr()
    assert code == 0
    board = json.loads((board_out / "leaderboard.json").read_text())
    shown = [*board["entries"], *board.get("unranked", [])]
    assert sorted(entry.get("options", "") for entry in shown) == ["", "max-tokens 2 · temperature 0.5"]
