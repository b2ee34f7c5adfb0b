"""The distribution decides, not the text: an expected-score row whose greedy text is out of the scale ("5.8")
is still scored from the digit distributions where its score stands, live and from an imported batch, and
counted with its reason in the run line, raw_responses.jsonl, readouts.json and the report; a row with no place
where a score stands stays None with the reason."""

from __future__ import annotations

import json
import math
import threading
from functools import partial
from pathlib import Path

import pytest

from eval_scripts import TokenChoice, expected_from_tokens
from eval_scripts.answers.expected_score import score_span
from eval_scripts.cli import main
from eval_scripts.report.stability import stability_tables

from _batch_helpers import read_batch_input
from _harness_helpers import prompt_text
from _readout_helpers import logprob_answer
from _run_args import run_args

MODEL = "fake-model"
# The greedy digit is the most likely one, yet the mass below it pulls the expectation inside [1, 5].
OUT_OF_SCALE_TOP = [("5", 0.30), ("1", 0.25), (" 2", 0.25), ("3", 0.10), ("The", 0.10)]
TOPS = {
    "5.8": (OUT_OF_SCALE_TOP, [("8", 0.5), ("2", 0.3), ("\n", 0.2)]),
    "5.2": (OUT_OF_SCALE_TOP, [("2", 0.6), ("9", 0.2), ("\n", 0.2)]),
    "3.5": ([("3", 0.5), ("4", 0.3), (" 2", 0.1), ("The", 0.05)], [("5", 0.4), ("0", 0.4), ("\n", 0.2)]),
}


def hand(reply: str) -> float:
    """E[int] + 0.1 E[frac] of the candidates `TOPS[reply]` gives the two digit positions, written out."""
    integer, fraction = TOPS[reply]
    if reply in ("5.8", "5.2"):
        e_int = (5 * 0.30 + 1 * 0.25 + 2 * 0.25 + 3 * 0.10) / (0.30 + 0.25 + 0.25 + 0.10)
        e_frac = (8 * 0.5 + 2 * 0.3) / 0.8 if reply == "5.8" else (2 * 0.6 + 9 * 0.2) / 0.8
    else:
        e_int = (3 * 0.5 + 4 * 0.3 + 2 * 0.1) / 0.9
        e_frac = (5 * 0.4 + 0 * 0.4) / 0.8
    return e_int + 0.1 * e_frac


class Responder:
    """Answers the first four requests "5.8", the next two "5.2", the rest "3.5", with the logprobs of `TOPS`."""

    def __init__(self) -> None:
        self.replies: dict[str, str] = {}
        self._lock = threading.Lock()

    def reply_for(self, text: str) -> str:
        with self._lock:
            if text not in self.replies:
                n = len(self.replies)
                self.replies[text] = "5.8" if n < 4 else "5.2" if n < 6 else "3.5"
            return self.replies[text]

    def __call__(self, body: dict) -> tuple[int, dict]:
        text = prompt_text(body)
        reply = self.reply_for(text)
        integer, fraction = TOPS[reply]
        return 200, logprob_answer(text, reply, integer_top=integer, fraction_top=fraction)


_run = partial(run_args, model=MODEL, limit=4, retries=0, flags=("--score-from", "expected"))


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_hand_computations_are_inside_the_scale_though_the_greedy_text_is_not() -> None:
    assert hand("5.8") == pytest.approx(2.55 / 0.9 + 0.575)  # 3.408...: the "for example 3.41"
    assert 1.0 <= hand("5.8") <= 5.0 and 1.0 <= hand("5.2") <= 5.0


def test_32_of_32_rows_are_scored_each_the_hand_computation(synthetic_build, tmp_path, capsys, chat_server) -> None:
    out = tmp_path / "runs"
    responder = Responder()
    with chat_server(respond=responder) as server:
        assert main(_run(synthetic_build, out, server.base_url, "--json")) == 0
        summary = json.loads(capsys.readouterr().out)
        assert main(_run(synthetic_build, out, server.base_url)) == 0  # the same run, cached: the human run line
        line = capsys.readouterr().out
    assert summary["rows"] == 32 and summary["parsed"] == 32 and summary["unparsed"] == 0
    assert summary["distribution_only"] == {"out of range": 6}
    assert "scored from the distribution, the text giving no score: 6 rows (out of range: 6)" in line
    run_dir = Path(summary["results"]).parent
    raw = {(r["video_id"], r["dimension"]): r for r in _jsonl(run_dir / "raw_responses.jsonl")}
    predictions = _jsonl(run_dir / "predictions.jsonl")
    assert len(predictions) == 32
    for row in predictions:
        record = raw[(row["video_id"], row["dimension"])]
        assert row["prediction"] == pytest.approx(hand(record["response"]), abs=1e-12)
        out_of_scale = record["response"] != "3.5"
        assert (record["text_prediction"] is None) is out_of_scale
        assert record.get("distribution_only") == ("out of range" if out_of_scale else None)
    assert sorted(r["response"] for r in raw.values()).count("5.8") == 4
    readouts = json.loads((run_dir / "readouts.json").read_text())
    assert readouts["distribution_only"] == {"rows": 6, "reasons": {"out of range": 6}}
    assert sum(1 for row in readouts["rows"] if row.get("distribution_only") == ["out of range"]) == 6
    assert readouts["agreement"]["text_vs_expected"]["n"] == 26  # the text readout leaves those six out


