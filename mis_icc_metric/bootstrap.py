"""Vectorised percentile bootstrap of ICC(3,1) over items, for many blocks at once.

One (B x n) index matrix is drawn once and shared by every block (the eight
dimensions, the overall score, the sensitivity variants), so all CIs come from the
same resamples. Each resample is turned into a count vector over the n items and
every per-block moment it needs (count, sums, cross-products) is one row of
``counts @ features``: a single matrix product replaces the loop over resamples.

A plan that resamples clusters (`resampling.Resampling`, clinicians with all their videos) sums the features
per cluster first: a resample's sums are then one row of ``cluster_counts @ cluster_totals``, a (B x C) by
(C x F) product (C = 78 clinicians, not 996 videos), and every statistic of the plan reads the same count
matrix (`unit_counts`, `unit_totals`, `unit_chunks`).

Resampled items stay distinct: an item drawn three times is three items (weight 3),
exactly what ``icc3_1(matrix[idx])`` sees. Pivoting a resample back by item id
(what a pandas pivot_table of the resampled long table does) silently averages the
copies into one item and shrinks the CI; the count formulation cannot do that.
"""

from __future__ import annotations

import math
import threading
import warnings
from contextlib import contextmanager, nullcontext

import numpy as np

from mis_bench_dataset.icc import icc3_from_cross_products
from mis_bench_dataset.toolkit.defaults import DEFAULT_CONFIDENCE, MAX_BOOTSTRAP  # noqa: F401 - re-exported: the cap's home was here
from mis_bench_dataset.toolkit.errors import UsageError
from mis_bench_dataset.toolkit.progress import progress

from .reporting_floor import Support, guarded_interval
from .resampling_threads import extra_threads, share_out

__all__ = [
    "MAX_BOOTSTRAP",
    "bootstrap_indices",
    "one_blas_thread",
    "resampling_blas",
    "resample_counts",
    "resampled_sums",
    "resampled_chunks",
    "resampled_sum_chunks",
    "by_cluster",
    "unit_chunks",
    "unit_counts",
    "unit_totals",
    "resampled_cross",
    "block_means",
    "BlockMoments",
    "block_features",
    "bootstrap_blocks",
    "point_blocks",
    "percentile_ci",
    "guarded_ci",
    "quiet_nanmean",
    "quiet_nanvar",
]

# Resamples of one chunk: their counts, sums and every statistic computed from them stay in cache (1,024
# resamples of 996 videos are 8 MiB of counts, of 78 clinicians 0.6 MiB), and a command's memory does not grow
# with the resamples (measured: all 10,000 clinician resamples at once cost a third more, in page faults).
_CHUNK_ROWS = 1024
# Replicates from which `percentile_ci` shares its figures out over the resampling threads (score's 21 statistics
# x 9 blocks x 10,000 resamples are 1.9 M: about 35 ms on one core; one figure's 10,000 stay on the caller).
_SHARED_QUANTILES = 500_000
# Resamples x items from which a bootstrap takes about 2 s on 2 cores (10,000 x 7,968 take 0.44 s) and shows
# progress (mis_bench_dataset.toolkit.progress).
_PROGRESS_CELLS = 400_000_000
# A column's resampled sum of squares below this share of its raw (uncentred) one is cancellation noise: the
# column is constant within that resample (e.g. every drawn item is a copy of one video).
_CANCELLATION = 1e-9


def bootstrap_indices(n_items: int, n_resamples: int, seed: int | None) -> np.ndarray:
    """The shared (n_resamples x n_items) item-index matrix, seeded and reproducible.

    uint16 when n_items <= 65536 (half the memory and draw time of int32), int32 beyond.
    """
    if n_items < 1:
        raise ValueError(f"bootstrap needs at least one item, got n_items={n_items}")
    if n_resamples < 1:
        raise ValueError(f"n_bootstrap must be >= 1, got {n_resamples}")
    if n_resamples > MAX_BOOTSTRAP:
        raise UsageError(
            f"{n_resamples:,} bootstrap resamples exceed the limit of {MAX_BOOTSTRAP:,}",
            hint="memory grows with resamples x videos; 10,000 (the paper's) is plenty for a 95% CI",
        )
    rng = np.random.default_rng(seed)
    dtype = np.uint16 if n_items <= 2**16 else np.int32
    return rng.integers(0, n_items, size=(n_resamples, n_items), dtype=dtype)


