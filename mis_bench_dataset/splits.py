"""Deterministic, leak-free train/validation/test splits (80/10/10).

`by="video"` is the paper's rule (no video in two splits). `by="clinician"` keeps
each clinician's videos together (the same clinician appears in up to 24 videos,
so a video split leaks identity): clinicians are shuffled with the seed and each
goes to the split furthest below its target share of videos.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from mis_bench_dataset.video_ids import parse_video_id

SPLITS: tuple[str, ...] = ("train", "validation", "test")
ALL_SPLITS = "all"  # every split a build wrote (`mis-bench stats --split all`)
FRACTIONS: tuple[float, ...] = (0.8, 0.1, 0.1)
SPLIT_BY: tuple[str, ...] = ("video", "clinician")


def _video_split(video_ids: list[str], seed: int) -> dict[str, str]:
    n = len(video_ids)
    order = np.random.default_rng(seed).permutation(n)
    n_val = max(1, round(n * FRACTIONS[1])) if n >= 3 else 0
    n_test = max(1, round(n * FRACTIONS[2])) if n >= 3 else 0
    n_train = n - n_val - n_test
    names = ["train"] * n_train + ["validation"] * n_val + ["test"] * n_test
    return {video_ids[i]: names[rank] for rank, i in enumerate(order)}


def _clinician_split(video_ids: list[str], seed: int) -> dict[str, str]:
    groups: dict[str, list[str]] = defaultdict(list)
    for video_id in video_ids:
        groups[parse_video_id(video_id).clinician].append(video_id)
    clinicians = sorted(groups)
    order = np.random.default_rng(seed).permutation(len(clinicians))
    n = len(video_ids)
    targets = np.array(FRACTIONS) * n
    counts = np.zeros(len(SPLITS))
    assignment: dict[str, str] = {}
    for rank, i in enumerate(order):
        clinician = clinicians[i]
        if rank < len(SPLITS) and len(clinicians) >= len(SPLITS):
            # Seed each split with one clinician, smallest targets first, so none is empty.
            slot = [2, 1, 0][rank]
        else:
            slot = int(np.argmax(targets - counts))
        counts[slot] += len(groups[clinician])
        for video_id in groups[clinician]:
            assignment[video_id] = SPLITS[slot]
    return assignment


def assign_splits(video_ids: list[str] | tuple[str, ...], by: str = "video", seed: int = 0) -> dict[str, str]:
    """Map each video id to 'train' / 'validation' / 'test'; same inputs and seed, same answer."""
    ids = sorted(set(video_ids))
    if by == "video":
        return _video_split(ids, seed)
    if by == "clinician":
        return _clinician_split(ids, seed)
    raise ValueError(f"split_by must be one of {SPLIT_BY}, got {by!r}")


def split_counts(assignment: dict[str, str]) -> dict[str, int]:
    return {name: sum(1 for s in assignment.values() if s == name) for name in SPLITS}
