"""The benchmark's scoring rules (paper §3.3 and the captions of Tables 2-4).

- Per dimension: ICC(3,1) of (prediction, gold) over the videos whose prediction
  parsed; unparsed (None / NaN) predictions are excluded and counted. MSE, n,
  percentile bootstrap CI (resampling clinicians with all their videos by default, or videos: `resampling`),
  and the F-test CI for reference.
- Overall: per video, mean of the eight predicted dimension scores vs mean of the eight
  gold ones, excluding every video with any unparsed dimension (the exclusion rate is
  reported; the paper's mean is 1.5%). Also the mean of the per-dimension ICCs.
- Which pairs are evaluated is the coverage rule of `coverage` (by default the pairs the
  predictions name; the overall score only over videos with all eight asked, or a note
  saying why there is none); `coverage` is reported with every score.
- Because exclusion gives every model its own item set: the same numbers on a
  caller-given common set of videos, and the sensitivity when unparsed outputs are
  imputed with the scale midpoint 3.0.
- Each dimension next to the human single-rater ceiling of Table 2.
- Per dimension and overall, on the same pairs as the ICC, the other agreement statistics
  (`agreement`: every ICC form, Krippendorff's alpha, r, rho, MAE, bias and limits of agreement,
  range use), each with its CI from the same index matrix.

All bootstrap CIs (all blocks) come from one shared draw (`resampling.Resampling`), with the design effect.
Every interval (bootstrap and F-test) follows the one rule of `reporting_floor`: from too few videos or
clinicians, past its share of undefined resamples or of zero width it is None, its reason in the entry's
`withheld` map (`meta.reporting_floor` states the rule).
Values are raw fractions; only the CLI shows percent.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
    HUMAN_CEILING,
    SCORE_MAX,
    SCORE_MIDPOINT,
    SCORE_MIN,
    resolve_dimension,
)
from mis_bench_dataset.icc import icc3_ci
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.numbers import exact_decimal

from .agreement_statistics import HALO_MIN_VIDEOS, LOA_Z, STATISTIC_KEYS, agreement_blocks_and_replicates, halo
from .bootstrap import bootstrap_blocks, guarded_ci, point_blocks, resampling_blas
from .coverage import DEFAULT_MISSING, evaluated_references, overall_reason
from .reporting_floor import Support, degenerate_reason, floor_description, withhold_reason
from .resampling import (
    Resampling,
    attach_clustering,
    block_supports,
    clinician_labels,
    clusters_per_block,
    counterpart_icc,
    design_effects,
    make_resampling,
    weakest_support,
)
from .resampling_options import DEFAULT_RESAMPLING, ResamplingOptions
from .resampling_threads import Background, in_background

logger = logging.getLogger(__name__)

Key = tuple[str, str]
MIN_ITEMS = 3
# What `icc_ci_ftest` is: the analytic CI, kept as the reference psych::ICC gives, not the one to cite.
FTEST_CI = (
    "F-test CI of ICC(3,1) (McGraw & Wong 1996, psych::ICC's), assuming independent videos: it ignores clustering"
    " by clinician (in simulation with clinician effects it covers about 75% at 95%); cite the bootstrap CI"
    " (icc_ci), which resamples clinicians by default. Withheld under the same floor as the bootstrap CI."
)

__all__ = [
    "score_predictions",
    "AlignedScores",
    "align",
    "coerce_score",
    "mappings_from_columns",
    "MIN_ITEMS",
]


def coerce_score(value: object, *, what: str) -> float | None:
    """A prediction/reference value as float (None and NaN -> None).

    float32 values (what a Parquet/`datasets` float32 column gives) are widened via
    their shortest decimal repr, so a stored 3.7 stays 3.7, not 3.700000047...
    """
    if value is None:
        return None
    if type(value) is float:  # fast path for the common case
        return None if value != value else value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: expected a number or None, got {type(value).__name__} {value!r}")
    value = exact_decimal(value)
    if math.isnan(value):
        return None
    return value


def mappings_from_columns(
    predictions: Sequence[object],
    references: Sequence[object],
    video_ids: Sequence[str],
    dimensions: Sequence[str],
) -> tuple[dict[Key, object], dict[Key, object]]:
    """Parallel columns (the `evaluate` inputs) -> the two mappings; checks lengths and duplicates.

    Dimensions may be keys, display names or paper abbreviations.
    """
    lengths = {
        "predictions": len(predictions),
        "references": len(references),
        "video_ids": len(video_ids),
        "dimensions": len(dimensions),
    }
    if len(set(lengths.values())) != 1:
        raise DataError(f"inputs must have the same length, got {lengths}")
    preds: dict[Key, object] = {}
    refs: dict[Key, object] = {}
    for index, (pred, ref, video, dim) in enumerate(zip(predictions, references, video_ids, dimensions, strict=True)):
        try:
            key = (str(video), resolve_dimension(str(dim)))
        except KeyError as exc:
            raise DataError(f"input {index}: {exc.args[0]}") from None
        if key in refs:
            raise DataError(f"input {index}: duplicate (video_id, dimension) pair {key}")
        preds[key] = pred
        refs[key] = ref
    return preds, refs


@dataclass
class AlignedScores:
    """Predictions and gold on one (videos x dimensions) grid; NaN where absent."""

    videos: list[str]
    dimensions: list[str]
    pred: np.ndarray  # (n, D) NaN = unparsed or missing
    gold: np.ndarray  # (n, D) NaN = no reference for that pair
    n_missing: np.ndarray  # (D,) reference pairs without any prediction entry
    n_out_of_range: np.ndarray  # (D,) parsed predictions outside [1, 5]

    @property
    def parsed(self) -> np.ndarray:
        return ~np.isnan(self.pred) & ~np.isnan(self.gold)

    @property
    def has_gold(self) -> np.ndarray:
        return ~np.isnan(self.gold)


def _check_dimension(dimension: str, where: str) -> None:
    if dimension not in DIMENSION_BY_KEY:
        raise DataError(f"{where}: unknown dimension key {dimension!r}; expected one of {', '.join(DIMENSION_KEYS)}")


def _preview(keys: Iterable[Key], limit: int = 5) -> str:
    keys = sorted(keys)
    shown = ", ".join(f"({v!r}, {d!r})" for v, d in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def align(
    predictions: Mapping[Key, object],
    references: Mapping[Key, object],
    *,
    missing: str = "error",
    out_of_range: str = "flag",
) -> AlignedScores:
    """Validate both mappings and lay them on one grid.

    missing: "error" (default) when a reference pair has no prediction entry, or
    "unparsed" to count it as an unparsed prediction. out_of_range: "flag" (default:
    keep the value, count it, warn) or "error".
    """
    if missing not in ("error", "unparsed"):
        raise DataError(f"missing must be 'error' or 'unparsed', got {missing!r}")
    if out_of_range not in ("flag", "error"):
        raise DataError(f"out_of_range must be 'flag' or 'error', got {out_of_range!r}")
    if not isinstance(references, Mapping) or not isinstance(predictions, Mapping):
        raise TypeError("predictions and references must be mappings (video_id, dimension) -> score")
    if not references:
        raise DataError("references are empty: nothing to score against")

    gold_values = _gold_values(references)
    _check_pairs(predictions, gold_values, missing)
    return _lay_out(predictions, gold_values, out_of_range)


def _gold_values(references: Mapping[Key, object]) -> dict[Key, float]:
    """The references as exact floats, each key, dimension and value checked."""
    gold_values: dict[Key, float] = {}
    for key, raw in references.items():
        if not (isinstance(key, tuple) and len(key) == 2):
            raise DataError(f"reference key {key!r} is not a (video_id, dimension) pair")
        _check_dimension(key[1], f"reference {key!r}")
        value = coerce_score(raw, what=f"reference {key!r}")
        if value is None:
            raise DataError(f"reference {key!r} is missing (None/NaN); drop unlabelled pairs before scoring")
        if not SCORE_MIN <= value <= SCORE_MAX:
            raise DataError(f"reference {key!r} = {value} is outside the score range [{SCORE_MIN}, {SCORE_MAX}]")
        gold_values[key] = value
    return gold_values


def _check_pairs(predictions: Mapping[Key, object], gold_values: Mapping[Key, float], missing: str) -> None:
    """No prediction without a reference; no reference without a prediction unless counted as unparsed."""
    extra = [key for key in predictions if key not in gold_values]
    for key in extra:
        if isinstance(key, tuple) and len(key) == 2:
            _check_dimension(key[1], f"prediction {key!r}")
    if extra:
        raise DataError(f"{len(extra)} prediction(s) have no reference: {_preview(extra)}")
    absent = [key for key in gold_values if key not in predictions]
    if absent and missing == "error":
        raise DataError(
            f"{len(absent)} reference pair(s) have no prediction: {_preview(absent)} "
            "(pass missing='unparsed' to count them as unparsed)"
        )


def _lay_out(predictions: Mapping[Key, object], gold_values: Mapping[Key, float], out_of_range: str) -> AlignedScores:
    """Both on one (video, dimension) grid; out-of-range predictions counted (and warned of) or refused."""
    videos = sorted({video for video, _ in gold_values})
    present = {dim for _, dim in gold_values}
    dimensions = [key for key in DIMENSION_KEYS if key in present]
    row = {video: i for i, video in enumerate(videos)}
    col = {dim: j for j, dim in enumerate(dimensions)}
    gold = np.full((len(videos), len(dimensions)), np.nan)
    pred = np.full_like(gold, np.nan)
    n_missing = np.zeros(len(dimensions), dtype=int)
    n_out = np.zeros(len(dimensions), dtype=int)
    out_examples: list[str] = []
    for key, value in gold_values.items():
        i, j = row[key[0]], col[key[1]]
        gold[i, j] = value
        if key not in predictions:
            n_missing[j] += 1
            continue
        guess = coerce_score(predictions[key], what=f"prediction {key!r}")
        if guess is None:
            continue
        if math.isinf(guess):
            raise DataError(f"prediction {key!r} is infinite")
        if not SCORE_MIN <= guess <= SCORE_MAX:
            if out_of_range == "error":
                raise DataError(f"prediction {key!r} = {guess} is outside [{SCORE_MIN}, {SCORE_MAX}]")
            n_out[j] += 1
            if len(out_examples) < 3:
                out_examples.append(f"{key!r}={guess}")
        pred[i, j] = guess
    if n_out.sum():
        logger.warning(
            "%d prediction(s) outside [%s, %s] are scored as given (not clipped), e.g. %s",
            int(n_out.sum()),
            SCORE_MIN,
            SCORE_MAX,
            ", ".join(out_examples),
        )
    return AlignedScores(videos, dimensions, pred, gold, n_missing, n_out)


def _overall_block(pred: np.ndarray, gold: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, 2) ratings (mean predicted, mean gold over the eight dimensions) and the videos
    with all eight dimensions usable; other videos get NaN (and with fewer than eight
    dimension columns, every video does)."""
    complete = usable.all(axis=1) & (usable.shape[1] == len(DIMENSION_KEYS))
    n_dims = max(pred.shape[1], 1)
    means = np.stack(
        [np.where(usable, pred, 0.0).sum(axis=1) / n_dims, np.where(usable, gold, 0.0).sum(axis=1) / n_dims],
        axis=-1,
    )
    return np.where(complete[:, None], means, np.nan), complete


