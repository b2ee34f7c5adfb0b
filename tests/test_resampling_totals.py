"""Clinician resampling through per-clinician totals (issue 47): every statistic of a resample written through
sums is one row of ``cluster_counts @ cluster_totals`` ((B x C) by (C x F)), not of the (B x n) item counts.

The references are independent: a loop that draws clinicians by hand (`_independent.clinician_rows`), lists the
drawn clinicians' videos (one drawn twice, twice) and computes each statistic on those rows with the point path,
which tests/test_metric_agreement.py holds to pingouin, scipy and krippendorff; and the item-count product
``counts() @ features`` that the bootstrap computed before (the sums of one resample in another order: equal to
1e-12, not to the bit, since floating-point addition is not associative). Ranks add whole counts: exact.
By video the totals are the features themselves, so the paper's protocol keeps its numbers to the bit.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import STIMULI
from mis_icc_metric import agreement_statistics, make_resampling
from mis_icc_metric.agreement_statistics import STATISTIC_KEYS, agreement_point, agreement_replicates, halo
from mis_icc_metric.bootstrap import bootstrap_blocks, bootstrap_indices, resample_counts, resampled_sums

from _independent import clinician_rows

TOLERANCE = 1e-12


def _video(clinician: int, index: int) -> str:
    """The id of a clinician's index-th video (up to 24: eight stimuli at three time points)."""
    return f"CL{clinician:02d}_T{1 + index // len(STIMULI)}_{STIMULI[index % len(STIMULI)]}"


def _clustered(sizes: list[int], seed: int, step: float = 0.5):
    """Videos of clinicians with `sizes` videos each, (n, 3, 2) ratings (two dimensions and their mean) on a
    `step` grid with ties, and a valid mask with a few unparsed pairs."""
    rng = np.random.default_rng(seed)
    videos = [_video(c, i) for c, size in enumerate(sizes) for i in range(size)]
    n = len(videos)
    skill = np.repeat(rng.normal(0, 0.5, len(sizes)), sizes)[:, None]
    gold = np.clip(np.round((3 + skill + rng.normal(0, 0.6, (n, 2))) / step) * step, 1, 5)
    pred = np.clip(np.round((gold + rng.normal(0, 0.7, (n, 2))) / step) * step, 1, 5)
    valid = rng.random((n, 2)) > 0.1
    both = valid.all(axis=1)
    mean = np.stack([pred.mean(axis=1), gold.mean(axis=1)], axis=-1)
    ratings = np.concatenate([np.stack([pred, gold], axis=-1), mean[:, None]], axis=1)
    return videos, ratings, np.concatenate([valid, both[:, None]], axis=1)


def _assert_close(ours: np.ndarray, reference: np.ndarray, what: str) -> None:
    assert np.array_equal(np.isnan(ours), np.isnan(reference)), f"{what}: undefined resamples differ"
    np.testing.assert_allclose(ours, reference, rtol=0, atol=TOLERANCE, equal_nan=True, err_msg=what)


@pytest.mark.parametrize(
    "sizes",
    [
        [1, 2, 5, 3, 4, 2, 5, 1, 3, 6, 2],
        [1, 1, 2, 1],  # four clinicians, five videos: resamples of copies of one video are undefined (NaN)
    ],
)
@pytest.mark.parametrize("pair_weights", ["sparse", "dense"])
@pytest.mark.parametrize("rank_dtype", ["float32", "float64"])
def test_every_agreement_statistic_by_clinician_equals_a_per_resample_loop(
    sizes, pair_weights, rank_dtype, monkeypatch
):
    # Both ways of weighting a block's distinct pairs: the sparse product, and the dense one used for few pairs;
    # rank weights in float32 (exact for these counts, the default) and in float64 (beyond float32's whole numbers).
    monkeypatch.setattr(agreement_statistics, "_DENSE_PAIR_CELLS", 0 if pair_weights == "sparse" else 10**9)
    if rank_dtype == "float64":
        monkeypatch.setattr(agreement_statistics, "_FLOAT32_WHOLE", 0.0)
    videos, ratings, valid = _clustered(sizes, seed=4)
    plan = make_resampling(videos, 120, 11, "clinician")
    ours = agreement_replicates(ratings, valid, plan)
    loop = {key: np.empty((120, ratings.shape[1])) for key in STATISTIC_KEYS}
    for b, rows in enumerate(clinician_rows(videos, 120, 11)):  # drawn by hand, not from `plan`
        point = agreement_point(ratings[rows], valid[rows])
        for key in STATISTIC_KEYS:
            loop[key][b] = point[key]
    assert any(np.isnan(loop[key]).any() for key in STATISTIC_KEYS) == (len(sizes) < 5)  # undefined ones exercised
    for key in STATISTIC_KEYS:
        if key in ("spearman", "n_distinct", "integer_share"):
            np.testing.assert_array_equal(ours[key], loop[key], err_msg=key)  # whole counts: exact
        else:
            _assert_close(ours[key], loop[key], key)


