"""ICC(3,1) and ICC(3,k) (Shrout & Fleiss 1979, case 3; paper eq. 3-5) in plain numpy, and the
other Shrout-Fleiss forms (cases 1 and 2, single and average) from the same mean squares.

It lives in the ground layer, not beside the rest of the metric in `mis_icc_metric`, because the
ground package itself computes ICCs and imports only go down: `release.labels` (the human ceiling of
a release's per-rater labels, on the dataset card and in `mis-bench stats`) and `synth.generator`
(the synthetic raters calibrated to Table 2's ceiling). `mis_icc_metric` re-exports it (`icc3`, ...)
and builds the benchmark's scoring rules on it (docs/architecture.md says the same).

The two-way mixed-effects mean squares of eq. 4-5 reduce to the column-centred
cross-product matrix C = Xc^T Xc of the (n items x k raters) matrix:

    MS_R   = 1^T C 1 / (k (n-1))
    MS_err = (tr C - 1^T C 1 / k) / ((n-1)(k-1))
    ICC(3,1) = (MS_R - MS_err) / (MS_R + (k-1) MS_err) = offdiag(C) / ((k-1) tr C)

so everything here works on C. That form is exact algebra (no approximation), is
batched for free, and makes a constant rater column contribute exactly zero (its
row and column of C are exactly zero): with k = 2 a constant prediction gives ICC
exactly 0.0, which the paper reports as "-0.0 [-0.0, 0.0]".

Degenerate inputs are values, not crashes:
- every rater column constant (tr C = 0): ICC undefined, returned as NaN;
- only one column varies (k = 2: a constant prediction): ICC = 0.0 exactly;
- perfect agreement (MS_err = 0): ICC = 1.0, F = inf, F-test CI = [1, 1].

All six forms (`icc_forms`, `icc_table`) come from four mean squares, and those from C, the
column means and n (`mean_squares_from_moments`): the bootstrap feeds resampled moments into the
same functions, so one formula serves the point estimate and every replicate. ICC(3,1) stays the
paper's metric; the others answer other questions (docs/agreement.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mis_bench_dataset.toolkit.defaults import DEFAULT_CONFIDENCE

__all__ = [
    "ICC_FORMS",
    "ICC_FORM_NAMES",
    "ICC3Result",
    "ICCForm",
    "AnovaMeanSquares",
    "cross_products",
    "icc3",
    "icc3_1",
    "icc3_k",
    "icc3_ci",
    "icc3_from_cross_products",
    "icc_forms",
    "icc_forms_from_mean_squares",
    "icc_table",
    "mean_squared_error",
    "mean_squares",
    "mean_squares_from_moments",
]

# The six Shrout & Fleiss (1979) forms: key -> their name (pingouin: ICC(1,1), ICC(A,1), ICC(C,1), ...;
# R psych::ICC: ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k). ICC(3,1) is the paper's (and every default's).
ICC_FORM_NAMES: dict[str, str] = {
    "icc1_1": "ICC(1,1)",
    "icc2_1": "ICC(2,1)",
    "icc3_1": "ICC(3,1)",
    "icc1_k": "ICC(1,k)",
    "icc2_k": "ICC(2,k)",
    "icc3_k": "ICC(3,k)",
}
ICC_FORMS: tuple[str, ...] = tuple(ICC_FORM_NAMES)


def _as_ratings(matrix: np.ndarray | list) -> np.ndarray:
    """Validate an (..., n, k) ratings array: numeric, finite, n >= 2, k >= 2."""
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim < 2:
        raise ValueError(
            f"ratings must be an (n items x k raters) matrix (or batched (..., n, k)), got shape {array.shape}"
        )
    n, k = array.shape[-2:]
    if k < 2:
        raise ValueError(f"ICC needs at least 2 raters (columns), got k={k}")
    if n < 2:
        raise ValueError(f"ICC needs at least 2 items (rows), got n={n}")
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise ValueError(
            f"ratings contain a non-finite value at index {tuple(int(i) for i in bad)}; "
            "drop items with missing ratings first (listwise deletion)"
        )
    return array


def cross_products(matrix: np.ndarray | list) -> np.ndarray:
    """Column-centred cross-product matrix C (..., k, k); constant columns are exactly 0."""
    array = _as_ratings(matrix)
    centred = array - array.mean(axis=-2, keepdims=True)
    constant = np.ptp(array, axis=-2, keepdims=True) == 0
    centred = np.where(constant, 0.0, centred)
    return np.swapaxes(centred, -1, -2) @ centred


# Two raters (model and gold, every bootstrap's layout): the trace and total of each 2 x 2 block of C summed element by
# element. numpy's reductions over two small trailing axes cost about 120 us a call on a chunk of bootstrap resamples
# (1,024 x 9 blocks), these 6-16 us: the same sums in numpy's order (row by row; C is symmetric, so the order of
# the two off-diagonal terms cannot change a bit). More raters: numpy's own reductions, whose order varies.


def block_trace(cross: np.ndarray) -> np.ndarray:
    """tr C of each (..., k, k) block: `np.trace` over the last two axes."""
    if cross.shape[-1] != 2:
        return np.trace(cross, axis1=-2, axis2=-1)
    return cross[..., 0, 0] + cross[..., 1, 1]


def block_total(cross: np.ndarray) -> np.ndarray:
    """1'C1 of each symmetric (..., k, k) block: the sum over the last two axes."""
    if cross.shape[-1] != 2:
        return cross.sum(axis=(-2, -1))
    return ((cross[..., 0, 0] + cross[..., 0, 1]) + cross[..., 1, 0]) + cross[..., 1, 1]


