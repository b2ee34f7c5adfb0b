"""`mis-bench submit`, `mis-bench leaderboard` and `mis-bench report` through the real CLI dispatcher."""

from __future__ import annotations

import csv
import json

import pytest

from eval_scripts.cli import main as cli_main
from eval_scripts.leaderboard.disclosure import MIN_PUBLISHED_VIDEOS
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions

from _leaderboard_helpers import make_results, noisy_predictions


@pytest.fixture(scope="module")
def labelled(synthetic_build):
    """(dataset folder, test references) of the shared synthetic build."""
    from mis_icc_metric import read_references

    return synthetic_build, read_references(synthetic_build, split="test")


def _results_file(tmp_path, name, references, noise, seed, fingerprint=None, **kw):
    path = tmp_path / name
    results = make_results(noisy_predictions(references, noise, seed=seed), **kw)
    if fingerprint is not None:
        results["dataset"]["fingerprint"] = fingerprint
    path.write_text(json.dumps(results))
    return path


def _fingerprint(dataset):
    from mis_bench_dataset import BuiltDataset

    return BuiltDataset.of(dataset).fingerprint("test")


def test_submit_packages_a_valid_file_and_checks_coverage(tmp_path, labelled, capsys):
    dataset, references = labelled
    source = _results_file(tmp_path, "r.json", references, 0.3, 1, model="org/m", fingerprint=_fingerprint(dataset))
    assert (
        cli_main(["submit", str(source), "--references", str(dataset), "--out", str(tmp_path / "pkg"), "--json"]) == 0
    )
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["ok"] and outcome["coverage_checked"] and outcome["pushed"] is None
    with open(outcome["package"]) as handle:
        packaged = json.load(handle)
    assert packaged == json.loads(source.read_text())


def test_submit_rejects_with_reasons_and_exit_code_1(tmp_path, labelled, capsys):
    dataset, references = labelled
    partial = {k: v for i, (k, v) in enumerate(sorted(references.items())) if i % 2}
    source = tmp_path / "partial.json"
    obj = make_results(noisy_predictions(partial, 0.3, seed=2))
    from mis_bench_dataset import BuiltDataset

    # made on this build (another build is one problem of its own: test_submit_other_build.py)
    obj["dataset"]["fingerprint"] = BuiltDataset.of(dataset).build_fingerprint("test")
    obj["predictions"][0]["prediction"] = 9.5
    source.write_text(json.dumps(obj))
    assert cli_main(["submit", str(source), "--references", str(dataset), "--out", str(tmp_path / "pkg")]) == 1
    captured = capsys.readouterr()
    assert "submission rejected" in captured.err and "partial.json" in captured.err
    assert len(captured.err.strip().splitlines()[-1:]) == 1 and "Traceback" not in captured.err
    assert "coverage:" in captured.err and "9.5 is not a number" in captured.err  # every reason is listed (stderr)
    assert not (tmp_path / "pkg").exists()


