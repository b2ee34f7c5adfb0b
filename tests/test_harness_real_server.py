"""The harness end to end against a real OpenAI-compatible server: `transformers serve` with a tiny model.

The model's weights make greedy decoding answer "3.5" and stop, whatever the prompt, so every
prediction is known in advance. One server is shared by the module; the tests count the requests
it really received from its access log. Skips only when the `transformers[serving]` extra is not
installed, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_USAGE, install_hint

from _harness_helpers import make_fixed_answer_model
from _run_args import run_args
from _server_helpers import TransformersServer, serving_missing

pytestmark = pytest.mark.slow  # starts `transformers serve`

ANSWER = 3.5


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    missing = serving_missing()
    if missing:
        pytest.skip(
            f"the real-server tests need the transformers[serving] extra (missing: {', '.join(missing)}); "
            + install_hint("test")
        )
    folder = tmp_path_factory.mktemp("served")
    model_dir = make_fixed_answer_model(folder / "fixed-3.5")
    with TransformersServer(model_dir, folder / "serve.log") as server:
        yield server


def _run(server, out: Path, dataset: Path, *extra: str, model: str | None = None) -> list[str]:
    """A run against `server`, asking for the model it serves unless told another."""
    model = model or server.model
    return run_args(
        dataset, out, server.base_url, *extra, model=model, limit=2, as_json=True, flags=("--split", "test")
    )


def _summary(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def _error_lines(capsys) -> list[str]:
    """The command's own error lines on stderr (progress bars of the datasets library aside); no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [line for line in err.splitlines() if line.startswith("mis-bench")]


@pytest.mark.parametrize("style", ["direct", "cot"])
def test_runs_end_to_end_and_a_rerun_makes_no_calls(served, synthetic_build, tmp_path, capsys, style) -> None:
    out = tmp_path / "runs"
    before = served.chat_requests()
    assert main(_run(served, out, synthetic_build, "--prompt", style, "--concurrency", "4")) == 0
    summary = _summary(capsys)
    assert summary["rows"] == 16 and summary["called"] == 16 and summary["parsed"] == 16
    assert summary["failed"] == summary["truncated"] == summary["unparsed"] == 0 and summary["failures"] == {}
    assert served.chat_requests() - before == 16  # one request per row, none retried
    results = json.loads(Path(summary["results"]).read_text())
    assert results["schema_version"] == "1.1"
    assert {p["prediction"] for p in results["predictions"]} == {ANSWER}
    assert results["outcomes"]["overall"] == {"answered": 16, "unparsed": 0, "truncated": 0, "failed": 0}
    raw = [json.loads(line) for line in (Path(summary["results"]).parent / "raw_responses.jsonl").open()]
    assert {r["finish_reason"] for r in raw} == {"stop"} and {r["response"] for r in raw} == {"3.5"}
    assert all(r["usage"]["completion_tokens"] == 4 for r in raw)  # "3", ".", "5", end of sequence
    records = list(iter_records(out / "responses.cache.jsonl"))
    assert len(records) == len({r["key"] for r in records}) == 16  # concurrency 4: each row asked once
    # the model transformers serve names in each response (a local folder: its path) is kept, and is --model
    assert {r["served_model"] for r in records} == {r["served_model"] for r in raw} == {served.model}
    assert results["system"]["served_models"] == {served.model: 16} and "model_warnings" not in results["system"]
    assert summary["model_warnings"] == []

    requests_before_rerun = served.chat_requests()
    assert main(_run(served, out, synthetic_build, "--prompt", style, "--concurrency", "4")) == 0
    again = _summary(capsys)
    assert again["called"] == 0 and again["cached"] == 16
    assert served.chat_requests() == requests_before_rerun


def test_a_wrong_model_name_stops_the_run_at_once_with_the_servers_message(
    served, synthetic_build, tmp_path, capsys
) -> None:
    before = served.chat_requests()
    code = main(_run(served, tmp_path / "runs", synthetic_build, "--concurrency", "2", model="no-such-model"))
    err = _error_lines(capsys)
    assert code == EXIT_USAGE
    assert len(err) == 1 and err[0].startswith("mis-bench run: error: the model server refused the request: HTTP 400")
    assert f"Server is pinned to '{served.model}'; requested 'no-such-model'" in err[0]
    assert "--model no-such-model" in err[0]
    assert served.chat_requests() - before <= 2  # the requests in flight, not one per row
    assert not list((tmp_path / "runs").rglob("results.json"))


def test_an_answer_cut_by_the_token_limit_is_not_scored(served, synthetic_build, tmp_path, capsys) -> None:
    out = tmp_path / "runs"
    # no row gave a score: exit 1 with the counts by reason (docs/guarantees.md), the run's files written
    assert main(_run(served, out, synthetic_build, "--max-tokens", "2")) == 1
    captured = capsys.readouterr()
    assert "no row gave a score in text direct (16 rows: 16 truncated, 0 unparsed, 0 out of range" in captured.err
    summary = json.loads(captured.out)
    assert summary["truncated"] == 16 and summary["parsed"] == 0 and summary["unparsed"] == 0
    assert "16 answer(s) reached the token limit and were not scored (max_new_tokens 2); raise --max-tokens" in (
        captured.err
    )
    results = json.loads(Path(summary["results"]).read_text())
    assert {p["prediction"] for p in results["predictions"]} == {None}  # "3." is never read as 3.0
    assert results["outcomes"]["overall"] == {"answered": 0, "unparsed": 0, "truncated": 16, "failed": 0}
    assert all(rate == 0.0 for rate in results["parse_rates"].values())
    raw = [json.loads(line) for line in (Path(summary["results"]).parent / "raw_responses.jsonl").open()]
    assert {(r["status"], r["response"], r["finish_reason"]) for r in raw} == {("truncated", "3.", "length")}
    assert all("raise --max-tokens" in r["error"] for r in raw)
    # never cached as an answer: the same command asks again
    before = served.chat_requests()
    assert main(_run(served, out, synthetic_build, "--max-tokens", "2")) == 1
    assert _summary(capsys)["called"] == 16 and served.chat_requests() - before == 16


