"""How a jury combines its members' scores of the same (video, dimension) pairs.

- `mean`, `median`: the members' scores of a pair, combined with no fitting.
- `stacked`: per dimension, non-negative weights (no intercept) fitted by `scipy.optimize.nnls` to the gold of a
  fit split, then the weighted sum. Fitted on another split's runs (`fit_stacked`), or cross-fitted on the scored
  split itself (`crossfit_stacked`): clinician folds (scikit-learn's `GroupKFold`), each fold's pairs predicted
  by weights fitted on the other folds' clinicians only, so no score is made by weights that saw its gold.

Pairs a member did not answer follow one stated rule (`JURY_MISSING`): `require-all` (the default) leaves the
jury's answer empty wherever any member has none, so the pair stays in the jury's predictions as unanswered and
counts against its coverage like any unanswered pair; `available` combines the members that answered (mean and
median only: stacked weights need every member). Nothing is dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError

Key = tuple[str, str]
JURY_METHODS = ("mean", "median", "stacked")
JURY_MISSING = ("require-all", "available")
DEFAULT_JURY_MISSING = "require-all"
DEFAULT_JURY_FOLDS = 5

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


def nnls_weights(matrix: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """scipy.optimize.nnls of `gold` on the members' scores (rows with every member and the gold)."""
    import numpy as np
    from scipy.optimize import nnls

    keep = ~np.isnan(matrix).any(axis=1) & ~np.isnan(gold)
    if keep.sum() < matrix.shape[1]:
        raise DataError(
            f"too few pairs to fit {matrix.shape[1]} weights ({int(keep.sum())} with every member and the gold)",
            hint="fit on a larger split, or use --method mean or median",
        )
    return nnls(matrix[keep], gold[keep])[0]


def _dimension_rows(keys: Sequence[Key]) -> dict[str, np.ndarray]:
    import numpy as np

    dims = np.array([d for _, d in keys])
    return {d: np.flatnonzero(dims == d) for d in DIMENSION_KEYS if (dims == d).any()}


def fit_stacked(matrix: np.ndarray, gold: np.ndarray, keys: Sequence[Key]) -> dict[str, list[float]]:
    """Per dimension, the NNLS weights of the members on the fit pairs `keys`."""
    return {d: nnls_weights(matrix[rows], gold[rows]).tolist() for d, rows in _dimension_rows(keys).items()}


def apply_stacked(matrix: np.ndarray, keys: Sequence[Key], weights: Mapping[str, Sequence[float]]) -> np.ndarray:
    """The weighted sum per pair (NaN where a member has no score, or the dimension has no weights)."""
    import numpy as np

    out = np.full(matrix.shape[0], np.nan)
    for d, rows in _dimension_rows(keys).items():
        if d in weights:
            out[rows] = matrix[rows] @ np.asarray(weights[d], dtype=np.float64)
    return out


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

    fold = clinician_folds(keys, n_folds)
    out = np.full(matrix.shape[0], np.nan)
    fitted = []
    for k in range(n_folds):
        train, test = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        weights = fit_stacked(matrix[train], gold[train], [keys[i] for i in train])
        out[test] = apply_stacked(matrix[test], [keys[i] for i in test], weights)
        fitted.append({"fold": k, "n_pairs_scored": int(test.size), "weights": weights})
    return out, fitted
