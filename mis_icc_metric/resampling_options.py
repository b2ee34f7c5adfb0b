"""How a statistic resamples, as one object: the values that travel together from a command's flags to every
statistic it reports (`score_predictions`, `paired_comparison`, a run's results, a leaderboard, a jury).

One frozen dataclass instead of five loose parameters on every function that only passes them on (the rule:
no library function over 7 parameters, `tests/test_architecture.py`). Its defaults are the one constants of
`mis_bench_dataset.toolkit.defaults`; what each value means is the statistics' business (`mis_icc_metric.resampling`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLE, DEFAULT_SEED


@dataclass(frozen=True)
class ResamplingOptions:
    """How the bootstrap CIs are drawn: `n_bootstrap` resamples (0: no CIs) from `seed`, each drawing `resample`
    units ("clinician": every clinician with all its videos, or "video": the paper's protocol), `clusters`
    (video -> clinician) where the video ids do not name the clinician, at the two-sided `confidence` level.

    Examples:
        >>> from mis_icc_metric import ResamplingOptions
        >>> ResamplingOptions(n_bootstrap=0).resample  # no CIs; the unit keeps its default
        'clinician'
    """

    n_bootstrap: int = DEFAULT_BOOTSTRAP
    seed: int | None = DEFAULT_SEED
    resample: str = DEFAULT_RESAMPLE
    confidence: float = DEFAULT_CONFIDENCE
    clusters: Mapping[str, str] | None = None

    def values(self) -> tuple[int, int | None, str, float, Mapping[str, str] | None]:
        """(n_bootstrap, seed, resample, confidence, clusters): for a body that reads them as five names."""
        return self.n_bootstrap, self.seed, self.resample, self.confidence, self.clusters


DEFAULT_RESAMPLING = ResamplingOptions()  # the default of every `resampling=` parameter (the flags' defaults)
