"""Agreement between model and expert scores beyond ICC(3,1), the way clinical measurement reports it.

Per block (a dimension, or the overall per-video mean), on exactly the (prediction, gold) pairs the
ICC uses: all six Shrout & Fleiss ICC forms, Krippendorff's alpha (interval), Pearson and Spearman
correlation, MAE, MSE, the mean bias (model minus expert) with the Bland & Altman (1986) 95% limits
of agreement, and range use (sd ratio model / expert, share of answers on integer values, number of
distinct values); beside range use, across dimensions, the halo (`halo`: the mean correlation between a
system's dimension scores over videos, beside the expert gold's). docs/agreement.md says which statistic
answers which question.

Everything is a function of a resample's unit counts (videos, or clinicians with all their videos), so one
shared draw gives every CI and no Python loop runs over resamples:

- the moment statistics (ICC forms, alpha, r, MAE, MSE, bias, limits, sd ratio, integer share) are
  sums of per-item features, through per-unit totals: one ``unit_counts @ unit_totals`` product (as
  `bootstrap` does for ICC(3,1)); resampling clinicians it is (B x 78) by (78 x F), all resamples at once;
- Spearman's rho and the number of distinct values need ranks: with the block's items grouped by
  distinct (prediction, gold) pair and counted per unit, a resample's weight per pair is a sparse product
  ``A @ unit_counts.T``, its average ranks a cumulative sum over those weights (ties, and copies of one
  video, share the mean rank), and the rank cross-product a sum over the distinct pairs. Whole counts: these
  are exact in any order, the same bits whatever the unit.

A resampled video drawn three times is three items, exactly what scipy / pingouin / krippendorff
see when given the resampled rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mis_bench_dataset.icc import (
    ICC_FORM_NAMES,
    AnovaMeanSquares,
    icc3_from_cross_products,
    icc_forms_from_mean_squares,
    mean_squares_from_moments,
)
from mis_bench_dataset.toolkit.defaults import DEFAULT_CONFIDENCE
from mis_bench_dataset.toolkit.errors import DataError

from .bootstrap import (
    BlockMoments,
    block_features,
    block_means,
    by_cluster,
    guarded_ci,
    one_blas_thread,
    percentile_ci,
    resampled_cross,
    resampled_sum_chunks,
    unit_chunks,
    unit_totals,
)
from .reporting_floor import Support, guarded_bounds
from .resampling_threads import share_out

__all__ = [
    "LOA_Z",
    "STATISTICS",
    "Statistic",
    "agreement",
    "agreement_blocks",
    "agreement_blocks_and_replicates",
    "agreement_point",
    "agreement_replicates",
    "agreement_weighted",
    "alpha_from_mean_squares",
    "halo",
    "krippendorff_alpha",
]

# Resamples whose ranks are computed together: a block's (distinct pairs x resamples) weights stay in cache
# (measured on 2 cores: 512 beats 256, 1,024 and all 10,000 at once, by up to 2x for continuous predictions),
# more for a block of few distinct pairs, up to `_RANK_CELLS` weights (fewer numpy calls per resample). Measured
# again with float32 weights (`_Plan.rank_dtype`): twice these, the same bytes, within 3% either way.
_RANK_ROWS = 512
_RANK_CELLS = 512 * 1024
# A block's pair weights come from a dense product when its (pairs x units) matrix has at most this many cells
# per stored count (measured on 2 cores, a block's rank statistics over 10,000 clinician resamples: whole-point
# answers, 34 pairs x 78 clinicians against 565 counts, 0.88 of the time with the dense product; tenths, 168 pairs
# against 909 counts, 1.17 times it).
_DENSE_PAIR_CELLS = 8
# Whole numbers up to here, and their halves, are exact in float32 (24-bit significand): rank weights in float32
# below it (`_Plan.rank_dtype`); and rho's cross term through float32 products of a weight and a rank (each at most
# the resample's items, N) while N^2 stays below it too (N < 2,896.3: 2 N^2 < 2^24).
_FLOAT32_WHOLE = 2.0**22
_FLOAT32_CROSS_ITEMS = 2896
# Bland & Altman (1986): the 95% limits of agreement are the mean difference +- 1.96 sd of the differences.
LOA_Z = 1.96


@dataclass(frozen=True)
class Statistic:
    """One reported statistic: its JSON key, how tables name it, and the items it needs at least."""

    key: str
    label: str
    question: str
    needs_variance: bool = True  # True: undefined on fewer than the ICC's minimum items


STATISTICS: tuple[Statistic, ...] = (
    *(
        Statistic(key, name, question)
        for key, name, question in (
            ("icc3_1", ICC_FORM_NAMES["icc3_1"], "consistency of one model score with the gold (the paper's metric)"),
            ("icc2_1", ICC_FORM_NAMES["icc2_1"], "absolute agreement: a constant offset counts as disagreement"),
            ("icc1_1", ICC_FORM_NAMES["icc1_1"], "one-way: raters interchangeable, offset and error pooled"),
            ("icc3_k", ICC_FORM_NAMES["icc3_k"], "consistency of the average of model and gold"),
            ("icc2_k", ICC_FORM_NAMES["icc2_k"], "absolute agreement of the average of model and gold"),
            ("icc1_k", ICC_FORM_NAMES["icc1_k"], "one-way reliability of the average"),
        )
    ),
    Statistic("krippendorff_alpha", "Krippendorff's alpha", "agreement beyond chance, interval metric"),
    Statistic("pearson", "Pearson r", "linear association, blind to offset and scale"),
    Statistic("spearman", "Spearman rho", "same order of the videos, blind to any monotone distortion"),
    Statistic("mae", "MAE", "typical distance in score points", needs_variance=False),
    Statistic("mse", "MSE", "squared distance in score points", needs_variance=False),
    Statistic("bias", "mean bias", "model minus expert on average, in score points", needs_variance=False),
    Statistic("sd_diff", "sd of differences", "spread of model minus expert, in score points"),
    Statistic("loa_low", "lower limit of agreement", "bias - 1.96 sd: 2.5% of differences fall below"),
    Statistic("loa_high", "upper limit of agreement", "bias + 1.96 sd: 2.5% of differences fall above"),
    Statistic("sd_ratio", "sd ratio model / expert", "range use: below 1 the model compresses toward the middle"),
    Statistic("integer_share", "share on integers", "range use: answers on whole points", needs_variance=False),
    Statistic("n_distinct", "distinct values", "range use: how many different scores the model gives", False),
)
STATISTIC_KEYS: tuple[str, ...] = tuple(s.key for s in STATISTICS)


# ------------------------------------------------------------------------------------------ moments


class _Moments:
    """Per-block feature columns: `bootstrap.block_features` (count, centred columns, products,
    squared difference), then |d|, "the prediction is a whole number", and the difference d = model -
    gold centred on the block's mean difference, and its square (the sd of d from its own centred
    sums: from the products it would cancel, giving 1e-8 instead of 0 for a model = gold + 1)."""

    EXTRA = ("abs_diff", "integer", "centred_diff", "centred_diff_sq")

    def __init__(self, ratings: np.ndarray, valid: np.ndarray) -> None:
        n, n_blocks, _ = ratings.shape
        base, self.layout = block_features(ratings, valid)
        self.means = block_means(ratings, valid)  # (D, 2): the centring, to recover the column means
        safe = np.where(valid[..., None], ratings, 0.0)
        diff = safe[..., 0] - safe[..., 1]
        centred_diff = np.where(valid, diff - (self.means[:, 0] - self.means[:, 1]), 0.0)
        extra = np.stack(
            [
                np.where(valid, np.abs(diff), 0.0),
                np.where(valid, safe[..., 0] == np.round(safe[..., 0]), 0.0),
                centred_diff,
                centred_diff**2,
            ],
            axis=-1,
        )
        self.width = self.layout.width + extra.shape[-1]
        blocks = np.concatenate([base.reshape(n, n_blocks, self.layout.width), extra], axis=-1)
        self.features = blocks.reshape(n, n_blocks * self.width)
        self.n_blocks = n_blocks

    @classmethod
    def weighted_rows(cls, predictions: np.ndarray, gold: np.ndarray, weights: np.ndarray):
        """(moments, sums): each row of `predictions` (R, n) against `gold` (n,) a block of n items all valid,
        summed under its row of `weights` (R, n): the sums (1, R * width) `__init__`'s features give, built per
        column from (R, n) arrays (no (n, R, width) feature array: a refitted map's R can be thousands)."""
        self = cls.__new__(cls)
        self.layout = BlockMoments(2)
        self.width, self.n_blocks = self.layout.width + len(cls.EXTRA), predictions.shape[0]
        gold = np.broadcast_to(gold, predictions.shape)
        self.means = np.stack([predictions.mean(axis=1), gold.mean(axis=1)], axis=-1)  # (R, 2), as block_means
        centred = [values - self.means[:, j : j + 1] for j, values in enumerate((predictions, gold))]
        for j, values in enumerate((predictions, gold)):  # a constant rater's centred column is 0 (block_features)
            centred[j] = np.where((values.max(axis=1) == values.min(axis=1))[:, None], 0.0, centred[j])
        diff = predictions - gold
        centred_diff = diff - (self.means[:, 0] - self.means[:, 1])[:, None]
        columns = [np.ones_like(diff), *centred]
        columns += [centred[j] * centred[m] for j, m in self.layout.pairs]
        columns += [diff**2, np.abs(diff), (predictions == np.round(predictions)).astype(np.float64)]
        columns += [centred_diff, centred_diff**2]
        sums = np.stack([np.einsum("rn,rn->r", weights, column) for column in columns], axis=-1)
        return self, sums.reshape(1, -1)

    def _extra(self, blocks: np.ndarray, name: str) -> np.ndarray:
        return blocks[..., self.layout.width + self.EXTRA.index(name)]

    def statistics(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """Every moment statistic per (resample, block) from summed features (R, D * width)."""
        blocks = sums.reshape(sums.shape[0], self.n_blocks, self.width)
        base = blocks[..., : self.layout.width]
        n_eff, linear, cross = resampled_cross(base, self.layout)
        safe_n = np.where(n_eff > 0, n_eff, 1.0)
        column_means = self.means[None] + linear / safe_n[..., None]
        ms = mean_squares_from_moments(cross, column_means, n_eff)
        out = icc_forms_from_mean_squares(ms, icc3_from_cross_products(cross))
        out["krippendorff_alpha"] = alpha_from_mean_squares(ms)
        cxx, cyy, cxy = cross[..., 0, 0], cross[..., 1, 1], cross[..., 0, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["pearson"] = np.where((cxx > 0) & (cyy > 0), np.clip(cxy / np.sqrt(cxx * cyy), -1, 1), np.nan)
            out["sd_ratio"] = np.where(cyy > 0, np.sqrt(cxx / np.where(cyy > 0, cyy, 1.0)), np.nan)
            spread = self._extra(blocks, "centred_diff_sq") - self._extra(blocks, "centred_diff") ** 2 / safe_n
            out["sd_diff"] = np.sqrt(np.maximum(spread, 0.0) / (n_eff - 1))
        out["bias"] = column_means[..., 0] - column_means[..., 1]
        out["loa_low"] = out["bias"] - LOA_Z * out["sd_diff"]
        out["loa_high"] = out["bias"] + LOA_Z * out["sd_diff"]
        out["mse"] = base[..., -1] / safe_n
        out["mae"] = self._extra(blocks, "abs_diff") / safe_n
        out["integer_share"] = self._extra(blocks, "integer") / safe_n
        for key, value in out.items():
            needs = next(s.needs_variance for s in STATISTICS if s.key == key)
            out[key] = np.where(n_eff >= (2 if needs else 1), value, np.nan)
        return out


def alpha_from_mean_squares(ms: AnovaMeanSquares) -> np.ndarray:
    """Krippendorff's alpha, interval metric, of a complete (n x k) layout from its mean squares.

    With every unit rated by all k coders, D_o = 2 MS_W and D_e = 2 SS_T / (nk - 1), so
    alpha = 1 - (nk - 1) MS_W / SS_T (Krippendorff 2011, "Computing Krippendorff's alpha-reliability",
    with the interval distance (c - k)^2). Undefined (NaN) when every value is the same.
    """
    n, k = ms.n, ms.k
    ss_total = ms.rows * (n - 1) + ms.columns * (k - 1) + ms.error * (n - 1) * (k - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ss_total > 0, 1 - (n * k - 1) * ms.within / np.where(ss_total > 0, ss_total, 1.0), np.nan)


def krippendorff_alpha(matrix: np.ndarray | Sequence[Sequence[float]]) -> float | np.ndarray:
    """Krippendorff's alpha (interval) of a complete (n items x k coders) matrix, or batched (..., n, k)."""
    from mis_bench_dataset.icc import cross_products

    array = np.asarray(matrix, dtype=np.float64)
    cross = cross_products(array)  # validates: finite, n >= 2, k >= 2
    value = alpha_from_mean_squares(mean_squares_from_moments(cross, array.mean(axis=-2), array.shape[-2]))
    return float(value) if np.ndim(value) == 0 else value


# ------------------------------------------------------------------------------------------ ranks


def _group_sums(groups: np.ndarray, n_groups: int, members: np.ndarray, n_members: int):
    """The (n_groups x n_members) CSR matrix counting the i with (groups[i], members[i]): `matrix @ x` sums the
    rows of x by group (built directly in CSR form: the product reads it as it is, no transpose per call; a
    repeated (group, member), items of one clinician in one group, is one entry holding its count)."""
    from scipy import sparse

    order = np.argsort(groups, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(groups, minlength=n_groups))])
    matrix = sparse.csr_matrix((np.ones(groups.size), members[order], indptr), shape=(n_groups, n_members))
    matrix.sum_duplicates()
    return matrix


class _BlockRanks:
    """One block's items grouped by distinct (prediction, gold) pair and counted per resampling unit (`units`:
    each item's unit, of `n` units), and the pairs by distinct prediction and by distinct gold value: a resample's
    weight per pair is one sparse product with its unit counts, its weights per prediction and per gold value
    sums of those (exact: whole counts), not two more products with the counts."""

    def __init__(self, pred: np.ndarray, gold: np.ndarray, items: np.ndarray, n: int) -> None:
        pred_values, pred_group = np.unique(pred, return_inverse=True)
        gold_values, gold_group = np.unique(gold, return_inverse=True)
        pairs, pair_group = np.unique(np.stack([pred_group, gold_group], axis=1), axis=0, return_inverse=True)
        self.pair_pred, self.pair_gold = pairs[:, 0], pairs[:, 1]  # sorted by prediction, then gold
        self.n_pairs = len(pairs)
        pair_index = np.arange(len(pairs))
        self.by_pair = _group_sums(np.asarray(pair_group).ravel(), len(pairs), items, n)
        # Few pairs and few units (whole-point answers, clinicians): one dense BLAS product beats the sparse one.
        dense = len(pairs) * n <= _DENSE_PAIR_CELLS * self.by_pair.nnz
        self.by_pair_dense = self.by_pair.toarray() if dense else None
        # Every prediction with one gold value (e.g. continuous predictions): its pair's weight is its own.
        self.one_pair_each = len(pairs) == len(pred_values)
        self.pred_of_pair = (
            None if self.one_pair_each else _group_sums(self.pair_pred, len(pred_values), pair_index, len(pairs))
        )
        self.gold_of_pair = _group_sums(self.pair_gold, len(gold_values), pair_index, len(pairs))
        self._typed: dict = {}

    def _matrices(self, dtype) -> tuple:
        """(by_pair, by_pair_dense, pred_of_pair, gold_of_pair) with entries of `dtype` (whole counts: exact)."""
        if dtype not in self._typed:
            self._typed[dtype] = tuple(
                None if matrix is None else matrix.astype(dtype, copy=False)  # float64: the matrices themselves
                for matrix in (self.by_pair, self.by_pair_dense, self.pred_of_pair, self.gold_of_pair)
            )
        return self._typed[dtype]

    def statistics(self, counts_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Spearman rho, number of distinct predictions) of each resample; counts_t is (units, R), one
        column per resample (contiguous, so the sparse products read it without a copy), float32 where that is
        exact (`_Plan.rank_dtype`): the weights and ranks then take half the memory traffic."""
        by_pair, by_pair_dense, pred_of_pair, gold_of_pair = self._matrices(counts_t.dtype)
        # (distinct pairs, R)
        pair_weight = sparse_times(by_pair, counts_t) if by_pair_dense is None else by_pair_dense @ counts_t
        pred_weight = pair_weight if self.one_pair_each else sparse_times(pred_of_pair, pair_weight)
        gold_weight = sparse_times(gold_of_pair, pair_weight)
        pred_rank, gold_rank = _mid_ranks(pred_weight), _mid_ranks(gold_weight)
        n_eff = gold_weight.sum(axis=0, dtype=np.float64)
        centre = n_eff * ((n_eff + 1) / 2) ** 2  # sum of w * r * s when r, s are at their mean (N + 1) / 2
        # Whole counts and half-integer ranks: every product and sum below is exact, in any order (in float64:
        # a float32 weight or rank is the same number there).
        s_xx = np.einsum("ij,ij,ij->j", pred_weight, pred_rank, pred_rank, dtype=np.float64) - centre
        s_yy = np.einsum("ij,ij,ij->j", gold_weight, gold_rank, gold_rank, dtype=np.float64) - centre
        if counts_t.dtype == np.float32 and n_eff.max(initial=0.0) < _FLOAT32_CROSS_ITEMS:
            # Each pair's weight times its gold rank, and their sums per prediction, stay multiples of 1/2 below
            # 2^23: exact in float32, so the cross term is one sum over the distinct predictions, not the pairs.
            weighted = pair_weight * gold_rank[self.pair_gold]
            per_pred = weighted if self.one_pair_each else sparse_times(pred_of_pair, weighted)
            s_xy = np.einsum("ij,ij->j", pred_rank, per_pred, dtype=np.float64) - centre
        else:
            pair_rank = pred_rank if self.one_pair_each else pred_rank[self.pair_pred]
            pair_gold = gold_rank[self.pair_gold]
            s_xy = np.einsum("ij,ij,ij->j", pair_weight, pair_rank, pair_gold, dtype=np.float64) - centre
        # All tied gives s_xx exactly 0 (both terms are the same expression); a real spread is >= about N.
        defined = (s_xx > 0.5) & (s_yy > 0.5) & (n_eff >= 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.where(defined, np.clip(s_xy / np.sqrt(s_xx * s_yy), -1, 1), np.nan)
        return rho, np.count_nonzero(pred_weight, axis=0).astype(np.float64)  # weights are >= 0


def sparse_times(matrix, dense: np.ndarray) -> np.ndarray:
    """`matrix @ dense`, a CSR matrix times a 2-D array, into zeros this function wrote first.

    scipy's product reads its zeroed output before it writes: on fresh pages the read maps the kernel's zero page,
    which the write then replaces, flushing the address translations of every core running a thread of the process
    (`bootstrap.resample_counts`; measured on 2 cores, another thread running: one rank statistic's products over
    10,000 resamples of 9 blocks in 40 ms, not 80). The same sums in the same order: scipy's own loop, called with
    this output (scipy's product where that loop is not found)."""
    dense = np.ascontiguousarray(dense, dtype=matrix.dtype)
    try:
        from scipy.sparse._sparsetools import csr_matvecs
    except ImportError:  # a scipy that moved it: its public product, the same sums
        return matrix @ dense
    out = np.empty((matrix.shape[0], dense.shape[1]), dtype=matrix.dtype)
    out.fill(0.0)
    (n_rows, n_columns), n_vectors = matrix.shape, dense.shape[1]
    csr_matvecs(n_rows, n_columns, n_vectors, matrix.indptr, matrix.indices, matrix.data, dense.ravel(), out.ravel())
    return out


def _mid_ranks(weights: np.ndarray) -> np.ndarray:
    """Average rank of each distinct value (rows, in increasing order) given how many items hold it in
    each resample (columns): ties share the mean rank, the running total minus (w - 1) / 2.

    The running total goes row by row, each step one vectorised add over all resamples: numpy's
    cumsum along the first axis walks each column with a stride (about 6x slower for 1,000 distinct
    values x 1,024 resamples). Whole counts: exact, the same numbers in any order.
    """
    ranks = np.empty_like(weights)
    if len(weights):
        ranks[0] = weights[0]
    for row in range(1, len(weights)):
        np.add(ranks[row - 1], weights[row], out=ranks[row])
    ranks -= (weights - 1) / 2
    return ranks


class _Plan:
    """Everything a set of blocks needs, built once: the moment features and the rank groupings, the latter per
    resampling unit (`units`: each item's unit code, of `n_units`; None: every item its own)."""

    def __init__(self, ratings: np.ndarray, valid: np.ndarray, units: np.ndarray | None = None, n_units: int = 0):
        ratings = np.asarray(ratings, dtype=np.float64)
        valid = np.asarray(valid, dtype=bool)
        if ratings.ndim != 3 or ratings.shape[-1] != 2 or valid.shape != ratings.shape[:2]:
            raise DataError(
                f"agreement needs (n, blocks, 2) ratings and an (n, blocks) mask, got {ratings.shape} and {valid.shape}"
            )
        self.n = ratings.shape[0]
        self.moments = _Moments(ratings, valid)
        self.ranks: list[_BlockRanks | None] = []
        units, n_units = (np.arange(self.n), self.n) if units is None else (np.asarray(units), n_units)
        self.n_units = n_units
        for block in range(ratings.shape[1]):
            items = np.flatnonzero(valid[:, block])
            pair = ratings[items, block]
            self.ranks.append(_BlockRanks(pair[:, 0], pair[:, 1], units[items], n_units) if items.size else None)

    def rank_statistics(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Spearman rho, distinct predictions), each (R, blocks), of the resamples whose unit counts are the
        rows of `counts` (R, units): each block's resamples in pieces of about `_RANK_CELLS` (pairs x resamples),
        shared out over the cores (`resampling_threads`; each piece written whole by one thread)."""
        rho = np.full((counts.shape[0], len(self.ranks)), np.nan)
        distinct = np.full_like(rho, np.nan)
        counts_t = np.ascontiguousarray(counts.T, dtype=self.rank_dtype(counts))
        pieces = []
        for block, ranks in enumerate(self.ranks):
            if ranks is not None:
                rows = max(_RANK_ROWS, _RANK_CELLS // ranks.n_pairs)
                pieces += [(block, ranks, slice(start, start + rows)) for start in range(0, counts.shape[0], rows)]

        def one_piece(piece: tuple[int, _BlockRanks, slice]) -> None:
            block, ranks, part = piece
            rho[part, block], distinct[part, block] = ranks.statistics(np.ascontiguousarray(counts_t[:, part]))

        share_out(pieces, one_piece)
        return rho, distinct

    def rank_dtype(self, counts: np.ndarray):
        """float32 when every rank weight, running total and (doubled) mid-rank of these resamples is a whole number
        below 2^23, so exact in float32 (a resample holds at most its largest unit count times the items), and
        the products and sums of `_BlockRanks.statistics` in float64 are the same as from float64 weights and
        ranks; float64 otherwise (measured on 2 cores: a score's rank statistics over 10,000 clinician resamples
        1.4x faster, tenths 126 -> 87 ms, hundredths 366 -> 266 ms, the same bits)."""
        largest = float(np.max(counts, initial=0.0))
        return np.float32 if largest * self.n < _FLOAT32_WHOLE else np.float64

    def point(self) -> dict[str, np.ndarray]:
        """Every statistic of each block on the full sample, {key: (D,)}: every unit once (whatever the unit,
        every item once: the same ranks, exact; the same moment sums, in the same order)."""
        out = self.moments.statistics(self.moments.features.sum(axis=0, keepdims=True))
        out["spearman"], out["n_distinct"] = self.rank_statistics(np.ones((1, self.n_units)))
        return {key: out[key][0] for key in STATISTIC_KEYS}


# ------------------------------------------------------------------------------------------ API


def agreement_point(ratings: np.ndarray, valid: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic of each block on its valid items: {key: (D,)}; ratings (n, D, 2) = (model, gold)."""
    return _Plan(ratings, valid).point()


def _resampling_plan(ratings: np.ndarray, valid: np.ndarray, indices) -> _Plan:
    """The plan of `ratings` whose ranks are grouped by the resampling unit of `indices` (clinicians, or items)."""
    clusters = indices.clusters if by_cluster(indices) else None
    return _Plan(ratings, valid, clusters, np.asarray(ratings).shape[0] if clusters is None else indices.n_clusters)


def agreement_replicates(ratings: np.ndarray, valid: np.ndarray, indices) -> dict[str, np.ndarray]:
    """Every statistic of each block in each resample of the shared draw: {key: (B, D)}.

    `indices`: a video index matrix or a `resampling.Resampling`. Resampling clinicians, the moment statistics
    of all resamples are one (B x C) @ (C x F) product of the plan's count matrix with the per-clinician totals
    of the features, and the ranks' weights sparse products with the same counts."""
    return _replicates(_resampling_plan(ratings, valid, indices), indices)


def _replicates(plan: _Plan, indices) -> dict[str, np.ndarray]:
    """`agreement_replicates` of a plan already grouped by the resampling unit of `indices`."""
    totals = unit_totals(indices, plan.moments.features)
    out = {key: np.empty((indices.shape[0], len(plan.ranks))) for key in STATISTIC_KEYS}
    # A held clinician count matrix gives the ranks all resamples at once, in pieces sized to each block's pairs
    # (a block of few pairs is then one piece, not one per chunk); otherwise the ranks go chunk by chunk.
    ranks_whole = by_cluster(indices) and indices.counts_shared
    for rows, counts in unit_chunks(indices, plan.n):
        for key, value in plan.moments.statistics(counts @ totals).items():
            out[key][rows] = value
        if not ranks_whole:
            out["spearman"][rows], out["n_distinct"][rows] = plan.rank_statistics(counts)
        del counts  # before the next chunk is drawn: one chunk's counts in memory at a time
    if ranks_whole:
        with one_blas_thread():
            out["spearman"], out["n_distinct"] = plan.rank_statistics(indices.cluster_counts())
    return out


def agreement_weighted(predictions: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """The moment statistics (every ICC form, alpha, r, MAE, MSE, bias, limits, sd ratio, integer share; not
    Spearman) of the same n items under each row of `weights` (R, n), where each row also has predictions of
    its own (R, n) against one gold (n,): {key: (R,)}. For statistics of a model refitted in every resample
    (a calibration map): each row is a block of `_Moments`, its sums one weighted product, no loop over rows.
    Predictions of one row (1, n) are shared by every row of `weights`: one block, its sums one product.
    """
    predictions = np.asarray(predictions, dtype=np.float64)
    n_rows, n = predictions.shape
    if n_rows == 1:
        ratings = np.stack([predictions[0], np.asarray(gold, dtype=np.float64)], -1)[:, None]
        moments = _Moments(ratings, np.ones((n, 1), dtype=bool))
        sums = np.asarray(weights, dtype=np.float64) @ moments.features
        return {key: value[:, 0] for key, value in moments.statistics(sums).items()}
    moments, sums = _Moments.weighted_rows(
        predictions, np.asarray(gold, dtype=np.float64), np.asarray(weights, dtype=np.float64)
    )
    return {key: value[0] for key, value in moments.statistics(sums).items()}


def agreement_blocks(ratings: np.ndarray, valid: np.ndarray, indices: np.ndarray | None, **options) -> list[dict]:
    """Per block {key: {"value", "ci"}} (STATISTICS order): the JSON the scoring rules attach; `options` and the
    rules as `agreement_blocks_and_replicates`, without its replicates."""
    return agreement_blocks_and_replicates(ratings, valid, indices, **options)[0]


def agreement_blocks_and_replicates(
    ratings: np.ndarray,
    valid: np.ndarray,
    indices: np.ndarray | None,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    min_items: int = 3,
    supports: Sequence[Support] | None = None,
) -> tuple[list[dict[str, dict]], dict[str, np.ndarray] | None]:
    """Per block {key: {"value", "ci"}} (STATISTICS order), and the replicates its intervals come from ({key:
    (B, D)}; None without resamples): a caller that reports some of the same statistics again (scoring's ICC and
    MSE) reads them, not a second bootstrap.

    A statistic that needs variance is undefined (NaN, no CI) on fewer than `min_items` items; an
    undefined value never gets an interval. `indices` None: no CIs. `supports` (one `reporting_floor.Support`
    per block): each CI under the one rule, a withheld one None with its reason in the entry's "withheld".
    """
    n_items = np.asarray(valid, dtype=bool).sum(axis=0)
    # With resamples, one plan grouped by their unit gives the point (every unit once) and the replicates.
    plan = _Plan(ratings, valid) if indices is None else _resampling_plan(ratings, valid, indices)
    point = plan.point()
    boot = undefined = intervals = None
    if indices is not None:
        boot = _replicates(plan, indices)
        stacked = np.stack([boot[key] for key in STATISTIC_KEYS], axis=1)  # (B, S, D)
        intervals = percentile_ci(stacked, confidence, axis=0)  # (S, D, 2)
        undefined = np.isnan(stacked).sum(axis=0)  # (S, D): every figure's undefined resamples, one pass
    entries = []
    for block in range(n_items.size):
        entry = {}
        for s, stat in enumerate(STATISTICS):
            value = float(point[stat.key][block])
            if (stat.needs_variance and n_items[block] < min_items) or n_items[block] == 0:
                value = float("nan")
            ci = None if intervals is None or np.isnan(value) else intervals[s, block].tolist()
            entry[stat.key] = {"value": value, "ci": ci}
            if supports is not None and ci is not None:
                entry[stat.key]["ci"], facts = guarded_bounds(
                    undefined[s, block], indices.shape[0], supports[block], ci, counted=stat.key in _COUNTED
                )
                entry[stat.key]["withheld"] = facts["withheld"]
        entries.append(entry)
    return entries, boot


# Range use as counted on the model's own answers: every resample of a judge that answers only whole points has
# an integer share of 1, a zero-width interval that is a fact about the judge, not a certainty the data lack.
_COUNTED = frozenset({"integer_share", "n_distinct"})


def agreement(predictions: Sequence[float], gold: Sequence[float]) -> dict[str, float]:
    """Every statistic of one set of (prediction, gold) pairs (no CIs): {key: value}.

    Examples:
        >>> stats = agreement([3.0, 4.0, 2.0, 5.0], [2.0, 3.0, 1.0, 4.0])  # the model is one point high
        >>> stats["icc3_1"], round(stats["icc2_1"], 3), stats["bias"], stats["sd_diff"]
        (1.0, 0.769, 1.0, 0.0)
    """
    pred = np.asarray(predictions, dtype=np.float64)
    ref = np.asarray(gold, dtype=np.float64)
    if pred.shape != ref.shape or pred.ndim != 1:
        raise DataError(f"predictions {pred.shape} and gold {ref.shape} must be two equal-length vectors")
    if not (np.isfinite(pred).all() and np.isfinite(ref).all()):
        raise DataError("agreement got a non-finite value; drop unparsed items first")
    point = agreement_point(np.stack([pred, ref], axis=-1)[:, None, :], np.ones((pred.size, 1), dtype=bool))
    return {key: float(value[0]) for key, value in point.items()}


# ------------------------------------------------------------------------------------------ halo

HALO_MIN_VIDEOS = 3  # a dimension pair's correlation needs at least this many videos scored on both
# Per dimension pair: [m, m dx, m dy, m dx^2, m dy^2, m dx dy], feature by feature (each feature's pairs side by
# side: a resample's sums of one feature are one contiguous run, not every sixth number).
_HALO_FEATURES = 6


class _HaloPlan:
    """Per dimension pair (i < j): the videos scored on both (m) and their scores centred on those videos'
    means, as summable feature columns, so a resample's pairwise Pearson r is a function of `counts @ F`."""

    def __init__(self, scores: np.ndarray, present: np.ndarray) -> None:
        scores = np.asarray(scores, dtype=np.float64)
        present = np.asarray(present, dtype=bool) & ~np.isnan(scores)
        self.i, self.j = np.triu_indices(scores.shape[1], k=1)
        both = present[:, self.i] & present[:, self.j]  # (n, P)
        safe = np.where(present, scores, 0.0)
        x, y = safe[:, self.i], safe[:, self.j]
        n_both = both.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mx = np.where(n_both > 0, (x * both).sum(axis=0) / np.maximum(n_both, 1), 0.0)
            my = np.where(n_both > 0, (y * both).sum(axis=0) / np.maximum(n_both, 1), 0.0)
        dx, dy = np.where(both, x - mx, 0.0), np.where(both, y - my, 0.0)
        self.features = np.concatenate([both * 1.0, dx, dy, dx * dx, dy * dy, dx * dy], axis=1)  # (n, 6 P)
        self.n_pairs = len(self.i)

    def correlations(self, sums: np.ndarray) -> np.ndarray:
        """Pearson r of every pair in every resample: (R, P); NaN where a pair has under HALO_MIN_VIDEOS videos or
        no spread on one side."""
        s = sums.reshape(sums.shape[0], _HALO_FEATURES, self.n_pairs)
        n, sx, sy, sxx, syy, sxy = (s[:, k] for k in range(_HALO_FEATURES))
        safe_n = np.where(n > 0, n, 1.0)
        cxx, cyy, cxy = sxx - sx * sx / safe_n, syy - sy * sy / safe_n, sxy - sx * sy / safe_n
        # A side constant in the resample: its centred sum is 0 up to cancellation noise.
        spread = (cxx > 1e-9 * np.maximum(sxx, 1e-300)) & (cyy > 1e-9 * np.maximum(syy, 1e-300))
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.clip(cxy / np.sqrt(np.where(spread, cxx * cyy, 1.0)), -1, 1)
        return np.where(spread & (n >= HALO_MIN_VIDEOS), r, np.nan)


def _halo_mean(r: np.ndarray) -> np.ndarray:
    defined = ~np.isnan(r)
    total = np.where(defined, r, 0.0).sum(axis=-1)
    count = defined.sum(axis=-1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _halo_replicates(plans: list[_HaloPlan], points: list[np.ndarray], indices) -> np.ndarray:
    """Each system's halo in each resample: (B, systems), one `counts @ F` product for all of them (through the
    per-clinician totals when `indices` is a clinician `resampling.Resampling`: `bootstrap.resampled_sum_chunks`),
    chunk by chunk."""
    features = np.concatenate([p.features for p in plans], axis=1)
    width = plans[0].features.shape[1]
    boot = np.empty((indices.shape[0], len(plans)))
    for rows, sums in resampled_sum_chunks(indices, features):
        for k, plan in enumerate(plans):
            r = plan.correlations(sums[:, k * width : (k + 1) * width])
            boot[rows, k] = _halo_mean(np.where(np.isnan(points[k]), np.nan, r))
    return boot


def halo(
    systems: Sequence[np.ndarray],
    present: np.ndarray,
    indices: np.ndarray | None,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    support: Support | None = None,
) -> list[dict]:
    """Halo of each (videos x dimensions) score matrix in `systems` on the same `present` pairs: the mean
    Pearson correlation between two dimensions' scores over the videos scored on both, over the dimension
    pairs where it is defined for every system (at least HALO_MIN_VIDEOS videos, a spread on both sides:
    the same pairs for all, so the values compare), with a percentile CI
    over the shared index matrix `indices` (each resample averages the pairs defined at the point estimate
    and in that resample). A judge that rates every dimension of a video alike has a halo near 1; the expert
    gold's, on the same pairs, is the reference. Also each dimension pair's own r and its number of videos.

    Examples:
        >>> scores = np.array([[1.0, 2.0, 5.0], [2.0, 3.0, 4.0], [3.0, 5.0, 3.0], [4.0, 4.0, 1.0]])
        >>> round(halo([scores], np.ones((4, 3), bool), None)[0]["value"], 3)  # (0.8 - 0.983 - 0.680) / 3
        -0.288
    """
    plans = [_HaloPlan(scores, present) for scores in systems]
    own = [plan.correlations(plan.features.sum(axis=0, keepdims=True))[0] for plan in plans]
    common = np.logical_and.reduce([~np.isnan(r) for r in own]) if own else None
    points = [np.where(common, r, np.nan) for r in own]  # the same dimension pairs for every system
    boot = None if indices is None else _halo_replicates(plans, points, indices)
    out = []
    for k, (plan, r, mine) in enumerate(zip(plans, points, own, strict=True)):
        value = float(_halo_mean(r))
        ci = reason = None
        if boot is not None and not np.isnan(value):
            if support is None:
                ci = percentile_ci(boot[:, k], confidence).tolist()
            else:
                ci, facts = guarded_ci(boot[:, k], support, confidence)
                reason = facts["withheld"]
        n_videos = plan.features[:, : plan.n_pairs].sum(axis=0)
        out.append(
            {
                "value": value,
                "ci": ci,
                **({"withheld": reason} if support is not None else {}),
                "n_pairs": int((~np.isnan(r)).sum()),  # averaged: defined for every system
                "n_pairs_total": plan.n_pairs,
                "pairs": [
                    {"i": int(i), "j": int(j), "r": float(v), "n": int(m)}
                    for i, j, v, m in zip(plan.i, plan.j, mine, n_videos, strict=True)
                ],
            }
        )
    return out
