"""The same input checks in every command (issue 44.5) and readers that stop at the first bad row (issue 45.6).

Every command that reads expert gold refuses scores outside the FIS scale [1, 5] (a 1-10 file) with one line
naming the experts' file and its row; every command that reads a judge's predictions file warns on one outside
the scale (a 0-100 judge), naming the judge's file; a results file (jury, report) on another scale is refused by
its schema, naming the file. A huge predictions file whose second row is bad is refused at once, in bounded
memory, measured in a child process. Small hand-made data (`tests/_leaderboard_helpers.py`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import PredictionsFormatError, read_prediction_file, read_references

from _leaderboard_helpers import make_references, make_results, noisy_predictions

REPO = Path(__file__).resolve().parents[1]
EXPERTS = "references (expert) file"
JUDGE = "predictions (judge) file"


def _long(path: Path, column: str, pairs: dict, scale=lambda x: x) -> Path:
    rows = "".join(f"{v},{d},{'' if x is None else round(scale(x), 2)}\n" for (v, d), x in sorted(pairs.items()))
    path.write_text(f"video_id,dimension,{column}\n{rows}")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Gold on the 1-5 scale and on 1-10 (x2), a judge on 1-5 and on 0-100 ((x-1) x 25), two results files."""
    folder = tmp_path_factory.mktemp("inputs")
    gold = make_references()
    judge = noisy_predictions(gold, 0.4, seed=1)
    paths = {
        "gold": _long(folder / "gold.csv", "score", gold),
        "gold10": _long(folder / "gold10.csv", "score", gold, lambda x: 2 * x),
        "judge": _long(folder / "judge.csv", "prediction", judge),
        "judge100": _long(folder / "judge100.csv", "prediction", judge, lambda x: (x - 1) * 25),
        "other": _long(folder / "other.csv", "prediction", noisy_predictions(gold, 0.6, seed=2)),
    }
    for name, seed in (("a", 3), ("b", 4)):
        paths[f"results_{name}"] = folder / f"{name}.json"
        paths[f"results_{name}"].write_text(json.dumps(make_results(noisy_predictions(gold, 0.5, seed), model=name)))
    hundred = make_results({key: (x - 1) * 25 for key, x in judge.items()}, model="hundred")
    paths["results_100"] = folder / "hundred.json"
    paths["results_100"].write_text(json.dumps(hundred))
    return paths


def _commands(files: dict[str, Path], tmp: Path, *, gold: str, judge: str) -> dict[str, list[str]]:
    """Each command reading expert gold, on the `gold` file and the `judge` predictions (results for jury/report)."""
    g, j, o = str(files[gold]), str(files[judge]), str(files["other"])
    results = [str(files["results_100" if judge == "judge100" else "results_a"]), str(files["results_b"])]
    return {
        "score": ["score", "--predictions", j, "--references", g, "--bootstrap", "0"],
        "compare": ["compare", j, o, "--references", g, "--bootstrap", "100"],
        "estimate": ["estimate", "--predictions", j, "--references", g, "--bootstrap", "0"],
        "plan labels": ["plan", "labels", "--predictions", j, "--references", g, "--half-width", "0.2"],
        "plan icc": ["plan", "icc", "--predictions", j, "--references", g, "--half-width", "0.2", "--bootstrap", "100"],
        "jury": ["jury", *results, "--method", "mean", "--references", g, "--out", str(tmp / "jury")],
        "report": ["report", *results, "--references", g, "--out", str(tmp / "report")],
    }


COMMANDS = ("score", "compare", "estimate", "plan labels", "plan icc", "jury", "report")


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("mis-bench ")]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_expert_scores_on_a_1_to_10_scale_naming_the_experts_file(
    command, files, tmp_path, capsys
):
    argv = _commands(files, tmp_path, gold="gold10", judge="judge")[command]
    assert main(argv) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    rows = files["gold10"].read_text().splitlines()[1:]
    first = next(number for number, row in enumerate(rows, start=2) if float(row.split(",")[2]) > 5)
    assert f"{EXPERTS} {files['gold10']}, row {first}, column 'score'" in line, line
    assert "outside the FIS scale [1.0, 5.0]" in line and "give gold on the 1-5 scale" in line
    assert line.count(str(files["gold10"])) == 1  # the reader's line, not wrapped in another
    assert not (tmp_path / "jury").exists() and not (tmp_path / "report").exists()  # refused before writing