def test_icc_bootstrap_by_clinician_equals_the_loop_and_counts_the_same_undefined_resamples():
    videos, ratings, valid = _clustered([2, 1, 1, 1, 2], seed=9, step=1.0)
    plan = make_resampling(videos, 200, 5, "clinician")
    ours = bootstrap_blocks(ratings, valid, plan)
    loop = np.array([agreement_point(ratings[rows], valid[rows])["icc3_1"] for rows in clinician_rows(videos, 200, 5)])
    mse = np.array([agreement_point(ratings[rows], valid[rows])["mse"] for rows in clinician_rows(videos, 200, 5)])
    assert np.isnan(loop).sum() > 0
    _assert_close(ours["icc"], loop, "icc")
    _assert_close(ours["mse"], mse, "mse")


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 7), min_size=1, max_size=12),
    resamples=st.integers(1, 40),
    seed=st.integers(0, 999),
    width=st.integers(1, 9),
)
def test_sums_through_cluster_totals_equal_the_item_count_product(sizes, resamples, seed, width):
    """What every sum-based statistic (ICC forms, MSE, MAE, bias, limits, r, alpha, halo) reads."""
    videos = [_video(c, i) for c, size in enumerate(sizes) for i in range(size)]
    features = np.random.default_rng(seed).normal(0, 3, (len(videos), width))
    plan = make_resampling(videos, resamples, seed, "clinician")
    ours = resampled_sums(plan, features)
    before = plan.counts() @ features  # the (B x n) item counts the bootstrap multiplied before
    np.testing.assert_allclose(ours, before, rtol=1e-13, atol=1e-12)
    # the plan's count matrix: each clinician drawn, per resample, as often as its videos are
    counts = plan.cluster_counts()
    assert counts.shape == (resamples, len(sizes)) and (counts.sum(axis=1) == len(sizes)).all()
    np.testing.assert_array_equal(counts[:, plan.clusters], plan.counts())
    np.testing.assert_allclose(plan.cluster_totals(features).sum(axis=0), features.sum(axis=0), atol=1e-12)


def test_the_count_matrix_is_drawn_once_shared_and_read_only():
    videos, _, _ = _clustered([3] * 10, seed=1)
    plan = make_resampling(videos, 500, 2, "clinician")
    whole = plan.cluster_counts()
    assert np.shares_memory(whole, plan.cluster_counts(slice(100, 200)))  # every statistic reads the same one
    assert not whole.flags.writeable
    np.testing.assert_array_equal(whole, resample_counts(plan.draws, plan.n_clusters))
    with pytest.raises(ValueError):
        whole[0, 0] = 7.0


def test_a_large_plan_counts_chunk_by_chunk(monkeypatch):
    import mis_icc_metric.resampling as resampling

    videos, ratings, valid = _clustered([3, 2, 4, 1, 5], seed=3)
    kept = agreement_replicates(ratings, valid, make_resampling(videos, 60, 8, "clinician"))
    monkeypatch.setattr(resampling, "_SHARED_CELLS", 10)  # as 200,000 resamples would: nothing kept
    plan = make_resampling(videos, 60, 8, "clinician")
    part = plan.cluster_counts(slice(10, 20))
    assert not plan._shared and part.flags.writeable
    np.testing.assert_array_equal(part, resample_counts(plan.draws[10:20], plan.n_clusters))
    for key, value in agreement_replicates(ratings, valid, plan).items():
        np.testing.assert_array_equal(value, kept[key], err_msg=key)


def test_by_video_the_numbers_are_the_index_matrix_to_the_bit():
    videos, ratings, valid = _clustered([4, 3, 5, 2, 6, 3], seed=6, step=0.1)
    plan = make_resampling(videos, 300, 13, "video")
    indices = bootstrap_indices(len(videos), 300, 13)
    np.testing.assert_array_equal(plan.cluster_totals(ratings[:, :, 0]), ratings[:, :, 0])
    for key, value in agreement_replicates(ratings, valid, plan).items():
        np.testing.assert_array_equal(value, agreement_replicates(ratings, valid, indices)[key], err_msg=key)
    for key, value in bootstrap_blocks(ratings, valid, plan).items():
        np.testing.assert_array_equal(value, bootstrap_blocks(ratings, valid, indices)[key], err_msg=key)