class _Blocks:
    """Collects (ratings, valid) blocks so that one bootstrap serves them all."""

    def __init__(self) -> None:
        self.ratings: list[np.ndarray] = []
        self.valid: list[np.ndarray] = []

    def add(self, pred: np.ndarray, gold: np.ndarray, valid: np.ndarray) -> int:
        self.ratings.append(np.stack([pred, gold], axis=-1))
        self.valid.append(valid)
        return len(self.ratings) - 1

    def stacked(self) -> tuple[np.ndarray, np.ndarray]:
        """The stacked (n, blocks, 2) ratings and (n, blocks) valid mask."""
        return np.stack(self.ratings, axis=1), np.stack(self.valid, axis=1)


def _note(pred: np.ndarray, gold: np.ndarray, n: int) -> str | None:
    if n < MIN_ITEMS:
        return f"fewer than {MIN_ITEMS} usable items: ICC not reported"
    pred_const = np.ptp(pred) == 0
    gold_const = np.ptp(gold) == 0
    if pred_const and gold_const:
        return "no variance in predictions or gold: ICC undefined"
    if pred_const:
        return "constant predictions: ICC(3,1) is exactly 0"
    if gold_const:
        return "constant gold scores: ICC(3,1) is exactly 0"
    return None


class _Reporter:
    """Turns point/bootstrap arrays of one block into the JSON entry, each interval under the one rule of
    `reporting_floor` (`support(blocks)`: the videos and clinicians behind those blocks); a withheld interval
    is None, its reason in the entry's `withheld` under the interval's key."""

    def __init__(self, point: dict, boot: dict | None, confidence: float, support) -> None:
        self.point, self.boot, self.confidence, self.support = point, boot, confidence, support

    def ci(self, samples: np.ndarray, blocks: list[int], withheld: dict, key: str) -> list[float] | None:
        """The guarded percentile CI of `samples` (one figure's replicates); its reason, if any, in `withheld`."""
        bounds, facts = guarded_ci(samples, self.support(blocks), self.confidence)
        if facts["withheld"]:
            withheld[key] = facts["withheld"]
        return bounds

    def entry(self, block: int, pred: np.ndarray, gold: np.ndarray, valid: np.ndarray) -> dict:
        n = int(valid.sum())
        note = _note(pred[valid], gold[valid], n)
        usable = n >= MIN_ITEMS
        icc = float(self.point["icc"][block]) if usable else float("nan")
        withheld: dict[str, str] = {}
        with_ci = self.boot is not None
        result = {
            "icc": icc,  # no interval for an undefined ICC
            "icc_ci": self.ci(self.boot["icc"][:, block], [block], withheld, "icc_ci")
            if with_ci and not math.isnan(icc)
            else None,
            "mse": float(self.point["mse"][block]) if n else float("nan"),
            "mse_ci": self.ci(self.boot["mse"][:, block], [block], withheld, "mse_ci") if with_ci and n else None,
            "n": n,
        }
        result["icc_ci_ftest"] = None
        if usable:
            low, high = icc3_ci(np.stack([pred[valid], gold[valid]], axis=-1), self.confidence)
            reason = withhold_reason(self.support([block])) or degenerate_reason(float(low), float(high))
            if reason:
                withheld["icc_ci_ftest"] = reason
            else:
                result["icc_ci_ftest"] = [float(low), float(high)]
        if with_ci:
            result["n_bootstrap_undefined"] = int(np.isnan(self.boot["icc"][:, block]).sum()) if usable else None
        result["withheld"] = withheld
        result["note"] = note
        return result

    def mean_ci(self, blocks: list[int], mean: float, withheld: dict) -> list[float] | None:
        """The interval of the mean ICC over `blocks`; None when the mean itself is undefined or the rule
        withholds it (the reason then in `withheld["mean_icc_ci"]`)."""
        if self.boot is None or not blocks or math.isnan(mean):
            return None
        return self.ci(self.boot["icc"][:, blocks].mean(axis=1), blocks, withheld, "mean_icc_ci")


