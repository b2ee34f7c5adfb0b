"""Hostile inputs are refused or neutralised: oversized arrays unread, user text escaped in every output."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mis_bench_dataset import build_dataset, generate_synthetic_release
from mis_bench_dataset.release.tree import MODALITY_BY_NAME, npz_headers
from mis_bench_dataset.rules.text_safety import clean_terminal, escape_csv, escape_html, escape_markdown

from _leaderboard_helpers import make_references, make_results, noisy_predictions

UNSAFE = ["\x00", "\x1b", "\u202e", "\u2066", "\x7f", "\u200f"]
HOSTILE_NAME = "org/<script>alert(1)</script>\x00\u202eevil|*x* [l](http://e)\x1b[31m=cmd"


def _header_only_npz(path: Path, shape: tuple[int, ...]) -> None:
    """An npz whose `features` header claims `shape` (float32) with no data behind it: what a 3 MB hostile
    file claiming 1.5 million frames looks like to a reader that trusts it."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("features.npy", header.getvalue())
        timestamps = io.BytesIO()
        np.save(timestamps, np.zeros(3, np.float32))
        archive.writestr("timestamps.npy", timestamps.getvalue())


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return generate_synthetic_release(tmp_path_factory.mktemp("hostile") / "release", n_videos=6, seed=5)


def test_the_header_is_read_without_the_data(tmp_path):
    path = tmp_path / "x.npz"
    _header_only_npz(path, (1_500_000, 208))
    assert path.stat().st_size < 1000
    shape, dtype = npz_headers(path)["features"]
    assert shape == (1_500_000, 208) and dtype == np.float32


def test_an_array_beyond_two_hours_is_reported_and_never_decompressed(release, tmp_path, monkeypatch):
    import mis_bench_dataset.release.tree as release_module

    root = tmp_path / "release"
    shutil.copytree(release.release_dir, root)
    victim = release.video_ids[0]
    path = root / MODALITY_BY_NAME["openface"].folder / f"{victim}.npz"
    _header_only_npz(path, (1_500_000, 208))  # 1.5 M frames: 14 hours at 30 fps, 1.2 GB as float32
    loaded = []
    real_load = np.load
    monkeypatch.setattr(release_module.np, "load", lambda p, *a, **k: loaded.append(Path(p)) or real_load(p, *a, **k))
    report = build_dataset(root, tmp_path / "out", progress=False)
    problems = [p for p in report.problems if p.kind == "too_large"]
    assert [(p.video_id, p.modality) for p in problems] == [(victim, "openface")]
    assert "1,500,000 rows" in problems[0].reason and "never decompressed" in problems[0].reason
    assert path not in loaded and len(loaded) > 10  # every other file was read
    assert report.n_videos == 6 and report.modalities_present["openface"] == 5  # the video is kept, its face empty


def test_the_limit_is_settable(release, tmp_path):
    report = build_dataset(release.release_dir, tmp_path / "out", progress=False, max_seconds=0.05)
    kinds = {(p.kind, p.modality) for p in report.problems}
    assert ("too_large", "openface") in kinds and ("too_large", "librosa") in kinds  # 0.05 s: 3 frames at 60 fps


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_escaped_text_carries_no_control_or_bidi_character(text):
    for escaped in (escape_html(text), escape_markdown(text), escape_csv(text)):
        assert not any(c in escaped for c in UNSAFE) and "\n" not in escaped
    assert "<" not in escape_html(text) and "<" not in escape_markdown(text)
    terminal = clean_terminal(text)
    assert not any(c in terminal for c in UNSAFE)
    assert escape_csv("=" + text).startswith("'=")


def test_a_hostile_model_name_is_escaped_in_every_output(tmp_path, capsys):
    from eval_scripts.cli import main

    references = make_references()
    gold = tmp_path / "gold.csv"
    gold.write_text("video_id,dimension,score\n" + "".join(f"{v},{d},{s}\n" for (v, d), s in references.items()))
    runs = tmp_path / "runs"
    runs.mkdir()
    for index, name in enumerate((HOSTILE_NAME, "org/plain")):
        results = make_results(noisy_predictions(references, 0.3 + index, seed=index), model=name)
        (runs / f"r{index}.json").write_text(json.dumps(results))
    assert (
        main(
            [
                "report",
                str(runs / "r0.json"),
                str(runs / "r1.json"),
                "--references",
                str(gold),
                "--comparison-bootstrap",
                "50",
                "--bootstrap",
                "50",
                "--out",
                str(tmp_path / "rep"),
            ]
        )
        == 0
    )
    assert main(["submit", str(runs / "r0.json"), "--out", str(tmp_path / "subs")]) == 0
    assert main(["submit", str(runs / "r1.json"), "--out", str(tmp_path / "subs")]) == 0
    assert (
        main(
            [
                "leaderboard",
                str(tmp_path / "subs"),
                "--references",
                str(gold),
                "--bootstrap",
                "50",
                "--out",
                str(tmp_path / "board"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    outputs = {
        "report.md": (tmp_path / "rep" / "report.md").read_text(),
        "report.html": (tmp_path / "rep" / "report.html").read_text(),
        "leaderboard.csv": (tmp_path / "board" / "leaderboard.csv").read_text(),
        "index.html": (tmp_path / "board" / "index.html").read_text(),
        "stdout": printed.out,
        "stderr": printed.err,
    }
    for where, text in outputs.items():
        assert not any(c in text for c in UNSAFE), where
        if where.endswith((".md", ".html")):  # markup matters there; in a CSV cell or a terminal it is just text
            assert "<script>alert" not in text, where
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outputs["report.html"] + outputs["report.md"]
    assert "\\u202eevil" in outputs["report.html"] and "\\u202eevil" in outputs["stdout"]
    assert "evil\\|" in outputs["report.md"]