def test_halo_by_clinician_equals_a_per_resample_loop():
    videos, ratings, valid = _clustered([3, 4, 2, 5, 3, 4, 2, 3], seed=12, step=0.1)
    scores = ratings[:, :2, 0]
    gold = ratings[:, :2, 1]
    present = valid[:, :2]
    plan = make_resampling(videos, 400, 3, "clinician")
    ours = halo([scores, gold], present, plan, confidence=0.9)
    # each system's halo on the drawn rows (one dimension pair: the pair is the point estimate's)
    loop = np.array(
        [
            [halo([system[rows]], present[rows], None)[0]["value"] for system in (scores, gold)]
            for rows in clinician_rows(videos, 400, 3)
        ]
    )
    for side in range(2):
        defined = loop[:, side][~np.isnan(loop[:, side])]
        np.testing.assert_allclose(ours[side]["ci"], np.percentile(defined, [5, 95]), atol=TOLERANCE)


class _ItemCountsOnly:
    """A plan that says each item's counts and nothing of clusters (as `planning.SizedDraws` does)."""

    def __init__(self, plan) -> None:
        self.plan, self.shape = plan, plan.shape

    def counts(self, rows: slice) -> np.ndarray:
        return self.plan.counts(rows)


def test_a_plan_with_only_item_counts_is_read_item_by_item():
    videos, ratings, valid = _clustered([3, 2, 4, 1, 5, 2], seed=5)
    plan = make_resampling(videos, 80, 9, "clinician")
    items_only = _ItemCountsOnly(plan)
    features = np.random.default_rng(0).normal(size=(len(videos), 4))
    np.testing.assert_array_equal(resampled_sums(items_only, features), plan.counts() @ features)
    ours, theirs = agreement_replicates(ratings, valid, plan), agreement_replicates(ratings, valid, items_only)
    for key in STATISTIC_KEYS:
        _assert_close(ours[key], theirs[key], key)


@pytest.mark.parametrize("scipy_loop", [True, False])
@settings(max_examples=25, deadline=None)
@given(st.integers(1, 40), st.integers(1, 30), st.integers(1, 9), st.floats(0.0, 1.0), st.integers(0, 2**31))
def test_sparse_times_equals_scipys_product_with_its_loop_or_without(scipy_loop, rows, columns, vectors, density, seed):
    # Our output buffer through scipy's own loop; where a scipy moved that loop, its public product.
    import sys
    import types

    from scipy import sparse

    with pytest.MonkeyPatch.context() as patch:
        if not scipy_loop:
            patch.setitem(sys.modules, "scipy.sparse._sparsetools", types.ModuleType("moved"))
        _check_sparse_times(sparse, rows, columns, vectors, density, seed)


def _check_sparse_times(sparse, rows: int, columns: int, vectors: int, density: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = sparse.random(rows, columns, density=density, format="csr", random_state=seed)
    dense = rng.integers(0, 5, size=(vectors, columns)).astype(np.float64).T  # not contiguous
    got = agreement_statistics.sparse_times(matrix, dense)
    assert got.shape == (rows, vectors) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, matrix @ dense)


def test_rank_weights_leave_float32_where_a_resample_could_hold_more_items_than_it_counts_exactly():
    # float32 holds whole numbers (and halves) exactly up to 2^23: a resample of at most its largest count times
    # the items must stay below the bound, else float64.
    videos, ratings, valid = _clustered([3, 2, 4], seed=1)
    plan = agreement_statistics._Plan(ratings, valid)
    n = ratings.shape[0]
    below = np.full((2, n), np.floor((agreement_statistics._FLOAT32_WHOLE - 1) / n))
    assert plan.rank_dtype(below) == np.float32
    assert plan.rank_dtype(below + 1) == np.float64
    rho, distinct = plan.rank_statistics(below + 1)  # every item as often: the full sample's rho, its distinct values
    point = agreement_point(ratings, valid)
    np.testing.assert_allclose(rho[0], point["spearman"], rtol=1e-12)
    np.testing.assert_array_equal(distinct[0], point["n_distinct"])


@pytest.mark.parametrize("copies", [1, 2, 300])  # 300 copies of 20 items: 6,000 in a resample, past the bound
def test_rhos_cross_term_is_the_same_through_float32_products_or_float64_ones(copies, monkeypatch):
    # Below `_FLOAT32_CROSS_ITEMS` items a resample's weight-times-rank products are summed in float32 (exact); at
    # or past it, float32 weights take the three-factor float64 sum. Either way the float64 path's numbers.
    videos, ratings, valid = _clustered([4, 3, 5, 2, 6], seed=7, step=0.1)
    plan = agreement_statistics._Plan(ratings, valid)
    counts = np.random.default_rng(copies).integers(0, 3, size=(50, ratings.shape[0])) * float(copies)
    assert plan.rank_dtype(counts) == np.float32
    assert (counts.sum(axis=1).max() >= agreement_statistics._FLOAT32_CROSS_ITEMS) == (copies == 300)
    fast = plan.rank_statistics(counts)
    monkeypatch.setattr(agreement_statistics, "_FLOAT32_WHOLE", 0.0)  # float64 throughout
    slow = plan.rank_statistics(counts)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