def test_leaderboard_command_writes_csv_json_html(tmp_path, labelled, capsys):
    dataset, references = labelled
    subs = tmp_path / "subs"
    subs.mkdir()
    from mis_bench_dataset import BuiltDataset

    # The references are a build: only a submission made on it is ranked (its fingerprint).
    _results_file(
        subs,
        "good.json",
        references,
        0.2,
        3,
        model="org/good",
        fingerprint=BuiltDataset.of(dataset).fingerprint("test"),
    )
    _results_file(subs, "bad.json", references, 0.2, 3, model="org/bad", split="validation")
    (subs / "broken.json").write_bytes(b"\xff\xfe not json")
    out = tmp_path / "board"
    assert (
        cli_main(["leaderboard", str(subs), "--references", str(dataset), "--out", str(out), "--bootstrap", "100"]) == 0
    )
    printed = capsys.readouterr().out
    assert "1 ranked, 2 rejected" in printed and "rejected bad.json" in printed
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["n_videos"] == len({v for v, _ in references}) < MIN_PUBLISHED_VIDEOS
    # The synthetic build's test split is too small for a published figure: ranked, figures withheld.
    with open(out / "leaderboard.csv", newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["model"] == "org/good" and row["overall_icc"] == "" and row["rank"] == "1"
    assert "fewer than the 10" in board["entries"][0]["scores"]["withheld"]
    assert "org/good" in (out / "index.html").read_text()


def test_report_command_rescoring_with_references(tmp_path, labelled, capsys):
    dataset, references = labelled
    runs = tmp_path / "runs"
    for i, noise in enumerate((0.2, 0.6)):
        (runs / f"run{i}").mkdir(parents=True)
        _results_file(runs / f"run{i}", "results.json", references, noise, 10 + i, model=f"org/m{i}")
    assert (
        cli_main(
            [
                "report",
                str(runs),
                "--references",
                str(dataset),
                "--out",
                str(tmp_path / "rep"),
                "--bootstrap",
                "100",
                "--comparison-bootstrap",
                "200",
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    # heatmap, radar, and per best configuration a scatter, a Bland-Altman, a calibration and a histogram figure
    assert len(summary["runs"]) == 2 and len(summary["figures"]) == 2 + 2 * 4
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert [e["model"] for e in report["best_configuration"]] == ["org/m0", "org/m1"]
    assert report["comparison"]["n_bootstrap"] == 200 and len(report["comparison"]["paired"]) == 1
    markdown = (tmp_path / "rep" / "report.md").read_text()
    assert "org/m0" in markdown and "org/m1" in markdown


def test_report_command_needs_scores_or_references(tmp_path, labelled, capsys):
    _, references = labelled
    source = _results_file(tmp_path, "results.json", references, 0.3, 5)
    assert cli_main(["report", str(source), "--out", str(tmp_path / "rep")]) == 1  # a data error
    assert "pass --references" in capsys.readouterr().err
    assert cli_main(["report", str(tmp_path / "absent"), "--out", str(tmp_path / "rep")]) == 2  # a wrong path: usage
    assert "no such file or folder" in capsys.readouterr().err


def test_report_of_already_scored_results_without_references(tmp_path, labelled):
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import score_predictions

    _, references = labelled
    predictions = noisy_predictions(references, 0.3, seed=6)
    obj = make_results(
        predictions,
        scores=json_safe(score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=20))),
    )
    source = tmp_path / "results.json"
    source.write_text(json.dumps(obj))
    assert cli_main(["report", str(source), "--out", str(tmp_path / "rep")]) == 0
    assert set(DIMENSION_KEYS) <= set(obj["scores"]["dimensions"])
    assert (tmp_path / "rep" / "report.html").is_file()


def test_space_app_builds_its_board_from_the_environment(tmp_path, labelled, monkeypatch):
    from eval_scripts.leaderboard.page import render_page
    from eval_scripts.leaderboard.space_app import build_board_from_env, site_files

    dataset, references = labelled
    subs = tmp_path / "subs"
    subs.mkdir()
    _results_file(subs, "a.json", references, 0.2, 21, model="org/a", fingerprint=_fingerprint(dataset))
    monkeypatch.setenv("MIS_BENCH_SUBMISSIONS", str(subs))
    monkeypatch.setenv("MIS_BENCH_REFERENCES", str(dataset))
    monkeypatch.setenv("MIS_BENCH_BOOTSTRAP", "30")
    board = build_board_from_env()
    assert [e["model"] for e in board["entries"]] == ["org/a"] and board["n_bootstrap"] == 30
    page = site_files(board)["/"][1].decode("utf-8")
    assert page == render_page(board)
    monkeypatch.delenv("MIS_BENCH_REFERENCES")
    with pytest.raises(SystemExit, match="MIS_BENCH_REFERENCES"):
        build_board_from_env()


def test_submit_with_dataset_refuses_another_build(tmp_path, labelled, capsys):
    dataset, references = labelled
    source = _results_file(tmp_path, "r.json", references, 0.3, 1, model="org/m")  # the helper's fingerprint
    assert cli_main(["submit", str(source), "--references", str(dataset), "--out", str(tmp_path / "pkg")]) == 1
    err = capsys.readouterr().err
    assert "dataset fingerprint 'abc123' (dataset 'mis-bench-synthetic') is not the references'" in err
    assert "Traceback" not in err
    assert not (tmp_path / "pkg").exists()


def test_submit_refuses_a_lone_surrogate_with_its_reason(tmp_path, capsys):
    text = json.dumps(make_results(noisy_predictions({("C0101_T2_Luke", "empathy"): 3.0}, 0.1, 1), model="SUR"))
    source = tmp_path / "r.json"
    source.write_text(text.replace('"SUR"', '"sur\\ud800rogate"'))
    assert cli_main(["submit", str(source), "--out", str(tmp_path / "pkg")]) == 1
    err = capsys.readouterr().err
    assert "lone surrogate" in err and "internal error" not in err and not (tmp_path / "pkg").exists()


def test_submit_push_opens_a_pull_request(tmp_path, labelled, capsys, monkeypatch):
    import huggingface_hub

    _, references = labelled
    calls = []

    class FakeApi:
        def __init__(self, token=None):
            self.token = token

        def upload_file(self, **kwargs):
            calls.append((self.token, kwargs))
            return type("CommitInfo", (), {"pr_url": "https://huggingface.co/datasets/org/req/discussions/7"})()

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    source = _results_file(tmp_path, "r.json", references, 0.3, 1, model="org/m")
    out = tmp_path / "pkg"
    assert cli_main(["submit", str(source), "--out", str(out), "--push", "org/req", "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["pushed"] == "https://huggingface.co/datasets/org/req/discussions/7"
    ((token, kwargs),) = calls
    assert token == "hf_test" and kwargs["create_pr"] is True and kwargs["repo_type"] == "dataset"
    assert kwargs["repo_id"] == "org/req" and kwargs["path_in_repo"] == "requests/" + outcome["package"].split("/")[-1]


def test_submit_names_a_local_models_entry_and_the_board_shows_its_method(tmp_path, labelled, capsys):
    dataset, references = labelled
    folder = tmp_path / "real-raft"
    folder.mkdir()
    source = _results_file(tmp_path, "r.json", references, 0.3, 1, model=str(folder), fingerprint=_fingerprint(dataset))
    results = json.loads(source.read_text())
    results["system"]["method"] = "raft"  # what `mis-bench run` records for a trained model folder
    source.write_text(json.dumps(results))
    assert cli_main(["submit", str(source), "--out", str(tmp_path / "bare")]) == 0
    assert "the model is named by its path" in capsys.readouterr().err
    args = ["submit", str(source), "--out", str(tmp_path / "pkg"), "--name", "org/real-raft", "--json"]
    assert cli_main(args) == 0
    outcome = json.loads(capsys.readouterr().out)
    with open(outcome["package"], encoding="utf-8") as handle:
        packaged = json.load(handle)
    assert packaged["system"]["model"] == "org/real-raft" and packaged["system"]["method"] == "raft"
    out = tmp_path / "board"
    assert cli_main(["leaderboard", str(tmp_path / "pkg"), "--references", str(dataset), "--out", str(out)]) == 0
    capsys.readouterr()
    (entry,) = json.loads((out / "leaderboard.json").read_text())["entries"]
    assert entry["model"] == "org/real-raft" and entry["method"] == "raft"
    assert "org/real-raft · raft" in (out / "index.html").read_text()
