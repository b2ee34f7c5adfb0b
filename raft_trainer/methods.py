"""The training methods of `train.py` (`--method`) and the combinations refused before a model loads.

`raft`: `RAFTTrainer` with `raft_objective` (and, with `completion_style: cot`, CoT-RAFT on the rationales
`--generate_rationales` wrote first). `grpo`: TRL's `GRPOTrainer` with the rewards of `raft_trainer.grpo`.
Each refusal is one `UsageError` line naming the flags, so a run never trains something other than what was asked.
"""

from __future__ import annotations

from mis_bench_dataset.toolkit.errors import UsageError

RAFT_METHOD = "raft"
# What GRPO's score reward reads (`--grpo_reward`): the score line the answer states (`raft_trainer.grpo`).
GRPO_REWARDS = ("parsed",)
GRPO_METHOD = "grpo"
TRAINING_METHODS = (RAFT_METHOD, GRPO_METHOD)
# Where a training setting comes from, in the one-line refusals of the trainer's options
RECIPE_FLAGS = "flags or --config recipe"


def _refuse(what: str, hint: str) -> None:
    raise UsageError(what, where=RECIPE_FLAGS, hint=hint)


def check_method(script_args, training_args) -> None:
    """Refuse a method with settings that mean nothing to it (see the module doc)."""
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
    if script_args.method != GRPO_METHOD:
        return
    if cot:
        _refuse(
            "--method grpo has no reward parser for a CoT answer (its score reward reads the score line only)",
            "use --completion_style score with --method grpo, or CoT-RAFT with --method raft",
        )
    if training_args.raft_objective != "raft":
        _refuse(
            f"--raft_objective {training_args.raft_objective} is RAFTTrainer's loss; --method grpo optimises "
            "its rewards",
            "drop --raft_objective, or use --method raft",
        )
    if not script_args.train:
        _refuse("--method grpo with --no_train trains nothing", "drop --no_train, or --method grpo")
    if training_args.input_source == "raw":
        _refuse(
            "--method grpo samples answers from text prompts; --input_source raw feeds media through a processor",
            "use --input_source features",
        )
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