def icc3_from_cross_products(cross: np.ndarray) -> np.ndarray:
    """ICC(3,1) from C (..., k, k): off-diagonal sum over (k-1) * trace; NaN when tr C = 0."""
    k = cross.shape[-1]
    trace = block_trace(cross)
    offdiag = block_total(cross) - trace
    with np.errstate(invalid="ignore", divide="ignore"):
        value = offdiag / ((k - 1) * np.where(trace > 0, trace, 1.0))
    # The bounds hold exactly (Cauchy-Schwarz); clipping only removes rounding noise like 1 + 2e-16.
    return np.where(trace > 0, np.clip(value, -1.0 / (k - 1), 1.0), np.nan)


def mean_squares(matrix: np.ndarray | list) -> tuple[np.ndarray, np.ndarray]:
    """(MS_R, MS_err) of eq. 4-5, batched over leading axes."""
    array = _as_ratings(matrix)
    n, k = array.shape[-2:]
    cross = cross_products(array)
    total = block_total(cross)
    trace = block_trace(cross)
    ms_rows = total / (k * (n - 1))
    ms_err = np.maximum(trace - total / k, 0.0) / ((n - 1) * (k - 1))
    return ms_rows, ms_err


def _scalar_or_array(values: np.ndarray) -> float | np.ndarray:
    return float(values) if np.ndim(values) == 0 else values


def icc3_1(matrix: np.ndarray | list) -> float | np.ndarray:
    """Single-rater consistency ICC(3,1) of an (n x k) matrix, or batched (..., n, k)."""
    return _scalar_or_array(icc3_from_cross_products(cross_products(matrix)))


def icc3_k(matrix: np.ndarray | list) -> float | np.ndarray:
    """Average-of-k-raters ICC(3,k) = (MS_R - MS_err) / MS_R; NaN when MS_R = 0."""
    ms_rows, ms_err = mean_squares(matrix)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(ms_rows > 0, (ms_rows - ms_err) / np.where(ms_rows > 0, ms_rows, 1.0), np.nan)
    single = icc3_1(matrix)
    # ICC(3,k) is undefined exactly when ICC(3,1) is (no variance at all).
    value = np.where(np.isnan(single), np.nan, value)
    return _scalar_or_array(value)


def _f_quantile(q: float, dfn: float, dfd: float) -> float:
    """The F distribution's quantile: `scipy.special.fdtri`, the function `scipy.stats.f.ppf` evaluates (the same
    values, without importing `scipy.stats`, which takes seconds)."""
    from scipy.special import fdtri

    return fdtri(dfn, dfd, q)


def _f_statistic(ms_rows: np.ndarray, ms_err: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ms_err > 0, ms_rows / np.where(ms_err > 0, ms_err, 1.0), np.where(ms_rows > 0, np.inf, np.nan))


