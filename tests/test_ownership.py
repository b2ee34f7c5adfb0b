"""Nothing the user owns is ever lost: writers replace only their own files, never their inputs.

Each case snapshots every file under the test folder before the command and checks that
everything that existed before is byte-identical afterwards (or, for a refused command,
that nothing changed at all).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eval_scripts.cli import main
from mis_bench_dataset import SplitPlan, build_dataset, generate_synthetic_release
from mis_bench_dataset.toolkit.atomic import write_atomic
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.ownership import MANIFEST_NAME, OutputFolder, claim_file, read_manifest


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_kept(before: dict[str, bytes], root: Path) -> None:
    after = snapshot(root)
    changed = [name for name, data in before.items() if after.get(name) != data]
    assert not changed, f"files changed or lost: {changed[:5]}"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error_line(err: str, command: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mis-bench {command}: error: ")
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return generate_synthetic_release(tmp_path_factory.mktemp("own") / "release", n_videos=12, seed=3)


@pytest.fixture
def work(tmp_path, release):
    shutil.copytree(release.release_dir, tmp_path / "release")
    return tmp_path


def test_build_refuses_an_out_folder_that_holds_the_release(work, capsys):
    # The reported case: an earlier build folder that happens to hold the release.
    nested = work / "build"
    shutil.move(str(work / "release"), nested / "release")
    before = snapshot(work)
    code, _, err = run_cli(
        capsys,
        "build",
        str(nested / "release"),
        "--labels",
        str(nested / "release" / "ratings.csv"),
        "--out",
        str(nested),
    )
    assert code == 2
    assert_one_error_line(err, "build")
    assert "overlaps the input" in err
    assert_kept(before, work)


@pytest.mark.parametrize("out", ["release/inside", "release"])
def test_build_refuses_an_out_folder_inside_or_equal_to_the_release(work, capsys, out):
    before = snapshot(work)
    code, _, err = run_cli(capsys, "build", str(work / "release"), "--out", str(work / out))
    assert code == 2 and "overlaps the input" in err
    assert_kept(before, work)
    assert not (work / "release" / "inside").exists()


def test_build_refuses_labels_inside_the_out_folder(work):
    out = work / "build"
    out.mkdir()
    shutil.copy(work / "release" / "ratings.csv", out / "ratings.csv")
    with pytest.raises(UsageError, match="overlaps the input"):
        build_dataset(work / "release", out, labels=out / "ratings.csv", progress=False)
    assert (out / "ratings.csv").is_file()


def test_rebuild_refuses_a_build_folder_holding_a_user_file_and_names_it(work, capsys):
    out = work / "build"
    build_dataset(work / "release", out, progress=False)
    (out / "notes.md").write_text("my analysis")
    (out / "scoring" / "extra.parquet").write_bytes(b"mine")
    before = snapshot(work)
    code, _, err = run_cli(capsys, "build", str(work / "release"), "--out", str(out), "--seed", "1")
    assert code == 1
    assert_one_error_line(err, "build")
    assert "notes.md" in err and "scoring/extra.parquet" in err
    assert_kept(before, work)


def test_rebuild_of_its_own_folder_replaces_it(work):
    out = work / "build"
    first = build_dataset(work / "release", out, progress=False)
    owned = read_manifest(out)
    assert "README.md" in owned and "build_report.json" in owned and all(v == "build" for v in owned.values())
    second = build_dataset(work / "release", out, split=SplitPlan(seed=4), progress=False)
    assert second.split_counts == first.split_counts and (out / MANIFEST_NAME).is_file()


def test_a_build_folder_without_its_manifest_is_never_replaced(work):
    """No release wrote builds without a manifest: a folder without one is the user's, whatever its file names."""
    out = work / "build"
    build_dataset(work / "release", out, progress=False)
    (out / MANIFEST_NAME).unlink()
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(DataError, match="README.md"):
        build_dataset(work / "release", out, split=SplitPlan(seed=2), progress=False)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_file_added_during_the_build_is_not_deleted(work, monkeypatch):
    import mis_bench_dataset.builder.card as card_module

    out = work / "build"
    build_dataset(work / "release", out, progress=False)

    original = card_module.write_card

    def write_card_then_user_adds_a_file(*args, **kwargs):
        (out / "added-meanwhile.txt").write_text("mine")
        return original(*args, **kwargs)

    monkeypatch.setattr(card_module, "write_card", write_card_then_user_adds_a_file)
    with pytest.raises(DataError, match="added-meanwhile.txt"):
        build_dataset(work / "release", out, split=SplitPlan(seed=7), progress=False)
    assert (out / "added-meanwhile.txt").read_text() == "mine"
    assert not [p for p in work.iterdir() if p.name.startswith(".build")], "staging folder left behind"


