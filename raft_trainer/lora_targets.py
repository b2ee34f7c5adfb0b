"""The LoRA target modules checked against the model before it is loaded (one line naming the modules it has).

TRL's `ModelConfig` turns a one-item `--lora_target_modules` list into a string, which PEFT reads as a regular
expression matched against whole module paths: `--lora_target_modules q_proj` then matched nothing and the run
ended after the model had loaded in "NoMatchingPeftModuleError". A plain module name stays a name here (a list),
and every name is checked against the model's modules, built on the meta device from its config (no weights).
"""

from __future__ import annotations

import logging
import re

from mis_bench_dataset.toolkit.errors import UsageError

logger = logging.getLogger(__name__)

ALL_LINEAR = "all-linear"  # PEFT's keyword: every linear layer but the output head
_NAME = re.compile(r"[A-Za-z_][\w.]*")  # a module name or dotted path; anything else is a regular expression
_SHOWN = 12  # module names an error lists


def as_module_names(targets: str | list[str] | None) -> str | list[str] | None:
    """`targets` as PEFT should read them: a plain name (the one item TRL unwrapped) back into a list of names;
    `all-linear` and a regular expression stay a string."""
    if isinstance(targets, str) and targets != ALL_LINEAR and _NAME.fullmatch(targets):
        return [targets]
    return targets


def model_module_names(model: str, *, revision: str | None = None, trust_remote_code: bool = False) -> set[str]:
    """The dotted names of the model's modules, from its config on the meta device (nothing downloaded or
    allocated); empty when transformers cannot build the architecture from its config."""
    import torch
    from transformers import AutoConfig, AutoModel

    try:
        config = AutoConfig.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        with torch.device("meta"):
            skeleton = AutoModel.from_config(config, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError, ImportError) as err:
        logger.info("LoRA targets not checked before loading %s: %s", model, err)
        return set()
    return {name for name, _ in skeleton.named_modules() if name}


def missing_targets(targets: list[str], names: set[str]) -> list[str]:
    """The targets no module matches by PEFT's rule for a list: the whole name, or its last dotted parts."""
    return [t for t in targets if not any(name == t or name.endswith(f".{t}") for name in names)]


def check_lora_targets(model_args) -> None:
    """Refuse `--lora_target_modules` names the model does not have, before it is loaded (a UsageError listing the
    leaf names of its linear layers)."""
    model_args.lora_target_modules = as_module_names(model_args.lora_target_modules)
    targets = model_args.lora_target_modules
    if not model_args.use_peft or not isinstance(targets, list):
        return  # no adapter, `all-linear`, or a regular expression: PEFT's own rule applies
    names = model_module_names(
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        trust_remote_code=model_args.trust_remote_code,
    )
    missing = missing_targets(targets, names) if names else []
    if missing:
        leaves = sorted({name.rsplit(".", 1)[-1] for name in names if not name.rsplit(".", 1)[-1].isdigit()})
        shown = ", ".join(leaves[:_SHOWN]) + (f", ... ({len(leaves)} names)" if len(leaves) > _SHOWN else "")
        raise UsageError(
            f"--lora_target_modules {', '.join(missing)}: {model_args.model_name_or_path} has no module of that name",
            where="--lora_target_modules",
            hint=f"use names it has ({shown}) or {ALL_LINEAR}",
        )
