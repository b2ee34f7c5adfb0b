"""A release's file names: the exact name wins over a stray look-alike (which is reported), and a name with a
newline is escaped in the build's listing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from eval_scripts.cli import main
from mis_bench_dataset import build_dataset, generate_synthetic_release


def _transcript(path: Path) -> str:
    with np.load(path) as npz:
        return str(npz["text"].reshape(()).item())


def test_the_exact_file_name_wins_and_the_stray_one_is_reported(tmp_path) -> None:
    from mis_bench_dataset import BuiltDataset

    release = generate_synthetic_release(tmp_path / "release", n_videos=10, seed=2).release_dir
    exact = sorted((release / "text" / "words").glob("*.npz"))[0]
    video_id = exact.stem
    stray = exact.with_name(f"{video_id} .npz")  # a trailing space sorts before "."
    np.savez(stray, text=np.array("a stray transcript that must not be used"))
    report = build_dataset(release, tmp_path / "built", progress=False)
    rows = [r for split in ("train", "validation", "test") for r in BuiltDataset.of(tmp_path / "built").rows(split)]
    assert {r["transcript"] for r in rows if r["video_id"] == video_id} == {_transcript(exact)}
    named = [p for p in report.problems if p.path and p.path.endswith(".npz") and p.video_id == video_id]
    assert [p.path for p in named] == [f"text/words/{video_id} .npz"]


def test_a_file_name_with_a_newline_is_escaped_in_the_listing(tmp_path, capsys) -> None:
    release = generate_synthetic_release(tmp_path / "release", n_videos=10, seed=2).release_dir
    exact = sorted((release / "text" / "words").glob("*.npz"))[0]
    shutil.copy(exact, exact.with_name("EVIL\nFAKE_T1_Luke.npz"))
    assert main(["build", str(release), "--out", str(tmp_path / "built")]) == 0
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "text/words/EVIL\\x0aFAKE_T1_Luke.npz" in text
    assert not [line for line in text.splitlines() if line.startswith("FAKE_T1_Luke")]
