"""The one table of per-style defaults (`mis_bench_dataset.dimensions.PROMPT_STYLE_TABLE`) and every reader of it:
the backends' token limit, the dry-run estimate, the parser, the CLI's help, and, for every prompt style x modality
setting, `mis-bench run --dry-run`, `--export-batch` and a live run against a local Chat Completions server, so that a
style cannot be wired into some readers and not others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts import DecodingConfig, parse_score
from eval_scripts.cli import main
from eval_scripts.harness.cost_estimate import expected_completion_tokens
from mis_bench_dataset.dimensions import (
    MODALITY_SETTINGS,
    PAPER_PROMPT_STYLE,
    PROMPT_STYLE_TABLE,
    PROMPT_STYLES,
    ZERO_SHOT_PROMPT_STYLES,
    PromptStyle,
    prompt_style,
)
from mis_bench_dataset.protocol import PAPER_MAX_NEW_TOKENS
from mis_icc_metric.score_parser import PARSE_STYLES

from _batch_helpers import closed_port_url
from _harness_helpers import fake_reply, prompt_text
from _run_args import run_args

# The values the issue fixes (the authors' MAX_NEW_TOKENS is 16, MIS-RAFT/pipeline_inference.py).
EXPECTED = {
    "direct": (32, 8, "first"),
    "cot": (1024, 400, "last"),
    "paper": (16, 8, "first"),
}
# The expected-score readout's token limit (issue 18: "3", ".", "5" and the end for a score-first style; a CoT
# answer keeps its own limit, its score comes last).
EXPECTED_READOUT_LIMIT = {"direct": 4, "cot": 1024, "paper": 4}


def test_the_table_is_the_list_of_styles_and_holds_their_defaults():
    assert PROMPT_STYLES == tuple(PROMPT_STYLE_TABLE) == ("direct", "cot", "paper")
    assert set(ZERO_SHOT_PROMPT_STYLES) | {PAPER_PROMPT_STYLE} == set(PROMPT_STYLES) == set(PARSE_STYLES)
    for name, (limit, expected, line) in EXPECTED.items():
        style = prompt_style(name)
        assert (style.name, style.max_new_tokens, style.expected_completion_tokens, style.lone_number_line) == (
            name,
            limit,
            expected,
            line,
        )
        assert style.help and style.max_tokens() == limit
    assert PAPER_MAX_NEW_TOKENS == 16
    with pytest.raises(ValueError, match="unknown prompt style 'fancy'; expected one of direct, cot, paper"):
        prompt_style("fancy")


def test_a_readout_has_its_own_limit_or_the_styles():
    style = PromptStyle("x", "h", 32, 8, "first", readout_max_new_tokens={"expected": 4})
    assert style.max_tokens("expected") == 4 and style.max_tokens("text") == style.max_tokens() == 32
    for name, limit in EXPECTED_READOUT_LIMIT.items():
        assert prompt_style(name).max_tokens("expected") == limit, name
        assert prompt_style(name).score_first == (prompt_style(name).lone_number_line == "first")
    with pytest.raises(ValueError, match="unknown readouts"):
        PromptStyle("x", "h", 32, 8, "first", readout_max_new_tokens={"logits": 4})
    with pytest.raises(ValueError, match="lone_number_line must be one of"):
        PromptStyle("x", "h", 32, 8, "middle")
    with pytest.raises(ValueError, match="token counts must be positive integers"):
        PromptStyle("x", "h", 0, 8, "first")
    with pytest.raises(ValueError, match="token counts must be positive integers"):
        PromptStyle("x", "h", 32, 8, "first", readout_max_new_tokens={"expected": 0})


@pytest.mark.parametrize("name", PROMPT_STYLES)
def test_the_readers_take_the_tables_values(name):
    style = prompt_style(name)
    assert DecodingConfig.for_style(name).max_new_tokens == style.max_new_tokens
    assert DecodingConfig.for_style(name, max_new_tokens=7).max_new_tokens == 7
    expected = DecodingConfig.for_style(name, score_from="expected")
    assert expected.max_new_tokens == style.max_tokens("expected") == EXPECTED_READOUT_LIMIT[name]
    assert DecodingConfig.for_style(name, score_from="expected", max_new_tokens=7).max_new_tokens == 7
    assert expected_completion_tokens(name) == style.expected_completion_tokens
    # tier D: a bare number on the style's line is the answer, one on the other line is not
    first, last = "4.2\nThe response is warm.", "The response is warm.\n4.2"
    assert parse_score(first if style.lone_number_line == "first" else last, name) == 4.2
    assert parse_score(last if style.lone_number_line == "first" else first, name) is None


def test_the_help_lists_every_style(capsys):
    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    readout_limits = " / ".join(f"{s.max_tokens('expected')} ({s.name})" for s in PROMPT_STYLE_TABLE.values())
    assert f"with --score-from expected {readout_limits}" in text
    for style in PROMPT_STYLE_TABLE.values():
        assert f"{style.name}: {' '.join(style.help.split())}" in text
        assert f"{style.max_new_tokens} ({style.name})" in text
        assert f"{style.expected_completion_tokens} {style.name}" in text


def _run(build: Path, out: Path, base_url: str, style: str, modality: str, *extra: str, command=("run",)) -> list[str]:
    setting = ("--prompt", style, "--modality", modality)
    return run_args(build, out, base_url, *setting, *extra, command=command, limit=1, retries=0)


@pytest.fixture(scope="module")
def server(chat_server):
    with chat_server() as running:
        yield running


@pytest.mark.parametrize("modality", MODALITY_SETTINGS)
@pytest.mark.parametrize("name", PROMPT_STYLES)
def test_every_style_and_setting_dry_runs_exports_and_runs(synthetic_build, server, tmp_path, capsys, name, modality):
    style = prompt_style(name)
    out = tmp_path / "runs"
    assert main(_run(synthetic_build, out, closed_port_url(), name, modality, "--dry-run", "--json")) == 0
    plan = json.loads(capsys.readouterr().out)
    (setting,) = plan["settings"]
    assert setting["requests"] == plan["requests"] == 8 and setting["setting"] == f"{modality} {name}"
    assert (setting["expected_completion_tokens"], setting["expected_completion_source"]) == (
        style.expected_completion_tokens,
        f"default for {name}",
    )
    assert plan["completion_tokens_max"] == 8 * style.max_new_tokens

    batch = tmp_path / "batch.jsonl"
    export = ("batch", "export", str(batch))
    assert main(_run(synthetic_build, out, closed_port_url(), name, modality, command=export)) == 0
    lines = [json.loads(line) for line in batch.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 8 and {line["body"]["max_tokens"] for line in lines} == {style.max_new_tokens}
    capsys.readouterr()

    before = len(server.bodies)
    assert main(_run(synthetic_build, out, server.base_url, name, modality)) == 0
    bodies = server.bodies[before:]
    assert [body["max_tokens"] for body in bodies] == [style.max_new_tokens] * 8
    assert sorted(json.dumps(b, sort_keys=True) for b in bodies) == sorted(
        json.dumps(line["body"], sort_keys=True) for line in lines
    )  # the export holds exactly the live requests
    (results_path,) = (out / "fake-model").rglob("results.json")
    results = json.loads(results_path.read_text(encoding="utf-8"))
    assert results["setting"]["prompt_style"] == name and results["system"]["decoding"]["max_new_tokens"] == (
        style.max_new_tokens
    )
    assert results["outcomes"]["overall"] == {"answered": 8, "unparsed": 0, "truncated": 0, "failed": 0}
    answers = {prompt_text(body): fake_reply(prompt_text(body)) for body in bodies}
    assert sorted(p["prediction"] for p in results["predictions"]) == sorted(
        parse_score(a, name) for a in answers.values()
    )
