"""MIS-RAFT: regression-aware fine-tuning with the compositional decimal expectation loss (paper §5).

The loss core (`expected_decimal_score`) and digit discovery import only torch; the trainer,
config and inference helpers are imported lazily so `import raft_trainer` stays light.
Everything here needs the `train` extra; without it the import says which extra to install.

The public API is exactly `__all__`: import these names from the package
(`from raft_trainer import RAFTConfig, RAFTTrainer`); every other module is internal and may change.
"""

from typing import TYPE_CHECKING

from mis_bench_dataset.toolkit.errors import require_extra
from mis_bench_dataset.toolkit.lazy import lazy_exports

require_extra("train", "raft_trainer (MIS-RAFT training and scoring)")

from raft_trainer.digits import DigitTokens, ScoreTokenizationError, format_score  # noqa: E402 (after the check)
from raft_trainer.loss import digit_probabilities, expected_decimal_score, raft_loss  # noqa: E402

# name -> the module that defines it. Lazy: the trainer, config and inference helpers import transformers and TRL.
_LAZY = {
    # training from the three dataclasses (TRL's scripts' `main`), or from flags as `train.py` parses them
    "main": "raft_trainer.entry",
    "RAFTScriptArguments": "raft_trainer.arguments",
    "RAFTModelConfig": "raft_trainer.arguments",
    "make_parser": "raft_trainer.arguments",
    "RAFTConfig": "raft_trainer.config",
    "RAFTTrainer": "raft_trainer.trainer",
    "RAFTDataCollator": "raft_trainer.collator",
    "ScoringEncoder": "raft_trainer.data",
    "predict_scores": "raft_trainer.predict",
    "generate_scores": "raft_trainer.predict",
    "ReadoutOptions": "raft_trainer.predict",
    "prepare_raft_dataset": "raft_trainer.data",
    "save_tiny_model": "raft_trainer.tiny",
    # the other methods from Python: GRPO, and CoT-RAFT's two stages (rationales, then RAFTTrainer on them)
    "make_grpo_trainer": "raft_trainer.grpo",
    "grpo_options": "raft_trainer.arguments",
    "CotScoringEncoder": "raft_trainer.cot",
    "generate_rationales": "raft_trainer.rationales",
    "attach_rationales": "raft_trainer.rationales",
    "predict_cot_scores": "raft_trainer.rationales",
}

if TYPE_CHECKING:  # the names of _LAZY, for type checkers and editors (written by benchmarks/front_door.py --write)
    from raft_trainer.arguments import RAFTModelConfig as RAFTModelConfig
    from raft_trainer.arguments import RAFTScriptArguments as RAFTScriptArguments
    from raft_trainer.arguments import grpo_options as grpo_options
    from raft_trainer.arguments import make_parser as make_parser
    from raft_trainer.collator import RAFTDataCollator as RAFTDataCollator
    from raft_trainer.config import RAFTConfig as RAFTConfig
    from raft_trainer.cot import CotScoringEncoder as CotScoringEncoder
    from raft_trainer.data import ScoringEncoder as ScoringEncoder
    from raft_trainer.data import prepare_raft_dataset as prepare_raft_dataset
    from raft_trainer.entry import main as main
    from raft_trainer.grpo import make_grpo_trainer as make_grpo_trainer
    from raft_trainer.predict import ReadoutOptions as ReadoutOptions
    from raft_trainer.predict import generate_scores as generate_scores
    from raft_trainer.predict import predict_scores as predict_scores
    from raft_trainer.rationales import attach_rationales as attach_rationales
    from raft_trainer.rationales import generate_rationales as generate_rationales
    from raft_trainer.rationales import predict_cot_scores as predict_cot_scores
    from raft_trainer.tiny import save_tiny_model as save_tiny_model
    from raft_trainer.trainer import RAFTTrainer as RAFTTrainer

__all__ = [
    "DigitTokens",
    "ScoreTokenizationError",
    "format_score",
    "digit_probabilities",
    "expected_decimal_score",
    "raft_loss",
    *_LAZY,
]

__getattr__ = lazy_exports(__name__, _LAZY)