def _mean_icc(entries: Iterable[dict]) -> float:
    values = [e["icc"] for e in entries]
    return float(np.mean(values)) if values and not any(math.isnan(v) for v in values) else float("nan")


def score_predictions(
    predictions: Mapping[Key, object],
    references: Mapping[Key, object],
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    common_videos: Iterable[str] | None = None,
    missing: str = DEFAULT_MISSING,
    out_of_range: str = "flag",
    impute_value: float = SCORE_MIDPOINT,
) -> dict:
    """Score one system: the benchmark's JSON (raw fractions; NaN stays NaN, see `json_safe`).

    predictions / references: mappings (video_id, dimension key) -> score; a
    prediction of None (or NaN) means "unparseable".
    resampling: how the CIs are drawn (`ResamplingOptions`): `n_bootstrap=0` skips them; `resample` is what each
    bootstrap resample draws (`resampling`): "clinician" (default: every clinician with all its videos) or
    "video" (the paper's protocol); `clusters`: video -> clinician where the ids do not say.
    missing: which gold pairs are evaluated (`coverage`): "not-asked" (default: the pairs
    the predictions name), "unparsed" (every gold pair; an absent one is unparsed) or "error".
    Each dimension reports its clinicians and the design effect (the ICC's variance under clinician
    resampling over that under video resampling, from the same number of resamples).

    Examples:
        >>> from mis_icc_metric import ResamplingOptions, score_predictions
        >>> gold = {(f"v{i}", "empathy"): float(i % 5 + 1) for i in range(8)}
        >>> result = score_predictions(gold, gold, resampling=ResamplingOptions(n_bootstrap=0))
        >>> result["dimensions"]["empathy"]["icc"]
        1.0
    """
    n_bootstrap, seed, confidence = resampling.n_bootstrap, resampling.seed, resampling.confidence
    resample, clusters = resampling.resample, resampling.clusters
    if n_bootstrap < 0:
        raise DataError(f"n_bootstrap must be >= 0, got {n_bootstrap}")
    references, align_missing, coverage = evaluated_references(predictions, references, missing)
    data = align(predictions, references, missing=align_missing, out_of_range=out_of_range)
    plan = _plan_blocks(data, impute_value, common_videos)
    with resampling_blas(n_bootstrap):  # one BLAS thread beside the resampling threads
        indices = make_resampling(data.videos, n_bootstrap, seed, resample, clusters=clusters) if n_bootstrap else None
        rat, val = plan.blocks.stacked()
        supports = _supports(data.videos, val, resample, clusters)
        # Beside the statistics below, on the resampling threads: the design effect's second bootstrap, the halo.
        clustering = _start_clustering(data, plan, (rat, val), indices, clusters)
        halo_result = in_background(lambda: _halo_result(data, indices, confidence, supports(plan.dims)))
        agreements, boot = _agreements(plan, (rat, val), indices, confidence, supports)
        report = _Reporter(point_blocks(rat, val), boot, confidence, supports)
        entries: dict[int, dict] = {}

        def entry(block: int) -> dict:
            if block not in entries:
                entries[block] = report.entry(block, rat[:, block, 0], rat[:, block, 1], val[:, block])
            return dict(entries[block])

        dimensions = _dimension_results(data, plan, entry, agreements)
        overall = _overall_result(data, plan, entry, agreements[-1], missing)
        clustered = [*plan.dims, plan.overall]
        own_icc = None if boot is None else boot["icc"][:, clustered]
        _add_clustering(clustering, val[:, clustered], own_icc, [*dimensions.values(), overall])
        mean_icc = _mean_icc(dimensions.values())
        withheld: dict[str, str] = {}
        return {
            "halo": halo_result.result(),
            "dimensions": dimensions,
            "overall": overall,
            "mean_icc": mean_icc,
            "mean_icc_ci": report.mean_ci(plan.dims, mean_icc, withheld),
            "withheld": withheld,
            "parse_rates": {key: dimensions[key]["parse_rate"] for key in data.dimensions},
            "coverage": coverage.to_dict(),
            "midpoint_imputation": _midpoint_result(data, plan, entry, report, impute_value),
            "common_set": _common_result(data, plan, entry, report),
            "meta": _meta(data, confidence, n_bootstrap, seed, missing, out_of_range, resampling=indices),
        }