def icc3_ci(
    matrix: np.ndarray | list, confidence: float = DEFAULT_CONFIDENCE, *, average: bool = False
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """Shrout & Fleiss F-test confidence interval of ICC(3,1) (or ICC(3,k) with average=True)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    array = _as_ratings(matrix)
    n, k = array.shape[-2:]
    ms_rows, ms_err = mean_squares(array)
    f_value = _f_statistic(ms_rows, ms_err)
    df1, df2 = n - 1, (n - 1) * (k - 1)
    tail = 1 - (1 - confidence) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        f_low = f_value / _f_quantile(tail, df1, df2)
        f_high = f_value * _f_quantile(tail, df2, df1)
        if average:
            low, high = 1 - 1 / f_low, 1 - 1 / f_high
        else:
            low = np.where(np.isinf(f_low), 1.0, (f_low - 1) / (f_low + k - 1))
            high = np.where(np.isinf(f_high), 1.0, (f_high - 1) / (f_high + k - 1))
    return _scalar_or_array(np.asarray(low)), _scalar_or_array(np.asarray(high))


@dataclass(frozen=True)
class ICC3Result:
    """Everything Shrout & Fleiss case 3 reports for one matrix."""

    icc: float
    icc_k: float
    ci: tuple[float, float]
    ci_k: tuple[float, float]
    f: float
    df1: int
    df2: int
    pval: float
    ms_rows: float
    ms_err: float
    n: int
    k: int


def icc3(matrix: np.ndarray | list, confidence: float = DEFAULT_CONFIDENCE) -> ICC3Result:
    """ICC(3,1), ICC(3,k), F test and CIs of one (n x k) matrix."""
    array = _as_ratings(matrix)
    if array.ndim != 2:
        raise ValueError(f"icc3() takes one (n x k) matrix, got shape {array.shape}; use icc3_1 for batches")
    n, k = array.shape
    ms_rows, ms_err = (float(v) for v in mean_squares(array))
    f_value = float(_f_statistic(np.asarray(ms_rows), np.asarray(ms_err)))
    df1, df2 = n - 1, (n - 1) * (k - 1)
    low, high = icc3_ci(array, confidence)
    low_k, high_k = icc3_ci(array, confidence, average=True)
    return ICC3Result(
        icc=icc3_1(array),
        icc_k=icc3_k(array),
        ci=(float(low), float(high)),
        ci_k=(float(low_k), float(high_k)),
        f=f_value,
        df1=df1,
        df2=df2,
        pval=_f_test_p_value(f_value, df1, df2),
        ms_rows=ms_rows,
        ms_err=ms_err,
        n=n,
        k=k,
    )


@dataclass(frozen=True)
class AnovaMeanSquares:
    """Two-way ANOVA mean squares of an (n items x k raters) layout; arrays when batched."""

    rows: np.ndarray  # MS_R, between items, df n - 1
    columns: np.ndarray  # MS_C, between raters, df k - 1
    error: np.ndarray  # MS_E, residual, df (n - 1)(k - 1)
    within: np.ndarray  # MS_W, within items (raters + residual), df n (k - 1)
    n: np.ndarray  # items: an integer, or a bootstrap resample's weighted count
    k: int


def mean_squares_from_moments(cross: np.ndarray, column_means: np.ndarray, n: np.ndarray | float) -> AnovaMeanSquares:
    """The four mean squares from C (..., k, k), the column means (..., k) and the item count (...).

    Exact identities of the two-way layout: SS_R = 1'C1 / k, SS_E = tr C - SS_R and
    SS_C = n * sum_j (mean_j - grand mean)^2. `n` may be a resample's weighted count; n < 2 gives
    inf/NaN, which callers mask.
    """
    k = cross.shape[-1]
    n = np.asarray(n, dtype=np.float64)
    means = np.asarray(column_means, dtype=np.float64)
    total = block_total(cross)
    trace = block_trace(cross)
    ss_cols = n * ((means - means.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    ss_err = np.maximum(trace - total / k, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return AnovaMeanSquares(
            rows=total / (k * (n - 1)),
            columns=ss_cols / (k - 1),
            error=ss_err / ((n - 1) * (k - 1)),
            within=(ss_cols + ss_err) / (n * (k - 1)),
            n=n,
            k=k,
        )


# A denominator within this share of the size of its terms is zero but for rounding: ICC(2,k) of [[1, 1], [3, 1],
# [1, 3]] has MS_R + (MS_C - MS_E) / n exactly 0 and about 2e-17 in floating point, which would give -1.2e16.
ZERO_DENOMINATOR_SHARE = 1e-12


def _ratio(numerator: np.ndarray, denominator: np.ndarray, size: np.ndarray | float = 0.0) -> np.ndarray:
    """numerator / denominator, NaN where the denominator is not positive (the form is undefined), beyond
    rounding: `size`, the sum of the magnitudes of the denominator's terms, sets what rounds to zero."""
    defined = denominator > ZERO_DENOMINATOR_SHARE * size
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined, numerator / np.where(defined, denominator, 1.0), np.nan)


