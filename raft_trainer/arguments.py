"""The command line of `raft_trainer/train.py`: TRL's `TrlParser` over three dataclasses, as TRL's own scripts do.

`RAFTScriptArguments` (what the script reads and writes), `RAFTConfig` (the trainer's configuration) and
`RAFTModelConfig` (TRL's `ModelConfig`: model, LoRA, quantization). Every field is a flag (`--field_name` or
`--field-name`) and a key of a `--config` YAML recipe; a flag overrides the recipe. `raft_trainer/recipes/paper_d1.yaml`
is the paper's Appendix D.1 setup.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, fields

from trl import ModelConfig, SFTConfig, TrlParser

from mis_bench_dataset.setting import SETTING_FIELDS
from mis_bench_dataset.toolkit.errors import UsageError
from mis_bench_dataset.toolkit.given import GIVEN, given_flags, mark_given, recording
from raft_trainer.config import RAFTConfig, gpu_bf16_available
from raft_trainer.methods import GRPO_REWARDS, RAFT_METHOD, RECIPE_FLAGS, TRAINING_METHODS
from raft_trainer.predict import PREDICT_METHODS


@dataclass
class RAFTScriptArguments:
    r"""
    Arguments of `raft_trainer/train.py` that are neither the trainer's nor the model's.

    Parameters:
        dataset_dir (`str`):
            A built MIS-Bench folder (`mis-bench build`): its `scoring` config is trained on (the `train` split),
            evaluated on (`validation`, when `eval_strategy` is not `"no"`) and predicted (`test`); the audio/video
            settings also read its `features` config. Alias: `--dataset`.
        train (`bool`, *optional*, defaults to `True`):
            Whether to train. `--no_train` (a recipe's `train: false`) only predicts the test split with the model
            as loaded, the paper's "raw inference" condition of Table 4; nothing is trained or saved but
            `setting.json` and the predictions.
        predict (`bool`, *optional*, defaults to `True`):
            Whether to write the test split's expected scores to `OUTPUT_DIR/predictions_test.csv` after training
            (and `scores_test.json` when the split is labelled). `--no_predict` skips them.
        predict_method (`str`, *optional*, defaults to `"greedy"`):
            `raft_trainer.predict.predict_scores` method: `"greedy"` (E[int] + 0.1·E[frac | argmax int], training's
            formula) or `"exact"` (the expectation over the five integer digits).
        predict_batch_size (`int`, *optional*, defaults to `8`):
            Rows per forward pass when predicting.
        num_processes (`int`, *optional*, defaults to `1`):
            Processes to train in (DDP). Above 1, the settings and the data are checked here first, then the
            processes are started with `accelerate launch` (`raft_trainer.launch`); ignored inside a launched group.
            With `accelerate_config`, overrides the file's `num_processes` when above 1.
        accelerate_config (`str`, *optional*):
            accelerate configuration to launch with: the name of one shipped in `raft_trainer/accelerate_configs`
            (`multi_gpu` (DDP), `fsdp` (FSDP2), `zero2`, `zero3` (DeepSpeed); the settings a LoRA / QLoRA run needs
            are in each file's comments) or the path of an accelerate YAML file (e.g. a copy for two machines).
            Checked before any process starts; FSDP and DeepSpeed need CUDA GPUs.
        method (`str`, *optional*, defaults to `"raft"`):
            Trainer: `"raft"` (`RAFTTrainer`, the objective `raft_objective` names) or `"grpo"` (TRL's
            `GRPOTrainer` with a squared-error and a format reward, `raft_trainer.grpo`).
        num_generations (`int`, *optional*, defaults to `2`):
            GRPO: answers sampled per prompt (the group whose mean reward is the baseline);
            `per_device_train_batch_size` counts answers and must be a multiple of it.
        max_completion_length (`int`, *optional*, defaults to `16`):
            GRPO: most tokens per sampled answer ("The score prediction is: x.y" takes about 10).
        grpo_temperature (`float`, *optional*, defaults to `1.0`):
            GRPO: sampling temperature of the answers.
        grpo_beta (`float`, *optional*, defaults to `0.0`):
            GRPO: weight of the KL penalty to the base model (TRL's default, 0: no reference model kept).
        grpo_reward (`str`, *optional*, defaults to `"parsed"`):
            GRPO: where the score reward reads the answer's score: `"parsed"`, the score line the answer states
            (`raft_trainer.grpo.read_answer_score`).
        generate_rationales (`bool`, *optional*, defaults to `False`):
            CoT-RAFT's first stage (TRACT): generate the base model's rationales for the labelled train and
            validation rows into `rationales_dir`, then stop (resumes where an earlier run stopped).
        rationales_dir (`str`, *optional*):
            CoT-RAFT: the folder of the rationales (default `<dataset_dir>.rationales/<model folder name>`, beside
            the build).
        rationale_max_new_tokens (`int`, *optional*, defaults to `256`):
            CoT-RAFT: most tokens of a generated analysis (stage one, and the test readout).
        rationale_temperature (`float`, *optional*, defaults to `0.7`):
            CoT-RAFT stage one: sampling temperature (0: greedy); part k of the rows is sampled with seed `seed + k`.
    """

    dataset_dir: str = field(
        metadata={"help": "Built MIS-Bench folder (its `scoring` config is used).", "aliases": ["--dataset"]},
    )
    train: bool = field(
        default=True, metadata={"help": "Train; --no_train only predicts the test split (Table 4's raw inference)."}
    )
    predict: bool = field(default=True, metadata={"help": "Write the test split's predictions after training."})
    predict_method: str = field(
        default="greedy",
        metadata={"help": "Expected score at prediction: greedy or exact.", "choices": list(PREDICT_METHODS)},
    )
    predict_batch_size: int = field(default=8, metadata={"help": "Rows per forward pass when predicting."})
    num_processes: int = field(
        default=1,
        metadata={"help": "Processes to train in (DDP; the data and settings are checked before they start)."},
    )
    accelerate_config: str | None = field(
        default=None,
        metadata={
            "help": "accelerate configuration to launch with: multi_gpu (DDP), fsdp (FSDP2), zero2, zero3 "
            "(DeepSpeed; raft_trainer/accelerate_configs) or the path of an accelerate YAML file."
        },
    )
    method: str = field(
        default=RAFT_METHOD,
        metadata={"help": "raft or grpo (TRL's GRPOTrainer).", "choices": list(TRAINING_METHODS)},
    )
    num_generations: int = field(
        default=2, metadata={"help": "GRPO: answers sampled per prompt (per_device_train_batch_size: a multiple)."}
    )
    max_completion_length: int = field(default=16, metadata={"help": "GRPO: most tokens per sampled answer."})
    grpo_temperature: float = field(default=1.0, metadata={"help": "GRPO: sampling temperature of the answers."})
    grpo_beta: float = field(default=0.0, metadata={"help": "GRPO: KL penalty weight (0: no reference model)."})
    grpo_reward: str = field(
        default="parsed",
        metadata={"help": "GRPO: what the score reward reads (the score line).", "choices": list(GRPO_REWARDS)},
    )
    generate_rationales: bool = field(
        default=False,
        metadata={"help": "CoT-RAFT stage one: write the base model's rationales to --rationales_dir, then stop."},
    )
    rationales_dir: str | None = field(
        default=None,
        metadata={"help": "CoT-RAFT: folder of the rationales (default: <dataset_dir>.rationales/<model name>)."},
    )
    rationale_max_new_tokens: int = field(
        default=256, metadata={"help": "CoT-RAFT: most tokens of a generated analysis."}
    )
    rationale_temperature: float = field(
        default=0.7, metadata={"help": "CoT-RAFT stage one: sampling temperature (0: greedy), seeded by --seed."}
    )


@dataclass
class RAFTModelConfig(ModelConfig):
    r"""
    TRL's [`~trl.ModelConfig`] with MIS-RAFT's defaults: a LoRA adapter (PEFT, as in paper §5.3 and D.1).

    Parameters:
        model_name_or_path (`str`):
            Hub id or local folder of a chat model whose tokenizer has a chat template (D.1:
            `Qwen/Qwen2.5-VL-7B-Instruct`). Alias: `--model`.
        dtype (`str`, *optional*):
            dtype the weights are loaded in, and the compute dtype of 4-bit quantization. If not set: `"bfloat16"`
            when `bf16` is on (D.1), else `"float32"`.
        use_peft (`bool`, *optional*, defaults to `True`):
            Train a LoRA adapter (D.1: PEFT LoRA); `--use_peft false` trains all weights.
        lora_r (`int`, *optional*, defaults to `8`):
            LoRA rank (not stated in D.1; the toolkit's default).
        lora_alpha (`int`, *optional*, defaults to `16`):
            LoRA alpha (not stated in D.1; the toolkit's default).
        lora_dropout (`float`, *optional*, defaults to `0.1`):
            LoRA dropout (not stated in D.1; the toolkit's default).
        lora_target_modules (`list[str]`, *optional*, defaults to `["q_proj", "v_proj"]`):
            Modules given a LoRA adapter (not stated in D.1; the toolkit's default).

    The other fields are TRL's, e.g. `load_in_4bit` with `bnb_4bit_quant_type="nf4"` (D.1: 4-bit NF4;
    bitsandbytes and CUDA only, `pip install -e ".[qlora]"`).
    """

    model_name_or_path: str = field(
        metadata={
            "help": "Hub id or local folder of a chat model (tokenizer with a chat template).",
            "aliases": ["--model"],
        },
    )
    dtype: str | None = field(
        default=None,
        metadata={
            "help": "dtype of the loaded weights and of 4-bit computation; if not set: bfloat16 with bf16, "
            "else float32.",
            "choices": ["auto", "bfloat16", "float16", "float32"],
        },
    )
    use_peft: bool = field(default=True, metadata={"help": "Train a LoRA adapter (paper D.1: PEFT LoRA)."})
    lora_r: int = field(default=8, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha."})
    lora_dropout: float = field(default=0.1, metadata={"help": "LoRA dropout."})
    lora_target_modules: list[str] | None = field(
        default_factory=lambda: ["q_proj", "v_proj"], metadata={"help": "Modules given a LoRA adapter."}
    )


DATACLASSES = (RAFTScriptArguments, RAFTConfig, RAFTModelConfig)


def grpo_options(dataset_dir: str = "") -> RAFTScriptArguments:
    """The GRPO options with `train.py`'s defaults (`RAFTScriptArguments`: num_generations, max_completion_length,
    grpo_temperature, grpo_beta); set any field before passing it to `make_grpo_trainer`."""
    return RAFTScriptArguments(dataset_dir=dataset_dir, method="grpo")


# --model, --dataset, --out, --prompt: the spelling of every mis-bench command; TRL's --model_name_or_path,
# --dataset_dir, --output_dir and the setting's --prompt_style are the same flags (the help lists both names).
USAGE = "%(prog)s --model MODEL --dataset DIR --out OUT [--config RECIPE] [FLAGS]"
DESCRIPTION = (
    "Fine-tune a chat model on MIS-Bench scores with MIS-RAFT (paper §5), then predict the test split. Every flag "
    "is also a key of a --config YAML recipe: a file's path, or a shipped recipe's name (paper_d1, cot_raft, ...: "
    "raft_trainer/recipes/), found from any folder; a flag overrides the recipe. The harness's names work too: "
    "--prompt for --prompt_style, --score-from expected|regression for --head lm|regression."
)


# `--help` lists these groups (titles; the fields of each) in this order; the fields in SHORT_HELP are the ones shown
# by default, the others only under `--help-all` (with TRL's and transformers' remaining fields, last).
_OWN_FIELDS = [name for name in RAFTConfig.__annotations__ if name not in SFTConfig.__dataclass_fields__]
# The setting's fields (inherited from `mis_bench_dataset.setting`) listed with the inputs, before completion_style.
_INPUTS_AT = _OWN_FIELDS.index("completion_style")
_RAFT_FIELDS = (*_OWN_FIELDS[:_INPUTS_AT], *SETTING_FIELDS, *_OWN_FIELDS[_INPUTS_AT:])
# The most used TrainingArguments and the one line each has in the short help (None: the field's own help).
COMMON_TRAINING_HELP = {
    "max_length": None,
    "num_train_epochs": None,
    "max_steps": "Total optimizer steps; overrides num_train_epochs when positive.",
    "per_device_train_batch_size": None,
    "per_device_eval_batch_size": "Rows per device and evaluation step.",
    "gradient_accumulation_steps": "Micro-batches per optimizer step (global batch = per-device x processes x this).",
    "learning_rate": None,
    "lr_scheduler_type": "Learning-rate schedule (linear, cosine, constant, ...).",
    "warmup_steps": "Linear warmup steps (a float in [0, 1): a share of all steps).",
    "weight_decay": "AdamW weight decay.",
    "optim": "Optimizer (transformers' OptimizerNames; paged_* and *_8bit need bitsandbytes and CUDA).",
    "bf16": "bfloat16 mixed precision (paper D.1); if not set: on with a bf16 GPU, else float32.",
    "activation_checkpointing": None,
    "eval_strategy": "When to evaluate on the validation split: no, steps or epoch.",
    "eval_steps": "Steps between evaluations (eval_strategy steps).",
    "save_strategy": "When to save a checkpoint: no, steps, epoch or best.",
    "save_steps": "Steps between checkpoints (save_strategy steps).",
    "logging_steps": "Steps between two logged losses.",
    "seed": "Random seed (data order, LoRA initialisation, dropout).",
    "report_to": "Where to report logs: none, all, tensorboard, wandb, ...",
    "resume_from_checkpoint": "Checkpoint folder to resume training from.",
    "use_cpu": "Train on the CPU even when a GPU is present (set without CUDA).",
}
COMMON_TRAINING_FIELDS = tuple(COMMON_TRAINING_HELP)
_SHORT_TEXTS = {
    **COMMON_TRAINING_HELP,
    "output_dir": "Where the adapter, the trainer state and the test predictions are written.",
    "load_in_4bit": "Load the base model in 4 bits (QLoRA; bitsandbytes and CUDA).",
}
_COMMON_MODEL_FIELDS = (
    "model_name_or_path",
    "dtype",
    "use_peft",
    "lora_r",
    "lora_alpha",
    "lora_dropout",
    "lora_target_modules",
    "load_in_4bit",
    "bnb_4bit_quant_type",
)
# Options of `--method grpo` and of CoT-RAFT (recipes/cot_raft.yaml sets them): under `--help-all`; `--method` shown.
_METHOD_DETAIL_FIELDS = (
    "completion_style",
    "generate_rationales",
    "rationales_dir",
    "num_generations",
    "max_completion_length",
    "grpo_temperature",
    "grpo_beta",
    "grpo_reward",
    "rationale_max_new_tokens",
    "rationale_temperature",
)
HELP_GROUPS = (
    ("data and outputs", ("dataset_dir", "output_dir", *RAFTScriptArguments.__annotations__)),
    ("MIS-RAFT objective and inputs (RAFTConfig)", _RAFT_FIELDS),
    ("model and LoRA adapter (RAFTModelConfig, TRL's ModelConfig)", tuple(field.name for field in fields(ModelConfig))),
    ("most used training arguments (TRL's SFTConfig, transformers' TrainingArguments)", COMMON_TRAINING_FIELDS),
)
_RARE_FIELDS = ("video_frames", "video_max_pixels", "video_min_pixels", *_METHOD_DETAIL_FIELDS)  # --help-all
SHORT_HELP = frozenset(
    ("dataset_dir", "output_dir", *RAFTScriptArguments.__annotations__, *_RAFT_FIELDS)
    + _COMMON_MODEL_FIELDS
    + COMMON_TRAINING_FIELDS
) - frozenset(_RARE_FIELDS)
TRAINING_ARGUMENTS_GROUP = "TRL's SFTConfig and transformers' TrainingArguments (all the others)"


# The names the other mis-bench commands give to the trainer's fields (`--model`, `--dataset`, `--out`, `--prompt`):
# accepted by `train` too, and shown beside the field's own spelling in `--help`.
TOOLKIT_ALIASES = frozenset({"--model", "--dataset", "--out", "--prompt"})


class ShortHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """The default `--help`: each flag under its field's own spelling only (the dashed and short aliases work too),
    a short metavar (N, X, VALUE, or the choices when there are few), and no "(default: None)"."""

    def __init__(self, prog: str, **kwargs) -> None:
        super().__init__(prog, max_help_position=24, **kwargs)

    def _format_action_invocation(self, action) -> str:
        if not action.option_strings:
            return super()._format_action_invocation(action)
        if action.dest == "help":
            flags = ", ".join(action.option_strings[:2])
        else:  # the field's own spelling, and the other mis-bench commands' name for it where it has one
            flags = ", ".join([action.option_strings[0], *(s for s in action.option_strings if s in TOOLKIT_ALIASES)])
        metavar = _short_metavar(action)
        if action.nargs == 0:
            return flags
        if action.nargs == "?":
            return f"{flags} [{metavar}]"
        if action.nargs in ("+", "*"):
            return f"{flags} {metavar} [{metavar} ...]"
        return f"{flags} {metavar}"

    def _get_help_string(self, action) -> str:
        if action.default is None or action.default is argparse.SUPPRESS:
            return action.help
        return super()._get_help_string(action)


def _short_metavar(action) -> str:
    """{a,b} for a few choices, NAME for many, N / X for numbers, BOOL for a switch, VALUE otherwise."""
    if action.choices is not None:
        return "{" + ",".join(str(c) for c in action.choices) + "}" if len(action.choices) <= 6 else "NAME"
    if action.const is True:
        return "BOOL"
    return {int: "N", float: "X"}.get(action.type, "VALUE")


class _HelpAll(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help(full=True)
        parser.exit()


class RAFTParser(TrlParser):
    """`TrlParser` that, before it builds the dataclasses, refuses settings this machine cannot run, all in one line;
    its `--help` lists the data, MIS-RAFT, model and most used training options (`HELP_GROUPS`, `SHORT_HELP`), and
    `--help-all` every flag, TRL's and transformers' last. `given` is what the last parse was given, flags and
    `--config` recipe keys (the toolkit's one mechanism, `mis_bench_dataset.toolkit.given`)."""

    def __init__(self, *args, check_machine: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.check_machine = check_machine
        self.recipe_keys: frozenset[str] = frozenset()
        self.given: frozenset[str] = frozenset()
        self.add_argument(
            "--help-all", action=_HelpAll, dest=argparse.SUPPRESS, help="show every flag (TRL's and transformers' too)"
        )
        self._group_for_help()
        recording(self)

    def _group_for_help(self) -> None:
        """Move each field's flags from the one `options` group into the titled groups, in `HELP_GROUPS` order."""
        general = self._optionals
        by_dest: dict[str, list] = {}
        for action in general._group_actions:
            if action.dest not in ("help", argparse.SUPPRESS):
                by_dest.setdefault(action.dest, []).append(action)
        groups = [(title, names) for title, names in HELP_GROUPS]
        groups.append((TRAINING_ARGUMENTS_GROUP, tuple(by_dest)))
        for title, names in groups:
            group = self.add_argument_group(title)
            for name in dict.fromkeys(names):
                for action in by_dest.pop(name, []):
                    general._group_actions.remove(action)
                    group._group_actions.append(action)

    def format_help(self, full: bool = False) -> str:  # type: ignore[override]
        """The short help (`SHORT_HELP`, one spelling per flag, `--no_X` twins left out), or every flag (`full`)."""
        if full:
            return super().format_help()
        hidden = [a for a in self._actions if a.option_strings and not _in_short_help(a)]
        shortened = [a for a in self._actions if _SHORT_TEXTS.get(a.dest) and a not in hidden]
        saved = [(action, action.help) for action in hidden + shortened]
        formatter_class = self.formatter_class
        try:
            for action in hidden:
                action.help = argparse.SUPPRESS
            for action in shortened:
                action.help = _SHORT_TEXTS[action.dest]
            self.formatter_class = ShortHelpFormatter
            text = super().format_help()
        finally:
            self.formatter_class = formatter_class
            for action, help_text in saved:
                action.help = help_text
        n_more = len({a.dest for a in hidden if not a.option_strings[0].startswith("--no_")})
        return text + f"\n{n_more} more flags (TRL's and transformers' training arguments): {self.prog} --help-all\n"

    def print_help(self, file=None, full: bool = False) -> None:  # type: ignore[override]
        self._print_message(self.format_help(full=full), file or sys.stdout)

    def error(self, message: str):  # type: ignore[override]
        """argparse's usage block and line become the toolkit's one line (exit 2)."""
        raise UsageError(" ".join(message.split()), where="flags", hint=f"see `{self.prog} --help`")

    def set_defaults_with_config(self, **kwargs) -> list[str]:
        """TrlParser's, with the recipe's keys remembered: a value a recipe sets is given, as a flag's is."""
        self.recipe_keys = frozenset(key for key in kwargs if key != "env")
        return super().set_defaults_with_config(**kwargs)

    def parse_known_args(self, args=None, namespace=None):
        namespace, remaining = super().parse_known_args(args, namespace)
        mark_given(namespace, self.recipe_keys)
        self.given = given_flags(namespace)
        delattr(namespace, GIVEN)  # HfArgumentParser returns a namespace with attributes left over as a 4th output
        if self.check_machine:
            refuse_cuda_only_settings(namespace)
        return namespace, remaining


def _in_short_help(action) -> bool:
    """Whether the default `--help` shows this flag: a SHORT_HELP field, not the `--no_X` twin of a boolean."""
    if action.dest in ("help", argparse.SUPPRESS):
        return True
    return action.dest in SHORT_HELP and not action.option_strings[0].startswith("--no_")


def make_parser(prog: str | None = None, check_machine: bool = True) -> RAFTParser:
    """The parser of `train.py`; `parse_args_and_config(argv)` returns (script args, RAFTConfig, RAFTModelConfig).

    No abbreviated flags: among hundreds of TrainingArguments flags a shortened or retired one (`--no-eval`) would
    silently match another (`--no-eval-do-concat-batches`).
    """
    import torch

    parser = RAFTParser(
        DATACLASSES,
        prog=prog,
        usage=USAGE,
        description=DESCRIPTION,
        allow_abbrev=False,
        check_machine=check_machine,
    )
    _alias(parser, "output_dir", "--out")  # the spelling of every other mis-bench command
    _alias(parser, "prompt_style", "--prompt")  # `mis-bench run`'s name of the shared setting
    if check_machine and not torch.cuda.is_available():
        # The CPU fallback: TrainingArguments must know, or `accelerate launch` of several processes would not
        # form a (gloo) process group; a recipe or flag may still say otherwise.
        parser.set_defaults(use_cpu=True)
    return parser


def _alias(parser: argparse.ArgumentParser, dest: str, alias: str) -> None:
    """`alias` also sets `dest` (a TrainingArguments field, whose dataclass the toolkit does not redefine)."""
    action = next(a for a in parser._actions if a.dest == dest and a.option_strings)
    action.option_strings.append(alias)
    parser._option_string_actions[alias] = action


def cuda_only_settings(values) -> list[tuple[str, str]]:
    """(setting, flag that turns it off) for each requested setting this run cannot have: bitsandbytes
    quantization and paged optimizers need CUDA, `bf16` a GPU with bfloat16 (the CPU fallback is float32)."""
    import torch

    found = []
    if values.use_cpu or not torch.cuda.is_available():
        for name in ("load_in_4bit", "load_in_8bit"):
            if getattr(values, name):
                found.append((f"{name} (bitsandbytes, CUDA only)", f"--{name} false"))
        optim = getattr(values.optim, "value", values.optim)
        if optim.startswith("paged_"):
            found.append((f"optim {optim} (bitsandbytes, CUDA only)", "--optim adamw_torch"))
    if values.bf16 and not gpu_bf16_available(values.use_cpu):
        found.append(("bf16 (a GPU with bfloat16)", "--bf16 false"))
    return found


def refuse_cuda_only_settings(values) -> None:
    found = cuda_only_settings(values)
    if found:
        raise UsageError(
            f"settings this machine cannot run: {', '.join(setting for setting, _ in found)}",
            where=RECIPE_FLAGS,
            hint=f"override them with {' '.join(flag for _, flag in found)} (the CPU fallback: float32, adamw_torch)",
        )
