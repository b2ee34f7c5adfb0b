"""The toolkit's defaults and bounds that every entry point shares (CLI, Python API, jobs, baselines, metric),
each written once: resample counts, the CI level, the random seed, what one bootstrap resample draws.

They are the toolkit's choices, not the benchmark's facts (those are `mis_bench_dataset.dimensions`), and they live
in the lowest layer because the ground package's own statistics take them (`icc`'s CI level, `splits`' seed) and
imports only go down. The command-line options built on them are `toolkit.options`' `bootstrap_option`,
`resample_option` and `seed_option`. Internal: import the names from here, none is part of a package's `__all__`.
"""

from __future__ import annotations

DEFAULT_BOOTSTRAP = 10_000
"""The one default resample count of every entry point: the paper's (`dimensions.PAPER_BOOTSTRAP_RESAMPLES`, the
Table 4 caption; tests/test_ground_facts.py keeps them equal)."""
MIN_BOOTSTRAP = 100
"""The fewest resamples any CI, p-value or planned size is drawn from: the one floor of every `--bootstrap` (0 means
no resampling; `toolkit.options.BOOTSTRAP_RULE`). A 95% percentile CI's ends are its 2.5% and 97.5% draws, which
fewer resamples cannot place, and a planned size needs a spread."""
MIN_PLAN_RESAMPLES = MIN_BOOTSTRAP
"""The fewest resamples a planned size is drawn from (`mis-bench plan`, the trust page): the bootstrap floor."""
MAX_BOOTSTRAP = 200_000
"""The most resamples a command takes: the index matrix and the replicates grow with resamples x videos, and this
cap keeps a full 996-video bootstrap under about 1 GiB (the paper uses 10,000)."""
RESAMPLE_UNITS: tuple[str, ...] = ("video", "clinician")
"""What one bootstrap resample draws (`mis_icc_metric.resampling`): "video" draws videos as if independent (the
paper's protocol, which `reproduce` keeps); "clinician" draws clinicians with all their videos."""
DEFAULT_RESAMPLE = "clinician"
"""The honest default of the toolkit's own outputs: 996 videos come from 78 clinicians, and a video CI is about
1.7x too narrow there."""
PAPER_RESAMPLE = "video"
"""The paper's resampling (videos as if independent): what `reproduce` keeps."""
DEFAULT_CONFIDENCE = 0.95
"""The one default level of every CI the toolkit reports (the paper's 95%)."""
DEFAULT_SEED = 0
"""The one default random seed of every entry point (the bootstrap's, the sampling's, the baselines' fits)."""