def icc_forms_from_mean_squares(ms: AnovaMeanSquares, icc3_single: np.ndarray) -> dict[str, np.ndarray]:
    """The six Shrout & Fleiss forms (keys of ICC_FORM_NAMES); ICC(3,1) is passed in (from C, exact 0
    for a constant rater).

    Undefined (NaN) where a denominator is not positive: no between-item variance for a k form (pingouin
    and R psych::ICC return -inf), or ICC(2,k) when MS_E > n MS_R + MS_C, which needs a strongly
    negative ICC(3,1) (< -0.5 for k = 2) and where the formula gives a value above 1 (they print it).
    """
    k, n = ms.k, ms.n
    msr, msc, mse, msw = ms.rows, ms.columns, ms.error, ms.within
    with np.errstate(invalid="ignore", divide="ignore"):  # n = 0 in an empty resample: NaN, masked by callers
        forms = {
            "icc1_1": np.clip(_ratio(msr - msw, msr + (k - 1) * msw), -1.0 / (k - 1), 1.0),
            "icc2_1": np.minimum(
                _ratio(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n, msr + (k - 1) * mse + k * (msc + mse) / n),
                1.0,
            ),
            "icc3_1": icc3_single,
            "icc1_k": np.minimum(_ratio(msr - msw, msr), 1.0),
            "icc2_k": np.minimum(_ratio(msr - mse, msr + (msc - mse) / n, msr + (msc + mse) / n), 1.0),
            "icc3_k": np.minimum(_ratio(msr - mse, msr), 1.0),
        }
    # No variance at all: every form is undefined, as ICC(3,1) is.
    undefined = np.isnan(icc3_single)
    return {key: np.where(undefined, np.nan, value) for key, value in forms.items()}


def icc_forms(matrix: np.ndarray | list) -> dict[str, float | np.ndarray]:
    """All six forms of an (n x k) matrix, or batched (..., n, k): {"icc1_1": ..., "icc3_k": ...}."""
    array = _as_ratings(matrix)
    cross = cross_products(array)
    ms = mean_squares_from_moments(cross, array.mean(axis=-2), array.shape[-2])
    forms = icc_forms_from_mean_squares(ms, icc3_from_cross_products(cross))
    return {key: _scalar_or_array(value) for key, value in forms.items()}


@dataclass(frozen=True)
class ICCForm:
    """One row of the Shrout & Fleiss table (pingouin.intraclass_corr's row of the same form)."""

    key: str
    name: str
    icc: float
    f: float
    df1: int
    df2: int
    pval: float
    ci: tuple[float, float]


def _case2_ci(ms: AnovaMeanSquares, icc2: float, tail: float) -> tuple[float, float]:
    """Satterthwaite F interval of ICC(2,1) (Shrout & Fleiss 1979, eq. for case 2; as pingouin, psych)."""
    n, k = float(ms.n), ms.k
    msr, msc, mse = float(ms.rows), float(ms.columns), float(ms.error)
    with np.errstate(invalid="ignore", divide="ignore"):
        fj = msc / mse
        df_err = (n - 1) * (k - 1)
        vn = df_err * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        vd = (n - 1) * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2
        v = vn / vd
        f_upper = _f_quantile(tail, n - 1, v)
        f_lower = _f_quantile(tail, v, n - 1)
        low = n * (msr - f_upper * mse) / (f_upper * (k * msc + (k * n - k - n) * mse) + n * msr)
        high = n * (f_lower * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_lower * msr)
    return float(low), float(high)


