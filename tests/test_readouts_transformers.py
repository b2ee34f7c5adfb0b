"""The transformers backend's expected-score readout: the trainer's own path (`raft_trainer.predict_scores`,
shared prefix included), no generate() for direct/paper answers, the final score's position for CoT, and
a run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from eval_scripts import DecodingConfig, Prompt, get_backend, parse_score, render_paper_prompt, render_prompt
from eval_scripts.cli import main
from raft_trainer import DigitTokens, RAFTConfig, ReadoutOptions, predict_scores, save_tiny_model

from _harness_helpers import make_fixed_answer_model, scoring_rows
from _run_args import run_args


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2", seed=3)


def _paper_prompts(rows) -> list[Prompt]:
    prompts = []
    for row in rows:
        paper = render_paper_prompt(row, "text")
        prompts.append(Prompt(row["video_id"], row["dimension"], paper.user, system=paper.system))
    return prompts


@pytest.mark.parametrize("batch_size", [1, 3])
def test_the_backend_expectation_equals_predict_scores_on_the_same_model_and_rows(tiny, batch_size) -> None:
    rows = scoring_rows(3, dimensions=("empathy", "wau"))
    rows[2]["transcript"] += " And a longer answer, so that the rows differ in length." * 3
    backend = get_backend("transformers", str(tiny), batch_size=batch_size, device="cpu")
    decoding = DecodingConfig.for_style("paper", score_from="expected")
    completions = sorted(backend.complete(_paper_prompts(rows), decoding), key=lambda c: c.index)
    reference = predict_scores(
        backend.hf_model,
        backend.tokenizer,
        rows,
        RAFTConfig(prompt_style="paper", max_length=None),
        readout=ReadoutOptions(batch_size=batch_size, show_progress=False),
    )
    got = [c.expected["score"] if c.expected["score"] is not None else c.expected["reason"] for c in completions]
    assert got == [float(v) if 1 <= v <= 5 else f"expected score {v:.3f} outside [1, 5]" for v in reference]
    assert all(0 < c.expected["integer_mass"] <= 1 and 0 < c.expected["fraction_mass"] <= 1 for c in completions)
    for completion in completions:  # the text kept beside: the greedy digits after MIS-RAFT's completion prefix
        assert completion.text.startswith("The score prediction is: ")
        greedy = float(completion.text[-3:])
        assert parse_score(completion.text, "paper") == (greedy if 1 <= greedy <= 5 else None)


def test_a_direct_expected_readout_calls_no_generate(tiny, monkeypatch) -> None:
    backend = get_backend("transformers", str(tiny), batch_size=4, device="cpu")

    def no_generate(*args, **kwargs):
        raise AssertionError("generate() was called")

    monkeypatch.setattr(backend.hf_model, "generate", no_generate)
    prompts = [Prompt(r["video_id"], r["dimension"], render_prompt(r, "text", "direct")) for r in scoring_rows(1)]
    completions = list(backend.complete(prompts, DecodingConfig.for_style("direct", score_from="expected")))
    assert len(completions) == 8 and all(c.ok and c.expected["integer_digit"] is not None for c in completions)
    assert all(c.usage["completion_tokens"] == 3 for c in completions)


def test_cot_reads_the_final_score_after_the_generated_reasoning(tmp_path) -> None:
    model_dir = make_fixed_answer_model(tmp_path / "fixed", answer="Final score: 3.5")
    backend = get_backend("transformers", str(model_dir), device="cpu")
    prompts = [Prompt("AB0101_T1_Jessica", "wau", "Rate the response.")]
    (completion,) = backend.complete(prompts, DecodingConfig.for_style("cot", score_from="expected"))
    assert completion.text == "Final score: 3.5" and completion.finish_reason == "stop"
    # An independent reference: the model's digit distributions at the digit's position, one sequence at a time.
    tokenizer, model = backend.tokenizer, backend.hf_model
    digits = DigitTokens.from_tokenizer(tokenizer)
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Rate the response."}], add_generation_prompt=True, tokenize=False
    )
    before = tokenizer(chat + "Final score: ", add_special_tokens=False)["input_ids"]
    values = torch.arange(10, dtype=torch.float32)

    def probabilities(ids):
        with torch.no_grad():
            return torch.softmax(model(torch.tensor([ids])).logits[0, -1, list(digits.digit_ids)], dim=-1)

    p_int = probabilities(before)
    chosen = int(p_int.argmax())
    p_frac = probabilities(before + [digits.digit_ids[chosen], digits.point_id])
    assert completion.expected["score"] == pytest.approx(float(p_int @ values + 0.1 * (p_frac @ values)), abs=1e-6)
    assert completion.expected["integer_digit"] == 3 == chosen


def test_an_expected_run_end_to_end_with_samples(tiny, synthetic_build, tmp_path, capsys) -> None:
    readout = ("--score-from", "expected", "--samples", "2", "--temperature", "0.8")
    args = run_args(
        synthetic_build, tmp_path / "runs", None, "--device", "cpu", *readout, backend="transformers", model=str(tiny),
        limit=1, as_json=True,
    )  # fmt: skip
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 8 and summary["called"] == 16 and summary["samples"] == 2
    readouts = json.loads(Path(summary["readouts"]).read_text())
    assert readouts["agreement"]["text_vs_expected"]["n"] == 8
    raw = [json.loads(line) for line in Path(summary["results"]).with_name("raw_responses.jsonl").open()]
    assert sorted({r["sample"] for r in raw}) == [0, 1] and len(raw) == 16
    assert main(args) == 0 and json.loads(capsys.readouterr().out)["called"] == 0


def test_the_expected_readout_stops_between_dimensions_at_the_run_deadline(tiny, monkeypatch) -> None:
    backend = get_backend("transformers", str(tiny), batch_size=4, device="cpu")
    rows = scoring_rows(2, dimensions=("empathy", "wau"))
    prompts = [Prompt(r["video_id"], r["dimension"], render_prompt(r, "text", "direct")) for r in rows]
    checks = iter([False, True])  # the deadline passes while the first dimension is read
    monkeypatch.setattr(backend, "past_deadline", lambda: next(checks))
    completions = sorted(
        backend.complete(prompts, DecodingConfig.for_style("direct", score_from="expected")), key=lambda c: c.index
    )
    assert [c.index for c in completions] == list(range(len(prompts)))
    answered = {c.index for c in completions if c.ok}
    assert answered == {i for i, p in enumerate(prompts) if p.dimension == prompts[0].dimension}
    assert backend.calls == len(answered) == 2
    assert {c.failure for c in completions if not c.ok} == {"run deadline"}


def test_a_cot_expected_readout_past_the_run_deadline_fails_its_rows_not_the_run(tmp_path) -> None:
    import time

    model_dir = make_fixed_answer_model(tmp_path / "fixed", answer="Final score: 3.5")
    backend = get_backend("transformers", str(model_dir), device="cpu")
    backend.deadline = time.monotonic() - 1.0
    prompts = [Prompt("AB0101_T1_Jessica", dimension, "Rate the response.") for dimension in ("wau", "empathy")]
    completions = list(backend.complete(prompts, DecodingConfig.for_style("cot", score_from="expected")))
    assert sorted(c.index for c in completions) == [0, 1] and backend.calls == 0
    assert all(not c.ok and c.failure == "run deadline" for c in completions)
    text = list(backend.complete(prompts, DecodingConfig.for_style("cot")))
    assert all(not c.ok and c.failure == "run deadline" for c in text)
