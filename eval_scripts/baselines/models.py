"""The CPU baselines: `mean` (the sanity floor) and `features` (per-dimension ridge).

`features`: for each dimension, a scikit-learn pipeline (standardised video-level
summaries + TF-IDF of the transcript when text is in the setting, then Ridge) whose
alpha is chosen by GroupKFold cross-validation on the train split only, grouped by
clinician so that no clinician is on both sides of a fold (prior automated FIS work
used such supervised feature models, paper §2.3). Predictions are clipped to the
1-5 scale and kept at full precision.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eval_scripts.baselines.fold_features import Blocks, FoldFeatures, transcript_terms
from eval_scripts.baselines.summaries import MODALITY_GROUPS, SummaryCache, summarise
from mis_bench_dataset.dimensions import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN

logger = logging.getLogger(__name__)

BASELINES = ("mean", "features")


def _labels(rows: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """Gold scores of one dimension as float64 (null -> NaN), float32 widened via repr so 3.7 stays 3.7."""
    return np.array([np.nan if row.get(key) is None else float(str(row[key])) for row in rows], dtype=np.float64)


@dataclass
class MeanBaseline:
    """Predicts each dimension's train-split mean gold score for every video (ICC 0 by construction)."""

    means: dict[str, float] = field(default_factory=dict)

    def fit(self, rows: Sequence[Mapping[str, Any]]) -> MeanBaseline:
        for key in DIMENSION_KEYS:
            labels = _labels(rows, key)
            if np.isnan(labels).all():
                raise ValueError(f"no labelled train video for dimension {key!r}: cannot fit the mean baseline")
            self.means[key] = float(np.nanmean(labels))
        return self

    def predict(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
        return {key: np.full(len(rows), self.means[key]) for key in DIMENSION_KEYS}

    def describe(self) -> dict[str, Any]:
        return {"train_means": self.means}


@dataclass
class FeatureRidgeBaseline:
    """Per-dimension ridge on video-level feature summaries; alpha by clinician-grouped CV."""

    modality: str = "audio+video+text"
    alphas: tuple[float, ...] = tuple(float(a) for a in np.logspace(-1, 4, 11))
    n_folds: int = 5
    features: FoldFeatures | None = None  # the fitted preprocessing, shared by the eight ridges
    weights: np.ndarray | None = None  # (n_features, 8) ridge weights, one column per dimension
    intercepts: np.ndarray | None = None  # (8,)
    chosen_alpha: dict[str, float] = field(default_factory=dict)
    cv_mse: dict[str, float] = field(default_factory=dict)
    summary_cache: SummaryCache | None = field(default=None, repr=False)  # see `summarise`

    def __post_init__(self) -> None:
        if self.modality not in MODALITY_GROUPS:
            raise ValueError(f"unknown modality setting {self.modality!r}; use one of {', '.join(MODALITY_GROUPS)}")

    @property
    def groups(self) -> tuple[str, ...]:
        return MODALITY_GROUPS[self.modality]

    def _frame(self, rows: Sequence[Mapping[str, Any]]):
        """Summaries in columns 0..p-1 and the transcript in column p (selected by position): `_pipeline`'s input."""
        import pandas as pd

        numeric = summarise(rows, self.groups, self.summary_cache)
        frame = pd.DataFrame(numeric)
        frame[numeric.shape[1]] = [str(row.get("transcript") or "") for row in rows]
        return frame

    def _pipeline(self, n_numeric: int):
        """The model as one scikit-learn pipeline: its definition, which `fit` computes faster (tests and
        benchmarks/bench_baselines.py compare the two)."""
        from sklearn.compose import ColumnTransformer
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler

        parts = [("summaries", StandardScaler(), slice(0, n_numeric))]
        if "text" in self.groups:
            parts.append(
                ("lexical", TfidfVectorizer(analyzer=transcript_terms, min_df=2, sublinear_tf=True), n_numeric)
            )
        # Dense output: Ridge then solves the small n x n dual system directly instead of an iterative sparse solver.
        return Pipeline([("features", ColumnTransformer(parts, sparse_threshold=0.0)), ("ridge", Ridge())])

    def fit(self, rows: Sequence[Mapping[str, Any]]) -> FeatureRidgeBaseline:
        """Grouped CV over the alpha grid, then the preprocessing once and one ridge per dimension
        on the whole train split.

        Equivalent to a GridSearchCV per dimension of `_pipeline` (same GroupKFold folds, same
        MSE criterion; tests check the chosen alphas, the CV errors and the predictions agree)
        but the transcripts are counted once (`fold_features`, for the process), each fold fits
        the preprocessing once and keeps the TF-IDF sparse (its Gram matrix kept for the other
        modality settings on the same rows), and one Gram matrix per fold with one
        eigendecomposition per pattern of labelled rows (`_dual_solutions`) gives the ridge
        predictions of every alpha for all eight dimensions, instead of 8 x len(alphas)
        pipeline fits per fold. The final
        preprocessing (scaler, TF-IDF: no labels) is fitted once on all train rows, as in the
        folds, and each dimension's ridge on the rows labelled for it.
        """
        import scipy.linalg  # noqa: F401 - loaded first: the limit covers only the BLAS libraries loaded by then
        from threadpoolctl import threadpool_limits

        # Tiny matrices: BLAS threads only add overhead, and one thread gives the same bits in every process
        # (scipy's own OpenBLAS, loaded inside the limit, would otherwise run threaded).
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(rows)

    def _inputs(self, rows: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, list[str] | None]:
        """(the summaries, the transcripts when text is in the setting): what the preprocessing reads."""
        numeric = summarise(rows, self.groups, self.summary_cache)
        return numeric, [str(row.get("transcript") or "") for row in rows] if "text" in self.groups else None

    def _fit(self, rows: Sequence[Mapping[str, Any]]) -> FeatureRidgeBaseline:
        from sklearn.model_selection import GroupKFold

        numeric, transcripts = self._inputs(rows)
        labels = np.column_stack([_labels(rows, key) for key in DIMENSION_KEYS])
        clinicians = np.array([str(row["clinician"]) for row in rows])
        for j, key in enumerate(DIMENSION_KEYS):
            n_groups = len(set(clinicians[~np.isnan(labels[:, j])]))
            if n_groups < 2:
                raise ValueError(
                    f"dimension {key!r}: {n_groups} clinician(s) with labels in the train split; "
                    "grouped cross-validation needs at least 2"
                )
        n_splits = min(self.n_folds, len(set(clinicians)))
        fold_mse = []  # per fold: (n_alphas, n_dims); averaged over folds like GridSearchCV's mean_test_score
        for train_idx, test_idx in GroupKFold(n_splits=n_splits).split(numeric, groups=clinicians):
            kernel = FoldFeatures.fit(numeric, transcripts, train_idx).rows.gram()  # all rows: both kernels
            y_test = labels[test_idx]
            scored = ~np.isnan(y_test)
            gram, cross = kernel[np.ix_(train_idx, train_idx)], kernel[np.ix_(test_idx, train_idx)]
            predicted = kernel_path_predictions(gram, cross, labels[train_idx], self.alphas)
            squared = np.where(scored[None], (predicted - np.nan_to_num(y_test)[None]) ** 2, 0.0)
            errors = squared.sum(axis=1) / np.maximum(scored.sum(axis=0), 1)  # (n_alphas, n_dims)
            fold_mse.append(np.where(scored.any(axis=0), errors, np.nan))
        cv_mse = np.nanmean(np.stack(fold_mse), axis=0)
        best = cv_mse.argmin(axis=0)  # first (smallest) alpha on ties, as GridSearchCV
        self.features = FoldFeatures.fit(numeric, transcripts, np.arange(len(rows)))
        x_train, self.features.rows = self.features.rows, None  # kept no longer than the fit
        self.weights, self.intercepts = block_ridge_coefficients(x_train, labels, [self.alphas[b] for b in best])
        for j, key in enumerate(DIMENSION_KEYS):
            self.chosen_alpha[key] = float(self.alphas[best[j]])
            self.cv_mse[key] = float(cv_mse[best[j], j])
            logger.debug("%s %s: alpha %.3g, CV MSE %.4f", self.modality, key, self.chosen_alpha[key], self.cv_mse[key])
        return self

    def predict(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
        from threadpoolctl import threadpool_limits

        if self.features is None:
            raise RuntimeError("fit the features baseline on the train split before predicting")
        with threadpool_limits(limits=1, user_api="blas"):
            x = self.features.transform(*self._inputs(rows))
            predicted = np.clip(x.times(self.weights) + self.intercepts, SCORE_MIN, SCORE_MAX)
            return {key: predicted[:, j] for j, key in enumerate(DIMENSION_KEYS)}

    def describe(self) -> dict[str, Any]:
        return {
            "regressor": "ridge (sklearn Ridge's solution, dual form) per dimension on standardised summaries"
            + (" + transcript TF-IDF (1-2 grams)" if "text" in self.groups else ""),
            "modality_groups": list(self.groups),
            "alpha_grid": list(self.alphas),
            "cv": f"GroupKFold(n_splits<={self.n_folds}) by clinician, train split only",
            "chosen_alpha": self.chosen_alpha,
            "cv_mse": self.cv_mse,
        }


# A symmetric eigendecomposition costs about as much as 5-9 Cholesky factorisations of the same matrix (measured
# at 100-800 rows, one BLAS thread): from this many alphas on, one of it serves them all for less.
_EIGEN_FROM_ALPHAS = 8


def _dual_solutions(gram: np.ndarray, targets: np.ndarray, alphas: Sequence[float]) -> np.ndarray:
    """(K + alpha I)^-1 targets for every alpha: (n_alphas, n, n_targets).

    What sklearn's Ridge solves for dense data with more features than rows (its
    `_solve_cholesky_kernel`), with one Cholesky factorisation per alpha for a few alphas;
    for a grid, one eigendecomposition K = V diag(w) V^T serves every alpha,
    (K + alpha I)^-1 y = V diag(1 / (w + alpha)) V^T y (both backward stable: the same
    solutions to ~1e-13, checked against sklearn by the tests).
    """
    from scipy.linalg import cho_factor, cho_solve, eigh

    alphas = np.asarray(alphas, dtype=np.float64)
    if len(alphas) < _EIGEN_FROM_ALPHAS:
        identity = np.eye(gram.shape[0])
        return np.stack([cho_solve(cho_factor(gram + alpha * identity), targets) for alpha in alphas])
    eigenvalues, vectors = eigh(gram, driver="evd")
    projected = vectors.T @ targets  # (n, n_targets)
    return vectors @ (projected[None] / (eigenvalues[None, :, None] + alphas[:, None, None]))


def _target_groups(y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """(labelled rows, targets) for each distinct pattern of labelled rows: targets labelled on the same rows share
    their centred kernel and its factorisations (all of them when nothing is missing)."""
    labelled = ~np.isnan(y)
    patterns, which = np.unique(labelled, axis=1, return_inverse=True)
    which = np.asarray(which).ravel()
    return [(np.flatnonzero(patterns[:, g]), np.flatnonzero(which == g)) for g in range(patterns.shape[1])]


def _centred_kernels(gram: np.ndarray, cross: np.ndarray | None, rows: np.ndarray):
    """The Gram matrix of the train rows `rows` centred on their own mean m, and the test rows' kernel against
    them, read off the raw products gram = X X^T and cross = X_test X^T (no n x p work per target):
    (x_a - m).(x_b - m) = x_a.x_b - x_a.m - m.x_b + m.m, with x.m the mean of x's products with the rows."""
    g = gram[np.ix_(rows, rows)]
    r = g.mean(axis=1)  # x_i . m
    c = r.mean()  # m . m
    kernel = g - r[:, None] - r[None, :] + c
    if cross is None:
        return kernel, None
    t = cross[:, rows]
    return kernel, t - t.mean(axis=1)[:, None] - r[None, :] + c


def kernel_path_predictions(gram: np.ndarray, cross: np.ndarray, y_train: np.ndarray, alphas) -> np.ndarray:
    """Predictions of sklearn `Ridge(alpha, fit_intercept=True)` for every alpha and target at once, (n_alphas,
    n_test, n_targets), from the raw products gram = X X^T and cross = X_test X^T of the rows (dual form: videos
    are far fewer than features). A target with unlabelled (NaN) rows is fitted on its labelled rows alone."""
    out = np.full((len(alphas), cross.shape[0], y_train.shape[1]), np.nan)
    for rows, targets in _target_groups(y_train):
        if len(rows) == 0:
            continue  # nothing to fit on: NaN, as the mean of no labels
        kernel, test_kernel = _centred_kernels(gram, cross, rows)
        y = y_train[np.ix_(rows, targets)]
        dual = _dual_solutions(kernel, y - y.mean(axis=0), alphas)  # (n_alphas, n_rows, n_targets)
        out[:, :, targets] = test_kernel @ dual + y.mean(axis=0)
    return out


def ridge_path_predictions(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, alphas: Sequence[float]
) -> np.ndarray:
    """`kernel_path_predictions` of dense rows (unlabelled rows left out per target). A test checks equality
    with sklearn's Ridge."""
    return kernel_path_predictions(x_train @ x_train.T, x_test @ x_train.T, y_train, alphas)


def _dual_coefficients(gram: np.ndarray, y_train: np.ndarray, alphas: np.ndarray):
    """(B (n, k), M (n, k), y means (k,)) with target j's ridge weights X^T B[:, j] and the mean of its
    labelled rows X^T M[:, j]: the dual solution a of its centred kernel on its labelled rows R gives
    w = (X_R - mean)^T a = X_R^T (a - mean(a)); unlabelled rows get 0."""
    n, k = y_train.shape
    b, m, means = np.zeros((n, k)), np.zeros((n, k)), np.full(k, np.nan)
    for rows, targets in _target_groups(y_train):
        if len(rows) == 0:
            raise ValueError("a target has no labelled row to fit on")
        kernel, _ = _centred_kernels(gram, None, rows)
        y = y_train[np.ix_(rows, targets)]
        distinct, which = np.unique(alphas[targets], return_inverse=True)
        solutions = _dual_solutions(kernel, y - y.mean(axis=0), distinct)  # (n_distinct, n_rows, n_targets)
        dual = solutions[np.asarray(which).ravel(), :, np.arange(len(targets))].T  # each target's own alpha
        b[np.ix_(rows, targets)] = dual - dual.mean(axis=0)
        m[np.ix_(rows, targets)] = 1.0 / len(rows)
        means[targets] = y.mean(axis=0)
    return b, m, means


def block_ridge_coefficients(x: Blocks, y_train: np.ndarray, alphas: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Weights (p, k) and intercepts (k,) of sklearn `Ridge(alphas[j]).fit(x, y[:, j])` for every target j, on the
    labelled rows of each, for rows held as dense + sparse blocks: one Gram matrix for all targets, one
    factorisation per pattern of labelled rows and distinct alpha."""
    b, m, means = _dual_coefficients(x.gram(), y_train, np.asarray(alphas, dtype=np.float64))
    weights = x.transposed_times(b)
    return weights, means - (x.transposed_times(m) * weights).sum(axis=0)


def ridge_coefficients(
    x_train: np.ndarray, y_train: np.ndarray, alphas: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """`block_ridge_coefficients` of dense rows. A test checks equality with sklearn's Ridge."""
    return block_ridge_coefficients(Blocks(np.asarray(x_train, dtype=np.float64)), y_train, alphas)


def make_baseline(name: str, modality: str = "audio+video+text", summary_cache: SummaryCache | None = None):
    if name == "mean":
        return MeanBaseline()
    if name == "features":
        return FeatureRidgeBaseline(modality=modality, summary_cache=summary_cache)
    raise ValueError(f"unknown baseline {name!r}; use one of {', '.join(BASELINES)}")
