"""Splits: 80/10/10, deterministic for a seed, no video (and with clinician grouping no
clinician) in two splits; the card records the rule, seed and counts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import STIMULI, SplitPlan, build_dataset, parse_video_id
from mis_bench_dataset.splits import SPLITS, assign_splits, split_counts
from mis_bench_dataset.synth.generator import synthetic_video_ids

video_ids = st.lists(
    st.builds(lambda c, t, s: f"C{c:04d}_T{t}_{s}", st.integers(0, 60), st.integers(1, 3), st.sampled_from(STIMULI)),
    min_size=3,
    max_size=300,
    unique=True,
)


@settings(max_examples=60, deadline=None)
@given(video_ids, st.integers(0, 2**31 - 1))
def test_video_split_is_a_deterministic_80_10_10_partition(ids, seed):
    a = assign_splits(ids, "video", seed)
    assert a == assign_splits(list(reversed(ids)), "video", seed)
    assert set(a) == set(ids) and set(a.values()) <= set(SPLITS)
    counts = split_counts(a)
    n = len(ids)
    assert all(counts[s] >= 1 for s in SPLITS)
    assert abs(counts["validation"] - 0.1 * n) <= 1 and abs(counts["test"] - 0.1 * n) <= 1


@settings(max_examples=60, deadline=None)
@given(video_ids, st.integers(0, 2**31 - 1))
def test_clinician_split_never_shares_a_clinician(ids, seed):
    a = assign_splits(ids, "clinician", seed)
    assert a == assign_splits(sorted(ids), "clinician", seed)
    where: dict[str, set[str]] = {}
    for video_id, split in a.items():
        where.setdefault(parse_video_id(video_id).clinician, set()).add(split)
    assert all(len(s) == 1 for s in where.values())
    if len(where) >= 3:
        assert all(n >= 1 for n in split_counts(a).values())


def test_clinician_split_is_close_to_80_10_10_at_real_scale():
    import numpy as np

    ids = synthetic_video_ids(996, np.random.default_rng(0))
    assert len({parse_video_id(v).clinician for v in ids}) == 78
    counts = split_counts(assign_splits(ids, "clinician", 0))
    assert abs(counts["train"] / 996 - 0.8) < 0.03
    assert abs(counts["test"] / 996 - 0.1) < 0.03 and abs(counts["validation"] / 996 - 0.1) < 0.03


def test_seed_changes_the_split():
    import numpy as np

    ids = synthetic_video_ids(200, np.random.default_rng(0))
    assert assign_splits(ids, "video", 0) != assign_splits(ids, "video", 1)


def test_bad_split_rule_is_named():
    with pytest.raises(ValueError, match="split_by"):
        assign_splits(["AB0101_T1_Luke"], "patient", 0)


def test_clinician_build_and_card(synthetic_build, tmp_path):
    from datasets import load_dataset

    release = synthetic_build.parent / "release"
    report = build_dataset(
        release,
        tmp_path / "out",
        labels=release / "ratings.csv",
        split=SplitPlan(split_by="clinician", seed=7),
        progress=False,
    )
    clinicians = {}
    for split in SPLITS:
        for c in load_dataset(str(tmp_path / "out"), "scoring", split=split)["clinician"]:
            clinicians.setdefault(c, set()).add(split)
    assert all(len(v) == 1 for v in clinicians.values())
    card = (tmp_path / "out" / "README.md").read_text()
    assert "by clinician" in card and "seed 7" in card
    for split, n in report.split_counts.items():
        assert f"{split}: {n} videos" in card
    loaded = {split: len(load_dataset(str(tmp_path / "out"), "features", split=split)) for split in SPLITS}
    assert loaded == report.split_counts and sum(loaded.values()) == 40
