"""MIS-RAFT from Python in TRL's scripts' shape: `main(script_args, training_args, model_args)` takes the three
dataclasses `train.py`'s parser builds (TRL's `trl/scripts/sft.py` has the same `main`). `mis-bench train` and
`raft_trainer/train.py` parse them from flags and a recipe, then run the same function (`train.train_from_arguments`):
one path, the same checks, the same training, the same files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raft_trainer.arguments import RAFTModelConfig, RAFTScriptArguments
    from raft_trainer.config import RAFTConfig


def main(script_args: RAFTScriptArguments, training_args: RAFTConfig, model_args: RAFTModelConfig) -> int:
    """Train and predict from the three dataclasses, as `mis-bench train` does from its flags; 0 when done.

    The same checks first (settings this machine cannot run, the method, the build, an output folder holding only
    this writer's files), each a `UsageError` or `DataError` before any model loads; then the trained adapter,
    `trainer_state.json`, `setting.json`, `predictions_test.csv` and (a labelled test split) `scores_test.json` in
    `training_args.output_dir`. A `max_length` other than the default is kept as chosen (refused below the build's
    prompt floor); the default is raised to fit. It trains in this process: for several, run the script under
    `accelerate launch --num_processes N` (each process calls `main`, as TRL's scripts do).

    Examples:
        >>> from raft_trainer import RAFTConfig, RAFTModelConfig, RAFTScriptArguments, main
        >>> script_args = RAFTScriptArguments(dataset_dir="build")
        >>> training_args = RAFTConfig("out", max_steps=5)
        >>> model_args = RAFTModelConfig(model_name_or_path="Qwen/Qwen2.5-0.5B-Instruct")
        >>> main(script_args, training_args, model_args)  # doctest: +SKIP
        0
        >>> script_args.num_processes = 2  # refused before anything is read or loaded
        >>> main(script_args, training_args, model_args)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        mis_bench_dataset.toolkit.errors.UsageError: main() trains in this process: ...
    """
    from raft_trainer.train import train_from_arguments

    return train_from_arguments(script_args, training_args, model_args)
