"""Prediction-powered inference (PPI++, Angelopoulos, Duchi & Zrnic 2023): a judge on every video plus an
expert on a few gives a mean (and a difference of means) whose CI is valid and, when the judge tracks the
experts, narrower than the experts-only one.

The formulas are those of `ppi_py` 0.2.3 (`ppi_mean_ci`, `ppi_ols_ci`, `classical_mean_ci`,
`classical_ols_ci`), rewritten in numpy so the toolkit does not depend on it (its tests compare the two to
1e-6). The power-tuning weight lambda is estimated from the data and clipped to [0, 1]: 0 is the experts-only
(classical) estimate, 1 plain PPI. Every CI here is a normal (CLT) interval that treats the videos as
independent draws and the labelled ones as a uniformly random subset: `IID_ASSUMPTION` says so in every
output; `clustered_ppi_means` resamples clinicians instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri  # the normal quantile (scipy.stats.norm.ppf, without its import)

from mis_bench_dataset.toolkit.defaults import DEFAULT_CONFIDENCE

IID_ASSUMPTION = (
    "the CLT interval of PPI++ (ppi_py): videos independent, the expert-labelled ones a uniformly random "
    "subset of the judged ones"
)
# The fewest expert-labelled videos a CI of a mean needs (a spread needs two).
MIN_LABELLED = 2


@dataclass(frozen=True)
class Interval:
    """A point estimate, its CI and (for PPI) the power-tuning weight lambda used."""

    estimate: float
    low: float
    high: float
    lam: float | None = None

    @property
    def width(self) -> float:
        return self.high - self.low

    def as_dict(self) -> dict:
        out = {"estimate": self.estimate, "ci": [self.low, self.high], "width": self.width}
        if self.lam is not None:
            out["lambda"] = self.lam
        return out


def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile of a CI at `confidence` (1.96 at 0.95); refuses a level outside (0, 1)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(ndtri(1 - (1 - confidence) / 2))


def _interval(estimate: float, se: float, confidence: float, lam: float | None = None) -> Interval:
    half = normal_quantile(confidence) * se
    return Interval(float(estimate), float(estimate - half), float(estimate + half), lam)


def mean_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimising weight for a mean, clipped to [0, 1] (`ppi_py._calc_lam_glm` for a mean):
    cov(y, yhat) over the labelled set / ((1 + n/N) var(yhat) over all videos). 0 when it is undefined
    (no unlabelled video, a constant judge): the experts-only estimate."""
    n, big_n = y.size, yhat_unlabeled.size
    every = np.concatenate([yhat, yhat_unlabeled])
    spread = every.var(ddof=1) if every.size > 1 else 0.0
    if big_n == 0 or n == 0 or spread <= 0:
        return 0.0
    covariance = np.mean((y - y.mean()) * (yhat - yhat.mean()))
    return float(np.clip(covariance / ((1 + n / big_n) * spread), 0.0, 1.0))


def ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabeled: np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    lam: float | None = None,
) -> Interval:
    """The PPI++ mean and CI (`ppi_py.ppi_mean_ci` with `lam=None`, its default: power-tuned)."""
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_unlabeled))
    lam = mean_lambda(y, yhat, yhat_unlabeled) if lam is None else float(lam)
    n, big_n = y.size, yhat_unlabeled.size
    rectifier = y - lam * yhat
    imputed = lam * yhat_unlabeled.mean() if big_n else 0.0
    imputed_var = (lam * yhat_unlabeled).var() / big_n if big_n else 0.0
    return _interval(imputed + rectifier.mean(), np.sqrt(imputed_var + rectifier.var() / n), confidence, lam)


def stratified_ppi_mean(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabeled: np.ndarray,
    strata: np.ndarray,
    strata_unlabeled: np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    lam: float | None = None,
) -> Interval:
    """Stratified PPI++: `ppi_mean` in each stratum (lambda tuned per stratum), weighted by the stratum's share
    of all videos, N_h / N; standard error sqrt(sum (N_h / N)^2 se_h^2). For an expert set drawn at random
    *within* each stratum at a share that differs between strata (a known design: 30% of T1, 5% of T2): plain
    PPI++ then over-weights the heavily labelled strata in its rectifier and is biased, this is not.
    `strata`/`strata_unlabeled`: each labelled / unlabelled video's stratum. `lam=0.0` gives the stratified
    experts-only mean. Every stratum needs `MIN_LABELLED` labelled videos (the caller checks: `stratum_counts`).
    The returned lambda is the strata's mean lambda, weighted as the estimate is."""
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_unlabeled))
    strata, strata_unlabeled = np.asarray(strata, dtype=object), np.asarray(strata_unlabeled, dtype=object)
    names = sorted({*strata.tolist(), *strata_unlabeled.tolist()}, key=str)
    total = y.size + yhat_unlabeled.size
    estimate, variance, weighted_lam = 0.0, 0.0, 0.0
    z = normal_quantile(confidence)
    for name in names:
        lab, unl = strata == name, strata_unlabeled == name
        part = ppi_mean(y[lab], yhat[lab], yhat_unlabeled[unl], confidence=confidence, lam=lam)
        weight = (lab.sum() + unl.sum()) / total
        estimate += weight * part.estimate
        variance += (weight * part.width / (2 * z)) ** 2
        weighted_lam += weight * part.lam
    return _interval(estimate, np.sqrt(variance), confidence, weighted_lam)