def _agreements(plan: _Plan, stacked, indices: Resampling | None, confidence: float, supports):
    """Every agreement statistic (`agreement_blocks`) of each dimension, then overall, on the ICC's own pairs of
    `stacked` (ratings, valid), each CI under the floor of its block (`supports`, as `_supports` gives it); and
    the ICC and MSE replicates of every block of `stacked` ({"icc", "mse"}: (B, blocks); None without resamples),
    for these blocks the agreement's own (the same sums of the same features: no second bootstrap of them), for
    the others (midpoint-imputed, common set) `bootstrap.bootstrap_blocks`'s."""
    rat, val = stacked
    blocks = [*plan.dims, plan.overall]
    entries, replicates = agreement_blocks_and_replicates(
        rat[:, blocks],
        val[:, blocks],
        indices,
        confidence=confidence,
        min_items=MIN_ITEMS,
        supports=[supports([block]) for block in blocks],
    )
    if indices is None:
        return entries, None
    boot = {key: np.empty((indices.shape[0], rat.shape[1])) for key in ("icc", "mse")}
    boot["icc"][:, blocks], boot["mse"][:, blocks] = replicates["icc3_1"], replicates["mse"]
    others = [block for block in range(rat.shape[1]) if block not in blocks]
    if others:
        rest = bootstrap_blocks(rat[:, others], val[:, others], indices)
        boot["icc"][:, others], boot["mse"][:, others] = rest["icc"], rest["mse"]
    return entries, boot


