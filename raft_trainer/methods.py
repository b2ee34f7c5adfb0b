"""The training methods of `train.py` (`--method`), the one table of what each accepts, and the combinations
refused before a model loads.

`raft`: `RAFTTrainer` with `raft_objective` (and, with `completion_style: cot`, CoT-RAFT on the rationales
`--generate_rationales` wrote first). `grpo`: TRL's `GRPOTrainer` with the rewards of `raft_trainer.grpo`.
`method_table()` says, per method, which values of the head, the objective, the completion style, the prompt style,
the input source and the prediction readout it accepts; `check_method` applies it when the arguments are parsed
(and again once the input source is resolved), so `--method grpo --head regression` is one usage line before any
model is loaded, never a trained step and a shape mismatch. Each refusal is one `UsageError` line naming the flags,
so a run never trains something other than what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from mis_bench_dataset.toolkit.errors import UsageError

RAFT_METHOD = "raft"
# What GRPO's score reward reads (`--grpo_reward`): the score line the answer states (`raft_trainer.grpo`).
GRPO_REWARDS = ("parsed",)
GRPO_METHOD = "grpo"
TRAINING_METHODS = (RAFT_METHOD, GRPO_METHOD)
# Where a training setting comes from, in the one-line refusals of the trainer's options
RECIPE_FLAGS = "flags or --config recipe"
# The options the table covers, and which parsed arguments hold each (`script` or `training`).
METHOD_OPTIONS = {
    "head": "training",
    "raft_objective": "training",
    "completion_style": "training",
    "prompt_style": "training",
    "input_source": "training",
    "predict_method": "script",
}


@dataclass(frozen=True)
class Accepted:
    """The values of one option a method accepts; `why` and `hint` word the refusal of any other (`{value}` is
    the value given)."""

    values: tuple[str, ...]
    why: str = ""
    hint: str = ""


def method_table() -> dict[str, dict[str, Accepted]]:
    """method -> option -> what it accepts: the one table of the trainer's combinations."""
    from mis_bench_dataset.dimensions import PROMPT_STYLE_ALIASES
    from mis_bench_dataset.setting import TEXT_INPUT
    from mis_bench_dataset.setting_inputs import INPUT_SOURCES
    from raft_trainer.config import HEADS, LM_HEAD, RAFT_OBJECTIVES
    from raft_trainer.cot import COMPLETION_STYLES, SCORE_COMPLETION
    from raft_trainer.data import TRAINER_PROMPT_STYLES
    from raft_trainer.predict import PREDICT_METHODS

    prompt_styles = (*TRAINER_PROMPT_STYLES, *PROMPT_STYLE_ALIASES)
    input_sources = (*INPUT_SOURCES, TEXT_INPUT)
    return {
        RAFT_METHOD: {
            "head": Accepted(HEADS),
            "raft_objective": Accepted(RAFT_OBJECTIVES),
            "completion_style": Accepted(COMPLETION_STYLES),
            "prompt_style": Accepted(prompt_styles),
            "input_source": Accepted(input_sources),
            "predict_method": Accepted(PREDICT_METHODS),
        },
        GRPO_METHOD: {
            "head": Accepted(
                (LM_HEAD,),
                "--method grpo rewards the answers the LM head writes; --head {value} writes no answer",
                "drop --head, or use --method raft",
            ),
            "raft_objective": Accepted(
                ("raft",),  # the default: no objective asked for
                "--raft_objective {value} is RAFTTrainer's loss; --method grpo optimises its rewards",
                "drop --raft_objective, or use --method raft",
            ),
            "completion_style": Accepted(
                (SCORE_COMPLETION,),
                "--method grpo has no reward parser for a CoT answer (its score reward reads the score line only)",
                "use --completion_style score with --method grpo, or CoT-RAFT with --method raft",
            ),
            "prompt_style": Accepted(prompt_styles),
            "input_source": Accepted(
                tuple(source for source in input_sources if source != "raw"),
                "--method grpo samples answers from text prompts; --input_source {value} feeds media through a "
                "processor",
                "use --input_source features",
            ),
            "predict_method": Accepted(PREDICT_METHODS),
        },
    }


def _refuse(what: str, hint: str) -> None:
    raise UsageError(what, where=RECIPE_FLAGS, hint=hint)


def check_table(script_args, training_args) -> None:
    """Refuse an option value the method does not accept (`method_table`), naming the flag and the method."""
    table = method_table()
    accepts = table.get(script_args.method)
    if accepts is None:
        _refuse(f"--method {script_args.method!r} is not a training method", f"use {' or '.join(TRAINING_METHODS)}")
    held = {"script": script_args, "training": training_args}
    for option, holder in METHOD_OPTIONS.items():
        value = getattr(held[holder], option, None)
        accepted = accepts[option]
        if value is None or value in accepted.values:
            continue
        why = accepted.why or f"--method {script_args.method} does not take --{option} {value}"
        hint = accepted.hint or f"use --{option} {' or '.join(accepted.values)}"
        _refuse(why.format(value=value), hint)


def check_method(script_args, training_args) -> None:
    """Refuse a method with settings that mean nothing to it: the table (`check_table`), then the rest (see the
    module doc)."""
    from raft_trainer.cot import COT_COMPLETION

    cot = training_args.completion_style == COT_COMPLETION
    if script_args.generate_rationales:
        if not cot:
            _refuse(
                "--generate_rationales writes CoT-RAFT's rationales, but --completion_style is 'score'",
                "add --completion_style cot (recipes/cot_raft.yaml sets it)",
            )
        if script_args.method != RAFT_METHOD:
            _refuse("--generate_rationales is CoT-RAFT's first stage, not GRPO's", "drop --method grpo")
        if script_args.num_processes > 1 or script_args.accelerate_config:
            _refuse(
                "--generate_rationales runs in one process (each launched process would write every part)",
                "drop --num_processes / --accelerate_config for stage one",
            )
    check_table(script_args, training_args)
    if script_args.method != GRPO_METHOD:
        return
    if not script_args.train:
        _refuse("--method grpo with --no_train trains nothing", "drop --no_train, or --method grpo")
    if script_args.num_generations < 2:
        _refuse(
            f"--num_generations {script_args.num_generations}: GRPO's advantage compares a group of answers",
            "use --num_generations 2 or more",
        )
    if training_args.per_device_train_batch_size % script_args.num_generations:
        _refuse(
            f"--per_device_train_batch_size {training_args.per_device_train_batch_size} counts GRPO's answers and "
            f"must be a multiple of --num_generations {script_args.num_generations}",
            "make it a multiple",
        )