def resample_counts(indices: np.ndarray, n_items: int) -> np.ndarray:
    """How often each item occurs in each resample: (B x n) float64.

    Counted into zeros this function wrote, not `np.bincount`'s: bincount reads its zeroed output before each
    write, and on fresh pages that read maps the kernel's zero page, which the write must then replace, flushing
    the address translations of every core that runs a thread of the process (measured on 2 cores, another
    thread running: 10,000 resamples of 996 videos counted in 50 ms, not 130-250)."""
    b = indices.shape[0]
    flat = _flat_index_buffer(b * n_items).reshape(b, n_items)
    np.add(np.arange(b, dtype=np.intp)[:, None] * n_items, indices, out=flat)
    counts = np.empty((b, n_items))
    counts.fill(0.0)
    np.add.at(counts.reshape(-1), flat.reshape(-1), 1.0)
    return counts


# A chunk's flat indices are 8 MiB (1,024 resamples x 996 videos): a buffer made once per thread, not per chunk
# (its pages fault in once). Up to `_KEPT_CELLS` (a chunk of a few thousand videos); a larger count (a whole
# draw at once) allocates its own.
_KEPT_CELLS = _CHUNK_ROWS * 4096
_buffers = threading.local()


def _flat_index_buffer(size: int) -> np.ndarray:
    if size > _KEPT_CELLS:
        return np.empty(size, dtype=np.intp)
    buffer = getattr(_buffers, "flat", None)
    if buffer is None or buffer.size < size:
        buffer = _buffers.flat = np.empty(size, dtype=np.intp)
    return buffer[:size]


def _counts(plan, rows: slice, n_items: int) -> np.ndarray:
    """The (chunk x n) counts of `rows` from a video index matrix, or from a `resampling.Resampling` (which
    knows its clusters; duck-typed here, since `resampling` builds on this module)."""
    if isinstance(plan, np.ndarray):
        return resample_counts(plan[rows], n_items)
    return plan.counts(rows)