def _supports(videos: list[str], valid: np.ndarray, unit: str, clusters):
    """`support(blocks)`: the `reporting_floor.Support` of a figure over `blocks` (columns of `valid`), the
    weakest of them (`resampling.weakest_support`), resampled by `unit`."""
    supports = block_supports(clinician_labels(videos, clusters), valid, unit)

    def support(blocks: list[int]) -> Support:
        return weakest_support([supports[b] for b in blocks], unit)

    return support


@dataclass(frozen=True)
class _Clustering:
    """What the clustering of the scored videos needs: each video's clinician (None where the ids name none),
    and, with CIs, the design effect's second bootstrap, running beside the others (`counterpart_icc`)."""

    labels: np.ndarray | None
    resampling: Resampling | None
    counterpart: Background | None


def _start_clustering(data: AlignedScores, plan: _Plan, stacked, resampling: Resampling | None, clusters):
    """The clinicians of the videos, and the design effect's second bootstrap started (with CIs and clinicians)
    over the dimensions and overall blocks of `stacked` (ratings, valid)."""
    labels = clinician_labels(data.videos, clusters)
    blocks = [*plan.dims, plan.overall]
    started = None
    if resampling is not None and labels is not None:
        rat, val = stacked
        started = counterpart_icc(resampling, data.videos, clusters, (rat[:, blocks], val[:, blocks]))
    return _Clustering(labels, resampling, started)


