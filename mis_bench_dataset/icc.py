"""ICC(3,1) and ICC(3,k) (Shrout & Fleiss 1979, case 3; paper eq. 3-5) in plain numpy.

It lives in the ground layer because the dataset itself needs it (the human ceiling on the
dataset card, the synthetic raters' calibration, `mis-bench stats`); `mis_icc_metric`
re-exports it and builds the benchmark's scoring rules on it.

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "ICC3Result",
    "cross_products",
    "icc3",
    "icc3_1",
    "icc3_k",
    "icc3_ci",
    "icc3_from_cross_products",
    "mean_squared_error",
    "mean_squares",
]


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


def icc3_from_cross_products(cross: np.ndarray) -> np.ndarray:
    """ICC(3,1) from C (..., k, k): off-diagonal sum over (k-1) * trace; NaN when tr C = 0."""
    k = cross.shape[-1]
    trace = np.trace(cross, axis1=-2, axis2=-1)
    offdiag = cross.sum(axis=(-2, -1)) - trace
    with np.errstate(invalid="ignore", divide="ignore"):
        value = offdiag / ((k - 1) * np.where(trace > 0, trace, 1.0))
    # The bounds hold exactly (Cauchy-Schwarz); clipping only removes rounding noise like 1 + 2e-16.
    return np.where(trace > 0, np.clip(value, -1.0 / (k - 1), 1.0), np.nan)


def mean_squares(matrix: np.ndarray | list) -> tuple[np.ndarray, np.ndarray]:
    """(MS_R, MS_err) of eq. 4-5, batched over leading axes."""
    array = _as_ratings(matrix)
    n, k = array.shape[-2:]
    cross = cross_products(array)
    total = cross.sum(axis=(-2, -1))
    trace = np.trace(cross, axis1=-2, axis2=-1)
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


def _f_statistic(ms_rows: np.ndarray, ms_err: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ms_err > 0, ms_rows / np.where(ms_err > 0, ms_err, 1.0), np.where(ms_rows > 0, np.inf, np.nan))


def icc3_ci(
    matrix: np.ndarray | list, confidence: float = 0.95, *, average: bool = False
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
        from scipy import stats  # imported on use: scipy.stats takes seconds to import

        f_low = f_value / stats.f.ppf(tail, df1, df2)
        f_high = f_value * stats.f.ppf(tail, df2, df1)
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


def icc3(matrix: np.ndarray | list, confidence: float = 0.95) -> ICC3Result:
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
    from scipy import stats

    return float(stats.f.sf(f_value, df1, df2)) if not np.isnan(f_value) else float("nan")
