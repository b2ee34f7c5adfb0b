"""What a trained model's folder says about how to ask it: the `setting.json` that `mis-bench train` writes.

A model fine-tuned on the paper's prompt and read by its digit distribution is evaluated fairly only with that
prompt and that readout: run with the harness's defaults (the toolkit prompt, the text parser) a tiny RAFT model
gave 0 of 32 scores with no hint why. So a run on a model folder takes the prompt style, modality, input source
and readout the model was trained with, unless the user gave the flag; a given flag that contradicts the training
is kept and warned about. The trainer's predictions read the LM head's expected score (`expected`), a regression
head its one output (`regression`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mis_bench_dataset.dimensions import (
    COT_PROMPT_STYLE,
    MODALITY_SETTINGS,
    SCORE_EXPECTED,
    SCORE_REGRESSION,
    canonical_prompt_style,
)
from mis_bench_dataset.setting_inputs import INPUT_SOURCES
from mis_bench_dataset.toolkit.errors import DataError

TRAINED_SETTING_NAME = "setting.json"  # what `mis-bench train` writes beside a trained model (its `method` too)
# run option (RunConfig field) -> its flag, for the notes; the trained value of each comes from `TrainedSetting`.
ADOPTED_FLAGS: dict[str, str] = {
    "modality": "--modality",
    "prompt_style": "--prompt",
    "input_source": "--input-source",
    "score_from": "--score-from",
    "max_new_tokens": "--max-tokens",
}
FINAL_SCORE_OPTION = "final_score"  # the transformers backend's option of where a CoT answer's score is read


@dataclass(frozen=True)
class TrainedSetting:
    """The run options a trained model folder asks for, and where they were read."""

    values: dict[str, Any]  # RunConfig field -> the value the model was trained (and predicted) with
    method: str
    source: Path
    # The transformers backend's options the trainer's readout needs (`-M KEY=VALUE`): CoT-RAFT's prefilled score.
    backend_options: dict[str, str] = field(default_factory=dict)


def read_trained_setting(model: str | Path) -> TrainedSetting | None:
    """The setting a model folder was trained with, or None when `model` is no folder with a `setting.json`.

    A setting.json that is not the trainer's (not an object, an unknown modality or prompt style) is a DataError
    naming the file and the field: a run must not guess how the model was trained."""
    path = Path(model) / TRAINED_SETTING_NAME
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read {path}: {err}", hint="rewrite it with `mis-bench train`") from None
    if not isinstance(record, dict):
        raise DataError(f"{path} is not a JSON object", hint="rewrite it with `mis-bench train`")
    values = {
        "modality": _field(record, "modality", MODALITY_SETTINGS, path),
        "prompt_style": _prompt_style(record, path),
    }
    backend_options: dict[str, str] = {}
    if record.get("completion_style") is not None:
        from raft_trainer.cot import COT_COMPLETION  # (imports torch: only for a folder that names a completion)

        if record["completion_style"] == COT_COMPLETION:  # CoT-RAFT: an analysis, then "Final score: x.y", read there
            values["prompt_style"] = COT_PROMPT_STYLE
            backend_options[FINAL_SCORE_OPTION] = "prefilled"  # the trainer's readout: analysis, then the score line
            if isinstance(record.get("rationale_max_new_tokens"), int):
                values["max_new_tokens"] = record["rationale_max_new_tokens"]  # the analysis' budget in training
    if record.get("input_source") in INPUT_SOURCES:
        values["input_source"] = record["input_source"]
    method = str(record.get("method") or "")
    values["score_from"] = SCORE_REGRESSION if method == SCORE_REGRESSION else SCORE_EXPECTED  # one name: the head
    return TrainedSetting(values, method, path, backend_options)


def _field(record: Mapping[str, Any], key: str, choices: Collection[str], path: Path) -> str:
    value = record.get(key)
    if value not in choices:
        raise DataError(
            f"{path}: {key} is {value!r}, not one of {', '.join(choices)}", hint="rewrite it with `mis-bench train`"
        )
    return str(value)


def _prompt_style(record: Mapping[str, Any], path: Path) -> str:
    try:
        return canonical_prompt_style(record.get("prompt_style"))
    except ValueError as err:
        raise DataError(f"{path}: prompt_style: {err}", hint="rewrite it with `mis-bench train`") from None


def adopt_backend_options(trained: TrainedSetting, given: list[str]) -> tuple[list[str], list[str]]:
    """(the `-M KEY=VALUE` items to add, notes): each backend option the trainer's readout needs that the user's own
    `-M` items (`given`) do not set."""
    set_keys = {item.split("=", 1)[0].strip() for item in given}
    added = [f"{key}={value}" for key, value in trained.backend_options.items() if key not in set_keys]
    return added, [f"-M {item}" for item in added]


def adopt_trained_setting(
    trained: TrainedSetting, current: Mapping[str, Any], given: Collection[str]
) -> tuple[dict[str, str], list[str], list[str]]:
    """(the options to set, notes saying which were taken from the training, warnings on given flags that
    contradict it). `current`: the run's parsed options; `given`: the options the user typed."""
    adopted: dict[str, str] = {}
    notes: list[str] = []
    warnings: list[str] = []
    for name, trained_value in trained.values.items():
        value = current.get(name)
        if name in given:
            if value != trained_value:
                warnings.append(
                    f"{ADOPTED_FLAGS[name]} {value} differs from the {trained_value!r} the model was trained with "
                    f"({trained.source}); its scores may not reflect the training"
                )
            continue
        adopted[name] = trained_value
        notes.append(f"{ADOPTED_FLAGS[name]} {trained_value}")
    return adopted, notes, warnings
