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

from typing import TYPE_CHECKING

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
    "ResamplingOptions": ".resampling_options",
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
    "DifferenceTarget": ".planning",
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

if TYPE_CHECKING:  # the names of _LAZY, for type checkers and editors (written by benchmarks/front_door.py --write)
    from mis_bench_dataset.icc import ICC3Result as ICC3Result
    from mis_bench_dataset.icc import icc3 as icc3
    from mis_bench_dataset.icc import icc3_1 as icc3_1
    from mis_bench_dataset.icc import icc3_ci as icc3_ci
    from mis_bench_dataset.icc import icc3_k as icc3_k
    from mis_bench_dataset.icc import icc_forms as icc_forms
    from mis_bench_dataset.icc import icc_table as icc_table
    from mis_bench_dataset.icc import mean_squared_error as mean_squared_error
    from mis_bench_dataset.icc import mean_squares as mean_squares

    from .agreement_statistics import agreement as agreement
    from .agreement_statistics import krippendorff_alpha as krippendorff_alpha
    from .calibration import Calibrator as Calibrator
    from .calibration import fit_calibrator as fit_calibrator
    from .calibration_checks import calibration_summary as calibration_summary
    from .estimates import estimate_means as estimate_means
    from .estimates import ppi_coverage_simulation as ppi_coverage_simulation
    from .groups import subgroup_agreement as subgroup_agreement
    from .groups import therapist_agreement as therapist_agreement
    from .module_path import load as load
    from .module_path import metric_path as metric_path
    from .paired import paired_comparison as paired_comparison
    from .planning import DifferenceTarget as DifferenceTarget
    from .planning import StudyDesign as StudyDesign
    from .planning import bonett_sample_size as bonett_sample_size
    from .planning import plan_difference as plan_difference
    from .planning import plan_icc as plan_icc
    from .planning import plan_labels as plan_labels
    from .ppi import Interval as Interval
    from .ppi import classical_difference as classical_difference
    from .ppi import classical_mean as classical_mean
    from .ppi import ppi_difference as ppi_difference
    from .ppi import ppi_mean as ppi_mean
    from .predictions_io import PredictionsFormatError as PredictionsFormatError
    from .predictions_io import predictions_to_mapping as predictions_to_mapping
    from .predictions_io import read_prediction_file as read_prediction_file
    from .predictions_io import read_predictions as read_predictions
    from .predictions_io import read_references as read_references
    from .predictions_io import write_predictions as write_predictions
    from .raters import model_as_rater as model_as_rater
    from .resampling import Resampling as Resampling
    from .resampling import make_resampling as make_resampling
    from .resampling_options import ResamplingOptions as ResamplingOptions
    from .scoring import score_predictions as score_predictions
    from .sensitivity import perturbation_shift as perturbation_shift
    from .variance_table import variance_sources as variance_sources

__all__ = list(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)
