"""CoT-RAFT (TRACT, Chiang et al., ACL 2025): an analysis first, then the score RAFT reads.

The prompt asks for a short analysis against the rubric and a last line "Final score: x.y"; the training
completion is the row's `rationale` (the model's own, generated before training by `raft_trainer.rationales`)
followed by that line with the gold score. The RAFT loss reads the final score's two digit positions: the
completion's *last* [digit, '.', digit] (`DigitTokens.find_score(last=True)`), the place the harness's
expected readout of a CoT answer reads too (`eval_scripts.answers.expected_score.score_span(text, "cot")`, a
declared "Final score"); the cross-entropy term trains every other completion token (the rationale and the
final line's words), never the two digits RAFT scores, as TRACT's objective splits them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mis_bench_dataset.dimensions import DIRECT_PROMPT_STYLE
from raft_trainer.data import (
    ScoringEncoder,
    _row_name,
    check_prompt_style,
    prompt_messages,
    render_with_completion,
)

SCORE_COMPLETION = "score"
COT_COMPLETION = "cot"
COMPLETION_STYLES = (SCORE_COMPLETION, COT_COMPLETION)
RATIONALE_COLUMN = "rationale"
FINAL_SCORE_PREFIX = "Final score: "
COT_INSTRUCTION = (
    "First analyse the therapist's response against the rubric in a few sentences; then end with one line "
    f"'{FINAL_SCORE_PREFIX}x.y', your score between 1.0 and 5.0 with one decimal."
)
# Where a generated analysis stops being a rationale: its own declaration of a final score (cut off, so the
# training completion states one final score, the gold one, and the parser reads exactly that one).
_OWN_FINAL_SCORE = re.compile(r"final\s+score", re.IGNORECASE)


def check_completion_style(completion_style: str, prompt_style: str = DIRECT_PROMPT_STYLE) -> None:
    """A CoT completion needs the toolkit prompt (the `paper` prompt ends on '###Score:', a score, no analysis)."""
    if completion_style not in COMPLETION_STYLES:
        raise ValueError(f"completion_style must be one of {', '.join(COMPLETION_STYLES)}, got {completion_style!r}")
    if completion_style == COT_COMPLETION and check_prompt_style(prompt_style) != DIRECT_PROMPT_STYLE:
        raise ValueError(
            f"completion_style 'cot' asks for an analysis in the toolkit's prompt; prompt_style {prompt_style!r} "
            "asks for the score alone: use prompt_style 'direct'"
        )


def cot_messages(row: Mapping[str, Any], transcript: str | None = None) -> list[dict[str, str]]:
    """The toolkit prompt with the CoT instruction after its last line."""
    messages = prompt_messages(row, transcript, DIRECT_PROMPT_STYLE)
    messages[-1] = {**messages[-1], "content": f"{messages[-1]['content']}\n\n{COT_INSTRUCTION}"}
    return messages


def cot_completion(rationale: str, score_text: str) -> str:
    """The rationale, then the line the parser reads as the declared final score."""
    rationale = rationale.strip()
    return f"{rationale}\n{FINAL_SCORE_PREFIX}{score_text}" if rationale else f"{FINAL_SCORE_PREFIX}{score_text}"


def rationale_of(generated: str) -> str:
    """A generated analysis without its own final score (cut at its first 'Final score'), stripped."""
    match = _OWN_FINAL_SCORE.search(generated)
    return (generated[: match.start()] if match else generated).strip()


@dataclass
class CotScoringEncoder(ScoringEncoder):
    """`ScoringEncoder` for CoT-RAFT: the prompt with the CoT instruction, the completion `cot_completion` of
    the row's `rationale`; the score is the completion's last one, and its two digits carry no CE label."""

    score_is_last = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.modality != "text":
            raise ValueError("CoT-RAFT rows are text rows: modality 'text' only")
        check_completion_style(COT_COMPLETION, self.prompt_style)

    def _render(self, row: Mapping[str, Any], transcript: str, score_text: str) -> tuple[list[int], int]:
        rationale = row.get(RATIONALE_COLUMN)
        if rationale is None:
            raise ValueError(
                f"{_row_name(row)} has no `{RATIONALE_COLUMN}`; generate the rationales first "
                "(`mis-bench train --generate_rationales`, raft_trainer.rationales)"
            )
        completion = cot_completion(rationale, score_text)
        return render_with_completion(self.tokenizer, cot_messages(row, transcript), completion)

    def encode(self, row: Mapping[str, Any], score_text: str) -> dict[str, Any]:
        out = super().encode(row, score_text)
        index = out["score_index"]
        labels = list(out["labels"])
        labels[index] = labels[index + 2] = -100  # RAFT's two digits: the score term's, not the CE term's
        out["labels"] = labels
        return out

    def generation_prompt(self, row: Mapping[str, Any]) -> list[int]:
        """`ScoringEncoder.generation_prompt` of the row before it has a rationale (an empty one)."""
        return super().generation_prompt({**row, RATIONALE_COLUMN: ""})