@pytest.mark.parametrize("command", ["score", "compare", "estimate", "plan labels", "plan icc"])
def test_every_command_reading_a_judge_file_warns_on_a_0_to_100_judge(command, files, tmp_path, caplog, capsys):
    argv = _commands(files, tmp_path, gold="gold", judge="judge100")[command]
    with caplog.at_level(logging.WARNING, logger="mis_icc_metric.predictions_io"):
        main(argv)  # the exit code is the command's business (score warns and scores as given)
    capsys.readouterr()
    warned = [r.getMessage() for r in caplog.records if r.name == "mis_icc_metric.predictions_io"]
    n_values = len(make_references())
    assert len(warned) == 1, warned
    assert f"{JUDGE} {files['judge100']}: {n_values} of {n_values} prediction(s) lie outside the FIS scale" in warned[0]


@pytest.mark.parametrize("command", ["jury", "report"])
def test_a_results_file_on_a_0_to_100_scale_is_refused_naming_it(command, files, tmp_path, capsys):
    argv = _commands(files, tmp_path, gold="gold", judge="judge100")[command]
    assert main(argv) == 1
    (line,) = _error_lines(capsys.readouterr().err)
    assert str(files["results_100"]) in line and "is not a number in [1.0, 5.0]" in line


def test_a_judge_on_the_scale_is_not_warned_about(files, caplog, capsys):
    with caplog.at_level(logging.WARNING, logger="mis_icc_metric.predictions_io"):
        assert (
            main(
                [
                    "estimate",
                    "--predictions",
                    str(files["judge"]),
                    "--references",
                    str(files["gold"]),
                    "--bootstrap",
                    "0",
                ]
            )
            == 0
        )
    capsys.readouterr()
    assert not [r for r in caplog.records if r.name == "mis_icc_metric.predictions_io"]


def test_calibrate_warns_on_a_0_to_100_judge(synthetic_build, tmp_path, caplog, capsys):
    gold = read_references(synthetic_build, "all")
    judge = _long(tmp_path / "judge100.csv", "prediction", gold, lambda x: (x - 1) * 25)
    argv = ["calibrate", "--predictions", str(judge), "--references", str(synthetic_build), "--bootstrap", "0"]
    with caplog.at_level(logging.WARNING, logger="mis_icc_metric.predictions_io"):
        main([*argv, "--out", str(tmp_path / "cal")])
    capsys.readouterr()
    warned = [r.getMessage() for r in caplog.records if r.name == "mis_icc_metric.predictions_io"]
    assert len(warned) == 1 and f"{JUDGE} {judge}: " in warned[0] and "outside the FIS scale" in warned[0]


# --- streaming: the first bad row ends the reading --------------------------------------------------------------

GOOD = "EH0822_T1_Jessica,empathy,3.1\n"
BAD_ROWS = {
    "unknown dimension": ("EH0822_T1_Jessica,kindness,3.0\n", "column 'dimension'"),
    "bad number": ("EH0822_T1_Jessica,wau,three\n", "'three' is not a number"),
    "duplicate pair": ("EH0822_T1_Jessica,Emp.,3.0\n", "duplicate prediction"),
    "bad video id": ("not a video,wau,3.0\n", "column 'video_id'"),
}


@pytest.mark.parametrize("kind", BAD_ROWS)
def test_the_first_bad_row_ends_the_reading_of_predictions(kind, tmp_path):
    """What follows the bad row (here bytes that are not UTF-8, past the decoder's first buffer) is never read."""
    row, said = BAD_ROWS[kind]
    filler = "".join(f"AB{i:04d}_T2_Luke,abc,3.0\n" for i in range(3000))
    path = tmp_path / "p.csv"
    path.write_bytes(f"video_id,dimension,prediction\n{GOOD}{row}{filler}".encode() + b"\xff\xfe")
    with pytest.raises(PredictionsFormatError, match="row 3") as info:
        read_prediction_file(path)
    assert said in str(info.value) and str(info.value).startswith(f"{JUDGE} {path}, row 3")
    jsonl = tmp_path / "p.jsonl"
    fields = row.strip().split(",")
    record = json.dumps(dict(zip(("video_id", "dimension", "prediction"), fields, strict=True)))
    jsonl.write_text(json.dumps({"video_id": "EH0822_T1_Jessica", "dimension": "empathy", "prediction": 3.1}) + "\n")
    with jsonl.open("ab") as handle:
        handle.write(record.encode() + b"\n" + filler.encode() + b"\xff\xfe\n")
    with pytest.raises(PredictionsFormatError, match=re.escape(f"{JUDGE} {jsonl}, row 2")):
        read_prediction_file(jsonl)


