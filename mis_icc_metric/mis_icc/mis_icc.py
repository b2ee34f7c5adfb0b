"""MIS-Bench ICC(3,1): the `evaluate` metric module (thin adapter over mis_icc_metric.scoring).

A Hub-style module folder: the card is README.md beside this script, the Space app.py, the
Space's dependencies requirements.txt; the Examples of _KWARGS_DESCRIPTION run as doctests
in the test suite (tests/test_doctests.py). Kept to what evaluate 0.4.6's import scanner
accepts: one import per line, no trailing comments on import lines, and the metric class is
the first EvaluationModule subclass defined here (so evaluate is imported as a module).
"""

import datasets
import evaluate

import mis_bench_dataset.toolkit.errors
import mis_bench_dataset.toolkit.jsonio
import mis_icc_metric.resampling
import mis_icc_metric.resampling_options
import mis_icc_metric.scoring
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_CONFIDENCE, DEFAULT_RESAMPLE, DEFAULT_SEED

_CITATION = """\
@misc{lu2026misbench,
  title  = {MIS-Bench: Benchmarking Multimodal LLMs for Psychotherapeutic Interpersonal Skills Assessment},
  author = {Lu, Yuhan and Yao, Yi and Shen, Hua and Aafjes-van Doorn, Katie and Wang, Zhaonan},
  year   = {2026},
  note   = {Data and code: https://github.com/calistalu/MIS-Bench}
}
@article{shrout1979intraclass,
  title   = {Intraclass correlations: uses in assessing rater reliability},
  author  = {Shrout, Patrick E. and Fleiss, Joseph L.},
  journal = {Psychological Bulletin},
  volume  = {86},
  number  = {2},
  pages   = {420--428},
  year    = {1979}
}
"""

_DESCRIPTION = """\
ICC(3,1) (two-way mixed effects, consistency, single rater; Shrout & Fleiss case 3)
between a model's predicted FIS scores and the expert-aggregated gold scores of
MIS-Bench, per dimension and overall, with MSE, 95% percentile bootstrap CIs that
resample clinicians with all their videos (or videos, the paper's protocol), the design
effect of clustering, the parse (exclusion) accounting of the paper, a common-set and a
midpoint-imputation sensitivity, and the human single-rater ceiling (Table 2). On the same
pairs and resamples, the other agreement statistics: every Shrout-Fleiss ICC form,
Krippendorff's alpha, Pearson, Spearman, MAE, bias and Bland-Altman limits of agreement,
and range use (sd ratio, share on integers, distinct values).
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of float or None): predicted score per (video, dimension); None = unparseable.
    references (list of float): gold score per (video, dimension), in [1, 5].
    video_ids (list of str): the video of each pair.
    dimensions (list of str): the FIS dimension of each pair (key, display name or abbreviation).
    n_bootstrap (int, default 10000): bootstrap resamples (0 = no CIs).
    seed (int, default 0): seed of the shared bootstrap index matrix.
    confidence (float, default 0.95): CI level.
    common_videos (list of str, optional): also score on this common set of videos.
    out_of_range (str, default "flag"): "flag" counts predictions outside [1, 5] (never clipped), "error" raises.
    resample (str, default "clinician"): what a bootstrap resample draws: "clinician" (all of a clinician's
        videos together, the clinician read from ids like "EH0822_T1_Jessica") or "video" (the paper's protocol).
    clusters (list of str, optional): the clinician of each pair, where the video ids do not name it.
Returns:
    dict with "dimensions" {key: {"icc", "icc_ci", "mse", "n", "n_unparsed", "parse_rate", "human_ceiling",
    "agreement" {statistic: {"value", "ci"}}, ...}},
    "overall" {"icc", "icc_ci", "mse", "n", "excluded_rate", "agreement", "note"}, "mean_icc",
    "midpoint_imputation", "common_set", "parse_rates", "coverage", "meta" (with "resampling"). Each dimension
    and the overall also carry "n_clusters" and "design_effect". Raw fractions (not percent);
    undefined values are None. Every pair given is a pair asked (the coverage rule of
    mis_icc_metric.coverage): the overall score uses only videos with all eight dimensions given, and when
    there are none it is None with a "note" saying why.
Examples:
    >>> import evaluate, mis_icc_metric
    >>> metric = evaluate.load(mis_icc_metric.metric_path())
    >>> out = metric.compute(predictions=[3.1, 4.0, None, 2.2, 3.6], references=[3.0, 4.2, 3.3, 2.0, 3.4],
    ...                      video_ids=["a", "b", "c", "d", "e"], dimensions=["empathy"] * 5, n_bootstrap=0)
    >>> empathy = out["dimensions"]["empathy"]
    >>> empathy["n"], empathy["n_unparsed"], empathy["parse_rate"]
    (4, 1, 0.8)
    >>> round(empathy["icc"], 4), round(empathy["mse"], 4), empathy["icc_ci"]
    (0.9751, 0.0325, None)
    >>> agreement = empathy["agreement"]
    >>> round(agreement["icc2_1"]["value"], 4), round(agreement["loa_low"]["value"], 3), agreement["icc2_1"]["ci"]
    (0.9774, -0.296, None)
    >>> out["overall"]["icc"], out["coverage"]["n_asked_pairs"], round(out["mean_icc"], 4)
    (None, 5, 0.9751)
    >>> out["overall"]["note"].startswith("no overall score: the evaluated pairs have no verbal_fluency")
    True
"""


