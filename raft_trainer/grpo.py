"""`--method grpo`: reinforcement learning with TRL's `GRPOTrainer` (Shao et al., 2024) on the same rows and prompts.

The model samples `num_generations` answers per prompt (the RAFT prompt, rendered and shortened to `max_length`
exactly as `ScoringEncoder` does); each answer earns two rewards, summed by TRL:

- `score_reward`: -(s - s*)^2, the squared error between the score the answer states and the gold score s* (the
  quantity MIS-RAFT's eq. 12 minimises, as a reward); an answer with no readable score earns
  -`WORST_SQUARED_ERROR`, the worst error the 1-5 scale allows;
- `format_reward`: 1 when the answer is exactly the score line "The score prediction is: x.y" (a one-decimal score
  in [1, 5]), else 0: the form `predict_scores` and the harness read.

The answer's score is read by `read_answer_score`, the strict reader of that one line (the harness's parser is a
layer above this package). A LoRA adapter as for RAFT; the saved model is predicted by `predict_scores` and
`mis-bench run` like any other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from mis_bench_dataset.dimensions import SCORE_MAX, SCORE_MIN
from raft_trainer.data import COMPLETION_PREFIX, ScoringEncoder, labelled_rows

# The worst squared error on the 1-5 scale: what an answer without a readable score costs.
WORST_SQUARED_ERROR = (SCORE_MAX - SCORE_MIN) ** 2
_ANSWER = re.compile(re.escape(COMPLETION_PREFIX.strip()) + r"\s*(\d\.\d)")


def answer_text(completion: Any) -> str:
    """The text of one GRPO completion: a string (standard prompts) or an assistant message list (conversational)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        content = completion[-1].get("content")
        return content if isinstance(content, str) else ""
    return ""


def read_answer_score(text: str) -> float | None:
    """The score of an answer that is exactly "The score prediction is: x.y" (surrounding space allowed), x.y in
    [1, 5]; None otherwise (no score, another form, two scores, out of the scale)."""
    match = _ANSWER.fullmatch(text.strip())
    if match is None:
        return None
    value = float(match.group(1))
    return value if SCORE_MIN <= value <= SCORE_MAX else None


def score_reward(completions: Sequence[Any], score: Sequence[float], **_: Any) -> list[float]:
    """-(stated score - gold)^2 per completion; -WORST_SQUARED_ERROR when the answer states none."""
    rewards = []
    for completion, gold in zip(completions, score, strict=True):
        stated = read_answer_score(answer_text(completion))
        rewards.append(-WORST_SQUARED_ERROR if stated is None else -((stated - float(gold)) ** 2))
    return rewards


def format_reward(completions: Sequence[Any], **_: Any) -> list[float]:
    """1.0 for an answer in the score line's form, else 0.0."""
    return [float(read_answer_score(answer_text(c)) is not None) for c in completions]


def grpo_rows(dataset, encoder: ScoringEncoder, split: str = "train"):
    """Labelled scoring rows -> TRL's standard prompt rows: `prompt` (the chat-rendered RAFT prompt up to the
    assistant's turn, transcript shortened as for RAFT) and `score` (the gold, handed to `score_reward`)."""
    dataset = labelled_rows(dataset, split)
    tokenizer = encoder.tokenizer

    def prompt_of(row: Mapping[str, Any]) -> dict[str, Any]:
        return {"prompt": tokenizer.decode(encoder.generation_prompt(row)), "score": float(row["score"])}

    return dataset.map(prompt_of, remove_columns=dataset.column_names, desc=f"Rendering {split} prompts for GRPO")


def grpo_config(training_args, script_args=None):
    """A `GRPOConfig` with every `TrainingArguments` value of the run's `RAFTConfig` and the GRPO options
    (`script_args`, e.g. `grpo_options()`; None: their defaults)."""
    from transformers import TrainingArguments
    from trl import GRPOConfig

    if script_args is None:
        from raft_trainer.arguments import grpo_options  # (arguments imports this module: read when called)

        script_args = grpo_options()

    shared = {f.name: getattr(training_args, f.name) for f in fields(TrainingArguments) if f.init}
    if "activation_checkpointing" in shared:  # transformers 5.x: the old alias stays unset, as RAFTConfig leaves it
        shared.pop("gradient_checkpointing", None)
    shared.update(
        model_init_kwargs=training_args.model_init_kwargs,
        max_completion_length=script_args.max_completion_length,
        num_generations=script_args.num_generations,
        temperature=script_args.grpo_temperature,
        beta=script_args.grpo_beta,
        remove_unused_columns=False,  # the `score` column reaches the reward functions
    )
    return GRPOConfig(**shared)


def make_grpo_trainer(model, training_args, script_args, train_dataset, processing_class, **kwargs):
    """TRL's `GRPOTrainer` on MIS-Bench scoring rows with the score and format rewards: `--method grpo` from Python.

    `training_args`: a `RAFTConfig` (its setting, `max_length` and every training argument); `script_args`: the GRPO
    options (`grpo_options()`, or None for their defaults); `train_dataset`: labelled scoring rows (a `datasets`
    Dataset); `kwargs` go to `GRPOTrainer` (`peft_config`, `quantization_config`, `callbacks`). Train it with
    `.train()`; the saved adapter is predicted by `predict_scores` like any RAFT model."""
    from trl import GRPOTrainer

    from raft_trainer.digits import DigitTokens
    from raft_trainer.trainer import _ensure_pad_token

    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    _ensure_pad_token(tokenizer)
    tokenizer.padding_side = "left"  # GRPOTrainer generates from left-padded prompts
    encoder = ScoringEncoder.for_setting(
        tokenizer, DigitTokens.from_tokenizer(tokenizer), training_args.setting, max_length=training_args.max_length
    )
    return GRPOTrainer(
        model,
        reward_funcs=[score_reward, format_reward],
        args=grpo_config(training_args, script_args),
        train_dataset=grpo_rows(train_dataset, encoder),
        processing_class=tokenizer,
        **kwargs,
    )