def _add_clustering(clustering: _Clustering, valid: np.ndarray, own_icc: np.ndarray | None, entries) -> None:
    """Each entry (the dimensions, then overall: the columns of `valid`, and of `own_icc`, their ICC replicates)
    gets its clinicians and its design effect.

    The design effect compares the ICC's bootstrap variance under the two units, each from `n_resamples`
    draws of the same seed; None without CIs, or where the video ids name no clinician."""
    effects: list[float | None] = [None] * valid.shape[1]
    if clustering.counterpart is not None and own_icc is not None:
        effects = design_effects(clustering.resampling, own_icc, clustering.counterpart.result())
    attach_clustering(entries, clusters_per_block(clustering.labels, valid), effects, "icc_ci")


_SUMMARY_FIELDS = ("icc", "icc_ci", "mse", "n")


def _summary(item: dict) -> dict:
    """The summary fields of an entry, with the reasons of those of its intervals that were withheld."""
    withheld = {key: reason for key, reason in item["withheld"].items() if key in _SUMMARY_FIELDS}
    return {**{f: item[f] for f in _SUMMARY_FIELDS}, "withheld": withheld}


@dataclass
class _Plan:
    """Every (ratings, valid) block one bootstrap scores, by role: per dimension, overall, the midpoint-imputed
    ones and the common-set ones (`common_mask` None when no common set was asked for)."""

    blocks: _Blocks
    dims: list[int]
    overall: int
    gold_complete: np.ndarray
    unparsed: np.ndarray
    imputed: dict[int, int]
    imputed_overall: int
    common_mask: np.ndarray | None = None
    common_dims: list[int] = field(default_factory=list)
    common_overall: int | None = None


