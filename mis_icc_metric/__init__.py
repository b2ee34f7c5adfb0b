"""mis_icc_metric: exact, fast ICC(3,1) / MSE for MIS-Bench, with bootstrap CIs, and the other agreement
statistics (every ICC form, Krippendorff's alpha, bias and limits of agreement, range use: the module
`mis_icc_metric.agreement_statistics`) and the model as one more rater (`model_as_rater`).

The numpy core (`icc`, `bootstrap`) has no framework dependency; `scoring` applies
the benchmark's rules; `mis_icc/` is the `evaluate` module wrapping them (script, card, Space).

The public API is exactly `__all__`: import these names from the package
(`from mis_icc_metric import score_predictions`); every other module is internal and may change.

Examples:
    >>> from mis_icc_metric import icc3
    >>> ratings = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> result = icc3(ratings)  # Shrout & Fleiss (1979), Table 2: 6 targets, 4 judges
    >>> round(result.icc, 4), round(result.icc_k, 2)  # their ICC(3,1) = .71 and ICC(3,4) = .91
    (0.7148, 0.91)
"""

from __future__ import annotations

from mis_bench_dataset.toolkit.lazy import lazy_exports

_ICC = (
    "ICC3Result",
    "icc3",
    "icc3_1",
    "icc3_ci",
    "icc3_k",
    "icc_forms",
    "icc_table",
    "mean_squared_error",
    "mean_squares",
)
# name -> the module that defines it. Lazy: keeps `import mis_icc_metric` (and `mis-bench --help`, which
# imports `mis_icc_metric.coverage`) light. No export is named like a module of this package: importing that
# module would rebind the name (`tests/test_public_api.py` checks it).
_LAZY = {
    # the metric and the benchmark's scoring rules
    **dict.fromkeys(_ICC, "mis_bench_dataset.icc"),
    "score_predictions": ".scoring",
    "paired_comparison": ".paired",
    # agreement beyond ICC(3,1), the model as a rater, agreement by subgroup and per therapist
    "agreement": ".agreement_statistics",
    "krippendorff_alpha": ".agreement_statistics",
    "model_as_rater": ".raters",
    "subgroup_agreement": ".groups",
    "therapist_agreement": ".groups",
    # what a resample draws (clinicians or videos)
    "Resampling": ".resampling",
    "make_resampling": ".resampling",
    # calibration and conformal intervals
    "Calibrator": ".calibration",
    "fit_calibrator": ".calibration",
    "calibration_summary": ".calibration_checks",
    # PPI++ estimates
    "Interval": ".ppi",
    "ppi_mean": ".ppi",
    "ppi_difference": ".ppi",
    "classical_mean": ".ppi",
    "classical_difference": ".ppi",
    "estimate_means": ".estimates",
    "ppi_coverage_simulation": ".estimates",
    # planning a study
    "plan_icc": ".planning",
    "plan_difference": ".planning",
    "plan_labels": ".planning",
    "StudyDesign": ".planning",
    "bonett_sample_size": ".planning",
    # sensitivity to perturbations
    "perturbation_shift": ".sensitivity",
    # every source of variance of a judge's ICC in one table
    "variance_sources": ".variance_table",
    # predictions and references files
    "read_predictions": ".predictions_io",
    "read_prediction_file": ".predictions_io",
    "predictions_to_mapping": ".predictions_io",
    "write_predictions": ".predictions_io",
    "read_references": ".predictions_io",
    "PredictionsFormatError": ".predictions_io",
    # the `evaluate` module
    "metric_path": ".module_path",
    "load": ".module_path",
}

__all__ = list(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)
