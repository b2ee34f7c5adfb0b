"""The regression head (`RAFTConfig(head="regression")`): the comparison the RAFT paper makes first.

Lukasik et al. (ICLR 2025) compare RAFT with a regression head on the same backbone: here
`AutoModelForSequenceClassification(num_labels=1)`, the standard Hugging Face way to regress, on the same
prompt as MIS-RAFT's (the chat prompt and the answer's prefix, ending just before the score's integer digit),
so the head reads the hidden state of the position whose LM logits MIS-RAFT reads. LoRA goes on the same
modules; the head (`score`) is trained fully through PEFT's `modules_to_save` (task type `SEQ_CLS`). The loss
is the squared error on the gold score (eq. 12's batch mean, the trainer's own normalisation). Its readout,
named `regression` in results, is the head's output clipped to the score scale [1, 5] (the results schema's
range; an unclipped output below 1 or above 5 can only be further from any gold score): no digits, no text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

logger = logging.getLogger(__name__)

SEQ_CLS_TASK = "SEQ_CLS"
_ADAPTER_CONFIG = "adapter_config.json"


def load_regression_model(model_name_or_path: str, tokenizer, **init_kwargs):
    """`AutoModelForSequenceClassification` with one output and the tokenizer's pad id (its pooling finds each
    row's last token by it); a saved regression adapter folder loads its base model, then the adapter."""
    from transformers import AutoModelForSequenceClassification

    folder = Path(model_name_or_path)
    if is_regression_adapter(folder):
        from peft import PeftModel

        base_path = json.loads((folder / _ADAPTER_CONFIG).read_text())["base_model_name_or_path"]
        base = AutoModelForSequenceClassification.from_pretrained(base_path, num_labels=1, **init_kwargs)
        _set_pad(base, tokenizer)
        return PeftModel.from_pretrained(base, str(folder))
    model = _sequence_classifier(model_name_or_path, init_kwargs)
    if model.config.num_labels != 1:
        raise ValueError(f"{model_name_or_path!r} has {model.config.num_labels} outputs; the regression head has one")
    _set_pad(model, tokenizer)
    return model


def _sequence_classifier(model_name_or_path: str, init_kwargs: dict):
    """`AutoModelForSequenceClassification(num_labels=1)`; an architecture transformers has no such class for (e.g.
    Qwen2.5-VL) is refused in one line (a UsageError), naming a text backbone of the same family."""
    from transformers import AutoConfig, AutoModelForSequenceClassification
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES

    from mis_bench_dataset.toolkit.errors import UsageError

    config = AutoConfig.from_pretrained(
        model_name_or_path,
        revision=init_kwargs.get("revision"),
        trust_remote_code=bool(init_kwargs.get("trust_remote_code")),
    )
    if config.model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES and not init_kwargs.get(
        "trust_remote_code"
    ):
        raise UsageError(
            f"--head regression: transformers has no AutoModelForSequenceClassification for {config.model_type!r} "
            f"models ({model_name_or_path})",
            where="--model_name_or_path",
            hint="use a text backbone with one (e.g. Qwen/Qwen2.5-7B-Instruct for Qwen2.5-VL), or --head lm",
        )
    return AutoModelForSequenceClassification.from_pretrained(model_name_or_path, num_labels=1, **init_kwargs)


def _set_pad(model, tokenizer) -> None:
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.problem_type = "regression"


def is_regression_adapter(folder: str | Path) -> bool:
    """Whether `folder` holds a PEFT adapter of a sequence-classification model (what `head="regression"` saves)."""
    path = Path(folder) / _ADAPTER_CONFIG
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text()).get("task_type") == SEQ_CLS_TASK
    except (OSError, ValueError):
        return False


def is_regression_folder(folder: str | Path) -> bool:
    """A saved regression head: its adapter, or full weights of a one-output `*ForSequenceClassification`."""
    if is_regression_adapter(folder):
        return True
    path = Path(folder) / "config.json"
    if not path.is_file():
        return False
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    architectures = config.get("architectures") or []
    return any(a.endswith("ForSequenceClassification") for a in architectures) and len(config.get("id2label", {})) == 1


def regression_peft_config(peft_config):
    """The run's LoRA config for the regression head: the same modules, rank and dropout, task type `SEQ_CLS`, so
    PEFT trains the new head fully (`modules_to_save` gets `score`/`classifier`); None stays None (full fine-tuning)."""
    if peft_config is None:
        return None
    import dataclasses

    return dataclasses.replace(peft_config, task_type=SEQ_CLS_TASK)


def regression_readout(outputs: np.ndarray) -> np.ndarray:
    """The score a regression head gives: its output clipped to the scale [SCORE_MIN, SCORE_MAX] (how many were is
    `clipped_outputs`, which every reader of the head reports: a clipped score is not the head's answer)."""
    from mis_bench_dataset.dimensions import SCORE_MAX, SCORE_MIN

    return np.clip(outputs, SCORE_MIN, SCORE_MAX)


def clipped_outputs(outputs: np.ndarray) -> np.ndarray:
    """Which head outputs lie outside the scale, so that `regression_readout` changed them (bool, same shape)."""
    from mis_bench_dataset.dimensions import SCORE_MAX, SCORE_MIN

    outputs = np.asarray(outputs, dtype=np.float64)
    return (outputs < SCORE_MIN) | (outputs > SCORE_MAX)


@torch.inference_mode()
def read_regression_scores(model, prompts: Sequence[Sequence[int]], pad_id: int, *, batch_size: int = 8) -> np.ndarray:
    """The head's output after each prompt (token ids ending just before the score's integer digit), left-padded
    in batches of similar length, unclipped (`regression_readout` clips); shape (len(prompts),)."""
    from torch.nn.utils.rnn import pad_sequence

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    scores = np.empty(len(prompts), dtype=np.float64)
    order = np.argsort([len(p) for p in prompts], kind="stable")
    for start in range(0, len(order), batch_size):
        index = order[start : start + batch_size]
        rows = [torch.as_tensor(prompts[i], dtype=torch.long) for i in index]
        ids = pad_sequence(rows, batch_first=True, padding_value=pad_id, padding_side="left").to(device)
        mask = pad_sequence([torch.ones_like(r) for r in rows], batch_first=True, padding_side="left").to(device)
        scores[index] = model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, 0].double().cpu().numpy()
    model.train(was_training)
    return scores
