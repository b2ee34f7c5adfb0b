"""CPU baselines that run in seconds: `mean` (train-split mean, the ICC-0 floor) and
`features` (per-dimension ridge on video-level feature summaries, one per modality setting).

- `fold_features`: the `features` preprocessing fitted per fold from one count of the transcripts, kept sparse.
- `crossval`: clinician-grouped K-fold cross-validation of the CPU baselines over every video of a build.
- `on_the_fly`: temporary builds from a labels file and transcripts, and the text ridge fitted on them.
- `models`: the CPU baselines: `mean` (the sanity floor) and `features` (per-dimension ridge).
- `run`: run a baseline on a built dataset and write what `mis-bench run` writes.
- `sensitivity`: the text ridge under the transcript perturbations.
- `summaries`: video-level summaries of the `features` config, one numeric vector per modality group.
"""

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
