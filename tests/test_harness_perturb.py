"""`mis-bench run --perturb` against a real local HTTP server (`ChatServer`, Chat Completions on 127.0.0.1): the
unperturbed arm is read from the response cache and sends no request, each perturbed arm sends exactly its
rows, the same seed gives byte-identical perturbed requests, and the shift table is written with clustered CIs.
(The same against `transformers serve`: tests/test_harness_real_server.py's perturbation test, slow.)"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS

from _harness_helpers import ChatServer, chat_completion, prompt_text
from _run_args import run_args

LIMIT = 4  # videos: 32 rows


def _by_length(body: dict) -> tuple[int, dict]:
    """A score that follows the prompt's length, so perturbations that change the transcript move it."""
    text = prompt_text(body)
    return 200, chat_completion(text, reply=f"{1 + (len(text.split()) % 40) / 10:.1f}")


_run = partial(run_args, model="fake-judge", limit=LIMIT, bootstrap=100, as_json=True)


def _bodies(server: ChatServer, start: int) -> list[str]:
    return sorted(json.dumps(body, sort_keys=True) for body in server.bodies[start:])


def test_perturbed_arms_are_sent_and_the_unperturbed_arm_is_not(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(respond=_by_length) as server:
        out = tmp_path / "out"
        assert main(_run(synthetic_build, out, server.base_url)) == 0
        rows = server.requests
        assert rows == LIMIT * len(DIMENSION_KEYS)
        base_bodies = _bodies(server, 0)
        capsys.readouterr()
        assert main(_run(synthetic_build, out, server.base_url, "--perturb", "asr-errors,rubric-reversed")) == 0
        summary = json.loads(capsys.readouterr().out)
        assert server.requests == 3 * rows  # the two perturbed arms only
        assert not set(_bodies(server, rows)) & set(base_bodies)
        assert summary["unperturbed"]["called"] == 0 and summary["unperturbed"]["cached"] == rows
        assert {name: arm["called"] for name, arm in summary["arms"].items()} == {
            "asr-errors": rows,
            "rubric-reversed": rows,
        }
        table = summary["perturbations"]["asr-errors"]
        assert table["meta"]["resampling"]["unit"] == "clinician"
        assert table["mean"]["mean_abs_shift"] > 0  # the transcript changed, so did the length-driven score
        assert summary["perturbations"]["rubric-reversed"]["mean"]["mean_abs_shift"] == 0  # same length
        written = Path(summary["shift_tables"])
        assert json.loads(written.read_text())["perturbations"] == summary["perturbations"]
        assert (written.parent / "shifts.md").is_file() and (written.parent / "sensitivity.png").is_file()
        # a rerun asks nothing: every arm is cached
        assert main(_run(synthetic_build, out, server.base_url, "--perturb", "asr-errors,rubric-reversed")) == 0
        assert server.requests == 3 * rows


def test_same_seed_byte_identical_requests_other_seed_other_requests(synthetic_build, tmp_path, chat_server) -> None:
    sent = {}
    with chat_server(respond=_by_length) as server:
        for name, seed in (("first", "7"), ("again", "7"), ("other", "8")):
            out = tmp_path / name
            assert main(_run(synthetic_build, out, server.base_url)) == 0
            start = server.requests
            assert (
                main(_run(synthetic_build, out, server.base_url, "--perturb", "add-fillers", "--perturb-seed", seed))
                == 0
            )
            sent[name] = _bodies(server, start)
    assert sent["first"] == sent["again"]
    assert sent["first"] != sent["other"]


def test_without_the_unperturbed_answers_nothing_is_sent(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server(respond=_by_length) as server:
        assert main(_run(synthetic_build, tmp_path / "out", server.base_url, "--perturb", "padded")) == 2
        assert server.requests == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mis-bench")]
    assert len(lines) == 1
    assert lines[0].startswith("mis-bench run: error: the unperturbed arm is not in the response cache (32 of 32")


@pytest.mark.parametrize("names", ["bogus", "system-in-user"])
def test_bad_perturbations_are_one_line_before_any_request(
    synthetic_build, tmp_path, capsys, names, chat_server
) -> None:
    with chat_server(respond=_by_length) as server:
        assert main(_run(synthetic_build, tmp_path / "out", server.base_url, "--perturb", names)) == 2
        assert server.requests == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mis-bench")]
    assert len(lines) == 1 and "--perturb" in lines[0]


def test_the_paraphrase_arms_give_every_source_of_variance(synthetic_build, tmp_path, capsys, chat_server) -> None:
    import statistics

    with chat_server(respond=_by_length) as server:
        out = tmp_path / "out"
        assert main(_run(synthetic_build, out, server.base_url)) == 0
        capsys.readouterr()
        names = "rubric-paraphrase-a,rubric-paraphrase-b"
        assert main(_run(synthetic_build, out, server.base_url, "--perturb", names)) == 0
    summary = json.loads(capsys.readouterr().out)
    written = json.loads(Path(summary["shift_tables"]).read_text())
    variance = written["variance"]
    assert variance["meta"]["prompts"] == ["unperturbed", "rubric-paraphrase-a", "rubric-paraphrase-b"]
    tables = summary["perturbations"]
    for key, entry in variance["dimensions"].items():
        # the ICC of each prompt, as the shift tables' paired comparison computed it
        by_prompt = [tables["rubric-paraphrase-a"]["dimensions"][key]["icc_unperturbed"]]
        by_prompt += [tables[name]["dimensions"][key]["icc_perturbed"] for name in names.split(",")]
        if all(value is not None for value in by_prompt):
            assert entry["sd_prompts"] == pytest.approx(statistics.stdev(by_prompt))
    markdown = (Path(summary["shift_tables"]).parent / "shifts.md").read_text()
    assert "## Every source of variance" in markdown and "CI, all sources" in markdown
    # the report of the unperturbed run finds its shift tables: the section, the figure, the variance table
    unperturbed = summary["unperturbed"]["results"]
    assert main(["report", unperturbed, "--out", str(tmp_path / "report")]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Under perturbations: " in report and "Every source of variance of the ICC" in report
    assert "| rubric-paraphrase-a |" in report and list((tmp_path / "report").glob("report-sensitivity-1-*.png"))
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    assert data["perturbations"][0]["variance"]["meta"]["prompts"][0] == "unperturbed"