# The keyword options `compute` passes on (`_KWARGS_DESCRIPTION`), with their defaults: one dict, not eleven named
# parameters (the toolkit's rule of at most 7; evaluate's own `_compute` takes `**kwargs` too).
_OPTION_DEFAULTS = {
    "n_bootstrap": DEFAULT_BOOTSTRAP,
    "seed": DEFAULT_SEED,
    "confidence": DEFAULT_CONFIDENCE,
    "common_videos": None,
    "out_of_range": "flag",
    "resample": DEFAULT_RESAMPLE,
    "clusters": None,
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class MisIcc(evaluate.Metric):
    """ICC(3,1) / MSE of MIS-Bench predictions against expert gold scores."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("float64"),
                    "references": datasets.Value("float64"),
                    "video_ids": datasets.Value("string"),
                    "dimensions": datasets.Value("string"),
                }
            ),
            reference_urls=["https://github.com/calistalu/MIS-Bench"],
        )

    def _compute(self, predictions, references, video_ids, dimensions, **options):
        """evaluate's contract: the four input columns, then the user's keyword options (`_KWARGS_DESCRIPTION`),
        as evaluate's own `_compute(*, predictions, references, **kwargs)`; a name not described is an error."""
        unknown = sorted(set(options) - set(_OPTION_DEFAULTS))
        if unknown:
            raise mis_bench_dataset.toolkit.errors.UsageError(
                f"mis_icc has no option {', '.join(unknown)}", hint=f"use {', '.join(_OPTION_DEFAULTS)}"
            )
        given = {**_OPTION_DEFAULTS, **options}
        preds, refs = mis_icc_metric.scoring.mappings_from_columns(predictions, references, video_ids, dimensions)
        cluster_of = mis_icc_metric.resampling.clusters_from_columns(video_ids, given["clusters"])
        resampling = mis_icc_metric.resampling_options.ResamplingOptions(
            n_bootstrap=given["n_bootstrap"],
            seed=given["seed"],
            resample=given["resample"],
            confidence=given["confidence"],
            clusters=cluster_of,
        )
        result = mis_icc_metric.scoring.score_predictions(
            preds,
            refs,
            resampling=resampling,
            common_videos=given["common_videos"],
            out_of_range=given["out_of_range"],
        )
        return mis_bench_dataset.toolkit.jsonio.json_safe(result)
