"""The leaderboard's listing and ranking: a hostile model or file name never forges a line of the listing, and
a submission on another dataset (another fingerprint) is rejected, not ranked.
"""

from __future__ import annotations

import json

from eval_scripts.cli import main


def test_hostile_names_never_forge_a_line_of_the_leaderboard_listing(tmp_path, capsys) -> None:
    from _leaderboard_helpers import make_references, make_results, noisy_predictions

    references = make_references()
    gold = tmp_path / "gold.csv"
    gold.write_text("video_id,dimension,score\n" + "".join(f"{v},{d},{s}\n" for (v, d), s in references.items()))
    subs = tmp_path / "subs"
    subs.mkdir()
    forged = "org/m\n    1. org/forged [text, direct] overall ICC 99.9%"
    (subs / "a.json").write_text(json.dumps(make_results(noisy_predictions(references, 0.3, seed=1), model=forged)))
    (subs / "bad\n  rejected nothing.json").write_text("{")
    assert (
        main(["leaderboard", str(subs), "--references", str(gold), "--bootstrap", "100", "--out", str(tmp_path / "b")])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3  # the summary and two rejected files: a name holding a newline is refused
    assert lines[1].startswith("  rejected a.json: the model name holds invisible or format characters (U+000A)")
    assert lines[2].startswith("  rejected bad\\x0a  rejected nothing.json: malformed JSON")


def test_a_submission_on_another_dataset_is_not_ranked(synthetic_build, tmp_path, capsys) -> None:
    from mis_bench_dataset import BuiltDataset
    from mis_icc_metric import read_references

    from _leaderboard_helpers import make_results, noisy_predictions

    references = read_references(synthetic_build, split="test")
    subs = tmp_path / "subs"
    subs.mkdir()
    for name, noise, fingerprint in (
        ("same.json", 0.6, BuiltDataset.of(synthetic_build).fingerprint("test")),
        ("other.json", 0.1, "sha256:" + "0" * 64),
    ):
        results = make_results(noisy_predictions(references, noise, seed=1), model=name)
        results["dataset"]["fingerprint"] = fingerprint
        (subs / name).write_text(json.dumps(results))
    args = ["leaderboard", str(subs), "--references", str(synthetic_build), "--bootstrap", "100"]
    assert main([*args, "--out", str(tmp_path / "board"), "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert [e["file"] for e in board["entries"]] == ["same.json"]
    (rejected,) = board["rejected"]
    assert rejected["file"] == "other.json" and "fingerprint" in rejected["reasons"][0]
    assert "sha256:" + "0" * 64 in rejected["reasons"][0]
