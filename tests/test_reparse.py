"""`mis-bench parse`: a run's saved answers re-parsed with the current parser, what changed shown, and the
re-parsed predictions written only where the ownership rule allows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval_scripts import reparse
from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_USAGE

from _run_args import run_args

QUOTE = "It is not as focused in its delivery as the maximum rating of 5."
ANSWERS = [  # (response, what an older parser saved, status, finish_reason, sample)
    (f"{QUOTE} Therefore, the clinician scores a 3.375.", None, "ok", "stop", 0),
    (QUOTE, 5.0, "ok", "stop", 0),
    ("Therefore, the clinician scores a 3.375.375.375", 3.4, "ok", "stop", 0),
    ("Therefore, the clinician receives a score of 4.", 4.0, "ok", "stop", 0),
    ("Therefore, the clinician receives a score of 2.", 2.0, "ok", "stop", 1),
    ("3.", None, "truncated", "length", 0),
]


def _run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    records = [
        {"video_id": f"AB010{i}_T1_Jessica", "dimension": "wau", "status": status, "response": text,
         "prediction": old, "finish_reason": finish, "sample": sample}
        for i, (text, old, status, finish, sample) in enumerate(ANSWERS)
    ]  # fmt: skip
    records[4]["video_id"] = records[3]["video_id"]  # the second sample of row 3
    (folder / "raw_responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / "results.json").write_text(json.dumps({"setting": {"prompt_style": "paper"}}))
    return folder


def test_what_changed_is_listed_per_answer(tmp_path, capsys) -> None:
    folder = _run_folder(tmp_path)
    result = reparse(folder / "raw_responses.jsonl")
    assert result.style == "paper"
    assert [(a.old, a.new) for a in result.answers] == [(None, 3.4), (5.0, None), (3.4, None), (4.0, 4.0),
                                                       (2.0, 2.0), (None, None)]  # fmt: skip
    assert result.counts() == {"answers": 6, "changed": 3, "number_to_none": 2, "none_to_number": 1,
                               "number_to_number": 0}  # fmt: skip
    assert main(["parse", str(folder / "raw_responses.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "6 answers re-parsed with the current parser, 3 changed" in out
    assert "AB0101_T1_Jessica wau: 5 -> none (no score stated)" in out
    assert "AB0102_T1_Jessica wau: 3.4 -> none (runaway digit string)" in out


def test_out_writes_the_reparsed_readout_and_never_an_input(tmp_path, capsys) -> None:
    folder = _run_folder(tmp_path)
    raw = folder / "raw_responses.jsonl"
    before = raw.read_bytes()
    assert main(["parse", str(raw), "--out", str(raw)]) == EXIT_USAGE  # its own input: refused, unchanged
    assert raw.read_bytes() == before
    (folder / "mine.jsonl").write_text("my notes\n")
    assert main(["parse", str(raw), "--out", str(folder / "mine.jsonl")]) != 0  # a file it did not write
    assert (folder / "mine.jsonl").read_text() == "my notes\n"
    capsys.readouterr()
    target = folder / "reparsed.jsonl"
    assert main(["parse", str(raw), "--out", str(target), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] == 3
    rows = {r["video_id"]: r["prediction"] for r in map(json.loads, target.read_text().splitlines())}
    assert rows == {"AB0100_T1_Jessica": 3.4, "AB0101_T1_Jessica": None, "AB0102_T1_Jessica": None,
                    "AB0103_T1_Jessica": 3.0, "AB0105_T1_Jessica": None}  # fmt: skip
    assert main(["parse", str(raw), "--out", str(target)]) == 0  # its own earlier output: replaced


def test_style_must_be_known(tmp_path) -> None:
    folder = _run_folder(tmp_path)
    (folder / "results.json").unlink()
    with pytest.raises(Exception, match="cannot tell the prompt style"):
        reparse(folder / "raw_responses.jsonl")
    assert reparse(folder / "raw_responses.jsonl", "cot").style == "cot"


def test_a_fresh_run_reparses_unchanged(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server() as server:
        args = run_args(synthetic_build, tmp_path / "runs", server.base_url, "--prompt", "cot", model="fake", limit=1)
        code = main([*args, "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    run_dir = Path(summary["results"]).parent
    for name in ("raw_responses.jsonl", "predictions.jsonl"):
        assert main(["parse", str(run_dir / name), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["answers"] == 8 and report["changed"] == 0 and report["style"] == "cot"
