"""What one bootstrap resample draws: videos, or clinicians with all their videos (the cluster bootstrap).

The 996 MIS-Bench videos come from 78 clinicians (about 12.8 each: eight stimuli at up to three time points).
A clinician's responses resemble each other, so resampling videos as if they were independent gives CIs that
are too narrow wherever clinicians matter (about 1.7x on the full real benchmark). Resampling clinicians draws
C clinicians with replacement out of C and keeps every video of each draw: a clinician drawn twice puts each of
its videos in twice. The videos of one resample are a count vector over the items, exactly what the count
formulation of `bootstrap` consumes, so every statistic computed from resample counts (ICC blocks, the
agreement statistics, the halo, paired differences) takes either plan unchanged.

One `Resampling` is drawn per command and shared by every dimension and block, as the video index matrix was.
For unit "video" the draw is `bootstrap_indices(n, B, seed)` itself: the numbers of earlier releases (and the
paper's protocol, which `reproduce` keeps) are unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mis_bench_dataset.toolkit.defaults import DEFAULT_RESAMPLE, PAPER_RESAMPLE, RESAMPLE_UNITS
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.video_ids import parse_video_id

from .bootstrap import bootstrap_blocks, bootstrap_indices, quiet_nanvar, resample_counts
from .reporting_floor import Support
from .resampling_threads import Background, in_background

__all__ = [
    "RESAMPLE_UNITS",
    "DEFAULT_RESAMPLE",
    "PAPER_RESAMPLE",
    "Resampling",
    "make_resampling",
    "clinician_clusters",
    "clusters_from_columns",
    "design_effect",
    "design_effects",
    "counterpart",
    "counterpart_icc",
    "clinician_labels",
    "clusters_per_block",
    "block_supports",
    "weakest_support",
    "check_unit",
    "attach_clustering",
]

# The cluster of each video where its id does not say: a mapping video -> label, or one label per video.
Clusters = Mapping[str, str] | Sequence[str] | None

# Resamples x clusters up to which a plan keeps its whole count matrix (32 MiB of float64: 10,000 resamples of
# 78 clinicians are 0.8 M counts); a larger one (videos, or 200,000 resamples) is counted chunk by chunk.
_SHARED_CELLS = 1 << 22
_COUNTING = threading.Lock()

_METHOD = {
    "video": "percentile bootstrap over videos, as if independent (one shared index draw for every block)",
    "clinician": "percentile bootstrap over clinicians, each drawn with all its videos (cluster bootstrap; one"
    " shared draw for every block)",
}


def check_unit(unit: str) -> str:
    """`unit` when it is a resampling unit, else a UsageError listing them."""
    if unit not in RESAMPLE_UNITS:
        raise UsageError(f"unknown resampling unit {unit!r}", hint=f"use one of {', '.join(RESAMPLE_UNITS)}")
    return unit


@dataclass(frozen=True, eq=False)
class Resampling:
    """One seeded draw of B resamples over n items grouped in C clusters (for "video": one item a cluster)."""

    unit: str
    clusters: np.ndarray  # (n_items,) cluster code of each item, 0..C-1
    cluster_names: tuple[str, ...]
    draws: np.ndarray  # (B, C) cluster indices drawn with replacement
    seed: int | None
    _shared: dict = field(default_factory=dict, repr=False, compare=False)  # the count matrix, drawn once

    @property
    def n_resamples(self) -> int:
        return int(self.draws.shape[0])

    @property
    def n_items(self) -> int:
        return int(self.clusters.shape[0])

    @property
    def n_clusters(self) -> int:
        return len(self.cluster_names)

    @property
    def shape(self) -> tuple[int, int]:
        """(B, n_items), the shape of the video index matrix this plan stands in for."""
        return self.n_resamples, self.n_items

    @property
    def counts_shared(self) -> bool:
        """Whether the whole (B x C) count matrix is held, drawn once and read by every statistic (up to
        `_SHARED_CELLS` counts), rather than counted chunk by chunk."""
        return self.n_resamples * self.n_clusters <= _SHARED_CELLS

    def cluster_counts(self, rows: slice = slice(None)) -> np.ndarray:
        """(len(rows), C) float64: how often each cluster is drawn in each resample of `rows`.

        The one resample-count matrix of the plan: every statistic written through per-cluster sums is
        ``cluster_counts() @ cluster_totals(features)`` (`bootstrap.resampled_sums`), one (B x C) by (C x F)
        product for all resamples. Up to `_SHARED_CELLS` counts the whole matrix is drawn once and shared by
        every statistic and block of the command (read-only); beyond, each chunk is counted when asked."""
        if not self.counts_shared:
            return resample_counts(self.draws[rows], self.n_clusters)
        with _COUNTING:  # the resampling threads may ask at once: one of them counts, the others read its matrix
            if "counts" not in self._shared:
                shared = resample_counts(self.draws, self.n_clusters)
                shared.flags.writeable = False
                self._shared["counts"] = shared
        return self._shared["counts"][rows]

    def cluster_totals(self, features: np.ndarray) -> np.ndarray:
        """(C, F) per-cluster sums of per-item `features` (n_items, F): a resample's sums of the features over its
        items are its cluster counts times these (a cluster drawn twice puts each of its items in twice). For
        unit "video" (one item a cluster, in item order) the features themselves, so the video bootstrap's
        numbers are the index matrix's to the bit."""
        features = np.asarray(features, dtype=np.float64)
        if self.unit == "video":
            return features
        order = np.argsort(self.clusters, kind="stable")
        starts = np.searchsorted(self.clusters[order], np.arange(self.n_clusters))
        return np.add.reduceat(features[order], starts, axis=0)

    def counts(self, rows: slice = slice(None)) -> np.ndarray:
        """(len(rows), n_items) float64: how often each item is in each resample of `rows` (its cluster's count:
        for statistics that need each item's own weight; sums go through `cluster_counts`)."""
        cluster_counts = self.cluster_counts(rows)
        return cluster_counts if self.unit == "video" else cluster_counts[:, self.clusters]

    def describe(self) -> dict:
        """What made the CIs, for every output that has one."""
        return {
            "unit": self.unit,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "n_clusters": self.n_clusters,
            "n_items": self.n_items,
            "method": _METHOD[self.unit],
        }

    def clusters_in(self, mask: np.ndarray) -> int:
        """How many clusters have at least one item where `mask` (n_items,) is True."""
        return int(np.unique(self.clusters[np.asarray(mask, dtype=bool)]).size)


