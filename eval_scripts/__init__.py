"""eval_scripts: the zero-shot harness (prompts, parser, backends, resumable runs), reports and leaderboard.

The public API is exactly `__all__`: import these names from the package
(`from eval_scripts import RunConfig, run_setting`); every other module is internal and may change.

Examples:
    >>> from eval_scripts import parse_score
    >>> parse_score("The score prediction is: 3.7")
    3.7
"""

from mis_bench_dataset.toolkit.lazy import lazy_exports

# name -> the module that defines it. Lazy: the harness imports numpy and pyarrow; `mis-bench --help`
# imports this package and needs none of it.
_LAZY = {
    # one setting or a grid, end to end
    "RunConfig": ".harness.config",
    "Setting": "mis_bench_dataset.setting",
    "run_setting": ".harness.runner",
    "run_grid": ".harness.runner",
    "RunResult": ".harness.execution",
    "GridEntry": ".harness.execution",
    # backends and one answer
    "get_backend": ".backends.base",
    "backend_names": ".backends.base",
    "Backend": ".backends.base",
    "backend_option": ".backends.backend_options",
    "Completion": ".backends.base",
    "DecodingConfig": ".backends.base",
    "BackendUnavailable": ".backends.base",
    "UnsupportedSetting": "mis_bench_dataset.setting_inputs",
    "Prompt": ".answers.prompts",
    "render_prompt": ".answers.prompts",
    "render_paper_prompt": ".answers.prompts",
    "parse_score": "mis_icc_metric.score_parser",
    "TokenChoice": ".answers.expected_score",
    "expected_from_tokens": ".answers.expected_score",
    "TRANSCRIPT_PERTURBATIONS": ".answers.perturbations",
    "PROMPT_PERTURBATIONS": ".answers.perturbations",
    "perturb_transcripts": ".answers.perturbations",
    "perturb_prompt": ".answers.perturbations",
    # baselines, reports, the leaderboard and juries
    "run_baseline": ".baselines.baseline_run",
    "cross_validate": ".baselines.crossval",
    "write_report": ".report.writer",
    "ReportOptions": ".report.options",
    "build_leaderboard": ".leaderboard.scoring",
    "write_leaderboard": ".leaderboard.outputs",
    "run_jury": ".leaderboard.juries",
    "load_submission": ".formats.submission",
    # whole jobs
    "run_default_job": ".jobs.default_job",
    "calibrate": ".jobs.calibration",
    "apply_calibrator": ".jobs.calibration",
    "model_perturbations": ".jobs.perturb",
    "ridge_perturbations": ".jobs.perturb",
    "reproduce_table4": ".jobs.reproduction",
    "reproduce_table6": ".jobs.reproduction",
}

__all__ = list(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)