def test_a_plot_is_refused_before_any_request_unless_images_are_declared(
    served, synthetic_build, tmp_path, capsys
) -> None:
    before = served.chat_requests()
    args = _run(
        served,
        tmp_path / "runs",
        synthetic_build,
        "--modality",
        "video+text",
        "--feature-format",
        "plot",
        "--limit",
        "1",
    )
    assert main(args) == EXIT_USAGE
    err = _error_lines(capsys)
    assert len(err) == 1 and "needs image input, but the openai backend" in err[0]
    assert "takes only text" in err[0] and "--backend-modalities" in err[0]
    assert served.chat_requests() == before
    assert not (tmp_path / "runs" / "responses.cache.jsonl").exists()
    # declared, the plot is sent (this text-only server would drop it: declaring is the user's call)
    assert main([*args, "--backend-modalities", "text,image"]) == 0
    summary = _summary(capsys)
    assert summary["input_source"] == "features" and summary["called"] == 8 and summary["parsed"] == 8
    assert served.chat_requests() - before == 8


def test_transformers_serve_returns_no_logprobs_so_an_expected_run_stops_at_once(
    served, synthetic_build, tmp_path, capsys
) -> None:
    """`transformers serve` accepts `logprobs` / `top_logprobs` but ignores them (it answers without any):
    the expected-score readout cannot run on it, and says so on the first answer."""
    before = served.chat_requests()
    code = main(_run(served, tmp_path / "runs", synthetic_build, "--score-from", "expected", "--concurrency", "1"))
    err = _error_lines(capsys)
    assert code == EXIT_USAGE
    assert len(err) == 1 and "answered without them (its reply's first choice: {" in err[0]
    assert '"content": "3.5"' in err[0] and "transformers serve` does not" in err[0]
    assert served.chat_requests() - before <= 2


def test_a_server_killed_mid_run_stops_it_with_exit_3_and_another_server_answers_only_the_rows_left(
    served, synthetic_build, tmp_path, capsys
) -> None:
    """A second `transformers serve` of the same model, SIGKILLed after four answers: the run stops within
    --down-after of the kill (exit 3, one line); the shared server then answers exactly the rows left."""
    import threading
    import time

    from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS

    out = tmp_path / "runs"
    cache = out / "responses.cache.jsonl"
    killed_at: list[float] = []

    def answered() -> int:
        lines = cache.read_text().split("\n")[:-1] if cache.is_file() else []
        return sum(json.loads(line).get("status") == "ok" for line in lines)

    with TransformersServer(Path(served.model), tmp_path / "victim.log") as victim:

        def kill_after_four() -> None:
            deadline = time.monotonic() + 120
            while answered() < 4 and time.monotonic() < deadline:
                time.sleep(0.02)
            victim.process.kill()
            victim.process.wait()
            killed_at.append(time.monotonic())

        killer = threading.Thread(target=kill_after_four, daemon=True)
        killer.start()
        code = main(_run(victim, out, synthetic_build, "--concurrency", "1", "--down-after", "3"))
        ended = time.monotonic()
        killer.join()
    (line,) = _error_lines(capsys)
    assert code == EXIT_REQUESTS and 3 <= ended - killed_at[0] < 10
    assert "stopped answering: every attempt for the last 3 s failed to connect" in line and victim.base_url in line
    before, rows_left = served.chat_requests(), 16 - answered()
    assert 0 < rows_left < 16
    assert main(_run(served, out, synthetic_build)) == 0
    summary = _summary(capsys)
    assert served.chat_requests() - before == rows_left == summary["called"] and summary["parsed"] == 16


def test_perturbed_arms_against_transformers_serve(served, synthetic_build, tmp_path, capsys) -> None:
    """`--perturb` against the real server: the unperturbed arm from the cache (no request), each perturbed arm
    its 16 rows, and a shift table with clustered CIs (the fixed-answer model never moves: shift 0)."""
    out = tmp_path / "runs"
    assert main(_run(served, out, synthetic_build)) == 0
    capsys.readouterr()
    before = served.chat_requests()
    assert (
        main(_run(served, out, synthetic_build, "--perturb", "no-fillers,rubric-paraphrase-a", "--bootstrap", "100"))
        == 0
    )
    summary = _summary(capsys)
    assert served.chat_requests() - before == 2 * 16  # the two perturbed arms, nothing for the unperturbed one
    assert summary["unperturbed"]["called"] == 0 and summary["unperturbed"]["cached"] == 16
    for table in summary["perturbations"].values():
        assert table["meta"]["resampling"]["unit"] == "clinician"
        assert table["mean"]["mean_shift"] == 0 and table["mean"]["share_moved"] == 0
    assert Path(summary["shift_tables"]).is_file()
