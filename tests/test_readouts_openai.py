"""The expected-score readout from a server's top logprobs: hand computations, a local server returning
given logprobs end to end (live, cached, batch export and import), and the early error of a server
that returns none."""

from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import pytest

from eval_scripts import TokenChoice, expected_from_tokens
from eval_scripts.answers.expected_score import TOP_LOGPROBS, digit_expectation
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_USAGE

from _batch_helpers import read_batch_input
from _harness_helpers import prompt_text
from _readout_helpers import FRACTION_TOP, INTEGER_TOP, hand_expected, logprob_answer, logprob_responder
from _run_args import run_args

MODEL = "fake-model"


def _tokens(*positions) -> list[TokenChoice]:
    """(token, [(candidate, probability), ...]) -> TokenChoice list; the written token's own probability is listed."""
    out = []
    for token, top in positions:
        listed = dict(top or [(token, 1.0)])
        out.append(TokenChoice(token, math.log(listed[token]), tuple((t, math.log(p)) for t, p in listed.items())))
    return out


def test_expected_score_of_a_direct_answer_is_the_hand_computation() -> None:
    tokens = _tokens(("3", INTEGER_TOP), (".", None), ("5", FRACTION_TOP))
    result = expected_from_tokens(tokens, "direct")
    assert result.score == pytest.approx(hand_expected(), abs=1e-12)
    # (3 x .5 + 4 x .3 + 2 x .1) / .9 + 0.1 x (5 x .4 + 0 x .4) / .8, written out
    assert result.score == pytest.approx((1.5 + 1.2 + 0.2) / 0.9 + 0.1 * 2.0 / 0.8, abs=1e-12)
    assert result.integer_digit == 3 and result.integer_mass == pytest.approx(0.9)
    assert result.fraction_mass == pytest.approx(0.8) and result.reason is None


def test_an_integer_answer_has_fraction_zero_and_the_written_token_counts_when_outside_the_list() -> None:
    result = expected_from_tokens(_tokens(("4", [("4", 0.6), ("5", 0.2)])), "direct")
    assert result.score == pytest.approx((4 * 0.6 + 5 * 0.2) / 0.8) and result.fraction_mass is None
    outside = TokenChoice("2", math.log(0.1), ((" 3", math.log(0.6)), ("4", math.log(0.3))))
    assert digit_expectation(outside) == pytest.approx(((2 * 0.1 + 3 * 0.6 + 4 * 0.3) / 1.0, 1.0))


def test_cot_reads_the_final_score_after_the_reasoning() -> None:
    reasoning = [(c, None) for c in "Score 4 needs more warmth.\nFinal score: "]
    tokens = _tokens(*reasoning, ("3", INTEGER_TOP), (".", None), ("5", FRACTION_TOP))
    assert expected_from_tokens(tokens, "cot").score == pytest.approx(hand_expected())


@pytest.mark.parametrize(
    ("positions", "reason"),
    [
        ([("35", None)], "more than one integer digit (out of range)"),
        ([("Score", None), (": ", None), ("3", INTEGER_TOP), (".", None)], "cut by the token limit"),
        ([("3", INTEGER_TOP), (".5", None)], "not tokens of their own"),
        ([("The", None), (" score", None)], "no score in the answer"),
        ([("5", [("5", 0.9), ("4", 0.1)]), (".", None), ("0", [("0", 0.5), ("9", 0.5)])], "outside [1, 5]"),
        # out of the scale as text, so the distribution decides: a sure 5.5 is outside too
        ([("5", None), (".", None), ("5", None)], "expected score 5.500 outside [1, 5]"),
    ],
)
def test_what_cannot_be_read_has_no_expected_score_and_says_why(positions, reason) -> None:
    result = expected_from_tokens(_tokens(*positions), "direct")
    assert result.score is None and reason in result.reason


