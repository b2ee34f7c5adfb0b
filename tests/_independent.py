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
    frame = pd.DataFrame({"target": np.repeat(np.arange(n), 2), "rater": np.tile([0, 1], n),
                          "score": np.stack([pred, gold], axis=1).ravel()})
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


def grid(predictions: Mapping[Key, float | None], references: Mapping[Key, float],
         dimensions: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
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
