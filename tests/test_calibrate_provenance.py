"""`mis-bench calibrate` knows where a calibrator came from, never answers with a confidence it cannot back, and
leaves the user's files as they were when it fails (issues 44 item 3 and 45 items 1 and 3).

- provenance: the calibrator records the build's fingerprints (as `BuiltDataset` gives them), the splits, the judge
  (from a results JSON) and its videos; `--apply` warns on another build or judge, refuses in-sample videos
  unless `--allow-in-sample`, keeps the SYNTHETIC mark both ways and refuses a file it calibrated;
- the small-fit-split crash: the run completes, the undefined resamples are counted (checked against the plan's
  draws by hand) and the CIs withheld by the reporting floor's rule;
- the yardstick and the clinician spread against hand computations;
- write last: a failing run leaves the folder byte for byte (the manifest too); a rerun writing fewer files
  removes the earlier ones; a failure after the claim leaves no claim;
- a tampered calibrator is refused in one line naming the field.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from _calibration_data import judge, make_build, write_judge

from eval_scripts.cli import main
from eval_scripts.formats.results import RunRecord
from mis_bench_dataset import BuiltDataset, parse_video_id
from mis_icc_metric import ResamplingOptions, make_resampling, read_references


@pytest.fixture(scope="module")
def wide_build(tmp_path_factory):
    from conftest import shared_once

    return shared_once(tmp_path_factory, "calibration-wide", lambda folder: make_build(folder, "wide")) / "build"


@pytest.fixture(scope="module")
def clinician_build(tmp_path_factory):
    from conftest import shared_once

    return shared_once(tmp_path_factory, "calibration-clinician", lambda f: make_build(f, "clinician")) / "build"


def _only(predictions: dict, build: Path, split: str, *, keep: bool = True) -> dict:
    """The predictions of the split's pairs (keep) or of every other pair."""
    gold = read_references(build, split)
    return {key: value for key, value in predictions.items() if (key in gold) == keep}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def _results_json(path: Path, predictions: dict, *, model: str, fingerprint: str, synthetic: bool) -> Path:
    """A run's results JSON carrying `predictions` (what `mis-bench run` writes)."""
    from eval_scripts.formats.results import build_results

    results = build_results(
        record=RunRecord(
            system={"model": model, "backend": "openai", "decoding": {"temperature": 0.0}, "package_versions": {}},
            setting={"modality": "text", "prompt_style": "direct", "few_shot_k": 0, "input_source": "text"},
            dataset={"name": "build", "fingerprint": fingerprint, "split": "test", "synthetic": synthetic},
            predictions=[{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()],
            parse_rates={},
        ),
        scores=None,
    )
    path.write_text(json.dumps(results))
    return path


def _fit(predictions: Path, build: Path, out: Path, *extra: str) -> list[str]:
    return ["calibrate", "--predictions", str(predictions), "--references", str(build), "--out", str(out), *extra]


@pytest.fixture(scope="module")
def fitted(wide_build, tmp_path_factory):
    """A calibrator fitted on the wide build from a results JSON of judge 'judge-a' (train fingerprint)."""
    folder = tmp_path_factory.mktemp("fitted")
    predictions = judge(read_references(wide_build, "all"))
    fingerprint = BuiltDataset.open(wide_build).build_fingerprint("train")
    run = _results_json(folder / "run.json", predictions, model="judge-a", fingerprint=fingerprint, synthetic=True)
    assert main(_fit(run, wide_build, folder / "out", "--bootstrap", "0")) == 0
    return folder, predictions


# ------------------------------------------------------------------------------------------ provenance


def test_the_calibrator_records_its_build_splits_judge_and_videos(wide_build, fitted):
    folder, _ = fitted
    provenance = json.loads((folder / "out" / "calibrator.json").read_text())["provenance"]
    handle = BuiltDataset.open(wide_build)
    assert provenance["build"]["fingerprints"] == {s: sorted(handle.fingerprints(s)) for s in handle.splits("scoring")}
    assert (provenance["fit_split"], provenance["calibration_split"]) == ("train", "validation")
    for part, split in (("fit", "train"), ("calibration", "validation")):
        assert provenance["videos"][part] == sorted({v for v, _ in read_references(wide_build, split)})
    assert provenance["judge"]["model"] == "judge-a" and provenance["judge"]["readout"] == "text"
    assert provenance["judge"]["setting"]["prompt_style"] == "direct"
    assert provenance["synthetic"] is True


def test_a_run_folders_predictions_name_their_judge_from_the_results_beside_them(wide_build, tmp_path, capsys):
    """`mis-bench run` writes predictions.jsonl with results.json beside it: the judge is read from there."""
    from mis_icc_metric import write_predictions

    predictions = judge(read_references(wide_build, "all"))
    run = tmp_path / "run"
    run.mkdir()
    fingerprint = BuiltDataset.open(wide_build).build_fingerprint("test")
    _results_json(run / "results.json", {}, model="judge-c", fingerprint=fingerprint, synthetic=True)
    write_predictions(
        run / "predictions.jsonl",
        [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in predictions.items()],
    )
    assert main([*_fit(run / "predictions.jsonl", wide_build, tmp_path / "out", "--bootstrap", "0"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["calibrator"]["provenance"]["judge"]["model"] == "judge-c" and result["warnings"] == []
    other = tmp_path / "other" / "predictions.jsonl"  # the same file name without a results.json: no judge
    other.parent.mkdir()
    other.write_bytes((run / "predictions.jsonl").read_bytes())
    assert main([*_fit(other, wide_build, tmp_path / "out2", "--bootstrap", "0"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calibrator"]["provenance"]["judge"] is None


def test_a_fit_on_another_builds_run_is_warned(wide_build, tmp_path, capsys):
    predictions = judge(read_references(wide_build, "all"))
    run = _results_json(
        tmp_path / "run.json", predictions, model="m", fingerprint="sha256:" + "1" * 64, synthetic=False
    )
    assert main([*_fit(run, wide_build, tmp_path / "out", "--bootstrap", "0"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["warnings"]) == 1 and "another build" in result["warnings"][0]
    assert result["synthetic"] is True  # the build says so, whatever the run claims


def test_apply_refuses_in_sample_videos_unless_allowed(wide_build, fitted, tmp_path, capsys):
    folder, predictions = fitted
    calibrator = str(folder / "out" / "calibrator.json")
    every = write_judge(tmp_path / "all.csv", predictions)
    assert main(["calibrate", "--apply", calibrator, "--predictions", str(every), "--out", str(tmp_path / "a")]) == 1
    n_train = len({v for v, _ in read_references(wide_build, "train")})
    n_validation = len({v for v, _ in read_references(wide_build, "validation")})
    assert f"{n_train} video(s) of the predictions are ones the calibrator was fitted on and {n_validation}" in (
        _one_line(capsys)
    )
    assert not (tmp_path / "a").exists()
    argv = ["calibrate", "--apply", calibrator, "--predictions", str(every), "--out", str(tmp_path / "a")]
    assert main([*argv, "--allow-in-sample", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_in_sample_videos"] == n_train + n_validation
    assert any("--allow-in-sample" in note for note in result["notes"])


def test_apply_warns_on_another_build_and_another_judge(wide_build, fitted, tmp_path, capsys):
    folder, predictions = fitted
    calibrator = str(folder / "out" / "calibrator.json")
    test = _only(predictions, wide_build, "test")
    own = BuiltDataset.open(wide_build).build_fingerprint("test")
    cases = {
        "same": ("judge-a", own, []),
        "build": ("judge-a", "sha256:" + "0" * 64, ["another build"]),
        "judge": ("judge-b", own, ["another judge"]),
    }
    for name, (model, fingerprint, expected) in cases.items():
        run = _results_json(tmp_path / f"{name}.json", test, model=model, fingerprint=fingerprint, synthetic=True)
        argv = ["calibrate", "--apply", calibrator, "--predictions", str(run), "--out", str(tmp_path / name)]
        assert main([*argv, "--json"]) == 0
        warnings = json.loads(capsys.readouterr().out)["warnings"]
        assert len(warnings) == len(expected) and all(w in text for w, text in zip(expected, warnings, strict=True))
    csv = write_judge(tmp_path / "test.csv", test)  # a CSV does not say: a note, not a warning
    assert main(["calibrate", "--apply", calibrator, "--predictions", str(csv), "--out", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    assert "warning:" not in printed and "do not name their build" in printed and "do not name their judge" in printed


def test_the_synthetic_mark_is_kept_both_ways(synthetic_build, unmarked_build, tmp_path, capsys):
    marks = {}
    for name, build in (("synthetic", synthetic_build), ("real", unmarked_build)):
        predictions = judge(read_references(build, "all"))
        path = write_judge(tmp_path / f"{name}.csv", predictions)
        assert main(_fit(path, build, tmp_path / name, "--coverage", "0.75", "--bootstrap", "0")) == 0
        capsys.readouterr()
        test = _only(predictions, build, "test")
        fingerprint = BuiltDataset.open(build).build_fingerprint("test")
        for run_name, synthetic in (("csv", None), ("synthetic-run", True)):
            source = (
                write_judge(tmp_path / f"{name}-{run_name}.csv", test)
                if synthetic is None
                else _results_json(
                    tmp_path / f"{name}-{run_name}.json", test, model="m", fingerprint=fingerprint, synthetic=True
                )
            )
            calibrator = str(tmp_path / name / "calibrator.json")
            out = str(tmp_path / f"{name}-{run_name}-out")
            argv = ["calibrate", "--apply", calibrator, "--predictions", str(source), "--out", out]
            assert main([*argv, "--json"]) == 0
            synthetic = json.loads(capsys.readouterr().out)["synthetic"]
            assert main(argv) == 0
            marks[(name, run_name)] = (synthetic, "SYNTHETIC data" in capsys.readouterr().out)
    assert marks == {
        ("synthetic", "csv"): (True, True),  # fitted on synthetic data: its outputs stay marked
        ("synthetic", "synthetic-run"): (True, True),
        ("real", "csv"): (False, False),
        ("real", "synthetic-run"): (True, True),  # a real calibrator on a synthetic run: marked
    }


def test_a_calibrated_file_is_not_calibrated_again(fitted, wide_build, tmp_path, capsys):
    folder, _ = fitted
    calibrated = folder / "out" / "calibrated-test.csv"
    calibrator = str(folder / "out" / "calibrator.json")
    assert (
        main(["calibrate", "--apply", calibrator, "--predictions", str(calibrated), "--out", str(tmp_path / "x")]) == 1
    )
    assert "already calibrated" in _one_line(capsys)
    assert main(_fit(calibrated, wide_build, tmp_path / "again")) == 1
    assert "already calibrated" in _one_line(capsys)
    assert not (tmp_path / "x").exists() and not (tmp_path / "again").exists()


# ------------------------------------------------------------------------------------------ the crash and the floor


def test_a_small_fit_split_runs_and_withholds_by_the_floor(clinician_build, tmp_path, capsys):
    """Fit on validation (2 clinicians), conformal on test, evaluated on train: about (7/9)^9 of the clinician
    resamples draw no fit clinician. The run completes; each dimension counts exactly those resamples (by hand from
    the plan's draws) and, past the rule's 5%, withholds its CIs with the reason; the points stay."""
    predictions = judge(read_references(clinician_build, "all"))
    path = write_judge(tmp_path / "judge.csv", predictions)
    argv = _fit(path, clinician_build, tmp_path / "out", "--fit-split", "validation", "--calibration-split", "test")
    assert main([*argv, "--coverage", "0.75", "--bootstrap", "300", "--seed", "5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["evaluated"]["train"]
    fit_videos = {v for v, _ in read_references(clinician_build, "validation")}
    eval_videos = {v for v, _ in read_references(clinician_build, "train")}
    plan = make_resampling(sorted(fit_videos | eval_videos), 300, 5, "clinician")
    fit_clinicians = {parse_video_id(v).clinician for v in fit_videos}
    fit_codes = [i for i, name in enumerate(plan.cluster_names) if name in fit_clinicians]
    expected = int((~np.isin(plan.draws, fit_codes).any(axis=1)).sum())
    assert expected > 0.05 * 300
    for entry in summary["dimensions"].values():
        assert entry["ci_resamples"] == {"n_resamples": 300, "undefined": expected}
        for side in ("before", "after", "change"):
            for cell in entry[side].values():
                assert cell["ci"] is None and "resamples undefined" in cell["withheld"]
                assert math.isfinite(cell["value"])
    assert main([*argv, "--coverage", "0.75", "--bootstrap", "300", "--seed", "5"]) == 0
    printed = capsys.readouterr().out
    assert "CI withheld: " in printed and re.search(r"\d+\.\d \[-\]", printed)


# ------------------------------------------------------------------------------------------ yardstick and spread


def test_the_no_judge_yardstick_and_the_clinician_spread_by_hand(wide_build):
    from mis_icc_metric import calibration_summary, fit_calibrator

    gold = {split: read_references(wide_build, split) for split in ("train", "validation", "test")}
    predictions = judge(read_references(wide_build, "all"))
    part = {split: {k: v for k, v in predictions.items() if k in gold[split]} for split in gold}
    calibrator = fit_calibrator(part["train"], gold["train"], part["validation"], gold["validation"])
    summary = calibration_summary(
        calibrator,
        (part["train"], gold["train"]),
        (part["test"], gold["test"]),
        resampling=ResamplingOptions(n_bootstrap=0, seed=0),
    )
    for dim, entry in summary["dimensions"].items():
        center = np.mean([g for (_, d), g in gold["train"].items() if d == dim])
        residuals = sorted(abs(g - center) for (_, d), g in gold["validation"].items() if d == dim)
        half = residuals[math.ceil((len(residuals) + 1) * 0.9) - 1]
        low, high = max(1.0, center - half), min(5.0, center + half)
        test_gold = np.array([g for (_, d), g in gold["test"].items() if d == dim])
        assert entry["no_judge"]["center"] == pytest.approx(center)
        assert entry["no_judge"]["half_width"] == pytest.approx(half)
        assert entry["no_judge"]["width"] == pytest.approx(high - low)
        assert entry["no_judge"]["coverage"] == pytest.approx(np.mean((test_gold >= low) & (test_gold <= high)))
        assert entry["judge_narrower"] == (entry["mean_width"] < high - low)
    # Coverage per clinician, pooled over dimensions, from the calibrated records by hand.
    per = {}
    for record in calibrator.apply(part["test"]):
        key = (record["video_id"], record["dimension"])
        per.setdefault(parse_video_id(record["video_id"]).clinician, []).append(
            record["lower"] <= gold["test"][key] <= record["upper"]
        )
    coverage = {name: np.mean(hits) for name, hits in per.items()}
    spread = summary["by_clinician"]
    assert spread["n_clinicians"] == len(per)
    assert (spread["min"], spread["median"], spread["max"]) == pytest.approx(
        (min(coverage.values()), np.median(list(coverage.values())), max(coverage.values()))
    )
    assert spread["worst"][0]["coverage"] == pytest.approx(min(coverage.values()))
    assert spread["below"]["n"] == sum(c < 0.9 - 0.1 for c in coverage.values())


# ------------------------------------------------------------------------------------------ write last


def test_a_failing_calibrate_leaves_the_folder_byte_for_byte(wide_build, tmp_path, capsys):
    predictions = judge(read_references(wide_build, "all"))
    good = write_judge(tmp_path / "judge.csv", predictions)
    out = tmp_path / "out"
    assert main(_fit(good, wide_build, out, "--bootstrap", "0")) == 0
    capsys.readouterr()
    before = _snapshot(out)
    assert {"calibrator.json", "calibrated-test.csv", "summary.json", ".mis-bench-outputs.json"} <= set(before)
    hundred = write_judge(tmp_path / "hundred.csv", judge(read_references(wide_build, "all"), scale=20.0))
    assert main(_fit(hundred, wide_build, out, "--bootstrap", "0")) == 1  # a 0-100 judge: refused at fit time
    assert "outside the calibrator's scale" in _one_line(capsys)
    assert _snapshot(out) == before
    assert main(_fit(good, wide_build, out, "--bootstrap", "0", "--coverage", "0.99")) == 1  # too few to calibrate
    assert "needs at least" in _one_line(capsys)
    assert _snapshot(out) == before


def test_a_failure_after_the_claim_leaves_no_claim(wide_build, tmp_path, capsys, monkeypatch):
    from mis_bench_dataset.toolkit.atomic import AtomicFiles
    from mis_bench_dataset.toolkit.ownership import read_manifest

    predictions = judge(read_references(wide_build, "all"))
    good = write_judge(tmp_path / "judge.csv", predictions)
    test = write_judge(tmp_path / "test.csv", _only(predictions, wide_build, "test"))

    commit = AtomicFiles.commit

    def full_disk(self):  # the disk fills as the outputs are renamed into place (after the claim)
        if any(target.name == "summary.json" for _, target in self._pending):
            self.discard()
            raise OSError(28, "No space left on device")
        commit(self)

    monkeypatch.setattr(AtomicFiles, "commit", full_disk)
    assert main(_fit(good, wide_build, tmp_path / "out", "--bootstrap", "0")) == 1
    capsys.readouterr()
    assert not (tmp_path / "out").exists()  # the folder it would have made is not left behind, nor a claim
    monkeypatch.undo()
    assert main(_fit(good, wide_build, tmp_path / "out", "--bootstrap", "0")) == 0
    capsys.readouterr()
    # The case: a failed --apply (in-sample videos) claims nothing, so the user's own file is never replaced.
    calibrator, mine = str(tmp_path / "out" / "calibrator.json"), tmp_path / "test-calibrated.csv"
    assert main(["calibrate", "--apply", calibrator, "--predictions", str(good), "--out", str(tmp_path)]) == 1
    capsys.readouterr()
    assert "judge-calibrated.csv" not in read_manifest(tmp_path)
    mine.write_text("the user's own file\n")  # where --apply would write test.csv's calibrated copy
    assert main(["calibrate", "--apply", calibrator, "--predictions", str(test), "--out", str(tmp_path)]) == 1
    assert "was not written by mis-bench calibrate" in _one_line(capsys)
    assert mine.read_text() == "the user's own file\n"


def test_a_rerun_writing_fewer_files_removes_the_stale_ones(wide_build, tmp_path, capsys):
    from mis_bench_dataset.toolkit.ownership import read_manifest

    predictions = judge(read_references(wide_build, "all"))
    out = tmp_path / "out"
    assert main(_fit(write_judge(tmp_path / "all.csv", predictions), wide_build, out, "--bootstrap", "0")) == 0
    assert (out / "calibrated-test.csv").is_file()
    capsys.readouterr()
    no_test = _only(predictions, wide_build, "test", keep=False)
    assert (
        main(_fit(write_judge(tmp_path / "no-test.csv", no_test), wide_build, out, "--bootstrap", "0", "--json")) == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["removed"] == [str(out / "calibrated-test.csv")]
    assert not (out / "calibrated-test.csv").exists()
    assert set(read_manifest(out)) == {"calibrator.json", "summary.json"}
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["calibrator.json", "summary.json"]


# ------------------------------------------------------------------------------------------ read back


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda c: c.update(coverage=1.7), "'coverage'"),
        (lambda c: c["half_widths"].update(empathy=-0.3), "'half_widths.empathy'"),
        (lambda c: c["maps"]["empathy"].update(y=[10 * y for y in c["maps"]["empathy"]["y"]]), "'maps.empathy.y'"),
        (lambda c: c["maps"]["wau"].update(y=c["maps"]["wau"]["y"][::-1]), "'maps.wau.y'"),
        (lambda c: c.update(dimensions=[*c["dimensions"], "charisma"]), "'dimensions'"),
        (lambda c: c["provenance"].pop("videos"), "'provenance.videos'"),
    ],
)
def test_a_tampered_calibrator_is_refused_in_one_line(fitted, wide_build, tmp_path, capsys, edit, field):
    folder, predictions = fitted
    data = json.loads((folder / "out" / "calibrator.json").read_text())
    edit(data)
    (tmp_path / "edited.json").write_text(json.dumps(data))
    test = write_judge(tmp_path / "test.csv", _only(predictions, wide_build, "test"))
    argv = ["calibrate", "--apply", str(tmp_path / "edited.json"), "--predictions", str(test)]
    assert main([*argv, "--out", str(tmp_path / "x")]) == 1
    assert f"calibrator field {field}" in _one_line(capsys)
    assert not (tmp_path / "x").exists()