def _blas_controller():
    """The BLAS libraries loaded now (not cached: scipy loads its own OpenBLAS after numpy's, e.g. with
    scipy.stats, and a controller made before would not limit it; about 0.5 ms)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


_BLAS_STATE = threading.Condition()
_blas_limit: dict = {}  # while any thread is inside `one_blas_thread`: the limiter, its owner and the entries
_blas_depth = threading.local()  # how deep each thread is inside it (a chunk generator nests in its caller's)


@contextmanager
def one_blas_thread():
    """A context in which BLAS runs on one thread: the resampling loops' products are skinny (chunk x clusters),
    where a second thread costs more than it gives, and worse on a loaded machine. The limit is the process's,
    shared by the threads inside: the first thread in sets it and restores it when it leaves its outermost
    entry, after the other threads have left (resampling threads run beside a command that holds it, and never
    wait for it: `resampling_threads`). OpenBLAS takes a new thread count only from some threads (measured: a
    resampling thread's setting is ignored once the library's threads run), so the thread that set the limit is
    the one that restores it."""
    me = threading.get_ident()
    with _BLAS_STATE:
        if not _blas_limit:
            _blas_limit.update(owner=me, entries=0, limiter=_blas_controller().limit(limits=1, user_api="blas"))
        _blas_limit["entries"] += 1
        _blas_depth.value = getattr(_blas_depth, "value", 0) + 1
    try:
        yield
    finally:
        with _BLAS_STATE:
            _blas_limit["entries"] -= 1
            _blas_depth.value -= 1
            if _blas_limit["owner"] == me and _blas_depth.value == 0:
                _BLAS_STATE.wait_for(lambda: _blas_limit["entries"] == 0)
                _blas_limit.pop("limiter").restore_original_limits()
                _blas_limit.clear()
            _BLAS_STATE.notify_all()


def resampling_blas(n_resamples: int):
    """`one_blas_thread()` for a command that resamples (`n_resamples` > 0), held around all of it: the
    resampling threads' products run beside each other, and BLAS's own threads, woken between two limits, would
    spin on the same cores. Without resampling a no-op (the first limit costs about 10 ms)."""
    return one_blas_thread() if n_resamples else nullcontext()


def by_cluster(plan) -> bool:
    """Whether `plan` resamples clusters through their counts and totals (a `resampling.Resampling`: duck-typed
    here, since `resampling` builds on this module). A video index matrix, or a plan that only says each item's
    count (`counts(rows)`, e.g. `planning.SizedDraws`), is read item by item."""
    return not isinstance(plan, np.ndarray) and hasattr(plan, "cluster_counts") and hasattr(plan, "cluster_totals")


def unit_counts(plan, rows: slice, n_items: int) -> np.ndarray:
    """(chunk x U) float64: how often each resampling unit is drawn in each resample of `rows`. The units are the
    clusters of a plan `by_cluster` (its `cluster_counts`), else the items."""
    if by_cluster(plan):
        return plan.cluster_counts(rows)
    return _counts(plan, rows, n_items)


def unit_totals(plan, features: np.ndarray) -> np.ndarray:
    """(U x F) per-unit sums of the per-item `features` (n x F): the per-cluster sums for a plan `by_cluster`
    (its `cluster_totals`), else the features themselves. A resample's sums of the
    features are ``unit_counts @ unit_totals``, exactly what the item counts give (each item of a cluster is
    drawn as often as its cluster)."""
    return plan.cluster_totals(features) if by_cluster(plan) else features


def _n_units(plan, n_items: int) -> int:
    return int(plan.n_clusters) if by_cluster(plan) else n_items


def resampled_sums(indices, features: np.ndarray) -> np.ndarray:
    """sum over each resample's items of each feature column: (B x F), chunked to bound memory.

    `indices`: a video index matrix or a `resampling.Resampling`; the product runs over its units (videos, or
    clinicians: one (B x C) @ (C x F) product through the per-clinician totals). The products are skinny; one
    BLAS thread is faster than several for them (measured on 2 cores: 0.44 s vs 0.80 s for the full bootstrap
    by video).
    """
    out = np.empty((indices.shape[0], features.shape[1]), dtype=np.float64)
    for rows, sums in resampled_sum_chunks(indices, features):
        out[rows] = sums
    return out


def resampled_sum_chunks(indices, features: np.ndarray):
    """(slice of resamples, their (chunk x F) sums of `features` (n x F)), chunk by chunk: `resampled_sums` for
    statistics computed chunk by chunk, so their temporaries stay one chunk's. The per-unit totals are summed
    once; each chunk is one ``unit_counts @ unit_totals`` product."""
    totals = unit_totals(indices, features)
    for rows, counts in unit_chunks(indices, features.shape[0]):
        sums = counts @ totals
        del counts  # before the next chunk is drawn: one chunk's counts in memory at a time
        yield rows, sums


def _chunked(n_resamples: int, n_columns: int, counts):
    """(slice of resamples, `counts(slice)`), `_CHUNK_ROWS` resamples at a time, on one BLAS thread, with a bar
    when the whole is large (seconds)."""
    starts = range(0, n_resamples, _CHUNK_ROWS)
    long = n_resamples * n_columns >= _PROGRESS_CELLS
    with one_blas_thread():
        for start in progress(starts, desc="bootstrap", unit="chunk", show=long):
            rows = slice(start, min(start + _CHUNK_ROWS, n_resamples))
            yield rows, counts(rows)


def unit_chunks(plan, n_items: int):
    """(slice of resamples, their (chunk x U) unit count matrix), chunk by chunk: the units are clusters for a
    `resampling.Resampling` (its shared count matrix, sliced), else the items."""
    yield from _chunked(plan.shape[0], _n_units(plan, n_items), lambda rows: unit_counts(plan, rows, n_items))


def resampled_chunks(indices: np.ndarray, n_items: int):
    """(slice of resamples, their (chunk x n) item count matrix), chunk by chunk, on one BLAS thread.

    For statistics that need each item's count (a per-cluster product is `unit_chunks`); memory stays bounded
    by one chunk whatever the number of resamples.
    """
    yield from _chunked(indices.shape[0], n_items, lambda rows: _counts(indices, rows, n_items))


class BlockMoments:
    """Column layout of the per-block features: [valid, v*x_j (k), v*x_j*x_m (j<=m), v*(x_0-x_1)^2]."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.pairs = [(j, m) for j in range(k) for m in range(j, k)]
        self.width = 1 + k + len(self.pairs) + 1