def icc_table(matrix: np.ndarray | list, confidence: float = DEFAULT_CONFIDENCE) -> dict[str, ICCForm]:
    """Every form of one (n x k) matrix with its F test and F-based CI (Shrout & Fleiss 1979; McGraw &
    Wong 1996 for case 2's interval), in ICC_FORMS order: what pingouin.intraclass_corr and R psych::ICC
    print, from this module's mean squares."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    array = _as_ratings(matrix)
    if array.ndim != 2:
        raise ValueError(f"icc_table() takes one (n x k) matrix, got shape {array.shape}")

    n, k = array.shape
    cross = cross_products(array)
    ms = mean_squares_from_moments(cross, array.mean(axis=0), n)
    forms = {key: float(v) for key, v in icc_forms_from_mean_squares(ms, icc3_from_cross_products(cross)).items()}
    tail = 1 - (1 - confidence) / 2
    df_within, df_err = n * (k - 1), (n - 1) * (k - 1)
    f1 = float(_f_statistic(np.asarray(ms.rows), np.asarray(ms.within)))
    f3 = float(_f_statistic(np.asarray(ms.rows), np.asarray(ms.error)))
    with np.errstate(invalid="ignore", divide="ignore"):
        f1_low, f1_high = f1 / _f_quantile(tail, n - 1, df_within), f1 * _f_quantile(tail, df_within, n - 1)
    case1 = (float((f1_low - 1) / (f1_low + k - 1)), float((f1_high - 1) / (f1_high + k - 1)))
    case1_k = (float(1 - 1 / f1_low), float(1 - 1 / f1_high))
    case3 = tuple(float(v) for v in icc3_ci(array, confidence))
    case3_k = tuple(float(v) for v in icc3_ci(array, confidence, average=True))
    low2, high2 = _case2_ci(ms, forms["icc2_1"], tail)
    with np.errstate(invalid="ignore", divide="ignore"):
        case2_k = (low2 * k / (1 + low2 * (k - 1)), high2 * k / (1 + high2 * (k - 1)))
    tests = {
        "icc1_1": (f1, df_within, case1),
        "icc2_1": (f3, df_err, (low2, high2)),
        "icc3_1": (f3, df_err, case3),
        "icc1_k": (f1, df_within, case1_k),
        "icc2_k": (f3, df_err, case2_k),
        "icc3_k": (f3, df_err, case3_k),
    }
    undefined = (float("nan"), float("nan"))
    return {
        key: ICCForm(
            key,
            ICC_FORM_NAMES[key],
            forms[key],
            f,
            n - 1,
            df2,
            _f_test_p_value(f, n - 1, df2),
            undefined if math.isnan(forms[key]) else ci,
        )
        for key, (f, df2, ci) in tests.items()
    }


def mean_squared_error(predictions: np.ndarray | list, references: np.ndarray | list) -> float | np.ndarray:
    """Mean of (prediction - reference)^2 over the last axis; shapes must match exactly."""
    pred = np.asarray(predictions, dtype=np.float64)
    ref = np.asarray(references, dtype=np.float64)
    if pred.shape != ref.shape:
        raise ValueError(f"predictions shape {pred.shape} does not match references shape {ref.shape}")
    if pred.ndim == 0 or pred.shape[-1] == 0:
        raise ValueError("mean_squared_error needs at least one item")
    if not (np.isfinite(pred).all() and np.isfinite(ref).all()):
        raise ValueError("mean_squared_error got a non-finite value; drop unparsed items first")
    return _scalar_or_array(np.mean((pred - ref) ** 2, axis=-1))


def _f_test_p_value(f_value: float, df1: float, df2: float) -> float:
    """P(F > f): `scipy.special.fdtrc`, what `scipy.stats.f.sf` evaluates for F >= 0 (an F statistic always is)."""
    from scipy.special import fdtrc

    return float(fdtrc(df1, df2, f_value)) if not np.isnan(f_value) else float("nan")
