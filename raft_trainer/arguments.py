"""The command line of `raft_trainer/train.py`: TRL's `TrlParser` over three dataclasses, as TRL's own scripts do.

`RAFTScriptArguments` (what the script reads and writes), `RAFTConfig` (the trainer's configuration) and
`RAFTModelConfig` (TRL's `ModelConfig`: model, LoRA, quantization). Every field is a flag (`--field_name` or
`--field-name`) and a key of a `--config` YAML recipe; a flag overrides the recipe. `raft_trainer/recipes/paper_d1.yaml`
is the paper's Appendix D.1 setup.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from trl import ModelConfig, TrlParser

from mis_bench_dataset.rules.errors import UsageError
from raft_trainer.config import RAFTConfig, gpu_bf16_available
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
        metadata={
            "help": "Processes to train in (DDP); above 1 the settings and data are checked first, then the "
            "processes are started with accelerate launch."
        },
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
USAGE = "%(prog)s --model_name_or_path MODEL --dataset_dir DIR [--output_dir OUT] [--config RECIPE.yaml] [FLAGS]"
DESCRIPTION = (
    "Fine-tune a chat model on MIS-Bench scores with MIS-RAFT (paper §5), then predict the test split. Every flag "
    "is also a key of a --config YAML recipe (raft_trainer/recipes/); a flag overrides the recipe."
)


# `--help` lists these first, in this order (titles; the fields of each), then TRL's and transformers' fields.
HELP_GROUPS = (
    ("data and outputs", ("dataset_dir", "output_dir", *RAFTScriptArguments.__annotations__)),
    ("MIS-RAFT objective and inputs (RAFTConfig)", tuple(RAFTConfig.__annotations__)),
    ("model and LoRA adapter (RAFTModelConfig, TRL's ModelConfig)", tuple(field.name for field in fields(ModelConfig))),
)
TRAINING_ARGUMENTS_GROUP = "TRL's SFTConfig and transformers' TrainingArguments"


class RAFTParser(TrlParser):
    """`TrlParser` that, before it builds the dataclasses, refuses settings this machine cannot run, all in one line;
    its `--help` lists the MIS-RAFT, data and model options before TRL's and transformers' (`HELP_GROUPS`)."""

    def __init__(self, *args, check_machine: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.check_machine = check_machine
        self._group_for_help()

    def _group_for_help(self) -> None:
        """Move each field's flags from the one `options` group into the titled groups, in `HELP_GROUPS` order."""
        general = self._optionals
        by_dest: dict[str, list] = {}
        for action in general._group_actions:
            if action.dest != "help":
                by_dest.setdefault(action.dest, []).append(action)
        groups = [(title, names) for title, names in HELP_GROUPS]
        groups.append((TRAINING_ARGUMENTS_GROUP, tuple(by_dest)))
        for title, names in groups:
            group = self.add_argument_group(title)
            for name in dict.fromkeys(names):
                for action in by_dest.pop(name, []):
                    general._group_actions.remove(action)
                    group._group_actions.append(action)

    def error(self, message: str):  # type: ignore[override]
        """argparse's usage block and line become the toolkit's one line (exit 2)."""
        raise UsageError(" ".join(message.split()), where="flags", hint=f"see `{self.prog} --help`")

    def parse_known_args(self, args=None, namespace=None):
        namespace, remaining = super().parse_known_args(args, namespace)
        if self.check_machine:
            refuse_cuda_only_settings(namespace)
        return namespace, remaining


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
    if check_machine and not torch.cuda.is_available():
        # The CPU fallback: TrainingArguments must know, or `accelerate launch` of several processes would not
        # form a (gloo) process group; a recipe or flag may still say otherwise.
        parser.set_defaults(use_cpu=True)
    return parser


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
            where="flags or --config recipe",
            hint=f"override them with {' '.join(flag for _, flag in found)} (the CPU fallback: float32, adamw_torch)",
        )
