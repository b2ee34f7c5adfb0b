"""CPU baselines that run in seconds: `mean` (train-split mean, the ICC-0 floor) and
`features` (per-dimension ridge on video-level feature summaries, one per modality setting)."""

from eval_scripts.baselines.models import BASELINES, FeatureRidgeBaseline, MeanBaseline, make_baseline
from eval_scripts.baselines.run import BaselineRun, run_baseline
from eval_scripts.baselines.summaries import MODALITY_GROUPS, summarise

__all__ = [
    "BASELINES",
    "MODALITY_GROUPS",
    "MeanBaseline",
    "FeatureRidgeBaseline",
    "make_baseline",
    "run_baseline",
    "BaselineRun",
    "summarise",
]