def test_synth_into_a_file_or_a_nonempty_folder_is_refused(work, capsys):
    target = work / "a-file"
    target.write_text("mine")
    code, _, err = run_cli(capsys, "synth", str(target), "--videos", "2")
    assert code == 2 and "is a file" in err
    assert_one_error_line(err, "synth")
    code, _, err = run_cli(capsys, "synth", str(work / "release"), "--videos", "2")
    assert code == 1 and "not empty" in err
    assert target.read_text() == "mine"


@pytest.fixture(scope="module")
def scored(synthetic_build):
    """A build (the session's, read only: the writers under test write beside the predictions) and a long-form
    predictions file for the score/compare writers."""
    from mis_icc_metric import read_references

    references = read_references(synthetic_build, split="train")
    predictions = [
        {"video_id": v, "dimension": d, "prediction": min(5.0, gold + 0.1)} for (v, d), gold in references.items()
    ]
    return synthetic_build, predictions


def test_score_json_never_replaces_its_own_input_or_a_user_file(tmp_path, scored, capsys):
    from mis_icc_metric import write_predictions

    build, predictions = scored
    pred = tmp_path / "pred.csv"
    write_predictions(pred, predictions)
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "notes"}')
    before = snapshot(tmp_path)
    common = ["score", "--predictions", str(pred), "--references", str(build), "--split", "train", "--bootstrap", "0"]
    code, _, err = run_cli(capsys, *common, "--out", str(pred))
    assert code == 2 and "would overwrite the input" in err
    assert_one_error_line(err, "score")
    code, _, err = run_cli(capsys, *common, "--out", str(mine))
    assert code == 1 and "was not written by mis-bench score" in err
    code, _, err = run_cli(capsys, *common, "--out", str(tmp_path))
    assert code == 2 and "is a folder" in err
    assert_kept(before, tmp_path)
    # Its own earlier output is replaced on a rerun.
    out = tmp_path / "scores.json"
    assert run_cli(capsys, *common, "--out", str(out))[0] == 0
    assert run_cli(capsys, *common, "--out", str(out), "--seed", "1")[0] == 0
    assert json.loads(out.read_text())["meta"]["seed"] == 1  # the rerun's result replaced the first
    assert_kept(before, tmp_path)


def test_compare_json_never_replaces_an_input(tmp_path, scored, capsys):
    from mis_icc_metric import write_predictions

    build, predictions = scored
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_predictions(a, predictions)
    write_predictions(b, predictions)
    before = snapshot(tmp_path)
    code, _, err = run_cli(
        capsys,
        "compare",
        str(a),
        str(b),
        "--references",
        str(build),
        "--split",
        "train",
        "--bootstrap",
        "100",
        "--out",
        str(b),
    )
    assert code == 2 and "would overwrite the input" in err
    assert_kept(before, tmp_path)


def test_output_folder_claims(tmp_path):
    folder = OutputFolder(tmp_path / "out", command="report")
    target = folder.claim("report.md", "report")
    assert "report.md" not in read_manifest(tmp_path / "out"), "a claim records nothing before the file exists"
    write_atomic(target, "v1")  # written whole: recorded now
    assert read_manifest(tmp_path / "out") == {"report.md": "report"}
    (tmp_path / "out" / "user.md").write_text("mine")
    again = OutputFolder(tmp_path / "out", command="report")
    assert again.claim("report.md", "report") == target  # its own: may be replaced
    with pytest.raises(DataError, match="user.md"):
        again.claim_all(["new.png", "user.md"], "report")
    assert "new.png" not in read_manifest(tmp_path / "out"), "a refused batch claims nothing"
    with pytest.raises(DataError, match="was not written"):
        OutputFolder(tmp_path / "out", command="score").claim("report.md", "score-json")  # another writer's file
    assert not again.remove_owned("user.md", "report") and (tmp_path / "out" / "user.md").exists()
    assert again.remove_owned("report.md", "report") and not target.exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        OutputFolder(tmp_path / "file", command="report")
    with pytest.raises(DataError, match="needs a folder"):
        OutputFolder(tmp_path, command="run").claim("file/results.json", "results")
    with pytest.raises(UsageError, match="is a folder"):
        claim_file(tmp_path / "out", command="score", writer="score-json", arg="--json")
