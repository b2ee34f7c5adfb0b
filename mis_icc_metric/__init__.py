"""mis_icc_metric: exact, fast ICC(3,1) / MSE for MIS-Bench, with bootstrap CIs, and the other agreement
statistics (every ICC form, Krippendorff's alpha, bias and limits of agreement, range use: the module
`mis_icc_metric.agreement`) and the model as one more rater (`model_as_rater`).

The numpy core (`icc`, `bootstrap`) has no framework dependency; `scoring` applies
the benchmark's rules; `mis_icc/` is the `evaluate` module wrapping them (script, card, Space).

Examples:
    >>> from mis_icc_metric import icc3
    >>> ratings = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> result = icc3(ratings)  # Shrout & Fleiss (1979), Table 2: 6 targets, 4 judges
    >>> round(result.icc, 4), round(result.icc_k, 2)  # their ICC(3,1) = .71 and ICC(3,4) = .91
    (0.7148, 0.91)
"""

from __future__ import annotations

from mis_bench_dataset.toolkit.lazy import lazy_exports

__all__ = [
    "ICC3Result",
    "icc3",
    "icc3_1",
    "icc3_ci",
    "icc3_k",
    "icc_forms",
    "icc_table",
    "krippendorff_alpha",
    "model_as_rater",
    "mean_squared_error",
    "mean_squares",
    "score_predictions",
    "paired_comparison",
    "subgroup_agreement",
    "therapist_agreement",
    "metric_path",
    "load",
]


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
# Lazy: keeps `import mis_icc_metric` (and `mis-bench --help`, which imports `mis_icc_metric.coverage`) light.
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(_ICC, "mis_bench_dataset.icc"),
        "score_predictions": ".scoring",
        "krippendorff_alpha": ".agreement",
        "model_as_rater": ".raters",
        "paired_comparison": ".paired",
        "subgroup_agreement": ".groups",
        "therapist_agreement": ".groups",
        "metric_path": ".module_path",
        "load": ".module_path",
    },
)