def clinician_clusters(video_ids: Sequence[str], clusters: Clusters = None) -> list[str]:
    """The cluster label of each video: `clusters` when given (a mapping video -> label, or one label per
    video), else the clinician its id names (`{clinician}_{T}_{stimulus}`)."""
    if clusters is not None:
        if isinstance(clusters, Mapping):
            absent = [video for video in video_ids if video not in clusters]
            if absent:
                raise DataError(
                    f"{len(absent)} video(s) have no cluster label, e.g. {absent[0]!r}",
                    hint="give every scored video a cluster (its clinician)",
                )
            return [str(clusters[video]) for video in video_ids]
        labels = [str(label) for label in clusters]
        if len(labels) != len(video_ids):
            raise DataError(f"{len(labels)} cluster labels for {len(video_ids)} videos", hint="give one per video")
        return labels
    labels = []
    for video in video_ids:
        try:
            labels.append(parse_video_id(video).clinician)
        except ValueError:
            raise DataError(
                f"video id {video!r} names no clinician, so clinician resampling cannot group it",
                hint="pass the clusters (one clinician per video) or resample by video",
            ) from None
    return labels


def clusters_from_columns(video_ids: Sequence[str], clusters: Sequence[str] | None) -> dict[str, str] | None:
    """Parallel columns (the `evaluate` inputs: one cluster label per pair) -> video -> cluster; a video given
    two clusters is refused."""
    if clusters is None:
        return None
    if len(clusters) != len(video_ids):
        raise DataError(f"clusters has {len(clusters)} labels for {len(video_ids)} pairs", hint="give one per pair")
    mapping: dict[str, str] = {}
    for index, (video, label) in enumerate(zip(video_ids, clusters, strict=True)):
        known = mapping.setdefault(str(video), str(label))
        if known != str(label):
            raise DataError(
                f"input {index}: video {video!r} is in cluster {label!r} here and {known!r} before",
                hint="a video belongs to one clinician",
            )
    return mapping


