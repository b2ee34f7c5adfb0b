"""MIS-Bench dataset: the benchmark's facts at the top, and its rooms.

`dimensions`, `video_ids`, `splits`, `protocol`, `setting_inputs`, `icc` and `paper_results` are
the benchmark's facts, `wording` the user-facing words said once; `toolkit/` the toolkit-wide helpers (its
`defaults` the toolkit's own default values), `release/` reading a release, `builder/`
writing a build, `dataset/` reading one back (`BuiltDataset`), `synth/` the synthetic generator.

The public API is exactly `__all__`: import these names from the package
(`from mis_bench_dataset import BuiltDataset, build_dataset`); every other module is internal and may change.
"""

from typing import TYPE_CHECKING

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
    DIMENSIONS,
    GOLD_STATS,
    HUMAN_CEILING,
    RUBRIC,
    SCORE_MAX,
    SCORE_MIN,
    resolve_dimension,
)
from mis_bench_dataset.toolkit.lazy import lazy_exports
from mis_bench_dataset.video_ids import STIMULI, TIME_POINTS, VideoId, normalize_video_id, parse_video_id

# The reader/builder/generator import numpy and pyarrow: load them on first use so that
# `mis-bench --help` (which imports this package) stays fast.
_LAZY = {
    "Setting": "mis_bench_dataset.setting",
    "BuildError": "mis_bench_dataset.release.problems",
    "Problem": "mis_bench_dataset.release.problems",
    "BuildReport": "mis_bench_dataset.builder.builder",
    "BuiltDataset": "mis_bench_dataset.dataset.handle",
    "FeatureArrays": "mis_bench_dataset.dataset.arrays",
    "load_build": "mis_bench_dataset.dataset.loading",
    "fetch_authors_files": "mis_bench_dataset.release.fetch",
    "scoring_rows_from_paper_layout": "mis_bench_dataset.release.hub_layout",
    "paper_prompt": "mis_bench_dataset.protocol",
    "build_dataset": "mis_bench_dataset.builder.builder",
    "SplitPlan": "mis_bench_dataset.builder.builder",
    "BuildChecks": "mis_bench_dataset.builder.builder",
    "Labels": "mis_bench_dataset.release.labels",
    "read_labels": "mis_bench_dataset.release.labels",
    "default_sample": "mis_bench_dataset.synth.sample",
    "DefaultSample": "mis_bench_dataset.synth.sample",
    "SyntheticRelease": "mis_bench_dataset.synth.generator",
    "generate_synthetic_release": "mis_bench_dataset.synth.generator",
    # `mis-bench build --push`, `build --authors` and `mis-bench stats`
    "push_to_hub": "mis_bench_dataset.builder.publish",
    "authors_inputs": "mis_bench_dataset.release.fetch",
    "compute_stats": "mis_bench_dataset.builder.stats",
    "write_stats": "mis_bench_dataset.builder.stats",
}


__getattr__ = lazy_exports(__name__, _LAZY)


if TYPE_CHECKING:  # the names of _LAZY, for type checkers and editors (written by benchmarks/front_door.py --write)
    from mis_bench_dataset.builder.builder import BuildChecks as BuildChecks
    from mis_bench_dataset.builder.builder import BuildReport as BuildReport
    from mis_bench_dataset.builder.builder import SplitPlan as SplitPlan
    from mis_bench_dataset.builder.builder import build_dataset as build_dataset
    from mis_bench_dataset.builder.publish import push_to_hub as push_to_hub
    from mis_bench_dataset.builder.stats import compute_stats as compute_stats
    from mis_bench_dataset.builder.stats import write_stats as write_stats
    from mis_bench_dataset.dataset.arrays import FeatureArrays as FeatureArrays
    from mis_bench_dataset.dataset.handle import BuiltDataset as BuiltDataset
    from mis_bench_dataset.dataset.loading import load_build as load_build
    from mis_bench_dataset.protocol import paper_prompt as paper_prompt
    from mis_bench_dataset.release.fetch import authors_inputs as authors_inputs
    from mis_bench_dataset.release.fetch import fetch_authors_files as fetch_authors_files
    from mis_bench_dataset.release.hub_layout import scoring_rows_from_paper_layout as scoring_rows_from_paper_layout
    from mis_bench_dataset.release.labels import Labels as Labels
    from mis_bench_dataset.release.labels import read_labels as read_labels
    from mis_bench_dataset.release.problems import BuildError as BuildError
    from mis_bench_dataset.release.problems import Problem as Problem
    from mis_bench_dataset.setting import Setting as Setting
    from mis_bench_dataset.synth.generator import SyntheticRelease as SyntheticRelease
    from mis_bench_dataset.synth.generator import generate_synthetic_release as generate_synthetic_release
    from mis_bench_dataset.synth.sample import DefaultSample as DefaultSample
    from mis_bench_dataset.synth.sample import default_sample as default_sample

__all__ = [
    "Setting",
    "DIMENSIONS",
    "DIMENSION_KEYS",
    "DIMENSION_BY_KEY",
    "RUBRIC",
    "HUMAN_CEILING",
    "GOLD_STATS",
    "SCORE_MIN",
    "SCORE_MAX",
    "resolve_dimension",
    "STIMULI",
    "TIME_POINTS",
    "VideoId",
    "parse_video_id",
    "normalize_video_id",
    "generate_synthetic_release",
    "SyntheticRelease",
    "build_dataset",
    "SplitPlan",
    "BuildChecks",
    "BuildReport",
    "BuiltDataset",
    "FeatureArrays",
    "load_build",
    "fetch_authors_files",
    "scoring_rows_from_paper_layout",
    "paper_prompt",
    "BuildError",
    "Problem",
    "read_labels",
    "Labels",
    "default_sample",
    "DefaultSample",
    "push_to_hub",
    "authors_inputs",
    "compute_stats",
    "write_stats",
]
