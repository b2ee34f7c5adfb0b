"""How a jury combines its members' scores of the same (video, dimension) pairs.

- `mean`, `median`: the members' scores of a pair, combined with no fitting.
- `stacked`: per dimension, weights that are non-negative and sum to one (a convex combination, no intercept),
  fitted by least squares to the gold of a fit split (`simplex_weights`), then the weighted sum. A convex
  combination lies between its members' scores of the pair, so the jury stays on the members' scale by
  construction (members on [1, 5] give a jury on [1, 5]); NNLS without the sum-to-one constraint could sum past 1
  and leave the scale (5.037 on the real build), and clipping afterwards would score a jury other than the one
  fitted. Fitted on another split's runs (`fit_stacked`), or cross-fitted on the scored split itself
  (`crossfit_stacked`): clinician folds (scikit-learn's `GroupKFold`), each fold's pairs predicted by weights
  fitted on the other folds' clinicians only, so no score is made by weights that saw its gold. A dimension
  where too few pairs have every member's score and the gold gets no weights: the jury leaves it unanswered and
  the record names it (`unfitted`).

Pairs a member did not answer follow one stated rule (`JURY_MISSING`): `require-all` (the default) leaves the
jury's answer empty wherever any member has none, so the pair stays in the jury's predictions as unanswered and
counts against its coverage like any unanswered pair; `available` combines the members that answered (mean and
median only: stacked weights need every member). Nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError, UsageError

Key = tuple[str, str]
JURY_METHODS = ("mean", "median", "stacked")
JURY_MISSING = ("require-all", "available")
DEFAULT_JURY_MISSING = "require-all"
DEFAULT_JURY_FOLDS = 5
MIN_JURY_FOLDS = 2  # cross-fitting holds out one fold and fits on the others: one fold leaves nothing to fit on
STACKED_FIT = "least squares, weights non-negative and summing to one (scipy.optimize.minimize SLSQP), no intercept"

if TYPE_CHECKING:  # numpy is imported where it is used: `mis-bench --help` reads the constants above
    import numpy as np


def member_matrix(members: Sequence[Mapping[Key, float | None]], keys: Sequence[Key]) -> np.ndarray:
    """(pairs, members) scores, NaN where a member has no score for the pair."""
    import numpy as np

    return np.array(
        [[np.nan if (v := m.get(k)) is None else float(v) for m in members] for k in keys], dtype=np.float64
    ).reshape(len(keys), len(members))


def combine_fixed(matrix: np.ndarray, method: str, missing: str = DEFAULT_JURY_MISSING) -> np.ndarray:
    """`mean` or `median` of each row (pair); NaN under the missing-pair rule (see the module)."""
    import numpy as np

    answered = ~np.isnan(matrix)
    usable = answered.all(axis=1) if missing == "require-all" else answered.any(axis=1)
    out = np.full(matrix.shape[0], np.nan)
    rows = matrix[usable]
    if method == "mean":
        out[usable] = np.nanmean(rows, axis=1)
    elif method == "median":
        out[usable] = np.nanmedian(rows, axis=1)
    else:
        raise ValueError(f"{method!r} is not a fixed combination")
    return out


def simplex_weights(matrix: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Least-squares weights of `gold` on the members' scores (rows with every member and the gold), constrained
    to be non-negative and sum to one (SLSQP from the equal-weight start; the problem is convex, so its minimum
    is the global one). Raises DataError when fewer rows than members are usable."""
    import numpy as np
    from scipy.optimize import minimize

    keep = ~np.isnan(matrix).any(axis=1) & ~np.isnan(gold)
    n_members = matrix.shape[1]
    if keep.sum() < n_members:
        raise DataError(
            f"too few pairs to fit {n_members} weights ({int(keep.sum())} with every member and the gold)",
            hint="fit on a larger split, or use --method mean or median",
        )
    a, y = matrix[keep], gold[keep]
    scale = float(len(y))

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        residual = a @ w - y
        return float(residual @ residual) / scale, 2.0 * (a.T @ residual) / scale

    fitted = minimize(
        loss,
        np.full(n_members, 1.0 / n_members),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * n_members,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones_like(w)}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    weights = np.clip(fitted.x, 0.0, None)  # SLSQP may step a rounding error below a bound
    return weights / weights.sum()


def _dimension_rows(keys: Sequence[Key]) -> dict[str, np.ndarray]:
    import numpy as np

    dims = np.array([d for _, d in keys])
    return {d: np.flatnonzero(dims == d) for d in DIMENSION_KEYS if (dims == d).any()}


def fit_stacked(matrix: np.ndarray, gold: np.ndarray, keys: Sequence[Key]) -> dict[str, list[float]]:
    """Per dimension, the members' simplex weights on the fit pairs `keys`; a dimension with too few usable pairs
    (a member that never answered it) gets none, and the jury leaves it unanswered."""
    import numpy as np

    weights = {}
    for d, rows in _dimension_rows(keys).items():
        usable = ~np.isnan(matrix[rows]).any(axis=1) & ~np.isnan(gold[rows])
        if usable.sum() >= matrix.shape[1]:
            weights[d] = simplex_weights(matrix[rows], gold[rows]).tolist()
    if not weights:
        raise DataError(
            f"too few pairs to fit {matrix.shape[1]} weights on any dimension (pairs with every member's score"
            " and the gold)",
            hint="fit on a larger split, or use --method mean or median",
        )
    return weights


def apply_stacked(matrix: np.ndarray, keys: Sequence[Key], weights: Mapping[str, Sequence[float]]) -> np.ndarray:
    """The weighted sum per pair (NaN where a member has no score, or the dimension has no weights)."""
    import numpy as np

    out = np.full(matrix.shape[0], np.nan)
    for d, rows in _dimension_rows(keys).items():
        if d in weights:
            out[rows] = matrix[rows] @ np.asarray(weights[d], dtype=np.float64)
    return out


def check_folds(n_folds: int) -> None:
    """Cross-fitting needs `MIN_JURY_FOLDS` folds at least (refused before any work)."""
    if n_folds < MIN_JURY_FOLDS:
        raise UsageError(
            f"cross-fitting needs at least {MIN_JURY_FOLDS} folds, got {n_folds}: each fold is scored by weights"
            " fitted on the others",
            where="--folds",
            hint=f"use --folds {DEFAULT_JURY_FOLDS} (or give --fit runs of another split)",
        )


def clinician_folds(keys: Sequence[Key], n_folds: int) -> np.ndarray:
    """Each pair's fold: `crossval.clinician_folds` over the videos' clinicians (every pair of a clinician in one
    fold), unshuffled."""
    from eval_scripts.baselines.crossval import clinician_folds as grouped_folds
    from mis_bench_dataset.video_ids import parse_video_id

    return grouped_folds([{"clinician": parse_video_id(video).clinician} for video, _ in keys], n_folds, None)


def crossfit_stacked(
    matrix: np.ndarray, gold: np.ndarray, keys: Sequence[Key], n_folds: int = DEFAULT_JURY_FOLDS
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Stacked predictions of the scored split, each fold's from weights fitted on the other folds only."""
    import numpy as np

    check_folds(n_folds)
    fold = clinician_folds(keys, n_folds)
    out = np.full(matrix.shape[0], np.nan)
    fitted = []
    for k in range(n_folds):
        train, test = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        weights = fit_stacked(matrix[train], gold[train], [keys[i] for i in train])
        out[test] = apply_stacked(matrix[test], [keys[i] for i in test], weights)
        fitted.append({"fold": k, "n_pairs_scored": int(test.size), "weights": weights})
    return out, fitted