_run = partial(run_args, model=MODEL, limit=1, retries=0, as_json=True)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_live_expected_run_equals_the_hand_computation_and_keeps_the_text_beside(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    out = tmp_path / "runs"
    with chat_server(respond=logprob_responder(lambda text: "3.5")) as server:
        assert main(_run(synthetic_build, out, server.base_url, "--score-from", "expected")) == 0
        summary = json.loads(capsys.readouterr().out)
        bodies = list(server.bodies)
        assert main(_run(synthetic_build, out, server.base_url, "--score-from", "expected")) == 0
        assert json.loads(capsys.readouterr().out)["called"] == 0  # cached, expected readout included
        assert main(_run(synthetic_build, out, server.base_url)) == 0  # text readout: other keys, asked anew
        assert json.loads(capsys.readouterr().out)["called"] == 8
    assert summary["rows"] == summary["parsed"] == 8 and summary["score_from"] == "expected"
    assert all(b["logprobs"] is True and b["top_logprobs"] == TOP_LOGPROBS and b["max_tokens"] == 4 for b in bodies)
    run_dir = Path(summary["results"]).parent
    predictions = _jsonl(run_dir / "predictions.jsonl")
    assert all(p["prediction"] == pytest.approx(hand_expected(), abs=1e-9) for p in predictions)
    assert {p["raw_response"] for p in predictions} == {"3.5"}
    raw = _jsonl(run_dir / "raw_responses.jsonl")
    assert {r["text_prediction"] for r in raw} == {3.5}
    assert all(r["expected"]["integer_mass"] == pytest.approx(0.9) for r in raw)
    readouts = json.loads((run_dir / "readouts.json").read_text())
    assert readouts["score_from"] == "expected" and readouts["agreement"]["text_vs_expected"]["n"] == 8
    results = json.loads((run_dir / "results.json").read_text())
    assert results["system"]["decoding"]["score_from"] == "expected"
    records = list(iter_records(out / "responses.cache.jsonl"))
    assert all(r["expected"]["score"] == pytest.approx(hand_expected(), abs=1e-6) for r in records[:8])


def test_cot_expected_run_reads_the_final_score(synthetic_build, tmp_path, capsys, chat_server) -> None:
    out = tmp_path / "runs"
    reply = "The therapist is calm and warm.\nFinal score: 3.5"
    with chat_server(respond=logprob_responder(lambda text: reply)) as server:
        code = main(_run(synthetic_build, out, server.base_url, "--score-from", "expected", "--prompt", "cot"))
        bodies = list(server.bodies)
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert all(b["max_tokens"] == 1024 for b in bodies)  # the reasoning keeps its budget
    predictions = _jsonl(Path(summary["predictions"]))
    assert all(p["prediction"] == pytest.approx(hand_expected(), abs=1e-9) for p in predictions)


def test_a_server_without_logprobs_gets_one_clear_error_before_the_run_is_spent(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    with chat_server() as server:  # answers, but never with logprobs
        code = main(
            _run(synthetic_build, tmp_path / "runs", server.base_url, "--score-from", "expected", "--concurrency", "2")
        )
        requests = server.requests
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("mis-bench")]
    assert code == EXIT_USAGE and requests <= 3
    assert len(err) == 1 and "answered without them (its reply's first choice: {" in err[0]
    assert '"finish_reason": "stop"' in err[0] and "--score-from text" in err[0]
    assert not list((tmp_path / "runs").rglob("results.json"))


def test_batch_lines_carry_the_logprob_parameters_and_an_import_equals_the_live_run(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    batch = tmp_path / "batch" / "requests.jsonl"
    flags = ("--score-from", "expected", "--samples", "2", "--temperature", "0.7")
    assert (
        main(_run(synthetic_build, tmp_path / "import", "http://127.0.0.1:9/v1", *flags, "--export-batch", str(batch)))
        == 0
    )
    capsys.readouterr()
    lines = read_batch_input([batch])
    assert len(lines) == 16 and len({line["custom_id"] for line in lines}) == 16  # 8 rows x 2 samples
    assert all(line["body"]["logprobs"] is True and line["body"]["top_logprobs"] == TOP_LOGPROBS for line in lines)
    assert sorted({line["body"]["seed"] for line in lines}) == [0, 1]  # one seed per sample

    def reply(text: str) -> str:
        return "4.0" if "step 0." in text else "3.5"

    output = tmp_path / "batch" / "output.jsonl"
    output.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"batch-{n}",
                    "custom_id": line["custom_id"],
                    "response": {
                        "status_code": 200,
                        "body": logprob_answer(prompt_text(line["body"]), reply(prompt_text(line["body"]))),
                    },
                    "error": None,
                }
            )
            + "\n"
            for n, line in enumerate(reversed(lines))
        )
    )
    assert (
        main(_run(synthetic_build, tmp_path / "import", "http://127.0.0.1:9/v1", *flags, "--import-batch", str(output)))
        == 0
    )
    imported = json.loads(capsys.readouterr().out)["settings"][0]
    with chat_server(respond=logprob_responder(reply)) as server:
        assert main(_run(synthetic_build, tmp_path / "live", server.base_url, *flags)) == 0
    live = json.loads(capsys.readouterr().out)
    assert _jsonl(Path(imported["predictions"])) == _jsonl(Path(live["predictions"]))
    readouts = json.loads(Path(live["readouts"]).read_text())
    # The expected readout of a direct answer is read from the prompt alone: the samples cannot disagree, so the
    # scores' test-retest is withheld and the sampled texts' stands beside it.
    agreement = readouts["agreement"]
    assert agreement["test_retest"]["icc"] is None and "prompt alone" in agreement["test_retest"]["withheld"]
    assert agreement["text_test_retest"]["n"] + agreement["text_test_retest"]["n_left_out"] == 8
    assert readouts["samples"] == 2


def test_a_dry_run_counts_every_sample_at_the_expected_budget(synthetic_build, tmp_path, capsys) -> None:
    flags = ("--score-from", "expected", "--samples", "3", "--temperature", "0.5", "--dry-run")
    assert main(_run(synthetic_build, tmp_path / "runs", "http://127.0.0.1:9/v1", *flags)) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["requests"] == 24 and plan["cached"] == 0  # 8 rows x 3 samples, nothing sent
    assert plan["completion_tokens_max"] == 24 * 4 and plan["settings"][0]["expected_completion_tokens"] == 4


def test_hostile_log_probabilities_are_ignored_not_a_crash() -> None:
    hostile = TokenChoice("3", 1e308, (("3", 1e308), ("4", float("nan")), ("2", float("inf")), ("1", math.log(0.5))))
    assert digit_expectation(hostile) == pytest.approx((1.0, 0.5))


def test_a_position_whose_every_digit_probability_is_hostile_is_no_score_not_a_crash() -> None:
    good = TokenChoice("3", math.log(0.5), (("3", math.log(0.5)), ("4", math.log(0.5))))
    point = TokenChoice(".", 0.0, ((".", 0.0),))
    nan_digit = TokenChoice("2", float("nan"), (("2", float("nan")), ("6", 3.0)))
    integer_bad = expected_from_tokens([nan_digit, point, good], "direct")
    assert integer_bad.score is None and integer_bad.reason == "no usable probability for the score's integer digit"
    fraction_bad = expected_from_tokens([good, point, nan_digit], "direct")
    assert fraction_bad.score is None and fraction_bad.reason == "no usable probability for the score's decimal digit"
    assert expected_from_tokens([good, point, good], "direct").score == pytest.approx(3.5 + 0.35)
