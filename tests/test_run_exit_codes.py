"""Exit codes a script can trust: a run (or a grid) in which no row of a setting gave a score exits 1 with one
line of counts by reason (truncated, unparsed, out of range, failed); a partial parse rate stays exit 0 with the
rate in the run line; failed requests stay exit 3. A score outside [1, 5] is counted "out of range", text or
expected readout. Against a real HTTP server on loopback answering what each case needs."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from eval_scripts.cli import main
from eval_scripts.harness.readouts import SampleOutcome, out_of_range, row_readout

from _harness_helpers import chat_completion, prompt_text
from _run_args import TEST_KEY_ENV, run_args

_args = partial(
    run_args, model="m", api_key_env=TEST_KEY_ENV, limit=2, retries=1, backoff_base=0.001, backoff_max=0.002
)


def _answering(reply: str, finish_reason: str = "stop", every_other: str | None = None):
    calls = [0]

    def respond(body):
        calls[0] += 1
        text = every_other if every_other is not None and calls[0] % 2 else reply
        return 200, chat_completion(prompt_text(body), text, finish_reason)

    return respond


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("mis-bench run: error:")]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("MIS_BENCH_TEST_KEY", "k")


@pytest.mark.parametrize(
    ("reply", "finish", "counts"),
    [
        ("3.", "length", "16 rows: 16 truncated, 0 unparsed, 0 out of range, 0 failed"),
        ("I cannot rate this.", "stop", "16 rows: 0 truncated, 16 unparsed, 0 out of range, 0 failed"),
        ("Score: 7.5", "stop", "16 rows: 0 truncated, 0 unparsed, 16 out of range, 0 failed"),
    ],
    ids=["truncated", "unparsed", "out-of-range"],
)
def test_a_run_with_no_score_exits_1_with_the_counts_by_reason(
    synthetic_build, tmp_path, capsys, reply, finish, counts, chat_server
):
    with chat_server(respond=_answering(reply, finish)) as server:
        code = main(_args(synthetic_build, tmp_path / "out", server.base_url, "--json"))
    captured = capsys.readouterr()
    assert code == 1
    lines = _error_lines(captured.err)
    assert len(lines) == 1 and f"no row gave a score in text direct ({counts})" in lines[0]
    summary = json.loads(captured.out)  # the run's summary is still printed, and its files written
    assert summary["parsed"] == 0 and summary["parsed_rate"] == 0
    results = json.loads(Path(summary["results"]).read_text(encoding="utf-8"))
    assert results["outcomes"]["overall"]["answered"] == 0


def test_a_partial_parse_rate_exits_0_with_the_rate_in_the_run_line(synthetic_build, tmp_path, capsys, chat_server):
    with chat_server(respond=_answering("3.5", every_other="Score: 9.0")) as server:
        code = main(_args(synthetic_build, tmp_path / "out", server.base_url))
    captured = capsys.readouterr()
    assert code == 0 and _error_lines(captured.err) == []
    assert "0 truncated, 0 unparsed, 8 out of range, 8 parsed, 50.0%)" in captured.out


def test_a_grid_with_one_setting_without_a_score_exits_1_naming_it(synthetic_build, tmp_path, capsys, chat_server):
    """The direct setting answers "3.5"; the CoT one never states a final score its parser reads."""

    def respond(body):
        text = prompt_text(body)
        return 200, chat_completion(text, "I am still thinking." if "Final score" in text else "3.5")

    with chat_server(respond=respond) as server:
        extra = ("--grid", "--modalities", "text", "--prompts", "direct,cot")
        code = main(_args(synthetic_build, tmp_path / "out", server.base_url, *extra))
    lines = _error_lines(capsys.readouterr().err)
    assert code == 1 and len(lines) == 1
    assert "no row gave a score in text cot (16 rows: 0 truncated, 16 unparsed" in lines[0]
    assert "text direct" not in lines[0] and "(1 of 2 settings)" in lines[0]


def test_failed_requests_still_exit_3(synthetic_build, tmp_path, capsys, chat_server):
    with chat_server(respond=lambda body: (500, {"error": {"message": "boom"}})) as server:
        assert main(_args(synthetic_build, tmp_path / "out", server.base_url)) == 3
    capsys.readouterr()


def _sample(text, value, expected=None):
    return SampleOutcome(None, "ok", text, value, expected, expected["score"] if expected else value)


def test_an_expected_score_outside_the_scale_is_out_of_range_even_when_the_text_parsed():
    outside = {"score": None, "reason": "expected score 5.120 outside [1, 5]"}
    assert out_of_range(row_readout([_sample("5.0", 5.0, outside)]), "direct")
    inside_text_only = {"score": None, "reason": "no digit distribution where the score stands"}
    assert not out_of_range(row_readout([_sample("5.0", 5.0, inside_text_only)]), "direct")
    assert out_of_range(row_readout([_sample("Score: 0.4", None)]), "direct")  # the text readout
    assert not out_of_range(row_readout([_sample("no score here", None)]), "direct")
    assert not out_of_range(row_readout([_sample("4.0", 4.0)]), "direct")  # scored


def test_a_run_of_a_trained_model_folder_records_its_method_and_setting(synthetic_build, tmp_path, capsys, chat_server):
    folder = tmp_path / "trained"
    folder.mkdir()
    (folder / "setting.json").write_text(json.dumps({"modality": "text", "prompt_style": "paper", "method": "ntl"}))
    args = run_args(synthetic_build, tmp_path / "out", None, model=str(folder), api_key_env=TEST_KEY_ENV, limit=1)
    with chat_server(respond=_answering("3.5")) as server:
        code = main([*args, "--base-url", server.base_url, "--score-from", "text", "--json"])
    captured = capsys.readouterr()
    assert code == 0 and "--prompt paper" in captured.err
    results = json.loads(Path(json.loads(captured.out)["results"]).read_text(encoding="utf-8"))
    assert results["system"]["method"] == "ntl" and results["setting"]["prompt_style"] == "paper"