def block_means(ratings: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(D, k) column means of each block over its valid items (0 for an empty block): the centring."""
    mask = valid.astype(np.float64)
    safe = np.where(valid[..., None], ratings, 0.0)
    count = np.maximum(mask.sum(axis=0), 1.0)
    return (safe * mask[..., None]).sum(axis=0) / count[:, None]


def block_features(ratings: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, BlockMoments]:
    """Per-item moment features for each block.

    ratings: (n, D, k) with anything (NaN allowed) where valid is False;
    valid: (n, D) bool, the items a block uses. Each block is centred on its own
    valid-item column means (removes cancellation in the sums) and its constant
    columns are zeroed, so a constant rater gives exactly ICC 0 in every resample.
    """
    n, n_blocks, k = ratings.shape
    layout = BlockMoments(k)
    mask = valid.astype(np.float64)
    safe = np.where(valid[..., None], ratings, 0.0)
    means = block_means(ratings, valid)
    centred = np.where(valid[..., None], ratings - means[None], 0.0)
    high = np.where(valid[..., None], ratings, -np.inf).max(axis=0)
    low = np.where(valid[..., None], ratings, np.inf).min(axis=0)
    centred = np.where((high == low)[None], 0.0, centred)
    columns = [mask[..., None]]
    columns.append(centred)
    columns.append(np.stack([centred[..., j] * centred[..., m] for j, m in layout.pairs], axis=-1))
    if k >= 2:
        diff = np.where(valid, safe[..., 0] - safe[..., 1], 0.0)
        columns.append((diff**2)[..., None])
    features = np.concatenate(columns, axis=-1)  # (n, D, width)
    return features.reshape(n, n_blocks * layout.width), layout


def statistics_from_sums(sums: np.ndarray, n_blocks: int, layout: BlockMoments) -> dict[str, np.ndarray]:
    """ICC(3,1), MSE of rater 0 vs 1, and item count per (resample, block) from summed features."""
    blocks = sums.reshape(sums.shape[0], n_blocks, layout.width)
    n_eff, _, cross = resampled_cross(blocks, layout)
    sq_err = blocks[..., -1]
    icc = icc3_from_cross_products(cross)
    icc = np.where(n_eff >= 2, icc, np.nan)
    safe_n = np.where(n_eff > 0, n_eff, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mse = np.where(n_eff > 0, sq_err / safe_n, np.nan)
    return {"icc": icc, "mse": mse, "n": n_eff}


def resampled_cross(blocks: np.ndarray, layout: BlockMoments) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n_eff, linear sums (..., k), C (..., k, k)) of each (resample, block) from its summed features
    (..., width): C re-centred within the resample, constant columns exactly zero."""
    k = layout.k
    n_eff = blocks[..., 0]
    linear = blocks[..., 1 : 1 + k]
    quad = blocks[..., 1 + k : 1 + k + len(layout.pairs)]
    cross = np.empty(blocks.shape[:-1] + (k, k))
    safe_n = np.where(n_eff > 0, n_eff, 1.0)
    for index, (j, m) in enumerate(layout.pairs):
        value = quad[..., index] - linear[..., j] * linear[..., m] / safe_n
        cross[..., j, m] = value
        cross[..., m, j] = value
    # Zero a column that is constant within a resample, as `cross_products` does for the full sample, so a
    # resample without variance is undefined (NaN) and a constant prediction gives exactly 0, never noise / noise.
    squares = np.stack([quad[..., layout.pairs.index((j, j))] for j in range(k)], axis=-1)
    flat = np.diagonal(cross, axis1=-2, axis2=-1) <= _CANCELLATION * squares
    cross = np.where(flat[..., :, None] | flat[..., None, :], 0.0, cross)
    return n_eff, linear, cross


def bootstrap_blocks(ratings: np.ndarray, valid: np.ndarray, indices: np.ndarray) -> dict[str, np.ndarray]:
    """Bootstrap replicates for every block: {"icc", "mse", "n"} each (B x D).

    Point estimates are the same computation with every count 1 (see ``point_blocks``).
    """
    features, layout = block_features(ratings, valid)
    out = {key: np.empty((indices.shape[0], ratings.shape[1])) for key in ("icc", "mse", "n")}
    for rows, sums in resampled_sum_chunks(indices, features):
        for key, value in statistics_from_sums(sums, ratings.shape[1], layout).items():
            out[key][rows] = value
    return out


def point_blocks(ratings: np.ndarray, valid: np.ndarray) -> dict[str, np.ndarray]:
    """The full-sample statistics of each block, {"icc", "mse", "n"} each (D,)."""
    features, layout = block_features(ratings, valid)
    stats = statistics_from_sums(features.sum(axis=0, keepdims=True), ratings.shape[1], layout)
    return {name: value[0] for name, value in stats.items()}


def quiet_nanmean(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """`np.nanmean` over replicates without its warning for an all-NaN slice: an undefined statistic in every
    resample is NaN, said by the entry's own NaN (as `percentile_ci` does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def quiet_nanvar(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Sample variance (ddof 1) over replicates, NaN ones left out; NaN, without a warning, where fewer than two
    are defined."""
    values = np.asarray(values, dtype=np.float64)
    defined = np.sum(~np.isnan(values), axis=axis)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.where(defined >= 2, np.nanvar(values, axis=axis, ddof=1), np.nan)


def percentile_ci(samples: np.ndarray, confidence: float = DEFAULT_CONFIDENCE, axis: int = 0) -> np.ndarray:
    """Percentile interval over `axis` ignoring NaN replicates: (..., 2) [low, high]; NaN where every replicate is.

    Each figure's replicates are laid out in a row: the figures with no undefined replicate (nearly all) take one
    `np.quantile` call per share, the few with some NaN `np.quantile` of their defined replicates one by one;
    the numbers of `np.nanquantile` figure by figure, without its per-figure Python loop (`score`'s 189 figures of
    10,000: 37 -> 31 ms on one thread, 20 -> 16 ms on two). Many figures at once (`_SHARED_QUANTILES` replicates or
    more) are shared out over the resampling threads, rows by rows: the same numbers. No warnings filter is touched
    (`warnings.catch_warnings` is process-wide, not thread-safe): an all-NaN figure is left NaN."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    levels = [(1 - confidence) / 2, 1 - (1 - confidence) / 2]
    moved = np.moveaxis(np.asarray(samples, dtype=np.float64), axis, -1)
    figures = moved.reshape(math.prod(moved.shape[:-1]), moved.shape[-1])  # a figure a row (a copy but on axis -1)
    bounds = np.full((figures.shape[0], 2), np.nan)
    if figures.shape[1] == 0:  # no replicates: every figure undefined
        return bounds.reshape(moved.shape[:-1] + (2,))
    undefined = np.isnan(figures).any(axis=1)

    def one_share(rows: slice) -> None:
        part, some_nan = figures[rows], undefined[rows]
        if not some_nan.all():
            clean = part if not some_nan.any() else part[~some_nan]
            bounds[rows][~some_nan] = np.quantile(clean, levels, axis=1).T
        for row in np.flatnonzero(some_nan) + rows.start:  # a loop over the few figures with NaN, not resamples
            values = figures[row][~np.isnan(figures[row])]
            if values.size:
                bounds[row] = np.quantile(values, levels)

    shares = 1 if figures.size < _SHARED_QUANTILES else extra_threads() + 1
    edges = np.linspace(0, figures.shape[0], shares + 1).astype(int)
    share_out([slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a], one_share)
    return bounds.reshape(moved.shape[:-1] + (2,))


def guarded_ci(
    samples: np.ndarray,
    support: Support,
    confidence: float = DEFAULT_CONFIDENCE,
    what: str = "a CI",
    *,
    counted: bool = False,
) -> tuple[list[float] | None, dict]:
    """The percentile CI of one figure's replicates (NaN = undefined) under the one rule of `reporting_floor`:
    [low, high], or None when the support, the share of undefined resamples or a zero width withholds it; and
    the facts to report beside it ({"undefined", "n_resamples", "withheld": reason or None}). `counted`: see
    `reporting_floor.guarded_interval`."""
    samples = np.asarray(samples, dtype=np.float64)
    return guarded_interval(samples, support, percentile_ci(samples, confidence), what, counted=counted)