def _plan_blocks(data: AlignedScores, impute_value: float, common_videos: Iterable[str] | None) -> _Plan:
    n_dims = data.pred.shape[1]
    parsed, has_gold = data.parsed, data.has_gold
    blocks = _Blocks()
    dims = [blocks.add(data.pred[:, j], data.gold[:, j], parsed[:, j]) for j in range(n_dims)]
    gold_complete = has_gold.all(axis=1) & (n_dims == len(DIMENSION_KEYS))
    overall_ratings, overall_valid = _overall_block(data.pred, data.gold, parsed)
    overall_valid &= gold_complete
    overall = blocks.add(overall_ratings[:, 0], overall_ratings[:, 1], overall_valid)

    unparsed = has_gold & np.isnan(data.pred)
    imputed_pred = np.where(unparsed, impute_value, data.pred)
    imputed_dims = [j for j in range(n_dims) if unparsed[:, j].any()]
    imputed = {j: blocks.add(imputed_pred[:, j], data.gold[:, j], has_gold[:, j]) for j in imputed_dims}
    imputed_overall_ratings, imputed_valid = _overall_block(imputed_pred, data.gold, has_gold)
    imputed_overall = blocks.add(imputed_overall_ratings[:, 0], imputed_overall_ratings[:, 1], imputed_valid)
    plan = _Plan(blocks, dims, overall, gold_complete, unparsed, imputed, imputed_overall)
    if common_videos is not None:
        common = {str(v) for v in common_videos}
        unknown = common.difference(data.videos)
        if unknown:
            raise DataError(f"{len(unknown)} common video(s) have no reference: {sorted(unknown)[:5]}")
        if not common:
            raise DataError("common_videos is empty")
        plan.common_mask = mask = np.isin(np.asarray(data.videos, dtype=object), list(common))
        plan.common_dims = [blocks.add(data.pred[:, j], data.gold[:, j], parsed[:, j] & mask) for j in range(n_dims)]
        plan.common_overall = blocks.add(overall_ratings[:, 0], overall_ratings[:, 1], overall_valid & mask)
    return plan


def _dimension_results(data: AlignedScores, plan: _Plan, entry, agreements) -> dict[str, dict]:
    dimensions: dict[str, dict] = {}
    for j, key in enumerate(data.dimensions):
        dim = DIMENSION_BY_KEY[key]
        n_total = int(data.has_gold[:, j].sum())
        n_unparsed = int(plan.unparsed[:, j].sum())
        result = {"name": dim.name, "abbreviation": dim.abbreviation, **entry(plan.dims[j])}
        ceiling = HUMAN_CEILING[key]
        result.update(
            n_total=n_total,
            n_unparsed=n_unparsed,
            n_missing=int(data.n_missing[j]),
            parse_rate=(n_total - n_unparsed) / n_total if n_total else float("nan"),
            n_out_of_range=int(data.n_out_of_range[j]),
            human_ceiling={"icc": ceiling.icc, "icc_ci": [ceiling.ci_low, ceiling.ci_high]},
            gap_to_ceiling=ceiling.icc - result["icc"],
            agreement=agreements[j],
        )
        dimensions[key] = result
    return dimensions


