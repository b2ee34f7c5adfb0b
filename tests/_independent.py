"""Reference computations for the reported numbers, written without the toolkit's ICC code.

Everything here is computed the slow, obvious way: ICC(3,1) (= pingouin's ICC(C,1)) from the
two-way ANOVA mean squares of Shrout & Fleiss, a Python loop over bootstrap resamples, the
percentile interval with `np.percentile`, the F-test interval with scipy, and the two-sided
bootstrap p-value by counting. The tests compare the toolkit's output with these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

Key = tuple[str, str]
MIN_ITEMS = 3  # paper rule as the metric card states it: no ICC on fewer than three items

# Paper Table 2 as printed (percent), in the paper's column order: VF, H/PE, Per., Emo., WAU, Emp., ABC, ARRR.
TABLE2_PERCENT = {
    "verbal_fluency": (64.0, 61.0, 68.0),
    "hope_and_pe": (53.0, 49.0, 58.0),
    "persuasiveness": (54.0, 49.0, 58.0),
    "emotional_expression": (51.0, 46.0, 55.0),
    "wau": (50.0, 45.0, 54.0),
    "empathy": (43.0, 38.0, 48.0),
    "abc": (51.0, 46.0, 55.0),
    "arrr": (53.0, 48.0, 57.0),
}


def anova_icc(pred: Sequence[float], gold: Sequence[float]) -> float:
    """ICC(3,1) of (prediction, gold) pairs from the ANOVA mean squares; NaN when undefined.

    Undefined: fewer than two items, or no variance at all (MS_rows + MS_error = 0). A constant
    prediction column gives MS_rows = MS_error, so ICC 0 (up to rounding).
    """
    ratings = np.stack([np.asarray(pred, float), np.asarray(gold, float)], axis=1)
    n, k = ratings.shape
    if n < 2:
        return math.nan
    grand = ratings.mean()
    ms_rows = k * ((ratings.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    residual = ratings - ratings.mean(axis=1, keepdims=True) - ratings.mean(axis=0) + grand
    ms_error = (residual**2).sum() / ((n - 1) * (k - 1))
    denominator = ms_rows + (k - 1) * ms_error
    if denominator <= 1e-12 * max(1.0, float((ratings**2).mean())):
        return math.nan
    return float((ms_rows - ms_error) / denominator)


def pingouin_icc(pred: Sequence[float], gold: Sequence[float]) -> float:
    """pingouin's ICC(C,1) (= ICC(3,1)) of the (prediction, gold) pairs."""
    import pandas as pd
    import pingouin as pg

    pred, gold = np.asarray(pred, float), np.asarray(gold, float)
    n = len(pred)
    frame = pd.DataFrame(
        {
            "target": np.repeat(np.arange(n), 2),
            "rater": np.tile([0, 1], n),
            "score": np.stack([pred, gold], axis=1).ravel(),
        }
    )
    table = pg.intraclass_corr(frame, targets="target", raters="rater", ratings="score").set_index("Type")
    name = "ICC(C,1)" if "ICC(C,1)" in table.index else "ICC3"  # pingouin < 0.6 called it ICC3
    return float(table.loc[name, "ICC"])