def test_a_pair_without_gold_ends_the_reading_at_its_row(tmp_path):
    path = tmp_path / "p.csv"
    filler = "".join(f"AB{i:04d}_T2_Luke,abc,3.0\n" for i in range(3000))
    path.write_bytes(f"video_id,dimension,prediction\n{GOOD}CD0202_T1_John,wau,3.0\n{filler}".encode() + b"\xff")
    gold = {("EH0822_T1_Jessica", dim): 3.0 for dim in DIMENSION_KEYS}
    with pytest.raises(PredictionsFormatError, match=r"row 3: video 'CD0202_T1_John' is not in the references \(G\)"):
        read_prediction_file(path, gold=gold, where="G")
    ok = tmp_path / "ok.csv"
    ok.write_text(f"video_id,dimension,prediction\n{GOOD}")
    assert read_prediction_file(ok, gold=gold).records == [
        {"video_id": "EH0822_T1_Jessica", "dimension": "empathy", "prediction": 3.1}
    ]


# The child's own peak: VmHWM, the high-water mark of its address space since exec. (ru_maxrss would carry the
# parent's size over: Linux keeps the forked copy's peak across exec, and a pytest process can be 600 MB.)
CHILD = (
    "import json, re, sys, time\n"
    "from pathlib import Path\n"
    "from eval_scripts.cli import main\n"
    "started = time.perf_counter()\n"
    "code = main(sys.argv[1:])\n"
    "peak = int(re.search(r'VmHWM:\\s*(\\d+)', Path('/proc/self/status').read_text()).group(1))\n"
    "print(json.dumps({'code': code, 'seconds': time.perf_counter() - started, 'peak_mb': peak / 1024}),"
    " file=sys.stderr)\n"
)
ROWS = 5_800_000


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="the peak is read from /proc (Linux)")
def test_a_huge_predictions_file_with_a_bad_second_row_is_refused_at_once_in_bounded_memory(files, tmp_path):
    """5.8 million rows (about 170 MB) whose second row holds no number: `score` says so within 5 s, at a peak
    under 500 MB, measured in its own process (the whole process's wall time, imports included). (A video the gold
    lacks is no bad row for `score`: a judge on every video is scored on the videos with gold, the rest counted.)"""
    good = f"{next(iter(sorted(make_references())))[0]},abc,3.4\n"
    block = "".join(f"XY{i:04d}_T{1 + i % 3}_Luke,{DIMENSION_KEYS[i % 8]},3.{i % 10}\n" for i in range(10_000))
    path = tmp_path / "huge.csv"
    with path.open("w") as handle:
        handle.write(f"video_id,dimension,prediction\n{good}ZZ9999_T1_Luke,abc,three\n")
        for _ in range(ROWS // 10_000):
            handle.write(block)
    assert path.stat().st_size > 150e6
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "score", "--predictions", str(path), "--references", str(files["gold"])],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    wall = time.perf_counter() - started
    path.unlink()
    report = json.loads(done.stderr.strip().splitlines()[-1])
    (line,) = _error_lines(done.stderr)
    assert report["code"] == 1
    assert f"{JUDGE} {path}, row 3" in line and "three" in line
    assert wall < 5.0, f"refused after {wall:.1f} s"
    assert report["peak_mb"] < 500, f"peak {report['peak_mb']:.0f} MB"


def test_every_gold_form_refuses_a_1_to_10_scale_at_its_row_naming_the_experts_file(tmp_path):
    """Per-rater, wide and long gold (CSV and JSONL) all go through the one scale rule, stopping at the row."""
    video = "EH0822_T1_Jessica"
    long_records = [
        {"video_id": video, "dimension": "wau", "score": 4},
        {"video_id": video, "dimension": "abc", "score": 8},
    ]
    forms = {  # file -> (text, the row of the score 8)
        "ratings.csv": ("video_id,rater,dimension,score\n" + f"{video},R1,wau,4\n{video},R1,abc,8\n", 3),
        "wide.csv": (
            "video_id," + ",".join(DIMENSION_KEYS) + "\nCD0202_T1_John" + ",3" * 8 + f"\n{video}" + ",8" * 8,
            3,
        ),
        "long.csv": (f"video_id,dimension,score\n{video},wau,4\n{video},abc,8\n", 3),
        "long.jsonl": ("".join(json.dumps(record) + "\n" for record in long_records), 2),
    }
    for name, (text, row) in forms.items():
        path = tmp_path / name
        path.write_text(text + "\n")
        with pytest.raises(PredictionsFormatError) as info:
            read_references(path)
        message = str(info.value)
        assert f"{EXPERTS} {path}, row {row}" in message, message
        assert "8" in message and "outside" in message and "[1.0, 5.0]" in message