def _overall_result(data: AlignedScores, plan: _Plan, entry, agreement, missing: str) -> dict:
    n = len(data.videos)
    n_complete = int(plan.gold_complete.sum())
    overall = entry(plan.overall)
    overall.update(
        n_total=n_complete,
        n_excluded=n_complete - overall["n"],
        excluded_rate=(n_complete - overall["n"]) / n_complete if n_complete else float("nan"),
        agreement=agreement,
    )
    if n_complete < n:
        overall["n_incomplete_gold"] = n - n_complete
    most_dims = int(data.has_gold.sum(axis=1).max(initial=0))
    reason = overall_reason(list(data.dimensions), n_complete, most_dims, missing)
    if reason is not None:
        overall["note"] = reason
    return overall


def _midpoint_result(data: AlignedScores, plan: _Plan, entry, report: _Reporter, impute_value: float) -> dict:
    sources = [plan.imputed.get(j, plan.dims[j]) for j in range(len(data.dimensions))]
    imputed_dimensions = {}
    for j, key in enumerate(data.dimensions):
        item = entry(sources[j])
        imputed_dimensions[key] = {**_summary(item), "n_imputed": int(plan.unparsed[:, j].sum())}
    imputed_mean = _mean_icc(imputed_dimensions.values())
    withheld: dict[str, str] = {}
    return {
        "value": impute_value,
        "n_imputed": int(plan.unparsed.sum()),
        "dimensions": imputed_dimensions,
        "overall": _summary(entry(plan.imputed_overall)),
        "mean_icc": imputed_mean,
        "mean_icc_ci": report.mean_ci(sources, imputed_mean, withheld),
        "withheld": withheld,
    }


def _common_result(data: AlignedScores, plan: _Plan, entry, report: _Reporter) -> dict | None:
    if plan.common_mask is None:
        return None
    common_dims = {key: entry(plan.common_dims[j]) for j, key in enumerate(data.dimensions)}
    common_mean = _mean_icc(common_dims.values())
    withheld: dict[str, str] = {}
    return {
        "n_videos": int(plan.common_mask.sum()),
        "dimensions": {k: _summary(v) for k, v in common_dims.items()},
        "overall": _summary(entry(plan.common_overall)),
        "mean_icc": common_mean,
        "mean_icc_ci": report.mean_ci(plan.common_dims, common_mean, withheld),
        "withheld": withheld,
    }


def _halo_result(data: AlignedScores, indices, confidence: float, support: Support) -> dict:
    """The halo of the model and of the expert gold on the same parsed pairs (`agreement.halo`), its CIs under
    the floor of the dimensions' `support`."""
    model, gold = halo([data.pred, data.gold], data.parsed, indices, confidence=confidence, support=support)
    for side in (model, gold):
        for pair in side["pairs"]:
            pair["i"], pair["j"] = data.dimensions[pair["i"]], data.dimensions[pair["j"]]
    return {
        "model": model,
        "gold": gold,
        "definition": "mean Pearson r between two dimensions' scores over the videos scored on both (parsed "
        f"pairs), over the dimension pairs with at least {HALO_MIN_VIDEOS} such videos and a spread on both sides "
        "for the model and for the gold (the same pairs for both)",
    }


def _meta(data: AlignedScores, confidence, n_bootstrap, seed, missing, out_of_range, *, resampling) -> dict:
    return {
        "metric": "ICC(3,1)",
        "ci_method": resampling.describe()["method"] if resampling is not None else None,
        "resampling": resampling.describe() if resampling is not None else None,
        "confidence": confidence,
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        "n_videos": len(data.videos),
        "dimensions": list(data.dimensions),
        "missing": missing,
        "out_of_range": out_of_range,
        "ci_ftest": FTEST_CI,
        "reporting_floor": floor_description(),
        "agreement": {
            "statistics": list(STATISTIC_KEYS),
            "pairs": "the ICC's: parsed predictions per dimension, complete videos overall",
            "bias": "model minus expert",
            "limits_of_agreement": f"bias +- {LOA_Z} sd of the differences (Bland & Altman 1986)",
        },
    }