def stratum_counts(strata: np.ndarray, labelled: np.ndarray) -> dict[str, tuple[int, int]]:
    """{stratum: (labelled videos, all videos)}, for the caller's check that every stratum has `MIN_LABELLED`."""
    strata, labelled = np.asarray(strata, dtype=object), np.asarray(labelled, dtype=bool)
    return {str(h): (int((labelled & (strata == h)).sum()), int((strata == h).sum())) for h in np.unique(strata)}


def classical_mean(y: np.ndarray, *, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The mean of the expert labels alone, with its CLT interval (`ppi_py.classical_mean_ci`)."""
    y = np.asarray(y, dtype=np.float64)
    return _interval(y.mean(), y.std() / np.sqrt(y.size), confidence)


def classical_difference(y_a: np.ndarray, y_b: np.ndarray, *, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """mean(b) - mean(a) of the expert labels alone: OLS on a group dummy with HC0 standard errors
    (`ppi_py.classical_ols_ci`'s coefficient on the dummy)."""
    y_a, y_b = np.asarray(y_a, dtype=np.float64), np.asarray(y_b, dtype=np.float64)
    se = np.sqrt(y_a.var() / y_a.size + y_b.var() / y_b.size)
    return _interval(y_b.mean() - y_a.mean(), se, confidence)


def _ols(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(x, y, rcond=None)[0]


def _ols_gradients(theta, x, y, yhat, x_unlabeled, yhat_unlabeled, use_unlabeled: bool):
    """Per-video gradients of the squared loss and the inverse Hessian (`ppi_py._ols_get_stats`, vectorised)."""
    n, big_n = y.size, yhat_unlabeled.size
    if use_unlabeled:
        hessian = (x_unlabeled.T @ x_unlabeled + x.T @ x) / (big_n + n)
        unlabeled = x_unlabeled * (x_unlabeled @ theta - yhat_unlabeled)[:, None]
    else:
        hessian = x.T @ x / n
        unlabeled = np.zeros_like(x_unlabeled)
    labelled = x * (x @ theta - y)[:, None]
    labelled_hat = x * (x @ theta - yhat)[:, None]
    return labelled, labelled_hat, unlabeled, np.linalg.inv(hessian)


def _glm_lambda(grads, grads_hat, grads_unlabeled, inv_hessian, coord: int | None) -> float:
    """`ppi_py._calc_lam_glm` (overall mode, clipped to [0, 1]); 0 where it is undefined."""
    n, big_n, d = grads.shape[0], grads_unlabeled.shape[0], inv_hessian.shape[0]
    centred, centred_hat = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
    covariance = (centred.T @ centred_hat + centred_hat.T @ centred) / n
    spread = np.cov(np.concatenate([grads_hat, grads_unlabeled]).T).reshape(d, d)
    v = inv_hessian if coord is None else inv_hessian[coord, :]
    num, den = (np.trace(v @ m @ v) if coord is None else v @ m @ v for m in (covariance, spread))
    den = 2 * (1 + n / big_n) * den
    if not den > 0:
        return 0.0
    return float(np.clip(num / den, 0.0, 1.0))


def ppi_ols(
    x: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    x_unlabeled: np.ndarray,
    yhat_unlabeled: np.ndarray,
    *,
    coord: int | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray, float]:
    """PPI++ OLS coefficients, their CI bounds (d x 2) and lambda, as `ppi_py.ppi_ols_ci(lam=None, coord=coord)`
    computes them: lambda estimated at the PPI (lambda = 1) fit, re-estimated once at the tuned fit."""
    x, x_unlabeled = np.asarray(x, dtype=np.float64), np.asarray(x_unlabeled, dtype=np.float64)
    y, yhat, yhat_unlabeled = (np.asarray(a, dtype=np.float64) for a in (y, yhat, yhat_unlabeled))

    def fit(lam: float) -> np.ndarray:
        return _ols(x_unlabeled, lam * yhat_unlabeled) + _ols(x, y - lam * yhat)

    def tuned(theta: np.ndarray) -> float:
        return _glm_lambda(*_ols_gradients(theta, x, y, yhat, x_unlabeled, yhat_unlabeled, True), coord)

    lam = tuned(fit(tuned(fit(1.0))))
    theta = fit(lam)
    grads, grads_hat, grads_unlabeled, inv_hessian = _ols_gradients(
        theta, x, y, yhat, x_unlabeled, yhat_unlabeled, lam != 0
    )
    d, n, big_n = x.shape[1], y.size, yhat_unlabeled.size
    var_unlabeled = np.cov(lam * grads_unlabeled.T).reshape(d, d)
    var = np.cov(grads.T - lam * grads_hat.T).reshape(d, d)
    sigma = inv_hessian @ (n / big_n * var_unlabeled + var) @ inv_hessian
    half = normal_quantile(confidence) * np.sqrt(np.diag(sigma) / n)
    return theta, np.stack([theta - half, theta + half], axis=1), lam


def _dummy_design(in_b: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(in_b.size), in_b.astype(np.float64)])


def ppi_difference(
    y: np.ndarray,
    yhat: np.ndarray,
    in_b: np.ndarray,
    yhat_unlabeled: np.ndarray,
    in_b_unlabeled: np.ndarray,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Interval:
    """mean(group b) - mean(group a) by PPI++: the coefficient on b's dummy in `ppi_ols` (intercept + dummy),
    lambda tuned for that coefficient (`coord=1`). `in_b`: True for a video of group b, False for group a."""
    theta, bounds, lam = ppi_ols(
        _dummy_design(np.asarray(in_b)),
        y,
        yhat,
        _dummy_design(np.asarray(in_b_unlabeled)),
        yhat_unlabeled,
        coord=1,
        confidence=confidence,
    )
    return Interval(float(theta[1]), float(bounds[1, 0]), float(bounds[1, 1]), lam)


def weighted_ppi_means(
    weights: np.ndarray,
    labelled: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    *,
    include: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`ppi_mean` for many weightings of one set of videos at once: (estimate, standard error, lambda), each (B,).

    Row b counts video i `weights[b, i]` times (a bootstrap resample's counts; ones for every video), as a
    labelled video where `labelled` is True: one mask for every row (n,), or one per row (B, n) (which videos an
    expert labelled in each simulated draw). Every moment is one matrix product, no loop over rows. `y` is read
    only where labelled; `include` (n,) leaves out the videos where it is False (a subgroup, with one shared
    weight matrix for every group). A row with fewer than `MIN_LABELLED` labelled videos gives NaN; one with no
    unlabelled video the labelled mean (lambda 0), as `ppi_mean` does.
    """
    yhat = np.asarray(yhat, dtype=np.float64)
    mask = np.asarray(labelled, dtype=bool)
    y = np.where(mask.any(axis=0) if mask.ndim == 2 else mask, np.nan_to_num(np.asarray(y, dtype=np.float64)), 0.0)
    one = np.ones_like(yhat) if include is None else np.asarray(include, dtype=np.float64)
    labelled_columns = one[:, None] * np.column_stack([one, y, yhat, y**2, y * yhat, yhat**2])
    unlabelled_columns = one[:, None] * np.column_stack([one, yhat, yhat**2])
    weights = np.asarray(weights, dtype=np.float64)
    if mask.ndim == 1:  # one product over the stacked columns (no B x n temporaries)
        both = weights @ np.column_stack([labelled_columns * mask[:, None], unlabelled_columns * ~mask[:, None]])
        lab, unl = both[:, :6], both[:, 6:]
    else:
        lab, unl = (weights * mask) @ labelled_columns, (weights * ~mask) @ unlabelled_columns
    n, big_n = lab[:, 0], unl[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_y, mean_hat, mean_yy, mean_y_hat, mean_hat_hat = (lab[:, c] / n for c in range(1, 6))
        covariance = mean_y_hat - mean_y * mean_hat
        total = n + big_n
        sum_hat, sum_hat2 = lab[:, 2] + unl[:, 1], lab[:, 5] + unl[:, 2]
        spread = (sum_hat2 - sum_hat**2 / total) / (total - 1)
        lam = np.clip(covariance / ((1 + n / big_n) * spread), 0.0, 1.0)
        lam = np.where(np.isfinite(lam), lam, 0.0)
        mean_unl = unl[:, 1] / big_n
        var_unl = np.maximum(unl[:, 2] / big_n - mean_unl**2, 0.0)
        rect_mean = mean_y - lam * mean_hat
        rect_var = np.maximum(mean_yy - 2 * lam * mean_y_hat + lam**2 * mean_hat_hat - rect_mean**2, 0.0)
        # No unlabelled video drawn: lambda 0, the labelled mean (as `ppi_mean` gives), not an undefined resample.
        none = big_n == 0
        estimate = np.where(none, mean_y, lam * mean_unl + rect_mean)
        se = np.where(none, np.sqrt(rect_var / n), np.sqrt(lam**2 * var_unl / big_n + rect_var / n))
    defined = n >= MIN_LABELLED
    return np.where(defined, estimate, np.nan), np.where(defined, se, np.nan), lam


def clustered_ppi_means(
    counts: np.ndarray,
    y: np.ndarray,
    yhat: np.ndarray,
    labelled: np.ndarray,
) -> np.ndarray:
    """The PPI++ mean in every resample: (B,), vectorised over resamples (`weighted_ppi_means`).

    `counts` (B x n_items): how often each video is in each resample (`Resampling.counts`, a clinician
    drawn twice brings each of its videos twice); `yhat` the judge on every video, `y` the gold (read only where
    `labelled`). Lambda is re-tuned in every resample, as `ppi_mean` tunes it.
    """
    return weighted_ppi_means(counts, labelled, y, yhat)[0]