def test_an_imported_batch_follows_the_same_rule(synthetic_build, tmp_path, capsys) -> None:
    batch = tmp_path / "batch" / "requests.jsonl"
    offline = "http://127.0.0.1:9/v1"
    assert main(_run(synthetic_build, tmp_path / "import", offline, "--export-batch", str(batch), "--json")) == 0
    capsys.readouterr()
    lines = read_batch_input([batch])
    responder = Responder()
    output = tmp_path / "batch" / "output.jsonl"
    output.write_text(
        "".join(
            json.dumps(
                {"custom_id": line["custom_id"], "response": {"status_code": 200, "body": responder(line["body"])[1]}}
            )
            + "\n"
            for line in lines
        )
    )
    assert main(_run(synthetic_build, tmp_path / "import", offline, "--import-batch", str(output), "--json")) == 0
    imported = json.loads(capsys.readouterr().out)["settings"][0]
    assert imported["parsed"] == 32 and imported["distribution_only"] == {"out of range": 6}
    raw = _jsonl(Path(imported["predictions"]).parent / "raw_responses.jsonl")
    assert all(r["prediction"] == pytest.approx(hand(r["response"]), abs=1e-12) for r in raw)


def _tokens(text: str, top=None) -> list[TokenChoice]:
    """One token per character, each sure, the first digit with the candidates `top`."""
    out, first = [], True
    for char in text:
        listed = dict(top) if (top and first and char.isdigit()) else {char: 1.0}
        first = first and not char.isdigit()
        out.append(TokenChoice(char, math.log(listed[char]), tuple((t, math.log(p)) for t, p in listed.items())))
    return out


def test_where_no_score_stands_there_is_none_with_the_reason() -> None:
    assert score_span("5.8", "direct") == (0, 3)
    assert score_span("The therapist is warm.\nFinal score: 5.8", "cot") == (36, 39)  # 23 + 13 characters before
    assert score_span("Score: 3.375.375.375", "direct") == (
        7,
        12,
    )  # a runaway: its first digits stand where a score does
    for text, reason in [
        ("The therapist is warm.", "no score in the answer (no score stated)"),
        ("Score: 8/10", "no score in the answer (another scale)"),  # another scale: no digit of a 1-5 score
        ("Score: 3-4", "no score in the answer (a range, a list or a decimal comma)"),
        ("Score: -3", "no score in the answer (signed value)"),
        ("10", "the value where the score stands has more than one integer digit (out of range)"),
    ]:
        assert score_span(text, "direct") == reason
        result = expected_from_tokens(_tokens(text), "direct")
        assert result.score is None and result.reason == reason
    leaning_high = expected_from_tokens(_tokens("5.8", [("5", 0.6), ("4", 0.4)]), "direct")  # 4.6 + 0.8 = 5.4
    assert leaning_high.score is None and leaning_high.reason == "expected score 5.400 outside [1, 5]"
    cot = expected_from_tokens(_tokens("Warm.\nFinal score: 5.8", OUT_OF_SCALE_TOP), "cot")
    assert cot.score == pytest.approx(2.55 / 0.9 + 0.8)


def test_the_report_shows_the_distribution_scored_rows_in_the_readout_cell() -> None:
    entry = {
        "label": "m text direct",
        "score_from": "expected",
        "samples": 1,
        "experts_icc": 0.5,
        "distribution_only": {"rows": 6, "reasons": {"out of range": 6}},
    }
    ((_, table),) = stability_tables({"runs": [entry], "pairs": []})
    assert (
        table.rows[0][1] == "expected (6 rows scored from the distribution only, the text giving none: out of range 6)"
    )


def test_the_transformers_cot_readout_scores_a_final_score_out_of_the_scale(tmp_path) -> None:
    import torch

    from eval_scripts import DecodingConfig, Prompt, get_backend
    from raft_trainer.digits import DigitTokens

    from _harness_helpers import make_fixed_answer_model

    model_dir = make_fixed_answer_model(tmp_path / "fixed", answer="Final score: 5.8")
    backend = get_backend("transformers", str(model_dir), device="cpu")
    tokenizer, model = backend.tokenizer, backend.hf_model
    digits = DigitTokens.from_tokenizer(tokenizer)
    chain = tokenizer("Final score: 5.8", add_special_tokens=False).input_ids
    step = chain.index(digits.digit_ids[5])
    with torch.no_grad():  # where the score stands, 1 and 2 get mass too: greedy still writes 5
        for digit in (1, 2):
            model.lm_head.weight[digits.digit_ids[digit], step] = 9.9
    prompts = [Prompt("AB0101_T1_Jessica", "wau", "Rate the response.")]
    (completion,) = backend.complete(prompts, DecodingConfig.for_style("cot", score_from="expected"))
    assert completion.text == "Final score: 5.8"  # out of the scale as text
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Rate the response."}], add_generation_prompt=True, tokenize=False
    )
    before = tokenizer(chat + "Final score: ", add_special_tokens=False)["input_ids"]
    values = torch.arange(10, dtype=torch.float32)

    def probabilities(ids):
        with torch.no_grad():
            return torch.softmax(model(torch.tensor([ids])).logits[0, -1, list(digits.digit_ids)], dim=-1)

    p_int = probabilities(before)
    p_frac = probabilities(before + [digits.digit_ids[5], digits.point_id])
    reference = float(p_int @ values + 0.1 * (p_frac @ values))
    assert 1.0 <= reference <= 5.0 and completion.expected["integer_digit"] == 5
    assert completion.expected["score"] == pytest.approx(reference, abs=1e-6)
