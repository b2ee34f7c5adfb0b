"""CPU baselines that run in seconds: `mean` (train-split mean, the ICC-0 floor) and
`features` (per-dimension ridge on video-level feature summaries, one per modality setting).

- `fold_features`: the `features` preprocessing fitted per fold from one count of the transcripts, kept sparse.
- `crossval`: clinician-grouped K-fold cross-validation of the CPU baselines over every video of a build.
- `on_the_fly`: temporary builds from a labels file and transcripts, and the text ridge fitted on them.
- `models`: the CPU baselines: `mean` (the sanity floor) and `features` (per-dimension ridge).
- `baseline_run`: run a baseline on a built dataset and write what `mis-bench run` writes.
- `perturbed_ridge`: the text ridge under the transcript perturbations.
- `stacking`: how a jury combines its members: mean, median, NNLS weights (fitted elsewhere or cross-fitted).
- `summaries`: video-level summaries of the `features` config, one numeric vector per modality group.
"""

from __future__ import annotations

from mis_bench_dataset.toolkit.lazy import lazy_exports

__all__ = [
    "BASELINES",
    "MODALITY_GROUPS",
    "MeanBaseline",
    "FeatureRidgeBaseline",
    "make_baseline",
    "run_baseline",
    "BaselineRun",
    "BaselineBatch",
    "summarise",
]

# Lazy: the models import numpy and scikit-learn; `mis-bench --help` reads `stacking`'s constants only.
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(("BASELINES", "FeatureRidgeBaseline", "MeanBaseline", "make_baseline"), ".models"),
        **dict.fromkeys(("run_baseline", "BaselineRun", "BaselineBatch"), ".baseline_run"),
        **dict.fromkeys(("MODALITY_GROUPS", "summarise"), ".summaries"),
    },
)