def ftest_ci(pred: Sequence[float], gold: Sequence[float], confidence: float = 0.95) -> list[float]:
    """Shrout & Fleiss (1979) F-test interval of ICC(3,1), from the mean squares and scipy's F quantiles."""
    from scipy import stats

    ratings = np.stack([np.asarray(pred, float), np.asarray(gold, float)], axis=1)
    n, k = ratings.shape
    grand = ratings.mean()
    ms_rows = k * ((ratings.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    residual = ratings - ratings.mean(axis=1, keepdims=True) - ratings.mean(axis=0) + grand
    ms_error = (residual**2).sum() / ((n - 1) * (k - 1))
    f_value = ms_rows / ms_error
    df1, df2 = n - 1, (n - 1) * (k - 1)
    q = 1 - (1 - confidence) / 2
    f_low = f_value / stats.f.ppf(q, df1, df2)
    f_high = f_value * stats.f.ppf(q, df2, df1)
    return [(f_low - 1) / (f_low + k - 1), (f_high - 1) / (f_high + k - 1)]


def grid(
    predictions: Mapping[Key, float | None], references: Mapping[Key, float], dimensions: Sequence[str]
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(videos sorted, pred (n, D) NaN = unparsed or absent, gold (n, D) NaN = no label)."""
    videos = sorted({video for video, _ in references})
    pred = np.full((len(videos), len(dimensions)), np.nan)
    gold = np.full_like(pred, np.nan)
    for i, video in enumerate(videos):
        for j, dim in enumerate(dimensions):
            if (video, dim) in references:
                gold[i, j] = references[(video, dim)]
            value = predictions.get((video, dim))
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                pred[i, j] = value
    return videos, pred, gold


def percentile_interval(replicates: Sequence[float], confidence: float = 0.95) -> list[float]:
    """The percentile interval of the defined replicates (NaN ones dropped), by np.percentile."""
    values = np.asarray([r for r in replicates if not math.isnan(r)], float)
    if values.size == 0:
        return [math.nan, math.nan]
    alpha = 100 * (1 - confidence) / 2
    return [float(v) for v in np.percentile(values, [alpha, 100 - alpha])]


def replicates(indices: np.ndarray, statistic: Callable[[np.ndarray], float]) -> list[float]:
    """statistic(row) for every resample row of the index matrix, one at a time."""
    return [statistic(np.asarray(row, dtype=np.int64)) for row in indices]


def clinician_rows(videos: Sequence[str], n_resamples: int, seed: int) -> list[np.ndarray]:
    """Each cluster-bootstrap resample as the row numbers of its videos, built by hand: draw clinicians
    (sorted by name, numbered 0..C-1) with numpy's generator as the toolkit seeds it (uint16 draws), then
    list each drawn clinician's videos, a clinician drawn twice twice. The rows a Python loop reads."""
    clinicians = sorted({video.split("_")[0] for video in videos})
    rows_of = {c: [i for i, video in enumerate(videos) if video.split("_")[0] == c] for c in clinicians}
    draws = np.random.default_rng(seed).integers(
        0, len(clinicians), size=(n_resamples, len(clinicians)), dtype=np.uint16
    )
    return [np.asarray([row for c in draw for row in rows_of[clinicians[c]]], dtype=np.int64) for draw in draws]


def two_sided_p(deltas: Sequence[float]) -> float:
    """min(1, 2 min(P(delta <= 0), P(delta >= 0))) with the +1 correction, counted one by one."""
    defined = [d for d in deltas if not math.isnan(d)]
    below = above = 0
    for d in defined:
        below += d <= 0
        above += d >= 0
    return min(1.0, 2 * min((below + 1) / (len(defined) + 1), (above + 1) / (len(defined) + 1)))


def masked_icc(pred: np.ndarray, gold: np.ndarray, keep: np.ndarray) -> float:
    return anova_icc(pred[keep], gold[keep])


def overall_pairs(pred: np.ndarray, gold: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per kept video: the mean of its predicted scores and the mean of its gold scores (plain Python loop)."""
    means_pred, means_gold = [], []
    for i in np.flatnonzero(keep):
        means_pred.append(sum(pred[i]) / len(pred[i]))
        means_gold.append(sum(gold[i]) / len(gold[i]))
    return np.asarray(means_pred), np.asarray(means_gold)


def expected_scores(
    predictions: Mapping[Key, float | None],
    references: Mapping[Key, float],
    *,
    n_bootstrap: int,
    seed: int,
    confidence: float = 0.95,
    common_videos: Sequence[str] | None = None,
) -> dict:
    """The numbers a system's scores must hold, recomputed here: per dimension ICC, CI, MSE, n and parse
    rate; overall ICC, CI, MSE, n and exclusion rate; mean ICC and its CI; the common-set overall and mean
    ICC. CIs come from a loop over the rows of the seeded shared index matrix."""
    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_icc_metric.bootstrap import bootstrap_indices

    videos, pred, gold = grid(predictions, references, DIMENSION_KEYS)
    indices = bootstrap_indices(len(videos), n_bootstrap, seed)
    parsed = ~np.isnan(pred) & ~np.isnan(gold)
    gold_complete = ~np.isnan(gold).any(axis=1)
    complete = parsed.all(axis=1) & gold_complete

    def icc_and_ci(p: np.ndarray, g: np.ndarray, reps: list[float]) -> dict:
        if len(p) < MIN_ITEMS:  # the benchmark reports no ICC on fewer than three items
            return {"icc": math.nan, "icc_ci": [math.nan, math.nan]}
        return {"icc": anova_icc(p, g), "icc_ci": percentile_interval(reps, confidence)}

    def dimension_block(usable: np.ndarray) -> tuple[dict, list[list[float]]]:
        block, reps = {}, []
        for j, key in enumerate(DIMENSION_KEYS):
            ok = usable[:, j]
            reps.append(
                replicates(
                    indices, lambda row, j=j: anova_icc(pred[row, j][usable[row, j]], gold[row, j][usable[row, j]])
                )
            )
            block[key] = {
                **icc_and_ci(pred[ok, j], gold[ok, j], reps[-1]),
                "mse": float(np.mean((pred[ok, j] - gold[ok, j]) ** 2)) if ok.any() else math.nan,
                "n": int(ok.sum()),
                "parse_rate": float(ok.sum() / (~np.isnan(gold[:, j])).sum()),
            }
        return block, reps

    def overall_block(keep: np.ndarray) -> dict:
        p, g = overall_pairs(pred, gold, keep)
        reps = replicates(indices, lambda row: anova_icc(*overall_pairs(pred[row], gold[row], keep[row])))
        return {
            **icc_and_ci(p, g, reps),
            "mse": float(np.mean((p - g) ** 2)) if keep.any() else math.nan,
            "n": int(keep.sum()),
        }

    def mean_block(block: dict, reps: list[list[float]]) -> tuple[float, list[float]]:
        mean = float(np.mean([entry["icc"] for entry in block.values()]))
        if math.isnan(mean):
            return mean, [math.nan, math.nan]
        means = [float(np.mean(values)) for values in zip(*reps, strict=True)]
        return mean, percentile_interval(means, confidence)

    dimensions, reps = dimension_block(parsed)
    overall = overall_block(complete)
    overall["excluded_rate"] = float((gold_complete.sum() - complete.sum()) / gold_complete.sum())
    mean_icc, mean_icc_ci = mean_block(dimensions, reps)
    result = {
        "dimensions": dimensions,
        "overall": overall,
        "mean_icc": mean_icc,
        "mean_icc_ci": mean_icc_ci,
        "common_set": None,
    }
    if common_videos is not None:
        in_common = np.isin(videos, list(common_videos))
        common_dimensions, common_reps = dimension_block(parsed & in_common[:, None])
        common_mean, common_mean_ci = mean_block(common_dimensions, common_reps)
        result["common_set"] = {
            "n_videos": int(in_common.sum()),
            "overall": overall_block(complete & in_common),
            "mean_icc": common_mean,
            "mean_icc_ci": common_mean_ci,
        }
    return result


def paired_expected(
    predictions_a: Mapping[Key, float | None],
    predictions_b: Mapping[Key, float | None],
    references: Mapping[Key, float],
    *,
    n_bootstrap: int,
    seed: int,
    confidence: float = 0.95,
) -> dict:
    """ICC(A) - ICC(B) on the items both parsed, per dimension, overall and for the mean ICC, with the
    percentile interval and the two-sided p-value of the looped resample differences."""
    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_icc_metric.bootstrap import bootstrap_indices

    videos, a, gold = grid(predictions_a, references, DIMENSION_KEYS)
    _, b, _ = grid(predictions_b, references, DIMENSION_KEYS)
    indices = bootstrap_indices(len(videos), n_bootstrap, seed)
    both = ~np.isnan(a) & ~np.isnan(b)
    complete = both.all(axis=1)

    def summary(icc_a: float, icc_b: float, deltas: list[float], n: int | None) -> dict:
        entry = {
            "icc_a": icc_a,
            "icc_b": icc_b,
            "delta": icc_a - icc_b,
            "delta_ci": percentile_interval(deltas, confidence),
            "p_value": two_sided_p(deltas),
        }
        return entry if n is None else {**entry, "n": n}

    dimensions, all_deltas = {}, []
    for j, key in enumerate(DIMENSION_KEYS):
        ok = both[:, j]
        deltas = replicates(
            indices,
            lambda row, j=j: (
                anova_icc(a[row, j][both[row, j]], gold[row, j][both[row, j]])
                - anova_icc(b[row, j][both[row, j]], gold[row, j][both[row, j]])
            ),
        )
        all_deltas.append(deltas)
        dimensions[key] = summary(
            anova_icc(a[ok, j], gold[ok, j]), anova_icc(b[ok, j], gold[ok, j]), deltas, int(ok.sum())
        )
    deltas = replicates(
        indices,
        lambda row: (
            anova_icc(*overall_pairs(a[row], gold[row], complete[row]))
            - anova_icc(*overall_pairs(b[row], gold[row], complete[row]))
        ),
    )
    overall = summary(
        anova_icc(*overall_pairs(a, gold, complete)),
        anova_icc(*overall_pairs(b, gold, complete)),
        deltas,
        int(complete.sum()),
    )
    mean_deltas = [float(np.mean(values)) for values in zip(*all_deltas, strict=True)]
    mean = summary(
        float(np.mean([d["icc_a"] for d in dimensions.values()])),
        float(np.mean([d["icc_b"] for d in dimensions.values()])),
        mean_deltas,
        None,
    )
    return {"dimensions": dimensions, "overall": overall, "mean_icc": mean}


def close(value: object, expected: object, tolerance: float = 1e-9) -> bool:
    """Recursive equality of numbers to `tolerance` over the keys of `expected` (None/NaN equal only each other)."""
    if isinstance(expected, Mapping):
        return isinstance(value, Mapping) and all(close(value.get(k), v, tolerance) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        if value is None:
            return all(isinstance(e, float) and math.isnan(e) for e in expected)
        return len(value) == len(expected) and all(close(v, e, tolerance) for v, e in zip(value, expected, strict=True))
    if isinstance(expected, float) and math.isnan(expected):
        return value is None or (isinstance(value, float) and math.isnan(value))
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return isinstance(value, (int, float)) and abs(value - expected) <= tolerance * max(1.0, abs(expected))
    return value == expected


def close_published(value: object, expected: object, digits: int = 3) -> bool:
    """`close` for a figure published at `digits` significant digits: within half a unit of its last digit."""
    if isinstance(expected, Mapping):
        return isinstance(value, Mapping) and all(close_published(value.get(k), v, digits) for k, v in expected.items())
    if isinstance(expected, (list, tuple)):
        if value is None:
            return all(isinstance(e, float) and math.isnan(e) for e in expected)
        pairs = zip(value, expected, strict=True)
        return len(value) == len(expected) and all(close_published(v, e, digits) for v, e in pairs)
    if isinstance(expected, float) and math.isfinite(expected) and expected != 0:
        unit = 10 ** (math.floor(math.log10(abs(expected))) - digits + 1)
        return isinstance(value, (int, float)) and abs(value - expected) <= 0.5 * unit * (1 + 1e-9)
    return close(value, expected)


def anova_forms(matrix: np.ndarray) -> dict[str, float]:
    """The six Shrout & Fleiss (1979) forms of an (n x k) matrix from the two-way ANOVA sums of squares,
    written out term by term (targets, raters, residual); NaN where a denominator is zero."""
    y = np.asarray(matrix, float)
    n, k = y.shape
    grand = y.mean()
    ss_rows = k * ((y.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((y.mean(axis=0) - grand) ** 2).sum()
    residual = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0) + grand
    ss_err = (residual**2).sum()
    msr, msc, mse = ss_rows / (n - 1), ss_cols / (k - 1), ss_err / ((n - 1) * (k - 1))
    msw = (ss_cols + ss_err) / (n * (k - 1))

    def ratio(a: float, b: float) -> float:
        return a / b if b > 1e-12 else math.nan

    return {
        "icc1_1": ratio(msr - msw, msr + (k - 1) * msw),
        "icc2_1": ratio(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n),
        "icc3_1": ratio(msr - mse, msr + (k - 1) * mse),
        "icc1_k": ratio(msr - msw, msr),
        "icc2_k": ratio(msr - mse, msr + (msc - mse) / n),
        "icc3_k": ratio(msr - mse, msr),
    }


def reference_agreement(pred: Sequence[float], gold: Sequence[float]) -> dict[str, float]:
    """Every agreement statistic of (prediction, gold) pairs from the libraries a user would call:
    the ANOVA forms above, `krippendorff.alpha`, `scipy.stats.pearsonr` / `spearmanr`, and numpy for
    the Bland-Altman limits (bias +- 1.96 sd of the differences, ddof 1) and the range use."""
    import warnings

    import krippendorff
    from scipy import stats

    p, g = np.asarray(pred, float), np.asarray(gold, float)
    out = anova_forms(np.stack([p, g], axis=1)) if len(p) >= 2 else dict.fromkeys(ICC_KEYS, math.nan)
    if np.ptp(np.concatenate([p, g])) == 0:  # every value the same: no ICC form is defined
        out = dict.fromkeys(ICC_KEYS, math.nan)
    try:
        out["krippendorff_alpha"] = float(krippendorff.alpha(np.stack([p, g]), level_of_measurement="interval"))
    except ValueError:  # "There has to be more than one value in the domain."
        out["krippendorff_alpha"] = math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant input and returns NaN
        varies = len(p) >= 2 and np.ptp(p) > 0 and np.ptp(g) > 0
        out["pearson"] = float(stats.pearsonr(p, g)[0]) if varies else math.nan
        out["spearman"] = float(stats.spearmanr(p, g)[0]) if varies else math.nan
    d = p - g
    out["mae"] = float(np.mean(np.abs(d)))
    out["mse"] = float(np.mean(d**2))
    out["bias"] = float(np.mean(d))
    sd = float(np.std(d, ddof=1)) if len(d) >= 2 else math.nan
    out["sd_diff"] = sd
    out["loa_low"] = out["bias"] - 1.96 * sd
    out["loa_high"] = out["bias"] + 1.96 * sd
    gold_sd = float(np.std(g, ddof=1)) if len(g) >= 2 else math.nan
    out["sd_ratio"] = float(np.std(p, ddof=1)) / gold_sd if gold_sd and gold_sd > 0 else math.nan
    out["integer_share"] = float(np.mean(p == np.round(p)))
    out["n_distinct"] = float(len(np.unique(p)))
    return out


ICC_KEYS = ("icc1_1", "icc2_1", "icc3_1", "icc1_k", "icc2_k", "icc3_k")
