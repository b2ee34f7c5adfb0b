"""`RAFTConfig`: TRL's `SFTConfig` plus the MIS-RAFT objective's settings, with the paper's defaults."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from transformers import TrainingArguments
from transformers.training_args import OptimizerNames
from trl import SFTConfig

from mis_bench_dataset.dimensions import PROMPT_STYLE_ALIASES, SCORE_REGRESSION
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.setting import Setting, setting_fields
from mis_bench_dataset.toolkit.options import argparse_metadata
from raft_trainer.cot import COMPLETION_STYLES, COT_COMPLETION, SCORE_COMPLETION, check_completion_style
from raft_trainer.data import TRAINER_PROMPT_STYLES

logger = logging.getLogger(__name__)

RAFT_OBJECTIVES = ("raft", "ce", "raft+ce", "ntl", "raft+ntl")
# Objectives with a number-token-loss term (NTL-WAS, Zausinger et al. 2025; `raft_trainer.loss.number_token_loss_sum`).
NTL_OBJECTIVES = ("ntl", "raft+ntl")
# What the model scores with: its LM head's digit distributions, or a one-output regression head
# (AutoModelForSequenceClassification(num_labels=1), trained with the squared error on the gold score).
LM_HEAD = "lm"
REGRESSION_HEAD = SCORE_REGRESSION  # the head, its method name in setting.json and its readout share one name
HEADS = (LM_HEAD, REGRESSION_HEAD)
# How the RAFT term is scaled: eq. 12's batch mean, or the authors' code's, which divides that mean by the
# micro-batch's row count once more (custom_loss_raft.py: an MSE 'mean', then `/ num_seq`).
RAFT_LOSS_SCALES = ("batch-mean", "authors")
PADDING_SIDES = ("left", "right")
# transformers 5.x renamed `gradient_checkpointing` to `activation_checkpointing` (the old name warns); TRL's configs
# still default the old name to True, so RAFTConfig gives the same default under the name this TrainingArguments has.
NEW_CHECKPOINTING_NAME = "activation_checkpointing" in TrainingArguments.__dataclass_fields__
# SFTConfig.loss_type values that leave RAFTTrainer's own objective alone ("chunked_nll" is TRL's alias of "nll").
_TRL_TOKEN_LOSSES = ("nll", "chunked_nll")
# `Setting`'s fields (declared once, in `mis_bench_dataset.setting`) with their metadata in TrlParser's words.
# The trainer renders two of the styles, `direct` in its own chat wording: its help and choices say so.
TrainerSettingFields = setting_fields(
    "TrainerSettingFields",
    metadata=argparse_metadata,
    overrides={
        "prompt_style": {
            "help": "the prompt trained on: direct (ours: rubric, then transcript, the score alone; its earlier name "
            "toolkit is an alias) or paper (the authors' MIS-RAFT prompt); CoT-RAFT is --completion_style",
            "choices": [*TRAINER_PROMPT_STYLES, *PROMPT_STYLE_ALIASES],
        }
    },
)


@dataclass
class RAFTConfig(SFTConfig, TrainerSettingFields):
    r"""
    Configuration class for the [`RAFTTrainer`] (MIS-RAFT, paper §5).

    This class includes only the parameters that are specific to MIS-RAFT training; the others are those of TRL's
    [`~trl.SFTConfig`] and [`~transformers.TrainingArguments`]. Default values follow the paper's Appendix D.1 where it
    states one; `raft_trainer/recipes/paper_d1.yaml` holds the whole D.1 setup (model, 4-bit, bf16, optimizer).

    Using [`~trl.TrlParser`] (`raft_trainer/train.py`) every field is a command-line flag and a key of a `--config`
    YAML recipe.

    The parameters below control the MIS-RAFT objective (`raft_objective`, `ce_weight`, `renormalize_digits`), the
    inputs (`completion_style`, `padding_side`; the setting's fields are listed after these), and then come those
    whose defaults differ from [`~trl.SFTConfig`] (paper Appendix D.1, from `max_length` on).

    Parameters:
        raft_objective (`str`, *optional*, defaults to `"raft"`):
            Training objective. Possible values are:

            - `"raft"`: the squared error between the expected decimal score ŝ = E[int] + 0.1·E[frac] and the gold
              score, averaged over the batch (paper eq. 9-12), the paper's MIS-RAFT.
            - `"ce"`: token-level cross-entropy on the completion, the paper's "standard fine-tuning" baseline (§5.3).
            - `"raft+ce"`: `"raft"` + `ce_weight` × `"ce"`.
            - `"ntl"`: the Number Token Loss, NTL-WAS (Zausinger et al., ICML 2025): at the score's two digit
              positions, Σ_d p(d)·|d − gold digit| with p the softmax over the ten digit logits, averaged over the
              positions.
            - `"raft+ntl"`: `"raft"` + `ntl_weight` × `"ntl"`.

            Our own selector: TRL's `loss_type` (`"nll"`, token losses of [`~trl.SFTTrainer`]) keeps its meaning and
            default; RAFTConfig refuses any other value of it, since RAFTTrainer computes its own objective.
        ce_weight (`float`, *optional*, defaults to `1.0`):
            Weight of the cross-entropy term when `raft_objective="raft+ce"`; must be >= 0.
        ntl_weight (`float`, *optional*, defaults to `1.0`):
            Weight of the number-token-loss term when `raft_objective="raft+ntl"`; must be >= 0.
        head (`str`, *optional*, defaults to `"lm"`):
            What scores: `"lm"`, the LM head's digit distributions (every `raft_objective`), or `"regression"`,
            `AutoModelForSequenceClassification(num_labels=1)` on the same prompt (the head reads the position
            that predicts the score's integer digit), LoRA on the same modules with the head trained fully
            (PEFT's `modules_to_save`), the squared error on the gold score (`raft_objective="raft"`, eq. 12's
            batch mean; the token objectives are refused). Text and feature inputs only.
        renormalize_digits (`bool`, *optional*, defaults to `True`):
            Whether the digit probabilities p_int and p_frac of eq. 9-10 are a softmax over the ten digit logits.
            `False` uses the paper's literal form, the full-vocabulary softmax restricted to the digits, whose mass can
            be below one and shrinks ŝ toward 0 (what the authors' code computes; `recipes/paper_table4_raft.yaml`).
        raft_loss_scale (`str`, *optional*, defaults to `"batch-mean"`):
            Scale of the RAFT term. `"batch-mean"`: eq. 12, the mean over the scored rows of the whole optimizer step.
            `"authors"`: that mean divided once more by each micro-batch's row count, as the authors' code does (a
            bug: their loss is divided by the batch size twice). Under AdamW a constant factor 1/B changes only the
            weight of `adam_epsilon` (x B) and the gradient-clipping threshold (`max_grad_norm` x B, in unscaled
            terms); reported losses are 1/B of eq. 12's.
        early_stopping_patience (`int`, *optional*):
            Stop training after this many evaluations in a row without an improvement of `metric_for_best_model`
            (transformers' [`~transformers.EarlyStoppingCallback`]; the authors': 10, evaluating every 100 steps for
            MIS-RAFT and 500 for standard fine-tuning, with `load_best_model_at_end` on `eval_loss`). Needs
            `eval_strategy` other than `"no"` (and a validation split) and a `metric_for_best_model` (set, or
            `"loss"` through `load_best_model_at_end`). Default: no early stopping.
        early_stopping_threshold (`float`, *optional*, defaults to `0.0`):
            How much the metric must improve to count as an improvement (the authors': 0.0).

        completion_style (`str`, *optional*, defaults to `"score"`):
            What the model writes. `"score"`: "The score prediction is: x.y". `"cot"`: CoT-RAFT (TRACT, ACL 2025;
            `raft_trainer.cot`, `recipes/cot_raft.yaml`): the prompt asks for an analysis first, the completion is
            the row's `rationale` (the model's own, `raft_trainer.rationales`) then "Final score: x.y"; RAFT reads
            the final score's digits, the CE term of `"raft+ce"` the rest. Text prompts in the toolkit style only.
        padding_side (`str`, *optional*, defaults to `"left"`):
            Padding side of the RAFT collator. `"left"` aligns every row's completion, so the model computes logits
            at the fewest positions; `"right"` is also supported.
        max_length (`int` or `None`, *optional*, defaults to `512`):
            Maximum tokens per row (D.1: 512). A longer row has its transcript shortened, never the rubric, the
            media context or the completion; a prompt that cannot fit even without its transcript raises, naming the
            row.
        num_train_epochs (`float`, *optional*, defaults to `2.0`):
            Training epochs (D.1: 2).
        per_device_train_batch_size (`int`, *optional*, defaults to `2`):
            Rows per device and step (D.1: 2).
        learning_rate (`float`, *optional*, defaults to `2e-5`):
            Initial AdamW learning rate (D.1: 2e-5; the same as SFTConfig's).
        optim (`str`, *optional*, defaults to `"adamw_torch"`):
            Optimizer. D.1 used `"paged_adamw_32bit"` (the same 32-bit AdamW update, with its states paged to CPU
            memory under GPU memory pressure), which needs bitsandbytes and CUDA: the recipe sets it, the default runs
            on every device.
        bf16 (`bool` or `None`, *optional*, defaults to `None`):
            bfloat16 mixed precision (D.1: bfloat16). `None`: on when this machine has a GPU with bfloat16, else
            float32 (logged).
        activation_checkpointing (`bool`, *optional*, defaults to `True`):
            TRL's default (on), under transformers 5.x's name; `gradient_checkpointing`, its deprecated alias, is
            left unset (so no FutureWarning), and keeps TRL's default where the installed transformers has only it.

    The setting's fields (modality, input source, prompt style, raw-video sampling) are `Setting`'s
    (`mis_bench_dataset.setting`), declared once and shared with the harness's `RunConfig`; `.setting` is their
    frozen `Setting`:

    - `modality` (`str`, *optional*, defaults to `"text"`):
      Input setting, one of `mis_bench_dataset.dimensions.MODALITY_SETTINGS` (`"text"`, `"audio+text"`,
      `"video+text"`, `"audio+video+text"`; paper §4). `"text"` is the rubric and the transcript; the audio/video
      settings need each row's `media_context` (feature-derived descriptors, `raft_trainer.media`) or its raw
      media paths.
    - `input_source` (`str`, *optional*, defaults to `"auto"`):
      Where the audio/video settings take the media from. Possible values are:

      - `"features"`: rows carry a `media_context` (descriptors from the dataset's `features` config), tokenized
        like text.
      - `"raw"`: rows carry `video_path` / `audio_path`; the processor given as `processing_class` loads the
        media, batch by batch in the collator.
      - `"auto"`: `"raw"` when every training row carries the modality's media paths, else `"features"`
        (`mis_bench_dataset.setting_inputs.resolve_input_source`).
    - `prompt_style` (`str`, *optional*, defaults to `"direct"`):
      Prompt of every row, in the one vocabulary of prompt styles (`mis_bench_dataset.setting`). Possible
      values are:

      - `"direct"`: our system instruction and a user turn with the criterion, the five rubric levels, then
        the transcript (the toolkit's own prompt asking for the score alone, in the trainer's chat wording).
        `"toolkit"`, its earlier name, is an alias.
      - `"paper"`: the authors' MIS-RAFT protocol behind Table 4 (`mis_bench_dataset.protocol`): a system
        instruction, then the sections "Task Description", "Response to evaluate" (the transcript), "Score
        Rubrics" and the line "###Score:".

      The completion is "The score prediction is: " + the gold score in both.
    - `video_sampling` (`str`, *optional*, defaults to `"fixed"`):
      Raw video: the frame rule (`mis_bench_dataset.protocol.VideoSampling`). Possible values are:

      - `"fixed"`: `video_frames` frames (32) at `linspace(0, n_frames - 1, video_frames)`, truncated (the
        authors' `get_video_frames`, whose frames their published scripts never feed the model), sized by the
        processor within the clip's budget.
      - `"paper"`: what the authors' runs fed the model (their copy of qwen-vl-utils' `fetch_video`): 2 frames
        a second, at most `video_frames` (768), at rounded linspace indices, each resized within a per-frame
        share of the budget, then every second row and column.
    - `video_frames` (`int`, *optional*):
      Raw video: frames per video under `"fixed"` (default 32), the most frames under `"paper"` (default 768).
    - `video_max_pixels` (`int`, *optional*, defaults to `20480 * 28 * 28`):
      Raw video: pixel budget of the whole clip, all sampled frames together (paper D.1).
    - `video_min_pixels` (`int`, *optional*, defaults to `16 * 28 * 28`):
      Raw video: pixels each frame keeps at least (paper D.1).

    > [!NOTE]
    > `packing` and `padding_free` are refused: MIS-RAFT reads each row's score positions.
    """

    # Parameters that control the MIS-RAFT objective
    raft_objective: str = field(
        default="raft",
        metadata={
            "help": "raft (eq. 12), ce (standard fine-tuning), raft+ce, ntl (number token loss) or raft+ntl.",
            "choices": list(RAFT_OBJECTIVES),
        },
    )
    ce_weight: float = field(
        default=1.0,
        metadata={"help": "Weight of the cross-entropy term when raft_objective is 'raft+ce' (>= 0)."},
    )
    ntl_weight: float = field(
        default=1.0,
        metadata={"help": "Weight of ntl in raft+ntl (>= 0)."},
    )
    head: str = field(
        default=LM_HEAD,
        metadata={
            "help": "lm or regression (a one-output head).",
            "choices": list(HEADS),
        },
    )
    renormalize_digits: bool = field(
        default=True,
        metadata={
            "help": "Softmax over the ten digit logits for p_int and p_frac (eq. 9-10); --no_renormalize_digits uses "
            "the paper's literal full-vocabulary softmax restricted to the digits."
        },
    )

    raft_loss_scale: str = field(
        default="batch-mean",
        metadata={
            "help": "Scale of the RAFT term: 'batch-mean' (eq. 12) or 'authors' (their code's, divided by the "
            "micro-batch size once more).",
            "choices": list(RAFT_LOSS_SCALES),
        },
    )
    early_stopping_patience: int | None = field(
        default=None,
        metadata={
            "help": "Stop after this many evaluations without improving metric_for_best_model (the authors': 10; "
            "needs eval_strategy and a metric). Default: no early stopping."
        },
    )
    early_stopping_threshold: float = field(
        default=0.0,
        metadata={"help": "Least improvement of metric_for_best_model that counts (the authors': 0.0)."},
    )

    # Parameters that control the inputs: `Setting`'s (modality to video_min_pixels, `TrainerSettingFields`), then
    completion_style: str = field(
        default=SCORE_COMPLETION,
        metadata={
            "help": "What the model writes: 'score' (the score line) or 'cot' (CoT-RAFT: an analysis, the model's "
            "own rationale, then 'Final score: x.y'; RAFT on its digits).",
            "choices": list(COMPLETION_STYLES),
        },
    )
    padding_side: str = field(
        default="left",
        metadata={"help": "Padding side of the RAFT collator.", "choices": list(PADDING_SIDES)},
    )

    # Parameters whose defaults differ from SFTConfig (paper Appendix D.1)
    max_length: int | None = field(
        default=512,
        metadata={"help": "Maximum tokens per row; the transcript is shortened to fit (paper D.1: 512)."},
    )
    num_train_epochs: float = field(default=2.0, metadata={"help": "Training epochs (paper D.1: 2)."})
    per_device_train_batch_size: int = field(default=2, metadata={"help": "Rows per device and step (paper D.1: 2)."})
    learning_rate: float = field(default=2e-5, metadata={"help": "Initial AdamW learning rate (paper D.1: 2e-5)."})
    optim: OptimizerNames | str = field(
        default="adamw_torch",
        metadata={
            "help": "Optimizer (see transformers' OptimizerNames). The paper's paged_adamw_32bit needs bitsandbytes "
            "and CUDA (set by recipes/paper_d1.yaml)."
        },
    )
    bf16: bool | None = field(
        default=None,
        metadata={
            "help": "bfloat16 mixed precision (paper D.1). If not set: on when this machine has a GPU with bfloat16, "
            "else float32."
        },
    )
    if NEW_CHECKPOINTING_NAME:  # TRL's default (on), under the new name: no FutureWarning from our own default
        activation_checkpointing: bool | None = field(
            default=True,
            metadata={"help": "Recompute activations in the backward pass to save memory (TRL's default: on)."},
        )
        gradient_checkpointing: bool | None = field(
            default=None, metadata={"help": "Deprecated alias of activation_checkpointing (transformers 5.x)."}
        )

    def __post_init__(self) -> None:
        if self.raft_objective not in RAFT_OBJECTIVES:
            raise ValueError(
                f"RAFTConfig.raft_objective must be one of {', '.join(RAFT_OBJECTIVES)}, got {self.raft_objective!r}"
            )
        if self.loss_type not in _TRL_TOKEN_LOSSES:
            hint = f"raft_objective={self.loss_type!r}" if self.loss_type in RAFT_OBJECTIVES else "raft_objective"
            raise ValueError(
                f"RAFTConfig.loss_type={self.loss_type!r}: RAFTTrainer computes its own objective and ignores TRL's "
                f"token loss ('nll'); choose the MIS-RAFT objective with {hint}"
            )
        if self.ce_weight < 0:
            raise ValueError(f"RAFTConfig.ce_weight must be >= 0, got {self.ce_weight}")
        self._check_head_and_objective()
        if self.raft_loss_scale not in RAFT_LOSS_SCALES:
            raise ValueError(
                f"RAFTConfig.raft_loss_scale must be one of {', '.join(RAFT_LOSS_SCALES)}, got {self.raft_loss_scale!r}"
            )
        self._check_setting()
        self._check_completion_style()
        if self.padding_side not in PADDING_SIDES:
            raise ValueError(f"RAFTConfig.padding_side must be 'left' or 'right', got {self.padding_side!r}")
        if self.packing or self.padding_free:
            raise ValueError("MIS-RAFT reads per-row score positions: packing and padding_free are not supported")
        if self.bf16 is None and not gpu_bf16_available(self.use_cpu):
            logger.info("bf16 is not available on this machine: training in float32")
            self.bf16 = False
        super().__post_init__()
        self._check_early_stopping()

    def _check_setting(self) -> Setting:
        """The `Setting` of these fields, validated (an alias of a prompt style stored as the style), then what
        the trainer adds: raw media need an audio/video setting, and it renders the direct and paper prompts."""
        self.store_style_alias()
        try:
            setting = self.setting
        except ValueError as err:
            raise ValueError(f"RAFTConfig: {err}") from None
        if setting.input_source == "raw" and setting.modality == "text":
            raise ValueError("RAFTConfig.input_source='raw' needs an audio/video modality, got 'text'")
        if setting.prompt_style not in TRAINER_PROMPT_STYLES:
            raise ValueError(
                f"RAFTConfig.prompt_style must be one of {', '.join(TRAINER_PROMPT_STYLES)} (or its alias toolkit), "
                f"got {self.prompt_style!r}"
            )
        return setting

    def _check_completion_style(self) -> None:
        """CoT-RAFT rows are text rows in the toolkit prompt."""
        try:
            check_completion_style(self.completion_style, self.prompt_style)
        except ValueError as err:
            raise ValueError(f"RAFTConfig.{err}") from None
        if self.completion_style == COT_COMPLETION and self.modality != "text":
            raise ValueError(
                "RAFTConfig.completion_style='cot' trains on text rationales: modality 'text' only, "
                f"got {self.modality!r}"
            )

    def _check_head_and_objective(self) -> None:
        """Combinations of head and objective that mean nothing, refused in one line before anything loads."""
        if self.ntl_weight < 0:
            raise ValueError(f"RAFTConfig.ntl_weight must be >= 0, got {self.ntl_weight}")
        if self.head not in HEADS:
            raise ValueError(f"RAFTConfig.head must be one of {', '.join(HEADS)}, got {self.head!r}")
        if self.raft_objective == "ntl" and not self.renormalize_digits:
            raise ValueError(
                "RAFTConfig.raft_objective='ntl' takes the softmax over the ten digits (NTL-WAS); "
                "--no_renormalize_digits changes only the RAFT term: drop it, or use raft+ntl"
            )
        if self.head != REGRESSION_HEAD:
            return
        if self.raft_objective != "raft":
            raise ValueError(
                f"RAFTConfig.head='regression' trains the squared error of its one output; raft_objective="
                f"{self.raft_objective!r} is a token objective of the LM head: use raft_objective='raft' (the default)"
            )
        if not self.renormalize_digits:
            raise ValueError("RAFTConfig.head='regression' reads no digits: drop --no_renormalize_digits")
        if self.input_source == "raw":
            raise ValueError(
                "RAFTConfig.head='regression' takes text prompts (the text setting or input_source='features'), "
                "not raw media"
            )

    @property
    def method(self) -> str:
        """The training method's name in results and reports: the objective, or 'regression' for the head."""
        return REGRESSION_HEAD if self.head == REGRESSION_HEAD else self.raft_objective

    def _check_early_stopping(self) -> None:
        """Early stopping needs evaluations and a metric to watch; refused now rather than at the first step."""
        if self.early_stopping_threshold < 0:
            raise ValueError(f"RAFTConfig.early_stopping_threshold must be >= 0, got {self.early_stopping_threshold}")
        patience = self.early_stopping_patience
        if patience is None:
            return
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"RAFTConfig.early_stopping_patience must be a positive integer, got {patience!r}")
        if self.eval_strategy == "no":
            raise ValueError(
                "RAFTConfig.early_stopping_patience needs evaluations: set eval_strategy to 'steps' (with eval_steps) "
                "or 'epoch'"
            )
        if self.metric_for_best_model is None:
            raise ValueError(
                "RAFTConfig.early_stopping_patience needs the metric to watch: set metric_for_best_model (e.g. "
                "eval_loss) or load_best_model_at_end"
            )

    @property
    def raw_video_sampling(self) -> VideoSampling:
        """The raw-video sampling these fields describe (`Setting.video`)."""
        return self._check_setting().video

    @property
    def loss_weights(self) -> tuple[float, float]:
        """(weight of the RAFT squared error, weight of the completion cross-entropy)."""
        return {
            "raft": (1.0, 0.0),
            "ce": (0.0, 1.0),
            "raft+ce": (1.0, self.ce_weight),
            "ntl": (0.0, 0.0),
            "raft+ntl": (1.0, 0.0),
        }[self.raft_objective]

    @property
    def number_token_weight(self) -> float:
        """Weight of the number-token-loss term (0 unless the objective has one)."""
        return {"ntl": 1.0, "raft+ntl": self.ntl_weight}.get(self.raft_objective, 0.0)


def gpu_bf16_available(use_cpu: bool = False) -> bool:
    """Whether training here would run on a GPU with bfloat16 (transformers' own test)."""
    from transformers.utils import is_torch_bf16_gpu_available

    return (not use_cpu) and is_torch_bf16_gpu_available()