def make_resampling(
    video_ids: Sequence[str],
    n_resamples: int,
    seed: int | None,
    unit: str = DEFAULT_RESAMPLE,
    *,
    clusters: Clusters = None,
) -> Resampling:
    """The shared draw of a command: `n_resamples` resamples of `video_ids` by `unit`, seeded.

    `unit="clinician"` (the default) draws the clinicians with replacement and keeps all videos of each draw (the
    cluster bootstrap: a clinician's responses resemble each other, so video resampling gives CIs too narrow by
    about 1.7x on the full benchmark); `unit="video"` draws videos (the paper's protocol). `clusters` maps a video
    to its clinician where the ids do not say it. Every statistic of the command draws from this one plan."""
    check_unit(unit)
    n = len(video_ids)
    if unit == "video":
        codes, names = np.arange(n), tuple(str(video) for video in video_ids)
    else:
        labels = clinician_clusters(video_ids, clusters)
        names_array, codes = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
        names = tuple(str(name) for name in names_array)
    draws = bootstrap_indices(len(names), n_resamples, seed)
    return Resampling(unit, np.asarray(codes, dtype=np.int64), names, draws, seed)


def clinician_labels(video_ids: Sequence[str], clusters: Clusters = None) -> np.ndarray | None:
    """Each video's clinician as an array, or None where the ids name none and no clusters are given."""
    try:
        return np.asarray(clinician_clusters(video_ids, clusters), dtype=object)
    except DataError:
        return None


def clusters_per_block(labels: np.ndarray | None, valid: np.ndarray) -> list[int | None]:
    """How many clinicians each block's valid items (columns of `valid`, (n, blocks)) come from."""
    if labels is None:
        return [None] * valid.shape[1]
    return [int(np.unique(labels[valid[:, block]]).size) for block in range(valid.shape[1])]


def block_supports(labels: np.ndarray | None, valid: np.ndarray, unit: str) -> list[Support]:
    """The `reporting_floor.Support` of each block (columns of `valid`, (n, blocks)): its videos, the clinicians
    they come from (`labels`: each video's, None where unknown) and the resampling `unit`."""
    counts = clusters_per_block(labels, valid)
    return [Support(int(valid[:, b].sum()), counts[b], unit) for b in range(valid.shape[1])]


def weakest_support(supports: Sequence[Support], unit: str) -> Support:
    """The support of a figure over several blocks (a mean over dimensions): its weakest block's videos and
    clinicians, since the figure is defined only where every block is."""
    if not supports:
        return Support(0, None, unit)
    clusters = [s.n_clusters for s in supports]
    return Support(min(s.n_videos for s in supports), None if None in clusters else min(clusters), unit)


def attach_clustering(entries: list[dict], counts: Sequence[int | None], effects: Sequence, ci_key: str) -> None:
    """Each entry (a block's output) gets its clinicians (`n_clusters`) and its design effect, where its CI
    (`ci_key`) stands: the one place `score` and `compare` say how clustered a figure is."""
    for entry, n_clusters, effect in zip(entries, counts, effects, strict=True):
        entry["n_clusters"] = n_clusters
        entry["design_effect"] = effect if entry.get(ci_key) is not None else None


def counterpart(plan: Resampling, video_ids: Sequence[str], clusters: Clusters = None) -> Resampling:
    """The same number of resamples and seed by the other unit: the second bootstrap of a design effect."""
    other_unit = "video" if plan.unit == "clinician" else "clinician"
    return make_resampling(video_ids, plan.n_resamples, plan.seed, other_unit, clusters=clusters)


def counterpart_icc(
    plan: Resampling, video_ids: Sequence[str], clusters: Clusters, blocks: tuple[np.ndarray, np.ndarray]
) -> Background[np.ndarray]:
    """The ICC(3,1) replicates (B, blocks) of `blocks` (ratings (n, D, 2), valid (n, D)) under the `counterpart`
    draw, the design effect's second bootstrap: started on a resampling thread (`resampling_threads`), so it
    runs beside the command's own statistics; `.result()` when they are done."""
    ratings, valid = blocks
    return in_background(lambda: bootstrap_blocks(ratings, valid, counterpart(plan, video_ids, clusters))["icc"])


def design_effects(plan: Resampling, own: np.ndarray, other: np.ndarray) -> list[float | None]:
    """Per column, the design effect from the replicates of `plan` (`own`) and of its counterpart (`other`)."""
    clustered, independent = (own, other) if plan.unit == "clinician" else (other, own)
    return [None if np.isnan(value) else float(value) for value in design_effect(clustered, independent)]


def design_effect(clustered: np.ndarray, independent: np.ndarray) -> np.ndarray:
    """Per column: the variance of the replicates under clinician resampling over that under video resampling
    (axis 0: resamples; NaN replicates ignored; NaN where either variance is undefined or the video one is 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        num = quiet_nanvar(clustered)
        den = quiet_nanvar(independent)
        return np.where((den > 0) & np.isfinite(num), num / np.where(den > 0, den, 1.0), np.nan)
