"""MIS-RAFT: regression-aware fine-tuning with the compositional decimal expectation loss (paper §5).

The loss core (`expected_decimal_score`) and digit discovery import only torch; the trainer,
config and inference helpers are imported lazily so `import raft_trainer` stays light.
Everything here needs the `train` extra; without it the import says which extra to install.

The public API is exactly `__all__`: import these names from the package
(`from raft_trainer import RAFTConfig, RAFTTrainer`); every other module is internal and may change.
"""

from mis_bench_dataset.toolkit.errors import require_extra
from mis_bench_dataset.toolkit.lazy import lazy_exports

require_extra("train", "raft_trainer (MIS-RAFT training and scoring)")

from raft_trainer.digits import DigitTokens, ScoreTokenizationError, format_score  # noqa: E402 (after the check)
from raft_trainer.loss import digit_probabilities, expected_decimal_score, raft_loss  # noqa: E402

__all__ = [
    "DigitTokens",
    "ScoreTokenizationError",
    "format_score",
    "digit_probabilities",
    "expected_decimal_score",
    "raft_loss",
    "RAFTConfig",
    "RAFTTrainer",
    "RAFTDataCollator",
    "ScoringEncoder",
    "predict_scores",
    "generate_scores",
    "prepare_raft_dataset",
    "save_tiny_model",
    "make_grpo_trainer",
    "grpo_options",
    "CotScoringEncoder",
    "generate_rationales",
    "attach_rationales",
    "predict_cot_scores",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "RAFTConfig": "raft_trainer.config",
        "RAFTTrainer": "raft_trainer.trainer",
        "RAFTDataCollator": "raft_trainer.collator",
        "ScoringEncoder": "raft_trainer.data",
        "predict_scores": "raft_trainer.predict",
        "generate_scores": "raft_trainer.predict",
        "prepare_raft_dataset": "raft_trainer.data",
        "save_tiny_model": "raft_trainer.tiny",
        # the other methods from Python: GRPO, and CoT-RAFT's two stages (rationales, then RAFTTrainer on them)
        "make_grpo_trainer": "raft_trainer.grpo",
        "grpo_options": "raft_trainer.arguments",
        "CotScoringEncoder": "raft_trainer.cot",
        "generate_rationales": "raft_trainer.rationales",
        "attach_rationales": "raft_trainer.rationales",
        "predict_cot_scores": "raft_trainer.rationales",
    },
)
