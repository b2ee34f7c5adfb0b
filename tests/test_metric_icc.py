"""The numpy ICC core and the vectorised bootstrap against independent references:
pingouin (to 1e-10), the Shrout & Fleiss (1979) Table 2 example, and direct
per-resample recomputation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mis_icc_metric import icc3, icc3_1, icc3_ci, icc3_k, mean_squared_error, mean_squares
from mis_icc_metric.bootstrap import (
    bootstrap_blocks,
    bootstrap_indices,
    percentile_ci,
    point_blocks,
    resample_counts,
)

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], dtype=float
)


def pingouin_icc3(matrix: np.ndarray) -> dict[str, dict]:
    n, k = matrix.shape
    long = pd.DataFrame({"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "y": matrix.ravel()})
    old = pingouin.options.copy()
    pingouin.options["round.column.CI95"] = None
    try:
        # On a degenerate matrix (one rater constant) pingouin's CI bounds divide 0 by 0 and numpy warns; the
        # ICC values compared here are computed before that and are unaffected.
        with np.errstate(invalid="ignore", divide="ignore"):
            table = pingouin.intraclass_corr(long, targets="item", raters="rater", ratings="y")
    finally:
        pingouin.options.clear()
        pingouin.options.update(old)
    return table.set_index("Type").loc[["ICC(C,1)", "ICC(C,k)"]].to_dict("index")


def test_shrout_fleiss_table2_published_values():
    result = icc3(SHROUT_FLEISS)
    assert round(result.icc, 4) == 0.7148
    # The paper's Table 4 (rounded to 2 dp): ICC(3,1) = .71, ICC(3,4) = .91.
    assert round(result.icc_k, 2) == 0.91
    # Its ANOVA table (Table 3): BMS = 11.24, EMS = 1.02, df 5 and 15.
    assert round(result.ms_rows, 2) == 11.24
    assert round(result.ms_err, 2) == 1.02
    assert (result.df1, result.df2) == (5, 15)
    # Hand computation: ICC = (BMS - EMS) / (BMS + 3 EMS) with exact fractions.
    bms, ems = 11.241666666666667, 1.0194444444444444
    assert result.icc == pytest.approx((bms - ems) / (bms + 3 * ems), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_pingouin_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n, k = rng.integers(3, 60), rng.integers(2, 6)
    matrix = rng.normal(3, 1, size=(n, k)) + rng.normal(0, 1, size=(n, 1))
    expected = pingouin_icc3(matrix)
    result = icc3(matrix)
    assert result.icc == pytest.approx(expected["ICC(C,1)"]["ICC"], abs=1e-10)
    assert result.icc_k == pytest.approx(expected["ICC(C,k)"]["ICC"], abs=1e-10)
    assert result.f == pytest.approx(expected["ICC(C,1)"]["F"], rel=1e-10)
    assert result.pval == pytest.approx(expected["ICC(C,1)"]["pval"], abs=1e-10)
    np.testing.assert_allclose(result.ci, expected["ICC(C,1)"]["CI95"], atol=1e-10, rtol=0)
    np.testing.assert_allclose(result.ci_k, expected["ICC(C,k)"]["CI95"], atol=1e-10, rtol=0)


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(3, 25), st.integers(2, 4)),
        elements=st.floats(1.0, 5.0, allow_nan=False).map(lambda v: round(v, 1)),
    )
)
def test_property_matches_pingouin_and_is_bounded(matrix):
    value = icc3_1(matrix)
    if np.ptp(matrix, axis=0).max() == 0:
        assert np.isnan(value)
        return
    k = matrix.shape[1]
    assert -1 / (k - 1) - 1e-12 <= value <= 1 + 1e-12
    expected = pingouin_icc3(matrix)["ICC(C,1)"]["ICC"]
    if (np.ptp(matrix, axis=0) > 0).sum() == 1:
        # Only one rater varies: exactly 0 here, pingouin gets there only up to rounding.
        assert value == 0.0
        assert expected == pytest.approx(0.0, abs=1e-10)
    else:
        assert value == pytest.approx(expected, abs=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(3, 20), st.just(2)), elements=st.floats(1.0, 5.0)),
    st.floats(-3, 3),
    st.floats(0.1, 10),
)
def test_property_consistency_icc_ignores_rater_offsets_and_common_scale(matrix, shift, scale):
    if np.ptp(matrix, axis=0).min() == 0:
        return
    shifted = matrix * scale + np.array([0.0, shift])
    assert icc3_1(shifted) == pytest.approx(icc3_1(matrix), abs=1e-9)
    swapped = matrix[:, ::-1]
    assert icc3_1(swapped) == pytest.approx(icc3_1(matrix), abs=1e-12)
    rows = np.random.default_rng(0).permutation(matrix.shape[0])
    assert icc3_1(matrix[rows]) == pytest.approx(icc3_1(matrix), abs=1e-12)


def test_batched_equals_one_by_one():
    rng = np.random.default_rng(3)
    batch = rng.normal(size=(2, 5, 30, 3))
    values = icc3_1(batch)
    assert values.shape == (2, 5)
    for i in range(2):
        for j in range(5):
            assert values[i, j] == pytest.approx(icc3_1(batch[i, j]), abs=1e-14)
    low, high = icc3_ci(batch)
    assert low.shape == high.shape == (2, 5)
    assert icc3_k(batch).shape == (2, 5)


def test_degenerate_values_are_documented_values_not_crashes():
    constant_prediction = np.array([[3.0, 1.2], [3.0, 4.5], [3.0, 2.2], [3.0, 3.3]])
    assert icc3_1(constant_prediction) == 0.0
    assert np.isnan(icc3_1(np.full((4, 2), 3.0)))
    assert np.isnan(icc3_k(np.full((4, 2), 3.0)))
    perfect = np.array([[1.0, 1.0], [2.0, 2.0], [4.0, 4.0]])
    result = icc3(perfect)
    assert result.icc == 1.0 and result.icc_k == 1.0
    assert result.f == np.inf and result.ci == (1.0, 1.0)
    # Perfect consistency with an offset is still 1 (consistency, not absolute agreement).
    assert icc3_1(perfect + np.array([0.0, 1.0])) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    "bad, message",
    [
        ([1.0, 2.0, 3.0], "matrix"),
        ([[1.0], [2.0], [3.0]], "at least 2 raters"),
        ([[1.0, 2.0]], "at least 2 items"),
        ([[1.0, np.nan], [2.0, 3.0]], "non-finite value at index \\(0, 1\\)"),
    ],
)
def test_bad_matrices_raise_clear_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        icc3_1(bad)


def test_mean_squares_and_mse():
    ms_rows, ms_err = mean_squares(SHROUT_FLEISS)
    assert ms_rows == pytest.approx(11.241666666666667, abs=1e-12)
    assert ms_err == pytest.approx(1.0194444444444444, abs=1e-12)
    assert mean_squared_error([1.0, 2.0, 4.0], [2.0, 2.0, 2.0]) == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="shape"):
        mean_squared_error([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        mean_squared_error([1.0, np.nan], [1.0, 2.0])


# --- bootstrap -------------------------------------------------------------------


def _blocks(seed: int = 0, n: int = 40):
    rng = np.random.default_rng(seed)
    gold = np.round(rng.uniform(1, 5, size=(n, 3)), 1)
    pred = np.round(np.clip(gold + rng.normal(0, 0.8, size=(n, 3)), 1, 5), 1)
    ratings = np.stack([pred, gold], axis=-1)
    valid = rng.random((n, 3)) > 0.15
    return ratings, valid


def test_index_matrix_is_seeded_and_shared():
    a = bootstrap_indices(50, 20, seed=7)
    assert a.shape == (20, 50) and a.min() >= 0 and a.max() < 50
    np.testing.assert_array_equal(a, bootstrap_indices(50, 20, seed=7))
    assert not np.array_equal(a, bootstrap_indices(50, 20, seed=8))
    counts = resample_counts(a, 50)
    np.testing.assert_array_equal(counts.sum(axis=1), np.full(20, 50.0))
    np.testing.assert_array_equal(counts[3], np.bincount(a[3], minlength=50))


@pytest.mark.parametrize("shape", [(3, 7), (1024, 996), (5000, 996)])
def test_resample_counts_from_kept_buffers_equal_a_count_per_row_from_any_thread(shape):
    # The flat index buffer is each thread's own and reused; a larger draw than it keeps allocates its own.
    from concurrent.futures import ThreadPoolExecutor

    n_resamples, n = shape
    draws = [bootstrap_indices(n, n_resamples, seed=seed) for seed in range(4)]
    expected = [np.stack([np.bincount(row, minlength=n) for row in draw]).astype(float) for draw in draws]
    with ThreadPoolExecutor(max_workers=4) as pool:
        counted = list(pool.map(lambda draw: resample_counts(draw, n), draws * 2))
    for got, want in zip(counted, expected * 2, strict=True):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want)


def test_bootstrap_replicates_equal_direct_recomputation_with_duplicates_kept():
    ratings, valid = _blocks()
    indices = bootstrap_indices(ratings.shape[0], 200, seed=1)
    boot = bootstrap_blocks(ratings, valid, indices)
    for b in range(0, 200, 17):
        rows = indices[b]
        for d in range(ratings.shape[1]):
            keep = valid[rows, d]
            matrix = ratings[rows, d][keep]  # duplicates stay separate items
            assert boot["icc"][b, d] == pytest.approx(icc3_1(matrix), abs=1e-10)
            assert boot["mse"][b, d] == pytest.approx(mean_squared_error(matrix[:, 0], matrix[:, 1]), abs=1e-12)
            assert boot["n"][b, d] == keep.sum()


def test_averaging_duplicates_back_by_id_is_not_what_we_compute():
    """The known trap: pivoting a resample by item id merges copies into one item."""
    ratings, valid = _blocks(seed=2)
    valid[:] = True
    indices = bootstrap_indices(ratings.shape[0], 50, seed=3)
    boot = bootstrap_blocks(ratings, valid, indices)
    trapped = np.array([icc3_1(ratings[np.unique(row), 0]) for row in indices])
    assert np.abs(trapped - boot["icc"][:, 0]).max() > 1e-3


def test_point_blocks_equal_core_and_k3_blocks_work():
    ratings, valid = _blocks(seed=4)
    point = point_blocks(ratings, valid)
    for d in range(3):
        assert point["icc"][d] == pytest.approx(icc3_1(ratings[valid[:, d], d]), abs=1e-12)
    rng = np.random.default_rng(5)
    three = rng.normal(size=(30, 2, 3))
    every = np.ones((30, 2), dtype=bool)
    point3 = point_blocks(three, every)
    np.testing.assert_allclose(point3["icc"], icc3_1(np.moveaxis(three, 1, 0)), atol=1e-12)


def test_constant_block_is_zero_in_every_resample_and_tiny_blocks_are_nan():
    ratings, valid = _blocks(seed=6)
    ratings[:, 0, 0] = 3.0
    valid[:, 0] = True
    valid[:, 1] = False
    valid[:2, 1] = True  # only two usable items
    boot = bootstrap_blocks(ratings, valid, bootstrap_indices(ratings.shape[0], 100, seed=0))
    assert np.all(boot["icc"][:, 0] == 0.0)
    assert np.isnan(boot["icc"][:, 1]).mean() > 0.5


def test_a_resample_without_variance_is_undefined_not_noise():
    """A block with few usable items often draws copies of one video only: no variance, so the ICC is
    undefined (NaN) as the direct computation says, never the 0 or 1 that cancellation noise gave."""
    rng = np.random.default_rng(8)
    gold = np.round(rng.normal(3.5, 0.5, 30), 1)
    ratings = np.stack([np.round(gold + rng.normal(0, 0.5, 30), 1), gold], axis=-1)[:, None, :]
    valid = np.zeros((30, 1), dtype=bool)
    valid[:4] = True
    indices = bootstrap_indices(30, 2000, seed=0)
    boot = bootstrap_blocks(ratings, valid, indices)["icc"][:, 0]
    kept = [row[valid[row, 0]] for row in indices]
    direct = np.array([icc3_1(ratings[rows, 0]) if len(rows) >= 2 else np.nan for rows in kept])
    np.testing.assert_allclose(boot, direct, atol=1e-10)  # NaN where NaN
    copies = [b for b, rows in enumerate(kept) if len(rows) >= 2 and len(set(rows.tolist())) == 1]
    assert len(copies) > 5 and np.isnan(boot[copies]).all()


def test_percentile_ci_matches_numpy_and_skips_nan():
    samples = np.random.default_rng(0).normal(size=(1000, 2))
    ci = percentile_ci(samples, 0.95)
    np.testing.assert_allclose(ci[0], np.percentile(samples[:, 0], [2.5, 97.5]))
    samples[:10, 1] = np.nan
    np.testing.assert_allclose(ci_nan := percentile_ci(samples, 0.9)[1], np.percentile(samples[10:, 1], [5, 95]))
    assert ci_nan[0] < ci_nan[1]
    with pytest.raises(ValueError, match="confidence"):
        percentile_ci(samples, 1.5)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 5),
    st.sampled_from([(), (3,), (40, 9)]),
    st.integers(0, 2**31),
    st.sampled_from(["c", "f", "swapped"]),
)
def test_block_trace_and_total_are_numpys_to_the_bit_for_symmetric_blocks(k, leading, seed, layout):
    # The bootstrap's 2 x 2 blocks are summed element by element; the same bits as numpy's reductions.
    from mis_bench_dataset.icc import block_total, block_trace

    rng = np.random.default_rng(seed)
    half = rng.normal(size=(*leading, k, k)) * 10.0 ** rng.integers(-6, 6, size=(*leading, k, k))
    cross = half + np.swapaxes(half, -1, -2)
    cross = {"c": cross, "f": np.asfortranarray(cross), "swapped": np.swapaxes(cross, -1, -2)}[layout]
    np.testing.assert_array_equal(block_trace(cross), np.trace(cross, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(block_total(cross), cross.sum(axis=(-2, -1)))
